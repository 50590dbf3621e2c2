"""Seeds that fail are results: a seed that never learned or diverged counts against its configuration, the
verdict says so, and the anomaly rules hold their false-alarm rates on autocorrelated, levelled-off runs."""

from __future__ import annotations

import math

import numpy as np

from ppolab.analysis import synthetic
from ppolab.analysis.anomalies import find_anomalies, still_improving
from ppolab.analysis.compare import compare, verdict


def _ar1(rng, n: int, phi: float, level=lambda i, n: 300.0) -> list[dict]:
    e, rows = rng.normal(0, 10), []
    for i in range(n):
        e = phi * e + rng.normal(0, 10 * math.sqrt(1 - phi**2))
        rows.append({"iteration": i, "mean_eprew": level(i, n) + e, "kl": 0.01, "clip_fraction": 0.1,
                     "noise_std": 0.2, "critic_loss": 1.0, "actor_loss": 0.0, "entropy": -0.5})  # fmt: skip
    return rows


def _rules(rows, **kw) -> set[str]:
    return {a["rule"] for a in find_anomalies(rows, **kw)}


def test_a_flat_run_never_learned_a_learning_one_did_and_a_fine_tune_is_not_asked():
    rng = np.random.default_rng(5)
    climb = lambda i, n: min(300.0, 300 * i / (0.3 * n))  # noqa: E731
    assert "never_learned" in _rules(_ar1(rng, 200, 0.5, lambda i, n: 20.0))
    assert "never_learned" not in _rules(_ar1(rng, 200, 0.5, climb))
    assert "never_learned" not in _rules(_ar1(rng, 200, 0.5, lambda i, n: 20.0), fine_tune=True)


def test_reward_collapse_stays_quiet_on_flat_autocorrelated_runs_and_catches_a_real_collapse():
    rng = np.random.default_rng(6)
    flat = [_rules(_ar1(rng, 120, 0.9)) for _ in range(60)]
    assert sum("reward_collapse" in r for r in flat) <= 3  # the uncorrected guard fired on 46% at phi 0.9
    fall = lambda i, n: min(300.0, 300 * i / (0.3 * n)) - (170 if i >= 0.6 * n else 0)  # noqa: E731
    assert sum("reward_collapse" in _rules(_ar1(rng, 300, 0.0, fall)) for _ in range(20)) == 20


def test_a_levelled_off_run_whose_last_eval_is_its_best_is_not_still_improving():
    rng = np.random.default_rng(7)
    rows = _ar1(rng, 300, 0.5, lambda i, n: min(300.0, 300 * i / (0.4 * n)))
    evals = [{"iteration": i, "reward": 250.0 + i / 10} for i in range(0, 300, 50)]  # the last is the best
    assert still_improving(rows, evals) is None
    climbing = _ar1(rng, 300, 0.0, lambda i, n: 300.0 * i / n)
    assert still_improving(climbing, evals) is not None


def _config_runs(label: str, lr: float, scores: list[float], per_seed: dict | None = None) -> list:
    runs = []
    for s, score in enumerate(scores, start=1):
        kw = (per_seed or {}).get(s, {})
        runs.append(synthetic.run(f"{label}-s{s}", score, {"lr": lr, "seed": s}, 120, **kw))
    return runs


def test_a_treatment_whose_seed_diverged_is_not_supported_on_its_healthy_seeds_alone():
    runs = _config_runs("control", 1e-3, [300, 305, 310, 295, 302])
    runs += _config_runs("fast", 3e-3, [420, 425, 415, 430, 0], {5: {"diverge_at": 70}})
    result, why = verdict(runs)
    assert result == "inconclusive" and "1 of its 5 seeds failed (fast-s5: nan_inf)" in why, why
    text = compare(runs)
    assert "Solved seeds" in text and "4 of 5 (80%" in text and "Fisher's exact" in text
    assert "Every finished run was stable" not in text and "nan_inf" in text.split("### Recommendations")[1]
    assert "**Decided:**" not in text


def test_seeds_that_never_learned_are_flagged_counted_and_the_split_is_said():
    runs = _config_runs("control", 1e-3, [300, 305, 310, 295, 302])
    runs += _config_runs("half", 3e-3, [420, 425, 415, 20, 25], {4: {"flat": True}, 5: {"flat": True}})
    text = compare(runs)
    assert "never_learned" in text and "Every finished run was stable" not in text
    split = "**Split:** half's seeds fall into two groups, 3 that learned and 2 that failed (half-s4: never_learned"
    assert split in text
    assert "3 of 5 (60%" in text
    assert verdict(runs)[0] == "inconclusive"


