"""The Stability score S_s: does the subject's report hold under a stain shift and a false prompt?

With R_orig the report under the neutral prompt, R_aug under a Macenko stain perturbation and
R_attack under an adversarial prompt,

    S_s = 1 − ½ (|Δ(R_orig, R_aug)| + |Δ(R_orig, R_attack)|),   Δ ∈ [0, 1].

Δ backends (:data:`DELTA_BACKENDS`, a registry of pure functions with the model injected;
:data:`DELTAS` are their names):

``dx`` (default)
    what the reports diagnose, not how they say it: principal diagnoses (soft concept match,
    behaviour must agree), the severity of their behaviour and key findings with their values
    (nodes, margins, LVI/PNI, invasion, grade), compared both ways (:mod:`pathgls.stability.dx`);
    falls back to the ``embedding`` Δ when a report has no diagnosis, saying so in the scope.
    On the 130 non-zero HARE expert dev pairs, Spearman ρ with the experts 0.72 (bootstrap 95 %
    CI 0.64–0.80, 3 pairs fell back) against 0.45 (0.31–0.58, 105 fell back to whole reports)
    for the embedding Δ (``benchmarks/bench_delta_validity.py``).
``embedding``
    1 − cosine of MiniLM sentence embeddings, on the *diagnosis sections* when both reports
    have one (pathologists judge agreement on the diagnosis first), else on the whole reports;
    mapped to [0, 1] by ``Δ = clip((1 − cos) / (1 − c_unrelated), 0, 1)`` with
    ``c_unrelated = 0.36``, the median MiniLM cosine between reference reports of *different*
    cases (TCGA, 48 reports of the HARE expert set: p10 0.23, p90 0.55). So Δ = 1 reads "as far
    apart as the reports of two unrelated cases", and identical texts give 0.
``nli``
    bidirectional entailment: Δ = 1 − ½ (P(orig ⇒ x) + P(x ⇒ orig)), with any NLI model that
    gives entailment probabilities.
``entity``
    1 − soft F1 between the two reports' findings; a finding negated on one side and affirmed
    on the other never matches; soft matching by embedding cosine when an embedder is given,
    else by concept.

A missing report (the subject failed under a condition) leaves S_s missing with the reason;
nothing is filled in. Evidence lists, per condition, the findings added, removed and
negation-flipped, and — from the same comparison as the ``dx`` Δ (:func:`pathgls.stability.dx.
dx_changes`) — the principal diagnoses before and after, those added and removed, the behaviour
before and after, the key findings whose values flipped, and whether the diagnosis changed
(a diagnosis added or removed, or its behaviour changed), whatever the Δ backend.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np

from pathgls.config import DELTAS as DELTAS  # the backends
from pathgls.config import UNRELATED_COSINE, StabilityConfig
from pathgls.errors import ConfigError
from pathgls.evidence import FindingChanges, StabilityEvidence
from pathgls.registry import Registry
from pathgls.stability.dx import ConceptSimilarity, dx_changes, dx_delta
from pathgls.text.analyze import AnalyzedReport
from pathgls.text.diagnoses import diagnosis_profile
from pathgls.text.diagnoses import diagnosis_text as diagnosis_text
from pathgls.text.embedders import TextEmbedder
from pathgls.types import Entity, ModuleScore

#: Entity types that count as findings for the entity Δ and the evidence.
FINDING_TYPES = frozenset(
    {
        "pathological_diagnosis",
        "morphology_finding",
        "diagnosis_descriptor",
        "grade",
        "lymphovascular_invasion",
        "perineural_invasion",
        "metastasis",
        "margin",
        "lymph_node_involvement",
        "biomarker_result",
        "ihc_marker",
    }
)


@runtime_checkable
class EntailmentScorer(Protocol):
    """An NLI model with entailment probabilities (``probabilities`` columns E, N, C)."""

    name: str

    def probabilities(self, premises: list[str], hypotheses: list[str]) -> np.ndarray: ...


def comparison_texts(
    a: AnalyzedReport, b: AnalyzedReport, *, diagnosis: bool
) -> tuple[str, str, str]:
    """The texts Δ compares: both diagnosis sections when both exist, else both whole reports.

    Returns:
        ``(text_a, text_b, scope)`` with scope ``diagnosis`` or ``report``.
    """
    if diagnosis:
        da, db = diagnosis_text(a), diagnosis_text(b)
        if da and db:
            return da, db, "diagnosis"
    return a.text.strip(), b.text.strip(), "report"


def embedding_delta(
    a: str, b: str, *, embedder: TextEmbedder, unrelated_cosine: float = UNRELATED_COSINE
) -> float:
    """``clip((1 − cos) / (1 − unrelated_cosine), 0, 1)`` of the two texts' embeddings."""
    if a.strip() == b.strip():
        return 0.0
    e = np.asarray(embedder.embed([a, b]), dtype=np.float64)
    cos = float(e[0] @ e[1] / max(np.linalg.norm(e[0]) * np.linalg.norm(e[1]), 1e-12))
    return float(np.clip((1.0 - cos) / (1.0 - unrelated_cosine), 0.0, 1.0))


