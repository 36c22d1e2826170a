"""The ``dx`` Δ: how far two reports are apart *clinically* — diagnosis first, wording never.

Pathologists judge whether two reports agree by what they diagnose before how they describe it
(the HARE expert scale: 4 = right diagnosis … 0 = wrong diagnosis). The ``dx`` Δ compares the
two reports' :class:`~pathgls.text.diagnoses.DiagnosisProfile` (principal diagnoses with their
behaviour, key findings with their values), read off the report graph:

    sim(x, y)  = 1 for the same concept, else clip((cos(x, y) − c₀) / (1 − c₀), 0, 1) of the
                 MiniLM embeddings of the concept names, c₀ = 0.28 the median cosine of two
                 different diagnosis names of the lexicon; 0 when both behaviours are known and
                 differ (an in situ carcinoma is not the invasive one)
    Δ_type     = 1 − ½ (mean_x max_y sim + mean_y max_x sim)        both directions
    Δ_behav    = ½ [exactly one of them malignant] + ½ |severity(a) − severity(b)| / 4 of the
                 most severe behaviours (benign process 0 … in situ 3, malignant 4): "is it
                 cancer" first, then how far apart; 0 when neither is known, ½ when only one is
    Δ_dx       = (1 − w_b) Δ_type + w_b Δ_behav,   w_b = ½
    Δ          = 1 − (1 − Δ_dx)(1 − w_f)^n,   w_f = ½,  n = key findings stated with disjoint
                 values ("nodes positive" vs "negative", "margin involved" vs "free", LVI present
                 vs absent, high vs low grade)

Every part is symmetric in the two reports, so Δ is; Δ ∈ [0, 1]; two reports that name the same
diagnoses and key findings in other words give 0 (synonyms share a concept); replacing a report's
one diagnosis by one of another behaviour gives Δ_type = 1, so Δ ≥ ½ (1 for malignant → benign
process, ≈ 0.81 for invasive → in situ); one negated key finding alone gives ½.

No diagnosis on one side or both (the extractor found none) is a *fallback*: Δ_dx is then the
injected fallback Δ (Stability uses the ``embedding`` Δ), the key-finding term still applies, and
the scope names the fallback and why. An empty report against a non-empty one is Δ = 1 (nothing
of the other survives); two empty reports are Δ = 0.

The weights were fixed before any expert score was looked at (equal shares for "is it the same
kind of lesion" and "is it as malignant", and "a key finding that flips is half a change");
``benchmarks/bench_delta_validity.py`` measures the result against pathologists.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from pathgls.config import UNRELATED_DIAGNOSIS_COSINE, StabilityConfig
from pathgls.text.analyze import AnalyzedReport
from pathgls.text.diagnoses import GRADE_ORDER, SEVERITY, DiagnosisProfile, diagnosis_profile
from pathgls.text.embedders import TextEmbedder

#: ``(report a, report b) -> (Δ, scope)``: what the dx Δ falls back on without diagnoses.
Fallback = Callable[[AnalyzedReport, AnalyzedReport], tuple[float, str]]
_MAX_SEVERITY = max(SEVERITY.values())


class ConceptSimilarity:
    """Calibrated similarity of two concept names, embedding each name once.

    ``sim = clip((cos − c₀) / (1 − c₀), 0, 1)``; 1 for the same name. Holds a cache of
    embeddings (its only state), bounded by ``max_cache`` names.
    """

    def __init__(
        self,
        embedder: TextEmbedder,
        *,
        unrelated_cosine: float = UNRELATED_DIAGNOSIS_COSINE,
        vocabulary: Sequence[str] = (),
        max_cache: int = 50_000,
    ) -> None:
        """
        Args:
            embedder: Sentence embedder of the names.
            unrelated_cosine: c₀, the cosine that maps to similarity 0.
            vocabulary: Names embedded in one batch with the first request (the lexicon's
                diagnosis concepts: one model call instead of one per new pair).
            max_cache: Names kept at most (the cache is emptied beyond).
        """
        self.embedder = embedder
        self.unrelated_cosine = unrelated_cosine
        self.max_cache = max_cache
        self._pending = list(vocabulary)
        self._vectors: dict[str, np.ndarray] = {}

    def _embed(self, names: list[str]) -> None:
        names, self._pending = [*names, *self._pending], []
        new = [n for n in dict.fromkeys(names) if n not in self._vectors]
        if not new:
            return
        if len(self._vectors) + len(new) > self.max_cache:
            self._vectors.clear()
        e = np.asarray(self.embedder.embed(new), dtype=np.float64)
        e /= np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)
        self._vectors.update(zip(new, e, strict=True))

    def warm(self) -> None:
        """Embed the vocabulary now (a worker does it once, while it loads its models)."""
        self._embed([])

    def matrix(self, xs: list[str], ys: list[str]) -> np.ndarray:
        """``len(xs) × len(ys)`` calibrated similarities."""
        self._embed([*xs, *ys])
        a = np.array([self._vectors[x] for x in xs])
        b = np.array([self._vectors[y] for y in ys])
        cos = a @ b.T
        sim = np.clip((cos - self.unrelated_cosine) / (1.0 - self.unrelated_cosine), 0.0, 1.0)
        same = np.array([[x == y for y in ys] for x in xs])
        return np.where(same, 1.0, sim)


@dataclass(frozen=True)
class DxChanges:
    """What changed from one report's diagnosis profile to another's."""

    diagnoses_before: tuple[str, ...] = ()
    diagnoses_after: tuple[str, ...] = ()
    added: tuple[str, ...] = ()  # principal diagnoses new in the second report
    removed: tuple[str, ...] = ()  # principal diagnoses gone
    behaviour_before: str | None = None  # most severe behaviour
    behaviour_after: str | None = None
    # key findings stated with disjoint values, "metastasis: positive → negative"
    findings_changed: tuple[str, ...] = ()

    @property
    def behaviour_changed(self) -> bool:
        """Both behaviours known and different (malignant → benign, invasive → in situ)."""
        return (
            self.behaviour_before is not None
            and self.behaviour_after is not None
            and self.behaviour_before != self.behaviour_after
        )

    @property
    def diagnosis_changed(self) -> bool:
        """A principal diagnosis added or removed, or the behaviour changed."""
        return bool(self.added or self.removed or self.behaviour_changed)


def _values(key: str, values: frozenset[str]) -> str:
    order = GRADE_ORDER if key == "grade" else ("negative", "positive")
    return "/".join(sorted(values, key=lambda v: order.index(v) if v in order else len(order)))


def dx_changes(before: DiagnosisProfile, after: DiagnosisProfile) -> DxChanges:
    """Diagnoses added/removed, behaviour before/after and key findings whose values flipped."""
    cb, ca = before.concepts, after.concepts
    fb, fa = before.finding_values(), after.finding_values()
    flipped = tuple(
        f"{k}: {_values(k, fb[k])} → {_values(k, fa[k])}"
        for k in sorted(fb)
        if k in fa and not fb[k] & fa[k]
    )
    return DxChanges(
        diagnoses_before=cb,
        diagnoses_after=ca,
        added=tuple(c for c in ca if c not in cb),
        removed=tuple(c for c in cb if c not in ca),
        behaviour_before=before.behaviour,
        behaviour_after=after.behaviour,
        findings_changed=flipped,
    )


@dataclass(frozen=True)
class DxDelta:
    """The dx Δ of two reports, its parts and what changed."""

    delta: float
    scope: str  # "diagnosis", "fallback:<fallback scope> (<why>)" or "empty (<why>)"
    changes: DxChanges
    diagnosis: float  # Δ_dx (the fallback's Δ when fallback is set)
    type_delta: float | None = None  # Δ_type (None on a fallback)
    behaviour_delta: float | None = None  # Δ_behav (None on a fallback)
    fallback: str | None = None  # why the diagnoses could not be compared


def behaviour_delta(a: str | None, b: str | None) -> float:
    """``½ [one malignant] + ½ |severity(a) − severity(b)| / 4``; 0 when neither is known, ½
    when one is."""
    if a is None and b is None:
        return 0.0
    if a is None or b is None:
        return 0.5
    crosses = (a == "malignant") != (b == "malignant")
    return 0.5 * float(crosses) + 0.5 * abs(SEVERITY[a] - SEVERITY[b]) / _MAX_SEVERITY


def type_delta(a: DiagnosisProfile, b: DiagnosisProfile, *, similarity: ConceptSimilarity) -> float:
    """``1 − ½ (mean best match a→b + mean best match b→a)``; behaviours must agree to match."""
    xs, ys = list(a.concepts), list(b.concepts)
    sim = similarity.matrix(xs, ys)
    bx = [bh for _, bh in a.diagnoses]
    by = [bh for _, bh in b.diagnoses]
    agree = np.array([[not (p and q) or p == q for q in by] for p in bx])
    sim = sim * agree
    return float(1.0 - 0.5 * (sim.max(axis=1).mean() + sim.max(axis=0).mean()))


def _why_no_diagnosis(a: DiagnosisProfile, b: DiagnosisProfile) -> str:
    if not a.diagnoses and not b.diagnoses:
        return "no diagnosis found in either report"
    return f"no diagnosis found in the {'first' if not a.diagnoses else 'second'} report"


def dx_delta(
    a: AnalyzedReport,
    b: AnalyzedReport,
    *,
    similarity: ConceptSimilarity,
    fallback: Fallback,
    config: StabilityConfig | None = None,
) -> DxDelta:
    """The dx Δ of two analysed reports (see the module docstring); symmetric, in [0, 1].

    Args:
        a: One report (the original, for Stability).
        b: The other (under a stain shift or an attack); ``changes`` read from a to b.
        similarity: Concept-name similarity (an embedder with its calibration).
        fallback: The Δ used when a report has no diagnosis (Stability: the embedding Δ).
        config: The dx weights (``dx_behaviour_weight``, ``dx_finding_weight``).
    """
    cfg = config or StabilityConfig()
    pa, pb = diagnosis_profile(a), diagnosis_profile(b)
    changes = dx_changes(pa, pb)
    empty_a, empty_b = not a.text.strip(), not b.text.strip()
    if empty_a or empty_b:
        d = 0.0 if empty_a and empty_b else 1.0
        which = "both reports are" if empty_a and empty_b else "one report is"
        return DxDelta(d, f"empty ({which} empty)", changes, d, fallback=f"{which} empty")
    n_flipped = len(changes.findings_changed)
    keep = (1.0 - cfg.dx_finding_weight) ** n_flipped
    if not pa.diagnoses or not pb.diagnoses:
        d_fb, scope = fallback(a, b)
        d_fb = float(np.clip(d_fb, 0.0, 1.0))
        why = _why_no_diagnosis(pa, pb)
        return DxDelta(
            delta=float(1.0 - (1.0 - d_fb) * keep),
            scope=f"fallback:{scope} ({why})",
            changes=changes,
            diagnosis=d_fb,
            fallback=why,
        )
    d_type = type_delta(pa, pb, similarity=similarity)
    d_beh = behaviour_delta(pa.behaviour, pb.behaviour)
    w = cfg.dx_behaviour_weight
    d_dx = (1.0 - w) * d_type + w * d_beh
    return DxDelta(
        delta=float(np.clip(1.0 - (1.0 - d_dx) * keep, 0.0, 1.0)),
        scope="diagnosis",
        changes=changes,
        diagnosis=float(d_dx),
        type_delta=d_type,
        behaviour_delta=d_beh,
    )
