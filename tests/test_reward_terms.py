"""Rewards are tables of named terms: each term's contribution is logged per iteration (metrics.jsonl,
TensorBoard's rewards/<term>), shown by analyze, and the terms sum to the reward a step earns."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import only_run_dir, run_ppolab

from ppolab.envs import make_env
from ppolab.envs.reward_terms import EXP, LINEAR, RewardTable, Term
from ppolab.ppo.policy import Actor, ObsNormalizer, sampling_params
from ppolab.ppo.rollout import collect


def test_a_short_walking_run_logs_every_term_in_metrics_tensorboard_and_analyze(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    proc = run_ppolab("train", "--env", "jvrc_walk", "--n-itr", "2", "--num-procs", "2", "--logdir", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    run = only_run_dir(tmp_path)
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    iterations = [r for r in records if r["type"] == "iteration"]
    terms = [sorted(k for k in r if k.startswith("rewards/")) for r in iterations]
    assert len(iterations) == 2 and len(terms[0]) >= 5 and terms[0] == terms[1], terms
    assert {"rewards/velocity", "rewards/heading", "rewards/foot_force"} <= set(terms[0])
    events = EventAccumulator(str(run))
    events.Reload()
    tags = sorted(t for t in events.Tags()["scalars"] if t.startswith("rewards/"))
    assert tags == terms[0]
    assert [e.value for e in events.Scalars("rewards/heading")] == pytest.approx(
        [r["rewards/heading"] for r in iterations], rel=1e-6
    )
    shown = run_ppolab("analyze", str(run))
    assert shown.returncode == 0 and "Reward terms" in shown.stdout, shown.stdout + shown.stderr
    assert all(f"  {t.split('/')[1]} " in shown.stdout for t in terms[0]), shown.stdout


@pytest.mark.parametrize("env_name", ["cartpole", "h1", "jvrc_walk", "jvrc_step", "g1_stand"])
def test_the_terms_sum_to_the_reward_every_step(env_name):
    """Sampled as training samples: the iteration's per-term sums add up to its rewards, slot by slot."""
    env = make_env(env_name, 3)
    actor = Actor(ObsNormalizer(env.obs_dim), env.obs_dim, env.act_dim, [32, 32], std=0.3, learn_std=False)
    traj = collect(env, sampling_params(actor), seed=1, stream=0, iteration=0, first_slot=0, total_slots=3, steps=40)
    assert traj.reward_terms.shape == (1, 3, len(env.rewards.names))
    np.testing.assert_allclose(traj.reward_terms[0].sum(axis=1), traj.rewards.sum(axis=0), rtol=1e-5, atol=1e-5)


def test_a_reward_table_is_checked_when_it_is_written_and_bound():
    with pytest.raises(ValueError, match="named twice"):
        RewardTable(Term("a", 1.0), Term("a", 0.5))
    with pytest.raises(ValueError, match="come first"):
        RewardTable(Term("numpy", 1.0, size=lambda t: np.zeros(1)), Term("kernel", 1.0))
    table = RewardTable(Term("kernel", 0.5, LINEAR, 2.0), Term("extra", 0.25, EXP, 3.0, lambda t: t.x))
    weights = table.weights_model("ToyRewards", "toy")
    assert weights().model_dump() == {"kernel": 0.5, "extra": 0.25}
    with pytest.raises(ValueError, match="Extra inputs"):
        weights(nope=1.0)

    class Toy:
        num_envs = 2
        x = np.array([0.0, 1.0])

    with pytest.raises(ValueError, match="kernel computes"):
        table.bind(Toy(), weights(), ("other",))
    rewards = table.bind(Toy(), weights(kernel=1.0), ("kernel",))
    rewards.out[:] = [1.0, 2.0]  # what a kernel composed for its columns
    total = rewards.compose()
    np.testing.assert_allclose(rewards.terms[:, 1], 0.25 * np.exp(-3.0 * Toy.x))
    np.testing.assert_allclose(total, [1.0, 2.0] + 0.25 * np.exp(-3.0 * Toy.x))
