"""The pathology lexicon and the default ``lexicon`` entity extractor, on real scored reports."""

from __future__ import annotations

import csv
import threading
from pathlib import Path

import pytest

from pathgls.text.base import ENTITY_TYPES, EXTRACTORS, SECTION_KINDS, EntityExtractor
from pathgls.text.lexicon import (
    ATTRIBUTE_VALUES,
    BEHAVIORS,
    GRADES,
    IMPLIES,
    RESULTS,
    LexiconError,
    load_lexicon,
    parse_attributes,
)
from pathgls.text.lexicon_extractor import LexiconExtractor
from pathgls.text.sections import parse_report
from pathgls.types import Entity

HEADER = "concept\ttype\tsynonyms\tattributes\n"

SIX_FIELDS = """\
1. **STAIN_TYPE:** H&E
2. TISSUE ARCHITECTURE: Infiltrating glands in a desmoplastic stroma; no normal lobules.
3. cell_types: Atypical epithelial cells, approx. 60% of the cellularity (vs. 40% stroma).
NUCLEAR_FEATURES: Pleomorphic nuclei. Prominent nucleoli, mitoses approx. 12/10 HPF.
**Cytoplasmic features**: Eosinophilic cytoplasm.
Diagnosis_Morphologic: Invasive ductal carcinoma, grade 2, pT1c. Margins negative.
"""


@pytest.fixture(scope="module")
def extractor() -> LexiconExtractor:
    return LexiconExtractor()


@pytest.fixture(scope="module")
def dev_rows(shared_data: Path) -> list[dict[str, str]]:
    csv.field_size_limit(10**9)
    path = shared_data / "expert_scores" / "hare_expert_dev.tsv"
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


@pytest.fixture(scope="module")
def references(dev_rows: list[dict[str, str]]) -> dict[str, str]:
    return {r["case_id"]: r["reference"] for r in dev_rows}


def find(entities: list[Entity], text: str, nth: int = 0) -> Entity:
    """The ``nth`` entity whose text is ``text`` (case-insensitive)."""
    hits = [e for e in entities if e.text.lower() == text.lower()]
    assert len(hits) > nth, f"{text!r} not among {[e.text for e in entities]}"
    return hits[nth]


# --- the lexicon as data --------------------------------------------------------------------------


def test_lexicon_size_and_vocabulary() -> None:
    lex = load_lexicon()
    assert load_lexicon() is lex  # cached per process
    written = sum(1 for t in lex.terms for _ in t.forms)
    assert lex.n_surface_forms >= 300 and written >= 300
    counts = lex.counts_by_type()
    for t in ("pathological_diagnosis", "ihc_marker", "anatomical_site", "morphology_finding"):
        assert counts[t]["concepts"] >= 40, counts
    assert set(counts) <= set(ENTITY_TYPES)
    assert all(t.concept == t.concept.lower() for t in lex.terms)
    assert {"behavior", "grade", "result", "implies", "group", "depends_on"} <= set(
        ATTRIBUTE_VALUES
    )
    for t in lex.terms:
        for key, value in t.attributes.items():
            allowed = ATTRIBUTE_VALUES[key]
            assert allowed is None or set(value.split(",")) <= set(allowed), (t.concept, key)
    assert "benign_neoplasm" in BEHAVIORS and GRADES == ("low", "intermediate", "high")
    assert "equivocal" in RESULTS and "high_grade" in IMPLIES
    assert {r.derive for r in lex.patterns} >= {"gleason", "tnm", "size", "node_count"}


