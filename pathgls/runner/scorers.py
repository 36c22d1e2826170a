"""The built-in score modules' hooks: one function per module, each scoring one subject of one item.

:func:`pathgls.runner.pipeline.evaluate_item` walks :func:`pathgls.modules.scoring_order` and
calls each module's ``score`` hook (``"pathgls.runner.scorers:logic"``, ...) with one
:class:`ScoringContext`. A hook returns the module's :class:`~pathgls.types.ModuleScore`, or
None when the module does not apply to the item (HARE without its models). A plugin's hook has
the same signature (see docs/architecture.md, "Adding a score module").

The pipeline asks the subject for its reports before any hook runs
(:func:`pathgls.generation.generate_conditions`: original, stain, attack, each read once) and
hands them over in the context. :func:`stability` comes first and is the one hook scored when
there is no original report (its score says why); the others read the original.
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

import numpy as np

from pathgls.evidence import HareEntityMatch, HareEvidence
from pathgls.types import ModuleScore

if TYPE_CHECKING:
    from pathgls.config import PathGLSConfig
    from pathgls.generation import GeneratedReports
    from pathgls.grounding.sources import WindowSource
    from pathgls.runner.items import WorkItem
    from pathgls.runner.models import Models
    from pathgls.runner.store import ResultsStore
    from pathgls.subjects.base import Subject
    from pathgls.subjects.views import View
    from pathgls.text.analyze import AnalyzedReport
    from pathgls.types import CardInputs, Report

__all__ = ["PreparedItem", "ScoringContext", "grounding", "hare", "logic", "report", "stability"]

NO_ENCODER_REASON = (
    "grounding not scored: no image-text encoder was given (--encoder plip, after "
    "`pathgls models pull plip`)"
)


class PreparedItem(Protocol):
    """What every subject of an item shares (the pipeline's prepared item)."""

    # What the subject is shown.
    view: View
    # The item's inputs recorded on the card (slide size, bag, identity, ...).
    inputs: CardInputs
    # The slide's feature bag (with HighRes windows), when an encoder was given.
    bag: Path | None
    # An ROI item's embedded windows, when an encoder was given.
    roi: WindowSource | None


@dataclass
class ScoringContext:
    """What a score hook may read: one subject's reports of one item, and the run's means."""

    item: WorkItem
    # The subject's name in the run (``config.run.subjects``).
    subject_name: str
    # The subject itself (timed by the pipeline: its generate seconds become "generation").
    subject: Subject
    # What every subject of the item shares: the view, the feature bag or ROI windows.
    prepared: PreparedItem
    models: Models
    config: PathGLSConfig
    store: ResultsStore
    # The subject's reports under the three conditions, each read once
    # (:func:`pathgls.generation.generate_conditions`, before any hook runs).
    generated: GeneratedReports

    @property
    def reports(self) -> dict[str, Report]:
        """The reports by condition ("original", "stain", the attack's)."""
        return self.generated.reports

    @property
    def original(self) -> AnalyzedReport | None:
        """The original report, read (None: the subject gave none)."""
        return self.generated.analyzed.get("original")

    @property
    def prompts(self) -> dict[str, str]:
        """The prompts' names by role (neutral, attack)."""
        return self.generated.prompts

    @property
    def errors(self) -> dict[str, str]:
        """The generation errors by condition."""
        return self.generated.errors


def stability(ctx: ScoringContext) -> ModuleScore:
    """S_s of the generated reports (Δ between the original and each perturbed one)."""
    from pathgls.stability.delta import EntailmentScorer, make_delta
    from pathgls.stability.run import score_generation

    models, config = ctx.models, ctx.config.stability
    delta = models.delta
    if delta is None:  # models assembled by hand: built here, as load_models builds it
        nli = models.nli if isinstance(models.nli, EntailmentScorer) else None
        delta = make_delta(config, embedder=models.embedder, nli=nli)
    return score_generation(generated=ctx.generated, delta=delta, config=config)


def logic(ctx: ScoringContext) -> ModuleScore:
    """S_l of the original report."""
    from pathgls.logic import logic_score

    assert ctx.original is not None
    return logic_score(report=ctx.original, nli=ctx.models.nli, config=ctx.config.logic)


def grounding(ctx: ScoringContext) -> ModuleScore:
    """S_g of the original report on the item's feature bag or ROI windows (missing without an
    encoder); writes the grounding map when the run keeps them."""
    from pathgls.grounding.score import ground
    from pathgls.grounding.sources import open_bag_source

    models, prep, store = ctx.models, ctx.prepared, ctx.store
    assert ctx.original is not None
    if models.encoder is None:
        return ModuleScore(name="grounding", value=None, missing_reason=NO_ENCODER_REASON)
    keep = ctx.config.run.keep_grounding_maps
    with contextlib.ExitStack() as stack:
        if prep.roi is not None:
            source = prep.roi
        else:
            assert prep.bag is not None
            size = prep.inputs.get("slide_size")  # the session's: coords outside are refused
            source = stack.enter_context(
                open_bag_source(
                    prep.bag, slide_size=cast("tuple[int, int]", tuple(size)) if size else None
                )
            )
        res = ground(  # as pathgls.runner.pipeline.ground_report (``pathgls ground``) calls it
            entities=ctx.original.entities,
            encoder=models.encoder,
            source=source,
            config=ctx.config.grounding,
            keep_patch_max=keep,
            foil_embeddings=models.foils,
        )
        if keep and res.score.value is not None:
            values = {
                t.phrase: np.asarray(res.patch_values(t.phrase)) for t in res.selection.targets
            }
            path = store.write_grounding_map(
                ctx.subject_name,
                ctx.item.item_id,
                coords=np.asarray(source.coords),
                values=values,
                patch_size_level0=int(source.patch_size_level0),
                space=str(source.space),
            )
            res.score.evidence["map"] = str(path.relative_to(store.root))  # GroundingEvidence.map
    return res.score


def hare(ctx: ScoringContext) -> ModuleScore | None:
    """HARE of the original report against the item's reference; None without HARE's models."""
    import warnings

    from pathgls.hare.models import score_pairs

    hare_models = ctx.models.hare
    if hare_models is None:
        return None
    assert ctx.item.reference is not None and ctx.original is not None
    candidate = ctx.reports["original"].text
    # the pipeline's reading of the original when HARE reads with the run's extractor (the
    # same object: same lexicon, same cleaning), else HARE reads it with its own (hf-ner ...)
    same = hare_models.extractor is ctx.models.extractor
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (res,) = score_pairs(
            references=[ctx.item.reference],
            candidates=[candidate],
            models=hare_models,
            config=ctx.config.hare,
            analyzed={candidate: ctx.original} if same else None,
        )
    evidence = HareEvidence(
        entity_precision=res.entity_precision,
        entity_recall=res.entity_recall,
        entity_f1=res.entity_f1,
        relation_f1=res.relation_f1,
        entity_matches=tuple(
            HareEntityMatch.from_dict(dataclasses.asdict(m)) for m in res.entity_matches[:20]
        ),
        backend="offline (lexicon entities, MiniLM, report-graph relations)",
    )
    return ModuleScore(
        name="hare",
        value=float(res.score),
        evidence=evidence.to_dict(),
        warnings=[*res.warnings, *(str(w.message) for w in caught)],
    )


def report(ctx: ScoringContext) -> ModuleScore:
    """The report-side component against the item's reference (missing without a scorer)."""
    from pathgls.baselines.report_side import MODULE, report_score

    models = ctx.models
    assert ctx.item.reference is not None
    if models.report is None:
        reason = models.report_error or "no report-side scorer was loaded"
        return ModuleScore(name=MODULE, value=None, missing_reason=reason)
    return report_score(  # the pipeline's reading when the scorer reads with the run's extractor
        reference=ctx.item.reference,
        candidate=ctx.reports["original"].text,
        scorer=models.report,
        candidate_read=ctx.original,
        extractor=models.extractor,
    )