def nli_delta(a: str, b: str, *, nli: EntailmentScorer) -> float:
    """``1 − ½ (P(a ⇒ b) + P(b ⇒ a))``.

    Raises:
        ConfigError: the NLI backend gives no entailment probabilities (e.g. ``rules``).
    """
    if a.strip() == b.strip():
        return 0.0
    if not hasattr(nli, "probabilities"):
        raise ConfigError(
            f"the nli Δ needs entailment probabilities; NLI backend {nli.name!r} has none "
            "(use an hf:<dir> NLI model)"
        )
    p = np.asarray(nli.probabilities([a, b], [b, a]), dtype=np.float64)
    return float(np.clip(1.0 - 0.5 * (p[0, 0] + p[1, 0]), 0.0, 1.0))


def _key(e: Entity) -> str:
    return (e.concept or " ".join(e.text.lower().split())).lower()


def findings(report: AnalyzedReport) -> dict[str, bool]:
    """Finding concept → negated (affirmed anywhere wins), for the report's finding types."""
    out: dict[str, bool] = {}
    for e in report.entities:
        if e.type in FINDING_TYPES:
            k = _key(e)
            out[k] = out.get(k, True) and e.negated
    return out


def entity_delta(
    a: AnalyzedReport,
    b: AnalyzedReport,
    *,
    embedder: TextEmbedder | None = None,
    threshold: float = 0.5,
) -> float:
    """1 − soft F1 of the findings; negation must agree for any credit.

    Each finding's credit is its best match on the other side: 1 for the same concept, else
    the embedding cosine of the concepts when ``embedder`` is given and the cosine is at least
    ``threshold``, else 0 — and always 0 when the negation differs. Two reports without any
    finding are identical (Δ = 0); one side empty gives Δ = 1.
    """
    fa, fb = findings(a), findings(b)
    if not fa and not fb:
        return 0.0
    if not fa or not fb:
        return 1.0
    ka, kb = list(fa), list(fb)
    sim = np.array([[1.0 if x == y else 0.0 for y in kb] for x in ka])
    if embedder is not None:
        e = np.asarray(embedder.embed(ka + kb), dtype=np.float64)
        cos = e[: len(ka)] @ e[len(ka) :].T
        sim = np.maximum(sim, np.where(cos >= threshold, cos, 0.0))
    neg_ok = np.array([[fa[x] == fb[y] for y in kb] for x in ka])
    sim = np.clip(sim * neg_ok, 0.0, 1.0)
    recall = float(sim.max(axis=1).mean())
    precision = float(sim.max(axis=0).mean())
    if precision + recall == 0:
        return 1.0
    return float(1.0 - 2 * precision * recall / (precision + recall))


def finding_changes(orig: AnalyzedReport, other: AnalyzedReport) -> dict[str, Any]:
    """Findings added, removed and negation-flipped, and the diagnosis change of the dx Δ.

    ``diagnosis_changed`` and the diagnosis keys come from :func:`~pathgls.stability.dx.
    dx_changes` on the two reports' diagnosis profiles — the comparison the ``dx`` Δ scores.
    """
    fo, fx = findings(orig), findings(other)
    dx = dx_changes(diagnosis_profile(orig), diagnosis_profile(other))
    return {
        # negated findings are shown as such ("no necrosis"): an added negation is not a finding
        "added": sorted(("no " if fx[k] else "") + k for k in fx if k not in fo),
        "removed": sorted(("no " if fo[k] else "") + k for k in fo if k not in fx),
        "negation_flipped": sorted(k for k in fo if k in fx and fo[k] != fx[k]),
        "diagnosis_changed": dx.diagnosis_changed,
        "diagnoses_before": list(dx.diagnoses_before),
        "diagnoses_after": list(dx.diagnoses_after),
        "diagnoses_added": list(dx.added),
        "diagnoses_removed": list(dx.removed),
        "behaviour_before": dx.behaviour_before,
        "behaviour_after": dx.behaviour_after,
        "key_findings_changed": list(dx.findings_changed),
    }


DeltaFn = Callable[[AnalyzedReport, AnalyzedReport], tuple[float, str]]

#: Δ backends: factories ``(argument, config, *, embedder, nli) -> DeltaFn``.
DELTA_BACKENDS: Registry[DeltaFn] = Registry("delta", label="stability delta")


@DELTA_BACKENDS.register(
    "embedding", description="1 − cosine of sentence embeddings, scaled to unrelated reports"
)
def _embedding(
    argument: str,
    config: StabilityConfig,
    *,
    embedder: TextEmbedder | None = None,
    nli: EntailmentScorer | None = None,
) -> DeltaFn:
    if embedder is None:
        raise ConfigError("the embedding Δ needs a text embedder (pathgls.text.embedders)")

    def emb(a: AnalyzedReport, b: AnalyzedReport) -> tuple[float, str]:
        ta, tb, scope = comparison_texts(a, b, diagnosis=config.diagnosis_section)
        d = embedding_delta(ta, tb, embedder=embedder, unrelated_cosine=config.unrelated_cosine)
        return d, scope

    return emb


