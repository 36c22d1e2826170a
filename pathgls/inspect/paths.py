"""Which files the inspection tools may open for a card: only the run's own, never what a card
merely names.

A ScoreCard is data: a tampered or foreign card can name any path as its item
(``inputs.item = "/etc/passwd"``) or heat map (``evidence.map = "../../secret.npz"``), and the
HTML run report embeds what it opens. So a heat map is opened only when it lies inside the run
directory (links resolved), and an item only when it has a slide or image extension and lies
inside the run's source (as its ``manifest.json`` records it) or inside the run directory.
Anything else is refused with a :class:`~pathgls.errors.PathGLSError` saying why, and the
report shows that sentence instead of a picture.
"""

from __future__ import annotations

import os
from pathlib import Path

from pathgls.errors import PathGLSError
from pathgls.runner.manifest import read_manifest
from pathgls.tiling.readers import IMAGE_EXTENSIONS, WSI_EXTENSIONS


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _normal(path: str | os.PathLike[str]) -> str:
    """Absolute and without ``..`` (links kept: the inputs of a run may be links)."""
    return os.path.normpath(os.path.abspath(os.fspath(path)))


def item_path(item: object, *, run_dir: str | os.PathLike[str]) -> Path:
    """The item file a card names, when the run may open it (see the module docstring).

    A run records the item as it was given (``runs/demo/inputs/ihc.png``, relative to the
    folder the run started in); a notebook opened in ``notebooks/`` or a report written from
    elsewhere does not see it from there. A relative path that does not exist is looked for
    under each folder above ``run_dir`` (the run's starting folder holds the run), and the
    run's source, when relative, is taken from the same folder.

    Raises:
        PathGLSError: no item named, an extension that is not a slide or image, a path
            outside the run's source and run directory, or a file found nowhere (the message
            says where it looked).
    """
    if not isinstance(item, str) or not item:
        raise PathGLSError("the card names no item file (inputs.item)")
    if Path(item).suffix.lower() not in WSI_EXTENSIONS | IMAGE_EXTENSIONS:
        raise PathGLSError(f"the card's item {item!r} is not a slide or image file; not opened")
    recorded = Path(item)
    base = _started_in(recorded, Path(run_dir))
    roots = [_normal(run_dir)]
    manifest = read_manifest(run_dir)
    source = manifest.source if manifest is not None else None
    if isinstance(source, str) and source:
        roots.append(_normal(source if base is None else base / source))
    path = recorded if base is None else base / recorded
    if not any(_inside(_normal(path), root) for root in roots):
        raise PathGLSError(
            f"the card's item {item!r} lies outside the run's source and run directory; not opened"
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
    if os.path.isabs(relative) or not _inside(path, root) or not path.endswith(".npz"):
        raise PathGLSError(f"the heat map {relative!r} is not a .npz inside the run; not opened")
    return Path(path)
