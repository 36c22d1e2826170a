"""Every command's ``--help`` shows its text as written, and option types only where useful.

Typer renders help as rich markup (``[report]`` vanished from ``benchmark --help``), copied RST
````code```` out of docstrings and printed ``<bool>`` after every flag; these checks cover every
command of the tree, so a new command or option cannot bring the glitches back.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from pathgls.cli import app


def _commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _commands(sub, (*path, name))


ROOT = typer.main.get_command(app)
COMMANDS = list(_commands(ROOT))


def _flat(text: str) -> str:
    """Help output without its box drawing and line breaks."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


def test_the_tree_is_complete() -> None:
    names = {" ".join(p) for p, _ in COMMANDS}
    for expected in ("benchmark", "gate", "logic", "models pull", "attack stain", "data sample"):
        assert expected in names


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=lambda p: " ".join(p) or "root")
def test_help_shows_the_text_as_written(path: tuple[str, ...]) -> None:
    res = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "400"}, terminal_width=400)
    assert res.exit_code == 0, res.output
    out = res.output
    assert "<bool>" not in out and "<list[" not in out and "``" not in out
    flat = _flat(out)
    command = dict(COMMANDS)[path]
    for param in command.params:
        helptext = getattr(param, "help", None)
        if not helptext:
            continue
        written = " ".join(helptext.replace("\\[", "[").split())
        assert written in flat, f"{' '.join(path)} {param.name}: {written!r} not shown as written"
        if getattr(param, "multiple", False):
            assert "repeatable" in helptext, f"{param.name} repeats: its help must say so"


def test_brackets_in_help_survive() -> None:
    res = CliRunner().invoke(app, ["benchmark", "--help"], terminal_width=400)
    assert "([report] backend" in _flat(res.output)
