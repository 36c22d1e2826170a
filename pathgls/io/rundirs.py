"""What a folder given as a run directory is: one run, a folder of runs, or neither.

``pathgls gate runs`` once gated the cards of three runs together (and tried every cache file
as a ScoreCard); ``pathgls report runs`` and ``compare`` said only "no ScoreCard". A folder that
holds runs is not a run: :func:`check_run_dir` names the runs inside, so the user picks one.
The same check keeps a new run from being written into a folder of runs (``--out runs``).

A run directory is a folder with ``manifest.json`` or ``scorecards/`` (what ``pathgls
benchmark`` and ``pathgls demo`` write). Nothing here reads a card.

Core floor: imports only :mod:`pathgls.errors`.
"""

from __future__ import annotations

import os
from pathlib import Path

from pathgls.errors import ConfigError, NoScoreCardsError, SeveralRunsError

#: A folder holding one of these is a run directory.
RUN_MARKERS = ("manifest.json", "scorecards")
#: How deep below a folder runs are looked for (``runs/a``, ``runs/group/b``).
SEARCH_DEPTH = 2
#: Runs named in a message; the rest are counted.
SHOWN = 5


def is_run_dir(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a folder with ``manifest.json`` or ``scorecards/``."""
    p = Path(path)
    return p.is_dir() and any((p / m).exists() for m in RUN_MARKERS)


def runs_below(path: str | os.PathLike[str], *, depth: int = SEARCH_DEPTH) -> list[Path]:
    """Run directories strictly inside ``path``, at most ``depth`` levels down, sorted.

    A run's own subfolders are not searched (a run inside a run is not looked for), nor are
    hidden folders or links to folders.
    """
    found: list[Path] = []

    def walk(folder: Path, level: int) -> None:
        try:
            children = sorted(c for c in folder.iterdir() if not c.name.startswith("."))
        except OSError:
            return
        for child in children:
            if child.is_symlink() or not child.is_dir():
                continue
            if is_run_dir(child):
                found.append(child)
            elif level < depth:
                walk(child, level + 1)

    walk(Path(path), 1)
    return found


def _several(path: Path, runs: list[Path], advice: str) -> SeveralRunsError:
    names = ", ".join(str(r) for r in runs[:SHOWN])
    more = f" and {len(runs) - SHOWN} more" if len(runs) > SHOWN else ""
    return SeveralRunsError(
        f"{path} is not a run directory: it holds {len(runs)} run{'' if len(runs) == 1 else 's'} "
        f"({names}{more}); {advice}",
        runs=runs,
    )


def check_run_dir(path: str | os.PathLike[str], *, cards_folder: bool = False) -> Path:
    """``path`` as a run directory, or the error that says what it is instead.

    Args:
        path: The folder a command was given as its run.
        cards_folder: Also accept a folder of ScoreCard files that is not a run (``gate``).

    Raises:
        NoScoreCardsError: ``path`` does not exist, is a file, or (without ``cards_folder``)
            is not a run directory.
        SeveralRunsError: ``path`` holds runs instead of being one (the message names them).
    """
    p = Path(path)
    if not p.exists():
        raise NoScoreCardsError(f"no ScoreCard in {p}: it is not a run directory (no such folder)")
    if not p.is_dir():
        raise NoScoreCardsError(f"no ScoreCard in {p}: it is a file, not a run directory")
    if is_run_dir(p):
        return p
    runs = runs_below(p)
    if runs:
        raise _several(p, runs, "give one of them")
    if not cards_folder:
        raise NoScoreCardsError(
            f"no ScoreCard in {p}: it is not a run directory (no manifest.json or scorecards/); "
            "make one with `pathgls demo` or `pathgls benchmark`"
        )
    return p


def check_new_run_dir(path: str | os.PathLike[str]) -> Path:
    """``path`` as the output folder of a run: new, empty, or a run to resume.

    Raises:
        ConfigError: ``path`` is a file.
        SeveralRunsError: ``path`` holds runs (a new run would be mixed into them).
    """
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise ConfigError(f"--out {p} is a file, not a folder; give a folder for the run")
    if p.is_dir() and not is_run_dir(p):
        runs = runs_below(p)
        if runs:
            raise _several(p, runs, f"give a folder of its own, e.g. {p / 'new-run'}")
    return p
