"""A run folder received from someone else is untrusted input: what it names stays inside it.

Runs are shared: a received run's ``manifest.json`` may record ``/`` as its source, a card may
name ``/home/me/private.png`` as its item, and a link inside the run may point anywhere. The
inspection tools (``pathgls report``, ``gate``, the notebooks) open only files whose real path
(every link resolved) lies inside the run directory or inside an input the user named on this
command line; anything else is refused with a :class:`~pathgls.errors.RunDirError` saying why.

An input the user named is the user's own: a link inside it (a folder of links to the shared
data) is followed, unless that input lies inside the run itself.

Core floor: imports only :mod:`pathgls.errors`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from pathgls.errors import RunDirError


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _lexical(path: str | os.PathLike[str]) -> str:
    return os.path.normpath(os.path.abspath(os.fspath(path)))


def is_confined(
    path: str | os.PathLike[str],
    *,
    run_dir: str | os.PathLike[str],
    inputs: Iterable[str | os.PathLike[str]] = (),
) -> bool:
    """Whether ``path`` may be opened for the run at ``run_dir`` (see the module docstring).

    True when its real path lies inside the real path of ``run_dir`` or of one of ``inputs``,
    or when it lies (as written, ``..`` removed) inside one of ``inputs`` that is not itself
    inside the run.
    """
    real = os.path.realpath(path)
    run_real = os.path.realpath(run_dir)
    if _inside(real, run_real):
        return True
    for given in inputs:
        given_real = os.path.realpath(given)
        if _inside(real, given_real):
            return True
        if not _inside(given_real, run_real) and _inside(_lexical(path), _lexical(given)):
            return True
    return False


def confined(
    path: str | os.PathLike[str],
    *,
    run_dir: str | os.PathLike[str],
    inputs: Iterable[str | os.PathLike[str]] = (),
    what: str = "file",
) -> Path:
    """``path`` when :func:`is_confined`, else a refusal naming it.

    Raises:
        RunDirError: ``path`` (links resolved) lies outside the run and the named inputs.
    """
    inputs = tuple(inputs)
    if is_confined(path, run_dir=run_dir, inputs=inputs):
        return Path(path)
    real = os.path.realpath(path)
    shown = f"{path}" + (f" (a link to {real})" if real != _lexical(path) else "")
    raise RunDirError(
        f"the {what} {shown} lies outside the run {run_dir}"
        + (" and the inputs named" if inputs else "")
        + "; not opened (a run names only its own files: give the folder of its inputs with "
        "--source DIR to show them)"
    )


def refuse_link(path: str | os.PathLike[str]) -> Path:
    """``path``, refused when it is a symbolic link (a file pathgls is about to replace).

    Raises:
        RunDirError: ``path`` is a link (naming its target).
    """
    p = Path(path)
    if p.is_symlink():
        raise RunDirError(
            f"{p} is a symbolic link (to {os.readlink(p)}); pathgls never writes through a "
            "link: remove it"
        )
    return p
