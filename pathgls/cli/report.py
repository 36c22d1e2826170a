"""``pathgls report RUN [--out FILE]``: the run as one self-contained HTML page.

The page is :func:`pathgls.inspect.run_report.write_run_report`; this module parses the options
and prints where it was written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from pathgls.cli.common import fail
from pathgls.errors import PathGLSError
from pathgls.io.rundirs import check_run_dir
from pathgls.io.sanitize import markup_text as escape

Arg = typer.Argument
Opt = typer.Option


def register(app: typer.Typer) -> None:
    """Add ``report`` to ``app``."""
    app.command("report")(report)


def report(
    run: Annotated[Path, Arg(help="Run directory (of `pathgls benchmark` or `pathgls demo`).")],
    out: Annotated[Path | None, Opt(help="HTML file to write (default: RUN/report.html).")] = None,
    failures: Annotated[int, Opt(help="Lowest-trust items in the failure gallery.")] = 6,
    source: Annotated[
        list[Path] | None,
        Opt(
            "--source",
            help="Folder (or file) of the run's inputs whose pictures the report may show; "
            "repeatable. Without it, only files inside RUN are opened.",
        ),
    ] = None,
    config: Annotated[
        Path | None,
        Opt(
            help="Gate config of `pathgls calibrate --risk`: its certificate is shown by the gate."
        ),
    ] = None,
) -> None:
    """Write the run's HTML report: config, subjects, comparison, gate, failure gallery."""
    console = Console(stderr=True)
    try:
        check_run_dir(run)
    except PathGLSError as e:
        fail(console, e)
    from pathgls.inspect.run_report import RunReportConfig, write_run_report

    try:
        target = out if out is not None else run / "report.html"
        report_config = RunReportConfig(
            failures=failures, sources=tuple(source or ()), certificate=config
        )
        path = write_run_report(run_dir=run, out=target, config=report_config)
    except PathGLSError as e:
        fail(console, e)
    Console().print(f"run report: {escape(str(path.resolve()))}", soft_wrap=True)
