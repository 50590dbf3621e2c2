#!/usr/bin/env python
"""`python scripts/launch_sweep.py SWEEP_DIR [flags]` is `ppolab sweep SWEEP_DIR [flags]`."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ppolab.cli.main import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["sweep", *sys.argv[1:]]))