def test_lexicon_synonyms_and_generated_variants() -> None:
    lex = load_lexicon()
    assert lex.lookup("IDC").concept == "invasive ductal carcinoma"
    assert lex.lookup("infiltrating lobular carcinoma").concept == "invasive lobular carcinoma"
    assert lex.lookup("LVI").concept == "lymphovascular invasion"
    assert lex.lookup("tumour").concept == "tumor"  # British spelling, generated
    assert lex.lookup("oesophageal adenocarcinoma").concept == "esophageal adenocarcinoma"
    assert lex.lookup("high grade").concept == "high grade"  # hyphen ↔ space, generated
    assert lex.lookup("ER").concept == "estrogen receptor"
    assert lex.lookup("er") is None  # "=ER" is case-sensitive
    fibroadenoma = lex.term("fibroadenoma")
    assert fibroadenoma.attributes["behavior"] == "benign_neoplasm"
    assert lex.term("invasive ductal carcinoma").attributes["depends_on"] == "invasion"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("carcinoma\tdiagnosis\tca\t\n", "unknown entity type 'diagnosis'"),
        ("carcinoma\tpathological_diagnosis\tca\tseverity=high\n", "unknown attribute key"),
        ("carcinoma\tpathological_diagnosis\tca\tbehavior=evil\n", "behavior='evil' is not"),
        ("carcinoma\tpathological_diagnosis\tca\tbehavior\n", "is not key=value"),
        ("carcinoma\tpathological_diagnosis\tca\n", "expected 4 tab-separated columns"),
        ("Carcinoma\tpathological_diagnosis\tca\t\n", "must be lowercase"),
        ("carcinoma\tpathological_diagnosis\tca\tsite=mars\n", "not an anatomical_site"),
        ("carcinoma\tpathological_diagnosis\tca\timplies=malignant,odd\n", "implies='odd'"),
        ("a\tgrade\tx\t\nb\tgrade\tX\t\n", "already a form of 'a'"),
    ],
)
def test_lexicon_validation_errors_name_file_and_line(
    tmp_path: Path, row: str, message: str
) -> None:
    bad = tmp_path / "bad.tsv"
    bad.write_text("# comment\n" + HEADER + row, encoding="utf-8")
    with pytest.raises(LexiconError, match=message) as info:
        load_lexicon([bad])
    assert "bad.tsv:3" in str(info.value)


def test_lexicon_file_errors(tmp_path: Path) -> None:
    with pytest.raises(LexiconError, match="not found"):
        load_lexicon([tmp_path / "missing.tsv"])
    wrong = tmp_path / "wrong.tsv"
    wrong.write_text("term\tkind\n", encoding="utf-8")
    with pytest.raises(LexiconError, match=r"wrong\.tsv:1: header must be"):
        load_lexicon([wrong])
    patterns = tmp_path / "patterns.tsv"
    patterns.write_text(
        "concept\ttype\tregex\tattributes\nsize\tsize\t(\\d+ cm\tderive=size\n", encoding="utf-8"
    )
    with pytest.raises(LexiconError, match=r"patterns\.tsv:2: invalid regex"):
        load_lexicon([patterns])
    patterns.write_text(
        "concept\ttype\tregex\tattributes\nsize\tsize\t\\d+ cm\tderive=size\n", encoding="utf-8"
    )
    with pytest.raises(LexiconError, match="derive=size needs named groups dims\\+unit"):
        load_lexicon([patterns])
    rules = tmp_path / "rules.json"
    rules.write_text('{"context_rules": [{"literal": "x", "category": "NEG", "oops": 1}]}')
    with pytest.raises(LexiconError, match="cannot load ConText rules"):
        LexiconExtractor(context_rules=[rules])
    assert parse_attributes("") == {}
    assert parse_attributes("implies=malignant, high_grade") == {"implies": "malignant,high_grade"}


def test_custom_lexicon_through_the_registry(tmp_path: Path) -> None:
    (tmp_path / "mini.tsv").write_text(
        HEADER + "widget carcinoma\tpathological_diagnosis\t=WCA\tbehavior=malignant\n",
        encoding="utf-8",
    )
    ex = EXTRACTORS.build(f"lexicon:{tmp_path}")
    assert ex.name == "lexicon"
    (e,) = ex.extract("No WCA seen. wca")
    assert (e.concept, e.negated, e.attributes) == (
        "widget carcinoma",
        True,
        {"behavior": "malignant"},
    )


# --- extraction on real reports ------------------------------------------------------------------


