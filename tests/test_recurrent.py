"""--recurrent: the numpy sampler's LSTM is the torch LSTM, segments cover every step once, training runs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import TINY, read_metrics, run_ppolab, without_timings

from ppolab.envs import make_env
from ppolab.ppo.policy import sampling_params
from ppolab.ppo.rollout import collect
from ppolab.ppo.sampling_policy import SamplingPolicy
from ppolab.ppo.storage import Segments, old_outputs
from ppolab.runner.config import TrainConfig
from ppolab.runner.trainer import build_networks


def recurrent_nets(env, hidden=(16, 12)):
    cfg = TrainConfig(
        env=env.name, recurrent=True, hidden_sizes=list(hidden), num_procs=2, max_traj_len=100, minibatch_size=64
    )
    torch.manual_seed(0)
    actor, critic = build_networks(cfg, env.obs_dim, env.act_dim)
    with torch.no_grad():  # a non-trivial policy and normaliser
        actor.out.weight.normal_(0, 0.5)
        actor.norm.update(np.random.default_rng(0).normal(size=(100, env.obs_dim)))
    return actor, critic


def test_segments_cover_every_step_once_in_episode_order():
    ended = np.zeros((6, 2), bool)
    ended[[1, 5], 0] = True
    ended[[2, 3, 5], 1] = True
    seg = Segments.split(ended)
    assert sorted(seg.lengths.tolist()) == [1, 2, 2, 3, 4]
    assert sorted(seg.flat_index().tolist()) == list(range(12))
    flat = torch.arange(12.0)
    padded = seg.pad(flat)
    assert torch.equal(padded[seg.mask], flat[seg.flat_index()])
    assert (padded[~seg.mask] == 0).all()


def test_the_numpy_lstm_of_the_samplers_equals_the_torch_lstm_of_the_update():
    env = make_env("h1", 3)  # falls within a second or two: episodes end inside the iteration
    actor, critic = recurrent_nets(env)
    params = sampling_params(actor)
    traj = collect(env, params, seed=1, stream=0, iteration=0, first_slot=0, total_slots=3, steps=100)
    steps, slots = traj.rewards.shape
    obs = actor.norm(torch.from_numpy(traj.obs.reshape(steps * slots, -1)))
    final = actor.norm(torch.from_numpy(traj.final_obs.reshape(steps * slots, -1)))
    seg = Segments.split(traj.ended)
    mean, _, _, _ = old_outputs(actor, critic, obs, final, seg)
    # replay the sampler: state reset wherever an episode started
    policy = SamplingPolicy(params)
    expected = np.empty((steps, slots, env.act_dim), np.float32)
    for t in range(steps):
        expected[t] = policy(traj.obs[t])
        for s in np.flatnonzero(traj.ended[t]):
            policy.reset(s)
    np.testing.assert_allclose(mean.numpy().reshape(steps, slots, -1), expected, atol=1e-5)
    assert traj.ended[:-1].any()  # the check went through at least one episode boundary


@pytest.mark.parametrize("name", ["h1", "jvrc_walk", "jvrc_step"])  # cartpole: in the determinism test below
def test_a_few_recurrent_training_iterations(name, tmp_path):
    proc = run_ppolab(
        "train", "--env", name, "--recurrent", "--hidden-sizes", "16", "--n-itr", "2", "--num-procs", "2",
        "--max-traj-len", "30", "--minibatch-size", "16", "--eval-episodes", "1", "--seed", "1",
        "--logdir", str(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = tmp_path.iterdir()
    rows = [r for r in read_metrics(run_dir) if r["type"] == "iteration"]
    assert len(rows) == 2 and all(np.isfinite(r["actor_loss"]) and np.isfinite(r["kl"]) for r in rows)
    assert rows[0]["kl"] < 0.1  # old log-probs match the sampler's policy: the first update starts at ratio 1
    assert all((r["mirror_loss"] > 0) == (name != "h1") for r in rows)  # mirror loss on the jvrc envs
    play = run_ppolab("eval", "--path", str(run_dir), "--episodes", "1")
    assert play.returncode == 0 and "Mean return" in play.stdout


def test_recurrent_metrics_do_not_depend_on_the_number_of_sampling_processes(tmp_path):
    runs = []
    for procs in ("1", "2"):
        logdir = tmp_path / procs
        proc = run_ppolab(
            "train", *TINY, "--recurrent", "--hidden-sizes", "16", "--n-itr", "3", "--seed", "5",
            "--sampler-procs", procs, "--logdir", str(logdir),
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        (run_dir,) = logdir.iterdir()
        runs.append(without_timings(read_metrics(run_dir)))
    assert runs[0] == runs[1]
