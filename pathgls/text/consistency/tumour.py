"""Consistency checks on the tumour: grade, behaviour, where metastases come from, stage.

* grade — two grades of one lesion on one grading axis that cannot both hold ("Grade 1,
  poorly differentiated"; Gleason 3+3 with Grade Group 4); a clause that describes a mixed
  tumour ("areas", "component", "focally") states no conflict;
* benign_vs_malignant — a benign diagnosis where the report also states findings only a
  malignancy has (invasion, lymphovascular or perineural invasion, nodal metastasis, a TNM
  stage) and no malignant diagnosis of that tissue explains them;
* unsupported_metastasis — a metastasis of a tumour type that none of the report's primary
  malignancies can give ("metastatic melanoma" in the nodes of a breast carcinoma);
* stage — pN0 with positive nodes, N+ with only negative nodes, M0 with a distant metastasis,
  and a pT category that the stated tumour size rules out where size alone defines it (breast
  T1–T3, lung T1–T3 upper limits, kidney T1–T2).
"""

from __future__ import annotations

import dataclasses
import re

from pathgls.text.consistency.findings import node_negative, node_positive
from pathgls.text.consistency.hits import CheckHit, CheckWeights, hit
from pathgls.text.consistency.statements import DIAGNOSIS_TYPES, ReportStatements, Statement
from pathgls.types import Scope

_MIXED = re.compile(
    r"\b(?:areas?|components?|focal(?:ly)?|foci|focus|mixed|admixed|predominant(?:ly)?"
    r"|portions?|regions?|parts?|zones?|heterogeneous|varying|ranging|range|transition"
    r"|dedifferentiat\w*|minor|major)\b",
    re.I,
)
_LEVELS = {
    "well differentiated": (1, 1),
    "well to moderately differentiated": (1, 2),
    "moderately differentiated": (2, 2),
    "moderately to poorly differentiated": (2, 3),
    "poorly differentiated": (3, 3),
    "undifferentiated": (3, 3),
    "low grade": (1, 2),
    "intermediate grade": (2, 2),
    "high grade": (2, 3),
    "low nuclear grade": (1, 1),
    "intermediate nuclear grade": (2, 2),
    "high nuclear grade": (3, 3),
}
_FOUR_TIER = frozenset({"fuhrman", "who", "isup", "who/isup"})
_AXIS_FAMILY = {"differentiation": "d", "tier": "d", "nuclear": "n", "four_tier": "4"}


def grade_axis(s: Statement) -> str | None:
    """The grading axis of a grade statement: differentiation, tier, nuclear, four_tier or
    gleason (None when it cannot be told)."""
    if s.attr("gleason_score") or s.attr("grade_group") or s.attr("system") == "gleason":
        return "gleason"
    text = s.entity.text.lower()
    if "nucle" in s.concept or "nucle" in text:
        return "nuclear"
    if s.attr("system") in _FOUR_TIER or s.attr("grade_scale") == "4":
        return "four_tier"
    if s.concept.endswith("differentiated") or s.concept == "histologic grade":
        return "differentiation"
    if s.concept in ("low grade", "intermediate grade", "high grade"):
        return "tier"
    return None


_TIER_EXACT = {"low grade": (1, 1), "intermediate grade": (2, 2), "high grade": (3, 3)}


def grade_levels(s: Statement, axis: str) -> tuple[int, int] | None:
    """The grade as an interval of levels on its axis (1 low … 3 high; Gleason: grade group).

    A two-tier word ("high grade") spans two of the three levels of a differentiation scale;
    against another tier word it is exact (:data:`_TIER_EXACT`)."""
    if axis == "gleason":
        gg = s.attr("grade_group")
        return (int(gg), int(gg)) if gg else None
    number = s.attr("grade_number")
    if number and axis != "tier":
        return int(number), int(number)
    return _LEVELS.get(s.concept)


def _lesion_key(rs: ReportStatements, s: Statement) -> str:
    """What a grade is said of: an in-situ lesion by name, else the report's malignancy."""
    lesion = s.scope.lesion
    behaviours = {d.concept: d.attr("behavior") for d in rs.of_types(*DIAGNOSIS_TYPES) if d.concept}
    if lesion and behaviours.get(lesion) in ("in_situ", "premalignant", "benign_neoplasm"):
        return lesion
    return "main"


