"""The update's two paths: the fused minibatch step (hand-written gradients) matches autograd's within
float32 rounding, and a wrong gradient would be caught."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from ppolab.envs import make_env
from ppolab.ppo.adam import FlatAdam
from ppolab.ppo.critic_process import CriticProcess
from ppolab.ppo.loss import LossSettings
from ppolab.ppo.rollout import Trajectories
from ppolab.ppo.storage import RolloutStorage
from ppolab.ppo.update import FusedUpdate, choose_update
from ppolab.runner.config import TrainConfig
from ppolab.runner.trainer import build_networks, hyper, mirror_action_maps, privileged_dim


def trajectories(steps: int, slots: int, obs_dim: int, act_dim: int, priv_dim: int = 0) -> Trajectories:
    rng = np.random.default_rng(0)
    ended = rng.random((steps, slots)) < 0.02
    ended[-1] = True
    return Trajectories(
        obs=rng.standard_normal((steps, slots, obs_dim), dtype=np.float32),
        actions=0.2 * rng.standard_normal((steps, slots, act_dim), dtype=np.float32),
        rewards=rng.standard_normal((steps, slots), dtype=np.float32),
        terminated=ended & (rng.random((steps, slots)) < 0.5),
        ended=ended,
        final_obs=rng.standard_normal((steps, slots, obs_dim), dtype=np.float32),
        ep_return=np.full((steps, slots), np.nan),
        ep_length=np.full((steps, slots), np.nan),
        priv=rng.standard_normal((steps, slots, priv_dim), dtype=np.float32),
        final_priv=rng.standard_normal((steps, slots, priv_dim), dtype=np.float32),
    )


def expert_targets(rows: int, act_dim: int) -> tuple[np.ndarray, np.ndarray]:
    """An expert's actions and their weights (three samples in four count, every action entry): the imitation
    term is in every update these tests compare, so both kernels must agree on it too."""
    rng = np.random.default_rng(2)
    weights = np.repeat((rng.random(rows) < 0.75)[:, None], act_dim, axis=1).astype(np.float32)
    return 0.3 * rng.standard_normal((rows, act_dim), dtype=np.float32), weights


def one_update(cfg: TrainConfig, updates: int = 1, critic_process: bool = False) -> tuple[torch.Tensor, dict]:
    env = make_env(cfg.env, 1)
    torch.manual_seed(0)
    priv_dim = privileged_dim(cfg, env)
    actor, critic = build_networks(cfg, env.obs_dim, env.act_dim, priv_dim)
    actor, critic = copy.deepcopy(actor), copy.deepcopy(critic)
    optimizer = FlatAdam(actor, critic, cfg.lr, cfg.eps)
    mirror = mirror_action_maps(cfg, env, torch.device("cpu"))
    update = choose_update(actor, critic, optimizer, hyper(cfg), mirror)
    assert isinstance(update, FusedUpdate) == (cfg.update == "fused")
    if critic_process:
        update.elsewhere = CriticProcess(update.critic_step, optimizer, hyper(cfg), 100 * 6, critic.spec.sizes[0])
    traj = trajectories(100, 6, env.obs_dim, env.act_dim, priv_dim)
    actor.norm.update(traj.obs)
    if critic.priv_norm is not None:
        critic.priv_norm.update(traj.priv)
    expert = expert_targets(100 * 6, env.act_dim)
    rng = np.random.default_rng(1)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the trainer runs: a reduction's last bits may depend on the thread count
    try:
        for _ in range(updates):
            storage = RolloutStorage(
                traj, actor, critic, gamma=cfg.gamma, lam=cfg.lam, recurrent=cfg.recurrent,
                device=torch.device("cpu"), mirror_obs=None if mirror is None else env.symmetry.obs, expert=expert,
            )  # fmt: skip
            stats = update(storage, rng)
    finally:
        torch.set_num_threads(threads)
        update.close()
    return optimizer.flat.clone(), stats


@pytest.mark.parametrize(
    "settings",
    [
        {"env": "jvrc_walk", "epochs": 2},  # ReLU 256 x 256, fixed std, mirror loss
        {"env": "g1_walk", "epochs": 1, "privileged_critic": True},  # the critic reads 12 more inputs
        {"env": "cartpole", "epochs": 2, "num_procs": 2, "max_traj_len": 300},  # tanh 64 x 64, learned std, entropy
        {"env": "cartpole", "epochs": 1, "learn_std": False, "entropy_coeff": 0.0, "hidden_sizes": [32, 16, 8]},
    ],
)
def test_the_fused_step_matches_autograd(settings):
    exact, stats_exact = one_update(TrainConfig(**settings, update="exact"))
    fused, stats_fused = one_update(TrainConfig(**settings, update="fused"))
    moved = (exact - one_update(TrainConfig(**settings, update="exact", lr=1e-12))[0]).abs().max()
    assert (exact - fused).abs().max() < 1e-3 * moved  # rounding, far below what one update changes
    for key, value in stats_exact.items():
        assert stats_fused[key] == pytest.approx(value, rel=1e-3, abs=1e-6), key


def test_a_wrong_gradient_is_caught():
    """The comparison above can fail: a fused step with the mirror loss's weight doubled differs."""
    cfg = TrainConfig(env="jvrc_walk", epochs=1)
    exact, _ = one_update(TrainConfig(env="jvrc_walk", epochs=1, update="exact", mirror_coeff=0.8))
    fused, _ = one_update(cfg)
    moved = (exact - one_update(TrainConfig(env="jvrc_walk", epochs=1, update="exact", lr=1e-12))[0]).abs().max()
    assert (exact - fused).abs().max() > 1e-3 * moved


