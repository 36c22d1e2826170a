"""Read once: a report's case model is built once, kept on its AnalyzedReport, and Logic uses it."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest

import pathgls.text.case as case_package
import pathgls.text.document as document_module
from pathgls.config import LogicConfig, load_config
from pathgls.logic import logic_score
from pathgls.nli import build_nli
from pathgls.runner.single import evaluate_single
from pathgls.text import analyze_report, build_extractor
from pathgls.text.case import build_case

REPORT = (
    "FINAL DIAGNOSIS:\n"
    "A. Breast, left, lumpectomy: invasive ductal carcinoma, grade 2, 1.8 cm.\n"
    "   Margins are negative. No lymphovascular invasion.\n"
    "COMMENT: Lymphovascular invasion is present focally."
)
TCGA = Path("/work/shared/data/reports/tcga_reports_dev.tsv")


@pytest.fixture(scope="module")
def extractor():
    return build_extractor("lexicon")


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, Counter[str]]:
    """Counts of parse_document and build_case calls, by the text they read."""
    counts: dict[str, Counter[str]] = {"document": Counter(), "case": Counter()}
    parse, build = document_module.parse_document, case_package.build_case

    def parse_document(raw, **kw):
        counts["document"][raw if isinstance(raw, str) else repr(raw)] += 1
        return parse(raw, **kw)

    def build_case_counted(report):
        key = report.text if isinstance(report, document_module.Document) else str(report)
        counts["case"][key] += 1
        return build(report)

    monkeypatch.setattr(document_module, "parse_document", parse_document)
    monkeypatch.setattr(case_package, "build_case", build_case_counted)
    return counts


def test_the_case_is_built_once_and_logic_reuses_it(extractor, counted) -> None:
    report = analyze_report(REPORT, extractor=extractor)
    assert counted["document"].total() == 0  # nothing read for the case model until asked
    nli = build_nli("rules")
    first = logic_score(report=report, nli=nli, config=LogicConfig())
    second = logic_score(report=report, nli=nli, config=LogicConfig())
    assert counted["document"] == Counter({report.text: 1})
    assert counted["case"] == Counter({report.text: 1})
    assert report.case is report.case and report.case.document is report.document
    assert first == second
    # the case is the one build_case makes of the report's text
    fresh = build_case(report.text)
    assert fresh.facts == report.case.facts and fresh.notes == report.case.notes
    assert fresh.document.statements == report.document.statements
    assert first.value is not None and first.value < 0.5  # LVI absent, then present


def _tcga_reports(n: int) -> list[str]:
    if not TCGA.exists():
        pytest.skip(f"shared data not found: {TCGA}")
    csv.field_size_limit(10**9)
    with TCGA.open(encoding="utf-8", newline="") as f:
        rows = [r["report"] for r in csv.DictReader(f, delimiter="\t")]
    step = len(rows) // n
    return rows[::step][:n]


def test_logic_on_an_analyzed_report_equals_logic_on_its_text(extractor) -> None:
    nli = build_nli("rules")
    reports = [REPORT, *_tcga_reports(40)]
    scored = 0
    for text in reports:
        analyzed = analyze_report(text, extractor=extractor)
        a = logic_score(report=analyzed, nli=nli, config=LogicConfig())
        b = logic_score(report=analyzed.text, nli=nli, config=LogicConfig())
        assert a.value == b.value and a.missing_reason == b.missing_reason
        assert a.evidence == b.evidence
        assert [w for w in a.warnings if w not in analyzed.warnings] == [
            w for w in b.warnings if w not in analyzed.warnings
        ]
        scored += a.value is not None
    assert scored >= 10


def test_a_pipeline_item_reads_each_report_once(tmp_path: Path, sample_rois, counted) -> None:
    roi = sample_rois[0]
    texts = {"original": REPORT, "stain": REPORT + " ", "attack:false-malignant-history": "x"}
    replay = tmp_path / "replay.jsonl"
    replay.write_text(
        "\n".join(
            json.dumps({"item_id": roi.stem, "condition": c, "report": t}) for c, t in texts.items()
        )
    )
    config = load_config(run={"subjects": (f"replay:{replay}",)})
    (card,) = evaluate_single(source=roi, config=config, out=tmp_path / "run")
    assert card.modules["logic"].value is not None
    # the original's case model read once (Logic); the other conditions never need one
    assert counted["document"] == Counter({REPORT: 1})
    assert counted["case"] == Counter({REPORT: 1})