def _organ(rs: ReportStatements, s: Statement) -> str | None:
    if s.scope.organ:
        return s.scope.organ
    for d in rs.of_types(*DIAGNOSIS_TYPES):
        if d.concept == s.scope.lesion and d.scope.organ:
            return d.scope.organ
    return None


def check_grade(rs: ReportStatements, w: CheckWeights) -> list[CheckHit]:
    """Two grades of one lesion on one axis whose levels do not overlap."""
    grades = []
    for s in rs.of_types("grade"):
        axis = grade_axis(s)
        levels = grade_levels(s, axis) if axis else None
        if s.affirmed and axis and levels and not _MIXED.search(rs.clause_text(s)):
            grades.append((s, axis, levels, _lesion_key(rs, s), _organ(rs, s)))
    hits = []
    for s in rs.of_types("grade"):
        stated = s.attr("gleason_sum_stated")
        if stated and s.certain:  # "Gleason 4+5 (total score 7)"
            why = (
                f"'{s.entity.text}': the patterns add up to {s.attr('gleason_score')}, not {stated}"
            )
            hits.append(hit("grade", w.grade_opposite, s, s, why))
    for i, (a, ax_a, la, key_a, org_a) in enumerate(grades):
        for b, ax_b, lb, key_b, org_b in grades[i + 1 :]:
            family_a = "g" if ax_a == "gleason" else _AXIS_FAMILY[ax_a]
            family_b = "g" if ax_b == "gleason" else _AXIS_FAMILY[ax_b]
            if family_a != family_b or key_a != key_b:
                continue
            if org_a and org_b and org_a != org_b:
                continue
            if a.scope.part != b.scope.part and None not in (a.scope.part, b.scope.part):
                continue
            if ax_a == ax_b == "tier":
                la, lb = _TIER_EXACT[a.concept], _TIER_EXACT[b.concept]
            gap = max(la[0], lb[0]) - min(la[1], lb[1])
            if gap <= 0:
                continue
            p = w.grade_opposite if gap >= 2 and family_a != "g" else w.grade_adjacent
            why = f"'{a.entity.text}' and '{b.entity.text}' grade the same lesion differently"
            hits.append(hit("grade", p, a, b, why))
    return hits


def _malignant_only(s: Statement) -> bool:
    """A finding that only a malignancy has (invasion, LVI, PNI, nodal tumour, a TNM stage)."""
    if not s.affirmed:
        return False
    if s.type in ("lymphovascular_invasion", "perineural_invasion"):
        return True
    if s.type == "morphology_finding":
        return s.attr("group") in ("invasion", "extranodal_extension")
    if s.type == "stage":
        return bool(s.attr("t") or s.attr("n")) and s.attr("t") not in ("Tis", "T0")
    if s.type == "grade":
        return grade_axis(s) == "gleason"  # Gleason grades carcinoma only
    return node_positive(s)


def _malignant_descriptor(s: Statement) -> bool:
    """ "invasive" / "metastatic" said of a lesion."""
    return (
        s.type == "diagnosis_descriptor"
        and s.affirmed
        and (s.attr("invasive") == "yes" or s.attr("group") == "metastasis")
    )


def _sans_lesion(scope: Scope) -> Scope:
    return dataclasses.replace(scope, lesion=None, quantifier=None)


