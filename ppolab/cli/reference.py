"""The command-line reference page of the docs (docs/cli.md), made from the parsers themselves.

The docs site's reference is each command's own `--help`, so the two cannot disagree: a test renders this page
and compares it with the committed one. Regenerate it after changing a flag or a help text:

    python -m ppolab.cli.reference > docs/cli.md
"""

from __future__ import annotations

import argparse
import os
from contextlib import contextmanager

from ppolab.cli import habits

WIDTH = "100"  # argparse wraps help at the terminal's width: a fixed one gives the same page everywhere


@contextmanager
def _columns():
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old


def render() -> str:
    """docs/cli.md: `ppolab --help`, then every command's `--help`, each under its own heading."""
    from ppolab.cli.main import make_parser

    with _columns():
        parser = make_parser()
        parser.prog = "ppolab"
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parts = ["# Command line\n", "Every command's `--help`, as `ppolab` prints it.\n",
                 "```text\n" + parser.format_help().rstrip() + "\n```\n"]  # fmt: skip
        for name, command in sub.choices.items():
            parts.append(f"## ppolab {name}\n\n```text\n{command.format_help().rstrip()}\n```\n")
    parts.append(
        "## Flags from other tools\n\nWhat ppolab says for the flags of CleanRL, Stable-Baselines3 and "
        "rl-zoo3, LearningHumanoidWalking, MuJoCo Playground and mjlab's rsl_rl; `ppolab train` answers "
        "each one given to it with its row. LearningHumanoidWalking's underscores (`--n_itr`) are read "
        "as ppolab's dashes.\n\n" + habits.table() + "\n"
    )
    return "\n".join(parts)


if __name__ == "__main__":
    print(render(), end="")
