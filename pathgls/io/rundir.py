"""Output folders are pathgls's own: never a file, never inside an input, never a link.

A run directory (or an ``extract`` output folder) holds files pathgls writes again on every
rerun: the lock, the errors log, the run logs, ScoreCards, bags. A symbolic link planted at one
of those names would make pathgls truncate, append to or replace a file outside the folder (a
symlinked ``.pathgls.lock`` truncated its target; a symlinked ``errors.jsonl`` or ``logs/`` took
pathgls's lines elsewhere). So:

* :func:`check_out_dir` refuses an output that is a file, or that lies in an input folder (the
  next run would read its own plots as slides);
* :func:`refuse_links` refuses a folder whose own entries (the names pathgls writes, walked
  without following links) contain a symbolic link, naming each one; the folder itself may be
  a link (a run directory kept on another disk);
* :func:`open_nofollow` opens a file that is appended to or locked in place with
  ``O_NOFOLLOW``, so a link planted after the check is refused too (atomic writes replace a
  link instead of following it).

Every refusal is a :class:`~pathgls.errors.RunDirError` naming the path.
"""

from __future__ import annotations

import errno
import fnmatch
import os
from collections.abc import Iterable
from pathlib import Path

from pathgls.errors import RunDirError


def check_out_dir(
    out: str | os.PathLike[str],
    *,
    inputs: Iterable[str | os.PathLike[str]] = (),
    option: str = "--out",
) -> Path:
    """``out`` as a path, refused when it cannot be pathgls's output folder.

    Args:
        out: The output folder (need not exist).
        inputs: Input files or folders of the command; ``out`` must not be one of the folders
            or lie inside one (files are not searched, so an output beside one is fine).
        option: How the user named ``out``, for messages.

    Raises:
        RunDirError: ``out`` exists and is not a folder, or is (inside) an input folder.
    """
    p = Path(out)
    if p.exists() and not p.is_dir():
        raise RunDirError(f"{option} {p} is a file, not a folder; give a folder for the results")
    if p.is_symlink() and not p.exists():
        raise RunDirError(f"{option} {p} is a symbolic link to nothing ({os.readlink(p)})")
    resolved = p.resolve()
    for source in inputs:
        src = Path(source)
        if not src.is_dir():
            continue
        folder = src.resolve()
        if resolved == folder or resolved.is_relative_to(folder):
            raise RunDirError(
                f"{option} {p} is inside the input folder {src}: the next run would read the "
                "run's own files (plots, thumbnails) as inputs; put the results elsewhere"
            )
    return p


def owned_links(root: str | os.PathLike[str], names: Iterable[str]) -> list[Path]:
    """Symbolic links among ``root``'s entries matching ``names`` (``fnmatch`` patterns) and
    everything below those that are folders, found without following any link."""
    base = Path(root)
    try:
        entries = sorted(os.scandir(base), key=lambda e: e.name)
    except FileNotFoundError:
        return []
    except NotADirectoryError as e:
        raise RunDirError(f"{base} is a file, not a folder") from e
    patterns = list(names)
    found: list[Path] = []
    for entry in entries:
        if not any(fnmatch.fnmatchcase(entry.name, pat) for pat in patterns):
            continue
        if entry.is_symlink():
            found.append(Path(entry.path))
        elif entry.is_dir(follow_symlinks=False):
            for top, dirs, files in os.walk(entry.path, followlinks=False):
                for name in dirs + files:
                    path = os.path.join(top, name)
                    if os.path.islink(path):
                        found.append(Path(path))
    return found


def refuse_links(root: str | os.PathLike[str], names: Iterable[str], *, what: str) -> None:
    """Raise when pathgls's own entries in ``root`` hold a symbolic link (:func:`owned_links`).

    Raises:
        RunDirError: naming the links (at most five) and what to do.
    """
    links = owned_links(root, names)
    if links:
        shown = ", ".join(f"{p} -> {os.readlink(p)}" for p in links[:5])
        more = f" and {len(links) - 5} more" if len(links) > 5 else ""
        raise RunDirError(
            f"{what} holds symbolic links where pathgls writes its own files ({shown}{more}); "
            "pathgls never writes through a link: remove them, or use another folder"
        )


def refuse_files(root: str | os.PathLike[str], folders: Iterable[str], *, what: str) -> None:
    """Raise when one of ``folders`` (names pathgls keeps folders under in ``root``) is a
    file (``RUN/cache`` made a file once failed every item with ``NotADirectoryError``).

    Raises:
        RunDirError: naming the file and what to do.
    """
    for name in folders:
        path = Path(root) / name
        if path.exists() and not path.is_dir():
            raise RunDirError(
                f"{what}: {path} is a file where pathgls keeps a folder; remove or rename it, "
                "or use another folder"
            )


def open_nofollow(path: str | os.PathLike[str], flags: int, mode: int = 0o644) -> int:
    """``os.open(path, flags | O_NOFOLLOW)``; a link at ``path`` is a :class:`RunDirError`.

    Raises:
        RunDirError: ``path`` is a symbolic link.
        OSError: any other failure (the caller names the file and what it was doing).
    """
    try:
        return os.open(path, flags | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), mode)
    except OSError as e:
        if e.errno == errno.ELOOP or (e.errno == errno.EMLINK and os.path.islink(path)):
            raise RunDirError(
                f"{path} is a symbolic link (to {os.readlink(path)}); pathgls never writes "
                "through a link: remove it"
            ) from e
        raise


def make_dir(root: str | os.PathLike[str], *parts: str) -> Path:
    """``root/parts...`` created as needed (``root`` too); no component below ``root`` may be
    a link.

    Raises:
        RunDirError: a component is a symbolic link, or a file.
        OSError: it cannot be created (the caller names it).
    """
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)  # the folder itself may be a link (another disk)
    for part in parts:
        path = path / part
        if path.is_symlink():
            raise RunDirError(
                f"{path} is a symbolic link (to {os.readlink(path)}); pathgls never writes "
                "through a link: remove it"
            )
        try:
            path.mkdir(exist_ok=True)
        except FileExistsError as e:
            raise RunDirError(f"{path} is a file where pathgls keeps a folder") from e
    return path
