"""Consistency checks on findings: polarity, invasion, lymph nodes, margins, IHC results.

Each check compares statements *within one scope* (:meth:`~pathgls.types.Scope.compatible`;
a negation only where it :meth:`~pathgls.types.Scope.covers` the statement it denies) and
returns :class:`~pathgls.text.consistency.hits.CheckHit` s with an explanation.
"""

from __future__ import annotations

import dataclasses
import re

from pathgls.text.consistency.hits import CheckHit, CheckWeights, hit
from pathgls.text.consistency.statements import ReportStatements, Statement
from pathgls.types import Scope

#: Entity types for which "affirmed here, denied there" is a contradiction.
NEGATABLE = frozenset(
    {
        "pathological_diagnosis",
        "metastasis",
        "morphology_finding",
        "lymphovascular_invasion",
        "perineural_invasion",
    }
)
#: A denied general concept also denies these more specific ones.
FAMILY = {
    "lymphovascular invasion": frozenset({"lymphatic invasion", "vascular invasion"}),
    "metastasis": frozenset(
        {"nodal metastasis", "macrometastasis", "micrometastasis", "distant metastasis"}
    ),
    "nodal metastasis": frozenset({"macrometastasis", "micrometastasis"}),
    "necrosis": frozenset({"tumor necrosis", "extensive necrosis", "focal necrosis"}),
    "tumor necrosis": frozenset({"extensive necrosis", "focal necrosis"}),
}
#: Denying one of these denies a malignant diagnosis (``carcinoma``: an epithelial one).
GENERIC_MALIGNANCY = frozenset(
    {"malignancy", "malignant neoplasm", "malignant tumor", "malignant cells", "tumor", "neoplasm"}
    | {"cancer", "carcinoma"}
)
#: Words for a lesion's shape that say nothing of which lesion it is.
SHAPE_WORDS = frozenset({"tumor", "mass", "lesion", "nodule", "neoplasm", "neoplasia"})
#: Invasion in general (not of one structure): denying it denies every invasive statement.
GENERAL_INVASION = frozenset(
    {"invasion", "stromal invasion", "infiltrative growth", "invasive", "infiltrating"}
)
#: The first layer an invasion reaches: no invasion of it is no invasion at all ("confined to
#: the urothelium, with no invasion of the lamina propria").
FIRST_LAYER = frozenset({"mucosa"})
_METASTASIS_TYPES = frozenset({"metastasis"})
_MARGIN_DISTANCE = re.compile(
    r"\bmargins?\b[^,;]{0,30}?\b(?:is|was|measures?|of|at|:)\s*(?:approximately\s+)?\d", re.I
)
_NODE_WORDS = re.compile(r"\b(?:from|clearance|distance|closest|nearest|away|clear\s+by)\b", re.I)


def _is_metastatic_diagnosis(s: Statement) -> bool:
    return s.type == "pathological_diagnosis" and "metastasis" in s.attrs("depends_on")


def _invasion(s: Statement) -> bool:
    return s.attr("group") == "invasion" and s.type in (
        "morphology_finding",
        "diagnosis_descriptor",
    )


def _denies(n: Statement, a: Statement) -> tuple[bool, bool]:
    """Whether denial ``n`` denies what ``a`` affirms, and whether only in general terms."""
    cn, ca = n.concept, a.concept
    if cn in SHAPE_WORDS and ca in SHAPE_WORDS:
        return False, False  # "a nodule" and "neither of these nodules": which nodule is which?
    if _invasion(n) and _invasion(a):
        # invasion is compared by the structure invaded: "no visceral pleural invasion" denies
        # "tumour cells penetrate the visceral pleura"; "no invasion" denies every invasion
        if n.scope.locus is None or n.scope.locus in FIRST_LAYER:
            return cn in GENERAL_INVASION or n.scope.locus in FIRST_LAYER, cn != ca
        return n.scope.locus == a.scope.locus, cn != ca
    if cn == ca:
        return True, False
    if ca in FAMILY.get(cn, ()):
        return True, True
    if cn in ("metastasis", "nodal metastasis") and _is_metastatic_diagnosis(a):
        return True, True
    if cn in GENERIC_MALIGNANCY and a.type in ("pathological_diagnosis", "metastasis"):
        behavior = a.attr("behavior")
        if behavior not in ("malignant", "in_situ"):
            return False, False
        if cn == "carcinoma":
            return "carcinoma" in ca or a.attr("lineage") == "epithelial", True
        return True, True
    return False, False


def _denial_scope(n: Statement) -> Scope:
    """A denial's scope; one about the first layer an invasion reaches speaks of all layers."""
    if n.scope.locus in FIRST_LAYER:
        return dataclasses.replace(n.scope, locus=None)
    return n.scope


