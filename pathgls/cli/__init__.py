"""The ``pathgls`` command line (typer). One module per command group.

Each command parses its options into the typed config and calls a library function; no
scoring happens here.

May import: everything but :mod:`pathgls.testing`.
"""

from __future__ import annotations

import typer

from pathgls.cli import attack as _attack
from pathgls.cli import benchmark as _benchmark
from pathgls.cli import calibrate as _calibrate
from pathgls.cli import case as _case
from pathgls.cli import compare as _compare
from pathgls.cli import data as _data
from pathgls.cli import demo as _demo
from pathgls.cli import extract as _extract
from pathgls.cli import gate as _gate
from pathgls.cli import ground as _ground
from pathgls.cli import listing as _listing
from pathgls.cli import logic as _logic
from pathgls.cli import meta as _meta
from pathgls.cli import models as _models
from pathgls.cli import report as _report

app = typer.Typer(
    name="pathgls",
    help="Trust scores for pathology VLM reports: Grounding, Logic, Stability, HARE.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
_extract.register(app)
_logic.register(app)
_case.register(app)
_ground.register(app)
_attack.register(app)
_meta.register(app)
_gate.register(app)
_calibrate.register(app)
_benchmark.register(app)
_compare.register(app)
_demo.register(app)
_listing.register(app)
_report.register(app)
app.add_typer(_models.app, name="models", help="List and pull model weights.")
app.add_typer(_data.app, name="data", help="Sample data for trying pathgls out.")


@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    version: bool = typer.Option(
        False, "--version", help="Print the version and exit.", is_eager=True
    ),
) -> None:
    if version:
        from pathgls import __version__

        typer.echo(__version__)
        raise typer.Exit()
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())
        raise typer.Exit()


def main() -> None:
    """Console-script entry point."""
    from pathgls.io.memory import limit_heap_fragmentation

    limit_heap_fragmentation()
    app()
