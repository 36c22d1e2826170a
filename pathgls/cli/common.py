"""Helpers shared by the CLI commands: error exit and the per-run log file."""

from __future__ import annotations

import contextlib
import logging
import shlex
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from pathgls.errors import PathGLSError
from pathgls.io.redact import redact
from pathgls.types import ScoreCard


def fail(console: Console, error: PathGLSError | str, *, code: int = 2) -> NoReturn:
    """Print an error (no traceback: these are the user's input problems) and exit."""
    console.print(f"[red]error:[/] {escape(redact(str(error)))}", soft_wrap=True)
    raise typer.Exit(code)


def progress_bar(console: Console, *, quiet: bool = False) -> Progress:
    """The progress bar of long commands: description, bar, done/total, elapsed, remaining.

    ``quiet`` (``--json``): nothing is drawn, so machine-read output stays clean.
    """
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=quiet,
    )


class _RedactingFormatter(logging.Formatter):
    """Log lines with secrets masked (:func:`~pathgls.io.redact.redact`)."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


@contextlib.contextmanager
def run_logging(out_dir: Path, command: str) -> Iterator[Path]:
    """Log ``pathgls.*`` records of this run to ``<out_dir>/logs/<command>-<time>.log``.

    The log opens with the command line and the pathgls version and closes with how the
    command ended and how long it took; what the stages log (each item's outcome, warnings,
    errors) comes in between.
    """
    from pathgls import __version__

    logs = out_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    path = logs / f"{command}-{time.strftime('%Y%m%d-%H%M%S')}.log"
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(_RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("pathgls")
    old_level = root.level
    root.setLevel(logging.INFO)
    root.addHandler(handler)
    log = logging.getLogger(f"pathgls.cli.{command}")
    log.info("pathgls %s %s in %s: %s", __version__, command, out_dir, shlex.join(sys.argv))
    t0 = time.perf_counter()
    try:
        yield path
    except (Exception, KeyboardInterrupt) as e:
        log.error("%s stopped after %.1f s: %s: %s", command, _since(t0), type(e).__name__, e)
        raise
    else:
        log.info("%s finished in %.1f s", command, _since(t0))
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
        handler.close()


def _since(t0: float) -> float:
    return time.perf_counter() - t0


#: How a score computed with random test weights is marked wherever the console shows it.
RANDOM_MARK = "RANDOM WEIGHTS"


def random_weight_modules(card: ScoreCard) -> tuple[str, ...]:
    """Modules of a ScoreCard computed with random-weight models (their ``random_weights``)."""
    return tuple(name for name, m in card.modules.items() if m.random_weights)
