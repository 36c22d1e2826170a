"""File names from ids: safe on every file system, and distinct ids never share a name.

:func:`safe_stem` keeps a name that is already safe as it is; when sanitising had to change
it (``a b`` → ``a-b``), it appends a short hash of the original, so ``a b``, ``a;b`` and
``a-b`` stay three files. :func:`unique_ids` names the inputs of a run: the file stem when no
other input has it, else the path below the root with its extension (``dir1/a.svs``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
#: Longest stem kept before the hash (file systems allow 255 bytes per name).
_MAX = 120


def short_hash(text: str) -> str:
    """Eight hex digits of the SHA-256 of ``text``."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def safe_stem(name: str) -> str:
    """A file-name-safe form of ``name``, unique per distinct ``name``.

    ``name`` itself when it is safe; else its sanitised form plus ``-`` and a short hash.
    """
    cleaned = _UNSAFE.sub("-", name).strip("-.") or "item"
    if cleaned == name and len(name) <= _MAX:
        return name
    return f"{cleaned[:_MAX]}-{short_hash(name)}"


def unique_ids(paths: Sequence[Path], *, root: Path | None = None) -> list[str]:
    """One id per path: its stem, or (stem shared) its path below ``root`` with the extension.

    The same set of paths always gives the same ids, whatever their order.
    """
    counts: dict[str, int] = {}
    for p in paths:
        counts[p.stem.casefold()] = counts.get(p.stem.casefold(), 0) + 1
    out = []
    for p in paths:
        if counts[p.stem.casefold()] == 1:
            out.append(p.stem)
            continue
        rel = p.relative_to(root) if root is not None and p.is_relative_to(root) else p
        out.append(rel.as_posix())
    return out


def name_collisions(ids: Sequence[str]) -> list[tuple[str, str]]:
    """Pairs of distinct ids whose :func:`safe_stem` (case-folded) is the same file name."""
    seen: dict[str, str] = {}
    clashes = []
    for i in ids:
        key = safe_stem(i).casefold()
        other = seen.setdefault(key, i)
        if other != i:
            clashes.append((other, i))
    return clashes
