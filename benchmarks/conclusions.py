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
  share of declines of 20 and 40 over the last 20% that reward_decline catches.

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


if __name__ == "__main__":
    main()
