"""Atomic file writes: a reader (or a killed run) never sees half a file.

Every file pathgls rewrites (cards, gate.csv, summaries, report.html, labels, configs) is
written to a temporary file beside it, flushed to disk, and renamed over it; a full disk or a
kill mid-write leaves the previous complete file. The rename replaces a link planted at the
name instead of writing through it.
"""

from __future__ import annotations

import csv
import errno
import io
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path


def write_via(path: str | os.PathLike[str], writer: Callable[[Path], None]) -> Path:
    """Let ``writer`` write a temporary file next to ``path``, then rename it over ``path``.

    Raises:
        OSError: the directory cannot be created or written (the temporary file is removed).
    """
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    # the writer's pid in the name lets a later run remove what a killed writer left
    prefix = f".{out.name}.{os.getpid()}."
    fd, name = tempfile.mkstemp(dir=out.parent, prefix=prefix, suffix=".tmp")
    os.close(fd)
    tmp = Path(name)
    try:
        writer(tmp)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; results are meant to be shared
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _sync_dir(out.parent)
    return out


def _sync_dir(folder: Path) -> None:
    """Flush a folder's entries (the rename) to disk, where the system allows it."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot sync a folder; the rename itself is still atomic
    finally:
        os.close(fd)


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
    """:func:`write_bytes_atomic` of ``text`` encoded as UTF-8.

    A lone surrogate (an undecodable byte of a file name, ``"\\udcff"``) cannot be UTF-8: it is
    written as its backslash escape, which in a JSON string is that very character again.
    """
    return write_bytes_atomic(path, encode_text(text), fsync=fsync)


def write_csv_atomic(
    path: str | os.PathLike[str],
    *,
    columns: Sequence[str],
    rows: Iterable[Mapping[str, object]],
    delimiter: str = ",",
) -> Path:
    """Write a CSV/TSV table atomically, every cell neutralised for spreadsheets
    (:func:`pathgls.io.sanitize.csv_cell`); keys of a row not in ``columns`` are ignored.

    Raises:
        OSError: it cannot be written (the previous file, if any, is kept).
    """
    from pathgls.io.sanitize import csv_cell

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(columns), extrasaction="ignore",
                            delimiter=delimiter, lineterminator="\r\n")  # fmt: skip
    writer.writeheader()
    for row in rows:
        writer.writerow({k: csv_cell(v) for k, v in row.items() if k in columns})
    return write_text_atomic(path, buf.getvalue())


def encode_text(text: str) -> bytes:
    """``text`` as UTF-8, lone surrogates written as backslash escapes (never an error)."""
    return text.encode("utf-8", "backslashreplace")


def remove_stale_temporaries(root: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporary files that writers killed mid-write left under ``root``.

    A temporary file is stale when the process named in it (see :func:`write_via`) no longer
    runs on this machine; files of live writers are left alone.

    Returns:
        The files removed.
    """
    removed = []
    for tmp in Path(root).rglob(".*.tmp"):
        pid = tmp.name[: -len(".tmp")].split(".")[-2]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        tmp.unlink(missing_ok=True)
        removed.append(tmp)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


#: What an OSError of a write means for the user, by errno.
_WRITE_ERRORS = {
    errno.ENOSPC: "no space left on the device (the disk is full): free some, or write elsewhere",
    errno.EDQUOT: "the disk quota is exceeded: free some space, or write elsewhere",
    errno.EROFS: "the file system is read-only: write elsewhere",
    errno.EACCES: "permission denied: write elsewhere, or fix the folder's permissions",
    errno.EPERM: "operation not permitted: write elsewhere, or fix the folder's permissions",
    errno.EFBIG: "the file is too large for this file system",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
    errno.EISDIR: "the path is a folder, not a file",
}


def describe_os_error(error: OSError) -> str:
    """A reason a user can act on for a failed write (disk full, read-only, ...), else the
    system's message."""
    hint = _WRITE_ERRORS.get(error.errno or -1)
    text = error.strerror or str(error)
    return f"{hint} ({text})" if hint else text
