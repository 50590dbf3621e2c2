"""Anomaly rules fire on the pattern they name, and only then."""

from __future__ import annotations

import math

import numpy as np

from ppolab.analysis.anomalies import describe, find_anomalies


def healthy(n: int = 100, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [
        {
            "iteration": i,
            "mean_eprew": 150 + 3 * i + rng.normal(0, 5),
            "mean_eplen": 500.0,
            "actor_loss": -0.01,
            "critic_loss": 20.0,
            "kl": 0.01,
            "entropy": -0.5,
            "clip_fraction": 0.1,
            "noise_std": 0.15,
        }
        for i in range(n)
    ]


def rules(iters):
    return {a["rule"]: a for a in find_anomalies(iters)}


def test_a_healthy_learning_run_is_stable():
    assert find_anomalies(healthy()) == []
    assert describe([]) == "stable"


def test_nan_in_a_loss_is_flagged_but_a_nan_reward_is_an_iteration_without_finished_episodes():
    iters = healthy()
    iters[10]["mean_eprew"] = math.nan
    assert "nan_inf" not in rules(iters)
    iters[40]["critic_loss"] = math.nan
    iters[41]["kl"] = math.inf
    found = rules(iters)["nan_inf"]
    assert found["first_iteration"] == 40 and found["count"] == 2


def test_thresholds_count_and_first_iteration():
    iters = healthy()
    for i in range(30, 35):
        iters[i]["kl"] = 0.08
    iters[50]["clip_fraction"] = 0.45
    iters[60]["critic_loss"] = 5000.0
    found = rules(iters)
    assert (found["kl_high"]["first_iteration"], found["kl_high"]["count"]) == (30, 5)
    assert found["clip_high"]["count"] == 1 and found["critic_divergence"]["first_iteration"] == 60


def test_entropy_collapse_is_read_from_the_noise_std_not_the_sign_of_the_entropy():
    iters = healthy()
    for r in iters:
        r["entropy"] = -1.5  # negative, and perfectly healthy for std 0.15 on a few dims
    assert "entropy_collapse" not in rules(iters)
    for r in iters[80:]:
        r["noise_std"] = 0.004
    assert rules(iters)["entropy_collapse"]["first_iteration"] == 80


def test_reward_decline_is_a_trend_not_noise():
    noisy_plateau = healthy()
    rng = np.random.default_rng(1)
    for r in noisy_plateau[60:]:
        r["mean_eprew"] = 330 + rng.normal(0, 20)
    assert "reward_decline" not in rules(noisy_plateau)
    declining = healthy()
    for r in declining[80:]:
        r["mean_eprew"] = 390 - 6 * (r["iteration"] - 80) + rng.normal(0, 5)
    assert rules(declining)["reward_decline"]["first_iteration"] == 80
