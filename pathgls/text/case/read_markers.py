"""Reader of IHC markers: a result (positive / negative / equivocal) per canonical marker (the
lexicon's synonyms: c-Kit = CD117, ER = estrogen receptor) and per population — the tumour cells,
or lymphocytes, background, a control — with the method for HER2 (IHC score, ISH). A result of
part of the tumour ("areas", "a subset") is kept but not compared.
"""

from __future__ import annotations

import re

from pathgls.text.case.context import Context
from pathgls.text.case.model import Target
from pathgls.text.case.polarity import ABSENT, PRESENT, UNCERTAIN
from pathgls.text.case.subjects import NEOPLASTIC_BEFORE, ClauseSubject
from pathgls.text.case.vocab import OTHER_POPULATIONS, vocabulary
from pathgls.text.vocab_files import load_table

# ----------------------------------------------------------------------------------

_RESULT_AFTER = re.compile(
    r"\s*(?:\([^)]{0,30}\)\s*)?(?:\.{2,}\s*|…\s*)?(?:antibody\s+|protein\s+|immunostain(?:ing)?\s+|"
    r"immunohistochemistry\s+|stain(?:s|ing)?\s+|"
    r"expression\s+|immunoreactivity\s+|status\s+|receptors?\s+|score\s+)?"
    r"(?:(?:is|are|was|were|shows?|showed|demonstrates?|reveals?|revealed)\s+)?(?:(?:all|both)\s+)?"
    r"(?:an?\s+)?(?:[:=\-]\s*)?"
    r"(?:(?:strongly|diffusely|focally|weakly|patchy|strong|diffuse|focal|weak)\s+(?:and\s+\w+\s+)?)?"
    r"(?P<r>no\s+(?:(?:nuclear|cytoplasmic|membranous|specific|definite)\s+)?(?:over-?\s?expression|"
    r"expression|staining|immunoreactivity|reactivity|positivity|labell?ing|uptake)|"
    r"positive|negative|reactive|non-?reactive|unreactive|"
    r"(?:is\s+|are\s+)?not\s+(?:expressed|detected|identified|present|reactive)|expressed|"
    r"retained|intact|preserved|normal(?:\s+expression)?|lost|loss|absent|absence|present|equivocal|"
    r"indeterminate|(?:score\s*)?[0-3]\s*\+|(?:score\s*)?0\b|\+(?![\d])|\(\s*\+\s*\)|"
    r"-(?=\s|,|;|\)|$)|\(\s*-\s*\)|amplified|not\s+amplified|non-?amplified|overexpressed|"
    r"(?P<pct><?\s*\d{1,3}(?:\.\d)?\s*%))",
    re.I,
)
_RESULT_BEFORE = re.compile(
    r"(?<![A-Za-z])(?P<r>(?P<neg>negative|non-?reactive|unreactive|loss\s+of|lost|absence\s+of|absent|"
    r"lack(?:s|ing)?(?:\s+of)?|no|do(?:es)?\s+not\s+(?:express|stain\s+(?:for|with))|"
    r"(?:is|are)\s+not\s+(?:immuno)?reactive)|positive|immunoreactive|reactive|"
    r"stain(?:s|ed)?(?:\s+(?:strongly|diffusely|focally|weakly))?|express(?:es|ed|ing)?|"
    r"(?:(?:strong|weak|diffuse|focal|patchy|nuclear|cytoplasmic|membranous)\s+)*(?:positivity|"
    r"reactivity|immunoreactivity|staining|expression|labell?ing))"
    r"(?:\s+(?:nuclear|cytoplasmic|membranous))?(?:\s+(?:staining|expression|immunoreactivity))?"
    r"\s*(?:for|of|with|by)?\s*(?:the\s+)?(?:[\w\-/()]+(?:,\s*|\s+(?:and|or|as\s+well\s+as)\s+|"
    r"\s+)){0,6}$",
    re.I,
)
_SHOWN_EXPRESSION = re.compile(
    r"\s*(?:protein\s+)?(?:expression|immunoreactivity|immunopositivity|positivity|staining)\b",
    re.I,
)
_SHOWS = re.compile(
    r"\b(?:show(?:s|ed|ing)?|demonstrat\w*|reveal\w*|exhibit\w*|display\w*|with)\b", re.I
)