def check_benign_vs_malignant(rs: ReportStatements, w: CheckWeights) -> list[CheckHit]:
    """A benign diagnosis where findings only a malignancy has are stated and no malignant
    diagnosis of that tissue explains them, or where they are said of the benign lesion itself
    ("invasive squamous papilloma")."""
    diagnoses = [s for s in rs.of_types(*DIAGNOSIS_TYPES) if s.affirmed]
    # what explains invasion or nodal tumour is a primary malignancy, not the metastasis itself
    malignant = [
        s
        for s in diagnoses
        if s.attr("behavior") == "malignant"
        and s.scope.station is None
        and "metastasis" not in s.attrs("depends_on")
    ]
    benign = [s for s in diagnoses if s.attr("behavior") == "benign_neoplasm"]
    if not malignant:  # a benign process alone is the diagnosis only when nothing is malignant
        benign += [s for s in diagnoses if s.attr("behavior") == "benign_process"]
    hits = []
    for b in benign:
        for d in rs.statements:
            if _malignant_descriptor(d) and d.scope.lesion == b.concept and d.clause == b.clause:
                why = f"'{d.entity.text}' said of benign '{b.entity.text}'"
                hits.append(hit("benign_vs_malignant", w.benign_vs_malignant, b, d, why))
    for m in (s for s in rs.statements if _malignant_only(s)):
        scope = _sans_lesion(m.scope)
        if any(scope.compatible(_sans_lesion(d.scope)) for d in malignant):
            continue
        for b in benign:
            if scope.compatible(_sans_lesion(b.scope)):
                why = f"benign '{b.entity.text}' but '{m.entity.text}' (only in malignancy)"
                hits.append(hit("benign_vs_malignant", w.benign_vs_malignant, b, m, why))
                break
    return hits


_BACKGROUND = re.compile(
    r"\b(?:background|adjacent|surrounding|uninvolved|non-?neoplastic|normal|remaining)\b", re.I
)


#: Atypia or pleomorphism of any degree: denying one of them is describing benign cytology.
_ANY_ATYPIA = frozenset({"nuclear atypia", "nuclear pleomorphism"})


def check_benign_morphology(rs: ReportStatements, w: CheckWeights) -> list[CheckHit]:
    """Cytology only a benign lesion has ("no atypia", "no pleomorphism") said of the tissue a
    carcinoma is diagnosed in (not of the background: "adjacent breast tissue without atypia")."""
    evidence = [
        s
        for s in rs.statements
        if s.denied
        and s.concept in _ANY_ATYPIA  # "no high-grade atypia" leaves low-grade atypia possible
        and not _BACKGROUND.search(rs.clause_text(s))
    ]
    carcinomas = [
        d
        for d in rs.of_types(*DIAGNOSIS_TYPES)
        if d.affirmed and d.attr("behavior") == "malignant" and d.attr("lineage") == "epithelial"
    ]
    hits = []
    for d in carcinomas:
        covering = [e for e in evidence if _sans_lesion(e.scope).covers(_sans_lesion(d.scope))]
        if covering:
            p = w.benign_morphology_strong if len(covering) >= 2 else w.benign_morphology
            what = ", ".join(f"'{e.entity.text}' (denied)" for e in covering)
            why = f"benign cytology ({what}) but '{d.entity.text}'"
            hits.append(hit("benign_morphology", p, covering[0], d, why))
    return hits


_FRAME = re.compile(
    r"\b(?:diagnos\w*|consistent\s+with|compatible\s+with|in\s+keeping\s+with|represents?"
    r"|confirm\w*)\b[^.;]{0,40}$",
    re.I,
)
_DEFINITE_LESION = re.compile(
    r"\bthe\s+(?:[\w.]+\s+){0,3}?(?:tumou?r|mass|lesion|nodule|neoplasm)(?:\s+itself)?\s+"
    r"(?:is|was|represents|proved|proves)\b[^.;]{0,30}$",
    re.I,
)
_COEXIST = re.compile(
    r"\b(?:also|additional(?:ly)?|incidental(?:ly)?|separate(?:ly)?|background|adjacent"
    r"|in\s+addition|coexist\w*|concomitant|associated|arising|another|second|other)\b",
    re.I,
)
_NOT_MALIGNANT = ("benign_neoplasm", "benign_process", "premalignant")


