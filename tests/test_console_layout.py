"""Readable at 80 columns and in a pipe: the gate and the summary fall back to one block per
card (or subject) with nothing cut, instead of a table folded into many short cells."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console
from typer.testing import CliRunner

from pathgls.cli import app
from pathgls.cli.layout import LAYOUT_ENV, is_compact
from pathgls.runner.summary import COLUMNS, print_summary

V1 = Path(__file__).parent / "data" / "scorecards_v1"
ITEMS = ("tcga-cr-7395-01a-01-ts1", "cmu-1-small-region", "tissue-level0-7352-11762-7864-12274")


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "run" / "scorecards" / "replay"
    folder.mkdir(parents=True)
    for name in ("failed", "ok_grounded", "partial"):
        shutil.copy(V1 / f"{name}.json", folder / f"{name}.json")
    return tmp_path / "run"


def test_the_layout_is_compact_when_narrow_or_not_a_terminal(monkeypatch) -> None:
    monkeypatch.delenv(LAYOUT_ENV, raising=False)
    assert is_compact(Console(width=200, force_terminal=False))
    assert is_compact(Console(width=80, force_terminal=True))
    assert not is_compact(Console(width=160, force_terminal=True))
    monkeypatch.setenv(LAYOUT_ENV, "table")
    assert not is_compact(Console(width=80, force_terminal=False))


def test_the_gate_at_80_columns_cuts_no_cell(run_dir: Path, monkeypatch) -> None:
    monkeypatch.delenv(LAYOUT_ENV, raising=False)
    res = CliRunner().invoke(app, ["gate", str(run_dir)], env={"COLUMNS": "80"})
    assert res.exit_code == 1, res.output  # a reject and a failed card
    lines = res.output.splitlines()
    # the cards wrap at 80 columns (the closing line names the CSV's path in full)
    assert all(len(line) <= 80 for line in lines if "→" not in line), res.output
    assert "…" not in res.output and "┃" not in res.output
    text = " ".join(res.output.split())
    for item in ITEMS:  # every id whole, on its card's head line
        assert any(line.split(" · ")[1:2] == [item] for line in lines if " · " in line), item
    for route in ("failed trust", "review trust 0.511", "reject trust 0.299"):
        assert route in text
    # three cards, a few lines each: not a table folded over dozens of lines
    assert len(lines) <= 25
    # forced back to the table, the same command cuts its cells at this width
    res = CliRunner().invoke(
        app, ["gate", str(run_dir)], env={"COLUMNS": "80", LAYOUT_ENV: "table"}
    )
    assert "…" in res.output


def _summary_row(subject: str, rank: float, tier: float, matched: float) -> dict:
    row = {c: math.nan for c in COLUMNS}
    row |= {"subject": subject, "n_items": 7, "rank": rank, "tier": tier, "matched_on": "logic"}
    row |= {f"n_{s}": 0 for s in ("ok", "partial", "failed")} | {"n_ok": 7}
    row |= {"deploy": 0, "review": 7, "reject": 0}
    for m in ("grounding", "logic", "stability", "hare", "report", "trust"):
        row[f"{m}_n"] = 0
    row |= {"matched_trust_n": 7, "matched_trust_mean": matched}
    row |= {"trust_n": 7, "trust_mean": matched, "coverage_mean": 0.5}
    return row


def test_the_summary_in_compact_form_shows_the_rank_and_its_tier() -> None:
    table = pd.DataFrame(
        [_summary_row("captioner", 2.0, 2.0, 1.0), _summary_row("example reports", 1.0, 1.0, 0.866)]
    )
    console = Console(width=80, record=True, force_terminal=False)
    print_summary(table, console=console, compact=True)
    out = console.export_text()
    assert all(len(line) <= 80 for line in out.splitlines())
    first, second = out.index("#1 example reports"), out.index("#2 captioner")
    assert first < second
    assert "ranked on tier 1 · 0.866" in out and "ranked on tier 2 · 1.000" in out
