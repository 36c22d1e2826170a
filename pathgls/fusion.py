"""Trust score and gate routing: fuse the module scores, route a report to deploy/review/reject.

The trust score is ``S = Σ w_m S_m`` over the modules that could run, with their weights
renormalised to sum to 1 (docs/scores.md, "The trust score and its coverage": a module that
cannot run is reported as missing, never replaced by a made-up number). When no weighted module
could run the trust score is ``None`` with a reason, and the gate sends the report to human
review — a missing score is never deployed. The *coverage* of a card is the share of the fusion
weight its scored modules carry; a trust made of fewer modules is a different number, which is
why the gate needs enough coverage and the modules listed in ``[gate] required`` (by default
grounding: the only module that looks at the image) before it deploys, and why subjects are
ranked on the modules they share (:mod:`pathgls.meta.ranking`). docs/scores.md states the rules.

With a reference report the item also has a ``report`` module (the report-side component,
:mod:`pathgls.baselines.report_side`), fused with its own weight. Modules that need a reference
(``FusionConfig.reference_modules``) and are not on the card are *absent*: not fused, not
missing, not counted in the gate's coverage and their floors not checked — the trust and the
gate of an item without a reference are exactly those of its other modules.

The gate decides on the numbers it prints: trust, scores, thresholds and shares rounded to
:data:`GATE_DECIMALS`. Its reasons start with the decision, then name every scored module in
order of how much it lowered the trust.

The reference code of PathGLS multiplies the fused score by 0.6 when ``S_l < 0.5`` and by
0.8 when ``S_g < 0.25``. The paper does not describe these penalties, so they are off by
default; ``FusionConfig(reference_penalties=True)`` turns them on for parity runs.
"""

from __future__ import annotations

import dataclasses
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
from pathgls.modules import SCORE_MODULES, score_modules
from pathgls.numeric import finite
from pathgls.reasons import IMAGE_UNCHECKED, logic_note
from pathgls.types import GateDecision, ModuleScore, ScoreCard

#: Decimals of every trust, score, threshold and share the gate prints. The gate decides on
#: the numbers rounded to them, so a printed route never contradicts the printed numbers.
GATE_DECIMALS = 3


def enable_hints() -> dict[str, tuple[str, str]]:
    """How to get a module scored (what to give, and the command), for the reason that names a
    missing required module, plugins included. The command is left out when the module's own
    missing reason already gives it."""
    return {m.name: m.enable_hint for m in score_modules() if m.enable_hint is not None}


#: :func:`enable_hints` of the built-in modules alone (kept for code that imported it).
ENABLE_HINTS: Mapping[str, tuple[str, str]] = MappingProxyType(
    {m.name: m.enable_hint for m in SCORE_MODULES if m.enable_hint is not None}
)

# (module, below this value, factor) — the reference code's extra penalties.
REFERENCE_PENALTIES: tuple[tuple[str, float, float], ...] = (
    ("logic", 0.5, 0.6),
    ("grounding", 0.25, 0.8),
)


@dataclass(frozen=True)
class FusionResult:
    """The fused trust score and how it was made."""

    trust: float | None  # None when no weighted module could run
    used: dict[str, float]  # module → weight after renormalisation (sums to 1)
    missing: dict[str, str]  # module → why it could not be used
    penalties: list[str] = field(default_factory=list)  # reference penalties that applied
    reason: str | None = None  # why trust is None
    absent: tuple[str, ...] = ()  # reference modules without a reference: neither used nor missing
    # share of the fusion weight of the modules the item can have (absent ones excluded) that
    # was scored: Σ w_used / Σ w_not-absent (0.0 when nothing could be fused)
    coverage: float = 0.0


def _missing_reason(score: ModuleScore | None) -> str | None:
    if score is None:
        return "not in the scorecard"
    if score.value is None:
        return score.missing_reason or "no value"
    if finite(score.value) is None:
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
    possible = sum(w for n, w in config.weights.items() if n not in absent)
    coverage = total / possible if possible > 0 else 0.0
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
        coverage=coverage,
    )


def _grounding_note(ev: GroundingEvidence) -> str | None:
    low = ev.least_grounded()
    if low is None:
        return None
    return f"least grounded {low.phrase or '?'!r} (calibrated {low.calibrated:.3f})"


def _logic_note(ev: LogicEvidence) -> str | None:
    # a contradiction only where a check or the judge says so (pathgls.reasons)
    return logic_note(ev.top_pairs)


def _stability_note(ev: StabilityEvidence) -> str | None:
    d_aug, d_att = finite(ev.delta_aug), finite(ev.delta_attack)
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
    raw = finite(ev.raw)
    if raw is not None:
        parts.append(f"raw {raw:.3f}")
    if ev.candidate_dx:
        parts.append(f"report's diagnosis {ev.candidate_dx!r}")
    if ev.shared_behaviour:
        parts.append(f"shares {', '.join(ev.shared_behaviour)} with the reference")
    f1 = finite(ev.entity_f1)
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