def test_case001_breast_reference(extractor: LexiconExtractor, references: dict[str, str]) -> None:
    ents = extractor.extract(references["case001"])
    idc = find(ents, "Invasive ductal carcinoma")
    assert (idc.type, idc.concept, idc.negated, idc.uncertain) == (
        "pathological_diagnosis",
        "invasive ductal carcinoma",
        False,
        False,
    )
    assert idc.attributes | {} == idc.attributes and idc.confidence == 1.0
    assert {k: idc.attributes[k] for k in ("behavior", "invasive", "depends_on")} == {
        "behavior": "malignant",
        "invasive": "yes",
        "depends_on": "invasion",
    }
    er, her2 = find(ents, "ER"), find(ents, "HER2")
    assert (er.type, er.concept, er.negated, er.attributes["result"]) == (
        "ihc_marker",
        "estrogen receptor",
        False,
        "positive",
    )
    assert (her2.concept, her2.negated, her2.attributes["result"]) == ("her2", False, "negative")
    negative = find(ents, "negative")
    assert (negative.type, negative.negated, negative.attributes) == (
        "ihc_modifier",
        False,
        {"result": "negative", "marker": "her2"},
    )
    assert find(ents, "WT1").attributes["result"] == "positive"
    dcis = find(ents, "DCIS")
    assert (dcis.concept, dcis.attributes["behavior"]) == ("ductal carcinoma in situ", "in_situ")
    lcis = find(ents, "Lobular carcinoma in situ")
    assert lcis.attributes["behavior"] == "in_situ" and not lcis.negated
    adh = find(ents, "Atypical ductal hyperplasia")
    assert adh.attributes["behavior"] == "premalignant"
    assert find(ents, "Fibrocystic changes").attributes["behavior"] == "benign_process"
    lvi = find(ents, "Lymphovascular Invasion")
    assert (lvi.type, lvi.negated, lvi.attributes["group"]) == (
        "lymphovascular_invasion",
        False,
        "lvi",
    )
    ece = find(ents, "extracapsular extension")
    assert ece.negated and ece.attributes["group"] == "extranodal_extension"
    assert find(ents, "metastases").negated
    assert find(ents, "macrometastasis").attributes["group"] == "metastasis"
    for margin in ("skin margins", "Surgical margins"):
        m = find(ents, margin)
        assert (m.type, m.negated, m.attributes["result"]) == ("margin", False, "negative")
    assert find(ents, "carcinoma", 1).negated  # "clear of carcinoma"
    size = find(ents, "28mm")
    assert (size.type, size.attributes["value_mm"]) == ("size", "28")


def test_case014_prostate_reference(
    extractor: LexiconExtractor, references: dict[str, str]
) -> None:
    ents = extractor.extract(references["case014"])
    gleason = find(ents, "Gleason grade 4+5")
    assert gleason.type == "grade"
    assert {k: gleason.attributes[k] for k in ("grade", "gleason_score", "grade_group")} == {
        "grade": "high",
        "gleason_score": "9",
        "grade_group": "5",
    }
    stage = find(ents, "pT3aNOMX")  # sic: letter O for zero
    assert stage.type == "stage"
    assert (stage.attributes["t"], stage.attributes["n"], stage.attributes["m"]) == (
        "T3a",
        "N0",
        "MX",
    )
    assert stage.attributes["implies"] == "malignant"
    assert find(ents, "pT3apN0pMX").attributes["n"] == "N0"
    metastasis = find(ents, "metastasis")
    assert (metastasis.type, metastasis.negated) == ("metastasis", True)
    nodes = find(ents, "pelvic lymph nodes")
    assert (nodes.type, nodes.negated, nodes.attributes["laterality"]) == (
        "anatomical_site",
        False,
        "bilateral",
    )
    assert find(ents, "perineural invasion").attributes["implies"] == "malignant"
    assert find(ents, "extracapsular penetration").attributes["group"] == "invasion"
    for marker in ("ER", "PR", "KI-67", "p53", "Her-2/neu", "EGFR"):
        e = find(ents, marker)
        assert e.type == "ihc_marker" and not e.negated and "result" not in e.attributes
    assert find(ents, "Prostatic adenocarcinoma").section == "diagnosis"


