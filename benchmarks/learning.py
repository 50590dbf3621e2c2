"""Learning benchmark: cartpole swing-up in the README's recommended configuration, several seeds.

Bar: a mean eval reward >= 450 (of about 480 possible) within 500 iterations, for every seed.
Runs are sequential (one training job at a time on a machine). Evaluations run every
--eval-freq iterations so that the time to the first eval >= 450 is measured finely.

    python benchmarks/learning.py [--seeds 1 2 3] [--n-itr 500] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import recommended

from ppolab.util.files import atomic_write_text, output_file


def run_seed(seed: int, n_itr: int, eval_freq: int, threshold: float, logdir: Path) -> dict:
    cmd = recommended.train_command(n_itr, seed, eval_freq, str(logdir), "--run-name", f"seed{seed}")
    started = time.time()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env={**os.environ, "RAY_ADDRESS": ""})
    wall = time.time() - started
    records = [json.loads(line) for line in (logdir / f"seed{seed}" / "metrics.jsonl").read_text().splitlines()]
    iters = {r["iteration"]: r for r in records if r["type"] == "iteration"}
    evals = [r for r in records if r["type"] == "eval"]
    first = next((e for e in evals if e["reward"] >= threshold), None)
    best = max(evals, key=lambda e: e["reward"])
    return {
        "seed": seed,
        "reached": first is not None,
        "first_iteration": first["iteration"] if first else None,
        # training clock at that iteration (sampling, updates, evaluations), as the run itself logged it
        "first_seconds": iters[first["iteration"]]["total_time"] if first else None,
        "best_eval": best["reward"],
        "best_iteration": best["iteration"],
        "final_eval": evals[-1]["reward"],
        "train_seconds": iters[max(iters)]["total_time"],
        "wall_seconds": wall,
        "fps": iters[max(iters)]["fps"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--n-itr", type=int, default=500)
    ap.add_argument("--eval-freq", type=int, default=10)
    ap.add_argument("--threshold", type=float, default=450.0)
    ap.add_argument("--logdir", help="keep the runs here (default: a temporary folder)")
    ap.add_argument("--json", type=output_file, help="also write the figures to this file")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        logdir = Path(args.logdir or tmp)
        rows = []
        for seed in args.seeds:
            row = run_seed(seed, args.n_itr, args.eval_freq, args.threshold, logdir)
            rows.append(row)
            first = (
                f"iteration {row['first_iteration']} after {row['first_seconds']:.0f} s" if row["reached"] else "never"
            )
            print(
                f"seed {seed}: first eval >= {args.threshold:g}: {first}; best {row['best_eval']:.1f} "
                f"(iteration {row['best_iteration']}); final {row['final_eval']:.1f}; "
                f"{row['train_seconds']:.0f} s, {row['fps']:,.0f} steps/s",
                flush=True,
            )
    ok = sum(r["reached"] for r in rows)
    print(f"{ok}/{len(rows)} seeds reached a mean eval reward >= {args.threshold:g} within {args.n_itr} iterations")
    if args.json:
        atomic_write_text(args.json, json.dumps({"date": time.strftime("%Y-%m-%d"), "runs": rows}, indent=2) + "\n")
    sys.exit(0 if ok == len(rows) else 1)


if __name__ == "__main__":
    main()
