"""Console layout: wide tables on a wide terminal, compact per-card blocks everywhere else.

A rich table squeezed into 80 columns cuts its cells ("cmu…", "reje…") and folds each row over
many lines; in a pipe or a CI log it is laid out for a width nobody sees. So a command prints its
table only on a terminal at least :data:`WIDE_COLUMNS` wide, and otherwise one block per row:
a head line and its fields as ``name value`` pairs, wrapped at word boundaries, nothing cut.
``PATHGLS_LAYOUT=table`` or ``compact`` forces either.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.console import Console
from rich.markup import escape

#: Narrowest terminal that gets the wide tables.
WIDE_COLUMNS = 100
#: Environment variable forcing a layout: ``table``, ``compact`` (anything else: automatic).
LAYOUT_ENV = "PATHGLS_LAYOUT"


def is_compact(console: Console) -> bool:
    """Whether ``console`` gets the compact layout: not a terminal, or narrower than
    :data:`WIDE_COLUMNS` (``$PATHGLS_LAYOUT`` overrides)."""
    forced = os.environ.get(LAYOUT_ENV, "").strip().lower()
    if forced in ("table", "compact"):
        return forced == "compact"
    return not console.is_terminal or console.width < WIDE_COLUMNS


@dataclass
class Block:
    """One row of a table in the compact layout."""

    head: str  # rich markup allowed; the caller escapes user text
    fields: Sequence[tuple[str, str]] = ()  # (name, value); the value is markup (escape text)
    notes: Sequence[str] = field(default_factory=tuple)  # plain-text lines under the fields


def print_blocks(console: Console, blocks: Sequence[Block], *, title: str | None = None) -> None:
    """Print ``blocks``: the head, then its fields on one wrapped line, then each note."""
    if title:
        console.print(f"[bold]{escape(title)}[/]", soft_wrap=True)
    for b in blocks:
        console.print(b.head, soft_wrap=False, overflow="fold")
        if b.fields:
            line = " · ".join(f"{escape(k)} {v}" for k, v in b.fields if v != "")
            console.print("  " + line, overflow="fold")
        for note in b.notes:
            console.print("  " + escape(note), overflow="fold")


__all__ = ["LAYOUT_ENV", "WIDE_COLUMNS", "Block", "is_compact", "print_blocks"]
