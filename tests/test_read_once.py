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
from pathgls.text.sections import parse_report

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


REFERENCE = "Breast, left, lumpectomy: invasive ductal carcinoma, grade 2. Margins negative."


@pytest.mark.parametrize("backend", ["dxalign", "hare"])
def test_with_a_reference_the_original_is_read_once_by_every_module(
    tmp_path: Path, sample_rois, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    """The report and hare modules score the pipeline's reading of the original: one entity
    extraction and one section parse of it per item (main read it 3 times and parsed it 6)."""
    import pathgls.text.sections as sections_module
    from pathgls.text.lexicon_extractor import LexiconExtractor

    original, reference = parse_report(REPORT).text, parse_report(REFERENCE).text
    extracted: Counter[str] = Counter()
    sectioned: Counter[str] = Counter()
    read, find = LexiconExtractor._read_block, sections_module.find_sections

    def read_counted(self, text, lo, *args, **kw):  # the spaCy pass, block by block
        extracted[text] += lo == 0
        return read(self, text, lo, *args, **kw)

    def find_counted(text):
        sectioned[text] += 1
        return find(text)

    monkeypatch.setattr(LexiconExtractor, "_read_block", read_counted)
    monkeypatch.setattr(sections_module, "find_sections", find_counted)
    roi = sample_rois[0]
    texts = {"original": REPORT, "stain": REPORT + " x", "attack:false-malignant-history": "y"}
    replay = tmp_path / "replay.jsonl"
    replay.write_text(
        "\n".join(
            json.dumps({"item_id": roi.stem, "condition": c, "report": t}) for c, t in texts.items()
        )
    )
    config = load_config(
        run={"subjects": (f"replay:{replay}",), "hare": True}, report={"backend": backend}
    )
    (card,) = evaluate_single(source=roi, config=config, reference=REFERENCE, out=tmp_path / "r")
    assert card.modules["report"].value is not None and card.modules["hare"].value is not None
    assert extracted[original] == 1, extracted
    assert sectioned[original] == 1, sectioned
    # the reference is no reading of the run's: each of DxAlign and HARE reads it once
    assert extracted[reference] == 2, extracted
    assert sectioned[reference] == extracted[reference], sectioned


def test_the_lexicon_reads_the_parse_it_is_given_as_it_reads_the_text(extractor) -> None:
    """analyze_report hands its parse to the lexicon (one section parse): the same entities as
    extracting from the cleaned text, which parses it again."""
    for text in [REPORT, *_tcga_reports(40)]:
        analyzed = analyze_report(text, extractor=extractor)
        again = sorted(extractor.extract(analyzed.text), key=lambda e: (e.start, e.end))
        assert analyzed.entities == again


def test_a_reading_given_to_the_report_side_and_hare_scores_as_reading_again(extractor) -> None:
    from pathgls.baselines.report_side import DxAlignScorer, HareScorer, report_score
    from pathgls.config import HareConfig, ReportConfig
    from pathgls.hare.models import build_hare_models, score_pairs
    from pathgls.text.embedders import build_embedder

    hare_models = build_hare_models()
    assert hare_models.extractor is extractor  # one lexicon extractor per process
    embedder = build_embedder("minilm")
    dx = DxAlignScorer(config=ReportConfig(), extractor=extractor, embedder=embedder)
    hs = HareScorer(models=hare_models, config=HareConfig())
    texts = _tcga_reports(12)
    for reference, candidate in [(REFERENCE, REPORT), *zip(texts[::2], texts[1::2], strict=True)]:
        read = analyze_report(candidate, extractor=extractor)
        for scorer in (dx, hs):
            alone = report_score(reference=reference, candidate=candidate, scorer=scorer)
            given = report_score(
                reference=reference,
                candidate=candidate,
                scorer=scorer,
                candidate_read=read,
                extractor=extractor,
            )
            assert given == alone
        pair = {"references": [reference], "candidates": [candidate], "models": hare_models}
        assert score_pairs(**pair, analyzed={candidate: read}) == score_pairs(**pair)


def test_a_reading_by_another_extractor_is_not_used(extractor) -> None:
    from pathgls.baselines.report_side import DxAlignScorer, report_score, shares_reading
    from pathgls.config import ReportConfig
    from pathgls.text.embedders import build_embedder

    dx = DxAlignScorer(
        config=ReportConfig(), extractor=extractor, embedder=build_embedder("minilm")
    )
    other = object()
    assert shares_reading(dx, extractor) and not shares_reading(dx, other)
    assert not shares_reading(dx, None)
    wrong = analyze_report("Benign colonic mucosa.", extractor=extractor)  # not the candidate
    kept = report_score(
        reference=REFERENCE, candidate=REPORT, scorer=dx, candidate_read=wrong, extractor=other
    )
    assert kept == report_score(reference=REFERENCE, candidate=REPORT, scorer=dx)
