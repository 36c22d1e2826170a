"""Hostile text for terminals, logs and spreadsheets (issue 36).

An escape sequence in a file name retitled or cleared the terminal and reached the run log raw;
a line feed in a name forged a "finished" line in the log; names such as ``=HYPERLINK(...).png``
were written as-is into ``gate.csv``, where a spreadsheet runs them; a name that is Rich markup
was interpreted by the console; ``PYTHONIOENCODING=ascii`` with a non-ASCII name crashed.
"""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pathgls.cli import app
from pathgls.config import load_config
from pathgls.io.sanitize import csv_cell, log_text, markup_text, terminal_text
from pathgls.runner.run import run_benchmark

CAPTIONER = load_config(run={"subjects": ("captioner",)})
ROOT = Path(__file__).resolve().parents[2]
ESC_NAME = "a\x1b]0;PWNED\x07\x1b[2J\x1b[31mred.png"
FORGED_NAME = "b\n2026-01-01 00:00:00,000 INFO pathgls.cli.benchmark: benchmark finished.png"
FORMULA_NAMES = ("=HYPERLINK(1)", "+cmd|calc!A0", "@SUM(1+1)", "-2+3+cmd")
MARKUP_NAME = "[bold red]markup[reverse]"


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("a\x1b[2Jb", "a\\x1b[2Jb"),
        ("title\x1b]0;x\x07", "title\\x1b]0;x\\x07"),
        ("a\nb\rc\td", "a\\nb\\rc\\td"),
        ("\x9b31m", "\\x9b31m"),  # the one-byte CSI
        ("abc\u202egnp.exe", "abc\\u202egnp.exe"),  # right-to-left override
        ("naïve café", "naïve café"),  # ordinary text is kept
    ],
)
def test_terminal_text_shows_every_control_character_escaped(raw: str, shown: str) -> None:
    assert terminal_text(raw) == shown


def test_markup_and_log_text() -> None:
    assert markup_text("[red]x[/red]\x1b") == "\\[red]x\\[/red]\\x1b"
    assert log_text("first\nsecond\rthird\x1b") == "first\n    | second\\rthird\\x1b"
    for line in log_text(FORGED_NAME).splitlines()[1:]:
        assert line.startswith("    | ")


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ("=HYPERLINK(1)", "'=HYPERLINK(1)"),
        ("+cmd|calc!A0", "'+cmd|calc!A0"),
        ("-2+3+cmd", "'-2+3+cmd"),
        ("@SUM(1+1)", "'@SUM(1+1)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("-0.25", "-0.25"),  # a number stays a number
        ("1e-3", "1e-3"),
        ("plain", "plain"),
        (-0.5, -0.5),
        (None, None),
    ],
)
def test_csv_cell_neutralises_formula_leads_the_owasp_way(value: object, cell: object) -> None:
    assert csv_cell(value) == cell


@pytest.fixture
def hostile_run(tmp_path: Path, sample_rois: tuple[Path, ...]) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    names = [ESC_NAME, FORGED_NAME, MARKUP_NAME + ".png", "é-ünïcode.png"]
    names += [n + ".png" for n in FORMULA_NAMES]
    for name in names:
        (src / name).symlink_to(sample_rois[0].resolve())
    return src


def test_names_reach_console_log_and_gate_csv_neutralised(
    tmp_path: Path, hostile_run: Path
) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app, ["benchmark", str(hostile_run), "--out", str(out), "--subject", "captioner"]
    )
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\x07" not in result.output
    (log,) = (out / "logs").glob("benchmark-*.log")
    text = log.read_text(encoding="utf-8")
    assert "\x1b" not in text and "\x07" not in text
    # every line of the log is a record (timestamp first) or an indented continuation
    stamp = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ [A-Z]+ ")
    finished = [line for line in text.splitlines() if line.endswith("benchmark finished.png")]
    assert all(not stamp.match(line) for line in finished), finished
    gated = CliRunner().invoke(app, ["gate", str(out)], env={"COLUMNS": "300"})
    assert "\x1b" not in gated.output
    assert "[bold red]markup" in gated.output  # shown, not applied
    with (out / "gate.csv").open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    items = {row["item_id"] for row in rows}
    for name in FORMULA_NAMES:
        assert "'" + name in items
    assert not any(cell.startswith(("=", "+", "@")) for row in rows for cell in row.values())