def check_benign_diagnosis(rs: ReportStatements, w: CheckWeights) -> list[CheckHit]:
    """The lesion called benign while the report diagnoses it as a malignancy: the tumour
    itself named benign ("the mass itself is a fibroadenoma", "the lesion is benign"), a
    benign or premalignant diagnosis given as *the* diagnosis ("diagnosed as", "consistent
    with"), or a benign tumour of the very kind the malignancy is (a lipoma where a
    liposarcoma is diagnosed) without a word that they coexist."""
    primary = primaries(rs)
    malignant = [p for p in primary if p.attr("behavior") == "malignant"]
    if not malignant:
        return []
    hits = []
    candidates = [
        s
        for s in rs.statements
        if s.affirmed
        and s.attr("behavior") in _NOT_MALIGNANT
        and s.type in (*DIAGNOSIS_TYPES, "diagnosis_descriptor")
        and s.scope.quantifier != "partial"
        and s.attr("state") != "normal"  # "benign ureter", "proliferative endometrium": tissue
    ]
    for b in candidates:
        if any(m.clause == b.clause for m in malignant) or _COEXIST.search(rs.clause_text(b)):
            continue
        before = rs.text[b.clause[0] : b.entity.start]
        same_kind = [
            m
            for m in malignant
            if b.attr("behavior") == "benign_neoplasm"
            and b.attr("lineage")
            and b.attr("lineage") == m.attr("lineage")
            and same_tumour_type(b, m)
        ]
        if _DEFINITE_LESION.search(before):
            reason, p, pool = "the tumour itself is called", w.benign_vs_malignant, malignant
        elif b.type in DIAGNOSIS_TYPES and _FRAME.search(before):
            reason, p, pool = "the diagnosis is given as", w.benign_diagnosis, malignant
        elif same_kind:
            reason, p, pool = "a benign tumour of the same kind:", w.benign_same_kind, same_kind
        else:
            continue
        for m in pool:
            if _organs_meet(rs, b, m) and b.scope.part in (None, m.scope.part):
                why = f"{reason} '{b.entity.text}' but '{m.entity.text}' is diagnosed"
                hits.append(hit("benign_vs_malignant", p, b, m, why))
                break
    return hits


def _organs_meet(rs: ReportStatements, a: Statement, b: Statement) -> bool:
    oa, ob = _organ(rs, a), _organ(rs, b)
    return oa is None or ob is None or bool(set(oa.split("|")) & set(ob.split("|")))


_HISTOTYPES = (
    ("squamous", re.compile(r"squamous|epidermoid")),
    ("urothelial", re.compile(r"urothelial|transitional")),
    ("hepatocellular", re.compile(r"hepatocellular|hepatoma")),
    ("renal", re.compile(r"renal cell|clear cell renal|chromophobe")),
    ("melanocytic", re.compile(r"melanoma")),
    ("neuroendocrine", re.compile(r"neuroendocrine|small cell|carcinoid")),
    ("germ_cell", re.compile(r"seminoma|germ cell|yolk sac|teratoma|choriocarcinoma|embryonal")),
    ("lymphoid", re.compile(r"lymphoma|leukemia|myeloma")),
    ("mesenchymal", re.compile(r"sarcoma|stromal tumor")),
    ("mesothelial", re.compile(r"mesothelioma")),
    (
        "glandular",
        re.compile(
            r"adenocarcinoma|ductal|lobular|acinar|mucinous|endometrioid|serous|signet"
            r"|papillary thyroid|follicular carcinoma|cholangio"
        ),
    ),
)


def histotype(s: Statement) -> str | None:
    """The tumour type a diagnosis names (squamous, glandular, urothelial, ...), if any."""
    for name, pattern in _HISTOTYPES:
        if pattern.search(s.concept):
            return name
    return None


_ORIGINS = (
    ("thyroid", re.compile(r"thyroid")),
    ("breast", re.compile(r"\bbreast|mammary|ductal carcinoma|lobular carcinoma")),
    ("lung", re.compile(r"\blung|pulmonary|bronchioloalveolar")),
    ("colon", re.compile(r"colonic|colorectal|\bcolon|rectal")),
    ("stomach", re.compile(r"gastric|stomach")),
    ("prostate", re.compile(r"prostat")),
    ("kidney", re.compile(r"renal cell|clear cell renal|\brenal")),
    ("liver", re.compile(r"hepatocellular|hepatic")),
    ("gynecologic", re.compile(r"ovarian|endometri|mullerian|müllerian|fallopian|serous")),
    ("urinary tract", re.compile(r"urothelial|transitional")),
    ("pancreas", re.compile(r"pancrea")),
)


