"""Edits that turn a true statement into a contradicting one: training pairs for the judge.

Each family is a list of (pattern, replacement) swaps that change what a statement says of a
slot — polarity (present/absent, positive/negative, involved/free), side and site, behaviour
(benign/malignant, in situ/invasive), grade and differentiation, stage categories, numbers
(sizes, counts, percentages moved beyond rounding) and tumour types within an organ's family.
:func:`perturb` applies one swap of the chosen family inside a span of the statement (the words
a case-model fact was read from), so the edited statement contradicts the statements that
agreed with the original about that slot. Swaps are data; nothing here reads a report.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

_Swap = tuple[re.Pattern[str], Callable[[re.Match[str], random.Random], str]]


def _c(p: str) -> re.Pattern[str]:
    return re.compile(p, re.I)


def _pick(*options: str) -> Callable[[re.Match[str], random.Random], str]:
    return lambda m, rng: rng.choice(options)


def _keep_case(src: str, new: str) -> str:
    if src.isupper() and len(src) > 1:
        return new.upper()
    if src[:1].isupper():
        return new[:1].upper() + new[1:]
    return new


_POLARITY: list[_Swap] = [
    (_c(r"\bnegative for\b"), _pick("positive for", "involved by", "showing")),
    (_c(r"\bpositive for\b"), _pick("negative for", "free of")),
    (
        _c(r"\bnot (?:identified|seen|present|detected|found|observed)\b"),
        _pick("identified", "present", "seen"),
    ),
    (_c(r"\bnot (involved|positive|negative)\b"), lambda m, rng: m.group(1)),
    (_c(r"\b(?:is|are) absent\b"), _pick("is present", "is identified")),
    (_c(r"(?<!is )(?<!are )\babsent\b"), _pick("present", "identified")),
    (_c(r"(?<!not )\bpresent\b"), _pick("absent", "not identified")),
    (_c(r"\b(?:is|are) identified\b"), _pick("is not identified", "is absent")),
    (
        _c(r"(?<!not )(?<!is )(?<!are )\bidentified\b"),
        _pick(
            "not identified",
        ),
    ),
    (
        _c(r"\buninvolved\b"),
        _pick(
            "involved",
        ),
    ),
    (_c(r"(?<!not )(?<!un)\binvolved\b"), _pick("uninvolved", "free of tumor", "not involved")),
    (_c(r"\bfree of\b"), _pick("involved by", "positive for")),
    (_c(r"\b(?:free|clear)\b"), _pick("involved", "positive")),
    (
        _c(r"(?<!not )\bnegative\b(?! for)"),
        _pick(
            "positive",
        ),
    ),
    (
        _c(r"(?<!not )\bpositive\b(?! for)"),
        _pick(
            "negative",
        ),
    ),
    (
        _c(r"\bwithout\b"),
        _pick(
            "with",
        ),
    ),
    (_c(r"\bno (?:evidence of |definite )?"), _pick("", "definite ", "extensive ")),
    (_c(r"\bnone\b"), _pick("present", "identified")),
    (_c(r"\b(?:with|shows?|showing|demonstrat\w+)\b"), _pick("without", "with no")),
]

_SIDE: list[_Swap] = [
    (
        _c(r"\bleft\b"),
        _pick(
            "right",
        ),
    ),
    (
        _c(r"\bright\b"),
        _pick(
            "left",
        ),
    ),
    (
        _c(r"\bupper\b"),
        _pick(
            "lower",
        ),
    ),
    (
        _c(r"\blower\b"),
        _pick(
            "upper",
        ),
    ),
    (
        _c(r"\banterior\b"),
        _pick(
            "posterior",
        ),
    ),
    (
        _c(r"\bposterior\b"),
        _pick(
            "anterior",
        ),
    ),
    (
        _c(r"\bproximal\b"),
        _pick(
            "distal",
        ),
    ),
    (
        _c(r"\bdistal\b"),
        _pick(
            "proximal",
        ),
    ),
]

_BEHAVIOUR: list[_Swap] = [
    (_c(r"\bbenign\b"), _pick("malignant", "invasive")),
    (
        _c(r"\bmalignant\b"),
        _pick(
            "benign",
        ),
    ),
    (_c(r"\bin situ\b"), _pick("invasive", "infiltrating")),
    (_c(r"\b(?:invasive|infiltrating)\b"), _pick("in situ", "non-invasive", "benign")),
    (_c(r"\bnon-?invasive\b"), _pick("invasive", "deeply invasive")),
    (
        _c(r"\b(?:carcinoma|adenocarcinoma|sarcoma|melanoma)\b"),
        _pick("adenoma", "benign hyperplasia", "reactive atypia"),
    ),
    (
        _c(r"\b(?:adenoma|hyperplasia|nevus|leiomyoma|cyst)\b"),
        _pick("invasive carcinoma", "malignant tumor"),
    ),
    (
        _c(r"\bnegative for (?:malignancy|carcinoma|tumou?r)\b"),
        _pick("positive for malignancy", "involved by carcinoma"),
    ),
]

_GRADE: list[_Swap] = [
    (_c(r"\bwell[- ]differentiated\b"), _pick("poorly differentiated", "undifferentiated")),
    (
        _c(r"\bmoderately[- ]differentiated\b"),
        _pick("poorly differentiated", "well differentiated"),
    ),
    (
        _c(r"\bpoorly[- ]differentiated\b"),
        _pick(
            "well differentiated",
        ),
    ),
    (
        _c(r"\bundifferentiated\b"),
        _pick(
            "well differentiated",
        ),
    ),
    (
        _c(r"\blow[- ]grade\b"),
        _pick(
            "high grade",
        ),
    ),
    (
        _c(r"\bhigh[- ]grade\b"),
        _pick(
            "low grade",
        ),
    ),
    (_c(r"\bgrade\s*(?:1|I)\b"), _pick("grade 3", "grade III")),
    (_c(r"\bgrade\s*(?:2|II)\b"), _pick("grade 1", "grade 3")),
    (_c(r"\bgrade\s*(?:3|III)\b"), _pick("grade 1", "grade I")),
    (_c(r"\bgrade\s*(?:4|IV)\b"), _pick("grade 2", "grade II")),
    (_c(r"\bG([123])\b"), lambda m, rng: "G" + rng.choice([g for g in "123" if g != m.group(1)])),
    (
        _c(r"\b([345])\s*\+\s*([345])(\s*=\s*)(\d{1,2})"),
        lambda m, rng: (
            f"{m.group(1)}+{m.group(2)}{m.group(3)}{int(m.group(4)) + rng.choice([-2, 2])}"
        ),
    ),
    (
        _c(r"\bgroup\s*([1-5])\b"),
        lambda m, rng: "group " + rng.choice([g for g in "12345" if g != m.group(1)]),
    ),
]

_STAGE: list[_Swap] = [
    (
        _c(r"\b(y?p?T)([0-4]|is)([a-c]?)\b"),
        lambda m, rng: (
            m.group(1)
            + rng.choice([t for t in ("1", "2", "3", "4", "is") if t != m.group(2)])
            + m.group(3)
        ),
    ),
    (
        _c(r"\b(y?p?N)([0-3])([a-c]?)\b"),
        lambda m, rng: m.group(1) + ("2" if m.group(2) == "0" else "0") + m.group(3),
    ),
    (_c(r"\b(p?M)([01])\b"), lambda m, rng: m.group(1) + ("1" if m.group(2) == "0" else "0")),
    (
        _c(r"\bFIGO (?:stage )?(I{1,3}|IV)([ABC]?\d?)\b"),
        lambda m, rng: (
            "FIGO "
            + rng.choice([s for s in ("I", "II", "III", "IV") if s != m.group(1)])
            + m.group(2)
        ),
    ),
]


def _number(m: re.Match[str], rng: random.Random) -> str:
    raw = m.group(0)
    v = float(raw)
    if v == 0:
        new = float(rng.choice([2, 3, 5]))
    else:
        new = v * rng.choice([0.3, 0.4, 2.5, 3.0]) if v >= 1 else v * rng.choice([4.0, 8.0])
    if "." in raw:
        return f"{new:.1f}"
    return str(max(1, round(new))) if new != v else str(int(v) + 3)


_NUMBERS: list[_Swap] = [
    (_c(r"(?<![\w.])\d+(?:\.\d+)?(?=\s*(?:cm|mm|%|x|\s*of\b|/))"), _number),
    (_c(r"(?<=/)\d+\b"), _number),
    (_c(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])"), _number),
    (_c(r"\b(?:none|no)\b(?= of)"), _pick("three", "two")),
]

#: Tumour types that exclude each other within an organ family.
_TYPES: list[tuple[str, ...]] = [
    ("adenocarcinoma", "squamous cell carcinoma", "small cell carcinoma", "large cell carcinoma"),
    ("urothelial carcinoma", "squamous cell carcinoma", "adenocarcinoma", "small cell carcinoma"),
    (
        "clear cell renal cell carcinoma",
        "papillary renal cell carcinoma",
        "chromophobe renal cell carcinoma",
    ),
    ("clear cell", "papillary", "chromophobe"),
    ("serous carcinoma", "endometrioid carcinoma", "mucinous carcinoma", "clear cell carcinoma"),
    ("serous", "endometrioid", "mucinous"),
    ("glioblastoma", "oligodendroglioma", "pilocytic astrocytoma", "meningioma"),
    ("oligodendroglioma", "astrocytoma", "ependymoma"),
    ("ductal", "lobular", "acinar"),
    ("acinar", "ductal adenocarcinoma", "neuroendocrine"),
    ("hepatocellular carcinoma", "cholangiocarcinoma"),
    ("leiomyosarcoma", "leiomyoma", "carcinosarcoma"),
    ("melanoma", "basal cell carcinoma", "squamous cell carcinoma"),
]


def _type_swaps() -> list[_Swap]:
    out: list[_Swap] = []
    for family in _TYPES:
        for name in family:
            others = tuple(o for o in family if o != name)
            out.append((_c(r"\b" + re.escape(name) + r"\b"), _pick(*others)))
    return out


FAMILIES: dict[str, list[_Swap]] = {
    "polarity": _POLARITY,
    "side": _SIDE,
    "behaviour": _BEHAVIOUR,
    "grade": _GRADE,
    "stage": _STAGE,
    "numbers": _NUMBERS,
    "type": _type_swaps(),
}

#: Which family changes what a case-model slot says.
SLOT_FAMILIES: dict[str, tuple[str, ...]] = {
    "invasion": ("polarity",),
    "extent": ("polarity",),
    "finding": ("polarity",),
    "presence": ("polarity", "behaviour"),
    "margin": ("polarity",),
    "node_status": ("polarity", "numbers"),
    "marker": ("polarity",),
    "behaviour": ("behaviour",),
    "type": ("type", "behaviour"),
    "grade": ("grade",),
    "stage": ("stage",),
    "size": ("numbers",),
    "nodes": ("numbers",),
    "margin_distance": ("numbers",),
    "amount": ("numbers",),
    "depth": ("numbers",),
    "side": ("side",),
    "site": ("side",),
}


def perturb(
    text: str,
    family: str,
    rng: random.Random,
    *,
    span: tuple[int, int] | None = None,
) -> str | None:
    """``text`` with one swap of ``family`` inside ``span`` (None: the whole text).

    Returns None when no swap of the family matches there.
    """
    lo, hi = span if span is not None else (0, len(text))
    options: list[tuple[re.Match[str], Callable[[re.Match[str], random.Random], str]]] = []
    for pattern, make in FAMILIES[family]:
        for m in pattern.finditer(text, lo, hi):
            options.append((m, make))
    if not options:
        return None
    m, make = rng.choice(options)
    new = _keep_case(m.group(0), make(m, rng))
    if new.lower() == m.group(0).lower():
        return None
    return text[: m.start()] + new + text[m.end() :]


__all__ = ["FAMILIES", "SLOT_FAMILIES", "perturb"]