def check_polarity(rs: ReportStatements, w: CheckWeights) -> list[CheckHit]:
    """The same finding or diagnosis affirmed in one statement and denied in another."""
    denied = [s for s in rs.statements if s.type in NEGATABLE and s.denied]
    affirmed = [s for s in rs.statements if s.type in NEGATABLE and s.affirmed]
    hits = []
    for n in denied:
        for a in affirmed:
            ok, general = _denies(n, a)
            if not ok or not _denial_scope(n).covers(a.scope):
                continue
            why = f"'{a.entity.text}' affirmed, '{n.entity.text}' denied"
            hits.append(hit("polarity", w.polarity_general if general else w.polarity, a, n, why))
    return hits


def _invasive(s: Statement) -> bool:
    """A statement of invasion: an invasive lesion, an invasion, or what only invasion gives."""
    return s.attr("invasive") == "yes" or s.attr("group") in ("invasion", "lvi", "pni")


def _modifies_affirmed_diagnosis(rs: ReportStatements, s: Statement) -> bool:
    """A denied descriptor right before an affirmed diagnosis ("negative for X) and invasive
    Y carcinoma"): ConText reached too far, the descriptor belongs to an affirmed lesion."""
    return any(
        d.type == "pathological_diagnosis"
        and d.affirmed
        and 0 <= d.entity.start - s.entity.end <= 40
        and not rs.text[s.entity.end : d.entity.start].strip(" -,").count(" ") > 4
        for d in rs.statements
    )


def check_in_situ_vs_invasive(rs: ReportStatements, w: CheckWeights) -> list[CheckHit]:
    """Invasion denied in general ("no stromal invasion", "no invasive carcinoma") while an
    invasive lesion or an invasion is affirmed for the same tissue."""
    denials = [
        s
        for s in rs.statements
        if s.denied
        and not (s.type == "diagnosis_descriptor" and _modifies_affirmed_diagnosis(rs, s))
        and (s.scope.locus is None or s.scope.locus in FIRST_LAYER)
        and (
            s.concept in GENERAL_INVASION
            or s.scope.locus in FIRST_LAYER
            or (s.type == "pathological_diagnosis" and s.attr("invasive") == "yes")
        )
    ]
    hits = []
    for n in denials:
        scope = dataclasses.replace(_denial_scope(n), lesion=None)  # "DCIS, no invasion": any
        for a in rs.statements:
            if a is n or not a.affirmed or not _invasive(a) or a.concept == n.concept:
                continue
            if a.attr("invasive") == "no" or not scope.covers(a.scope):
                continue
            why = f"invasion denied ('{n.entity.text}') but '{a.entity.text}' affirmed"
            hits.append(hit("in_situ_vs_invasive", w.in_situ_vs_invasive, a, n, why))
    return hits


def _node_count(s: Statement) -> tuple[int, int] | None:
    if s.type != "lymph_node_involvement" or not s.attr("total"):
        return None
    return int(s.attr("positive")), int(s.attr("total"))


def node_positive(s: Statement) -> bool:
    """An affirmed statement that some lymph node holds tumour."""
    if not s.affirmed or s.scope.station is None:
        return False
    count = _node_count(s)
    if count is not None:
        return count[0] > 0
    if s.type == "lymph_node_involvement":
        return s.attr("result") == "positive"
    if s.type in _METASTASIS_TYPES:
        return s.concept != "isolated tumor cells"
    return s.type == "pathological_diagnosis" and s.attr("behavior") == "malignant"


def node_negative(s: Statement) -> bool:
    """A statement that the lymph nodes it speaks of hold no tumour."""
    if s.scope.station is None or not s.certain:
        return False
    count = _node_count(s)
    if count is not None:
        return count[0] == 0
    if s.type == "lymph_node_involvement":
        return s.attr("result") == "negative"
    if not s.entity.negated:
        return False
    if s.type in _METASTASIS_TYPES or _is_metastatic_diagnosis(s):
        return True
    return s.type == "pathological_diagnosis" and (
        s.concept in GENERIC_MALIGNANCY or s.attr("behavior") == "malignant"
    )


