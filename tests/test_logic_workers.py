"""`pathgls logic` on a table: a process pool (--workers), results in input order, each worker
building its scorer once through the CLI's own factory, and no entity pass."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pathgls.cli import app
from pathgls.cli import logic as logic_cli
from pathgls.cli.logic_pool import (
    ScorerBuildError,
    default_workers,
    score_in_pool,
    score_serially,
)
from pathgls.errors import PathGLSError
from pathgls.logic import logic_score
from pathgls.nli.rules import RulesNLI
from pathgls.text import analyze_report, build_extractor

ROOT = Path(__file__).resolve().parents[1]
REPORTS = ROOT / "examples" / "reports.tsv"


def _json_lines(output: str) -> list[dict]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


def test_workers_give_the_serial_results_in_input_order() -> None:
    runs = {}
    for n in ("1", "2", "3"):
        res = CliRunner().invoke(app, ["logic", str(REPORTS), "--json", "--workers", n])
        assert res.exit_code == 0, res.output
        runs[n] = _json_lines(res.output)
    ids = [r["id"] for r in runs["1"]]
    assert len(ids) >= 6 and ids == sorted(ids)  # the table's order (case01, case02, ...)
    assert runs["2"] == runs["1"] and runs["3"] == runs["1"]
    assert any(r["logic"] is not None for r in runs["1"])


def test_skipping_the_entity_pass_changes_no_score() -> None:
    # S_l reads the cleaned text and its warnings; the entities `pathgls logic` used to
    # extract (and discard) must not matter
    from pathgls.config import LogicConfig
    from pathgls.io.tables import read_table

    ext = build_extractor("lexicon")
    table = read_table(REPORTS, delimiter="\t")
    texts = [row[c] for row in table.rows for c in ("reference", "candidate")]
    texts += ["<p>Invasive carcinoma.</p><p>No carcinoma is seen.</p>", "", "Benign."]
    for text in texts:
        old = logic_score(report=analyze_report(text, extractor=ext), nli=RulesNLI())
        new = logic_cli.score_report(text, RulesNLI(), config=LogicConfig())
        assert (new.value, new.evidence, new.warnings) == (old.value, old.evidence, old.warnings)


def test_the_entity_extractor_is_never_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from pathgls.text.lexicon_extractor import LexiconExtractor

    def boom(*args, **kwargs):
        raise AssertionError("the entity pass ran")

    monkeypatch.setattr(LexiconExtractor, "extract", boom)
    monkeypatch.setattr(LexiconExtractor, "extract_parsed", boom)
    res = CliRunner().invoke(app, ["logic", str(REPORTS), "--json", "--workers", "1"])
    assert res.exit_code == 0, res.output
    assert _json_lines(res.output)


def _scorer_name(spec: str) -> str:
    return f"built:{spec}"


class _Named:
    def __init__(self, name: str) -> None:
        self.name = name


def _make(spec: str) -> _Named:
    if spec == "bad":
        raise PathGLSError("no such scorer: bad")
    return _Named(_scorer_name(spec))


def _score(text: str, scorer: _Named) -> str:
    if text == "fail":
        raise PathGLSError("cannot score")
    return f"{scorer.name}|{text}"


def test_pool_builds_through_the_factory_streams_in_order_and_keeps_item_errors() -> None:
    items = [(f"r{i}", "fail" if i == 5 else f"t{i}") for i in range(40)]
    got = list(
        score_in_pool(items, make_scorer=functools.partial(_make, "x"), score=_score, workers=2)
    )
    assert [g.rid for g in got] == [rid for rid, _ in items]
    assert got[0].score == "built:x|t0" and got[0].scorer_name == "built:x"
    assert got[5].score is None and got[5].error == "cannot score"
    serial = list(score_serially(items, scorer=_make("x"), score=_score))
    assert serial == got


def test_a_factory_failing_in_the_workers_fails_with_its_message() -> None:
    with pytest.raises(ScorerBuildError, match="no such scorer: bad"):
        list(
            score_in_pool(
                [("a", "t"), ("b", "t"), ("c", "t")],
                make_scorer=functools.partial(_make, "bad"),
                score=_score,
                workers=2,
            )
        )


def test_default_workers_follow_the_affinity_mask(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 3, 5}, raising=False)
    assert default_workers() == 3
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 7)
    assert default_workers() == 7
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert default_workers() == 1


def test_workers_must_be_positive() -> None:
    res = CliRunner().invoke(app, ["logic", str(REPORTS), "--workers", "0"])
    assert res.exit_code == 2
