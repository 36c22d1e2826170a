"""Attributes computed from the matches of the lexicon's regex rules (``derive=NAME``).

Gleason patterns and sums, WHO/ISUP grade groups, numbered grades of the usual systems, TNM and
stage groups, R status, sizes in mm, lymph-node counts, mitotic counts, IHC signs and scores:
each is a small function from the regex groups (and matched text) to attributes, looked up by
name in one table.
"""

from __future__ import annotations

import re

from pathgls.text.lexicon import GRADES, RESULTS

_ROMAN = {"I": 1, "II": 2, "III": 3, "IV": 4}
_WORD_NUMBERS = {
    w: i
    for i, w in enumerate(
        re.findall(
            r"\w+",
            "zero one two three four five six seven eight nine ten eleven twelve thirteen "
            "fourteen fifteen sixteen seventeen eighteen nineteen twenty",
        )
    )
} | {"none": 0, "no": 0, "thirty": 30, "forty": 40, "fifty": 50}
_FOUR_TIER = ("fuhrman", "who/isup", "isup", "who")
_GRADE_SYSTEMS = {
    "nottingham": "nottingham",
    "bloom": "nottingham",
    "elston": "nottingham",
    "sbr": "nottingham",
    "figo": "figo",
    "fuhrman": "fuhrman",
    "isup": "isup",
    "who": "who",
}
_TNM_PART = re.compile(
    r"(?P<pre>[ycpra]{0,3})(?:T(?P<t>is|[0-4]|X|x)(?P<tsub>[a-d]?\d?)"
    r"|(?P<s>S?)N(?P<n>[0-3]|X|O)(?P<nsub>[a-c]?)(?:\s?\((?P<nmod>(?:i|mol|sn)?[+-]?)\))?"
    r"|M(?P<m>[01]|X)(?P<msub>[a-c]?)|(?P<lvr>L|V|Pn|R)(?P<lvrn>[0-2]))"
)
_TO_MM = {"mm": 1.0, "cm": 10.0, "um": 0.001, "µm": 0.001, "μm": 0.001, "micron": 0.001}


def derive_attributes(name: str | None, match: re.Match[str]) -> dict[str, str] | None:
    """Attributes a pattern rule's ``derive`` function reads from its match.

    Args:
        name: One of :data:`DERIVATIONS` (None: no attributes).
        match: The regex match (named groups as written in ``patterns.tsv``).

    Returns:
        The attributes, or None when the match makes no sense (e.g. "5 of 3 lymph nodes").
    """
    if name is None:
        return {}
    g = {k: v for k, v in match.groupdict().items() if v}
    text = match.group("span") if "span" in match.re.groupindex else match.group(0)
    return _DERIVE[name](g, text)


def _grade_from_gleason(score: int) -> str:
    return "low" if score <= 6 else "intermediate" if score == 7 else "high"


def _derive_gleason(g: dict[str, str], _: str) -> dict[str, str] | None:
    out: dict[str, str] = {}
    if "g1" in g:
        p, s = int(g["g1"]), int(g["g2"])
        out |= {"gleason_primary": str(p), "gleason_secondary": str(s)}
        total = p + s
        stated = g.get("gs") or g.get("gs2")
        if stated and int(stated) != total:  # "4+5 (total score 7)": kept, the sum is a claim
            out["gleason_sum_stated"] = stated
        grade_group = 1 if total <= 6 else (2 if p == 3 else 3) if total == 7 else min(total - 4, 5)
        out["grade_group"] = str(grade_group)
    else:
        total = int(g["gs"])
    if not 2 <= total <= 10:
        return None
    return out | {"gleason_score": str(total), "grade": _grade_from_gleason(total)}


def _derive_grade_group(g: dict[str, str], _: str) -> dict[str, str]:
    gg = int(g["gg"])
    grade = "low" if gg == 1 else "intermediate" if gg <= 3 else "high"
    return {"grade_group": str(gg), "grade": grade}


def _number(value: str) -> int:
    return _ROMAN[value.upper()] if value.upper() in _ROMAN else int(value)


def _derive_grade_number(g: dict[str, str], _: str) -> dict[str, str] | None:
    num = max(_number(g["num"]), _number(g.get("num2", g["num"])))
    words = g.get("sys", "").lower()
    system = next((v for k, v in _GRADE_SYSTEMS.items() if k in words), "")
    scale = _number(g["scale"]) if "scale" in g else 4 if system in _FOUR_TIER or num == 4 else 3
    if num > scale or scale not in (3, 4):
        return None
    grade = ("low" if num <= 2 else "high") if scale == 4 else GRADES[num - 1]
    out = {"grade": grade, "grade_number": str(num), "grade_scale": str(scale)}
    return out | ({"system": system} if system else {})


