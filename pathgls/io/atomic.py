"""Atomic file writes: a reader (or a killed run) never sees half a file."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def write_via(path: str | os.PathLike[str], writer: Callable[[Path], None]) -> Path:
    """Let ``writer`` write a temporary file next to ``path``, then rename it over ``path``.

    Raises:
        OSError: the directory cannot be created or written (the temporary file is removed).
    """
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(name)
    try:
        writer(tmp)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; results are meant to be shared
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return out


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes, *, fsync: bool = True) -> Path:
    """Write ``data`` to ``path`` atomically (flushed to disk first when ``fsync``)."""

    def write(tmp: Path) -> None:
        with tmp.open("wb") as fh:
            fh.write(data)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())

    return write_via(path, write)


def write_text_atomic(path: str | os.PathLike[str], text: str, *, fsync: bool = True) -> Path:
    """:func:`write_bytes_atomic` of ``text`` encoded as UTF-8."""
    return write_bytes_atomic(path, text.encode("utf-8"), fsync=fsync)
