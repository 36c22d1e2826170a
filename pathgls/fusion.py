"""Trust score and gate routing: fuse the module scores, route a report to deploy/review/reject.

The trust score is ``S = Σ w_m S_m`` over the modules that could run, with their weights
renormalised to sum to 1 (DESIGN.md, Defaults: a module that cannot run is reported as
missing, never replaced by a made-up number). When no weighted module could run the trust
score is ``None`` with a reason, and the gate sends the report to human review — a missing
score is never deployed.

With a reference report the item also has a ``report`` module (the report-side component,
:mod:`pathgls.baselines.report_side`), fused with its own weight. Modules that need a reference
(``FusionConfig.reference_modules``) and are not on the card are *absent*: not fused, not
missing, not counted in the gate's coverage and their floors not checked — the trust and the
gate of an item without a reference are exactly those of its other modules.

The reference code of PathGLS multiplies the fused score by 0.6 when ``S_l < 0.5`` and by
0.8 when ``S_g < 0.25``. The paper does not describe these penalties, so they are off by
default; ``FusionConfig(reference_penalties=True)`` turns them on for parity runs.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pathgls.config import FusionConfig, GateConfig
from pathgls.errors import EvidenceError
from pathgls.evidence import (
    GroundingEvidence,
    LogicEvidence,
    ModuleEvidence,
    ReportEvidence,
    StabilityEvidence,
    read_evidence,
)
from pathgls.types import GateDecision, ModuleScore, ScoreCard

# (module, below this value, factor) — the reference code's extra penalties.
REFERENCE_PENALTIES: tuple[tuple[str, float, float], ...] = (
    ("logic", 0.5, 0.6),
    ("grounding", 0.25, 0.8),
)


def _finite(x: Any) -> float | None:
    """``x`` as a float when it is a finite real number, else None."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    return float(x) if math.isfinite(x) else None


@dataclass(frozen=True)
class FusionResult:
    """The fused trust score and how it was made."""

    trust: float | None  # None when no weighted module could run
    used: dict[str, float]  # module → weight after renormalisation (sums to 1)
    missing: dict[str, str]  # module → why it could not be used
    penalties: list[str] = field(default_factory=list)  # reference penalties that applied
    reason: str | None = None  # why trust is None
    absent: tuple[str, ...] = ()  # reference modules without a reference: neither used nor missing


def _missing_reason(score: ModuleScore | None) -> str | None:
    if score is None:
        return "not in the scorecard"
    if score.value is None:
        return score.missing_reason or "no value"
    if _finite(score.value) is None:
        return f"non-finite value {score.value!r}"
    return None


def absent_modules(modules: Mapping[str, ModuleScore], config: FusionConfig) -> tuple[str, ...]:
    """Weighted modules that need a reference and are not on the card (the item has none)."""
    return tuple(n for n in config.weights if n in config.reference_modules and n not in modules)


def fuse(*, modules: Mapping[str, ModuleScore], config: FusionConfig) -> FusionResult:
    """Fuse module scores into the trust score, renormalising over the modules that ran.

    Args:
        modules: Module scores by name (a ScoreCard's ``modules``).
        config: Weights and whether the reference penalties apply.

    Returns:
        The trust score (None when no weighted module is available, with ``reason``), the
        renormalised weights of the modules used, the missing modules with their reasons and
        the penalties applied.
    """
    available: dict[str, float] = {}
    missing: dict[str, str] = {}
    absent = absent_modules(modules, config)
    for name, weight in config.weights.items():
        if name in absent:
            continue
        why = _missing_reason(modules.get(name))
        if why is not None:
            missing[name] = why
        elif weight > 0:
            available[name] = weight
    total = sum(available.values())
    if total <= 0:
        detail = "; ".join(f"{n}: {r}" for n, r in missing.items()) or "no weighted module"
        return FusionResult(
            trust=None,
            used={},
            missing=missing,
            reason=f"no module could be fused ({detail})",
            absent=absent,
        )
    used = {name: w / total for name, w in available.items()}
    values = {name: float(modules[name].value) for name in used}  # type: ignore[arg-type]
    trust = sum(used[n] * values[n] for n in used)
    penalties: list[str] = []
    if config.reference_penalties:
        for name, below, factor in REFERENCE_PENALTIES:
            if name in values and values[name] < below:
                trust *= factor
                penalties.append(f"{name} {values[name]:.3f} < {below}: trust ×{factor}")
    return FusionResult(
        trust=float(min(max(trust, 0.0), 1.0)),
        used=used,
        missing=missing,
        penalties=penalties,
        absent=absent,
    )


