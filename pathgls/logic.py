"""The Logic score S_l: does the report's diagnosis follow from (or at least not contradict) its
own findings?

Pairs come from the report graph: every sentence that states findings (morphology, grade,
invasion, nodes, margins, IHC) is a premise for every *diagnosis statement* (a sentence with a
diagnosis entity — in the diagnosis section when the report has one), and diagnosis statements
are paired with each other. Premises and hypotheses are whole sentences, so the NLI model sees
the context ("no lymphovascular invasion"), not bare terms. With contradiction probabilities
p_1 ≥ p_2 ≥ … over the pairs,

    S_l = 1 − mean(p_1 … p_K),   K = ceil(top_k_fraction × pairs) (at least 1), or a fixed K.

A report without any such pair has no logic to check: S_l is *missing*, never 1.0.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from pathgls.config import LogicConfig
from pathgls.evidence import ContradictionPair, LogicEvidence
from pathgls.nli.base import NLIScorer, RuleHit
from pathgls.text.analyze import AnalyzedReport, analyze_report
from pathgls.text.base import EntityExtractor
from pathgls.types import ModuleScore

#: Entity types that make a sentence a premise (a statement of findings).
PREMISE_TYPES = frozenset(
    {
        "morphology_finding",
        "grade",
        "stage",
        "margin",
        "lymphovascular_invasion",
        "perineural_invasion",
        "lymph_node_involvement",
        "metastasis",
        "ihc_marker",
        "ihc_modifier",
        "biomarker_result",
        "diagnosis_descriptor",
    }
)
#: Entity types that make a sentence a diagnosis statement (a hypothesis).
DIAGNOSIS_TYPES = frozenset({"pathological_diagnosis"})


@dataclass(frozen=True)
class LogicPair:
    """One premise → hypothesis pair (sentence indices into the parsed report)."""

    premise: int
    hypothesis: int
    kind: str  # "finding->diagnosis" or "diagnosis<->diagnosis"


@runtime_checkable
class ExplainingNLI(Protocol):
    """An NLI scorer that can say which rule made a pair contradictory."""

    def explain(self, premise: str, hypothesis: str) -> list[RuleHit]: ...


def build_pairs(report: AnalyzedReport, *, config: LogicConfig | None = None) -> list[LogicPair]:
    """Premise → diagnosis pairs of a report (see the module docstring)."""
    cfg = config or LogicConfig()
    by_sentence = report.entities_by_sentence()
    ents = report.entities
    has_diag_section = any(s.kind == "diagnosis" for s in report.parsed.sections)
    premises, diagnoses = [], []
    for s, members in sorted(by_sentence.items()):
        types = {ents[i].type for i in members}
        sentence = report.parsed.sentences[s]
        is_diag = bool(types & DIAGNOSIS_TYPES) and (
            sentence.section == "diagnosis" or not has_diag_section
        )
        if is_diag:
            diagnoses.append(s)
        if types & (PREMISE_TYPES | DIAGNOSIS_TYPES) and (not is_diag or types & PREMISE_TYPES):
            premises.append((len(members), s))

    def candidates() -> Iterator[LogicPair]:
        for _, p in sorted(premises, key=lambda t: (-t[0], t[1])):
            for h in diagnoses:
                if p != h:
                    yield LogicPair(p, h, "finding->diagnosis")
        if cfg.diagnosis_pairs:
            for i, a in enumerate(diagnoses):
                for b in diagnoses[i + 1 :]:
                    yield LogicPair(a, b, "diagnosis<->diagnosis")

    # Generated lazily and cut at max_pairs: a huge report must not build millions of pairs.
    seen: set[tuple[int, int]] = set()
    unique: list[LogicPair] = []
    for pair in candidates():
        key = (min(pair.premise, pair.hypothesis), max(pair.premise, pair.hypothesis))
        if key not in seen:
            seen.add(key)
            unique.append(pair)
            if len(unique) >= cfg.max_pairs:
                break
    return unique


def top_k(n_pairs: int, config: LogicConfig) -> int:
    """K for ``n_pairs`` pairs: the fixed K (capped at the pairs) or ceil(fraction × pairs)."""
    if config.top_k is not None:
        return min(config.top_k, n_pairs)
    return max(1, math.ceil(config.top_k_fraction * n_pairs))


def logic_score(
    *, report: AnalyzedReport, nli: NLIScorer, config: LogicConfig | None = None
) -> ModuleScore:
    """S_l of an analysed report with an injected NLI scorer.

    Returns:
        ``ModuleScore(name="logic")`` with evidence: the top-K pairs (texts, probability, kind
        and, for the rules backend, the rule that fired), K, the number of pairs and the
        NLI backend. Missing (value None) when the report has no pair to check.
    """
    cfg = config or LogicConfig()
    pairs = build_pairs(report, config=cfg)
    warnings = list(report.warnings)
    if not pairs:
        n_diag = sum(e.type in DIAGNOSIS_TYPES for e in report.entities)
        reason = (
            "no diagnosis statement to check"
            if n_diag == 0
            else "no finding or second diagnosis to check it against"
        )
        return ModuleScore(
            name="logic",
            value=None,
            missing_reason=f"logic not scored: {reason} ({len(report.entities)} entities found)",
            evidence=LogicEvidence(n_pairs=0, nli=nli.name).to_dict(),
            warnings=warnings,
        )
    if len(pairs) >= cfg.max_pairs:
        warnings.append(f"logic pairs capped at {cfg.max_pairs} (LogicConfig.max_pairs)")
    sents = report.parsed.sentences
    prem = [sents[p.premise].text for p in pairs]
    hyp = [sents[p.hypothesis].text for p in pairs]
    probs = np.asarray(nli.contradiction(prem, hyp), dtype=np.float64)
    if probs.shape != (len(pairs),) or not np.all(np.isfinite(probs)):
        raise ValueError(
            f"NLI backend {nli.name!r} returned {probs.shape} non-finite or misshaped probabilities"
        )
    k = top_k(len(pairs), cfg)
    order = np.argsort(-probs, kind="stable")[:k]
    explain = nli.explain if isinstance(nli, ExplainingNLI) else None
    evidence_pairs = []
    for i in order:
        hits = explain(prem[i], hyp[i]) if explain is not None else []
        evidence_pairs.append(
            ContradictionPair(
                premise=prem[i],
                hypothesis=hyp[i],
                probability=float(probs[i]),
                kind=pairs[i].kind,
                premise_sentence=pairs[i].premise,
                hypothesis_sentence=pairs[i].hypothesis,
                rule=hits[0].rule if hits else None,
                explanation=hits[0].explanation if hits else None,
            )
        )
    value = float(1.0 - probs[order].mean())
    evidence = LogicEvidence(top_pairs=tuple(evidence_pairs), k=k, n_pairs=len(pairs), nli=nli.name)
    return ModuleScore(name="logic", value=value, evidence=evidence.to_dict(), warnings=warnings)


def score_logic(
    report: str | bytes,
    *,
    extractor: EntityExtractor,
    nli: NLIScorer,
    config: LogicConfig | None = None,
) -> ModuleScore:
    """Analyse a report text and compute its S_l (see :func:`logic_score`)."""
    return logic_score(report=analyze_report(report, extractor=extractor), nli=nli, config=config)
