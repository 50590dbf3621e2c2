#!/usr/bin/env python
"""Entry point for users of the older layout: `python run_experiment.py train|eval [flags]`.

Same commands and flags as `ppolab train` / `ppolab eval`.
"""

import sys

try:
    from ppolab.cli.main import main
except ImportError as exc:  # run with an interpreter that lacks ppolab's dependencies
    sys.stderr.write(
        f"run_experiment.py: {sys.executable} cannot import {exc.name or 'ppolab'}; set up first: "
        "`bash scripts/setup.sh` then `.venv/bin/python run_experiment.py ...`, "
        "or `uv run python run_experiment.py ...`\n"
    )
    sys.exit(2)

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