def _coordinated_result(ctx: Context, m: re.Match[str], end: int) -> re.Match[str] | None:
    """The result after the last of several coordinated markers ("ER and PR are positive")."""
    vocab = vocabulary()
    pos = m.end()
    for _ in range(6):
        sep = re.match(
            r"\s*(?:,\s*(?:and\s+|or\s+)?|\s(?:and|or|&)\s+|/)\s*", ctx.text[pos:end], re.I
        )
        if not sep:
            return None
        nxt = vocab.markers.match(ctx.text, pos + sep.end(), end)
        if nxt is None:
            return None
        pos = nxt.end()
        r = _RESULT_AFTER.match(ctx.text[pos:end])
        if r:
            return r
    return None


def _nearest_result(before: str) -> re.Match[str] | None:
    """The result word closest before a marker that governs it ("positive for CK7 and
    negative for CK20": CK20 is negative)."""
    for w in reversed(list(re.finditer(r"(?<![A-Za-z])[A-Za-z]", before))):
        b = _RESULT_BEFORE.match(before, w.start())
        if (
            b
            and re.fullmatch(r"stains?", b.group("r"), re.I)
            and re.fullmatch(
                r"[\W\d]*(?:(?:immuno)?histochemical|special|immuno|the|ihc)?\s*",
                before[: w.start()],
                re.I,
            )
        ):
            continue  # "Stains for CK20 and CD10 are negative": the stains, not a result
        if b:
            return b
    return None


_POPULATION_AFTER = re.compile(
    r"\b(?:in|within|of|by|on)\s+(?:the\s+)?(?:adjacent\s+|surrounding\s+|background\s+|residual\s+|"
    r"tumou?ral\s+|entrapped\s+|scattered\s+|cortical\s+|native\s+|reactive\s+)*"
    rf"(?P<p>non-?neoplastic|normal|benign|uninvolved|stromal|inflammatory|{OTHER_POPULATIONS})"
    r"(?![A-Za-z])|\(\s*(?P<c>internal\s+(?:positive\s+|negative\s+)?control)\s*\)",
    re.I,
)
#: Names of the lymphoid population ("lymphocytic", "lymphoid cells", "the lymphocytes").
_LYMPHOID = re.compile(
    r"(?:tumou?ral\s+)?(?:lymphocytes?|lymphocytic|lymphoid)(?:\s+(?:cells?|population|"
    r"proliferation|component|infiltrate))?",
    re.I,
)
_TUMOUR_CELLS = re.compile(
    r"\b(?:neoplastic|tumou?r|malignant|carcinoma|lesional)\s+(?:epithelial\s+)?cells\b", re.I
)
_PERFORMED = re.compile(
    r"\b(?:(?:are|were|was|is|be|been)\s+(?:performed|ordered|obtained|done|requested|pending|"
    r"attempted|examined|evaluated|reviewed)|will\s+be\s+(?:performed|reported)|to\s+be\s+performed|"
    r"stained\s+sections)\b",
    re.I,
)
_VARIANT = re.compile(
    r"[\s\-]*(?:v(?:iii|3)\b|wt\b|wild[\s\-]type|mutant|mutation|exon|del\b)", re.I
)
#: Part of the tumour, not all of it: results of a component are not the tumour's.
_SUBPOPULATION = re.compile(
    r"\b(?:areas?|components?|foci|focus|regions?|(?<!tumor\s)(?<!tumour\s)nodules?|subset|subpopulation|some|many\s+of|"
    r"occasional|scattered|rare|few|most|majority|minority|portions?|spindle|epithelioid|larger|"
    r"smaller|distinct|other|mostly|partly|partially)\b",
    re.I,
)
_COMPARISON = re.compile(
    r"\b(?:in\s+comparison|by\s+contrast|in\s+contrast|compared\s+(?:with|to)|unlike)\b", re.I
)
#: Lexicon concepts that group several different stains (PAS, trichrome, …): never compared.
_GROUPS = frozenset({"special stains", "kappa and lambda light chains"})
#: Result words (``marker_results.tsv``): positive, negative and equivocal.
_RESULTS = load_table("marker_results")
_POS = frozenset(_RESULTS.values("word", result="positive"))
_NEG = frozenset(_RESULTS.values("word", result="negative"))
_EQUIVOCAL = frozenset(_RESULTS.values("word", result="equivocal"))


