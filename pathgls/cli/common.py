"""Helpers shared by the CLI commands: error exit and the per-run log file."""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.console import Console
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
from pathgls.io.sanitize import markup_text as escape
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
    """Log lines with secrets masked (:func:`~pathgls.io.redact.redact`) and control characters
    escaped, continuation lines indented (:func:`~pathgls.io.sanitize.log_text`): a file name
    holding a line feed or an escape sequence cannot forge a record or drive a terminal."""

    def format(self, record: logging.LogRecord) -> str:
        from pathgls.io.sanitize import log_text

        return log_text(redact(super().format(record)))


class _ConsoleWarnings(logging.Handler):
    """pathgls's warnings on the stderr of the moment (a test runner swaps it), sanitised like
    the log (:class:`_RedactingFormatter`), so a warning never goes only to the run log (the
    run log's "stopped" line is not repeated: the command prints its own ``error:`` line)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.setFormatter(_RedactingFormatter("%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno > logging.WARNING and record.name.startswith("pathgls.cli."):
            return  # the run log's closing line: the command prints its own error
        try:
            sys.stderr.write(f"{record.levelname.lower()}: {self.format(record)}\n")
        except Exception:  # a closed stderr: nothing to show the warning on
            self.handleError(record)


def show_warnings() -> None:
    """Show ``pathgls.*`` warnings on stderr (once per process, whatever the command)."""
    root = logging.getLogger("pathgls")
    if not any(isinstance(h, _ConsoleWarnings) for h in root.handlers):
        root.addHandler(_ConsoleWarnings())


class _LogFileHandler(logging.StreamHandler):
    """The run log's handler: a record the disk refuses (full, read-only) is reported once, in
    one line on stderr naming the log and the reason, never as a traceback per record."""

    def __init__(self, stream: Any, path: Path) -> None:
        super().__init__(stream)
        self.path = path
        self.failed = False

    def handleError(self, record: logging.LogRecord) -> None:
        from pathgls.io.atomic import describe_os_error

        error = sys.exc_info()[1]
        if not isinstance(error, OSError):
            super().handleError(record)
            return
        if not self.failed:
            self.failed = True
            sys.stderr.write(
                f"pathgls: cannot write the run log {self.path}: {describe_os_error(error)}\n"
            )


@contextlib.contextmanager
def run_logging(
    out_dir: Path,
    command: str,
    *,
    inputs: Sequence[Path] = (),
    own: Sequence[str] = ("logs",),
) -> Iterator[Path]:
    """Log ``pathgls.*`` records of this run to ``<out_dir>/logs/<command>-<time>.log``.

    The log opens with the command line and the pathgls version and closes with how the
    command ended and how long it took; what the stages log (each item's outcome, warnings,
    errors) comes in between.

    ``out_dir`` is checked first (:func:`~pathgls.io.rundir.check_out_dir` against ``inputs``:
    not a file, not inside an input folder) and created; pathgls's entries in it (``own``) may
    hold no symbolic link, and the log file is opened without following one.

    Raises:
        RunDirError: ``out_dir`` is refused (the message says why).
        PathGLSError: it cannot be created or written (disk full, read-only, ...).
    """
    from pathgls.io.atomic import describe_os_error
    from pathgls.io.rundir import check_out_dir, make_dir, open_nofollow, refuse_links
    from pathgls.version import __version__

    check_out_dir(out_dir, inputs=inputs)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        refuse_links(out_dir, own, what=f"output folder {out_dir}")
        logs = make_dir(out_dir, "logs")
        path = logs / f"{command}-{time.strftime('%Y%m%d-%H%M%S')}.log"
        fd = open_nofollow(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    except OSError as e:
        where = e.filename or out_dir
        raise PathGLSError(f"cannot write the run log under {where}: {describe_os_error(e)}") from e
    stream = os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace")
    handler = _LogFileHandler(stream, path)
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
        with contextlib.suppress(OSError):  # a full disk: the run's own error is what is raised
            stream.close()


def _since(t0: float) -> float:
    return time.perf_counter() - t0


#: How a score computed with random test weights is marked wherever the console shows it.
RANDOM_MARK = "RANDOM WEIGHTS"


def random_weight_modules(card: ScoreCard) -> tuple[str, ...]:
    """Modules of a ScoreCard computed with random-weight models (their ``random_weights``)."""
    return tuple(name for name, m in card.modules.items() if m.random_weights)