def test_an_ascii_console_never_crashes_on_a_non_ascii_name(
    tmp_path: Path, sample_rois: tuple[Path, ...]
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "é-ünïcode.png").symlink_to(sample_rois[0].resolve())
    out = tmp_path / "run"
    run_benchmark(source=src, config=CAPTIONER, out=out, plots=False)
    env = dict(os.environ, PYTHONIOENCODING="ascii", PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-m", "pathgls", "gate", str(out)],
        env=env,
        capture_output=True,
        cwd=tmp_path,
        timeout=300,
    )
    shown = (done.stdout + done.stderr).decode("ascii")  # ASCII only, no crash
    assert done.returncode in (0, 1), shown
    assert "Traceback" not in shown and "UnicodeEncodeError" not in shown


def _console_of(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``pathgls ARGS`` in a process of its own: its real stderr, as a terminal would get it."""
    return subprocess.run(
        [sys.executable, "-m", "pathgls", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
        env=dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="400"),
    )


def test_skipped_hidden_files_are_named_on_the_console_sanitised(
    tmp_path: Path, sample_rois: tuple[Path, ...]
) -> None:
    # before: ``..png`` and ``...png`` were skipped with the warning in the run log only
    src = tmp_path / "src"
    src.mkdir()
    hidden = ["..png", "...png", ".\x1b]0;PWNED\x07.png", "._\nforged.svs"]
    for name in ["a.png", *hidden]:
        (src / name).symlink_to(sample_rois[0].resolve())
    out = tmp_path / "run"
    done = _console_of(
        ["benchmark", str(src), "--out", str(out), "--subject", "captioner"], tmp_path
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (warning,) = [line for line in done.stderr.splitlines() if "hidden file" in line]
    assert warning.startswith("warning: ") and "skipped 4 hidden file(s)" in warning
    for shown in ("..png", "...png", ".\\x1b]0;PWNED\\x07.png", "._"):
        assert shown in warning, warning
    # the line feed of a name goes on as an indented continuation, as in the log: no new record
    assert "._\n    | forged.svs" in done.stderr, done.stderr[-1000:]
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr
    (log,) = (out / "logs").glob("benchmark-*.log")
    assert warning.removeprefix("warning: ") in log.read_text(encoding="utf-8")


def test_no_line_break_in_a_name_forges_a_log_record(
    tmp_path: Path, sample_rois: tuple[Path, ...]
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    forged = "2026-01-01 00:00:00,000 INFO p: FORGED"  # six fit in a name (255 bytes)
    breakers = ("\n", "\r", "\r\n", "\u2028", "\x85", "\x0b")
    name = "x" + "".join(b + forged for b in breakers) + ".png"
    (src / name).symlink_to(sample_rois[0].resolve())
    out = tmp_path / "run"
    done = _console_of(
        ["benchmark", str(src), "--out", str(out), "--subject", "captioner"], tmp_path
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (log,) = (out / "logs").glob("benchmark-*.log")
    raw = log.read_bytes().decode("utf-8")
    for breaker in ("\r", "\u2028", "\u2029", "\x85", "\x0b", "\x0c"):
        assert breaker not in raw, repr(breaker)  # only line feeds break its lines
    lines = [line for line in raw.split("\n") if line]
    stamp = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ [A-Z]+ ")
    for line in lines:  # a record, or a continuation indented under one
        assert stamp.match(line) or line.startswith("    | "), repr(line)
        assert not line.startswith("2026-01-01 00:00:00"), repr(line)  # no forged record
    assert any("FORGED" in line for line in lines)  # the name is in the log, shown
