"""One item of a run: slide (or ROI) → view → three generations → module scores → ScoreCards.

The models are loaded once per worker (:func:`~pathgls.runner.models.load_models`) and
injected. One call of :func:`evaluate_item` opens one :class:`~pathgls.features.session.
SlideSession` for the item: the slide is opened at most once, its read plan and tissue grid
come from the run's patches file (or are computed once and saved there), its feature bag is
built (or reused) once, the subject's montage is read by the bag's own read path, and every
subject is scored on that. Nothing in here raises for a bad item: an unreadable slide, a slide
without resolution metadata or a subject that never answers becomes a ScoreCard with status
``failed`` (or ``partial``) and its reasons, and the run goes on.

:func:`roi_windows` and :func:`ground_report` are the grounding steps ``evaluate`` runs and
``pathgls ground`` runs too.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from pathgls.config import GroundingConfig, PathGLSConfig
from pathgls.errors import PathGLSError, ScoreModuleError
from pathgls.fusion import gate_scorecard
from pathgls.io.names import safe_stem
from pathgls.modules import (
    SCORE_MODULES,
    SCORED_WITHOUT_ORIGINAL,
    ModuleScorer,
    module_by_name,
    score_modules,
    scoring_order,
)
from pathgls.runner.breaker import GenerationFailure, SubjectBreaker
from pathgls.runner.items import WorkItem
from pathgls.runner.models import Models, describe_model, is_random, load_models
from pathgls.runner.store import ResultsStore
from pathgls.types import CardInputs, ModuleScore, ScoreCard, Status

if TYPE_CHECKING:
    from pathgls.encoders.base import Encoder
    from pathgls.grounding.score import GroundingResult
    from pathgls.grounding.sources import WindowSource
    from pathgls.grounding.targets import FoilEmbeddings
    from pathgls.runner.scorers import ScoringContext
    from pathgls.subjects.base import Subject
    from pathgls.subjects.views import View
    from pathgls.text.analyze import AnalyzedReport

__all__ = [
    "Models",
    "describe_model",
    "evaluate_item",
    "failed_cards",
    "ground_report",
    "load_models",
    "module_models",
    "roi_windows",
]

#: Which loaded models each built-in module's score depends on (kept for code that imported
#: it; :func:`module_models` includes the plugins).
MODULE_MODELS = {m.name: m.models for m in SCORE_MODULES if m.models}


class _TimedSubject:
    """Delegates to a subject and adds up the seconds spent in ``generate``."""

    def __init__(self, subject: Subject) -> None:
        self._subject = subject
        self.seconds = 0.0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._subject, name)

    def generate(self, images: Any, prompt: str, **kwargs: Any) -> str:
        t0 = time.perf_counter()
        try:
            return self._subject.generate(images, prompt, **kwargs)
        finally:
            self.seconds += time.perf_counter() - t0


@dataclass
class _Prepared:
    """What every subject of an item shares: the view, the bag or ROI windows, timings."""

    view: View
    inputs: CardInputs
    bag: Path | None = None
    roi: WindowSource | None = None
    timings: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


@contextlib.contextmanager
def _timed(timings: dict[str, float], key: str) -> Iterator[None]:
    t0 = time.perf_counter()
    try:
        yield
    finally:
        timings[key] = timings.get(key, 0.0) + time.perf_counter() - t0


def roi_windows(
    *,
    image: NDArray[np.uint8],
    name: str,
    encoder: Encoder,
    config: PathGLSConfig,
    origin: tuple[float, float] = (0.0, 0.0),
    scale: float = 1.0,
    space: Literal["level0", "image"] = "image",
) -> WindowSource:
    """An ROI image cut into HighRes windows and embedded: the grounding source of ROI items
    (``evaluate``) and of ``pathgls ground --image`` / ``--slide --region``.

    Raises:
        GroundingError: not an RGB image, too small or over ``grounding.roi_max_side``.
    """
    from pathgls.grounding.sources import roi_source

    return roi_source(
        encoder=encoder,
        image=image,
        name=name,
        window_size=config.encoder.window_size,
        window_stride=config.encoder.window_stride,
        origin=origin,
        scale=scale,
        space=space,
        max_side=config.grounding.roi_max_side,
    )


def ground_report(
    *,
    report: AnalyzedReport,
    source: WindowSource,
    encoder: Encoder,
    config: GroundingConfig,
    foils: FoilEmbeddings | None = None,
    keep_patch_max: bool = False,
) -> GroundingResult:
    """The Grounding score of an analysed report on a bag or ROI source (``evaluate`` and
    ``pathgls ground``).

    Raises:
        EncoderMismatchError: the source's embeddings come from another encoder.
    """
    from pathgls.grounding.score import ground

    return ground(
        entities=report.entities,
        encoder=encoder,
        source=source,
        config=config,
        keep_patch_max=keep_patch_max,
        foil_embeddings=foils,
    )


def _prepare(
    item: WorkItem, models: Models, config: PathGLSConfig, store: ResultsStore
) -> _Prepared:
    from pathgls.grounding.sources import load_roi_image
    from pathgls.subjects.views import View
    from pathgls.tiling.identity import file_identity

    timings: dict[str, float] = {}
    if item.kind != "roi":
        return _prepare_slide(item, models, config, store, timings)
    with _timed(timings, "slide.identity"):
        identity = file_identity(item.path)
    with _timed(timings, "slide.view"):
        image = load_roi_image(item.path)
    prep = _Prepared(
        view=View(kind="roi", images=[image], description=f"ROI {image.shape[1]}×{image.shape[0]}"),
        inputs={
            "roi_size": [int(image.shape[1]), int(image.shape[0])],
            "slide_identity": identity.to_dict(),
        },
        timings=timings,
        warnings=list(item.notes),
    )
    if models.encoder is not None:
        prep.warnings.append(
            "ROI grounded at its own pixel size, taken as 20× (0.5 µm/px); for an exact "
            "magnification give the slide instead"
        )
        with _timed(timings, "slide.encoding"):
            prep.roi = roi_windows(
                image=image, name=item.item_id, encoder=models.encoder, config=config
            )
    return prep


def _prepare_slide(
    item: WorkItem,
    models: Models,
    config: PathGLSConfig,
    store: ResultsStore,
    timings: dict[str, float],
) -> _Prepared:
    from pathgls.features.extract import extract_slide
    from pathgls.features.session import SlideSession
    from pathgls.subjects.views import slide_view

    with SlideSession(
        Path(item.path),
        tiling_config=config.tiling,
        mpp=config.run.mpp,
        out_dir=store.root,
        name=safe_stem(item.item_id),
        verify=config.run.verify,
    ) as session:
        plan = session.plan()  # no mpp → MissingResolutionError
        bag = None
        inputs: CardInputs = {
            "level0_mpp": float(plan.level0_mpp),
            "mpp_source": plan.mpp_source,
            "read_level": plan.level,
        }
        warnings: list[str] = []
        if models.encoder is not None:
            res = extract_slide(
                slide=item.path,
                out_dir=store.root,
                encoder=models.encoder,
                config=config,
                mpp=config.run.mpp,
                bag_name=safe_stem(item.item_id),
                session=session,
                windows=True,  # Grounding reads HighRes windows, whatever encoder.windows says
            )
            if res.status == "failed":
                raise PathGLSError(f"feature bag: {res.error}")
            assert res.bag_path is not None
            bag = Path(res.bag_path)
            inputs["bag"] = str(bag)
            inputs["n_patches"] = int(res.n_patches)
            inputs["patches_encoded_now"] = int(res.n_encoded)  # 0: a complete bag was reused
            inputs["tiling_reused"] = bool(session.stats.tiling_reused)
            warnings += [f"feature bag: {w}" for w in res.warnings if w not in session.notes]
        t0 = time.perf_counter()
        view = slide_view(item.path, bag=bag, config=config.view, session=session)
        view_s = time.perf_counter() - t0
        tiling = session.tiling() if models.encoder is not None else None
        inputs["slide_size"] = list(session.dimensions)
        inputs["slide_identity"] = session.identity().to_dict()
        if tiling is not None:
            inputs["patches_file"] = str(session.patches_path)
        inputs["slide_reads"] = {
            "opens": session.stats.opens,
            "patches_for_view": session.stats.patch_reads,
            "thumbnails": session.stats.thumbnails,
            "full_hashes": session.stats.full_hashes,
        }
        timings.update(session.timings)
        if models.encoder is not None and "slide.encoding" in res.timings:
            timings["slide.encoding"] = res.timings["slide.encoding"]
        timings["slide.view"] = view_s
    return _Prepared(
        view=view,
        inputs=inputs,
        bag=bag,
        timings=timings,
        warnings=[*item.notes, *session.notes, *warnings],
    )


def _base_inputs(
    item: WorkItem, subject: str, described: dict[str, Any], config: PathGLSConfig
) -> CardInputs:
    """The inputs every card records; ``described`` is :meth:`Models.describe`."""
    s = (described.get("subjects") or {}).get(subject) or {}
    return {
        "subject_model_id": s.get("model_id"),
        "subject_revision": s.get("revision"),
        "subject_learned": s.get("learned"),
        "item": item.path,
        "kind": item.kind,
        "attack": config.run.attack,
        "seed": config.run.seed,
        "view": item.kind if item.kind == "roi" else config.view.kind,
        "encoder": described.get("encoder"),
        # repo ids and revisions of the text models (extractor, NLI, embedder, HARE's)
        "models": {k: described.get(k) for k in ("extractor", "nli", "embedder", "hare", "report")},
        "extractor": config.models.extractor,
        "nli": config.models.nli,
        "embedder": config.models.embedder,
        "reference": item.reference is not None,
    }


def _failed(
    item: WorkItem,
    subject: str,
    described: dict[str, Any],
    config: PathGLSConfig,
    error: str,
    timings: dict[str, float],
) -> ScoreCard:
    return ScoreCard(
        item_id=item.item_id,
        subject=subject,
        status="failed",
        inputs=_base_inputs(item, subject, described, config),
        timings=dict(timings),
        warnings=list(item.notes),
        errors=[error],
    )


def failed_cards(
    *,
    item: WorkItem,
    subjects: Sequence[str],
    error: str,
    config: PathGLSConfig,
    models: dict[str, Any] | None = None,
) -> list[ScoreCard]:
    """``failed`` ScoreCards of ``item`` for ``subjects``, with ``error`` as their reason.

    For an item whose evaluation itself was lost (its Ray worker died, the task raised) in a
    process that has no :class:`Models`, only their description.

    Args:
        item: The item.
        subjects: The subjects it was being evaluated with.
        error: Why (one line first; becomes the cards' only error).
        config: The run's settings.
        models: :meth:`Models.describe` of the run's models (subject ids, encoder), when known.
    """
    return [_failed(item, s, models or {}, config, error, {}) for s in subjects]


def evaluate_item(
    *,
    item: WorkItem,
    models: Models,
    config: PathGLSConfig,
    store: ResultsStore,
    subjects: Sequence[str] | None = None,
    breaker: SubjectBreaker | None = None,
) -> list[ScoreCard]:
    """ScoreCards of ``item`` for ``subjects`` (default: every subject of the run).

    Never raises for a bad item or subject: failures become ``failed``/``partial`` cards.

    Args:
        item: The slide or ROI.
        models: The worker's models.
        config: The run's settings.
        store: The run directory (bags, patches files, caches, grounding maps).
        subjects: The subjects to score it with.
        breaker: The worker's subject circuit breaker (None: one for this item alone).
    """
    names = list(subjects if subjects is not None else config.run.subjects)
    breaker = breaker or SubjectBreaker(config.run.subject_failure_limit)
    described = models.describe()
    try:
        prep = _prepare(item, models, config, store)
    except PathGLSError as e:
        error = f"{type(e).__name__}: {e}"
        return [_failed(item, s, described, config, error, {}) for s in names]
    except Exception as e:  # a bug or an unexpected library error must not end the run
        error = f"unexpected {type(e).__name__}: {e}\n{traceback.format_exc(limit=6)}"
        return [_failed(item, s, described, config, error, {}) for s in names]
    cards = []
    for s in names:
        skipped = breaker.open_reason(s)
        if skipped is not None:
            cards.append(_failed(item, s, described, config, skipped, prep.timings))
            continue
        failure = None
        try:
            card, failure = _evaluate_subject(item, s, prep, models, described, config, store)
        except Exception as e:
            error = f"unexpected {type(e).__name__}: {e}\n{traceback.format_exc(limit=6)}"
            card = _failed(item, s, described, config, error, prep.timings)
        breaker.record(s, failure=failure, scored=card.status in ("ok", "partial"))
        cards.append(card)
    return cards


def _evaluate_subject(
    item: WorkItem,
    subject: str,
    prep: _Prepared,
    models: Models,
    described: dict[str, Any],
    config: PathGLSConfig,
    store: ResultsStore,
) -> tuple[ScoreCard, GenerationFailure | None]:
    """The subject's card, and its failure when it produced no original report.

    Prepare (done, ``prep``) → generate and read the three reports once
    (:func:`~pathgls.generation.generate_conditions`) → score them by each module's hook in
    :func:`~pathgls.modules.scoring_order` → fuse and gate. Without an original report the card
    fails with stability alone (its score says why). Each module's seconds are
    ``timings[name]``; the subject's own are ``timings["generation"]``.
    """
    from pathgls.generation import generate_conditions
    from pathgls.runner.scorers import ScoringContext
    from pathgls.subjects.cache import SubjectCache

    t_start = time.perf_counter()
    timings = dict(prep.timings)
    timed = _TimedSubject(models.subjects[subject])  # delegates, timing its generate
    generated = generate_conditions(
        subject=timed,
        view=prep.view,
        item_id=item.item_id,
        extractor=models.extractor,
        attack=config.run.attack,
        library=models.prompts,
        seed=config.run.seed,
        cache=SubjectCache(store.cache_dir),
        stain_config=config.stain,
        max_report_chars=config.subject.max_report_chars,
    )
    # the subject's own seconds; the stain and the reading count with stability, as before
    timings["generation"] = timed.seconds
    reading_s = time.perf_counter() - t_start - timed.seconds
    ctx = ScoringContext(
        item=item,
        subject_name=subject,
        subject=timed,
        prepared=prep,
        models=models,
        config=config,
        store=store,
        generated=generated,
    )
    modules: dict[str, ModuleScore] = {}
    warnings = list(prep.warnings)
    for scorer in scoring_order():  # stability first
        if scorer.name != SCORED_WITHOUT_ORIGINAL and ctx.original is None:
            break  # no original report: nothing else to score, the card fails
        if scorer.needs_reference and item.reference is None:
            continue
        t0 = time.perf_counter()
        if scorer in SCORE_MODULES:
            score = _checked(scorer.name, scorer.hook()(ctx))
        else:  # a plugin's failure costs its module, not the card's other scores
            score = _plugin_score(scorer, ctx, warnings)
        spent = time.perf_counter() - t0
        if score is None:  # the module does not apply to this item
            continue
        if scorer.name == SCORED_WITHOUT_ORIGINAL:
            spent += reading_s
        timings[scorer.name] = timings.get(scorer.name, 0.0) + spent
        modules[scorer.name] = score
    inputs = _base_inputs(item, subject, described, config) | prep.inputs
    inputs["prompts"] = dict(ctx.prompts)
    inputs["view_description"] = prep.view.description
    errors = [f"generation failed ({cond}): {err}" for cond, err in ctx.errors.items()]
    failure = None
    status: Status = "failed"  # until the original report is scored
    if ctx.original is None:
        failure = GenerationFailure(subject, item.item_id, ctx.errors.get("original", ""))
    else:
        status = "partial" if errors else "ok"
    modules = {name: _marked(name, m, models) for name, m in modules.items()}
    card = ScoreCard(
        item_id=item.item_id,
        subject=subject,
        status=status,
        inputs=inputs,
        reports=ctx.reports,
        modules=modules,
        timings=timings,
        warnings=warnings,
        errors=errors,
    )
    if ctx.original is not None:
        card = gate_scorecard(card, fusion=config.fusion, gate=config.gate)
    card.timings["total"] = time.perf_counter() - t_start
    return card, failure


def _plugin_score(
    scorer: ModuleScorer, ctx: ScoringContext, warnings: list[str]
) -> ModuleScore | None:
    """A plugin module's score; when its hook cannot be imported, raises or returns something
    else, the module is missing with the reason (also a card warning) — never a made-up value."""
    try:
        return _checked(scorer.name, scorer.hook()(ctx))
    except Exception as e:  # a plugin's bug must not cost the built-in modules' scores
        said = e if isinstance(e, ScoreModuleError) else f"{type(e).__name__}: {e}"
        reason = f"score module {scorer.name!r} failed: {said}"
        warnings.append(reason)
        return ModuleScore(name=scorer.name, value=None, missing_reason=reason)


def _checked(name: str, score: Any) -> ModuleScore | None:
    """A hook's result, refused when it is not the module's ModuleScore.

    Raises:
        ScoreModuleError: another type, or a score named for another module.
    """
    if score is None:  # the module does not apply to this item
        return None
    if not isinstance(score, ModuleScore) or score.name != name:
        got = f"ModuleScore {score.name!r}" if isinstance(score, ModuleScore) else type(score)
        raise ScoreModuleError(
            f"score module {name!r}: its hook returned {got}, not a ModuleScore named {name!r}"
        )
    return score


def _marked(name: str, score: ModuleScore, models: Models) -> ModuleScore:
    """``score`` flagged ``random_weights`` when a model it depends on has random weights."""
    if score.random_weights:
        return score
    roles = module_by_name()[name].models
    used: list[Any] = [getattr(models, role, None) for role in roles]
    if name == "hare" and models.hare is not None:
        used += [models.hare.extractor, models.hare.embedder, models.hare.relations]
    if any(m is not None and is_random(m) for m in used):
        return dataclasses.replace(score, random_weights=True)
    return score


def module_models() -> dict[str, tuple[str, ...]]:
    """Which loaded models each module's score depends on (a random one marks the module)."""
    return {m.name: m.models for m in score_modules() if m.models}
