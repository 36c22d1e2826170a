"""The statements the learned judge reads: the case model's assertions, one field line each.

The document structure decides what is one statement (:mod:`pathgls.text.document`); a field
line ("Nuclear features: …", "Margins: negative") is always a statement of its own, even when
the line ends without a full stop and the next line goes on (a VLM's six-field report, a
flattened checklist). Text is whitespace-folded; a unit shorter than two words or three letters
says nothing to compare and is left out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise

from pathgls.text.case import Case

#: A line that starts a field: "Label:" with a short label (markdown and numbering allowed).
_FIELD_LINE = re.compile(
    r"^[ \t]*(?:[-*•]+[ \t]*|\d{1,2}[.)][ \t]*)?(?:\*\*)?[A-Za-z][A-Za-z0-9 ,/&()'\-]{1,40}"
    r"(?:\*\*)?[ \t]*:(?:\*\*)?(?:[ \t]|$)"
)
_WORDS = re.compile(r"[A-Za-z]{3,}")


@dataclass(frozen=True)
class Unit:
    """One statement the judge reads."""

    text: str  # whitespace-folded
    statement: int  # index of the case-model statement it comes from
    start: int  # offsets into the document text
    end: int


def _lines(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Split ``text[start:end]`` before every line that starts a field."""
    cuts = [start]
    pos = text.find("\n", start, end)
    while pos != -1:
        line_end = text.find("\n", pos + 1, end)
        line = text[pos + 1 : end if line_end == -1 else line_end]
        if _FIELD_LINE.match(line):
            cuts.append(pos + 1)
        pos = line_end
    cuts.append(end)
    # a statement whose field label the document read as a heading ("Stain type:" on its
    # own line start) is shown with it: the label says what the value is about
    ls = text.rfind("\n", 0, start) + 1
    if _FIELD_LINE.match(text[ls:start] + " ") and not text[ls:start].strip().endswith("."):
        cuts[0] = ls
    return [(a, b) for a, b in pairwise(cuts) if b > a]


def judge_units(case: Case, *, max_units: int = 400) -> list[Unit]:
    """The assertion units of a case, in report order; identical texts kept once.

    Args:
        case: the case model of the report.
        max_units: at most this many units (the first ones), bounding the work on huge reports.
    """
    doc = case.document
    out: list[Unit] = []
    seen: set[str] = set()
    for st in doc.assertions():
        for a, b in _lines(doc.text, st.start, st.end):
            text = " ".join(doc.text[a:b].split()).strip(" *")
            if len(_WORDS.findall(text)) < 1 or len(text.split()) < 2:
                continue
            key = text.lower()
            if key in seen:
                continue
            seen.add(key)
            out.append(Unit(text, st.index, a, b))
            if len(out) >= max_units:
                return out
    return out
