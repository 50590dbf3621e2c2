"""JSON that strict parsers accept: NaN and infinities (a metric never measured, one seed's spread) are null."""

from __future__ import annotations

import json
import math
from typing import Any


def finite(value: Any) -> Any:
    """`value` with every non-finite float, however deeply nested, replaced by None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def dumps(value: Any, **kwargs: Any) -> str:
    """json.dumps of `finite(value)`; a NaN that slipped through would raise rather than be written."""
    return json.dumps(finite(value), allow_nan=False, **kwargs)