def _grounding_note(ev: GroundingEvidence) -> str | None:
    low = ev.least_grounded()
    if low is None:
        return None
    return f"least grounded {low.phrase or '?'!r} (calibrated {low.calibrated:.3f})"


def _logic_note(ev: LogicEvidence) -> str | None:
    top = ev.top_pair()
    if top is None:
        return None
    p = _finite(top.probability)
    prob = f" (p={p:.3f})" if p is not None else ""
    return f"top contradiction {top.premise or '?'!r} vs {top.hypothesis or '?'!r}{prob}"


def _stability_note(ev: StabilityEvidence) -> str | None:
    d_aug, d_att = _finite(ev.delta_aug), _finite(ev.delta_attack)
    parts = []
    if d_aug is not None or d_att is not None:
        if d_att is None or (d_aug is not None and abs(d_aug) > abs(d_att)):
            parts.append(f"larger Δ under stain augmentation ({d_aug:.3f})")
        else:
            parts.append(f"larger Δ under the prompt attack ({d_att:.3f})")
    changes = ev.changes_attack
    if changes is not None and changes.diagnosis_changed is not None:
        changed = changes.diagnosis_changed
        parts.append(f"diagnosis {'changed' if changed else 'unchanged'} under attack")
    return "; ".join(parts) or None


def _report_note(ev: ReportEvidence) -> str | None:
    if not ev.backend:
        return None
    parts = [f"{ev.backend} against the reference"]
    raw = _finite(ev.raw)
    if raw is not None:
        parts.append(f"raw {raw:.3f}")
    if ev.candidate_dx:
        parts.append(f"report's diagnosis {ev.candidate_dx!r}")
    if ev.shared_behaviour:
        parts.append(f"shares {', '.join(ev.shared_behaviour)} with the reference")
    f1 = _finite(ev.entity_f1)
    if f1 is not None:
        parts.append(f"entity F1 {f1:.3f}")
    return "; ".join(parts)


# the note of each module that has one, on its typed evidence
_NOTES: Mapping[type[ModuleEvidence], Callable[[Any], str | None]] = MappingProxyType(
    {
        GroundingEvidence: _grounding_note,
        LogicEvidence: _logic_note,
        StabilityEvidence: _stability_note,
        ReportEvidence: _report_note,
    }
)


def evidence_note(score: ModuleScore) -> str:
    """One line on a module score and the evidence behind it.

    Absent evidence keys only shorten the note; evidence of the wrong shape is named in it
    (never an exception: a gate decision is still made).

    Args:
        score: A module's score.

    Returns:
        e.g. ``"grounding 0.410: least grounded 'mitoses' (calibrated 0.120)"``.
    """
    if score.value is None:
        return f"{score.name} missing: {score.missing_reason}"
    value = _finite(score.value)
    head = f"{score.name} {value:.3f}" if value is not None else f"{score.name} {score.value!r}"
    try:
        ev = read_evidence(score.name, score.evidence)
    except EvidenceError as e:
        return f"{head} (evidence unreadable: {e})"
    note_fn = _NOTES.get(type(ev)) if ev is not None else None
    note = note_fn(ev) if note_fn is not None else None
    return f"{head}: {note}" if note else head


def _value_of(score: ModuleScore | None) -> float | None:
    return None if score is None else score.finite_value


def _apart(value: float, threshold: float) -> tuple[str, str]:
    """Both numbers with 3 decimals, or as many more (up to 6) as it takes to tell them apart.

    A trust of 0.49996 shown as "0.500 < review 0.500" reads as a bug; "0.49996 < 0.50000" not.
    """
    for digits in (3, 4, 5, 6):
        a, b = f"{value:.{digits}f}", f"{threshold:.{digits}f}"
        if a != b or value == threshold:
            return a, b
    return f"{value:.6f}", f"{threshold:.6f}"


