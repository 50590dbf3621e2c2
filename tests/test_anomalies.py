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
    assert abs(rules(declining)["reward_decline"]["first_iteration"] - 80) <= 2  # where it starts, give or take


def test_a_decline_is_located_where_it_starts_not_at_the_window():
    iters = healthy(200)
    rng = np.random.default_rng(2)
    for r in iters[100:]:
        r["mean_eprew"] = 450 + rng.normal(0, 5)
    for r in iters[150:]:  # the window is the last 40 iterations (from 160); the fall starts before it
        r["mean_eprew"] = 450 - 3 * (r["iteration"] - 150) + rng.normal(0, 5)
    found = rules(iters)["reward_decline"]
    assert abs(found["first_iteration"] - 150) <= 3 and "declining from iteration" in found["detail"]


def test_a_collapse_that_stays_down_is_not_stable():
    iters = healthy(150)
    rng = np.random.default_rng(3)
    for r in iters[60:]:
        r["mean_eprew"] = 320 + rng.normal(0, 8)
    for r in iters[90:]:
        r["mean_eprew"] = 150 + rng.normal(0, 8)  # falls, then flat: no decline at the end
    found = rules(iters)
    assert "reward_decline" not in found
    assert abs(found["reward_collapse"]["first_iteration"] - 90) <= 5  # within the smoothing width


def test_noise_after_learning_is_no_collapse():
    iters = healthy(150)
    rng = np.random.default_rng(4)
    for r in iters[60:]:
        r["mean_eprew"] = 320 + rng.normal(0, 15)
    assert "reward_collapse" not in rules(iters)


def test_thresholds_compare_in_the_stored_float32_precision():
    iters = healthy()
    for r in iters:  # exactly at the thresholds, as float32 stores them
        r["noise_std"] = float(np.float32(0.01))
        r["kl"] = float(np.float32(0.05))
        r["clip_fraction"] = float(np.float32(0.3))
    assert not {"entropy_collapse", "kl_high", "clip_high"} & set(rules(iters))
    iters[5]["noise_std"] = float(np.float32(0.0099))
    assert rules(iters)["entropy_collapse"]["first_iteration"] == 5


def ar1_plateau(n: int, phi: float, seed: int, drop: float = 0.0) -> list[dict]:
    """A run that learns for 30% of its iterations, then holds 300 with AR(1) noise of sd 10."""
    rng = np.random.default_rng(seed)
    iters, e = healthy(n, seed), 0.0
    k = max(10, int(0.2 * n))
    for r in iters:
        e = phi * e + rng.normal(0, 10 * math.sqrt(1 - phi**2))
        i = r["iteration"]
        r["mean_eprew"] = min(300.0, 300 * i / (0.3 * n)) + e - drop * max(0, i - (n - k)) / (k - 1)
    return iters


def test_autocorrelated_plateaus_are_not_declines_but_real_declines_are():
    """A fixed-seed handful; benchmarks/conclusions.py measures the rates over many draws."""
    flat = [ar1_plateau(200, phi, seed) for phi in (0.5, 0.7, 0.9) for seed in range(10)]
    assert sum("reward_decline" in rules(r) for r in flat) <= 1
    declining = [ar1_plateau(200, 0.5, seed, drop=60) for seed in range(10)]
    assert sum("reward_decline" in rules(r) for r in declining) >= 9
