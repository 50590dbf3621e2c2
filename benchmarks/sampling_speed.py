"""Sampling speed of a task, this checkout against another, measured side by side.

One process samples 12 envs of each env with a trained-size policy (256 x 256), as one sampling process of
`ppolab train` does, and reports env steps per second over a few iterations after a warm-up. With
`--against CHECKOUT` the same measurement runs alternately in this checkout and in CHECKOUT (a `git worktree`
of an earlier commit, say), pair by pair, and prints each pair's ratio and their median: a change to a task's
code is judged by that ratio, never by one run against a figure measured another day.

    git worktree add /tmp/before <commit>
    python benchmarks/sampling_speed.py --envs jvrc_walk t1_walk --against /tmp/before --pairs 7
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def measure(env_name: str, envs: int, steps: int, iterations: int) -> float:
    """Env steps per second of `iterations` rollouts, after one not counted."""
    from ppolab.envs import make_env
    from ppolab.ppo.policy import Actor, ObsNormalizer, sampling_params
    from ppolab.ppo.rollout import collect

    env = make_env(env_name, envs)
    actor = Actor(ObsNormalizer(env.obs_dim), env.obs_dim, env.act_dim, [256, 256], std=0.2, learn_std=False)
    params = sampling_params(actor)
    kwargs = {"seed": 1, "stream": 0, "first_slot": 0, "total_slots": envs, "steps": steps}
    collect(env, params, iteration=0, **kwargs)
    start = time.perf_counter()
    for itr in range(1, iterations + 1):
        collect(env, params, iteration=itr, **kwargs)
    return envs * steps * iterations / (time.perf_counter() - start)


def run_in(checkout: Path, args: argparse.Namespace, env_name: str) -> float:
    """The measurement in a fresh process importing ppolab from `checkout`."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--one", env_name, "--envs-per-process", str(args.n),
           "--steps", str(args.steps), "--iterations", str(args.iterations)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(checkout), "OMP_NUM_THREADS": "1"}
    out = json.loads(subprocess.run(cmd, capture_output=True, text=True, env=env, check=True, cwd=checkout).stdout)
    if Path(out["ppolab"]).resolve() != checkout.resolve():
        raise SystemExit(f"measured {out['ppolab']}'s ppolab, not {checkout}'s")
    return float(out["steps_per_s"])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--envs", nargs="+", default=["jvrc_walk", "t1_walk"])
    p.add_argument("--against", type=Path, help="another checkout, measured in turn with this one")
    p.add_argument("--pairs", type=int, default=5, help="measurements of each checkout (default: 5)")
    p.add_argument("--envs-per-process", dest="n", type=int, default=12)
    p.add_argument("--steps", type=int, default=400, help="steps per env per iteration (default: 400)")
    p.add_argument("--iterations", type=int, default=3, help="timed iterations per measurement (default: 3)")
    p.add_argument("--one", help=argparse.SUPPRESS)  # one measurement in this process, as JSON
    args = p.parse_args()
    if args.one:
        import ppolab

        rate = measure(args.one, args.n, args.steps, args.iterations)
        print(json.dumps({"steps_per_s": rate, "ppolab": str(Path(ppolab.__file__).parents[1])}))
        return 0
    for env_name in args.envs:
        pairs = []
        for _ in range(args.pairs):
            here = run_in(HERE, args, env_name)
            there = run_in(args.against, args, env_name) if args.against else None
            pairs.append((here, there))
            print(f"{env_name}: {here:,.0f} steps/s" + (f" against {there:,.0f}: {here / there:.3f}" if there else ""))
        if args.against:
            ratio = statistics.median(h / t for h, t in pairs)
            print(f"{env_name}: median ratio {ratio:.3f} over {len(pairs)} pairs (this checkout / {args.against})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