def origin(s: Statement) -> str | None:
    """The organ a tumour's name says it comes from ("papillary thyroid carcinoma": thyroid)."""
    name = f"{s.concept} {s.entity.text.lower()}"
    return next((o for o, pattern in _ORIGINS if pattern.search(name)), None)


def same_tumour_type(a: Statement, b: Statement) -> bool:
    """Whether two diagnoses can name the same tumour (nothing in their names says otherwise)."""
    la, lb = a.attr("lineage"), b.attr("lineage")
    if la and lb and la != lb:
        return False
    ha, hb = histotype(a), histotype(b)
    if ha is not None and hb is not None and ha != hb:
        return False
    oa, ob = origin(a), origin(b)
    return oa is None or ob is None or oa == ob


def primaries(rs: ReportStatements) -> list[Statement]:
    """The affirmed, named primary malignancies (in situ included) of the report."""
    return [
        s
        for s in rs.of_types(*DIAGNOSIS_TYPES)
        if s.affirmed
        and not s.generic
        and s.attr("behavior") in ("malignant", "in_situ")
        and "metastasis" not in s.attrs("depends_on")
    ]


def check_unsupported_metastasis(rs: ReportStatements, w: CheckWeights) -> list[CheckHit]:
    """A metastasis of a tumour type that none of the report's primaries can give, or two
    metastases of different origin said of the same tissue."""
    primary = primaries(rs)
    metastases = [
        m
        for m in rs.of_types(*DIAGNOSIS_TYPES)
        if m.affirmed and "metastasis" in m.attrs("depends_on")
    ]
    hits = []
    for m in metastases:
        if not primary or any(same_tumour_type(m, p) and _origin_fits(m, p) for p in primary):
            continue
        names = ", ".join(sorted({p.entity.text for p in primary}))
        why = f"'{m.entity.text}' but the report diagnoses only {names}"
        hits.append(hit("unsupported_metastasis", w.unsupported_metastasis, m, primary[0], why))
    if not primary:  # metastases only: they must at least come from one place
        for i, a in enumerate(metastases):
            for b in metastases[i + 1 :]:
                oa, ob = origin(a), origin(b)
                if oa and ob and oa != ob:
                    why = f"'{a.entity.text}' and '{b.entity.text}' come from different organs"
                    hits.append(hit("unsupported_metastasis", w.unsupported_metastasis, a, b, why))
    return hits


def _origin_fits(m: Statement, p: Statement) -> bool:
    """A metastasis naming its organ of origin fits a primary of that organ (by name or place)."""
    om = origin(m)
    where = origin(p) or p.attr("site") or p.scope.organ
    return om is None or where is None or om in where or where in om


#: pT categories that size alone decides, as (above, at most) in mm, in both AJCC 7th and 8th
#: editions: breast T1–T3; lung T1 and the upper limit of T2 (7th: T2 ≤ 7 cm); kidney T1–T2.
_T_BY_SIZE = {
    "breast": {"T1": (0, 20), "T2": (20, 50), "T3": (50, None)},
    "lung": {"T1": (None, 30), "T2": (None, 70)},
    "kidney": {"T1": (None, 70), "T2": (70, None)},
}
#: Words that make a size something other than the tumour's (a specimen, a depth, a distance).
_SPECIMEN_BEFORE = re.compile(
    r"\b(?:specimen|lobectomy|mastectomy|resection|excision|wall|fragment|node|nodes)\b", re.I
)
_NOT_TUMOUR_NEAR = re.compile(r"\b(?:depth|deep|thick|thickness|from|distance|margin|away)\b", re.I)
_TUMOUR_WORDS = re.compile(
    r"\b(?:tumou?r|mass|carcinoma|nodule|lesion|neoplasm|focus|foci)\b", re.I
)


