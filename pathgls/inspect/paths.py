"""Which files the inspection tools may open for a card: only the run's own, never what a card
merely names.

A ScoreCard is data: a tampered or foreign card can name any path as its item
(``inputs.item = "/etc/passwd"``) or heat map (``evidence.map = "../../secret.npz"``), and the
HTML run report embeds what it opens. So a heat map is opened only when it lies inside the run
directory (links resolved), and an item only when it has a slide or image extension and lies
(links resolved) inside the run directory or inside an input the user named (``pathgls report
--source DIR``); the run's own ``manifest.json`` is not trusted for that (a received run may
record ``/`` as its source; :mod:`pathgls.io.confine`).
Anything else is refused with a :class:`~pathgls.errors.PathGLSError` saying why, and the
report shows that sentence instead of a picture.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from pathgls.errors import PathGLSError
from pathgls.io.confine import is_confined
from pathgls.tiling.readers import IMAGE_EXTENSIONS, WSI_EXTENSIONS


def item_path(
    item: object,
    *,
    run_dir: str | os.PathLike[str],
    sources: Sequence[str | os.PathLike[str]] = (),
) -> Path:
    """The item file a card names, when the run may open it (see the module docstring).

    A run records the item as it was given (``runs/demo/inputs/ihc.png``, relative to the
    folder the run started in); a notebook opened in ``notebooks/`` or a report written from
    elsewhere does not see it from there. A relative path that does not exist is looked for
    under each folder above ``run_dir`` (the run's starting folder holds the run).

    Args:
        item: What the card names (``inputs.item``).
        run_dir: The run.
        sources: Inputs the user named (``pathgls report --source``): items there may be
            opened too. The run's own ``manifest.json`` is not trusted for this (a received
            run may record ``/`` as its source).

    Raises:
        PathGLSError: no item named, an extension that is not a slide or image, a path
            (links resolved) outside the run directory and ``sources``, or a file found
            nowhere (the message says where it looked).
    """
    if not isinstance(item, str) or not item:
        raise PathGLSError("the card names no item file (inputs.item)")
    if Path(item).suffix.lower() not in WSI_EXTENSIONS | IMAGE_EXTENSIONS:
        raise PathGLSError(f"the card's item {item!r} is not a slide or image file; not opened")
    recorded = Path(item)
    base = _started_in(recorded, Path(run_dir))
    path = recorded if base is None else base / recorded
    if not is_confined(path, run_dir=run_dir, inputs=sources):
        raise PathGLSError(
            f"the card's item {item!r} lies outside the run directory"
            + (" and the --source folders" if sources else "")
            + " (links resolved); not opened (name the run's input folder with --source DIR)"
        )
    return path


def _started_in(recorded: Path, run_dir: Path) -> Path | None:
    """The folder above ``run_dir`` a relative ``recorded`` path is found from (None: as given).

    Raises:
        PathGLSError: a relative path found neither here nor under any folder above the run.
    """
    if recorded.exists() or recorded.is_absolute():
        return None
    for base in run_dir.resolve().parents:
        if (base / recorded).exists():
            return base
    raise PathGLSError(
        f"{recorded}: no such file, here or under any folder above {run_dir.resolve()}"
    )


def map_path(relative: str, *, run_dir: str | os.PathLike[str]) -> Path:
    """The heat-map file of an evidence's ``map``, when it lies inside the run directory.

    Raises:
        PathGLSError: an absolute path, or one that leaves the run directory (links resolved).
    """
    root = os.path.realpath(run_dir)
    path = os.path.realpath(os.path.join(root, relative))
    inside = is_confined(path, run_dir=root)
    if os.path.isabs(relative) or not inside or not path.endswith(".npz"):
        raise PathGLSError(f"the heat map {relative!r} is not a .npz inside the run; not opened")
    return Path(path)
