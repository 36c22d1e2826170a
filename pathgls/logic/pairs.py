"""Which sentences of a report Logic compares: scoped pairs from the report graph.

Two sentences are paired when a statement of one and a statement of the other are about the
same thing in compatible scopes (:meth:`~pathgls.types.Scope.compatible`):

* ``finding<->finding`` — the same finding or its family (lymphovascular invasion, metastasis,
  necrosis, invasion), the margins, one IHC marker, the grade on one axis, the lymph nodes, or
  the stage against nodes, metastases and size;
* ``finding->diagnosis`` — a finding that bears on a diagnosis (it implies malignancy or a
  grade, the diagnosis depends on it, a grade, a stage, a lymph-node statement);
* ``diagnosis<->diagnosis`` — a benign and a malignant diagnosis of one tissue, or one
  diagnosis affirmed and denied;
* ``check`` / ``within-sentence`` — the sentences of every contradiction a check found (within
  one sentence for "Grade 1 (poorly differentiated)");
* ``finding->diagnosis (support)`` — only when a report has none of the pairs above: its
  findings against the diagnoses of the same tissue (the published pairing), so a report whose
  statements cannot contradict each other is still checked rather than missing.

Pairs are those that *could* contradict: a finding only malignancy has against a benign or
in-situ diagnosis, not against the carcinoma it supports. Pairs that cannot contradict would only
dilute the top-K mean (a report of 40 supportive pairs hides its one contradiction).

Statements about different tissue (another part, side, organ, lymph-node station) are never
paired. The pairs are deterministic (check hits first, then report order) and at most
``max_pairs``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from pathgls.config import LogicConfig
from pathgls.text.analyze import AnalyzedReport
from pathgls.text.consistency import run_checks
from pathgls.text.consistency.findings import FAMILY, NEGATABLE
from pathgls.text.consistency.hits import CheckHit
from pathgls.text.consistency.statements import (
    DIAGNOSIS_TYPES,
    ReportStatements,
    Statement,
    report_statements,
)
from pathgls.text.consistency.tumour import grade_axis
from pathgls.types import Scope

_ROOT = {member: root for root, members in FAMILY.items() for member in members}
_ROOT |= {"macrometastasis": "metastasis", "micrometastasis": "metastasis"}
_LINKED_TOPICS = frozenset(frozenset({"stage", other}) for other in ("nodes", "size", "metastasis"))


@dataclass(frozen=True)
class LogicPair:
    """One premise → hypothesis pair (sentence indices into the parsed report)."""

    premise: int
    hypothesis: int
    kind: str  # finding<->finding, finding->diagnosis, diagnosis<->diagnosis, check, ...


def topic(s: Statement) -> str | None:
    """What a finding statement is about, for pairing (None: nothing to compare)."""
    if s.scope.station is not None and s.type != "anatomical_site":
        return "nodes"
    if s.type == "stage":
        return "stage"
    if s.type == "size":
        return "size"
    if s.type == "margin":
        return "margin"
    if s.type == "ihc_marker":
        return f"marker:{s.concept}"
    if s.type == "grade":
        axis = grade_axis(s)
        return f"grade:{'d' if axis in ('differentiation', 'tier') else axis}" if axis else None
    if s.type == "metastasis":
        return "metastasis"
    if s.type in NEGATABLE and s.type not in DIAGNOSIS_TYPES:
        if s.attr("group") == "invasion":
            return "invasion"
        return _ROOT.get(s.concept, s.concept)
    return None


def _same_tissue(a: Statement, b: Statement) -> bool:
    return _loose(a.scope).compatible(_loose(b.scope))


def _loose(scope: Scope) -> Scope:
    return dataclasses.replace(scope, lesion=None, quantifier=None)


_NOT_MALIGNANT = frozenset({"benign_neoplasm", "benign_process", "premalignant", "in_situ"})
_MALIGNANT_GROUPS = frozenset({"invasion", "lvi", "pni", "metastasis", "extranodal_extension"})


def _bears_on(f: Statement, d: Statement) -> bool:
    """Whether finding ``f`` could contradict diagnosis ``d``: a finding only malignancy has
    against a benign, premalignant or in-situ diagnosis; a grade against a diagnosis whose name
    carries a grade; a denied finding the diagnosis depends on."""
    behaviour = d.attr("behavior")
    malignant_only = (
        f.type == "stage"
        or "malignant" in f.attrs("implies")
        or f.attr("group") in _MALIGNANT_GROUPS
        or f.scope.station is not None
    )
    if malignant_only and f.affirmed and behaviour in _NOT_MALIGNANT:
        return True
    if (f.type == "grade" or f.attrs("implies") & {"high_grade", "low_grade"}) and d.attr("grade"):
        return True
    return f.denied and bool(f.attrs("group") & d.attrs("depends_on"))


def _diagnosis_pair(a: Statement, b: Statement) -> bool:
    """A diagnosis and its denial, or a benign tumour or premalignant lesion and a malignancy
    of the same kind (a benign process beside a carcinoma is ordinary coexistence)."""
    if a.generic or b.generic or not (a.certain and b.certain):
        return False
    if a.entity.negated != b.entity.negated:
        return a.concept == b.concept
    kinds = {a.attr("behavior"), b.attr("behavior")}
    if "malignant" not in kinds or not kinds & {"benign_neoplasm", "premalignant"}:
        return False
    la, lb = a.attr("lineage"), b.attr("lineage")
    return not (la and lb and la != lb)


def _candidates(rs: ReportStatements, diagnosis_pairs: bool) -> Iterator[tuple[int, int, str]]:
    stmts = [s for s in rs.statements if s.certain]
    findings = [(s, topic(s)) for s in stmts if s.type not in DIAGNOSIS_TYPES]
    findings = [(s, t) for s, t in findings if t is not None]
    diagnoses = [s for s in stmts if s.type in DIAGNOSIS_TYPES]
    for i, (a, ta) in enumerate(findings):
        for b, tb in findings[i + 1 :]:
            linked = ta == tb or frozenset({ta, tb}) in _LINKED_TOPICS
            if a.sentence != b.sentence and linked and _same_tissue(a, b):
                yield a.sentence, b.sentence, "finding<->finding"
    for f, _ in findings:
        for d in diagnoses:
            if f.sentence != d.sentence and _bears_on(f, d) and _same_tissue(f, d):
                yield f.sentence, d.sentence, "finding->diagnosis"
    if diagnosis_pairs:
        for i, a in enumerate(diagnoses):
            for b in diagnoses[i + 1 :]:
                if a.sentence != b.sentence and _diagnosis_pair(a, b) and _same_tissue(a, b):
                    yield a.sentence, b.sentence, "diagnosis<->diagnosis"


def _support(rs: ReportStatements) -> Iterator[tuple[int, int, str]]:
    """The published pairing, findings → the diagnoses they bear on: what a report without
    statements that could contradict each other is checked on."""
    stmts = [s for s in rs.statements if s.certain]
    diagnoses = [s for s in stmts if s.type in DIAGNOSIS_TYPES and not s.generic]
    for f in stmts:
        if f.type in DIAGNOSIS_TYPES or topic(f) is None:
            continue
        for d in diagnoses:
            if f.sentence != d.sentence and _same_tissue(f, d):
                yield f.sentence, d.sentence, "finding->diagnosis (support)"


def scoped_pairs(
    rs: ReportStatements,
    *,
    hits: Sequence[CheckHit] = (),
    diagnosis_pairs: bool = True,
    max_pairs: int = 2000,
) -> list[LogicPair]:
    """The scoped sentence pairs of a report (see the module docstring)."""
    seen: set[tuple[int, int]] = set()
    pairs: list[LogicPair] = []

    def add(a: int, b: int, kind: str) -> bool:
        """Add a pair; False once ``max_pairs`` are there (the caller stops)."""
        key = (min(a, b), max(a, b))
        if key not in seen:
            seen.add(key)
            pairs.append(LogicPair(key[0], key[1], kind))
        return len(pairs) < max_pairs

    for h in hits:
        a, b = h.sentences
        if not add(a, b, "within-sentence" if a == b else "check"):
            return pairs
    for a, b, kind in _candidates(rs, diagnosis_pairs):
        if not add(a, b, kind):
            return pairs
    if not pairs:
        for a, b, kind in _support(rs):
            if not add(a, b, kind):
                return pairs
    return pairs


def build_pairs(report: AnalyzedReport, *, config: LogicConfig | None = None) -> list[LogicPair]:
    """The pairs Logic compares in an analysed report, check hits included."""
    cfg = config or LogicConfig()
    rs = report_statements(report)
    hits = run_checks(rs, weights=cfg.weights) if cfg.checks else []
    return scoped_pairs(rs, hits=hits, diagnosis_pairs=cfg.diagnosis_pairs, max_pairs=cfg.max_pairs)
