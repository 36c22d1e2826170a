"""File checksums (slides in bags, sample data)."""

from __future__ import annotations

import hashlib
import os


def file_sha256(path: str | os.PathLike[str], *, chunk: int = 1 << 22) -> str:
    """Lower-case hex SHA-256 of a file, streamed in ``chunk``-byte reads.

    Raises:
        OSError: the file cannot be read.
    """
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()
