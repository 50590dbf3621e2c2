"""The live view of a sweep, saved as an SVG picture (the README's): ppolab's own rendering, recorded.

python scripts/sweep_view_svg.py experiments/sweeps/example docs/sweep_live.svg
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

from rich.console import Console

from ppolab.experiments.live import render, snapshot
from ppolab.experiments.plan import load_plan


def main() -> None:
    sweep_dir, out = Path(sys.argv[1]), Path(sys.argv[2])
    console = Console(record=True, width=110, file=io.StringIO())
    console.print(f"$ ppolab sweep {sweep_dir.name} --watch")
    console.print(render(snapshot(sweep_dir, load_plan(sweep_dir)[1])))
    console.save_svg(str(out), title=f"ppolab sweep {sweep_dir.name} --watch")
    print(out)


if __name__ == "__main__":
    main()
