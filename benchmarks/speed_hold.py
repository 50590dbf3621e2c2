"""Do the shipped walkers hold their speed and heading off the checks' distribution?

For each walker, the policy is told to walk straight at 0.1, 0.2, 0.3 and 0.4 m/s for 60 s (twice the checks'
30 s, at speeds the checks do not use), 8 envs from start states of their own (any heading, noisy legs). It
passes a speed when every env stays up, walks 80-120% of the commanded distance, turns at most 5 deg in any 10 s
and drifts sideways at most 10% of the distance (`ppolab.evaluation.behaviour.speed_hold`).

    python benchmarks/speed_hold.py [--envs jvrc_walk h1_walk ...] [--seconds 60] [--noisy] [--json out.json]

`--noisy` samples the actions as training does (the mean plus the policy's std x a normal draw): whether a
walker's speed error comes from the gap between the noisy gait training scores and the mean gait it runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WALKERS = ("jvrc_walk", "h1_walk", "g1_walk", "t1_walk", "berkeley_walk")


def main() -> int:
    from ppolab.evaluation.behaviour import HOLD_SPEEDS, speed_hold

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--envs", nargs="+", default=list(WALKERS), help="shipped walkers (pretrained/ENV)")
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--noisy", action="store_true", help="with training's action noise, not the mean action")
    p.add_argument("--speeds", type=float, nargs="+", default=list(HOLD_SPEEDS), help="m/s")
    p.add_argument("--json", type=Path, help="write every figure here")
    args = p.parse_args()
    out = {}
    speeds = tuple(args.speeds)
    print("| env | " + " | ".join(f"{v:g} m/s: speed, drift" for v in speeds) + " | passed |")
    print("|---" * (len(speeds) + 2) + "|")
    for env in args.envs:
        result = speed_hold(REPO / "pretrained" / env, speeds, seconds=args.seconds, noisy=args.noisy)
        out[env] = result
        cells = [f"{r['speed_m_s']:.2f} ({'-'.join(f'{x:.0%}' for x in r['speed_share'])}), "
                 f"{r['max_heading_drift_deg_per_10s']:.1f} deg{'' if r['still_up'] == 8 else ', fell'}"
                 for r in result["speeds"]]  # fmt: skip
        print(f"| {env} | " + " | ".join(cells) + f" | {'yes' if result['passed'] else 'no'} |", flush=True)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