def test_case013_gastric_reference(extractor: LexiconExtractor, references: dict[str, str]) -> None:
    ents = extractor.extract(references["case013"])
    nodes = find(ents, "15 out of 25 regional lymph nodes")
    assert nodes.type == "lymph_node_involvement"
    assert {k: nodes.attributes[k] for k in ("positive", "total")} == {
        "positive": "15",
        "total": "25",
    }
    assert find(ents, "poorly differentiated").attributes["grade"] == "high"
    assert find(ents, "pT4b").attributes["t"] == "T4b"
    assert find(ents, "stage IIIC").attributes["stage"] == "IIIC"
    helicobacter = find(ents, "Helicobacter")
    assert (helicobacter.type, helicobacter.negated, helicobacter.attributes["result"]) == (
        "ihc_marker",
        False,
        "negative",
    )
    signet = find(ents, "signet ring cell carcinoma")  # "invasive signet ring cell carcinoma"
    assert signet.attributes["invasive"] == "yes" and signet.attributes["depends_on"] == "invasion"
    assert find(ents, "metastatic carcinoma").attributes["depends_on"] == "metastasis"
    assert find(ents, "margins").attributes["result"] == "negative"
    assert find(ents, "lymphovascular").type == "lymphovascular_invasion"  # "... and perineural"
    assert find(ents, "perineural invasion").type == "perineural_invasion"
    assert find(ents, "chronic cholecystitis").attributes["behavior"] == "benign_process"
    assert not find(ents, "invaded").negated  # "... but margins are negative"


def test_uncertainty_on_real_candidates(
    extractor: LexiconExtractor, dev_rows: list[dict[str, str]]
) -> None:
    def candidate(case: str, phrase: str) -> str:
        return next(
            r["candidate"] for r in dev_rows if r["case_id"] == case and phrase in r["candidate"]
        )

    ents = extractor.extract(candidate("case109", "Suspicious for malignancy"))
    malignancy = find(ents, "malignancy")
    assert malignancy.uncertain and not malignancy.negated and malignancy.section == "diagnosis"
    ents = extractor.extract(candidate("case149", "cannot be ruled out"))
    hgd = find(ents, "high-grade dysplasia")
    assert hgd.uncertain and hgd.attributes["grade"] == "high"
    assert find(ents, "invasive carcinoma").negated  # "No evidence of invasive carcinoma"
    assert not find(ents, "Urothelial dysplasia").uncertain
    ents = extractor.extract(candidate("case003", "consistent with an adenocarcinoma"))
    adeno = find(ents, "adenocarcinoma")  # "consistent with" is affirmative
    assert not adeno.uncertain and not adeno.negated and adeno.section == "diagnosis"
    assert find(ents, "Lymphovascular invasion").negated  # "is not evident"


@pytest.mark.parametrize(
    ("text", "target", "negated", "uncertain"),
    [
        ("Suspicious for carcinoma.", "carcinoma", False, True),
        ("Cannot rule out invasion.", "invasion", False, True),
        ("Stromal invasion cannot be excluded.", "Stromal invasion", False, True),
        ("Findings favor reactive changes.", "reactive changes", False, True),
        ("Consistent with adenocarcinoma.", "adenocarcinoma", False, False),
        ("No evidence of malignancy.", "malignancy", True, False),
        ("Negative for dysplasia.", "dysplasia", True, False),
        ("Sections are free of tumor.", "tumor", True, False),
        ("Pleural invasion was absent.", "Pleural invasion", True, False),
        ("Invasive carcinoma, LVI not identified.", "Invasive carcinoma", False, False),
        ("Invasive carcinoma, LVI not identified.", "LVI", True, False),
        ("Lymphovascular invasion: negative.", "Lymphovascular invasion", True, False),
        ("No necrosis; mitoses are frequent.", "mitoses", False, False),
    ],
)
def test_context(
    extractor: LexiconExtractor, text: str, target: str, negated: bool, uncertain: bool
) -> None:
    e = find(extractor.extract(text), target)
    assert (e.negated, e.uncertain) == (negated, uncertain)


