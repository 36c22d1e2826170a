"""The Logic score S_l: does the report contradict itself?

The report becomes a typed case model (:mod:`pathgls.text.case`: parts → lesions → slots, from
its assertions only); the checks (:mod:`pathgls.logic.checks`) compare facts about the same
target; the statements they compared (and, with an NLI model, each finding statement against
its tumour's diagnosis statement) are the pairs (:mod:`pathgls.logic.pairs`). A pair's
contradiction probability is the larger of the NLI model's and the strongest check's on it (a
pair no check fires on gets the model's, or ``base_probability`` without a model). With
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
from numpy.typing import NDArray

from pathgls.config import LogicConfig
from pathgls.evidence import CheckedStatement, CheckEvidence, ContradictionPair, LogicEvidence
from pathgls.logic.base import NLIScorer
from pathgls.logic.checks import Comparison, run_checks
from pathgls.logic.judged import EmbeddingJudge, JudgedPair, JudgedReport, judge_report
from pathgls.logic.pairs import LogicPair, case_pairs
from pathgls.text.analyze import AnalyzedReport
from pathgls.text.case import Case, Fact, build_case
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
    """Everything behind one S_l: the case model, comparisons, pairs and their probabilities."""

    case: Case
    comparisons: list[Comparison]
    pairs: list[LogicPair]
    probabilities: NDArray[np.float64]  # per pair, the combined probability
    model_probabilities: NDArray[np.float64] | None  # per pair, the NLI model's (None: no model)

    @property
    def conflicts(self) -> list[Comparison]:
        """The comparisons that found a contradiction, strongest first."""
        return [c for c in self.comparisons if c.conflict]


def _case_of(report: AnalyzedReport | Case | str | bytes) -> Case:
    if isinstance(report, Case):
        return report
    if isinstance(report, AnalyzedReport):
        return report.case  # built once per report, whoever asks first
    return build_case(report)


def analyze_logic(
    *,
    report: AnalyzedReport | Case | str | bytes,
    nli: NLIScorer,
    config: LogicConfig | None = None,
) -> LogicAnalysis:
    """Case model, comparisons, pairs and per-pair probabilities of a report (no aggregation).

    Raises:
        ValueError: the NLI backend returned misshaped or non-finite probabilities.
    """
    cfg = config or LogicConfig()
    case = _case_of(report)
    comparisons = run_checks(case, weights=cfg.weights) if cfg.checks else []
    model_free = isinstance(nli, ModelFreeNLI) and nli.model_free
    pairs = case_pairs(case, comparisons, with_model=not model_free, max_pairs=cfg.max_pairs)
    probs = np.full(len(pairs), cfg.base_probability, dtype=np.float64)
    model = None
    if pairs and not model_free:
        prem = [case.sentence(p.premise) for p in pairs]
        hyp = [case.sentence(p.hypothesis) for p in pairs]
        model = np.asarray(nli.contradiction(prem, hyp), dtype=np.float64)
        if model.shape != (len(pairs),) or not np.all(np.isfinite(model)):
            raise ValueError(
                f"NLI backend {nli.name!r} returned {model.shape} non-finite or misshaped "
                "probabilities"
            )
        probs = model.copy()
    index = {(p.premise, p.hypothesis): i for i, p in enumerate(pairs)}
    for c in comparisons:
        i = index.get(c.statements)
        if i is not None and c.conflict:
            probs[i] = max(probs[i], c.probability)
    return LogicAnalysis(case, comparisons, pairs, probs, model)


def _missing_reason(case: Case) -> str:
    n_assert = len(case.document.assertions())
    n_facts = sum(f.certain for f in case.facts)
    if n_assert == 0:
        why = "no assertion (only headings, forms, legends or history)"
    elif not any(f.slot == "type" and f.certain for f in case.facts):
        why = "no diagnosed tumour and no two statements about the same target"
    else:
        why = "no second statement about the diagnosed tumour or its margins, nodes or markers"
    return f"logic not scored: {why} ({n_assert} assertions, {n_facts} facts)"


def fact_label(case: Case, f: Fact) -> str:
    """A fact as evidence: "invasion lymphatic = absent ('no lymphatic invasion')"."""
    return f"{f.describe()} ('{' '.join(case.evidence(f).split())}')"


def check_evidence(case: Case, c: Comparison) -> CheckEvidence:
    """A conflict as evidence: the rule, both statements, both facts and their targets."""
    first, second = sorted((c.a, c.b), key=lambda f: (f.statement, f.start))

    def side(f: Fact) -> CheckedStatement:
        return CheckedStatement(
            sentence=" ".join(case.sentence(f.statement).split()),
            entity=fact_label(case, f),
            scope=f.target.describe(),
        )

    return CheckEvidence(
        rule=c.rule,
        probability=c.probability,
        explanation=c.explanation,
        first=side(first),
        second=side(second),
    )


def logic_score(
    *,
    report: AnalyzedReport | Case | str | bytes,
    nli: NLIScorer,
    config: LogicConfig | None = None,
) -> ModuleScore:
    """S_l of a report with an injected NLI scorer.

    Returns:
        ``ModuleScore(name="logic")`` with evidence: the top-K pairs (statements, probability,
        kind, the model's probability and the checks that fired on them), every conflict with
        its two statements, facts and targets, K, the number of pairs (by kind), the NLI
        backend, the statement kinds and the case model's notes (where it stayed silent).
        Missing (value None) when the report has no pair to compare.
    """
    cfg = config or LogicConfig()
    if isinstance(nli, EmbeddingJudge):
        return _judged_score(report=report, judge=nli, config=cfg)
    la = analyze_logic(report=report, nli=nli, config=cfg)
    case = la.case
    warnings = list(report.warnings) if isinstance(report, AnalyzedReport) else []
    warnings += [w for w in case.document.warnings if w not in warnings]
    conflicts = la.conflicts
    checks = tuple(check_evidence(case, c) for c in conflicts)
    kinds_read = case.document.kinds()
    silent = tuple(case.notes)
    if not la.pairs:
        return ModuleScore(
            name="logic",
            value=None,
            missing_reason=_missing_reason(case),
            evidence=LogicEvidence(
                n_pairs=0, nli=nli.name, checks=checks, statements=kinds_read, silent=silent
            ).to_dict(),
            warnings=warnings,
        )
    if len(la.pairs) >= cfg.max_pairs:
        warnings.append(f"logic pairs capped at {cfg.max_pairs} (LogicConfig.max_pairs)")
    k = top_k(len(la.pairs), cfg)
    order = np.argsort(-la.probabilities, kind="stable")[:k]
    by_pair: dict[tuple[int, int], list[Comparison]] = {}
    for c in conflicts:
        by_pair.setdefault(c.statements, []).append(c)
    top = [_pair_evidence(la, int(i), by_pair) for i in order]
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
        statements=kinds_read,
        silent=silent,
    )
    return ModuleScore(
        name="logic",
        value=float(1.0 - la.probabilities[order].mean()),
        evidence=evidence.to_dict(),
        warnings=warnings,
    )


def _pair_evidence(
    la: LogicAnalysis, i: int, by_pair: dict[tuple[int, int], list[Comparison]]
) -> ContradictionPair:
    pair = la.pairs[i]
    hits = by_pair.get((pair.premise, pair.hypothesis), [])
    model = la.model_probabilities
    return ContradictionPair(
        premise=" ".join(la.case.sentence(pair.premise).split()),
        hypothesis=" ".join(la.case.sentence(pair.hypothesis).split()),
        probability=float(la.probabilities[i]),
        kind=pair.kind,
        premise_sentence=pair.premise,
        hypothesis_sentence=pair.hypothesis,
        rule=hits[0].rule if hits else None,
        explanation=hits[0].explanation if hits else None,
        nli_probability=None if model is None else float(model[i]),
        checks=tuple(check_evidence(la.case, h) for h in hits),
    )


def _judged_score(
    *,
    report: AnalyzedReport | Case | str | bytes,
    judge: EmbeddingJudge,
    config: LogicConfig,
) -> ModuleScore:
    """S_l with the learned judge over top-K similar pairs and the checks (:mod:`.judged`)."""
    case = _case_of(report)
    warnings = list(report.warnings) if isinstance(report, AnalyzedReport) else []
    warnings += [w for w in case.document.warnings if w not in warnings]
    comparisons = run_checks(case, weights=config.weights) if config.checks else []
    jr = judge_report(case, comparisons, judge, config)
    conflicts = [c for c in comparisons if c.conflict]
    checks = tuple(check_evidence(case, c) for c in conflicts)
    kinds_read = case.document.kinds()
    if not jr.pairs:
        n = len(jr.units)
        return ModuleScore(
            name="logic",
            value=None,
            missing_reason=(f"logic not scored: fewer than two assertions to compare ({n} read)"),
            evidence=LogicEvidence(
                n_pairs=0,
                nli=judge.name,
                checks=checks,
                statements=kinds_read,
                silent=tuple(case.notes),
            ).to_dict(),
            warnings=warnings,
        )
    if len(jr.units) >= config.judge_max_units:
        warnings.append(
            f"logic read the first {config.judge_max_units} statements only "
            "(LogicConfig.judge_max_units)"
        )
    q = np.array([p.probability for p in jr.pairs], dtype=np.float64)
    k = min(config.judge_top_k, len(jr.pairs))
    order = np.argsort(-q, kind="stable")
    judged = [p.calibrated for p in jr.pairs if p.judge is not None]
    s_judge = 1.0 - float(np.mean(sorted(judged, reverse=True)[:k])) if judged else None
    s_checks = analyze_checks_only(case, comparisons, config)
    shown = [
        int(i)
        for rank, i in enumerate(order[: max(k, 5)])
        if rank < k or jr.pairs[int(i)].contradicts
    ]
    kinds: dict[str, int] = {}
    for p in jr.pairs:
        kinds[p.kind] = kinds.get(p.kind, 0) + 1
    evidence = LogicEvidence(
        top_pairs=tuple(_judged_evidence(case, jr, jr.pairs[i]) for i in shown),
        k=k,
        n_pairs=len(jr.pairs),
        nli=judge.name,
        pairs_by_kind=kinds,
        checks=checks,
        statements=kinds_read,
        silent=tuple(case.notes),
    )
    value = (
        min(v for v in (s_checks, s_judge) if v is not None)
        if (s_checks is not None or s_judge is not None)
        else float(1.0 - q[order[:k]].mean())
    )
    return ModuleScore(
        name="logic", value=float(value), evidence=evidence.to_dict(), warnings=warnings
    )


def analyze_checks_only(
    case: Case, comparisons: list[Comparison], config: LogicConfig
) -> float | None:
    """S_l of the checks alone, as the offline ``rules`` backend computes it (None: no pair)."""
    pairs = case_pairs(case, comparisons, with_model=False, max_pairs=config.max_pairs)
    if not pairs:
        return None
    probs = np.full(len(pairs), config.base_probability, dtype=np.float64)
    index = {(p.premise, p.hypothesis): i for i, p in enumerate(pairs)}
    for c in comparisons:
        i = index.get(c.statements)
        if i is not None and c.conflict:
            probs[i] = max(probs[i], c.probability)
    k = top_k(len(pairs), config)
    return float(1.0 - np.sort(probs)[::-1][:k].mean())


def _judged_evidence(case: Case, jr: JudgedReport, p: JudgedPair) -> ContradictionPair:
    a, b = jr.units[p.a], jr.units[p.b]
    first = p.checks[0] if p.checks else None
    return ContradictionPair(
        premise=jr.texts[p.a],
        hypothesis=jr.texts[p.b] if p.b != p.a else "",
        probability=float(p.probability),
        kind=p.kind,
        premise_sentence=a.statement,
        hypothesis_sentence=b.statement if p.b != p.a else None,
        rule=first.rule if first else None,
        explanation=first.explanation if first else None,
        nli_probability=p.judge,
        checks=tuple(check_evidence(case, c) for c in p.checks),
        contradicts=p.contradicts,
        source=p.source,
    )


def score_logic(
    report: str | bytes,
    *,
    nli: NLIScorer,
    config: LogicConfig | None = None,
) -> ModuleScore:
    """Read a report text into its case model and compute its S_l (see :func:`logic_score`)."""
    return logic_score(report=report, nli=nli, config=config)