def _result(word: str, marker: str) -> tuple[str | None, str]:
    """(positive/negative/equivocal, method) of a result word for ``marker``."""
    w = " ".join(word.lower().split())
    if re.fullmatch(r"(?:score\s*)?[0-3]\s*\+|(?:score\s*)?0", w):
        score = int(re.search(r"[0-3]", w).group())  # type: ignore[union-attr]  # fullmatch: a digit
        if marker == "her2":
            return ({0: "negative", 1: "negative", 2: "equivocal", 3: "positive"}[score], "ihc")
        return ("positive" if score > 0 else "negative", "")
    if w.endswith("%"):
        v = float(re.sub(r"[^\d.]", "", w) or 0)
        if "<" in w and v <= 1:
            return "negative", "pct"
        return ("positive" if v >= 1 else "negative", "pct")
    if w.startswith("not ") and not w.startswith("not amplified"):
        return "negative", ""
    if (
        w.startswith(("no ", "does not", "do not", "loss", "absence", "lack"))
        or w == "no"
        or w.endswith(("not immunoreactive", "not reactive"))
    ):
        return "negative", ""
    w = w.split()[-1] if w.split()[-1] in _POS else w
    if "amplified" in w:
        return ("negative" if ("not" in w or "non" in w) else "positive"), "ish"
    if w in _POS:
        return "positive", ""
    if w in _NEG:
        return "negative", ""
    if w in _EQUIVOCAL:
        return "equivocal", ""
    return None, ""