def check_node_status(rs: ReportStatements, w: CheckWeights) -> list[CheckHit]:
    """Tumour in lymph nodes against a negative statement or count for the same nodes, and two
    different counts for the same station."""
    nodal = [s for s in rs.statements if s.scope.station is not None]
    positives = [s for s in nodal if node_positive(s)]
    negatives = [s for s in nodal if node_negative(s)]
    hits = []
    for n in negatives:
        for p in positives:
            if p is n or not n.scope.covers(p.scope):
                continue
            if n.type in NEGATABLE and p.type in NEGATABLE:
                continue  # a denied metastasis against an affirmed one: check_polarity's
            why = f"tumour in nodes ('{p.entity.text}') but '{n.entity.text}'"
            hits.append(hit("node_status", w.node_status, p, n, why))
    counts = [s for s in nodal if _node_count(s) is not None and s.affirmed]
    for p in positives:
        k = _stated_positives(rs, p)
        for c in counts:
            if k is None or c is p or "partial" in (c.scope.quantifier,):
                continue
            same_station = c.scope.station == p.scope.station and c.scope.part == p.scope.part
            if same_station and _sides_agree(c, p) and _node_count(c)[0] != k:  # type: ignore[index]
                why = f"'{p.entity.text}' in {k} nodes but '{c.entity.text}'"
                hits.append(hit("node_counts", w.node_counts, p, c, why))
    for i, a in enumerate(counts):
        for b in counts[i + 1 :]:
            if "partial" in (a.scope.quantifier, b.scope.quantifier):
                continue
            (ka, na), (kb, nb) = _node_count(a), _node_count(b)  # type: ignore[misc]
            same_station = (a.scope.station, a.scope.side) == (b.scope.station, b.scope.side)
            # the same number examined in compatible stations: the same nodes, counted twice
            same_nodes = na == nb and a.scope.compatible(b.scope)
            if a.scope.part == b.scope.part and (same_station or same_nodes) and ka != kb:
                why = f"'{a.entity.text}' and '{b.entity.text}' count the same nodes differently"
                hits.append(hit("node_counts", w.node_counts, a, b, why))
    return hits


_NUMBER_WORDS = {
    w: i
    for i, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
        ]
    )
}
_STATED_NODES = re.compile(
    r"(?<!\bof\s)\b(?P<k>\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
    r"\s+(?:[a-z-]+\s+){0,3}?(?:lymph\s+)?nodes?\b(?!\s+of\b)",
    re.I,
)


def _stated_positives(rs: ReportStatements, s: Statement) -> int | None:
    """ "Metastatic carcinoma involving two sentinel lymph nodes": the number of positive nodes
    a positive statement gives in its clause (None when it gives none or a count of a set)."""
    if _node_count(s) is not None:
        return None
    m = _STATED_NODES.search(rs.clause_text(s))
    if m is None:
        return None
    k = m.group("k").lower()
    return int(k) if k.isdigit() else _NUMBER_WORDS[k]


def _sides_agree(a: Statement, b: Statement) -> bool:
    return a.scope.side is None or b.scope.side is None or a.scope.side == b.scope.side


def margin_status(rs: ReportStatements, s: Statement) -> str | None:
    """``involved``, ``free`` or ``close`` for a margin statement (None: not said)."""
    if not s.certain:
        return None
    result = s.attr("result")
    if result == "positive":
        return "involved"
    if result == "negative":
        return "free"
    if s.attr("status") == "close":
        return "close"
    clause = rs.clause_text(s)
    has_size = any(
        x.type == "size" and x.clause == s.clause and x.sentence == s.sentence
        for x in rs.statements
    )
    if has_size and (_NODE_WORDS.search(clause) or _MARGIN_DISTANCE.search(clause)):
        return "free"  # "closest margin 0.1 cm", "the radial margin is 3.5 cm"
    return None


def check_margins(rs: ReportStatements, w: CheckWeights) -> list[CheckHit]:
    """A margin involved in one statement and free (or only close) in another."""
    margins = [(s, margin_status(rs, s)) for s in rs.of_types("margin")]
    involved = [s for s, st in margins if st == "involved"]
    hits = []
    for n, status in margins:
        if status not in ("free", "close") or n.scope.quantifier == "partial":
            continue
        for p in involved:
            same = n.concept == p.concept or n.concept == "margin"
            if p is n or not same or not n.scope.compatible(p.scope):
                continue
            p_value = w.margin if status == "free" else w.margin_close
            why = f"margin involved ('{p.entity.text}') but {status} ('{n.entity.text}')"
            hits.append(hit("margin", p_value, p, n, why))
    return hits


def check_marker_results(rs: ReportStatements, w: CheckWeights) -> list[CheckHit]:
    """One IHC marker reported positive and negative for the same lesion."""
    markers = [
        s
        for s in rs.of_types("ihc_marker")
        if s.certain and s.attr("result") in ("positive", "negative")
    ]
    hits = []
    for i, a in enumerate(markers):
        for b in markers[i + 1 :]:
            if a.concept != b.concept or a.attr("result") == b.attr("result"):
                continue
            if not a.scope.compatible(b.scope):
                continue
            why = f"{a.concept} {a.attr('result')} here, {b.attr('result')} there"
            hits.append(hit("marker_result", w.marker_result, a, b, why))
    return hits
