"""Run a subject under the three conditions and score its Stability.

``original``: the view's images with the neutral prompt; ``stain``: the same images after the
seeded Macenko perturbation (:func:`pathgls.attacks.stain.perturb_stain`); ``attack:<name>``:
the original images with an adversarial prompt. A ``patches`` view asks for one report per
patch and then a summary report of them. Every generation goes through the subject cache when
one is given. A failed generation is recorded with its reason; the other conditions still run
and S_s is then missing — nothing is filled in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pathgls.attacks.prompts import DEFAULT_ATTACK, Prompt, PromptLibrary, load_prompt_library
from pathgls.attacks.stain import StainConfig, perturb_stain
from pathgls.attacks.stain_kind import stain_kind
from pathgls.errors import PathGLSError
from pathgls.stability.delta import DeltaFn, StabilityConfig, make_delta, stability_score
from pathgls.subjects.base import Subject, SubjectError
from pathgls.subjects.cache import SubjectCache, cached_generate
from pathgls.subjects.views import View
from pathgls.text.analyze import AnalyzedReport, analyze_report
from pathgls.text.base import EntityExtractor
from pathgls.types import ModuleScore, Report

SUMMARY_PROMPT = (
    "Below are reports of {k} regions of one slide.\n\n{reports}\n\n"
    "Combine them into one report of the whole slide in the same six-field format."
)


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


def _generate(
    subject: Subject,
    view: View,
    images: list[np.ndarray],
    prompt: Prompt,
    *,
    condition: str,
    item_id: str,
    seed: int,
    cache: SubjectCache | None,
    max_chars: int | None,
) -> str:
    def ask(imgs: list[np.ndarray], text: str, cond: str) -> str:
        return cached_generate(
            subject,
            max_chars=max_chars,
            images=imgs,
            prompt=text,
            system=prompt.system or None,
            seed=seed,
            item_id=item_id,
            condition=cond,
            cache=cache,
        ).text

    if view.kind != "patches" or len(images) == 1:
        return ask(images, prompt.user, condition)
    parts = [ask([im], prompt.user, f"{condition}/patch{i}") for i, im in enumerate(images)]
    joined = "\n\n".join(f"Region {i + 1}:\n{p}" for i, p in enumerate(parts))
    summary = SUMMARY_PROMPT.format(k=len(parts), reports=joined)
    return ask(images[:1], summary, f"{condition}/summary")


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
    """Generate R_orig, R_aug and R_attack with ``subject`` and compute S_s.

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
    neutral, adversarial = lib.neutral, lib.attack(attack)
    cfg = config or StabilityConfig()
    delta = delta or make_delta(cfg, embedder=embedder, nli=nli)
    run = StabilityRun(prompts={"neutral": neutral.name, "attack": adversarial.name})
    stained = perturb_stain(
        images=np.stack(view.images) if _same_shape(view.images) else view.images[0],
        image_ids=[f"{item_id}#{i}" for i in range(len(view.images))]
        if _same_shape(view.images)
        else f"{item_id}#0",
        seed=seed,
        config=stain_config,
    )
    aug_images = (
        list(np.asarray(stained.images))
        if _same_shape(view.images)
        else [np.asarray(stained.images), *view.images[1:]]
    )
    run.stain = {
        "factors": np.asarray(stained.factors).tolist(),
        "transformed": np.asarray(stained.transformed).tolist(),
        "flags": list(stained.flags),
        "seed": seed,
    }
    conditions = [
        ("original", view.images, neutral),
        ("stain", aug_images, neutral),
        (adversarial.condition, view.images, adversarial),
    ]
    analyzed = run.analyzed
    for condition, images, prompt in conditions:
        if condition != "original" and analyzed.get("original") is None:
            # the card fails on the original anyway: asking for the others only costs
            run.errors[condition] = "not asked: the original report failed"
            analyzed[condition] = None
            continue
        try:
            text = _generate(
                subject,
                view,
                list(images),
                prompt,
                max_chars=max_report_chars,
                condition=condition,
                item_id=item_id,
                seed=seed,
                cache=cache,
            )
            run.reports[condition] = Report(text=text, condition=condition, source=subject.name)
            analyzed[condition] = report = analyze_report(text, extractor=extractor)
            run.reports[condition].warnings.extend(report.warnings)
        except (SubjectError, PathGLSError) as e:
            run.errors[condition] = f"{type(e).__name__}: {e}"
            analyzed[condition] = None
    score = stability_score(
        original=analyzed["original"],
        augmented=analyzed["stain"],
        attacked=analyzed[adversarial.condition],
        delta=delta,
        delta_name=cfg.delta,
        conditions=("stain", adversarial.condition),
    )
    kinds = [stain_kind(np.asarray(im)) for im in view.images]
    run.stain["kinds"] = [k.kind for k in kinds]
    for warning in dict.fromkeys(k.warning for k in kinds if k.warning):
        score.warnings.append(f"stain: {warning}")
    if not any(run.stain["transformed"]):
        score.warnings.append(
            "stain perturbation left every image unchanged ("
            + "; ".join(f for f in run.stain["flags"] if f)
            + "): Δ_aug measures no stain shift"
        )
    score.evidence["stain"] = run.stain
    score.evidence["attack"] = adversarial.name
    score.evidence["prompt_library"] = lib.version
    for cond, err in run.errors.items():
        score.warnings.append(f"{cond}: {err}")
    run.score = score
    return run


def _same_shape(images: list[np.ndarray]) -> bool:
    return len({im.shape for im in images}) == 1
