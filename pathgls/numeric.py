"""The one test of a usable number, shared by the cards, the evidence, the config and fusion."""

from __future__ import annotations

import math
from typing import Any


def finite(x: Any) -> float | None:
    """``x`` as a float when it is a finite real number (not a bool), else None."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    return float(x) if math.isfinite(x) else None
