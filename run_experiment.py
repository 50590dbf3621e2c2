#!/usr/bin/env python
"""Entry point for users of the older layout: `python run_experiment.py train|eval [flags]`.

Same commands and flags as `ppolab train` / `ppolab eval`; as in LearningHumanoidWalking, `eval` without
`--out-dir` (or ppolab's --video, --filmstrip, --episodes) opens the interactive viewer (`ppolab play`).
"""

import sys

SET_UP = ("set up first: `bash scripts/setup.sh` then `.venv/bin/python run_experiment.py ...` (or `source "
          ".venv/bin/activate`), or `uv run python run_experiment.py ...`")


def _missing() -> str | None:
    """What this interpreter lacks of ppolab (installed, not only importable from this folder) and of the
    packages it requires, or None: ppolab imports most of them only when a command needs them."""
    import re
    from importlib.metadata import PackageNotFoundError, requires, version

    try:
        version("ppolab")
        needed = [r for r in requires("ppolab") or [] if "extra ==" not in r]
    except PackageNotFoundError:
        return "ppolab"
    for requirement in needed:
        name = re.split(r"[\s;<>=!~\[(]", requirement, maxsplit=1)[0]
        try:
            version(name)
        except PackageNotFoundError:
            return name
    return None


if __name__ == "__main__":
    if (lacking := _missing()) is not None:
        sys.stderr.write(f"run_experiment.py: {lacking} is not installed for {sys.executable}; {SET_UP}\n")
        sys.exit(2)
    try:
        from ppolab.cli.main import lhw_argv, main
    except ImportError as exc:  # installed, but a dependency is missing or broken
        sys.stderr.write(f"run_experiment.py: {sys.executable} cannot import {exc.name or 'ppolab'}; {SET_UP}\n")
        sys.exit(2)
    sys.exit(main(lhw_argv(sys.argv[1:])))