def test_historical_and_family(extractor: LexiconExtractor) -> None:
    ents = extractor.extract("History of breast cancer. Her mother had ovarian cancer.")
    assert find(ents, "breast cancer").attributes["historical"] == "yes"
    assert find(ents, "ovarian cancer").attributes["family"] == "yes"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Tumor cells are positive for CK7 and TTF-1, negative for CK20 and CDX2.",
            {"CK7": "positive", "TTF-1": "positive", "CK20": "negative", "CDX2": "negative"},
        ),
        ("ER+/PR-/HER2 3+ carcinoma.", {"ER": "positive", "PR": "negative", "HER2": "positive"}),
        ("HER2 (score 2+).", {"HER2": "equivocal"}),
        ("HER2 negative (1+).", {"HER2": "negative"}),
        (
            "positive estrogen receptors, negative progesterone receptors and HER 2 NEU",
            {"estrogen receptors": "positive", "progesterone receptors": "negative"}
            | {"HER 2 NEU": "negative"},
        ),
        ("ER, PR and HER2 are negative.", {"ER": "negative", "PR": "negative", "HER2": "negative"}),
        ("The tumor cells do not express CK20.", {"CK20": "negative"}),
        ("MLH1 and PMS2 show loss of expression.", {"MLH1": "negative", "PMS2": "negative"}),
        ("MSH2 and MSH6 are retained.", {"MSH2": "positive", "MSH6": "positive"}),
        ("ER 90%, PR 0%.", {"ER": "positive", "PR": "negative"}),
    ],
)
def test_marker_results(extractor: LexiconExtractor, text: str, expected: dict) -> None:
    ents = extractor.extract(text)
    for marker, result in expected.items():
        e = find(ents, marker)
        assert e.type == "ihc_marker" and not e.negated
        assert e.attributes.get("result") == result, (marker, e.attributes)
    # result words bound to no marker are not kept as stain results
    ents = extractor.extract("Lymph nodes are negative for metastasis. Margins positive.")
    assert not [e for e in ents if e.type == "ihc_modifier"]


@pytest.mark.parametrize(
    ("text", "target", "attributes"),
    [
        (
            "Gleason score 3+4=7",
            "Gleason score 3+4=7",
            {"grade": "intermediate", "grade_group": "2"},
        ),
        ("Gleason score of 3+3", "Gleason score of 3+3", {"grade": "low", "gleason_score": "6"}),
        ("ISUP grade group 4.", "ISUP grade group 4", {"grade": "high"}),
        ("Nottingham grade III (of III)", "Nottingham grade III (of III)", {"grade": "high"}),
        ("FIGO grade 2", "FIGO grade 2", {"grade": "intermediate", "system": "figo"}),
        (
            "Fuhrman nuclear grade of 2 out of 4",
            "Fuhrman nuclear grade of 2 out of 4",
            {"grade": "low"},
        ),
        ("Tumor G1, pT2.", "G1", {"grade": "low"}),
        ("well-differentiated adenocarcinoma", "well-differentiated", {"grade": "low"}),
        ("6 x 3 x 2 cm tumor", "6 x 3 x 2 cm", {"value_mm": "60", "dims": "6x3x2"}),
        ("0/9 lymph nodes", "0/9 lymph nodes", {"positive": "0", "total": "9"}),
        ("two of fourteen lymph nodes", "two of fourteen lymph nodes", {"positive": "2"}),
        ("pT1c, pN0(i-), pMX", "pT1c, pN0(i-), pMX", {"t": "T1c", "n": "N0(i-)", "m": "MX"}),
        ("FIGO stage IB", "FIGO stage IB", {"stage": "IB", "system": "figo"}),
        ("R0 resection", "R0 resection", {"result": "negative"}),
        ("5 mitoses per 10 HPF", "5 mitoses per 10 HPF", {"count": "5", "group": "mitoses"}),
    ],
)
def test_pattern_rules(
    extractor: LexiconExtractor, text: str, target: str, attributes: dict[str, str]
) -> None:
    e = find(extractor.extract(text), target)
    assert {k: e.attributes.get(k) for k in attributes} == attributes


