"""Sweep runner overhead: the time per run that is not training.

Launches a sweep of runs that do nothing but start (1 iteration of 20 env steps)
and reports, per run, the sweep's wall time minus the training time each run
logged. Bar: under 2 seconds.

    python benchmarks/sweep_overhead.py [--runs 5]
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

SWEEP = """\
metadata: {{name: overhead}}
defaults: {{env: cartpole, n_itr: 1, num_procs: 2, max_traj_len: 10, minibatch_size: 8, eval_episodes: 1}}
seeds: {seeds}
runs:
  A: {{name: start}}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sweep = Path(tmp) / "overhead"
        sweep.mkdir()
        (sweep / "sweep.yaml").write_text(SWEEP.format(seeds=list(range(1, args.runs + 1))))
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "ppolab", "sweep", str(sweep), "--yes"],
            check=True,
            stdout=subprocess.DEVNULL,
            env={**os.environ, "PPOLAB_LOCK_DIR": tmp},
        )
        wall = time.perf_counter() - started
        state = json.loads((sweep / "state.json").read_text())["runs"]
        training = sum(r["summary"]["total_time_s"] for r in state.values())
        per_run_wall = []
        for r in state.values():
            a, b = (time.mktime(time.strptime(r[k][:19], "%Y-%m-%dT%H:%M:%S")) for k in ("started", "ended"))
            per_run_wall.append(b - a)
    print(f"{args.runs} runs in {wall:.2f} s (the launch included: imports, plan, lock)")
    print(f"training logged by the runs: {training:.2f} s")
    print(f"overhead per run, whole launch: {(wall - training) / args.runs:.2f} s")
    print(
        f"overhead per run, from state.json start/end (1 s resolution): "
        f"{(sum(per_run_wall) - training) / args.runs:.2f} s"
    )


if __name__ == "__main__":
    main()
