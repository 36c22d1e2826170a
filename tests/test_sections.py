"""Report cleaning, sections and sentences on real expert-scored reports and on bad input."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from pathgls.text.base import SECTION_KINDS, ParsedReport
from pathgls.text.clean import clean_report
from pathgls.text.sections import heading_kind, parse_report, split_sentences

SIX_FIELDS = """\
1. **STAIN_TYPE:** H&E
2. TISSUE ARCHITECTURE: Infiltrating glands in a desmoplastic stroma; no normal lobules.
3. cell_types: Atypical epithelial cells, approx. 60% of the cellularity (vs. 40% stroma).
NUCLEAR_FEATURES: Pleomorphic nuclei. Prominent nucleoli, mitoses approx. 12/10 HPF.
**Cytoplasmic features**: Eosinophilic cytoplasm.
Diagnosis_Morphologic: Invasive ductal carcinoma, grade 2, pT1c. Margins negative.
"""

PLAIN = """\
SURGICAL PATHOLOGY REPORT

CLINICAL HISTORY: Left breast mass.

GROSS DESCRIPTION:
Received in formalin is a core biopsy, 1.2 cm. in length.

MICROSCOPIC DESCRIPTION:
Sections show infiltrating ductal carcinoma (Nottingham grade 2, i.e. moderately
differentiated). Tumor size approx. 2.5 cm. See Fig. 2 and block No. 3; margins free.
Examination reveals:
- glands with e.g. cribriform architecture
- Necrosis absent

IMMUNOHISTOCHEMISTRY:
ER positive (95%). PR positive. HER2 negative (1+).

DIAGNOSIS:
Left breast, core biopsy: Invasive ductal carcinoma, Nottingham grade 2.

