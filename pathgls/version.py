"""pathgls's version: one string, on the lowest floor, so any module may record it."""

from __future__ import annotations

__version__ = "0.1.0"
