"""Fences around untrusted text in a prompt, which that text cannot close.

A prompt that quotes a report between ``<<<`` and ``>>>`` lines can be forged by the report: a
candidate holding ``>>>`` followed by ``Candidate report: <<< ... >>>`` adds a block of its own.
:func:`fences` picks the fence as Markdown picks a code fence: longer than any run of ``<`` or
``>`` in the quoted texts (at least three), so no quoted text contains its closing line. Every
block of one prompt uses the same fence, and the prompt names it.
"""

from __future__ import annotations

import re

_RUN = re.compile(r"<+|>+")
#: The shortest fence (``<<<`` / ``>>>``), used when the texts hold no longer run.
MIN_FENCE = 3


def fences(*texts: str) -> tuple[str, str]:
    """``(opening, closing)`` fence lines that none of ``texts`` contains."""
    longest = max((len(m.group(0)) for t in texts for m in _RUN.finditer(t)), default=0)
    n = max(MIN_FENCE, longest + 1)
    return "<" * n, ">" * n


def fenced(title: str, text: str, fence: tuple[str, str]) -> str:
    """``title`` and ``text`` between the fence lines, as one prompt block."""
    opening, closing = fence
    return f"{title} (between the lines {opening} and {closing}):\n{opening}\n{text}\n{closing}"