@pytest.mark.parametrize("env, privileged", [("cartpole", False), ("jvrc_walk", False), ("g1_walk", True)])
def test_the_critic_in_a_second_process_gives_the_same_parameters_to_the_last_bit(env, privileged):
    """The critic's epochs run in a forked process on 2+ cores, here otherwise: a seed's run must not depend
    on which. Two updates, so the second one continues the Adam steps the first left in shared memory."""
    cfg = TrainConfig(env=env, epochs=2, num_procs=2, max_traj_len=300, privileged_critic=privileged)
    here, stats_here = one_update(cfg, updates=2)
    there, stats_there = one_update(cfg, updates=2, critic_process=True)
    assert torch.equal(here, there)
    assert stats_here == stats_there
    assert not torch.equal(here, one_update(cfg, updates=1)[0])  # the second update moved them


@pytest.mark.parametrize("env", ["cartpole", "jvrc_walk"])
def test_the_scripted_epochs_give_the_python_functions_bits(env, monkeypatch):
    """The fused epochs run under TorchScript here (not silently from Python), and TorchScript computes what
    the Python functions compute. Not always to the last bit: on an AVX-512 AMD EPYC the scripted graph's
    kernels differ from eager's in the last bits (1.5e-8 after two updates, bitwise equal on an Intel Xeon),
    so the bar is float rounding: a ten-thousandth of what the two updates moved the parameters, where a
    wrong gradient (test_a_wrong_gradient_is_caught) differs by more than a thousandth."""
    from ppolab.ppo import fused_step

    assert isinstance(fused_step.ACTOR_EPOCH, torch.jit.ScriptFunction)
    assert isinstance(fused_step.CRITIC_EPOCH, torch.jit.ScriptFunction)
    cfg = TrainConfig(env=env, epochs=2, num_procs=2, max_traj_len=300)
    scripted, stats_scripted = one_update(cfg, updates=2)
    monkeypatch.setattr(fused_step, "ACTOR_EPOCH", fused_step.actor_epoch)
    monkeypatch.setattr(fused_step, "CRITIC_EPOCH", fused_step.critic_epoch)
    python, stats_python = one_update(cfg, updates=2)
    moved = (python - one_update(cfg.model_copy(update={"lr": 1e-12}), updates=2)[0]).abs().max()
    assert (scripted - python).abs().max() <= 1e-4 * moved
    assert stats_scripted == pytest.approx(stats_python, rel=1e-5, abs=1e-7)


# A value for each loss setting that changes the update; a setting added to LossSettings needs one here.
CHANGED = {"clip": 0.01, "entropy_coeff": 0.5, "mirror_coeff": 100.0, "imitate_coeff": 30.0}


@pytest.mark.parametrize("name", LossSettings._fields)
def test_every_loss_setting_moves_both_kernels_alike(name):
    """Each setting the loss reads by name changes the update, and the fused kernel follows autograd's
    reference when it does: a term added to ppolab.ppo.loss but not to fused_step (or the other way) fails."""
    assert set(CHANGED) == set(LossSettings._fields), "give the new loss setting a value in CHANGED"
    base = TrainConfig(env="jvrc_walk", epochs=1, learn_std=True, entropy_coeff=0.01)
    changed = base.model_copy(update={name: CHANGED[name]})
    exact, _ = one_update(changed.model_copy(update={"update": "exact"}))
    fused, _ = one_update(changed)
    moved = (exact - one_update(changed.model_copy(update={"update": "exact", "lr": 1e-12}))[0]).abs().max()
    assert (exact - fused).abs().max() < 1e-3 * moved
    assert (exact - one_update(base.model_copy(update={"update": "exact"}))[0]).abs().max() > 0.1 * moved
