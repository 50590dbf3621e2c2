"""One network, three kernels: every activation of network.ACTIVATIONS runs alike in torch's modules, in the
rollout workers' numpy and in the fused update's hand-written forward and backward; an activation the fused
kernel has no derivative for fails loudly instead of falling back to autograd unseen."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_update import one_update

from ppolab.ppo import network
from ppolab.ppo.policy import Actor, ObsNormalizer, sampling_params
from ppolab.ppo.sampling_policy import SamplingPolicy
from ppolab.runner.config import TrainConfig


@pytest.mark.parametrize("activation", list(network.ACTIVATIONS))
def test_the_numpy_twin_computes_the_torch_actors_mean(activation):
    torch.manual_seed(0)
    actor = Actor(ObsNormalizer(7), 7, 3, [32, 16], 0.5, True, activation)
    for lin in actor.net[::2]:  # outputs of all signs and sizes (the last layer starts at 1% of its init)
        torch.nn.init.normal_(lin.weight, std=1.0)
    actor.norm.update(np.random.default_rng(0).standard_normal((100, 7)) * 3.0)
    obs = (np.random.default_rng(1).standard_normal((50, 7)) * 3.0).astype(np.float32)
    want = actor(torch.from_numpy(obs))[0].detach().numpy()
    got = SamplingPolicy(sampling_params(actor))(obs)
    assert np.abs(want).max() > 1.0
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("activation", list(network.ACTIVATIONS))
def test_the_fused_update_matches_autograd_for_every_activation(activation):
    settings = {"env": "cartpole", "epochs": 2, "activation": activation, "max_traj_len": 300}
    exact, _ = one_update(TrainConfig(**settings, update="exact"))
    fused, _ = one_update(TrainConfig(**settings, update="fused"))
    moved = (exact - one_update(TrainConfig(**settings, update="exact", lr=1e-12))[0]).abs().max()
    assert (exact - fused).abs().max() < 1e-3 * moved


def test_an_activation_without_a_fused_derivative_fails_loudly(monkeypatch):
    """Added to the table (torch and numpy forms) but not to fused_step: the fused update stops with a message
    that names the activation and where its derivative goes."""
    monkeypatch.setitem(network.ACTIVATIONS, "softsign", network.Activation("Softsign", lambda h: h))
    with pytest.raises(Exception, match="no case for the activation softsign"):
        one_update(TrainConfig(env="cartpole", epochs=1).model_copy(update={"activation": "softsign"}))


def test_an_unknown_activation_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="unknown activation 'swish': one of tanh, relu, elu"):
        network.NetSpec.of(3, [8], 1, "swish")
