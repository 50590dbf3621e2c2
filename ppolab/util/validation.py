"""Pydantic's validation errors as one line a user can act on."""

from __future__ import annotations

import difflib
from typing import Any

from pydantic import ValidationError


def first_problem(exc: ValidationError) -> dict[str, Any]:
    """The error worth showing: an unknown key first (a typo explains the errors after it), else the first.

    Pydantic's error dict (`loc`, `type`, `input`), its `msg` without the "Value error, " prefix, and
    `where`: the key path joined with dots.
    """
    errors = exc.errors()
    err = dict(next((e for e in errors if e["type"] == "extra_forbidden"), errors[0]))
    err["msg"] = err["msg"].removeprefix("Value error, ")
    err["where"] = ".".join(map(str, err["loc"]))
    return err


def did_you_mean(word: str, options: list[str], cutoff: float = 0.6) -> str:
    """'; did you mean X?' for the closest option, else the list of valid keys."""
    match = difflib.get_close_matches(word, options, n=1, cutoff=cutoff)
    return f"; did you mean '{match[0]}'?" if match else f"; valid keys: {', '.join(sorted(options))}"
