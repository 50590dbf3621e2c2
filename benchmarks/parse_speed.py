"""Log parsing speed: a 20,000-iteration console log (the reference trainer's blocks, renumbered).

Bar: parsing plus the run report (summary and anomaly rules) under 2 seconds.

    python benchmarks/parse_speed.py [--iterations 20000]
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

from ppolab.analysis.parse import parse_log
from ppolab.analysis.summary import summarize

REFERENCE = Path(__file__).resolve().parents[1] / "tests" / "data" / "lhw-cartpole-2workers-seed1.log"


def synthetic_log(iterations: int) -> str:
    text = REFERENCE.read_text()
    first = text.index("********** Iteration 0 ************")
    start = text.index("********** Iteration 1 ************")
    block = text[start : text.index("********** Iteration 2 ************")]
    evaluation = "====EVALUATE EPISODE====\n(Episode length:500.000. Reward:190.619. Time taken:0.72s)\n"
    parts = [text[:first]]  # the header
    for i in range(iterations):
        parts.append(re.sub(r"Iteration 1 ", f"Iteration {i} ", block, count=1))
        if i % 100 == 0:
            parts.append(evaluation)
    return "".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iterations", type=int, default=20000)
    args = ap.parse_args()
    text = synthetic_log(args.iterations)
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        summary = summarize(parse_log(text))
        best = min(best, time.perf_counter() - t)
    assert summary is not None and summary.iterations == args.iterations
    lines = text.count("\n")
    print(
        f"{args.iterations} iterations ({lines:,} lines, {len(text) / 1e6:.1f} MB): "
        f"parse + report in {best:.2f} s (best of 3)"
    )


if __name__ == "__main__":
    main()