def _tumour_sizes(rs: ReportStatements) -> list[Statement]:
    """Sizes said of the tumour: next to a tumour word or a malignant diagnosis, not of a
    specimen ("lobectomy specimen measures ..."), a depth, a distance or a node."""
    out = []
    malignant = [
        d for d in rs.of_types(*DIAGNOSIS_TYPES) if d.affirmed and d.attr("behavior") == "malignant"
    ]
    for s in rs.of_types("size"):
        if s.scope.station is not None or s.scope.locus is not None:
            continue
        lo = max(s.clause[0], s.entity.start - 60)
        before = rs.text[lo : s.entity.start]
        around = rs.text[
            max(s.clause[0], s.entity.start - 25) : min(s.clause[1], s.entity.end + 25)
        ]
        if _NOT_TUMOUR_NEAR.search(around):
            continue
        specimen = [m.end() for m in _SPECIMEN_BEFORE.finditer(before)]
        tumour = [m.end() for m in _TUMOUR_WORDS.finditer(before)]
        tumour += [d.entity.end - lo for d in malignant if lo <= d.entity.end <= s.entity.start]
        if tumour and (not specimen or max(tumour) > max(specimen)):
            out.append(s)
    return out


def report_organ(rs: ReportStatements) -> str | None:
    """The organ the report is about: its first malignancy's, else its first diagnosis'."""
    ranked = sorted(
        (d for d in rs.of_types(*DIAGNOSIS_TYPES) if d.affirmed and d.scope.organ),
        key=lambda d: (d.attr("behavior") != "malignant", d.entity.start),
    )
    return ranked[0].scope.organ if ranked else None


_CONFINED = re.compile(
    r"\b(?:confined\s+to|limited\s+to)\s+the\s+(?P<organ>prostate|kidney|gland|organ)\b", re.I
)
#: T categories that a tumour "confined to" its organ cannot have.
_BEYOND_ORGAN = {"prostate": ("T3", "T4"), "kidney": ("T3", "T4")}


def check_stage(rs: ReportStatements, w: CheckWeights) -> list[CheckHit]:
    """The report's TNM stage against its own nodes, metastases and tumour size."""
    stages = [s for s in rs.of_types("stage") if s.affirmed]
    if not stages:
        return []
    primary = primaries(rs)
    nodal = [s for s in rs.statements if s.scope.station is not None]
    positives = [s for s in nodal if node_positive(s)]
    negatives = [s for s in nodal if node_negative(s) and s.scope.quantifier != "partial"]
    sizes = _tumour_sizes(rs)
    hits = []
    for t in stages:
        # the report's organ stands for the stage's only when the report has one kind of primary
        one_kind = all(same_tumour_type(a, b) for a in primary for b in primary)
        organs = {p.scope.organ for p in primary} - {None}
        organ = t.scope.organ or (report_organ(rs) if one_kind and len(organs) <= 1 else None)
        own = (
            [p for p in primary if p.scope.organ == organ]
            or [p for p in primary if p.scope.organ is None]
            or primary
        )

        def relevant(node: Statement, own: list[Statement] = own) -> bool:
            named = [
                d
                for d in rs.of_types(*DIAGNOSIS_TYPES)
                if d.sentence == node.sentence and not d.generic and d.affirmed
            ]
            return not named or not own or any(same_tumour_type(d, p) for d in named for p in own)

        n = t.attr("n")
        if n.startswith("N0"):
            # positive nodes another stage of the report accounts for (two primaries) are not
            # this stage's
            other_n_plus = [
                o
                for o in stages
                if o.attr("n")[:2] in ("N1", "N2", "N3") and o.scope.organ != t.scope.organ
            ]
            for p in positives if not other_n_plus else ():
                if relevant(p) and t.scope.part in (None, p.scope.part):
                    why = f"stage {n} but tumour in nodes ('{p.entity.text}')"
                    hits.append(hit("stage", w.stage_nodes, t, p, why))
                    break
        elif n[:2] in ("N1", "N2", "N3") and negatives and not positives:
            neg = negatives[0]
            why = f"stage {n} but the nodes are negative ('{neg.entity.text}')"
            hits.append(hit("stage", w.stage_nodes, t, neg, why))
        hits += _stage_pair(rs, t, stages, len(primary), w)
        hits += _stage_self(t, w)
        hits += _stage_invasion(rs, t, w)
        hits += _stage_confined(rs, t, organ, w)
        hits += _stage_metastasis(rs, t, w)
        hits += _stage_size(t, organ, sizes, w)
    return hits


