"""What the comparison concludes on synthetic sweeps of known truth (never trained), over many draws.

    python benchmarks/conclusions.py [--draws 400] [--seed 0]

- Null sweeps (every configuration's seeds drawn from one normal, mean 300, sd 40) with 3
  and 5 seeds, and 1, 3 and 5 treatments: the share of "supported" or "refuted" verdicts
  (target <= 5%), of "**Decided:** best configuration" and of "extend the range" advice.
- Real effects: the share of sweeps whose verdict is "supported" (power), for a large
  effect (+2.5 sd at 5 seeds, +4 sd at 3 seeds) and a small one (320 vs 300, sd 40, 3 seeds).
- Unfinished treatment runs (cut at iteration 40 of 120): never decided.
- Anomaly rules on flat AR(1) plateaus (reward 300, noise sd 10, lag-1 autocorrelation phi)
  of 120 and 300 iterations: reward_decline and reward_collapse false positives, and the
  share of declines of 20 and 40 over the last 20% that reward_decline catches; on runs
  flat from their start: reward_collapse false positives and never_learned's detection;
  "still improving" on levelled-off runs (false) and on runs climbing to the end (caught).
- Failed seeds: a real +120 effect at 5 seeds with one treatment seed that never
  learns, or one that diverges to nan at iteration 70; half of a configuration's seeds
  failing at 3 seeds: what the verdict and results say.
- Verdict consistency: null cells of 3 treatments where the verdict and a **Significant** line
  disagree (target: none).
- Time to pass: pass times of control and treatment drawn from one exponential (null) or the
  treatment's twice as fast, censored at a budget, 5 seeds: the log-rank permutation test's
  share of decided verdicts.

Writes benchmarks/results/conclusions.json and prints the table.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

from ppolab.analysis import synthetic
from ppolab.analysis.anomalies import find_anomalies
from ppolab.analysis.compare import compare, verdict

RESULTS = Path(__file__).parent / "results"


def draw_sweep(rng, seeds: int, treatments: int, effect: float = 0.0, sd: float = 40.0, base: float = 300.0):
    scores = {"control": list(rng.normal(base, sd, seeds))}
    for k in range(treatments):
        scores[f"t{k + 1}"] = list(rng.normal(base + (effect if k == 0 else 0.0), sd, seeds))
    return synthetic.sweep(scores)


def null_rates(rng, draws: int) -> list[dict]:
    rows = []
    for seeds in (3, 5):
        for treatments in (1, 3, 5):
            decided = best = edge = 0
            for _ in range(draws):
                runs = draw_sweep(rng, seeds, treatments)
                result, _ = verdict(runs)
                text = compare(runs)
                decided += result in ("supported", "refuted")
                best += "**Decided:** best configuration" in text
                edge += "extend the range" in text
            rows.append({"seeds": seeds, "treatments": treatments, "draws": draws, "decided": decided / draws,
                         "best_named": best / draws, "range_advice": edge / draws})  # fmt: skip
    return rows


def power_rates(rng, draws: int) -> list[dict]:
    cases = [("large, 5 seeds", 5, 2.5 * 40), ("large, 3 seeds", 3, 4 * 40), ("small (320 vs 300), 3 seeds", 3, 20)]
    rows = []
    for label, seeds, effect in cases:
        hits = sum(verdict(draw_sweep(rng, seeds, 1, effect))[0] == "supported" for _ in range(draws))
        rows.append({"case": label, "seeds": seeds, "effect": effect, "sd": 40, "supported": hits / draws})
    return rows


def unfinished_rate(rng, draws: int) -> float:
    undecided = 0
    for _ in range(draws):
        runs = []
        for label, mean in (("control", 300.0), ("treat", 300.0)):
            for s, score in enumerate(rng.normal(mean, 40, 3), start=1):
                stop = 40 if label == "treat" else None
                runs.append(
                    synthetic.run(f"{label}-s{s}", score, {"lr": 1e-3 if label == "control" else 2e-3}, 120, stop)
                )
        result, why = verdict(runs)
        undecided += result == "inconclusive" and why.startswith("not decided")
    return undecided / draws


def ar1_run(rng, n: int, phi: float, drop: float = 0.0, collapse: bool = False) -> list[dict]:
    e, rows = 0.0, []
    k = max(10, int(0.2 * n))
    for i in range(n):
        e = phi * e + rng.normal(0, 10 * math.sqrt(1 - phi**2))
        reward = min(300.0, 300 * i / (0.3 * n)) + e - drop * max(0, i - (n - k)) / (k - 1)
        if collapse and i >= 0.6 * n:
            reward -= 170
        rows.append({"iteration": i, "mean_eprew": reward, "kl": 0.01, "clip_fraction": 0.1, "noise_std": 0.2,
                     "critic_loss": 1.0, "actor_loss": 0.0, "entropy": -0.5})  # fmt: skip
    return rows


def fired(rng, draws: int, rule: str, n: int, phi: float, **kw) -> float:
    """Share of draws in which `rule` fires."""
    hits = sum(rule in {a["rule"] for a in find_anomalies(ar1_run(rng, n, phi, **kw))} for _ in range(draws))
    return hits / draws


def anomaly_rates(rng, draws: int) -> list[dict]:
    rows = []
    for n in (120, 300):
        for phi in (0.0, 0.5, 0.7, 0.9):
            rows.append({
                "iterations": n, "phi": phi,
                "decline_false_positive": fired(rng, draws, "reward_decline", n, phi),
                "collapse_false_positive": fired(rng, draws, "reward_collapse", n, phi),
                "decline_20_caught": fired(rng, draws, "reward_decline", n, phi, drop=20),
                "decline_40_caught": fired(rng, draws, "reward_decline", n, phi, drop=40),
                "collapse_caught": fired(rng, draws, "reward_collapse", n, phi, collapse=True),
            })  # fmt: skip
    return rows


def flat_ar1(rng, n: int, phi: float, level: float = 300.0) -> list[dict]:
    e, rows = rng.normal(0, 10), []
    for i in range(n):
        e = phi * e + rng.normal(0, 10 * math.sqrt(1 - phi**2))
        rows.append({"iteration": i, "mean_eprew": level + e, "kl": 0.01, "clip_fraction": 0.1, "noise_std": 0.2,
                     "critic_loss": 1.0, "actor_loss": 0.0, "entropy": -0.5})  # fmt: skip
    return rows


def flat_and_improving_rates(rng, draws: int) -> list[dict]:
    from ppolab.analysis.anomalies import still_improving

    def rules(rows):
        return {a["rule"] for a in find_anomalies(rows)}

    rows = []
    for n in (120, 300):
        for phi in (0.0, 0.5, 0.8, 0.9):
            levelled = [ar1_run(rng, n, phi) for _ in range(draws)]
            evals = [{"iteration": i, "reward": 300.0 + i / n} for i in range(0, n, max(1, n // 5))]  # last best
            climbing = [flat_ar1(rng, n, phi) for _ in range(draws)]
            for run in climbing:
                for r in run:
                    r["mean_eprew"] += 300.0 * r["iteration"] / n - 300.0
            rows.append({
                "iterations": n, "phi": phi,
                "flat_collapse_false_positive": sum("reward_collapse" in rules(flat_ar1(rng, n, phi))
                                                    for _ in range(draws)) / draws,
                "flat_never_learned_caught": sum("never_learned" in rules(flat_ar1(rng, n, phi))
                                                 for _ in range(draws)) / draws,
                "learning_never_learned_false": sum("never_learned" in rules(r) for r in levelled) / draws,
                "levelled_still_improving_false": sum(still_improving(r, evals) is not None for r in levelled) / draws,
                "climbing_still_improving_caught": sum(still_improving(r, evals) is not None for r in climbing) / draws,
            })  # fmt: skip
    return rows


def failed_seed_rates(rng, draws: int) -> dict:
    """What the verdict says when seeds fail: +120 at 5 seeds (sd 40) with one treatment seed that never
    learns (flat at 20) or diverges at iteration 70 of 120; and half of a configuration failing at 3 seeds."""

    def sweep_with(failure: str | None, seeds: int = 5, treat_fail: int = 1):
        runs = []
        for label, mean, lr in (("control", 300.0, 1e-3), ("treat", 420.0, 3e-3)):
            for s, score in enumerate(rng.normal(mean, 40, seeds), start=1):
                kw = {}
                if label == "treat" and s > seeds - treat_fail and failure == "flat":
                    score, kw = 20.0, {"flat": True}
                elif label == "treat" and s > seeds - treat_fail and failure == "nan":
                    kw = {"diverge_at": 70}
                runs.append(synthetic.run(f"{label}-s{s}", score, {"lr": lr, "seed": s}, 120, **kw))
        return runs

    out = {}
    for case, failure, seeds, k in (("never learned, 1 of 5", "flat", 5, 1), ("diverged, 1 of 5", "nan", 5, 1),
                                    ("never learned, 2 of 3", "flat", 3, 2)):  # fmt: skip
        supported = flagged = split = said_stable = 0
        for _ in range(draws):
            runs = sweep_with(failure, seeds, k)
            result, _ = verdict(runs)
            text = compare(runs)
            supported += result == "supported"
            flagged += ("never_learned" in text or "nan_inf" in text) and "Solved seeds" in text
            split += "**Split:**" in text
            said_stable += "Every finished run was stable" in text
        out[case] = {"draws": draws, "supported": supported / draws, "failure_reported": flagged / draws,
                     "split_said": split / draws, "said_every_run_stable": said_stable / draws}  # fmt: skip
    return out


def verdict_consistency(rng, draws: int) -> dict:
    """Null cells of 3 treatments at 3 and 5 seeds: the verdict says "no treatment differs significantly"
    while a **Significant** line stands in the analysis (target: never)."""
    clash = cells = 0
    for seeds in (3, 5):
        for _ in range(draws):
            runs = draw_sweep(rng, seeds, 3)
            _, why = verdict(runs)
            text = compare(runs)
            cells += 1
            clash += "differs significantly" in why and "**Significant:**" in text
    return {"cells": cells, "clashes": clash}


def time_to_pass_rates(rng, draws: int) -> list[dict]:
    from ppolab.analysis.time_to_pass import Passing, logrank_permutation

    def side(scale: float, n: int, budget: float) -> list[Passing]:
        t = rng.exponential(scale, n)
        return [Passing(min(v, budget), bool(v <= budget)) for v in t]

    rows = []
    for label, treat_scale in (("null", 20.0), ("twice as fast", 10.0)):
        hits = 0
        for _ in range(draws):
            z, p = logrank_permutation(side(treat_scale, 5, 40.0), side(20.0, 5, 40.0))
            hits += p < 0.05
        rows.append({"case": label, "seeds": 5, "budget": 40.0, "control_mean": 20.0, "decided": hits / draws})
    return rows


def claims_rates(rng, draws: int) -> dict:
    """Claims that need their test: a significant effect below the smallest effect of interest is never
    "supported"; with two treatments equally better than the control, "best" is (almost) never named; runs all
    passing at the same check give no log-rank test; a one-configuration time-to-pass report names no test."""
    from ppolab.analysis.time_to_pass import Passing, logrank_permutation

    below = equal_best = untestable = one_config_named = 0
    for _ in range(draws):
        small = synthetic.sweep({"control": list(rng.normal(300, 2, 5)), "t": list(rng.normal(315, 2, 5))})
        below += verdict(small, min_effect_value=30)[0] == "supported"
        twins = synthetic.sweep({"control": list(rng.normal(300, 10, 5)), "a": list(rng.normal(360, 10, 5)),
                                 "b": list(rng.normal(360, 10, 5))})  # fmt: skip
        equal_best += "best configuration" in compare(twins)
        at = int(rng.integers(1, 20)) * 10 - 1
        z, p = logrank_permutation([Passing(at, True)] * 5, [Passing(at, True)] * 5)
        untestable += z != z and p != p
    for _ in range(max(10, draws // 10)):
        passes = [int(rng.integers(1, 9)) * 10 - 1 if rng.random() < 0.6 else synthetic.NEVER for _ in range(5)]
        runs = [synthetic.run(f"preset-s{s}", 300, {"seed": s, "check_every": 10}, 100, passes_at=a)
                for s, a in enumerate(passes, start=1)]  # fmt: skip
        text = compare(runs, metric="time_to_pass")
        one_config_named += "Fisher" in text or "log-rank" in text
    return {"below_min_effect_supported": below / draws, "equal_winners_best_named": equal_best / draws,
            "no_variance_untestable": untestable / draws,
            "one_configuration_names_a_test": one_config_named / max(10, draws // 10)}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--draws", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    out = {
        "draws": args.draws,
        "null": null_rates(rng, args.draws),
        "power": power_rates(rng, args.draws),
        "unfinished_never_decided": unfinished_rate(rng, max(50, args.draws // 4)),
        "anomalies": anomaly_rates(rng, args.draws // 2),
        "flat_and_improving": flat_and_improving_rates(rng, args.draws // 2),
        "failed_seeds": failed_seed_rates(rng, max(50, args.draws // 4)),
        "verdict_consistency": verdict_consistency(rng, max(50, args.draws // 4)),
        "time_to_pass": time_to_pass_rates(rng, max(50, args.draws // 4)),
        "claims": claims_rates(rng, max(50, args.draws // 4)),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "conclusions.json").write_text(json.dumps(out, indent=2) + "\n")
    print(f"Null sweeps ({args.draws} draws each): share decided (supported or refuted), best named, range advice")
    for r in out["null"]:
        print(f"  {r['seeds']} seeds, {r['treatments']} treatment(s): {r['decided']:.3f}  {r['best_named']:.3f}  "
              f"{r['range_advice']:.3f}")  # fmt: skip
    print("Real effects: share supported")
    for r in out["power"]:
        print(f"  {r['case']}: +{r['effect']:.0f} (sd {r['sd']}): {r['supported']:.3f}")
    print(f"Unfinished treatment runs: never decided in {out['unfinished_never_decided']:.0%} of sweeps")
    print("Anomalies on AR(1) plateaus: decline FP, collapse FP, decline 20 caught, decline 40 caught, collapse caught")
    for r in out["anomalies"]:
        print(f"  {r['iterations']} iterations, phi {r['phi']}: {r['decline_false_positive']:.3f}  "
              f"{r['collapse_false_positive']:.3f}  {r['decline_20_caught']:.2f}  {r['decline_40_caught']:.2f}  "
              f"{r['collapse_caught']:.2f}")  # fmt: skip
    print(
        "Flat and levelled runs: flat collapse FP, flat never_learned caught, learning never_learned FP, "
        "levelled 'still improving' FP, climbing caught"
    )
    for r in out["flat_and_improving"]:
        print(f"  {r['iterations']} iterations, phi {r['phi']}: {r['flat_collapse_false_positive']:.3f}  "
              f"{r['flat_never_learned_caught']:.3f}  {r['learning_never_learned_false']:.3f}  "
              f"{r['levelled_still_improving_false']:.3f}  {r['climbing_still_improving_caught']:.3f}")  # fmt: skip
    print("Failed seeds: share supported, failure reported, split said, 'every run stable' said")
    for case, r in out["failed_seeds"].items():
        print(f"  {case}: {r['supported']:.3f}  {r['failure_reported']:.3f}  {r['split_said']:.3f}  "
              f"{r['said_every_run_stable']:.3f}")  # fmt: skip
    vc = out["verdict_consistency"]
    print(f"Verdict against a Significant line: {vc['clashes']} of {vc['cells']} null cells")
    for r in out["time_to_pass"]:
        print(f"Time to pass, {r['case']}: decided in {r['decided']:.3f}")
    c = out["claims"]
    print(
        f"Claims: significant below the smallest effect 'supported' {c['below_min_effect_supported']:.3f}; "
        f"equal winners, 'best' named {c['equal_winners_best_named']:.3f}; no variance untestable "
        f"{c['no_variance_untestable']:.3f}; one configuration names a test "
        f"{c['one_configuration_names_a_test']:.3f}"
    )


if __name__ == "__main__":
    main()