COMMENT: Discussed with Dr. Smith on 3/4. Clinical correlation recommended.
"""


def check(report: ParsedReport) -> None:
    """Every offset invariant of a parsed report."""
    text = report.text
    assert text == text.strip()
    previous_end = 0
    for sec in report.sections:
        assert sec.kind in SECTION_KINDS
        assert previous_end <= sec.start <= sec.end <= len(text)
        assert text[sec.start : sec.end] == text[sec.start : sec.end].strip()
        previous_end = sec.end
    previous_end = 0
    sections = [sec for sec in report.sections if sec.start < sec.end]
    i = 0
    for s in report.sentences:
        assert text[s.start : s.end] == s.text
        assert s.text and s.text == s.text.strip()
        assert previous_end <= s.start < s.end
        previous_end = s.end
        assert not s.text.startswith(("- ", "* ", "**", "#")), s.text
        assert not s.text.endswith("**"), s.text
        while sections[i].end <= s.start:
            i += 1
        assert sections[i].start <= s.start and s.end <= sections[i].end
        assert sections[i].kind == s.section


def kinds(report: ParsedReport) -> list[str]:
    return [sec.kind for sec in report.sections]


def body(report: ParsedReport, kind: str) -> str:
    return "\n".join(report.text[s.start : s.end] for s in report.sections if s.kind == kind)


@pytest.fixture(scope="module")
def rows(shared_data: Path) -> list[dict[str, str]]:
    path = shared_data / "expert_scores" / "hare_expert_dev.tsv"
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def candidate(rows: list[dict[str, str]], case: str, slot: str) -> str:
    return next(
        r["candidate"] for r in rows if r["case_id"] == case and r["candidate_slot"] == slot
    )


def reference(rows: list[dict[str, str]], case: str) -> str:
    return next(r["reference"] for r in rows if r["case_id"] == case)


# --- real reports -------------------------------------------------------------------------------


def test_markdown_candidate_case001(rows: list[dict[str, str]]) -> None:
    report = parse_report(candidate(rows, "case001", "0"))
    check(report)
    assert report.warnings == []
    titles = {sec.title: sec.kind for sec in report.sections}
    assert titles["Microscopic Description"] == "microscopic"
    assert titles["Diagnosis"] == "diagnosis"
    assert titles["Gross Description"] == "gross"
    assert titles["Recommendations"] == "comment"
    assert titles["Patient ID"] == "other"
    assert titles["Histopathology Report"] == "other"
    assert "Reactive dermatitis" in body(report, "diagnosis")
    diagnosis = [s for s in report.sentences if s.section == "diagnosis"]
    assert len(diagnosis) == 1 and diagnosis[0].text.startswith("Skin biopsy:** Reactive")
    micro = [s.text for s in report.sentences if s.section == "microscopic"]
    assert micro[0] == (
        "The histological examination reveals a complex architecture with significant alterations."
    )
    assert "No evidence of malignancy is noted." in micro
    assert len(micro) == 6
    # a section body never includes its heading
    assert all("**" not in report.text[s.start : s.start + 2] for s in report.sections)


def test_bullet_candidates(rows: list[dict[str, str]]) -> None:
    text = next(r["candidate"] for r in rows if "- Honeycombing pattern" in r["candidate"])
    report = parse_report(text)
    check(report)
    assert kinds(report) == ["microscopic", "microscopic", "diagnosis"]
    assert [sec.title for sec in report.sections][:2] == [
        "Histological Findings",
        "Microscopic Description",
    ]
    first = [s.text for s in report.sentences if s.start < report.sections[1].start]
    assert first == [
        "Abnormal alveolar architecture",
        "Presence of interstitial fibrosis",
        "Honeycombing pattern",
        "Inflammatory cell infiltrate",
    ]
    assert "Pulmonary fibrosis" in body(report, "diagnosis")


def test_sub_headings_take_the_enclosing_kind(rows: list[dict[str, str]]) -> None:
    text = next(r["candidate"] for r in rows if "**Lymph Node Status:**" in r["candidate"])
    report = parse_report(text)
    check(report)
    by_title = {sec.title: sec.kind for sec in report.sections}
    assert by_title["Margins"] == "microscopic"
    assert by_title["Lymph Node Status"] == "microscopic"
    assert by_title["Diagnosis"] == "diagnosis"


def test_numbered_atx_and_ihc_candidates(rows: list[dict[str, str]]) -> None:
    atx = next(r["candidate"] for r in rows if "### Final Diagnosis" in r["candidate"])
    report = parse_report(atx)
    check(report)
    assert {"microscopic", "diagnosis"} <= set(kinds(report))
    stains = next(r["candidate"] for r in rows if "- **Special Stains:**" in r["candidate"])
    report = parse_report(stains)
    check(report)
    special = next(sec for sec in report.sections if sec.title == "Special Stains")
    assert special.kind == "ihc"
    assert report.text[special.start :].startswith("[Any special stains")
    # unknown inline labels stay in their section
    assert not any(sec.title == "Inflammation" for sec in report.sections)


def test_prose_reference_is_one_other_section(rows: list[dict[str, str]]) -> None:
    report = parse_report(reference(rows, "case001"))
    check(report)
    assert kinds(report) == ["other"] and report.sections[0].title == ""
    assert len(report.sentences) == 12
    assert report.sentences[1].text == (
        "Nipple dermis was involved, and mucinous carcinoma spanned 2.5mm."
    )
    assert report.sentences[3].text.endswith("(6mm) to intramammary lymph nodes.")


def test_reference_with_inline_headings_and_latin_terms(rows: list[dict[str, str]]) -> None:
    report = parse_report(reference(rows, "case007"))
    check(report)
    assert kinds(report) == ["other", "microscopic", "diagnosis"]
    assert [sec.title for sec in report.sections][1:] == [
        "Microscopic description",
        "Histopathology Diagnosis",
    ]
    assert body(report, "diagnosis").startswith(
        "Carcinoma ductale partim mucinosum invasivum mammae sinistrae"
    )
    assert "</mark>" not in report.text
    assert report.warnings == ["HTML markup removed"]  # and no language warning


def test_reference_plain_bullets_with_excel_newlines(rows: list[dict[str, str]]) -> None:
    report = parse_report(reference(rows, "case065"))
    check(report)
    assert "_x000D_" not in report.text
    assert kinds(report) == ["other", "gross", "microscopic"]  # pre-op diagnosis is clinical
    # an unknown label ("Lymph Node Status:") is a sentence of the section it is in
    assert report.sentences[-1].text == "Lymph Node Status: Negative for malignancy."
    assert report.sentences[-1].section == "microscopic"


def test_every_dev_report_parses(rows: list[dict[str, str]]) -> None:
    for row in rows:
        for field in ("reference", "candidate"):
            report = parse_report(row[field])
            check(report)
            assert report.sentences
            assert not any("English" in w for w in report.warnings), (row["case_id"], field)
        assert "diagnosis" in kinds(parse_report(row["candidate"])), row["case_id"]


# --- formats written here -----------------------------------------------------------------------


def test_six_field_format() -> None:
    report = parse_report(SIX_FIELDS)
    check(report)
    assert [sec.title for sec in report.sections] == [
        "STAIN_TYPE",
        "TISSUE ARCHITECTURE",
        "cell_types",
        "NUCLEAR_FEATURES",
        "Cytoplasmic features",
        "Diagnosis_Morphologic",
    ]
    assert kinds(report) == ["microscopic"] * 5 + ["diagnosis"]
    assert [s.text for s in report.sentences] == [
        "H&E",
        "Infiltrating glands in a desmoplastic stroma; no normal lobules.",
        "Atypical epithelial cells, approx. 60% of the cellularity (vs. 40% stroma).",
        "Pleomorphic nuclei.",
        "Prominent nucleoli, mitoses approx. 12/10 HPF.",
        "Eosinophilic cytoplasm.",
        "Invasive ductal carcinoma, grade 2, pT1c.",
        "Margins negative.",
    ]


def test_plain_headed_text() -> None:
    report = parse_report(PLAIN)
    check(report)
    assert kinds(report) == [
        "other",
        "other",
        "gross",
        "microscopic",
        "ihc",
        "diagnosis",
        "comment",
    ]
    assert report.sections[0].title == "SURGICAL PATHOLOGY REPORT"
    by_kind = {k: [s.text for s in report.sentences if s.section == k] for k in SECTION_KINDS}
    assert by_kind["gross"] == ["Received in formalin is a core biopsy, 1.2 cm. in length."]
    assert by_kind["microscopic"] == [
        "Sections show infiltrating ductal carcinoma (Nottingham grade 2, i.e. moderately\n"
        "differentiated).",
        "Tumor size approx. 2.5 cm.",
        "See Fig. 2 and block No. 3; margins free.",
        "Examination reveals:",
        "glands with e.g. cribriform architecture",
        "Necrosis absent",
    ]
    assert by_kind["ihc"] == ["ER positive (95%).", "PR positive.", "HER2 negative (1+)."]
    assert by_kind["diagnosis"] == [
        "Left breast, core biopsy: Invasive ductal carcinoma, Nottingham grade 2."
    ]
    assert by_kind["comment"] == [
        "Discussed with Dr. Smith on 3/4.",
        "Clinical correlation recommended.",
    ]


def test_headings_alone_on_a_line() -> None:
    text = "Final Diagnosis\nLipoma.\n\nFINAL COMMENT\nBenign.\nLipoma\nNEGATIVE FOR MALIGNANCY"
    report = parse_report(text)
    check(report)
    assert [(sec.kind, sec.title) for sec in report.sections] == [
        ("diagnosis", "Final Diagnosis"),
        ("comment", "FINAL COMMENT"),
    ]
    assert [s.text for s in report.sentences] == [
        "Lipoma.",
        "Benign.",
        "Lipoma",
        "NEGATIVE FOR MALIGNANCY",
    ]


def test_mid_paragraph_headings_and_prose_labels() -> None:
    text = (
        "Sections show glands. Final Diagnosis: Adenocarcinoma, grade 2. Note: ER pending. "
        "The differential diagnosis: lymphoma vs. carcinoma. Tumor size: 2 cm."
    )
    report = parse_report(text)
    check(report)
    assert kinds(report) == ["other", "diagnosis", "comment"]
    assert [s.text for s in report.sentences] == [
        "Sections show glands.",
        "Adenocarcinoma, grade 2.",
        "ER pending.",
        "The differential diagnosis: lymphoma vs. carcinoma.",
        "Tumor size: 2 cm.",
    ]


def test_heading_table() -> None:
    cases = {
        "Final Diagnosis": "diagnosis",
        "DIAGNOSIS_MORPHOLOGIC": "diagnosis",
        "Pathologic diagnosis (revised)": "diagnosis",
        "Impression": "diagnosis",
        "Histological Findings": "microscopic",
        "STAIN TYPE": "microscopic",
        "Immunohistochemical findings": "ihc",
        "IHC": "ihc",
        "Macroscopic description": "gross",
        "Comments and recommendations": "comment",
        "Date of Examination": "other",
        "Clinical History": "other",
        "Clinical diagnosis": "other",
    }
    assert {k: heading_kind(k) for k in cases} == cases
    assert heading_kind("Architecture") == "microscopic"
    assert heading_kind("Skin biopsy") is None
    assert heading_kind("") is None


def test_sentence_rules() -> None:
    text = (
        "Mass of 2.5 cm. It is well circumscribed (see Fig. 3. and Table 1.). Stage pT1c.N0 "
        "per Dr. J. Smith, i.e. early. Ki-67 approx. 20%; mitoses e.g. atypical! Why? Hepatitis "
        "C. Breast ca. Sample No. 4 of ca. 12. Done"
    )
    spans = split_sentences(text)
    assert [text[a:b] for a, b in spans] == [
        "Mass of 2.5 cm.",
        "It is well circumscribed (see Fig. 3. and Table 1.).",
        "Stage pT1c.N0 per Dr. J. Smith, i.e. early.",
        "Ki-67 approx. 20%; mitoses e.g. atypical!",
        "Why?",
        "Hepatitis C.",
        "Breast ca.",
        "Sample No. 4 of ca. 12.",
        "Done",
    ]
    wrapped = "The specimen consists of a skin\nbiopsy with features of\nLichen planus.\n---\n"
    assert [wrapped[a:b] for a, b in split_sentences(wrapped)] == [
        "The specimen consists of a skin\nbiopsy with features of\nLichen planus."
    ]


# --- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", ["", "   \n\t \r\n ", b"", b"\xef\xbb\xbf  "])
def test_empty(raw: str | bytes) -> None:
    report = parse_report(raw)
    assert report.text == "" and report.sections == [] and report.sentences == []
    assert report.warnings == ["empty report"]


def test_one_megabyte_report(rows: list[dict[str, str]]) -> None:
    one = candidate(rows, "case001", "0")
    raw = (one + "\n\n") * (1_000_000 // len(one) + 1)
    assert len(raw) > 1_000_000
    report = parse_report(raw)
    check(report)
    assert len(report.text) <= 200_000
    assert raw.startswith(report.text)
    assert raw[len(report.text)] in "\n "  # cut at a line end
    assert any("truncated" in w and f"{len(raw):,}" in w for w in report.warnings)
    full = parse_report(raw, max_chars=2_000_000)
    assert len(full.text) == len(raw.strip()) and not full.warnings


def test_one_long_line_is_cut_at_a_sentence_end() -> None:
    raw = "The tumor cells are large. " * 40_000
    report = parse_report(raw, max_chars=10_000)
    check(report)
    assert len(report.text) <= 10_000 and report.text.endswith("large.")


def test_non_utf8_bytes() -> None:
    report = parse_report(b"Diagnosis: na\xefve B-cell lymphoma, no evidence of carcinoma.")
    check(report)
    assert "naïve" in report.text
    assert report.warnings == ["report is not valid UTF-8; decoded as cp1252"]
    assert kinds(report) == ["diagnosis"]

    broken = "Diagnosis: carcinoma — grade 2, \xff with necrosis in the tissue.".encode()
    broken = broken.replace(b"\xc3\xbf", b"\xff")
    text, warnings = clean_report(broken)
    assert "—" in text and "\ufffd" in text
    assert warnings == ["invalid UTF-8 byte sequences replaced with U+FFFD (1)"]

    text, warnings = clean_report(b"Tumor \x81 cells are present in the tissue of the node.")
    assert warnings == [
        "report is not valid UTF-8; decoded as latin-1",
        "1 control character(s) removed",
    ]
    assert text == "Tumor  cells are present in the tissue of the node."

    text, warnings = clean_report(b"\xef\xbb\xbfDiagnosis: lipoma.")
    assert text == "Diagnosis: lipoma." and warnings == []
    assert clean_report("\ufeffDiagnosis: lipoma.") == ("Diagnosis: lipoma.", [])
    text, warnings = clean_report("Diagnosis: lipoma.".encode("utf-16"))
    assert text == "Diagnosis: lipoma." and warnings == [
        "report is UTF-16 (byte order mark); decoded as utf-16"
    ]


def test_control_characters_newlines_and_spaces() -> None:
    text, warnings = clean_report("Diagnosis:\r\n\x00Lipoma\x07 of\xa0the\tback.\rNote: benign.")
    assert text == "Diagnosis:\nLipoma of the\tback.\nNote: benign."
    assert warnings == ["2 control character(s) removed"]
    report = parse_report("Diagnosis:\r\nLipoma.\r\n\r\nComment:\r\nBenign.")
    check(report)
    assert kinds(report) == ["diagnosis", "comment"]


def test_html() -> None:
    report = parse_report("<p>Diagnosis: <b>carcinoma</b></p>")
    check(report)
    assert report.text == "Diagnosis: carcinoma"
    assert report.warnings == ["HTML markup removed"]
    assert kinds(report) == ["diagnosis"] and [s.text for s in report.sentences] == ["carcinoma"]

    page = (
        "<html><head><title>x</title><style>p {color: red}</style></head><body>"
        "<h2>Microscopic Description</h2><ul><li>Glands &amp; stroma</li><li>No necrosis</li></ul>"
        "<h2>Final Diagnosis</h2><p>Adenoma,<br>tubular type.</p></body></html>"
    )
    report = parse_report(page)
    check(report)
    assert kinds(report) == ["microscopic", "diagnosis"]
    assert [s.text for s in report.sentences] == [
        "Glands & stroma",
        "No necrosis",
        "Adenoma,\ntubular type.",
    ]
    # a "<" that is not a tag stays text
    assert clean_report("Margin <1 mm from the tumour in the tissue.") == (
        "Margin <1 mm from the tumour in the tissue.",
        [],
    )


# a guard against catastrophic regex backtracking (minutes), not a speed assertion
@pytest.mark.timeout(120)
def test_broken_html_is_parsed() -> None:
    for raw in ("<p>" + '<a href="' * 20_000, "<p>" + "<!-- " * 40_000, "<b>x</b>" + "<" * 200_000):
        report = parse_report(raw)
        check(report)
        assert "HTML markup removed" in report.warnings


def test_non_english() -> None:
    german = (
        "Diagnose: Invasives duktales Karzinom der linken Brust, Grad 2. "
        "Die Resektionsränder sind tumorfrei. Lymphknoten ohne Metastasen."
    )
    report = parse_report(german)
    check(report)
    assert report.sentences  # still processed
    assert any(w.startswith("report does not look like English") for w in report.warnings)
    polish = "Rak przewodowy inwazyjny piersi lewej. Węzły chłonne bez przerzutów nowotworowych."
    assert any("English" in w for w in clean_report(polish)[1])
    english_with_latin = (
        "Microscopic description: The sections show an invasive carcinoma with mucin. "
        "Diagnosis: Carcinoma ductale partim mucinosum invasivum mammae sinistrae."
    )
    assert clean_report(english_with_latin)[1] == []
    assert clean_report("Lipoma.")[1] == []  # too short to judge


def test_chinese_report() -> None:
    report = parse_report(
        "病理诊断：浸润性导管癌，组织学分级2级。淋巴结未见转移。免疫组化：ER阳性。"
    )
    check(report)
    assert kinds(report) == ["other"]
    assert [s.text for s in report.sentences] == [
        "病理诊断：浸润性导管癌，组织学分级2级。",
        "淋巴结未见转移。",
        "免疫组化：ER阳性。",
    ]
    assert any("not Latin" in w for w in report.warnings)


def test_wrong_types() -> None:
    with pytest.raises(TypeError):
        clean_report(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        clean_report("x", max_chars=0)
