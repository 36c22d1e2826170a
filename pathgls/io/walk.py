"""Every file below a folder, without recursion: a folder nested 2,100 levels deep (which ended
``pathlib.Path.rglob`` in ``RecursionError``) is walked like any other.

Links to folders are not followed (as ``rglob`` did not); links to files are listed. A folder
that cannot be read (permissions, a path longer than the system allows) is named in a warning
and skipped, never a traceback.

Core floor: imports nothing from pathgls.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)


def files_below(root: str | os.PathLike[str]) -> list[Path]:
    """The files (and links to files) anywhere below ``root``, sorted by path."""
    found: list[Path] = []
    skipped: list[str] = []
    stack = [os.fspath(root)]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                        elif entry.is_file():
                            found.append(Path(entry.path))
                    except OSError:
                        skipped.append(entry.path)
        except OSError as e:
            skipped.append(f"{folder} ({e.strerror or e})")
    if skipped:
        log.warning(
            "%s: %d folder(s) or file(s) could not be read and were skipped: %s%s",
            root,
            len(skipped),
            "; ".join(s[-200:] for s in skipped[:3]),
            " ..." if len(skipped) > 3 else "",
        )
    return sorted(found)
