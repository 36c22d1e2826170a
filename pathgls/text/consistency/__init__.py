"""Graph-consistency checks: statements of one report that cannot both be true.

A report becomes scoped statements (:mod:`.statements`); each check is a small function from
them to :class:`~pathgls.text.consistency.hits.CheckHit` s — findings (:mod:`.findings`:
polarity, invasion, lymph nodes, margins, IHC results) and the tumour (:mod:`.tumour`: grade,
behaviour, the origin of metastases, stage). :data:`CHECKS` names them; :func:`run_checks`
runs them over a report, one hit per pair of statements and rule (the strongest kept).

Logic (:mod:`pathgls.logic`) scores reports with them; the ``rules`` NLI backend applies them
to two texts. May import: core, :mod:`pathgls.text`.
"""

from __future__ import annotations

from types import MappingProxyType

from pathgls.text.consistency.findings import (
    check_in_situ_vs_invasive,
    check_margins,
    check_marker_results,
    check_node_status,
    check_polarity,
)
from pathgls.text.consistency.hits import Check, CheckHit, CheckWeights
from pathgls.text.consistency.statements import ReportStatements
from pathgls.text.consistency.tumour import (
    check_benign_diagnosis,
    check_benign_morphology,
    check_benign_vs_malignant,
    check_grade,
    check_stage,
    check_unsupported_metastasis,
)

#: Check name → function, in the order they run.
CHECKS: MappingProxyType[str, Check] = MappingProxyType(
    {
        "polarity": check_polarity,
        "in_situ_vs_invasive": check_in_situ_vs_invasive,
        "node_status": check_node_status,
        "margin": check_margins,
        "marker_result": check_marker_results,
        "grade": check_grade,
        "benign_vs_malignant": check_benign_vs_malignant,
        "benign_diagnosis": check_benign_diagnosis,
        "benign_morphology": check_benign_morphology,
        "unsupported_metastasis": check_unsupported_metastasis,
        "stage": check_stage,
    }
)


def run_checks(
    statements: ReportStatements, *, weights: CheckWeights | None = None
) -> list[CheckHit]:
    """Every contradiction the checks find in a report, strongest first.

    A pair of statements is reported once per rule (the strongest hit), and in report order
    among equals, so the result is deterministic.
    """
    w = weights or CheckWeights()
    best: dict[tuple[str, int, int], CheckHit] = {}
    for check in CHECKS.values():
        for h in check(statements, w):
            key = (h.rule, *sorted((h.a.index, h.b.index)))
            if key not in best or h.probability > best[key].probability:
                best[key] = h
    return sorted(
        best.values(),
        key=lambda h: (-h.probability, h.sentences, h.rule, min(h.a.index, h.b.index)),
    )