def _head_and_note(score: ModuleScore) -> tuple[str, str | None]:
    """``("grounding 0.410", "least grounded ...")``: a module's value and its evidence note."""
    if score.value is None:
        return f"{score.name} missing", score.missing_reason
    value = finite(score.value)
    head = f"{score.name} {value:.3f}" if value is not None else f"{score.name} {score.value!r}"
    try:
        ev = read_evidence(score.name, score.evidence)
    except EvidenceError as e:
        return f"{head} (evidence unreadable: {e})", None
    note_fn = _NOTES.get(type(ev)) if ev is not None else None
    return head, note_fn(ev) if note_fn is not None else None


def evidence_note(score: ModuleScore) -> str:
    """One line on a module score and the evidence behind it.

    Absent evidence keys only shorten the note; evidence of the wrong shape is named in it
    (never an exception: a gate decision is still made).

    Args:
        score: A module's score.

    Returns:
        e.g. ``"grounding 0.410: least grounded 'mitoses' (calibrated 0.120)"``.
    """
    head, note = _head_and_note(score)
    return f"{head}: {note}" if note else head


def _value_of(score: ModuleScore | None) -> float | None:
    return None if score is None else score.finite_value


def shown(x: float) -> float:
    """``x`` rounded to :data:`GATE_DECIMALS`: the number the gate prints and decides on."""
    return round(float(x), GATE_DECIMALS)


def _num(x: float) -> str:
    return f"{shown(x):.{GATE_DECIMALS}f}"


def _pct(x: float) -> str:
    """A share as printed and compared by the gate: ``0.3`` → ``"30.0%"``."""
    return f"{shown(x) * 100:.1f}%"


def _requirement_reason(
    alternatives: tuple[str, ...], modules: Mapping[str, ModuleScore], absent: Collection[str]
) -> str | None:
    """Why a ``[gate] required`` entry is not met, or None when one of its modules scored."""
    if any(_value_of(modules.get(m)) is not None for m in alternatives):
        return None
    states = []
    for m in alternatives:
        score = modules.get(m)
        if m in absent:
            states.append(f"{m} absent (the item has no reference report)")
        elif score is None:
            states.append(f"{m} not in the scorecard")
        else:
            states.append(f"{m} missing ({score.missing_reason or 'no value'})")
    hints = []
    known = enable_hints()
    for m in alternatives:
        if m not in known:
            continue
        needs, command = known[m]
        score = modules.get(m)
        given = score is not None and command in (score.missing_reason or "")
        hints.append(f"{m} needs {needs}" + ("" if given else f" ({command})"))
    what = " or ".join(alternatives)
    text = f"deploy needs {what} scored: " + "; ".join(states)
    if hints:
        text += "; " + "; ".join(hints)
    return text + " ([gate] required lists what deploy needs)"


def _deploy_blocks(
    *,
    modules: Mapping[str, ModuleScore],
    config: GateConfig,
    coverage: float | None,
    absent: Collection[str],
) -> list[str]:
    """Every condition besides the trust that keeps a report from deploy (empty: none)."""
    blocks = [
        r
        for alternatives in config.requirements
        if (r := _requirement_reason(alternatives, modules, absent)) is not None
    ]
    for name, floor in config.floors.items():
        if name in absent:
            continue
        score = modules.get(name)
        value = _value_of(score)
        if value is None:
            why = score.missing_reason if score is not None else "not in the scorecard"
            blocks.append(f"floor {name} ≥ {_num(floor)} cannot be checked: {name} missing ({why})")
        elif shown(value) < shown(floor):
            note = evidence_note(score)  # type: ignore[arg-type]
            blocks.append(f"floor broken: {name} {_num(value)} < {_num(floor)} ({note})")
    if coverage is not None and shown(coverage) < shown(config.min_coverage):
        blocks.append(
            f"only {_pct(coverage)} of the fusion weight was scored; deploy needs "
            f"≥ {_pct(config.min_coverage)}"
        )
    return blocks


def _module_reasons(
    modules: Mapping[str, ModuleScore], used: Mapping[str, float] | None
) -> list[str]:
    """One line per scored module, the one that lowered the trust most first.

    A fused module's line says how much it lowered the trust (its share of the fused weight ×
    (1 − its score); the shares add up to 1 − trust) and its share of the weight. Without
    ``used`` (weights unknown) the lowest score comes first. Scored modules that are not fused
    (e.g. ``hare`` without a weight) follow, marked so.
    """
    present = [s for s in modules.values() if _value_of(s) is not None]
    if used is None:
        ordered = sorted(present, key=lambda s: (_value_of(s) or 0.0, s.name))
        return [evidence_note(s) for s in ordered]
    fused, unfused = [], []
    for s in present:
        if s.name in used:
            lowered = used[s.name] * (1.0 - (_value_of(s) or 0.0))
            fused.append((lowered, used[s.name], s))
        else:
            unfused.append(s)
    fused.sort(key=lambda t: (-shown(t[0]), -t[1], t[2].name))
    lines = []
    for lowered, share, s in fused:
        head, note = _head_and_note(s)
        impact = f"lowered the trust by {_num(lowered)}; {share:.0%} of the weight"
        lines.append(f"{head} ({impact})" + (f": {note}" if note else ""))
    for s in sorted(unfused, key=lambda s: s.name):
        head, note = _head_and_note(s)
        lines.append(f"{head} (not fused)" + (f": {note}" if note else ""))
    return lines


