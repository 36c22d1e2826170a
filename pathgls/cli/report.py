"""``pathgls report RUN --out report.html``: the run as one self-contained HTML page.

The page is :func:`pathgls.inspect.run_report.write_run_report`; this module parses the options
and prints where it was written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from pathgls.cli.common import fail
from pathgls.errors import PathGLSError

Arg = typer.Argument
Opt = typer.Option


def register(app: typer.Typer) -> None:
    """Add ``report`` to ``app``."""
    app.command("report")(report)


def report(
    run: Annotated[Path, Arg(help="Run directory (of `pathgls benchmark` or `pathgls demo`).")],
    out: Annotated[Path, Opt(help="HTML file to write.")] = Path("report.html"),
    failures: Annotated[int, Opt(help="Lowest-trust items in the failure gallery.")] = 6,
) -> None:
    """Write the run's HTML report: config, subjects, comparison, gate, failure gallery."""
    from pathgls.inspect.run_report import RunReportConfig, write_run_report

    console = Console(stderr=True)
    try:
        path = write_run_report(run_dir=run, out=out, config=RunReportConfig(failures=failures))
    except PathGLSError as e:
        fail(console, e)
    Console().print(f"run report: {escape(str(path.resolve()))}", soft_wrap=True)