def test_margins_and_sides(extractor: LexiconExtractor) -> None:
    ents = extractor.extract(
        "Margins are involved by carcinoma. The deep margin is uninvolved. Close margin (1 mm). "
        "Tumor extends to the inked margin. Right breast and left axilla."
    )
    margins = [e for e in ents if e.type == "margin"]
    results = [m.attributes.get("result") for m in margins]
    assert results == ["positive", "negative", None, "positive"]
    assert margins[2].attributes["status"] == "close"
    assert margins[3].text == "inked margin"
    assert find(ents, "breast").attributes["laterality"] == "right"
    assert find(ents, "axilla").attributes["laterality"] == "left"


def test_markdown_candidate_sections(
    extractor: LexiconExtractor, dev_rows: list[dict[str, str]]
) -> None:
    text = dev_rows[0]["candidate"]  # case001, a skin biopsy in Markdown
    assert "**Microscopic Description:**" in text
    ents = extractor.extract(text)
    assert find(ents, "hyperkeratosis").section == "microscopic"
    dermatitis = find(ents, "Reactive dermatitis")
    assert (dermatitis.section, dermatitis.concept) == ("diagnosis", "dermatitis")
    malignancy = find(ents, "malignancy")  # "No evidence of malignancy is noted."
    assert malignancy.negated and malignancy.section == "microscopic"


def test_six_field_structured_report(extractor: LexiconExtractor) -> None:
    ents = extractor.extract(SIX_FIELDS)
    idc = find(ents, "Invasive ductal carcinoma")
    assert idc.section == "diagnosis"
    assert find(ents, "grade 2").attributes["grade"] == "intermediate"
    assert find(ents, "pT1c").type == "stage"
    margins = find(ents, "Margins")
    assert (margins.section, margins.attributes["result"]) == ("diagnosis", "negative")
    assert find(ents, "Pleomorphic nuclei").section == "microscopic"
    assert find(ents, "12/10 HPF").attributes["count"] == "12"
    assert find(ents, "Infiltrating").attributes["invasive"] == "yes"


def test_every_dev_report_offsets_types_sections(
    extractor: LexiconExtractor, dev_rows: list[dict[str, str]]
) -> None:
    candidates = [r["candidate"] for r in dev_rows if r["candidate_slot"] in ("0", "1")]
    texts = list(dict.fromkeys([r["reference"] for r in dev_rows] + candidates))
    n = 0
    for raw in texts:
        text = parse_report(raw).text
        ents = extractor.extract(raw)
        n += len(ents)
        previous_end = 0
        for e in sorted(ents, key=lambda e: e.start):
            assert text[e.start : e.end] == e.text and e.text.strip() == e.text
            assert e.start >= previous_end  # no overlaps
            previous_end = e.end
            assert e.type in ENTITY_TYPES and e.section in SECTION_KINDS and e.concept
            assert not (e.negated and e.type in ("ihc_marker", "anatomical_site", "margin"))
    assert n > 10 * len(texts) / 2


def test_registry_protocol_and_threads(extractor: LexiconExtractor) -> None:
    built = EXTRACTORS.build("lexicon")
    assert built is EXTRACTORS.build("lexicon")  # one pipeline per process
    assert isinstance(built, EntityExtractor) and built.name == "lexicon"
    assert "lexicon" in EXTRACTORS
    text = "Invasive ductal carcinoma, ER positive, no lymphovascular invasion."
    expected = extractor.extract(text)
    results: list[list[Entity]] = []

    def work() -> None:
        for _ in range(5):
            results.append(extractor.extract(text))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 20 and all(r == expected for r in results)
    assert extractor.extract("") == [] and extractor.extract("   \n") == []


def test_no_invasive_negates_the_whole_diagnosis() -> None:
    # "no invasive" used to be one negation trigger overlapping the diagnosis it negates,
    # so ConText never applied it and the carcinoma stayed affirmed.
    from pathgls.text import analyze_report, build_extractor

    ex = build_extractor("lexicon")
    for text in (
        "No invasive ductal carcinoma is identified in the breast.",
        "There is no invasive ductal carcinoma.",
    ):
        diag = [
            e for e in analyze_report(text, extractor=ex).entities if e.type.endswith("diagnosis")
        ]
        assert [(e.text, e.negated) for e in diag] == [("invasive ductal carcinoma", True)]
