"""One way to say which seeds: `--seeds` in every command, `seeds:` in sweep.yaml.

A count N means seeds 1..N; a range `A-B` means A..B; a list `1,5,9` means those seeds.
sweep.yaml also takes a YAML list.
"""

from __future__ import annotations

import argparse

MAX_SEED = 2**32 - 1
MAX_SEEDS = 10_000
SEEDS_HELP = "a count N (seeds 1..N), a range A-B, or a list 1,5,9"


def parse_seeds(spec: str | int) -> list[int]:
    """The seeds of `spec` (see the module); ValueError with the reason if it is not one of the forms."""
    text = str(spec).strip()
    if "," in text:
        seeds = [_seed(part) for part in text.split(",")]
    elif "-" in text.lstrip("-"):
        first, _, last = text.partition("-")
        a, b = _seed(first), _seed(last)
        if b < a:
            raise ValueError(f"range {text!r} ends before it starts")
        if b - a >= MAX_SEEDS:
            raise ValueError(f"range {text!r} has more than {MAX_SEEDS:,} seeds")
        seeds = list(range(a, b + 1))
    else:
        count = _seed(text)
        if not 1 <= count <= MAX_SEEDS:
            raise ValueError(f"a count of seeds must be 1..{MAX_SEEDS:,}, not {count}")
        seeds = list(range(1, count + 1))
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"{text!r} names a seed twice")
    return seeds


def _seed(text: str) -> int:
    text = text.strip()
    if not (text.isascii() and text.isdigit()) or len(text) > 10:
        if text.isascii() and text.isdigit():
            raise ValueError(f"seed {text[:12]}... is over {MAX_SEED}")
        raise ValueError(f"{text!r} is not a whole number >= 0")
    value = int(text)
    if value > MAX_SEED:
        raise ValueError(f"seed {value} is over {MAX_SEED}")
    return value


def seeds_arg(text: str) -> list[int]:
    """The argparse type of `--seeds` in every command."""
    try:
        return parse_seeds(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{exc}; give {SEEDS_HELP}") from None
