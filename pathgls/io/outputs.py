"""Files pathgls writes into a run (``gate.csv``, exports, pages): never through a link, always
whole.

A received run may hold a link named ``gate.csv`` pointing at a file outside it; ``open('w')``
once truncated and rewrote the target. :func:`write_run_text` and :func:`write_run_csv` refuse a
link at the name, then write atomically (:mod:`pathgls.io.atomic`: a full disk or a kill keeps
the previous complete file), and table cells are neutralised for spreadsheets
(:func:`pathgls.io.sanitize.csv_cell`). A failure is a :class:`~pathgls.errors.PathGLSError`
naming the file and the reason.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from pathgls.errors import PathGLSError
from pathgls.io.atomic import describe_os_error, write_csv_atomic, write_text_atomic
from pathgls.io.confine import refuse_link


def write_run_csv(
    path: str | os.PathLike[str],
    *,
    columns: Sequence[str],
    rows: Iterable[Mapping[str, object]],
    delimiter: str = ",",
) -> Path:
    """Write a table (never through a link, atomically, formula cells neutralised).

    Raises:
        RunDirError: ``path`` is a symbolic link.
        PathGLSError: it cannot be written (the previous file is kept; the message says why).
    """
    refuse_link(path)
    try:
        return write_csv_atomic(path, columns=columns, rows=rows, delimiter=delimiter)
    except OSError as e:
        raise PathGLSError(f"cannot write {path}: {describe_os_error(e)}") from e


def write_run_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write a text file (never through a link, atomically).

    Raises:
        RunDirError: ``path`` is a symbolic link.
        PathGLSError: it cannot be written (the previous file is kept; the message says why).
    """
    refuse_link(path)
    try:
        return write_text_atomic(path, text)
    except OSError as e:
        raise PathGLSError(f"cannot write {path}: {describe_os_error(e)}") from e
