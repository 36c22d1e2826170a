"""The original, stain and attack reports of one item, each read once.

``original``: the view's images with the neutral prompt; ``stain``: the same images after the
seeded Macenko perturbation (:mod:`.stain`); ``attack:<name>``: the original images with an
adversarial prompt. A failed generation is recorded with its reason and the others still run;
when the original fails the others are not asked — without it there is nothing to compare
them with, and the card fails anyway.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pathgls.attacks.prompts import DEFAULT_ATTACK, PromptLibrary, load_prompt_library
from pathgls.attacks.stain import StainConfig
from pathgls.errors import PathGLSError
from pathgls.generation.ask import ask_subject
from pathgls.generation.stain import stained_view
from pathgls.subjects.base import Subject, SubjectError
from pathgls.subjects.cache import SubjectCache
from pathgls.subjects.views import View
from pathgls.text.analyze import AnalyzedReport, analyze_report
from pathgls.text.base import EntityExtractor
from pathgls.types import Report

ORIGINAL = "original"
STAIN = "stain"


@dataclass
class GeneratedReports:
    """One item's reports under the three conditions, read once, and what went wrong."""

    #: the attack's condition name (``attack:<name>``)
    attack: str
    #: the prompts asked: ``{"neutral": name, "attack": name}``
    prompts: dict[str, str] = field(default_factory=dict)
    #: the prompt library's version
    library_version: str = ""
    #: condition → the report as written (absent: its generation failed)
    reports: dict[str, Report] = field(default_factory=dict)
    #: condition → its analysed report (None: its generation failed)
    analyzed: dict[str, AnalyzedReport | None] = field(default_factory=dict)
    #: condition → why it has no report
    errors: dict[str, str] = field(default_factory=dict)
    #: the stain perturbation: factors, transformed, flags, seed, kinds
    stain: dict[str, Any] = field(default_factory=dict)
    #: about the stained view (not H&E, nothing changed)
    stain_warnings: list[str] = field(default_factory=list)

    @property
    def original(self) -> AnalyzedReport | None:
        """The original report, analysed (None: it failed)."""
        return self.analyzed.get(ORIGINAL)

    @property
    def conditions(self) -> tuple[str, str, str]:
        """The three conditions, original first."""
        return (ORIGINAL, STAIN, self.attack)


def generate_conditions(
    *,
    subject: Subject,
    view: View,
    item_id: str,
    extractor: EntityExtractor,
    attack: str = DEFAULT_ATTACK,
    library: PromptLibrary | None = None,
    seed: int = 0,
    cache: SubjectCache | None = None,
    stain_config: StainConfig | None = None,
    max_report_chars: int | None = None,
) -> GeneratedReports:
    """Ask ``subject`` for R_orig, R_aug and R_attack and analyse each once.

    Args:
        subject: The model under test.
        view: The images it is shown (:mod:`pathgls.subjects.views`, or an ROI as one image).
        item_id: Stable id of the slide/ROI (seeds the stain factors, keys caches and replay).
        extractor: Entity extractor for the reports.
        attack: Name of the adversarial prompt.
        library: Prompt library (default: the built-in one).
        seed: Generation seed and stain seed.
        cache: Subject cache (None: always generate).
        stain_config: Macenko settings.
        max_report_chars: Longest report accepted (longer: that generation fails).

    Raises:
        ConfigError: unknown attack.
    """
    lib = library or load_prompt_library()
    neutral, adversarial = lib.neutral, lib.attack(attack)
    stained = stained_view(view=view, item_id=item_id, seed=seed, config=stain_config)
    out = GeneratedReports(
        attack=adversarial.condition,
        prompts={"neutral": neutral.name, "attack": adversarial.name},
        library_version=lib.version,
        stain=stained.record,
        stain_warnings=list(stained.warnings),
    )
    conditions = [
        (ORIGINAL, view.images, neutral),
        (STAIN, stained.images, neutral),
        (adversarial.condition, view.images, adversarial),
    ]
    for condition, images, prompt in conditions:
        if condition != ORIGINAL and out.analyzed.get(ORIGINAL) is None:
            # the card fails on the original anyway: asking for the others only costs
            out.errors[condition] = "not asked: the original report failed"
            out.analyzed[condition] = None
            continue
        try:
            text = ask_subject(
                subject,
                view=view,
                images=list(images),
                prompt=prompt,
                max_chars=max_report_chars,
                condition=condition,
                item_id=item_id,
                seed=seed,
                cache=cache,
            )
            out.reports[condition] = Report(text=text, condition=condition, source=subject.name)
            out.analyzed[condition] = report = analyze_report(text, extractor=extractor)
            out.reports[condition].warnings.extend(report.warnings)
        except (SubjectError, PathGLSError) as e:
            out.errors[condition] = f"{type(e).__name__}: {e}"
            out.analyzed[condition] = None
    return out
