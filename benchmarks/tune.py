"""Tuning benchmark: a 20-trial `ppolab tune` study on cartpole, then its best values confirmed.

The study searches lr, entropy_coeff, minibatch_size and std_dev; every other flag
is the README's recommended configuration, and every trial has the same budget
(--n-itr iterations of 6,000 steps, one seed). The best trial is then run with
fresh seeds against the recommended configuration, as a sweep, and both are
reported: final reward (mean over the last 10% of iterations) and peak eval.

    python benchmarks/tune.py [--n-trials 20] [--n-itr 100] [--confirm-seeds 101 102 103] [--json out.json]

Everything is kept in benchmarks/runs/tune/ (the study's SQLite file, its runs, report.md,
history.png, and the confirmation sweep).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import optuna
import recommended
import yaml

from ppolab.util.files import atomic_write_text, output_file

SEARCHED = {
    "lr": {"type": "float", "low": 1.0e-4, "high": 3.0e-3, "log": True},
    "entropy_coeff": {"type": "float", "low": 0.0, "high": 0.02},
    "minibatch_size": {"type": "categorical", "choices": [64, 128, 256, 512]},
    "std_dev": {"type": "float", "low": 0.05, "high": 0.5, "log": True},
}


def ppolab(*args: str, cwd: Path) -> None:
    env = {**os.environ, "RAY_ADDRESS": "", "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    subprocess.run([sys.executable, "-m", "ppolab", *args], cwd=cwd, check=True, env=env, stdin=subprocess.DEVNULL)


def summaries(sweep_dir: Path) -> dict[str, dict]:
    state = json.loads((sweep_dir / "state.json").read_text())
    return {name: run["summary"] for name, run in state["runs"].items()}


def stats(values: list[float]) -> dict:
    return {"mean": statistics.mean(values), "sd": statistics.stdev(values) if len(values) > 1 else 0.0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-trials", type=int, default=20)
    ap.add_argument("--n-itr", type=int, default=100, help="iterations per run (the fixed budget; default: 100)")
    ap.add_argument("--confirm-seeds", type=int, nargs="+", default=[101, 102, 103])
    ap.add_argument("--root", default="benchmarks/runs/tune", help="where everything goes (emptied first)")
    ap.add_argument("--json", type=output_file, help="also write the figures to this file")
    args = ap.parse_args()

    root = Path(args.root).resolve()
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    fixed = {k: v for k, v in recommended.SETTINGS.items() if k not in SEARCHED and k != "env"}
    (root / "space.yaml").write_text(yaml.safe_dump({"params": {**SEARCHED, **fixed, "n_itr": args.n_itr}}))

    started = time.time()
    ppolab(
        "tune", "--env", "cartpole", "--space", "space.yaml", "--study", "cartpole", "--n-trials", str(args.n_trials),
        "--eval-freq", "25", cwd=root,
    )  # fmt: skip
    tune_seconds = time.time() - started
    study = optuna.load_study(study_name="cartpole", storage=f"sqlite:///{root}/experiments/tune/cartpole.db")
    best = study.best_trial
    states = [t.state.name.lower() for t in study.trials]

    # the confirmation: best values against the recommended configuration, on fresh seeds
    base = {k: v for k, v in recommended.SETTINGS.items()}
    sweep = {
        "metadata": {"name": "confirm", "hypothesis": "the tuned values beat the recommended ones at this budget"},
        "defaults": {**base, "n_itr": args.n_itr, "eval_freq": 25},
        "seeds": args.confirm_seeds,
        "runs": {"A": {"name": "recommended"}, "B": {"name": "tuned", "config": dict(best.params)}},
    }
    confirm = root / "confirm"
    confirm.mkdir()
    (confirm / "sweep.yaml").write_text(yaml.safe_dump(sweep, sort_keys=False))
    ppolab("sweep", str(confirm), "--yes", cwd=root)
    runs = summaries(confirm)
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": os.uname().nodename,
        "n_trials": args.n_trials,
        "n_itr": args.n_itr,
        "trial_states": {s: states.count(s) for s in sorted(set(states))},
        "tune_seconds": tune_seconds,
        "best_trial": best.number,
        "best_value": best.value,
        "best_params": best.params,
    }
    for name in ("recommended", "tuned"):
        mine = [runs[f"{name}-s{s}"] for s in args.confirm_seeds]
        result[name] = {
            "final_reward": stats([r["final_mean_reward"] for r in mine]),
            "peak_eval": stats([r["peak_eval_reward"] for r in mine]),
            "per_seed_final": [round(r["final_mean_reward"], 1) for r in mine],
        }
    print(json.dumps(result, indent=2))
    if args.json:
        atomic_write_text(args.json, json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
