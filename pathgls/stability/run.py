"""Stability S_s of a subject's generated reports, and a subject's whole stability run.

:func:`score_generation` compares the original report with the stain and attack reports of a
:class:`~pathgls.generation.GeneratedReports` (Δ and S_s, with what the stain and the failed
generations have to say as warnings); :func:`run_stability` is generation then that score,
for a caller that wants both at once. A failed generation leaves S_s missing — nothing is
filled in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pathgls.attacks.prompts import DEFAULT_ATTACK, PromptLibrary, load_prompt_library
from pathgls.attacks.stain import StainConfig
from pathgls.generation.conditions import STAIN, GeneratedReports, generate_conditions
from pathgls.stability.delta import DeltaFn, StabilityConfig, make_delta, stability_score
from pathgls.subjects.base import Subject
from pathgls.subjects.cache import SubjectCache
from pathgls.subjects.views import View
from pathgls.text.analyze import AnalyzedReport
from pathgls.text.base import EntityExtractor
from pathgls.types import ModuleScore, Report


@dataclass
class StabilityRun:
    """The three reports, what went wrong, and S_s."""

    reports: dict[str, Report] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    score: ModuleScore | None = None
    stain: dict[str, Any] = field(default_factory=dict)
    prompts: dict[str, str] = field(default_factory=dict)
    # Each condition's analysed report (None when its generation failed), for reuse by callers.
    analyzed: dict[str, AnalyzedReport | None] = field(default_factory=dict)


def score_generation(
    *,
    generated: GeneratedReports,
    delta: DeltaFn,
    config: StabilityConfig | None = None,
) -> ModuleScore:
    """S_s of ``generated``: Δ(R_orig, R_aug) and Δ(R_orig, R_attack), with their evidence.

    Args:
        generated: The item's reports under the three conditions.
        delta: The Δ (:func:`~pathgls.stability.delta.make_delta`).
        config: Stability settings (names the Δ backend in the evidence).
    """
    cfg = config or StabilityConfig()
    score = stability_score(
        original=generated.analyzed["original"],
        augmented=generated.analyzed[STAIN],
        attacked=generated.analyzed[generated.attack],
        delta=delta,
        delta_name=cfg.delta,
        conditions=(STAIN, generated.attack),
    )
    score.warnings.extend(generated.stain_warnings)
    score.evidence["stain"] = generated.stain
    score.evidence["attack"] = generated.prompts["attack"]
    score.evidence["prompt_library"] = generated.library_version
    for cond, err in generated.errors.items():
        score.warnings.append(f"{cond}: {err}")
    return score


def run_stability(
    *,
    subject: Subject,
    view: View,
    item_id: str,
    extractor: EntityExtractor,
    embedder: Any = None,
    nli: Any = None,
    attack: str = DEFAULT_ATTACK,
    library: PromptLibrary | None = None,
    seed: int = 0,
    cache: SubjectCache | None = None,
    stain_config: StainConfig | None = None,
    config: StabilityConfig | None = None,
    max_report_chars: int | None = None,
    delta: DeltaFn | None = None,
) -> StabilityRun:
    """Generate R_orig, R_aug and R_attack with ``subject``
    (:func:`~pathgls.generation.generate_conditions`) and compute S_s (:func:`score_generation`).

    When the original report fails, the stain and attack conditions are not asked (their
    errors say so): without R_orig there is nothing to compare them with.

    Args:
        subject: The model under test.
        view: The images it is shown (:mod:`pathgls.subjects.views`, or an ROI as one image).
        item_id: Stable id of the slide/ROI (seeds the stain factors, keys caches and replay).
        extractor: Entity extractor for the reports.
        embedder: Text embedder (``embedding`` and soft ``entity`` Δ).
        nli: NLI scorer with entailment probabilities (``nli`` Δ).
        attack: Name of the adversarial prompt.
        library: Prompt library (default: the built-in one).
        seed: Generation seed and stain seed.
        cache: Subject cache (None: always generate).
        stain_config: Macenko settings.
        config: Stability settings (Δ backend).
        max_report_chars: Longest report accepted (longer: that generation fails).
        delta: The Δ, built once per worker (:func:`~pathgls.stability.delta.make_delta` with
            ``config``, ``embedder`` and ``nli``); None builds it for this call.

    Raises:
        ConfigError: unknown attack, or the Δ backend's model is missing.
    """
    lib = library or load_prompt_library()
    lib.attack(attack)  # an unknown attack is refused before the Δ's model is asked for
    cfg = config or StabilityConfig()
    delta = delta or make_delta(cfg, embedder=embedder, nli=nli)
    generated = generate_conditions(
        subject=subject,
        view=view,
        item_id=item_id,
        extractor=extractor,
        attack=attack,
        library=lib,
        seed=seed,
        cache=cache,
        stain_config=stain_config,
        max_report_chars=max_report_chars,
    )
    return StabilityRun(
        reports=generated.reports,
        errors=generated.errors,
        score=score_generation(generated=generated, delta=delta, config=cfg),
        stain=generated.stain,
        prompts=generated.prompts,
        analyzed=generated.analyzed,
    )
