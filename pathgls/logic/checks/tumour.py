"""Checks on the tumour: behaviour, type, side, site, size and grade.

Each compares facts of the same target (:meth:`CaseView.same`) and says why a pair conflicts.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from typing import Literal

from pathgls.config import CheckWeights
from pathgls.logic.checks.base import CaseView, Comparison, compared, conflict
from pathgls.text.case import Fact, Target, compatible_types

_MALIGNANT = frozenset({"malignant"})


def check_behaviour(view: CaseView, w: CheckWeights) -> Iterator[Comparison]:
    """Malignant against benign, invasive against non-invasive, for the same tumour.

    * a part (or a report without parts) said to hold no tumour while its diagnosis is a
      malignancy ("no carcinoma", "negative for malignancy" of the part itself);
    * the tumour called benign (or given a benign diagnosis: "the mass is a benign leiomyoma")
      while it is diagnosed malignant;
    * the tumour called non-invasive ("no invasion", "in situ only", "no invasive carcinoma")
      while it is an invasive type, said to invade, or involves a structure.
    """
    dx = view.facts("behaviour", kind="tumour")
    malignant = [
        f
        for f in dx
        if (f.value in ("malignant",) and f.key != "invasive") or (f.value == "malignant")
    ]
    for p in view.facts("presence", kind="part"):
        if p.note in ("residual",) or _unanchored(view, p):
            continue
        for d in malignant:
            if d.target.part == p.target.part and d.value in ("malignant", "in_situ"):
                yield conflict(
                    "behaviour",
                    w.behaviour,
                    p,
                    d,
                    f"no tumour in {'part ' + p.target.part if p.target.part else 'the specimen'} "
                    f"('{view.text(p)}') against its diagnosis '{view.text(d)}'",
                )
    benign = [
        f
        for f in dx
        if f.value in ("benign", "premalignant") and ("copula" in f.note or f.key == "")
    ]
    benign = [
        f for f in benign if "copula" in f.note or (f.slot == "behaviour" and not _type_of(view, f))
    ]
    # a benign diagnosis and "no malignancy" of the same part agree: a checked pair
    for a in (f for f in dx if f.value == "benign" and f.certain):
        for p in view.facts("presence", kind="part"):
            if p.target.part == a.target.part and p.statement != a.statement:
                yield compared("behaviour", a, p)
    for a in benign:
        for d in malignant:
            if view.same(a.target, d.target) and a.statement != d.statement:
                yield conflict(
                    "behaviour",
                    w.behaviour,
                    a,
                    d,
                    f"the tumour is called benign ('{view.text(a)}') and "
                    f"malignant ('{view.text(d)}')",
                )
    denials = [f for f in dx if f.key == "invasive" and f.value == "absent"]
    if not denials:
        return
    invasive = [f for f in dx if f.key == "invasive" and f.value in ("malignant", "present")]
    invasive += [f for f in view.facts("extent", kind="tumour") if f.value == "present"]
    # vessels or nerves invaded: only an invasive tumour does that
    invasive += [
        f
        for f in view.facts("invasion", kind="tumour")
        if f.value == "present" and f.key in ("lymphovascular", "lymphatic", "venous", "perineural")
    ]
    # pT1-pT4 stage an invasive tumour (Tis and Ta do not)
    invasive += [
        f
        for f in view.facts("stage", kind="tumour", key="T")
        if re.match(r"T[1-4]", str(f.value)) and f.certain and view.carcinoma(f.target)
    ]
    for a in denials:
        for b in invasive:
            if b.slot == "stage" and _item_of_another_part(view, a):
                continue
            if b.slot == "invasion" and (
                a.target.part != b.target.part or _bare_invasion_denial(view, a)
            ):
                continue  # vessel invasion of the part's tumour, a denial elsewhere
            if (
                a.target.part is not None
                and a.target.part not in view.tumour_parts
                and b.target.part != a.target.part
            ):
                continue  # "no invasive malignancy" in the ureter's part, not the tumour's
            if view.same(a.target, b.target) and a.statement != b.statement:
                yield conflict(
                    "behaviour",
                    w.behaviour,
                    a,
                    b,
                    f"the tumour is called non-invasive ('{view.text(a)}') but '{view.text(b)}'",
                )


#: A statement that is nothing but a denial: "NO TUMOR SEEN.", "- Negative for malignancy".
_BARE_DENIAL = re.compile(
    r"[\W\d_]*(?:no|not|negative|free|without|absence|there\s+is\s+no)\b", re.I
)
#: "Invasive carcinoma is not identified.": a denial whose only subject is what it denies.
_INVASIVE_NOT = re.compile(
    r"[\W\d_]*invasive\s+(?:carcinoma|tumou?r|malignancy|neoplasm)\s+(?:is|was)\s+not\b", re.I
)
#: Labels of a checklist line whose value is the part's own diagnosis.
_DIAGNOSIS_LABEL = re.compile(r"(?:final\s+)?diagnos[ie]s|interpretation|result|impression", re.I)


def _unanchored(view: CaseView, p: Fact) -> bool:
    """A part-level "no tumour" that names no subject: a bare denial line ("NO EVIDENCE OF
    MALIGNANCY") in a report of several specimens, or one under a label that names another
    tissue ("Prostate: No carcinoma" in a cystoprostatectomy). Which specimen such a line speaks
    of rests on where the parser put it (an unrecognised part heading moves it), so it is never
    set against a diagnosis."""
    s = view.case.document.statements[p.statement]
    if s.label is not None:
        return not _DIAGNOSIS_LABEL.fullmatch(s.label.strip())
    text = view.case.document.statement_text(s)
    if re.search(r"\b(?:part|specimen|container)\s+#?\w{1,3}\b", text, re.I):
        return False  # "No neoplasm is present in part A.": it says which specimen
    if not view.several_parts:
        return False  # one specimen: the line can only be about it
    return bool(_BARE_DENIAL.match(text))


def _bare_invasion_denial(view: CaseView, f: Fact) -> bool:
    """ "Invasive carcinoma is not identified." in a report of several specimens: which one it
    speaks of is where the parser put it."""
    if not view.several_parts:
        return False
    text = view.case.sentence(f.statement)
    return bool(_BARE_DENIAL.match(text) or _INVASIVE_NOT.match(text))


def _item_of_another_part(view: CaseView, f: Fact) -> bool:
    """A statement numbered like a part that holds no tumour ("7. This is ureter which shows no
    carcinoma in situ or invasive malignancy", part 7 the ureteric margin), even where the
    document did not file the line under that part."""
    s = view.case.document.statements[f.statement]
    text = view.case.document.text
    # the item a statement belongs to: the last labelled line before it, in the same block
    window = text[max(0, s.start - 600) : s.start]
    items = list(re.finditer(r"(?:^|\n)[ \t]*([A-Z]|\d{1,2})\s?[.)]\s", window))
    if not items or re.search(r"\n[ \t]*\n", window[items[-1].end() :]):
        return False
    label = items[-1].group(1)
    return label in view.case.parts and label not in view.tumour_parts


def _type_of(view: CaseView, f: Fact) -> bool:
    """Whether a behaviour fact was read with a type (it then comes from the type's name)."""
    return any(
        t.slot == "type" and t.statement == f.statement and t.start == f.start
        for t in view.case.facts
    )


def check_metastasis(view: CaseView, w: CheckWeights) -> Iterator[Comparison]:
    """Metastases of a tumour type the report never diagnoses ("metastatic melanoma" in the
    nodes of a breast carcinoma), when the report names one primary tumour."""
    if view.primaries != 1:
        return
    mains = [f for f in view.facts("type", kind="tumour") if _is_malignant(view, f)]
    for m in view.facts("metastasis"):
        for t in mains:
            ok = _same_lineage(t.value, m.value)
            if ok is None:
                continue
            if ok:
                yield compared("metastasis", t, m)
            else:
                yield conflict(
                    "metastasis",
                    w.type,
                    t,
                    m,
                    f"metastatic {m.value} ('{view.text(m)}') but the tumour is '{view.text(t)}'",
                )
            break


def _same_lineage(a: str, b: str) -> bool | None:
    """Whether two types share their lineage (carcinoma, melanoma, lymphoma, sarcoma, glial …):
    an adenocarcinoma spreading from a urothelial carcinoma is odd, a melanoma is another tumour."""
    from pathgls.text.case.vocab import vocabulary

    fa, fb = vocabulary().family(a), vocabulary().family(b)
    if fa is None or fb is None:
        return None
    la, lb = set(fa.split("/")[0].split("+")), set(fb.split("/")[0].split("+"))
    return bool(la & lb)


def _is_malignant(view: CaseView, f: Fact) -> bool:
    return any(
        g.slot == "behaviour" and g.start == f.start and g.value == "malignant"
        for g in view.case.facts
    )


_MALIGNANT_ONLY = ("invasion", "extent")
_MALIGNANT_WORDS = re.compile(
    r"carcinoma|sarcoma|lymphoma|melanoma|malignan|cancer|metasta|neoplasm|tumou?r|blastoma|"
    r"glioma|leukemia|myeloma|mesothelioma|seminoma",
    re.I,
)


def check_benign(view: CaseView, w: CheckWeights) -> Iterator[Comparison]:
    """A report whose only diagnosis is benign, with findings only a malignancy has
    (lymphovascular or perineural invasion, invasion of a structure, nodal metastases)."""
    types = view.facts("type")
    if not types or any(_is_malignant(view, t) for t in types):
        return
    node_statements = {f.statement for f in view.case.facts if f.slot in ("nodes", "node_status")}
    doc = view.case.document
    if any(
        _MALIGNANT_WORDS.search(doc.statement_text(s))
        for s in doc.statements
        if s.index not in node_statements
    ):
        return  # a malignancy is named somewhere (outside the nodes), even where no type was read
    benign = [
        t
        for t in types
        if any(
            g.slot == "behaviour" and g.start == t.start and g.value == "benign"
            for g in view.case.facts
        )
        and t.target.kind == "tumour"
    ]
    if not benign or view.facts("metastasis"):
        return
    findings = [
        f
        for f in view.case.facts
        if f.certain
        and f.target.kind == "tumour"
        and f.value == "present"
        and (f.slot in _MALIGNANT_ONLY and f.key != "vascular")
    ]
    findings += [f for f in view.facts("node_status") if f.value == "positive"]
    for f in findings[:1]:
        b = benign[0]
        yield conflict(
            "behaviour",
            w.behaviour,
            b,
            f,
            f"the diagnosis is benign ('{view.text(b)}') but '{view.text(f)}' is a "
            "finding of a malignancy",
        )


def check_type(view: CaseView, w: CheckWeights) -> Iterator[Comparison]:
    """Two tumour types for one tumour that cannot name the same tumour."""
    types = [f for f in view.facts("type", kind="tumour") if "mixed" not in f.note]
    seen: set[tuple[int, int]] = set()
    for a, b in [*view.pairs(types), *_definite_pairs(view, types)]:
        if a.value == b.value or (id(a), id(b)) in seen:
            continue
        seen.add((id(a), id(b)))
        ok = compatible_types(a.value, b.value)
        if ok is None:
            continue
        if ok or a.target.part in view.multiple or b.target.part in view.multiple:
            yield compared("type", a, b)
            continue
        if a.statement == b.statement:
            continue  # one statement naming two types: two tumours or a mixed one
        oa, ob = (view.organs_named(f, other_sites=True) for f in (a, b))
        if oa and ob and not oa & ob:
            continue  # "primary ovarian adenocarcinoma" / "in the appendix, a carcinoid": two
        yield conflict(
            "type",
            w.type,
            a,
            b,
            f"the tumour is '{view.text(a)}' in one place and '{view.text(b)}' in another",
        )


def _definite_pairs(view: CaseView, types: list[Fact]) -> Iterator[tuple[Fact, Fact]]:
    """ "The tumor is classified as X" names the one tumour of its part (or of the case) even
    where the report names another type: unless the report speaks of several tumours there,
    that other type is a second name for it, not a second tumour."""
    for c in types:
        if "copula" not in c.note:
            continue
        part = c.target.part
        homes = {part, part if part is not None else view.only_part}
        if part is None and view.n_tumour_parts > 1:
            if not view.one_tumour_type or None in view.multiple:
                continue
            homes |= view.tumour_parts  # parts that sample one tumour ("Brain tumor A, B, C")
        if homes & view.multiple:
            continue
        for t in types:
            if t is c or t.statement == c.statement or t.target.part not in homes:
                continue
            yield (t, c) if t.statement < c.statement else (c, t)


#: Organs a tumour may involve on both sides at once: a side there conflicts only with "only".
#: Ovarian carcinoma is bilateral in most serous cases.
_BOTH_SIDED = frozenset(
    {"prostate", "urinary bladder", "uterus", "cervix", "colon", "stomach", "ovary"}
)


def _located(view: CaseView, f: Fact) -> Fact:
    """A part title's side or site is the side or site of the part's tumour."""
    if f.target.kind == "part" and f.target.part in view.tumour_parts:
        return dataclasses.replace(f, target=Target("tumour", f.target.part))
    return f


def _where_pairs(view: CaseView, facts: list[Fact]) -> Iterator[tuple[Fact, Fact]]:
    facts = [_located(view, f) for f in facts]
    for i, a in enumerate(facts):
        for b in facts[i + 1 :]:
            if a.statement == b.statement or view.repeated_label(a, b) or view.other_sample(a, b):
                continue
            if "title of part" in (a.note, b.note) and a.target.part != b.target.part:
                continue  # "right obturator node" is the side of its part only
            if a.target.kind == "part" or b.target.kind == "part":
                if a.target != b.target:
                    continue
            elif not view.same(a.target, b.target):
                continue
            yield a, b


def _both_sides(sentence: str) -> bool:
    """A line that names left and right ("left proximal ureter / right proximal ureter"): a
    list of specimens, which places nothing on one side."""
    words = {w.lower() for w in re.findall(r"\b(?:left|right)\b", sentence, re.I)}
    return len(words) == 2


def check_side(view: CaseView, w: CheckWeights) -> Iterator[Comparison]:
    """The tumour (or a part) placed left in one statement and right in another."""
    facts = [
        f
        for f in view.facts("side")
        if (
            (f.target.kind != "tumour" and f.target.part not in view.tumour_parts)
            or not _BESIDE_THE_ORGAN.search(view.case.evidence(f))
        )
        and not _both_sides(view.case.sentence(f.statement))
    ]
    for a, b in _where_pairs(view, facts):
        if a.value == b.value:
            yield compared("side", a, b)
            continue
        organs = {view.organ(a), view.organ(b)} | {
            "ovary" for f in (a, b) if re.search(r"ovar|adnex", view.case.evidence(f), re.I)
        }
        # one part named twice, or a part's title against what is said of that part's tumour:
        # a specimen has one side even in an organ that may hold tumour on both
        own_part = a.target.part is not None and a.target.part == b.target.part
        titled = a.note.startswith("title") or b.note.startswith("title")
        if (
            a.target.kind == "tumour"
            and organs & _BOTH_SIDED
            and "only" not in a.note + b.note
            and not (own_part and titled)
        ):
            continue
        if a.target.kind == "tumour" and (view.multiple & {a.target.part, b.target.part}):
            continue
        what = "the tumour" if a.target.kind == "tumour" else f"part {a.target.part}"
        yield conflict("side", w.side, a, b, f"{what} is on the {a.value} and on the {b.value}")


#: The side of a lymph node dissection or of the soft tissue around an organ ("Right pelvic
#: lymph nodes", "Para-aortic tissue, left") is not the side of the tumour or its organ.
_BESIDE_THE_ORGAN = re.compile(
    r"\blymph|\bnod(?:e|es|al)\b|\b(?:peri|para)[\w\-\s]{0,12}?tissue|\baortic\b|\bpelvic\b|"
    r"\bperi[\s\-]?(?:ureter|renal|nephric|vesic|rectal|colic|pancrea|gastric|hilar|bronch|"
    r"trache|esophag|uterine|ovarian|tubal)\w*|\bpara[\s\-]?(?:aortic|caval|trache|rectal|vesic|"
    r"esophag|metri)\w*",
    re.I,
)


def check_site(view: CaseView, w: CheckWeights) -> Iterator[Comparison]:
    """The tumour (or a part) placed in two sub-sites that are not neighbours."""
    from pathgls.text.case.read_site import sites_compatible

    facts = view.facts("site")
    for a, b in _where_pairs(view, facts):
        if a.key != b.key:
            continue
        if sites_compatible(a.value, b.value):
            yield compared("site", a, b)
            continue
        if view.multiple & {a.target.part, b.target.part}:
            continue
        what = "the tumour" if a.target.kind == "tumour" else f"part {a.target.part}"
        yield conflict("site", w.site, a, b, f"{what} is in the {a.value} and in the {b.value}")


#: Sizes of one tumour conflict beyond this ratio and this difference (cm): rounding, gross
#: against microscopic measurement and fixation shrinkage stay below both.
SIZE_RATIO = 1.4
SIZE_DIFF_CM = 0.8


_WHOLE_LESION = re.compile(
    r"\b(?:entire|whole)\s+(?:lesion|tumou?r|mass)\b|\bplus\b|\bcombined\b|\bin\s+aggregate\b",
    re.I,
)


def check_size(view: CaseView, w: CheckWeights) -> Iterator[Comparison]:
    """Two sizes of the same tumour beyond rounding and measurement differences."""
    facts = [f for f in view.facts("size", kind="tumour") if "residual" not in f.note]
    for a, b in view.pairs(facts):
        if any(_WHOLE_LESION.search(view.case.sentence(f.statement)) for f in (a, b)):
            continue  # "the entire lesion (nodule plus ill-defined area) measures 91 mm"
        if view.multiple & {a.target.part, b.target.part}:
            continue
        lo, hi = sorted((float(a.value), float(b.value)))
        if lo <= 0:
            continue
        gross = "gross" in (a.note + b.note)
        ratio, diff = (
            (SIZE_RATIO + 0.2, SIZE_DIFF_CM + 0.7) if gross else (SIZE_RATIO, SIZE_DIFF_CM)
        )
        if hi / lo >= ratio and hi - lo >= diff:
            yield conflict("size", w.size, a, b, f"the tumour measures {lo:g} cm and {hi:g} cm")
        else:
            yield compared("size", a, b)


# --- grade ------------------------------------------------------------------------------------

_GG = {1: (6,), 4: (8,), 5: (9, 10)}


def _grade_group(a: int | None, b: int | None, s: int | None) -> int | None:
    if a is not None and b is not None:
        s = a + b
        if s == 7:
            return 2 if a == 3 else 3
    if s is None or s == 7:
        return None
    if s <= 6:
        return 1
    return 4 if s == 8 else 5


def _tier(f: Fact) -> tuple[int, int] | None:
    """A three-tier grade as a range 1..3 (differentiation, histologic/FIGO/Nottingham grade)."""
    if f.key == "differentiation":
        tiers: tuple[int, int] = f.value  # the reader stores differentiation as a grade range
        return tiers
    if f.key in ("histologic", "figo", "nottingham") and isinstance(f.value, int):
        if f.note.startswith("of ") and f.note != "of 3":
            return None
        return (f.value, f.value) if 1 <= f.value <= 3 else None
    return None


def _nottingham(score: int) -> int:
    return 1 if score <= 5 else 2 if score <= 7 else 3


#: Tumour names that fix the WHO CNS grade in every edition the reports use (2007, 2016, 2021):
#: "astrocytoma" or "oligodendroglioma" alone do not (IDH-mutant astrocytoma may be grade 2-4).
_WHO_BY_TYPE = (
    (re.compile(r"glioblastoma|gliosarcoma|\bgbm\b", re.I), 4),
    (
        re.compile(
            r"anaplastic\s+(?:astrocytoma|oligodendroglioma|oligoastrocytoma|ependymoma)", re.I
        ),
        3,
    ),
    (re.compile(r"pilocytic", re.I), 1),
)


def check_grade(view: CaseView, w: CheckWeights) -> Iterator[Comparison]:
    """Grades of one tumour that disagree: within a system, against differentiation, Gleason
    arithmetic and Grade Group, Nottingham score, WHO CNS grade against the tumour type."""
    facts = [f for f in view.facts("grade") if f.target.kind in ("tumour", "lesion")]
    for f in facts:  # Gleason arithmetic inside one statement: "3 + 4 = 8"
        if f.key == "gleason":
            a, b, s = f.value
            if a is not None and s is not None and a + b != s:
                yield conflict("grade", w.grade, f, f, f"Gleason {a}+{b} is {a + b}, not {s}")
    for a, b in view.pairs(facts):
        gloss = (
            "differentiation" in (a.key, b.key) and a.key != b.key and abs(a.start - b.start) <= 40
        )
        if a.statement == b.statement and {a.key, b.key} not in _SAME_STATEMENT_PAIRS and not gloss:
            continue  # "G2/G3", "grade II or III", "from grade II to III": one statement, a range
        if _gleason_elsewhere(view, a, b) or any(
            _TWO_GRADES.search(view.case.sentence(f.statement)) for f in (a, b)
        ):
            continue
        organ = view.organ(a)
        if organ == "brain" and not (
            (_summary(view, a) and _summary(view, b)) or _glioma_called(view, a, b)
        ):
            continue  # brain reports discuss grades in prose; only diagnosis lines are compared
        c = _grade_pair(_in_organ(a, organ), _in_organ(b, organ), organ)
        if c is None:
            continue
        if c:
            yield conflict("grade", w.grade, a, b, c)
        else:
            yield compared("grade", a, b)
    types = view.facts("type", kind="tumour")
    for g in (f for f in facts if f.key == "who" and f.target.kind == "tumour"):
        for t in types:
            if not view.same(g.target, t.target):
                continue
            name = view.text(t)
            expected = next((v for rx, v in _WHO_BY_TYPE if rx.search(name)), None)
            if expected is None:
                continue
            if expected != g.value:
                yield conflict(
                    "grade", w.grade, g, t, f"'{name}' is WHO grade {expected}, not {g.value}"
                )
            else:
                yield compared("grade", g, t)


#: A tumour of two grades: "grade III, arising within a background of grade II", "progressed
#: from a low-grade astrocytoma", "transformation to high grade".
_TWO_GRADES = re.compile(
    r"\barising\s+(?:with)?in\b|\bbackground\s+of\b|\bprogress(?:ed|ion)?\s+(?:from|to)\b|"
    r"\btransform(?:ed|ation)\b",
    re.I,
)


def _glioma_called(view: CaseView, a: Fact, b: Fact) -> bool:
    """A WHO grade on a diagnosis line against "the neoplasm is a low grade glioma" (the tumour
    called a low- or high-grade glioma outright, not a grade discussed in prose)."""
    if {a.key, b.key} != {"two_tier", "who"}:
        return False
    t, g = (a, b) if a.key == "two_tier" else (b, a)
    return _summary(view, g) and bool(
        re.search(
            r"\b(?:is|represents?|consistent\s+with)\s+(?:an?\s+)?(?:low|high)[\s\-]grade\s+"
            r"(?:diffuse\s+)?glioma",
            view.case.sentence(t.statement),
            re.I,
        )
    )


#: Where in the prostate a core or a focus was taken ("right apex", "left lobe", "transition zone").
_PROSTATE_SITE = re.compile(
    r"\b(?:(?:right|left)(?:\s+(?:lobe|side|apex|base|mid(?:-?gland)?|lateral|medial))?|apex|apical|"
    r"base|mid(?:-?gland)?|transition(?:al)?\s+zone|peripheral\s+zone|anterior|posterior|core\s*#?\s*\d+)\b",
    re.I,
)
#: A grade of part of the tumour: "areas of Gleason 4+4", "a focus of", "tertiary", "minor".
_GLEASON_PART = re.compile(
    r"\b(?:areas?|foci|focus|focal(?:ly)?|tertiary|minor|non-?dominant|secondary\s+tumou?r|"
    r"multiple|most|nodules|bilateral|"
    r"second\s+(?:tumou?r|nodule|focus)|smaller|additional)\b",
    re.I,
)


def _gleason_elsewhere(view: CaseView, a: Fact, b: Fact) -> bool:
    """Two Gleason grades that may grade different cancers of one prostate: cores or foci of
    different sites ("right apex 4+5=9", "left apex 4+4=8"), a site against the whole gland, or
    areas of the tumour against its overall score ("areas of Gleason 4+4" beside "score 7")."""
    if not (a.key.startswith("gleason") or b.key.startswith("gleason")):
        return False
    sites = []
    for f in (a, b):
        sentence = view.case.sentence(f.statement)
        if _GLEASON_PART.search(sentence):
            return True
        words = {m.group().lower() for m in _PROSTATE_SITE.finditer(sentence)}
        if re.search(r"\bleft\b", sentence, re.I) and re.search(r"\bright\b", sentence, re.I):
            words = {w for w in words if not re.match(r"(?:left|right)\b", w)}  # "both lobes"
        sites.append(frozenset(words))
    return sites[0] != sites[1]


_SAME_STATEMENT_PAIRS = (
    {"gleason", "grade_group"},
    {"nottingham_score", "nottingham"},
    {"gleason_primary", "gleason"},
    {"gleason_secondary", "gleason"},
)
#: Organs whose generic grade is not the three-tier differentiation grade.
_NO_DIFFERENTIATION = frozenset({"brain", "kidney", "prostate"})


def _in_organ(f: Fact, organ: str | None) -> Fact:
    """A generic grade means the organ's system: WHO for the brain, Fuhrman/ISUP (nuclear) for
    the kidney."""
    if organ == "brain" and f.key == "histologic":
        return dataclasses.replace(f, key="who")
    if organ == "kidney" and f.key in ("histologic", "nuclear"):
        return dataclasses.replace(f, key="fuhrman")
    return f


def _summary(view: CaseView, f: Fact) -> bool:
    s = view.case.statement(f.statement)
    return s.region in ("diagnosis", "synoptic") or s.label is not None


def _grade_pair(a: Fact, b: Fact, organ: str | None = None) -> str | Literal[False] | None:
    """Why two grades conflict (a string), False when compatible, None when not comparable."""
    ka, kb = a.key, b.key
    if ka == kb == "gleason":
        sa, sb = _gleason_sum(a.value), _gleason_sum(b.value)
        if sa is None or sb is None:
            return None
        if sa == sb and None not in (*a.value[:2], *b.value[:2]) and a.value[:2] != b.value[:2]:
            return f"Gleason {_fmt(a.value)} and {_fmt(b.value)}"  # 4+3 is not 3+4
        return f"Gleason score {sa} and {sb}" if sa != sb else False
    if {ka, kb} == {"gleason", "grade_group"}:
        g, gg = (a, b) if ka == "gleason" else (b, a)
        expected = _grade_group(*g.value)
        if expected is None:
            return None
        return (
            f"Gleason {_fmt(g.value)} is Grade Group {expected}, not {gg.value}"
            if expected != gg.value
            else False
        )
    if {ka, kb} == {"nottingham_score", "nottingham"}:
        s, g = (a, b) if ka == "nottingham_score" else (b, a)
        exp = _nottingham(s.value)
        return (
            f"Nottingham score {s.value} is grade {exp}, not {g.value}" if exp != g.value else False
        )
    if ka == kb and ka in (
        "grade_group",
        "nottingham",
        "nottingham_score",
        "fuhrman",
        "figo",
        "who",
        "nuclear",
        "two_tier",
        "histologic",
    ):
        if ka == "histologic" and a.note != b.note and "of" in (a.note + b.note):
            return None
        return (
            f"{ka.replace('_', ' ')} grade {a.value} and {b.value}" if a.value != b.value else False
        )
    if {ka, kb} in ({"gleason_primary", "gleason"}, {"gleason_secondary", "gleason"}):
        comp, g = (a, b) if ka.startswith("gleason_") else (b, a)
        pa, pb, _ = g.value
        if pa is None:
            return None
        want = pa if comp.key == "gleason_primary" else pb
        return (
            f"{comp.key.replace('_', ' ')} pattern {comp.value}, Gleason {_fmt(g.value)}"
            if want != comp.value
            else False
        )
    if organ in _NO_DIFFERENTIATION and "differentiation" in (ka, kb):
        return None
    ta, tb = _tier(a), _tier(b)
    if ta is not None and tb is not None and "differentiation" in (ka, kb):
        if ta[1] < tb[0] or tb[1] < ta[0]:
            gap = max(tb[0] - ta[1], ta[0] - tb[1])
            if gap >= 1 and not (ka == kb == "differentiation" and gap < 2):
                return f"'{_word(a)}' against '{_word(b)}'"
        return False
    if {ka, kb} == {"two_tier", "who"} and organ == "brain":
        # a low-grade glioma is WHO grade I-II, a high-grade one III-IV
        t, g = (a, b) if ka == "two_tier" else (b, a)
        if (t.value == "low" and int(g.value) >= 3) or (t.value == "high" and int(g.value) <= 1):
            return f"{t.value} grade against WHO grade {g.value}"
        return False
    if {ka, kb} == {"two_tier", "differentiation"}:
        t, d = (a, b) if ka == "two_tier" else (b, a)
        if (t.value == "low" and d.value[0] >= 3) or (t.value == "high" and d.value[1] <= 1):
            return f"{t.value} grade against '{_word(d)}'"
        return False
    return None


def _gleason_sum(v: tuple[int | None, int | None, int | None]) -> int | None:
    a, b, s = v
    return a + b if a is not None and b is not None else s


def _fmt(v: tuple[int | None, int | None, int | None]) -> str:
    a, b, s = v
    return f"{a}+{b}" if a is not None else str(s)


def _word(f: Fact) -> str:
    if f.key == "differentiation":
        names = {1: "well", 2: "moderately", 3: "poorly"}
        lo, hi = f.value
        return (
            f"{names[lo]} differentiated"
            if lo == hi
            else f"{names[lo]} to {names[hi]} differentiated"
        )
    return f"{f.key} grade {f.value}"
