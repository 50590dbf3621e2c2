"""Markdown tables: readable in a terminal as they are, and rendered wherever the report is opened."""

from __future__ import annotations


def table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table with columns padded to their widest cell."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"

    return "\n".join([line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


def count(n: int, noun: str, plural: str | None = None) -> str:
    """`n` and the noun in the number that goes with it: 1 iteration, 2 iterations, 1 env."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