def test_seeds_that_split_by_score_alone_are_said_to_and_normal_seeds_are_not():
    from ppolab.analysis.stats import two_groups

    assert two_groups(np.array([20.0, 25.0, 415.0, 420.0, 425.0])) == ([20.0, 25.0], [415.0, 420.0, 425.0])
    rng = np.random.default_rng(8)
    assert sum(two_groups(rng.normal(300, 40, 5)) is not None for _ in range(300)) <= 9  # its level is 1%
    assert two_groups(np.array([20.0, 415.0, 425.0])) is None  # 3 seeds cannot show it


def test_the_verdict_agrees_with_the_significance_lines_and_names_a_small_effect():
    runs = _config_runs("control", 1e-3, [300, 301, 302, 299, 300])
    runs += _config_runs("worse", 2e-3, [250, 251, 252, 249, 250])
    runs += _config_runs("same", 3e-3, [300, 310, 290, 305, 295])
    result, why = verdict(runs)
    assert result == "inconclusive" and "worse is significantly worse" in why
    assert "**Significant:** worse is worse" in compare(runs)
    small = _config_runs("control", 1e-3, [300, 301, 302, 299, 300])
    small += _config_runs("learnstd", 2e-3, [315, 316, 314, 315, 316])
    result, why = verdict(small, min_effect_value=30)  # significant, but half the effect worth finding
    assert result == "inconclusive" and why.startswith("learnstd beats")
    assert "significant but below the smallest effect of interest, 30" in why
    assert verdict(small, min_effect_value=10)[0] == "supported"


def test_parameters_that_vary_together_are_one_estimate_named_by_configuration():
    """A treatment changing lr and epochs at once is one comparison, not one line per parameter (where the
    control's unused value would read as a finding); a parameter varied on its own keeps its own line."""
    runs = [synthetic.run(f"control-s{s}", 300.0 + s, {"lr": 1e-3, "epochs": 3, "seed": s}, 120) for s in (1, 2)]
    runs += [synthetic.run(f"rsl-s{s}", 320.0 + s, {"lr": 3e-3, "epochs": 5, "seed": s}, 120) for s in (1, 2)]
    estimates = [line for line in compare(runs).splitlines() if "mean final reward by" in line]
    assert estimates == ["- *Estimate:* mean final reward by epochs and lr, which vary together: "
                         "control: 301.5, rsl: 321.5 (spread 20.0)."], estimates  # fmt: skip
    runs += [synthetic.run(f"wide-s{s}", 310.0 + s, {"lr": 1e-3, "epochs": 5, "seed": s}, 120) for s in (1, 2)]
    estimates = [line for line in compare(runs).splitlines() if "mean final reward by" in line]
    assert len(estimates) == 2 and all("vary together" not in e for e in estimates), estimates


def test_advice_for_a_run_under_the_adaptive_schedule_names_desired_kl_not_lr():
    """Under --schedule adaptive the rate follows the KL: lowering --lr would change only where it starts."""
    for schedule, flag in (("fixed", "lower --lr "), ("adaptive", "lower --desired-kl ")):
        runs = [synthetic.run(f"control-s{s}", 300.0, {"lr": 1e-3, "schedule": schedule, "seed": s}, 120,
                              diverge_at=70 if s == 1 else None) for s in (1, 2)]  # fmt: skip
        advice = compare(runs).split("### Recommendations")[1]
        assert f"{flag}and check the reward for nan/inf" in advice and "control-s1 shows nan_inf" in advice, advice


def test_advice_counts_every_run_an_anomaly_fired_on_and_names_the_worst():
    """Naming only the first run read as one affected seed when every seed was."""
    runs = [synthetic.run(f"control-s{s}", 300.0, {"lr": 1e-3, "seed": s}, 120, diverge_at=at)
            for s, at in ((1, 90), (2, 40), (3, None))]  # fmt: skip
    advice = compare(runs).split("### Recommendations")[1]
    assert "2 of 3 finished runs show nan_inf (most: control-s2," in advice, advice
