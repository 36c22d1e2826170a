"""How much of an input pathgls reads before it refuses: every reader is bounded before it reads.

``pathgls logic /dev/zero`` once read the whole stream before any check; a 60 GB sparse report
ended in ``MemoryError``; a report nested 200,000 brackets deep ran for minutes; a 100,000-row
table was read and scored without end in sight. The caps here are checked by size on disk
(``stat``) before reading, by streaming for pipes and devices (which have no size), by
nesting depth and by row count; each refusal is an :class:`InputTooLargeError` naming the cap
and the environment variable that raises it.

=========================  ==========================  ===========
cap                        environment variable        default
=========================  ==========================  ===========
text file (a report)       ``PATHGLS_MAX_TEXT_BYTES``  64 MiB
table file (TSV/CSV)       ``PATHGLS_MAX_TABLE_BYTES`` 1 GiB
rows of a table            ``PATHGLS_MAX_ROWS``        50,000
bracket nesting of a text  ``PATHGLS_MAX_NESTING``     100
=========================  ==========================  ===========

Core floor: imports only :mod:`pathgls.errors` (numpy lazily).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from pathgls.errors import InputTooLargeError

#: Bytes read at a time from a stream.
CHUNK = 1 << 20


@dataclass(frozen=True)
class Limits:
    """The caps of the readers (see the module docstring)."""

    text_bytes: int = 64 << 20
    table_bytes: int = 1 << 30
    rows: int = 50_000
    nesting: int = 100


#: Environment variables that set each cap.
ENV = {
    "text_bytes": "PATHGLS_MAX_TEXT_BYTES",
    "table_bytes": "PATHGLS_MAX_TABLE_BYTES",
    "rows": "PATHGLS_MAX_ROWS",
    "nesting": "PATHGLS_MAX_NESTING",
}


def limits(environ: dict[str, str] | None = None) -> Limits:
    """The caps: the defaults, each replaced by its environment variable where set.

    Raises:
        InputTooLargeError: a variable is not a positive whole number (naming it).
    """
    env = os.environ if environ is None else environ
    values: dict[str, int] = {}
    for field, var in ENV.items():
        raw = env.get(var, "").strip()
        if not raw:
            continue
        try:
            value = int(raw.replace("_", ""))
        except ValueError:
            value = 0
        if value <= 0:
            raise InputTooLargeError(f"{var} must be a positive whole number, got {raw[:40]!r}")
        values[field] = value
    return Limits(**values)


def _too_large(what: str, where: object, found: str, field: str, cap: int) -> InputTooLargeError:
    return InputTooLargeError(
        f"{what} {where} {found}, more than the cap of {cap:,}"
        f"{' bytes' if field.endswith('bytes') else ''}; not read (raise it with "
        f"{ENV[field]}=N if this input is meant to be that large)"
    )


def check_size(path: str | os.PathLike[str], *, what: str, table: bool = False) -> int | None:
    """The size of a regular file, refused above the cap before anything is read; None for a
    pipe or device (no size: :func:`read_capped` bounds the stream instead).

    Raises:
        InputTooLargeError: the file is larger than the cap.
        OSError: it cannot be examined.
    """
    field = "table_bytes" if table else "text_bytes"
    cap = getattr(limits(), field)
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        return None
    if info.st_size > cap:
        raise _too_large(what, path, f"is {info.st_size:,} bytes", field, cap)
    return info.st_size


def read_capped(
    fh: BinaryIO, *, what: str, where: object, cap: int | None = None, already: int = 0
) -> bytes:
    """Everything ``fh`` still holds, refused as soon as the whole (``already`` bytes read
    before, plus these) passes the text cap: an endless stream such as ``/dev/zero`` is stopped
    at the cap, never read to its end.

    Raises:
        InputTooLargeError: more than the cap.
    """
    limit = limits().text_bytes if cap is None else cap
    parts: list[bytes] = []
    total = already
    while True:
        chunk = fh.read(max(min(CHUNK, limit + 1 - total), 1))
        if not chunk:
            return b"".join(parts)
        parts.append(chunk)
        total += len(chunk)
        if total > limit:
            raise InputTooLargeError(
                f"{what} {where} goes on past the cap of {limit:,} bytes; not read (raise it "
                f"with {ENV['text_bytes']}=N if this input is meant to be that large)"
            )


def read_bounded(path: str | os.PathLike[str], *, what: str) -> bytes:
    """A text file's bytes, size-checked before reading and stream-capped while reading.

    Raises:
        InputTooLargeError: larger than the text cap.
        OSError: it cannot be read.
    """
    check_size(path, what=what)
    with open(path, "rb") as fh:
        return read_capped(fh, what=what, where=Path(path))


_OPEN = {ord("("): 1, ord("["): 1, ord("{"): 1, ord(")"): -1, ord("]"): -1, ord("}"): -1}


def nesting_depth(text: str | bytes) -> int:
    """The deepest bracket nesting of ``text`` (``()``, ``[]``, ``{}`` together; a stray closer
    counts as nothing), in linear time."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    opens = data.count(b"(") + data.count(b"[") + data.count(b"{")
    if opens < 2:
        return opens
    import numpy as np

    table = np.zeros(256, np.int8)
    for code, step in _OPEN.items():
        table[code] = step
    steps = table[np.frombuffer(data, np.uint8)].astype(np.int64)
    level = np.cumsum(steps)
    # a stray closer does not go below zero: depth_i = level_i - (lowest level so far, if < 0)
    floor = np.minimum.accumulate(np.minimum(level, 0))
    return int((level - floor).max(initial=0))


def check_nesting(text: str | bytes, *, what: str, where: object) -> None:
    """Refuse a text nested deeper than the cap (no real report nests brackets 100 deep).

    Raises:
        InputTooLargeError: naming the depth, the cap and how to raise it.
    """
    cap = limits().nesting
    depth = nesting_depth(text)
    if depth > cap:
        raise _too_large(what, where, f"nests brackets {depth:,} deep", "nesting", cap)
