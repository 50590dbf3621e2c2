#!/usr/bin/env python
"""Entry point for users of the older layout: `python run_experiment.py train|eval [flags]`.

Same commands and flags as `ppolab train` / `ppolab eval`.
"""

import sys

from ppolab.cli.main import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