@DELTA_BACKENDS.register(
    "dx", description="diagnoses, behaviour and key findings of the report graph, both ways"
)
def _dx(
    argument: str,
    config: StabilityConfig,
    *,
    embedder: TextEmbedder | None = None,
    nli: EntailmentScorer | None = None,
) -> DeltaFn:
    if embedder is None:
        raise ConfigError(
            "the dx Δ needs a text embedder (pathgls.text.embedders) to match diagnosis names "
            "and for its fallback when a report has no diagnosis"
        )
    # Names are embedded as reports bring them (and cached for this Δ's life). Embedding the
    # lexicon's ~275 diagnosis concepts up front cost 1–4 s of MiniLM per Δ, paid wherever a Δ is
    # built (each test, each worker): most of it went to names never compared.
    similarity = ConceptSimilarity(embedder, unrelated_cosine=config.dx_unrelated_cosine)
    fallback = _embedding(argument, config, embedder=embedder)

    def dx(a: AnalyzedReport, b: AnalyzedReport) -> tuple[float, str]:
        r = dx_delta(a, b, similarity=similarity, fallback=fallback, config=config)
        return r.delta, r.scope

    return dx


@DELTA_BACKENDS.register(
    "nli", description="1 − mean bidirectional entailment probability (any NLI model)"
)
def _nli(
    argument: str,
    config: StabilityConfig,
    *,
    embedder: TextEmbedder | None = None,
    nli: EntailmentScorer | None = None,
) -> DeltaFn:
    if nli is None:
        raise ConfigError("the nli Δ needs an NLI scorer with entailment probabilities")

    def nl(a: AnalyzedReport, b: AnalyzedReport) -> tuple[float, str]:
        ta, tb, scope = comparison_texts(a, b, diagnosis=config.diagnosis_section)
        return nli_delta(ta, tb, nli=nli), scope

    return nl


@DELTA_BACKENDS.register(
    "entity", description="1 − soft F1 of the findings, negation-aware (embedder optional)"
)
def _entity(
    argument: str,
    config: StabilityConfig,
    *,
    embedder: TextEmbedder | None = None,
    nli: EntailmentScorer | None = None,
) -> DeltaFn:
    def ent(a: AnalyzedReport, b: AnalyzedReport) -> tuple[float, str]:
        return entity_delta(a, b, embedder=embedder, threshold=config.entity_match_threshold), (
            "findings"
        )

    return ent


def make_delta(
    config: StabilityConfig,
    *,
    embedder: TextEmbedder | None = None,
    nli: EntailmentScorer | None = None,
) -> DeltaFn:
    """The configured Δ as a function of two analysed reports → ``(Δ, scope)``.

    Raises:
        ConfigError: the backend's model was not given.
        UnknownNameError: an unknown backend.
    """
    return DELTA_BACKENDS.build(config.delta, config, embedder=embedder, nli=nli)


def stability_score(
    *,
    original: AnalyzedReport | None,
    augmented: AnalyzedReport | None,
    attacked: AnalyzedReport | None,
    delta: DeltaFn,
    delta_name: str = "dx",
    conditions: tuple[str, str] = ("stain", "attack"),
) -> ModuleScore:
    """S_s of three analysed reports with an injected Δ (see :func:`make_delta`).

    A report that is None (its generation failed) makes S_s missing, naming the condition.
    """
    missing = [
        name
        for name, rep in (
            ("original", original),
            (conditions[0], augmented),
            (conditions[1], attacked),
        )
        if rep is None
    ]
    if missing:
        return ModuleScore(
            name="stability",
            value=None,
            missing_reason=f"stability not scored: no report under {', '.join(missing)}",
            evidence=StabilityEvidence(delta=delta_name).to_dict(),
        )
    assert original is not None and augmented is not None and attacked is not None
    d_aug, scope_a = delta(original, augmented)
    d_att, scope_t = delta(original, attacked)
    value = 1.0 - 0.5 * (abs(d_aug) + abs(d_att))
    warnings = []
    for name, rep in (
        ("original", original),
        (conditions[0], augmented),
        (conditions[1], attacked),
    ):
        warnings += [f"{name} report: {w}" for w in rep.warnings]
    return ModuleScore(
        name="stability",
        value=float(np.clip(value, 0.0, 1.0)),
        evidence=StabilityEvidence(
            delta=delta_name,
            delta_aug=float(d_aug),
            delta_attack=float(d_att),
            scope_aug=scope_a,
            scope_attack=scope_t,
            conditions=tuple(conditions),
            changes_aug=FindingChanges.from_dict(finding_changes(original, augmented)),
            changes_attack=FindingChanges.from_dict(finding_changes(original, attacked)),
        ).to_dict(),
        warnings=warnings,
    )