_TNM_COUNT = re.compile(r"\((?P<pos>\d{1,2})\s*/\s*(?P<tot>\d{1,2})\)")


def _derive_tnm(_: dict[str, str], text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    count = _TNM_COUNT.search(text)  # "pN1 (2/14)": the node count that gave the category
    if count:
        out |= {"n_positive": count.group("pos"), "n_total": count.group("tot")}
    for m in _TNM_PART.finditer(text):
        if m.group("t"):
            out["t"] = "T" + m.group("t").upper().replace("IS", "is") + (m.group("tsub") or "")
        elif m.group("n"):
            n = "N" + m.group("n").replace("O", "0") + (m.group("nsub") or "")
            out["n"] = n + (f"({m.group('nmod')})" if m.group("nmod") else "")
        elif m.group("m"):
            out["m"] = "M" + m.group("m") + (m.group("msub") or "")
        elif m.group("lvr"):
            out[m.group("lvr").lower()] = m.group("lvr") + m.group("lvrn")
        if m.group("pre") and "prefix" not in out:
            out["prefix"] = m.group("pre")
    return out


def _derive_stage_group(g: dict[str, str], _: str) -> dict[str, str]:
    stage = g["stage"]
    stage = {"1": "I", "2": "II", "3": "III", "4": "IV"}.get(stage, stage)
    out = {"stage": stage + g.get("sub", "") + g.get("subnum", "")}
    words = g.get("sys", "").lower()
    for key in ("figo", "ajcc", "masaoka", "uicc", "ann"):
        if key in words:
            out["system"] = "ann_arbor" if key == "ann" else key
    return out


def _derive_r_status(g: dict[str, str], _: str) -> dict[str, str]:
    return {"r": g["r"], "result": "negative" if g["r"] == "R0" else "positive"}


def _derive_size(g: dict[str, str], _: str) -> dict[str, str] | None:
    unit = g["unit"].lower().rstrip("s")
    unit = {"millimeter": "mm", "millimetre": "mm", "centimeter": "cm", "centimetre": "cm"}.get(
        unit, unit
    )
    dims = [float(d.replace(",", ".")) for d in re.split(r"\s*(?:x|×|X|by)\s*", g["dims"])]
    if unit not in _TO_MM or not dims:
        return None
    value = max(dims) * _TO_MM[unit]
    return {
        "value_mm": f"{value:g}",
        "dims": "x".join(f"{d:g}" for d in dims),
        "unit": "um" if _TO_MM[unit] < 1 else unit,
    }


def _count(word: str) -> int | None:
    """A count in digits or words ("12", "twelve", "twenty-five", "thirty two")."""
    w = word.lower().strip()
    if w.isdigit():
        return int(w)
    tens, _, ones = w.replace(" ", "-").partition("-")
    if ones:
        t, o = _WORD_NUMBERS.get(tens), _WORD_NUMBERS.get(ones)
        return t + o if t is not None and o is not None and t % 10 == 0 and o < 10 else None
    return _WORD_NUMBERS.get(w)


def _derive_node_count(g: dict[str, str], _: str) -> dict[str, str] | None:
    pos, total = _count(g["pos"]), _count(g["tot"])
    if pos is None or total is None or total == 0 or pos > total:
        return None
    return {"positive": str(pos), "total": str(total), "result": RESULTS[0 if pos else 1]}


def _derive_mitotic_count(g: dict[str, str], _: str) -> dict[str, str]:
    return {"count": g["count"], "per": f"{g['per']} HPF" if "per" in g else "mm2"}


def _derive_ihc_sign(_: dict[str, str], text: str) -> dict[str, str]:
    return {"result": "positive" if "+" in text else "negative", "score": text.strip("()")}


def _derive_ihc_score(_: dict[str, str], text: str) -> dict[str, str]:
    score = text.strip()
    return {"score": score, "result": "negative" if score == "0" else "positive"}


_DERIVE = {
    "gleason": _derive_gleason,
    "grade_group": _derive_grade_group,
    "grade_number": _derive_grade_number,
    "tnm": _derive_tnm,
    "stage_group": _derive_stage_group,
    "r_status": _derive_r_status,
    "size": _derive_size,
    "node_count": _derive_node_count,
    "mitotic_count": _derive_mitotic_count,
    "ihc_sign": _derive_ihc_sign,
    "ihc_score": _derive_ihc_score,
}