def route(
    *,
    trust: float | None,
    modules: Mapping[str, ModuleScore],
    config: GateConfig,
    coverage: float | None = None,
    absent: Collection[str] = (),
    used: Mapping[str, float] | None = None,
) -> GateDecision:
    """Route a report to deploy, review or reject, with reasons that point to the evidence.

    Every comparison is made on the numbers rounded to :data:`GATE_DECIMALS` — the numbers
    the gate prints — so a route always agrees with what is shown (0.4996 is shown as 0.500
    and is reviewed at ``review = 0.5``). ``trust ≥ deploy`` deploys when nothing else blocks
    it: each ``required`` entry has a scored module, every floor holds (a missing floored
    module does not hold) and, when ``coverage`` is given, at least ``min_coverage`` of the
    fusion weight was scored; deploy-level trust that is blocked goes to review.
    ``trust ≥ review`` is review, below is reject. No trust score is review: it is never
    deployed.

    The reasons: first the decision (the route, the numbers that decided it and whatever
    blocked deploy); then one line per scored module, the module that lowered the trust most
    first (with ``used``, else the lowest score first); then what else blocks deploy (when the
    trust alone already decided), then the missing modules.

    Args:
        trust: The fused trust score, or None.
        modules: The module scores (for requirements, floors and evidence).
        config: Thresholds, floors and required modules.
        coverage: Share of the fusion weight carried by the modules that ran (None: unchecked).
        absent: Modules the item cannot have (a reference module without a reference): their
            floors are not checked; a requirement on them alone is not met.
        used: The fused modules' renormalised weights (:attr:`FusionResult.used`), to order
            the modules by how much each lowered the trust.

    Returns:
        The decision; its first reason is the one that decided the route.
    """
    thresholds = {"deploy": config.deploy, "review": config.review}
    thresholds["min_coverage"] = config.min_coverage
    thresholds.update({f"floor:{n}": v for n, v in config.floors.items()})
    evidence = _module_reasons(modules, used)
    gone = [evidence_note(s) for s in modules.values() if _value_of(s) is None]
    blocks = _deploy_blocks(modules=modules, config=config, coverage=coverage, absent=absent)
    if trust is None or finite(trust) is None:
        why = "; ".join(gone) or "no module scores"
        reasons = [f"no trust score: {why}", *evidence]
        return GateDecision(route="review", reasons=reasons, thresholds=thresholds)
    t = shown(trust)
    if t >= shown(config.deploy):
        head = f"trust {_num(trust)} ≥ deploy {_num(config.deploy)}"
        if not blocks:
            if _value_of(modules.get("grounding")) is None:  # say what nothing measured
                head += f", {IMAGE_UNCHECKED} (no grounding score)"
            return GateDecision(
                route="deploy", reasons=[head, *evidence, *gone], thresholds=thresholds
            )
        reasons = [f"{head}, but " + "; ".join(blocks), *evidence, *gone]
        return GateDecision(route="review", reasons=reasons, thresholds=thresholds)
    also = [f"also blocks deploy: {b}" for b in blocks]
    if t >= shown(config.review):
        head = f"trust {_num(trust)} in review band [{_num(config.review)}, {_num(config.deploy)})"
        return GateDecision(
            route="review", reasons=[head, *evidence, *also, *gone], thresholds=thresholds
        )
    head = f"trust {_num(trust)} < review {_num(config.review)}"
    return GateDecision(
        route="reject", reasons=[head, *evidence, *also, *gone], thresholds=thresholds
    )


def gate_scorecard(card: ScoreCard, *, fusion: FusionConfig, gate: GateConfig) -> ScoreCard:
    """A copy of ``card`` with its trust score and gate decision filled in.

    Args:
        card: The scorecard (not modified).
        fusion: Fusion weights and penalties.
        gate: Gate thresholds, floors and required modules.

    Returns:
        The scorecard with ``trust`` and ``decision`` set; applied reference penalties are
        listed among the decision's reasons, right after the decision.
    """
    fused = fuse(modules=card.modules, config=fusion)
    decision = route(
        trust=fused.trust,
        modules=card.modules,
        config=gate,
        coverage=fused.coverage,
        absent=fused.absent,
        used=fused.used,
    )
    if fused.trust is None and fused.reason:
        decision.reasons[0] = f"no trust score: {fused.reason}"
    penalties = [f"reference penalty: {p}" for p in fused.penalties]
    decision.reasons[1:1] = penalties
    return dataclasses.replace(card, trust=fused.trust, decision=decision)
