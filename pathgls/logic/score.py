"""The Logic score S_l: does the report contradict itself?

The report becomes statements with scopes (:mod:`pathgls.text.consistency.statements`); the
graph-consistency checks (:mod:`pathgls.text.consistency`) find statements that cannot both be
true; scoped sentence pairs (:mod:`pathgls.logic.pairs`) go to the NLI model. Each pair's
contradiction probability is the larger of the model's and the strongest check's on it (a pair
no check fires on gets the model's, or ``base_probability`` without a model). With
p_1 ≥ p_2 ≥ … over the pairs, as published,

    S_l = 1 − mean(p_1 … p_K),   K = ceil(top_k_fraction × pairs) (at least 1), or a fixed K.

The ``rules`` backend has no model: within a report the checks are its answer. A report with
no pair to compare has nothing to check: S_l is *missing* with the reason, never 1.0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from pathgls.config import LogicConfig
from pathgls.evidence import ContradictionPair, LogicEvidence
from pathgls.logic.pairs import LogicPair, scoped_pairs
from pathgls.nli.base import NLIScorer
from pathgls.text.analyze import AnalyzedReport, analyze_report
from pathgls.text.base import EntityExtractor
from pathgls.text.consistency import run_checks
from pathgls.text.consistency.hits import CheckHit
from pathgls.text.consistency.statements import DIAGNOSIS_TYPES, ReportStatements, report_statements
from pathgls.types import ModuleScore


@runtime_checkable
class ModelFreeNLI(Protocol):
    """An NLI backend without a model (``rules``): Logic's checks are its answer in a report."""

    model_free: bool


def top_k(n_pairs: int, config: LogicConfig) -> int:
    """K for ``n_pairs`` pairs: the fixed K (capped at the pairs) or ceil(fraction × pairs)."""
    if config.top_k is not None:
        return min(config.top_k, n_pairs)
    return max(1, math.ceil(config.top_k_fraction * n_pairs))


@dataclass
class LogicAnalysis:
    """Everything behind one S_l: statements, check hits, pairs and their probabilities."""

    statements: ReportStatements
    hits: list[CheckHit]
    pairs: list[LogicPair]
    probabilities: np.ndarray  # per pair, the combined probability
    model_probabilities: np.ndarray | None  # per pair, the NLI model's (None: no model)


def analyze_logic(
    *, report: AnalyzedReport, nli: NLIScorer, config: LogicConfig | None = None
) -> LogicAnalysis:
    """Statements, checks, pairs and per-pair probabilities of a report (no aggregation).

    Raises:
        ValueError: the NLI backend returned misshaped or non-finite probabilities.
    """
    cfg = config or LogicConfig()
    rs = report_statements(report)
    hits = run_checks(rs, weights=cfg.weights) if cfg.checks else []
    pairs = scoped_pairs(
        rs, hits=hits, diagnosis_pairs=cfg.diagnosis_pairs, max_pairs=cfg.max_pairs
    )
    probs = np.full(len(pairs), cfg.base_probability, dtype=np.float64)
    model = None
    if pairs and not (isinstance(nli, ModelFreeNLI) and nli.model_free):
        prem = [rs.sentence(p.premise) for p in pairs]
        hyp = [rs.sentence(p.hypothesis) for p in pairs]
        model = np.asarray(nli.contradiction(prem, hyp), dtype=np.float64)
        if model.shape != (len(pairs),) or not np.all(np.isfinite(model)):
            raise ValueError(
                f"NLI backend {nli.name!r} returned {model.shape} non-finite or misshaped "
                "probabilities"
            )
        probs = model.copy()
    index = {(p.premise, p.hypothesis): i for i, p in enumerate(pairs)}
    for h in hits:
        i = index.get(h.sentences)
        if i is not None:
            probs[i] = max(probs[i], h.probability)
    return LogicAnalysis(rs, hits, pairs, probs, model)


def _missing_reason(rs: ReportStatements) -> str:
    n_diag = sum(s.type in DIAGNOSIS_TYPES for s in rs.statements)
    reason = (
        "no diagnosis statement and no two statements about the same thing"
        if n_diag == 0
        else "no finding or second diagnosis about the same tissue to check it against"
    )
    return f"logic not scored: {reason} ({len(rs.statements)} entities found)"


def logic_score(
    *, report: AnalyzedReport, nli: NLIScorer, config: LogicConfig | None = None
) -> ModuleScore:
    """S_l of an analysed report with an injected NLI scorer.

    Returns:
        ``ModuleScore(name="logic")`` with evidence: the top-K pairs (sentences, probability,
        kind, the model's probability and the checks that fired on them), every check hit with
        its two sentences, scopes and rule, K, the number of pairs (by kind) and the NLI
        backend. Missing (value None) when the report has no pair to compare.
    """
    cfg = config or LogicConfig()
    la = analyze_logic(report=report, nli=nli, config=cfg)
    rs = la.statements
    warnings = list(report.warnings)
    checks = tuple(h.evidence(rs) for h in la.hits)
    if not la.pairs:
        return ModuleScore(
            name="logic",
            value=None,
            missing_reason=_missing_reason(rs),
            evidence=LogicEvidence(n_pairs=0, nli=nli.name, checks=checks).to_dict(),
            warnings=warnings,
        )
    if len(la.pairs) >= cfg.max_pairs:
        warnings.append(f"logic pairs capped at {cfg.max_pairs} (LogicConfig.max_pairs)")
    k = top_k(len(la.pairs), cfg)
    order = np.argsort(-la.probabilities, kind="stable")[:k]
    by_pair: dict[tuple[int, int], list[CheckHit]] = {}
    for h in la.hits:
        by_pair.setdefault(h.sentences, []).append(h)
    top = [_pair_evidence(rs, la, int(i), by_pair) for i in order]
    kinds: dict[str, int] = {}
    for p in la.pairs:
        kinds[p.kind] = kinds.get(p.kind, 0) + 1
    evidence = LogicEvidence(
        top_pairs=tuple(top),
        k=k,
        n_pairs=len(la.pairs),
        nli=nli.name,
        pairs_by_kind=kinds,
        checks=checks,
    )
    return ModuleScore(
        name="logic",
        value=float(1.0 - la.probabilities[order].mean()),
        evidence=evidence.to_dict(),
        warnings=warnings,
    )


def _pair_evidence(
    rs: ReportStatements,
    la: LogicAnalysis,
    i: int,
    by_pair: dict[tuple[int, int], list[CheckHit]],
) -> ContradictionPair:
    pair = la.pairs[i]
    hits = by_pair.get((pair.premise, pair.hypothesis), [])
    model = la.model_probabilities
    return ContradictionPair(
        premise=rs.sentence(pair.premise),
        hypothesis=rs.sentence(pair.hypothesis),
        probability=float(la.probabilities[i]),
        kind=pair.kind,
        premise_sentence=pair.premise,
        hypothesis_sentence=pair.hypothesis,
        rule=hits[0].rule if hits else None,
        explanation=hits[0].explanation if hits else None,
        nli_probability=None if model is None else float(model[i]),
        checks=tuple(h.evidence(rs) for h in hits),
    )


def score_logic(
    report: str | bytes,
    *,
    extractor: EntityExtractor,
    nli: NLIScorer,
    config: LogicConfig | None = None,
) -> ModuleScore:
    """Analyse a report text and compute its S_l (see :func:`logic_score`)."""
    return logic_score(report=analyze_report(report, extractor=extractor), nli=nli, config=config)
