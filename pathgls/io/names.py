"""File names from ids: safe on every file system, and distinct ids never share a name.

:func:`safe_stem` keeps a name that is already safe as it is; when sanitising had to change
it (``a b`` → ``a-b``), it appends a short hash of the original, so ``a b``, ``a;b`` and
``a-b`` stay three files. :func:`unique_ids` names the inputs of a run: the file stem when no
other input has it, else the path below the root with its extension (``dir1/a.svs``).

A file name is bytes on Linux, and not every name is UTF-8: Python hands an undecodable byte
over as a lone surrogate (``b"a\xff.png"`` → ``"a\udcff.png"``), which no UTF-8 file, JSON
line or HDF5 attribute can hold. :func:`printable` writes such a byte as the four characters
``\xff``: the stable, readable id the run uses for the item (its files, card, seed, log lines),
while the file itself is still opened by its real name.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
#: Longest stem kept before the hash (file systems allow 255 bytes per name).
_MAX = 120


def printable(name: str) -> str:
    """``name`` with undecodable bytes (``\udcff`` → ``\xff``) and other lone surrogates
    (``\ud800`` → ``\ud800``) written as backslash escapes; valid Unicode, stable, and the same
    as ``name`` for every UTF-8 name."""
    try:
        raw = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that is not an escaped byte
        raw = name.encode("utf-8", "backslashreplace")
    return raw.decode("utf-8", "backslashreplace")


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
    Names that are not UTF-8 are written with :func:`printable` escapes.
    """
    counts: dict[str, int] = {}
    stems = [printable(p.stem) for p in paths]
    for stem in stems:
        counts[stem.casefold()] = counts.get(stem.casefold(), 0) + 1
    out = []
    for p, stem in zip(paths, stems, strict=True):
        if counts[stem.casefold()] == 1:
            out.append(stem)
            continue
        rel = p.relative_to(root) if root is not None and p.is_relative_to(root) else p
        out.append(printable(rel.as_posix()))
    return out


def name_collisions(ids: Sequence[str]) -> list[tuple[str, str]]:
    """Pairs of ids (distinct, or one id given twice) whose :func:`safe_stem` (case-folded) is
    the same file name."""
    seen: dict[str, int] = {}
    clashes = []
    for n, i in enumerate(ids):
        key = safe_stem(i).casefold()
        first = seen.setdefault(key, n)
        if first != n:
            clashes.append((ids[first], i))
    return clashes
