"""The case model: document structure (parts, regions, statement kinds), what a statement is about
(its target), polarity scope, and the JSON and command-line views. Texts written for these tests."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from pathgls.cli import app
from pathgls.text.case import Target, build_case
from pathgls.text.document import parse_document, region_of


def kinds(text: str) -> list[tuple[str, str]]:
    doc = parse_document(text)
    return [(doc.statement_text(s), s.kind) for s in doc.statements]


def kind_of(text: str, fragment: str) -> str:
    return next(k for t, k in kinds(text) if fragment in t)


def facts(text: str, slot: str | None = None) -> list[tuple[str, str, str, object]]:
    case = build_case(text)
    return [
        (f.target.describe(), f.slot, f.key, f.value)
        for f in case.facts
        if f.certain and (slot is None or f.slot == slot)
    ]


# --- structure -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "labels"),
    [
        (
            (
                "A. Kidney, left, nephrectomy:\nRenal cell carcinoma.\nB. Lymph nodes, "
                "hilar:\nNegative."
            ),
            ["A", "B"],
        ),
        (
            "(A) RIGHT KIDNEY:\nRENAL CELL CARCINOMA.\n{B) PARACAVAL LYMPH NODES:\nNO TUMOR.",
            ["A", "B"],
        ),
        (
            (
                "1. Prostate, radical prostatectomy: adenocarcinoma.\n2. Lymph nodes, left pelvic: "
                "0/4."
            ),
            ["1", "2"],
        ),
        (
            (
                "Part 1: Lung, right upper lobe, lobectomy\nAdenocarcinoma.\nPart 2: Lymph node, "
                "level 7\nNegative."
            ),
            ["1", "2"],
        ),
        (
            (
                "RIGHT DISTAL URETER (A):\n-NO TUMOR IDENTIFIED\nLEFT DISTAL URETER (B):\n-BENIGN "
                "URETER"
            ),
            ["A", "B"],
        ),
        ("A.PANCREATIC DUCT MARGIN: NEGATIVE\nB.COMMON DUCT MARGIN: NEGATIVE", ["A", "B"]),
    ],
    ids=["letters", "ocr-brackets", "numbered", "part-word", "suffix", "run-together"],
)
def test_specimen_parts_in_their_usual_shapes(text: str, labels: list[str]) -> None:
    assert list(parse_document(text).parts) == labels


def test_a_lettered_list_of_findings_is_not_a_list_of_parts() -> None:
    text = (
        "COLON, RESECTION:\nA. INVASIVE ADENOCARCINOMA, 5.5 CM.\nB. NO DEFINITE PERINEURAL "
        "INVASION IS SEEN.\nC. MARGINS NEGATIVE FOR TUMOR.\n7.Lymph nodes: 2/14"
    )
    assert parse_document(text).parts == {}


def test_run_together_findings_under_a_numbered_part_stay_in_it() -> None:
    text = (
        "PART 2: UTERUS, TOTAL ABDOMINAL HYSTERECTOMY -\nA. ENDOMETRIAL ADENOCARCINOMA, "
        "ENDOMETRIOID TYPE.\nB.TUMOR MEASURES 5 CM IN GREATEST DIMENSION.\nC.TUMOR INVADES 53% "
        "INTO THE MYOMETRIAL THICKNESS.\nD.LYMPHOVASCULAR INVASION IS PRESENT.\nPART 3: RIGHT "
        "PELVIC LYMPH NODES, BIOPSY\nFOUR LYMPH NODES, NEGATIVE FOR TUMOR (0/4)."
    )
    doc = parse_document(text)
    assert list(doc.parts) == ["2", "3"]
    invades = next(s for s in doc.statements if "INVADES" in doc.statement_text(s))
    assert invades.part == "2"


def test_a_heading_inside_a_part_keeps_the_part_and_a_later_one_ends_it() -> None:
    text = (
        "RIGHT URETER (A):\nFROZEN SECTION DIAGNOSIS:\n-NO TUMOR IDENTIFIED\nFINAL DIAGNOSIS:\n"
        "-BENIGN URETER\n\n\n\n\nCOMMENT:\nThe tumor is a urothelial carcinoma."
    )
    doc = parse_document(text)
    by_text = {doc.statement_text(s): s for s in doc.statements}
    assert by_text["NO TUMOR IDENTIFIED"].part == "A"
    assert by_text["NO TUMOR IDENTIFIED"].kind == "preliminary"
    assert by_text["BENIGN URETER"].part == "A" and by_text["BENIGN URETER"].kind == "assertion"
    assert by_text["The tumor is a urothelial carcinoma."].part is None


@pytest.mark.parametrize(
    ("title", "region"),
    [
        ("FINAL DIAGNOSIS", "diagnosis"),
        ("Dagnosis", "diagnosis"),
        ("DIAGN OSIS", "diagnosis"),
        ("Clinical History", "history"),
        ("INTRAOPERATIVE CONSULTATION", "preliminary"),
        ("Gross Description", "gross"),
        ("SYNOPTIC DATA-PRIMARY COLON AND RECTAL TUMORS", None),
        ("Tumor size", None),
    ],
)
def test_headings_name_regions_despite_ocr(title: str, region: str | None) -> None:
    assert region_of(title) == region


@pytest.mark.parametrize(
    ("text", "fragment", "kind"),
    [
        (
            "pN0: No regional lymph node metastasis\npN1: Regional lymph node metastasis",
            "pN1",
            "legend",
        ),
        (
            (
                "Regional Lymph Nodes (pN) pN1: Single regional lymph node metastasis in the true "
                "pelvis"
            ),
            "pN1",
            "legend",
        ),
        ("Lymph-vascular invasion: ___ Present ___ Absent", "Lymph-vascular", "legend"),
        ("Prior Malignancy History", "Prior", "form"),
        ("Primary Tumor Site Discrepancy", "Discrepancy", "form"),
        ("Perineural invasion: Not specified", "Perineural", "not_specified"),
        ("Margins: Cannot be assessed", "Margins", "not_specified"),
        ("CLINICAL HISTORY:\nRight kidney mass.", "kidney mass", "history"),
        ("The patient had a prior left mastectomy for carcinoma.", "prior", "history"),
        (
            "Patients with glioma containing a methylated MGMT promoter respond better.",
            "Patients",
            "general",
        ),
        ("Clinical correlation is recommended.", "correlation", "recommendation"),
        ("Consider molecular testing.", "Consider", "recommendation"),
        (
            "The differential diagnosis includes metastatic carcinoma.",
            "differential",
            "differential",
        ),
        ("Rule out lymphoma.", "Rule out", "differential"),
        ("If the margin is involved, re-excision would be advised.", "If", "recommendation"),
        ("Suspicious for lymphovascular invasion.", "Suspicious", "uncertain"),
        ("FROZEN SECTION: margin free of tumor.", "margin free", "preliminary"),
        ("Lymphovascular invasion is present.", "Lymphovascular", "assertion"),
        ("Tumor size: 2.5 cm", "Tumor size", "assertion"),
    ],
)
def test_statement_kinds(text: str, fragment: str, kind: str) -> None:
    assert kind_of(text, fragment) == kind


def test_only_assertions_are_read() -> None:
    text = (
        "CLINICAL HISTORY:\nLymphovascular invasion present on the prior biopsy.\n"
        "DIAGNOSIS:\nInvasive carcinoma.\nLymphovascular invasion: Not specified\n"
        "pN0: No regional lymph node metastasis\n"
    )
    assert [f for f in facts(text) if f[1] in ("invasion", "stage")] == []


# --- targets --------------------------------------------------------------------------------


def test_margin_node_and_tissue_statements_attach_to_their_own_targets() -> None:
    text = (
        "A. Kidney, left: clear cell renal cell carcinoma.\n"
        "Adrenal gland, no tumor present.\n"
        "Margins of resection free of tumor.\n"
        "B. Lymph nodes, left pelvic: multiple left pelvic lymph nodes are negative for tumor "
        "(0/5)."
    )
    found = facts(text)
    assert ("part A · tissue adrenal gland", "presence", "", "absent") in found
    assert ("part A · margin", "margin", "", "free") in found
    assert ("part B · nodes left pelvic", "nodes", "positive", 0) in found
    # nothing of these denials lands on the tumour or the part
    assert not [f for f in found if f[1] == "presence" and f[0].endswith(("tumour", "part"))]


def test_background_and_other_cells_are_not_the_tumour() -> None:
    found = facts(
        "Invasive ductal carcinoma. The tumor cells are positive for ER. "
        "The background lymphocytes are negative for ER.",
        "marker",
    )
    assert ("case · tumour", "marker", "estrogen receptor", "positive") in found
    assert any(f[0].startswith("case · population") and f[3] == "negative" for f in found)


def test_a_second_lesion_keeps_its_own_findings() -> None:
    case = build_case(
        "Invasive adenocarcinoma of the colon, 4 cm. Adjacent tubular adenoma with low-grade "
        "dysplasia without invasion."
    )
    assert not [
        f
        for f in case.facts
        if f.slot == "behaviour" and f.value == "absent" and f.target == Target("tumour", None)
    ]


def test_negation_covers_what_it_introduces_not_its_modifiers() -> None:
    found = facts(
        "Metastatic carcinoma in 2 of 14 lymph nodes with no extranodal extension of carcinoma."
    )
    assert ("case · nodes", "finding", "extranodal extension", "absent") in found
    assert not [f for f in found if f[1] == "presence"]  # "of carcinoma" is not denied
    listed = facts("Invasive carcinoma without lymphovascular, perineural invasion or necrosis.")
    assert {(f[2], f[3]) for f in listed if f[1] in ("invasion", "finding")} >= {
        ("perineural", "absent"),
        ("necrosis", "absent"),
    }


def test_hedges_and_gross_statements_never_enter_the_checks() -> None:
    case = build_case(
        "Renal cell carcinoma.\nRenal sinus: possibly involved.\n"
        "GROSS DESCRIPTION:\nThe tumor grossly invades the perinephric fat."
    )
    assert not [f for f in case.facts if f.slot == "extent" and f.certain]


def test_parts_name_the_tumour_of_the_case_only_when_one_part_holds_one() -> None:
    one = build_case(
        "A. Breast, left: invasive ductal carcinoma.\nB. Lymph node: negative (0/2).\n"
        "COMMENT: Lymphovascular invasion is present."
    )
    assert one.parts["A"].main == "invasive ductal carcinoma"
    two = build_case(
        "A. Breast, left: invasive ductal carcinoma.\nB. Breast, right: invasive lobular "
        "carcinoma.\nCOMMENT: Lymphovascular invasion is present."
    )
    assert any("2 parts name a tumour" in n for n in two.notes)


# --- views ----------------------------------------------------------------------------------


def test_the_case_model_as_json_and_on_the_command_line(tmp_path) -> None:
    report = tmp_path / "r.txt"
    report.write_text(
        "A. Kidney, left, nephrectomy: clear cell renal cell carcinoma, Fuhrman grade 2.\n"
        "Lymphovascular invasion: not identified.\nCOMMENT: Lymphovascular invasion is present.\n"
    )
    result = CliRunner().invoke(app, ["case", str(report), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    part = next(p for p in data["parts"] if p["part"] == "A")
    assert part["main_tumour"] == "clear cell renal cell carcinoma" and part["side"] == "left"
    assert {"slot": "grade", "key": "fuhrman", "value": 2}.items() <= next(
        f for f in part["facts"] if f["slot"] == "grade"
    ).items()
    assert data["checks"][0]["rule"] == "finding"
    table = CliRunner().invoke(app, ["case", str(report)])
    assert table.exit_code == 0 and "part A" in table.output and "finding" in table.output
    missing = CliRunner().invoke(app, ["case", str(tmp_path / "nope.txt")])
    assert missing.exit_code != 0 and "no such file" in missing.output


def test_amounts_are_intervals_in_percent() -> None:
    case = build_case(
        "Glioblastoma. MIB-1 labeling index: 4.2%. The Ki-67 index ranges up to 18.8%.\n"
        "Percent of specimen involved by tumor: 5 - 25%\n"
        "The carcinoma involves approximately 60% of the gland."
    )
    amounts = sorted((f.key, f.value, f.note) for f in case.facts if f.slot == "amount")
    assert amounts == [
        ("involvement", (5.0, 25.0), "range"),
        ("involvement", (60.0, 60.0), ""),
        ("proliferation", (0.0, 18.8), "max areas"),
        ("proliferation", (4.2, 4.2), ""),
    ]


def test_a_denied_component_or_a_tumours_own_name_is_no_mix() -> None:
    def notes(text: str) -> dict[str, str]:
        return {f.value: f.note for f in build_case(text).facts if f.slot == "type"}

    assert (
        "mixed"
        not in notes(
            "Tumor type:\nCarcinosarcoma (malignant mullerian mixed tumor) of endometrium with "
            "heterologous differentiation"
        )["carcinosarcoma"]
    )
    assert (
        "mixed"
        not in notes(
            "Uterus, hysterectomy: endometrioid adenocarcinoma; no squamous component identified."
        )["endometrioid adenocarcinoma"]
    )
    assert (
        "mixed"
        in notes("Diagnosis: adenocarcinoma with a neuroendocrine component.")["adenocarcinoma"]
    )


def test_lymph_node_metastasis_named_as_such_is_a_node_status() -> None:
    def status(text: str) -> list[str]:
        return [v for _, slot, _, v in facts(text, "node_status") if slot == "node_status"]

    assert status("Adenocarcinoma of the colon. Lymph node metastases (3., 6.).") == ["positive"]
    assert status("Adenocarcinoma of the colon.\nNodal metastasis: present.") == ["positive"]
    assert set(status("Adenocarcinoma. No evidence for lymph node metastases.")) == {"negative"}
    assert set(status("Adenocarcinoma.\nNodal metastases: not identified.")) == {"negative"}
    # a count, a property of the metastasis, a category's definition: no status of their own
    assert status("Adenocarcinoma.\nLymph node metastases: 2") == []
    assert status("Extracapsular spread of N1 lymph node metastases: not applicable") == []
    assert status("Extracapsular extension of lymph node metastasis is identified.") == []
    assert (
        status(
            "The tumor is classified as peritoneal metastasis beyond the pelvis or regional lymph "
            "node metastasis (T3c)."
        )
        == []
    )


def test_a_new_there_is_clause_leaves_the_margin_subject_behind() -> None:
    got = facts(
        "Adenocarcinoma of lung. The surgical margins were uninvolved by tumor and there was no "
        "evidence of lymphatic or venous invasion."
    )
    assert ("case · tumour", "invasion", "lymphatic", "absent") in got
    assert ("case · tumour", "invasion", "venous", "absent") in got
    assert ("case · margin", "margin", "", "free") in got


def test_a_station_from_a_part_title_drops_the_procedure_and_the_part_letter() -> None:
    from pathgls.text.case.subjects import clean_name

    assert clean_name("Left pelvic lymphadenectomy K", station=True) == "left pelvic"
    assert clean_name("right obturator excision", station=True) == "right obturator"
    assert clean_name("Left pelvic lymphadenectomy K") == "left pelvic lymphadenectomy k"
    assert clean_name("para-aortic", station=True) == "para aortic"


def test_a_structure_named_by_its_adjective_is_read() -> None:
    got = facts(
        "Urothelial carcinoma in situ involving prostatic ducts, no prostatic stromal\n"
        "invasion identified."
    )
    assert ("case · tumour", "extent", "prostatic stroma", "absent") in got