def _stage_self(t: Statement, w: CheckWeights) -> list[CheckHit]:
    """A stage that contradicts its own node count ("pSN1 (0/2)", "pN0 (2/14)")."""
    n, k = t.attr("n"), t.attr("n_positive")
    if not n or not k:
        return []
    if (n.startswith("N0") and int(k) > 0) or (n[:2] in ("N1", "N2", "N3") and int(k) == 0):
        why = f"stage {n} with {k} of {t.attr('n_total')} nodes positive"
        return [hit("stage", w.stage_nodes, t, t, why)]
    return []


def _stage_invasion(rs: ReportStatements, t: Statement, w: CheckWeights) -> list[CheckHit]:
    """pTis (in situ) while invasion is stated."""
    if t.attr("t") != "Tis":
        return []
    for s in rs.statements:
        invasive = s.attr("invasive") == "yes" or s.attr("group") in ("invasion", "lvi")
        if s.affirmed and invasive and t.scope.compatible(s.scope):
            why = f"stage pTis (in situ) but '{s.entity.text}'"
            return [hit("stage", w.stage_nodes, t, s, why)]
    return []


def _stage_confined(
    rs: ReportStatements, t: Statement, organ: str | None, w: CheckWeights
) -> list[CheckHit]:
    """pT3/pT4 of the prostate or kidney while the tumour is "confined to" the organ."""
    category = t.attr("t")[:2]
    for m in _CONFINED.finditer(rs.text):
        named = m.group("organ").lower()
        named = organ if named in ("gland", "organ") else named
        if named != organ or category not in _BEYOND_ORGAN.get(named or "", ()):
            continue
        near = [s for s in rs.statements if s.clause[0] <= m.start() < s.clause[1]]
        if near:
            why = f"stage {t.attr('t')} but the tumour is '{m.group(0)}'"
            return [hit("stage", w.stage_size, t, near[0], why)]
    return []


def _stage_pair(
    rs: ReportStatements, t: Statement, stages: list[Statement], n_primary: int, w: CheckWeights
) -> list[CheckHit]:
    """Two TNM stages of one tumour that disagree (pT2 here, pT3 there; pN0 and pN1)."""
    hits = []
    for o in stages:
        if o.entity.start <= t.entity.start or o.scope.part != t.scope.part:
            continue
        same = (t.scope.organ and t.scope.organ == o.scope.organ) or (
            n_primary <= 1 and None in (t.scope.organ, o.scope.organ)
        )
        if not same:
            continue
        for key in ("t", "n", "m"):
            a, b = t.attr(key)[:2].upper(), o.attr(key)[:2].upper()
            if a and b and "X" not in (a[1:], b[1:]) and a != b:
                why = f"stage {t.attr(key)} here, {o.attr(key)} there"
                hits.append(hit("stage", w.stage_size, t, o, why))
                break
    return hits


def _stage_metastasis(rs: ReportStatements, t: Statement, w: CheckWeights) -> list[CheckHit]:
    m = t.attr("m")
    for s in rs.of_types("metastasis"):
        if s.concept != "distant metastasis" or not s.certain:
            continue
        if m == "M0" and s.affirmed:
            why = f"stage M0 but '{s.entity.text}'"
            return [hit("stage", w.stage_metastasis, t, s, why)]
        if m.startswith("M1") and s.denied:
            why = f"stage {m} but '{s.entity.text}'"
            return [hit("stage", w.stage_metastasis, t, s, why)]
    return []


def _stage_size(
    t: Statement, organ: str | None, sizes: list[Statement], w: CheckWeights
) -> list[CheckHit]:
    table = _T_BY_SIZE.get(organ or "")
    category = re.match(r"T[1-4]", t.attr("t"))
    if table is None or category is None or category.group() not in table or not sizes:
        return []
    low, high = table[category.group()]
    largest = max(sizes, key=lambda s: float(s.attr("value_mm") or 0))
    mm = float(largest.attr("value_mm") or 0)
    if (high is not None and mm > high) or (low is not None and mm <= low):
        why = f"{t.attr('t')} of the {organ} but a tumour of {mm:g} mm ('{largest.entity.text}')"
        return [hit("stage", w.stage_size, t, largest, why)]
    return []