def route(
    *,
    trust: float | None,
    modules: Mapping[str, ModuleScore],
    config: GateConfig,
    coverage: float | None = None,
    absent: Collection[str] = (),
) -> GateDecision:
    """Route a report to deploy, review or reject, with reasons that point to the evidence.

    Deploy needs ``trust ≥ deploy``, every floor to hold (a missing floored module does
    not hold) and, when ``coverage`` is given, at least ``min_coverage`` of the fusion weight
    scored; deploy-level trust that fails one of these goes to review. ``trust ≥ review`` is
    review, below is reject. No trust score is review: it is never deployed.

    Args:
        trust: The fused trust score, or None.
        modules: The module scores (for floors and evidence).
        config: Thresholds and floors.
        coverage: Share of the fusion weight carried by the modules that ran (None: unchecked).
        absent: Modules the item cannot have (a reference module without a reference): their
            floors are not checked.

    Returns:
        The decision; its first reason is the one that decided the route.
    """
    thresholds = {"deploy": config.deploy, "review": config.review}
    thresholds.update({f"floor:{n}": v for n, v in config.floors.items()})
    present = [s for s in modules.values() if _value_of(s) is not None]
    evidence = [evidence_note(s) for s in sorted(present, key=lambda s: _value_of(s) or 0.0)]
    gone = [evidence_note(s) for s in modules.values() if _value_of(s) is None]
    if trust is None or _finite(trust) is None:
        why = "; ".join(gone) or "no module scores"
        reasons = [f"no trust score: {why}", *evidence]
        return GateDecision(route="review", reasons=reasons, thresholds=thresholds)
    broken: list[str] = []
    for name, floor in config.floors.items():
        if name in absent:
            continue
        score = modules.get(name)
        value = _value_of(score)
        if value is None:
            why = score.missing_reason if score is not None else "not in the scorecard"
            broken.append(f"floor {name} ≥ {floor:.3f} cannot be checked: {name} missing ({why})")
        elif value < floor:
            note = evidence_note(score)  # type: ignore[arg-type]
            broken.append(f"floor broken: {name} {value:.3f} < {floor:.3f} ({note})")
    if coverage is not None and coverage < config.min_coverage:
        broken.append(
            f"only {coverage:.0%} of the fusion weight was scored; deploy needs "
            f"≥ {config.min_coverage:.0%}"
        )
    if trust >= config.deploy:
        if not broken:
            return GateDecision(
                route="deploy",
                reasons=["trust {} ≥ deploy {}".format(*_apart(trust, config.deploy)), *gone],
                thresholds=thresholds,
            )
        head = f"trust {trust:.3f} ≥ deploy {config.deploy:.3f} but the gate's conditions fail"
        reasons = [*broken, head, *evidence, *gone]
        return GateDecision(route="review", reasons=reasons, thresholds=thresholds)
    if trust >= config.review:
        t, d = _apart(trust, config.deploy)
        head = f"trust {t} in review band [{config.review:.3f}, {d})"
        return GateDecision(
            route="review", reasons=[head, *evidence, *broken, *gone], thresholds=thresholds
        )
    head = "trust {} < review {}".format(*_apart(trust, config.review))
    return GateDecision(
        route="reject", reasons=[head, *evidence, *broken, *gone], thresholds=thresholds
    )


def gate_scorecard(card: ScoreCard, *, fusion: FusionConfig, gate: GateConfig) -> ScoreCard:
    """A copy of ``card`` with its trust score and gate decision filled in.

    Args:
        card: The scorecard (not modified).
        fusion: Fusion weights and penalties.
        gate: Gate thresholds and floors.

    Returns:
        The scorecard with ``trust`` and ``decision`` set; applied reference penalties are
        listed among the decision's reasons.
    """
    fused = fuse(modules=card.modules, config=fusion)
    total = sum(w for n, w in fusion.weights.items() if n not in fused.absent)
    coverage = sum(fusion.weights[n] for n in fused.used) / total
    decision = route(
        trust=fused.trust,
        modules=card.modules,
        config=gate,
        coverage=coverage,
        absent=fused.absent,
    )
    if fused.trust is None and fused.reason:
        decision.reasons[0] = f"no trust score: {fused.reason}"
    for name in fusion.reference_modules:
        if name in fused.used:
            note = evidence_note(card.modules[name])
            decision.reasons.append(
                f"fused with the reference: {name} carries {fused.used[name]:.0%} of the trust "
                f"({note})"
            )
    decision.reasons.extend(f"reference penalty: {p}" for p in fused.penalties)
    return dataclasses.replace(card, trust=fused.trust, decision=decision)