def read_markers(ctx: Context, population: ClauseSubject | None = None) -> ClauseSubject | None:
    """IHC results per marker and population; returns the population a later statement of the
    same paragraph inherits (an explicit non-tumour population, else None)."""
    vocab = vocabulary()
    text = ctx.text
    carried = population
    explicit: ClauseSubject | None = None
    # the subject this statement's earlier results were said of
    said_of: ClauseSubject | None = None
    if _PERFORMED.search(text, ctx.start, ctx.end):
        return carried  # "Immunostains for ER and PR are performed": a test, not a result
    if _COMPARISON.search(text, ctx.start, ctx.end):
        return carried  # "In comparison, the tumor present in the colon …": another tumour
    for m in vocab.markers.finditer(text, ctx.start, ctx.end):
        term = vocab.marker(m.group())
        if term is None or term.concept in _GROUPS:
            continue
        marker = term.concept
        if _VARIANT.match(text, m.end(), min(ctx.end, m.end() + 20)):
            continue  # "EGFR vIII", "EGFR wt": a variant, not the marker as a whole
        c = ctx.clause(m.start())
        after = (
            text[m.end() : c.end]
            if not ctx.in_label(m.start())
            else text[ctx.value_start : ctx.end]
        )
        r = _RESULT_AFTER.match(after) or _coordinated_result(ctx, m, c.end)
        word = None
        before = text[c.start : m.start()]
        label_result = re.fullmatch(
            r"\s*(positive|negative|equivocal|retained|intact|lost)\s*(?:\(?s\)?)?\s*",
            ctx.label_text if ctx.label is not None and not ctx.in_label(m.start()) else "",
        )
        if label_result:
            word = label_result.group(1)  # "Negative: CK20, CDX2."
        elif r:
            word = r.group("r")
        elif (
            _SHOWN_EXPRESSION.match(after)
            and _SHOWS.search(before[-80:])
            and not re.search(r"\b(?:loss|lack|absen\w+|no|not|negative)\b", before[-40:], re.I)
        ):
            word = "expression"  # "the carcinoma showed diffuse nuclear WT1 expression"
        else:
            seg = before[-140:]
            b = _nearest_result(seg)
            if b:
                word = b.group("r")
                lead = seg[: b.start()]
                if b.group("neg") is None and re.search(
                    r"\b(?:loss|absence|lack|lost)\s+(?:of\s+)?(?:\w+\s+)?$", lead, re.I
                ):
                    word = "loss of"  # "loss of expression of MLH1 and PMS2"
                if b.group("neg") is None and re.search(
                    r"\b(?:no|not|without)\s+(?:\w+\s+)?$", before[-140:][: b.start()], re.I
                ):
                    word = "no " + word
        if word is None:
            continue
        result, method = _result(word, marker)
        if result is None:
            continue
        if re.search(
            r"\b(?:fish|ish|in\s+situ\s+hybridi[sz]ation|sish|cish)\b", text[c.start : c.end], re.I
        ):
            method = method or "ish"
        subject = ctx.subject(m.start())
        if subject is None and said_of is not None:
            subject = said_of  # "The satellite nodules are positive for CK7 but negative for X"
        elif subject is not None:
            said_of = subject
        cells_after = _POPULATION_AFTER.search(text, m.end(), c.end)
        cells = cells_after.group("p") if cells_after else None
        if (
            cells
            and cells_after
            and "lymph" not in cells.lower()
            and NEOPLASTIC_BEFORE.search(
                text, max(c.start, cells_after.start("p") - 20), cells_after.start("p")
            )
        ):
            cells_after = None  # "in the neoplastic astrocytes": the tumour's cells
        if cells_after and (subject is None or subject.kind == "tumour"):
            # "MLH1 staining is retained in the adjacent non-neoplastic stromal cells"
            name = cells_after.group("p") or cells_after.group("c")
            subject = ClauseSubject("population", " ".join(name.lower().split()), 0, 0)
        if subject is not None and subject.kind in ("population", "background", "tissue", "lesion"):
            explicit = subject
        elif (
            subject is None
            and carried is not None
            and not _TUMOUR_CELLS.search(text, c.start, m.start())
            and not _TUMOUR_CELLS.search(text, m.end(), c.end)
        ):
            subject = carried  # not where the clause names the tumour cells themselves
        hedge = re.search(
            r"\b(?:equivocal|weak(?:ly)?|focal(?:ly)?|patchy|rare|scattered|"
            r"occasional|variable|heterogeneous)\b",
            text[c.start : c.end],
            re.I,
        )
        pol = ctx.polarity(m.start(), m.end()) if result == "positive" else PRESENT
        certain = pol != UNCERTAIN and ctx.region != "gross"
        if (
            result == "positive"
            and pol == ABSENT
            and word.lower()
            in ("stains", "stain", "stained", "express", "expresses", "expressing", "expression")
        ):
            result = "negative"
        target = ctx.target(subject, "tumour")
        if target.kind == "tissue" and subject is not None and subject.kind == "tissue":
            target = Target("population", ctx.part, subject.name)
        if target.kind == "population" and _LYMPHOID.fullmatch(target.name):
            target = Target("population", target.part, "lymphocytes")  # one population, named so
        partial = _SUBPOPULATION.search(text, c.start, c.end)
        note = " ".join(
            x
            for x in (
                f"method={method}" if method else "",
                "weak" if hedge else "",
                "partial" if partial else "",
            )
            if x
        )
        ctx.add(
            "marker", marker, result, m.start(), m.end(), target=target, certain=certain, note=note
        )
    if explicit is not None and explicit.kind in ("population", "background"):
        return explicit
    if explicit is not None:
        return None
    return carried
