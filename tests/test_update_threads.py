"""The update with a second intra-op thread (wide networks) gives the same numbers to the last bit."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from ppolab.envs import make_env
from ppolab.ppo.config import TrainConfig
from ppolab.ppo.rollout import Trajectories
from ppolab.ppo.storage import RolloutStorage
from ppolab.ppo.trainer import build_networks
from ppolab.ppo.update import FlatAdam, Hyper, Mirror, ppo_update, torch_threads, update_threads


def trajectories(steps: int, slots: int, obs_dim: int, act_dim: int) -> Trajectories:
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
    )


def one_update(cfg: TrainConfig, threads: int) -> tuple[torch.Tensor, dict]:
    env = make_env(cfg.env, 1)
    torch.manual_seed(0)
    actor, critic = build_networks(cfg, env.obs_dim, env.act_dim)
    actor, critic = copy.deepcopy(actor), copy.deepcopy(critic)
    optimizer = FlatAdam(actor, critic, cfg.lr, cfg.eps)
    act = env.symmetry.act
    mirror = Mirror(torch.from_numpy(act.perm), torch.from_numpy(act.sign).float(), cfg.mirror_coeff)
    traj = trajectories(100, 6, env.obs_dim, env.act_dim)
    actor.norm.update(traj.obs)
    hp = Hyper(cfg.epochs, cfg.minibatch_size, cfg.clip, cfg.entropy_coeff, cfg.max_grad_norm)
    with torch_threads(threads):
        storage = RolloutStorage(traj, actor, critic, gamma=cfg.gamma, lam=cfg.lam, recurrent=cfg.recurrent,
                                 device=torch.device("cpu"), mirror_obs=env.symmetry.obs)  # fmt: skip
        stats = ppo_update(actor, critic, optimizer, storage, hp, np.random.default_rng(1), mirror)
    return optimizer.flat.clone(), stats


@pytest.mark.parametrize("recurrent", [False, True])
def test_one_and_two_threads_update_a_wide_network_identically(recurrent):
    cfg = TrainConfig(env="jvrc_walk", recurrent=recurrent, epochs=2)  # the preset: 256 x 256, minibatch 64
    assert update_threads(list(cfg.hidden_sizes), cores=2) == 2 and update_threads([64, 64], cores=2) == 1
    one, stats_one = one_update(cfg, 1)
    two, stats_two = one_update(cfg, 2)
    assert torch.equal(one, two) and stats_one == stats_two
