"""Clauses, polarity and hedges: is a finding affirmed, denied or hedged, and what is it about?

Local rules, not a sentence-wide negation scope: a denial covers the findings it introduces and
the list they are coordinated in ("no LVI, PNI or necrosis"), never a modifier after them ("no
extranodal extension *of carcinoma*" denies extension, not carcinoma); a trailing denial ("… are
not identified", "LVI: absent") covers the findings of its clause before it; "not specified" or
"cannot be assessed" denies nothing. A hedge ("possible", "suspicious for", "cannot be
excluded", "no definite") makes the finding uncertain: it never enters a check. "Grossly"
marks a naked-eye statement, which microscopy may overrule: also kept out of the checks.

The cue words are data (``pathgls/resources/vocab/polarity_cues.tsv``, one alternative a line);
this module sets them in their grammar (what may stand between a cue and its finding).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pathgls.text.vocab_files import load_table


def _cues(name: str) -> str:
    """The alternation of cue list ``name`` of ``polarity_cues.tsv`` (rows in file order)."""
    return load_table("polarity_cues").alternation("cue", list=name)


#: Polarity values of a presence fact.
PRESENT, ABSENT, UNCERTAIN = "present", "absent", "uncertain"

#: A denial just before a word ("no carcinoma", "free of tumour"): the word is denied, so it names
#: no subject and no tumour.
DENIED_BEFORE = re.compile(r"\b(?:" + _cues("denied_before") + r")\s+(?:\w+\s+){0,2}$", re.I)

_CLAUSE_BREAK = re.compile(
    r";|\.\s+(?=[A-Z])|\s(?:but|however|whereas|while|although|though|except|yet)\b|,\s+(?:but|"
    r"however|while|whereas)\b|\s-\s|,?\s+and\s+(?=there\s+(?:is|are|was|were)\b)",
    re.I,
)
_PRE_NEG = re.compile(r"(?<![A-Za-z])(?:" + _cues("pre_negation") + r")(?![A-Za-z])", re.I)
_POST_NEG = re.compile(
    r"^(?:[\s,:;=\-]|\bby\s+(?:the\s+)?(?:tumou?r|carcinoma|neoplasm)\b|\([^()]{0,40}\)|"
    r"\b(?:" + _cues("post_negation_lead") + r")\b)*(?:" + _cues("post_negation") + ")",
    re.I,
)
_POST_POS = re.compile(
    r"^(?:[\s,:;=\-]|\b(?:" + _cues("post_affirmation_lead") + r")\b)*"
    "(?:" + _cues("post_affirmation") + ")",
    re.I,
)
_HEDGE_BEFORE = re.compile(r"(?<![A-Za-z])(?:" + _cues("hedge_before") + r")(?![A-Za-z])", re.I)
_HEDGE_AFTER = re.compile(r"^[^.;]{0,60}?(?:" + _cues("hedge_after") + ")", re.I)
_GROSS = re.compile(r"(?<![A-Za-z])(?:" + _cues("gross") + r")(?![A-Za-z])", re.I)
#: Words a denial may skip to reach the finding it denies ("no *definite evidence of* LVI").
_FILLER = re.compile(r"^(?:[\s,/]|\b(?:" + _cues("denial_filler") + r")\b)*$", re.I)


@dataclass(frozen=True)
class Clause:
    """A span of a statement with one subject and one polarity context."""

    start: int
    end: int


def clauses(text: str, start: int, end: int) -> list[Clause]:
    """The clauses of ``text[start:end]`` (cut at ";", "but", "however", "while", …)."""
    out, a = [], start
    for m in _CLAUSE_BREAK.finditer(text, start, end):
        if m.start() > a:
            out.append(Clause(a, m.start()))
        a = m.end()
    if a < end:
        out.append(Clause(a, end))
    return out


def polarity(text: str, clause: Clause, start: int, end: int, *, value_start: int = -1) -> str:
    """PRESENT, ABSENT or UNCERTAIN for a finding at ``text[start:end]`` in ``clause``.

    ``value_start`` is where a labelled line's value begins when the finding is in its label:
    the value then decides ("Lymph-vascular invasion: Not identified").
    """
    before = text[clause.start : start]
    after = text[end : clause.end]
    if value_start > end:
        after = re.sub(r"(?i)\bnot\.\s*", "not ", text[value_start : clause.end])
        if _HEDGE_BEFORE.match(after.strip()) or _HEDGE_AFTER.match(after):
            return UNCERTAIN
        if _POST_NEG.match(after) or _TO_NOT_THROUGH.search(after):
            return ABSENT
        if _POST_POS.match(after):
            return PRESENT
        value = after.strip().lower()
        if not value or re.fullmatch(r"\(?(?:\d{1,2}|[a-z])\)?\.?", value):
            return UNCERTAIN  # a label without its value, or a form's code ("invasion: 2")
        if value.startswith(("no ", "not ", "none", "negative", "absent", "without")):
            return ABSENT
        return PRESENT
    window = before[-90:]
    if _HEDGE_BEFORE.search(window[-60:]) or _HEDGE_AFTER.match(after):
        return UNCERTAIN
    if _EMPTY_FIELD.match(after):
        return UNCERTAIN  # "Chest wall invasion (into skeletal muscle): ;;": a field left empty
    if _DENIED_FEATURES.search(window):
        return ABSENT  # "the lack of histological anaplastic features, including necrosis"
    neg = None
    for m in _PRE_NEG.finditer(window):
        neg = m
    if neg is not None and (
        _FILLER.match(window[neg.end() :])
        or _coordinated(window[neg.end() :])
        or _one_modifier(window[neg.end() :])
    ):
        return ABSENT
    if _TO_NOT_THROUGH.match(text, end, min(len(text), end + 60)):
        return ABSENT  # "pleural invasion: extends to, but not through, the visceral pleura"
    if re.search(r"(?<![\d.])0\s*%\s*(?:of\s+(?:the\s+)?(?:tumou?r\s+)?)?$", window):
        return ABSENT  # "0% necrosis"
    if _PRE_POS.search(window):
        return PRESENT  # "positive lymphovascular invasion, negative renal vein invasion"
    if _POST_NEG.match(after) or _post_list_negation(after) or _COLON_NEG.match(after):
        return ABSENT
    return PRESENT


#: A denied class of findings, then its members: "no high-grade features, such as necrosis".
_DENIED_FEATURES = re.compile(
    r"\b(?:lack|lacks|lacking|absence|no|without|devoid)\b(?:\s+of)?\s+(?:[\w\-]+\s+){0,4}"
    r"(?:features?|findings?|signs?|criteria)\s*,?\s*(?:including|such\s+as|e\.\s?g\.,?|namely)"
    r"\s+(?:[\w\-]+(?:\s*,\s*|\s+(?:and|or)\s+|\s+)){0,6}$",
    re.I,
)
_EMPTY_FIELD = re.compile(r"[^.;:\n]{0,80}:[\W_]*$")
#: An affirmation right before a finding, which a later denial in a list does not undo.
_PRE_POS = re.compile(r"(?<![A-Za-z])(?:positive|present)(?:\s+for)?\s*$", re.I)
#: "extends to, but not through, the visceral pleura": reaches a layer, does not cross it.
_TO_NOT_THROUGH = re.compile(
    r"[^.;]{0,50}?\bto,?\s+but\s+not\s+(?:through|beyond|into)\b", re.I | re.S
)


def _one_modifier(gap: str) -> bool:
    """ "no endothelial microvascular proliferation": one more modifier between a denial and the
    finding (a word, not a verb, preposition or conjunction that starts another phrase)."""
    words = gap.split()
    return (
        len(words) == 1
        and re.fullmatch(r"[A-Za-z][a-z\-]{2,}|[A-Z][A-Z\-]{2,}", words[0]) is not None
        and not _ONE_MODIFIER_STOP.fullmatch(words[0])
        and gap.endswith((" ", "\n", "\t"))
    )


_ONE_MODIFIER_STOP = re.compile(_cues("modifier_stop"), re.I)


_TRAILING_NEG = re.compile(
    r"(?:(?:is|are|was|were)\s+)?(?:all\s+|both\s+)?(?:not\s+(?:identified|seen|present|noted|"
    r"evident|detected|found)|absent|negative(?!\s+for))",
    re.I,
)
_LIST_GAP_STOP = re.compile(
    r"[.;:\d]|\b(?:with|but|shows?|present|identified|seen|in|of|at)\b", re.I
)


_COORD_GAP = re.compile(r"(?:[\w\-/]+[\s,]*){1,6}")
_COORD_STOP = re.compile(
    r"\b(?:but|with|shows?|showing|present|identified|seen|noted|is|are|was|were|has|have|"
    r"which|that|however|although)\b|[.;:]",
    re.I,
)


def _coordinated(gap: str) -> bool:
    """ "no microvascular proliferation or necrosis": the denial runs over a short list."""
    g = gap.strip()
    if not g or len(g.split()) > 6 or _COORD_STOP.search(g):
        return False
    return (
        bool(re.search(r"(?:\b(?:or|and|nor)|,)\s*$", g, re.I))
        and _COORD_GAP.fullmatch(g + " ") is not None
    )


_COLON_NEG = re.compile(r"\s*[:=]\s*(?:not|no|none|negative|absent)\b", re.I)


def _post_list_negation(after: str) -> bool:
    """ "LVI, PNI and necrosis are not identified": a trailing denial over a short list."""
    m = _TRAILING_NEG.search(after, 0, 90)
    if not m:
        return False
    between = after[: m.start()]
    if len(between.split()) > 10 or _LIST_GAP_STOP.search(between):
        return False
    return "," in between or re.search(r"\b(?:and|or|nor)\b", between, re.I) is not None


def is_gross(text: str, clause: Clause) -> bool:
    """Whether the clause speaks of what was seen grossly (naked eye)."""
    return _GROSS.search(text, clause.start, clause.end) is not None


def hedged(text: str, clause: Clause, start: int) -> bool:
    """Whether a hedge stands before ``start`` in its clause."""
    window = text[max(clause.start, start - 60) : start]
    return _HEDGE_BEFORE.search(window) is not None
