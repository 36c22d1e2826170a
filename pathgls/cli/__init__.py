"""The ``pathgls`` command line (typer). One module per command group.

Each command parses its options into the typed config and calls a library function; no
scoring happens here.

May import: everything but :mod:`pathgls.testing`.
"""

from __future__ import annotations

from typing import Any

import typer
from rich.markup import escape
from typer.core import TyperArgument, TyperGroup

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
from pathgls.cli import judge as _judge
from pathgls.cli import listing as _listing
from pathgls.cli import logic as _logic
from pathgls.cli import meta as _meta
from pathgls.cli import models as _models
from pathgls.cli import report as _report
from pathgls.cli import review as _review


def _plain(text: str | None) -> str | None:
    """Help text as written: docstring ``code`` as `code`, brackets kept (rich markup off)."""
    return None if text is None else escape(text.replace("``", "`"))


def _tidy_help(command: Any) -> None:
    """Help that reads as written, and option types only where they say something.

    Typer renders help as rich markup, so ``[report]`` vanished and docstrings showed RST
    ````code````; it prints each option's Python type, which is noise after a flag
    (``--json <bool>``) and odd for a repeatable option (``<list[str]>``, now ``<str>``; its
    help says it repeats). Applied to every command of the tree, the help options included.
    """
    from typer import Context

    for sub in getattr(command, "commands", {}).values():
        _tidy_help(sub)
    command.help = _plain(command.help)
    help_option = command.get_help_option(Context(command))
    for param in [*command.params, *([help_option] if help_option is not None else [])]:
        if getattr(param, "help", None):
            param.help = _plain(param.help)
        if isinstance(param, TyperArgument):
            if param.nargs != 1:  # ``names...``: one type, the name column says it repeats
                shown = _element_type(param.display_type(Context(command)))

                def display_type_rich(ctx: Any, shown: str = shown) -> str:
                    return shown

                # one parameter's rendering replaced (an instance attribute over the method)
                param.display_type_rich = display_type_rich  # type: ignore[method-assign]
            continue
        if param.metavar is not None:
            continue
        if getattr(param, "is_flag", False):
            param.metavar = ""  # the flag's name says it all
        elif getattr(param, "multiple", False):
            param.metavar = _element_type(param.display_type(Context(command)))


def _element_type(shown: str) -> str:
    """``<list[str]>`` → ``<str>``."""
    return "<" + shown.removeprefix("<list[").removesuffix("]>").strip("<>") + ">"


class _Group(TyperGroup):
    """The root command group: its whole tree gets :func:`_tidy_help`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _tidy_help(self)


app = typer.Typer(
    cls=_Group,
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
_review.register(app)
app.add_typer(_models.app, name="models", help="List and pull model weights.")
app.add_typer(_data.app, name="data", help="Sample data for trying pathgls out.")
app.add_typer(_judge.app, name="judge", help="The learned contradiction judge: retrain, describe.")


@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    version: bool = typer.Option(
        False, "--version", help="Print the version and exit.", is_eager=True
    ),
) -> None:
    from pathgls.cli.common import show_warnings

    show_warnings()
    if version:
        from pathgls.version import __version__

        typer.echo(__version__)
        raise typer.Exit()
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())
        raise typer.Exit()


def main() -> None:
    """Console-script entry point."""
    from pathgls.io.memory import limit_heap_fragmentation
    from pathgls.io.sanitize import replace_unencodable_output

    limit_heap_fragmentation()
    replace_unencodable_output()
    app()
