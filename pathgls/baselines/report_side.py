"""The report-side component of the trust score: the report scored against a reference report.

When an item has a reference report, the trust score fuses the PathGLS modules with a
``report`` module (``fusion.weights.report``); without one the module is absent and the trust is
that of the other modules (:mod:`pathgls.fusion`). Its backend is chosen by name, like every
other backend (:data:`REPORT_SIDE`, ``[report] backend``):

- ``dxalign`` (default, offline): DxAlign (:mod:`pathgls.baselines.dxalign`) with the run's
  entity extractor and sentence embedder, mapped to [0, 1] by
  ``(DxAlign − floor) / (1 + behaviour_weight − floor)``, clipped — a monotone map, so the
  correlations and rankings of DxAlign are unchanged and an unrelated report scores 0;
- ``hare``: HARE (:mod:`pathgls.hare`) with the models of ``[hare]``; its score is already in
  [0, 1] (``combine = "sum"``, in [0, 2], is halved).

A reference or report that is empty, or a backend that fails, gives a *missing* module with the
reason — never a made-up number.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pathgls.baselines.dxalign import DxAlignConfig, dxalign_scores
from pathgls.config import HareConfig, ReportConfig
from pathgls.errors import ConfigError, PathGLSError
from pathgls.evidence import ReportEvidence
from pathgls.registry import Registry
from pathgls.types import ModuleScore

if TYPE_CHECKING:
    from pathgls.text.analyze import AnalyzedReport

#: Version of the DxAlign report score; bumped whenever its value changes for the same inputs.
DXALIGN_VERSION = "1"
#: Name of the report-side module in ScoreCards and in ``fusion.weights``.
MODULE = "report"


class ReportScorer(Protocol):
    """Scores a candidate report against a reference, in [0, 1]."""

    backend: str
    version: str

    def score(self, *, reference: str, candidate: str) -> ModuleScore:
        """The ``report`` module of one pair (never raises for bad input: missing instead)."""
        ...


@dataclass(frozen=True)
class ReportModels:
    """What the backends may need; each takes what it uses."""

    extractor: Any  # EntityExtractor (dxalign)
    embedder: Any  # TextEmbedder (dxalign)
    hare: Any | None = None  # HareModels (hare)
    hare_config: HareConfig = dataclasses.field(default_factory=HareConfig)


#: Report-side backends: factories ``(argument, *, config, models) -> ReportScorer``.
REPORT_SIDE: Registry[ReportScorer] = Registry("report", label="report-side backend")


def _describe(model: Any) -> str:
    name = getattr(model, "name", type(model).__name__)
    ident = getattr(model, "model_id", None) or getattr(model, "package", None)
    rev = getattr(model, "revision", None)
    out = f"{name}" + (f" {ident}" if ident and ident != name else "")
    return out + (f"@{rev}" if rev else "")


def _empty_reason(reference: str, candidate: str) -> str | None:
    if not isinstance(reference, str) or not reference.strip():
        return "the reference report is empty"
    if not isinstance(candidate, str) or not candidate.strip():
        return "the report is empty"
    return None


def _missing(reason: str, *, backend: str, version: str) -> ModuleScore:
    ev = ReportEvidence(backend=backend, version=version)
    return ModuleScore(name=MODULE, value=None, missing_reason=reason, evidence=ev.to_dict())


class DxAlignScorer:
    """DxAlign mapped to [0, 1] (see the module docstring)."""

    backend = "dxalign"

    def __init__(self, *, config: ReportConfig, extractor: Any, embedder: Any) -> None:
        self.config = config
        self.extractor = extractor
        self.embedder = embedder
        self.version = (
            f"dxalign {DXALIGN_VERSION} (behaviour weight {config.behaviour_weight:g}, floor "
            f"{config.floor:g}); extractor {_describe(extractor)}; embedder {_describe(embedder)}"
        )

    def calibrate(self, raw: float) -> float:
        """DxAlign → [0, 1]: ``(raw − floor) / (1 + behaviour_weight − floor)``, clipped."""
        cfg = self.config
        top = 1.0 + cfg.behaviour_weight - cfg.floor
        return float(min(max((raw - cfg.floor) / top, 0.0), 1.0))

    def score(
        self, *, reference: str, candidate: str, candidate_read: AnalyzedReport | None = None
    ) -> ModuleScore:
        """The ``report`` module of one pair; ``candidate_read``: ``candidate`` already read
        with :attr:`extractor` (``analyze_report(candidate, extractor=self.extractor)``), used
        instead of reading it again."""
        why = _empty_reason(reference, candidate)
        if why is not None:
            return _missing(why, backend=self.backend, version=self.version)
        try:
            (res,) = dxalign_scores(
                references=[reference],
                candidates=[candidate],
                extractor=self.extractor,
                embedder=self.embedder,
                config=DxAlignConfig(behaviour_weight=self.config.behaviour_weight),
                analyzed=None if candidate_read is None else {candidate: candidate_read},
            )
        except (PathGLSError, ValueError, TypeError, RuntimeError) as e:
            reason = f"dxalign failed: {type(e).__name__}: {e}"
            return _missing(reason, backend=self.backend, version=self.version)
        ev = ReportEvidence(
            backend=self.backend,
            version=self.version,
            raw=res.score,
            candidate_dx=res.candidate_dx,
            shared_behaviour=res.shared_behaviour,
        )
        return ModuleScore(
            name=MODULE,
            value=self.calibrate(res.score),
            evidence=ev.to_dict(),
            warnings=list(res.warnings),
        )


class HareScorer:
    """HARE of the report against the reference (in [0, 1])."""

    backend = "hare"

    def __init__(self, *, models: Any, config: HareConfig) -> None:
        self.models = models
        self.config = config
        specs = getattr(models, "specs", None)
        used = (
            dataclasses.asdict(specs)
            if specs is not None
            else {"extractor": _describe(models.extractor)}
        )
        self.version = "hare; " + ", ".join(f"{k} {v}" for k, v in used.items())

    @property
    def extractor(self) -> Any:
        """The entity extractor HARE reads both reports with."""
        return self.models.extractor

    def score(
        self, *, reference: str, candidate: str, candidate_read: AnalyzedReport | None = None
    ) -> ModuleScore:
        """The ``report`` module of one pair; ``candidate_read``: ``candidate`` already read
        with :attr:`extractor`, used instead of reading it again."""
        from pathgls.hare.models import score_pairs

        why = _empty_reason(reference, candidate)
        if why is not None:
            return _missing(why, backend=self.backend, version=self.version)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                (res,) = score_pairs(
                    references=[reference],
                    candidates=[candidate],
                    models=self.models,
                    config=self.config,
                    analyzed=None if candidate_read is None else {candidate: candidate_read},
                )
        except (PathGLSError, ValueError, TypeError, RuntimeError) as e:
            reason = f"hare failed: {type(e).__name__}: {e}"
            return _missing(reason, backend=self.backend, version=self.version)
        scale = 2.0 if self.config.combine == "sum" else 1.0
        ev = ReportEvidence(
            backend=self.backend,
            version=self.version,
            raw=res.score,
            entity_f1=res.entity_f1,
            relation_f1=res.relation_f1,
        )
        return ModuleScore(
            name=MODULE,
            value=float(min(max(res.score / scale, 0.0), 1.0)),
            evidence=ev.to_dict(),
            warnings=[*res.warnings, *(str(w.message) for w in caught)],
        )


@REPORT_SIDE.register(
    "dxalign",
    description="DxAlign against the reference (offline: the run's extractor and embedder), "
    "mapped to [0, 1]",
)
def _dxalign(argument: str, *, config: ReportConfig, models: ReportModels) -> ReportScorer:
    return DxAlignScorer(config=config, extractor=models.extractor, embedder=models.embedder)


@REPORT_SIDE.register("hare", description="HARE against the reference, with the models of [hare]")
def _hare(argument: str, *, config: ReportConfig, models: ReportModels) -> ReportScorer:
    if models.hare is None:
        raise ConfigError("the hare report-side backend needs HARE's models: set run.hare = true")
    return HareScorer(models=models.hare, config=models.hare_config)


def build_report_scorer(*, config: ReportConfig, models: ReportModels) -> ReportScorer:
    """The report-side scorer named by ``config.backend``.

    Raises:
        UnknownNameError: an unknown backend (the message lists the known ones).
        PathGLSError: the backend needs models that were not loaded.
    """
    return REPORT_SIDE.build(config.backend, config=config, models=models)


def report_score(
    *,
    reference: str,
    candidate: str,
    scorer: ReportScorer,
    candidate_read: AnalyzedReport | None = None,
    extractor: Any = None,
) -> ModuleScore:
    """The ``report`` module of ``candidate`` against ``reference`` (missing on bad input).

    ``candidate_read`` is ``candidate`` as ``extractor`` read it
    (``analyze_report(candidate, extractor=extractor)``: the pipeline's reading of the original
    report). A built-in scorer that reads with that same extractor object uses it instead of
    reading the candidate again — the same reading, so the same score; any other scorer (another
    extractor, a plugin backend) reads the candidate itself.
    """
    if candidate_read is not None and shares_reading(scorer, extractor):
        assert isinstance(scorer, DxAlignScorer | HareScorer)
        return scorer.score(reference=reference, candidate=candidate, candidate_read=candidate_read)
    return scorer.score(reference=reference, candidate=candidate)


def shares_reading(scorer: ReportScorer, extractor: Any) -> bool:
    """Whether ``scorer`` is a built-in one that reads reports with ``extractor`` itself."""
    return (
        extractor is not None
        and isinstance(scorer, DxAlignScorer | HareScorer)
        and scorer.extractor is extractor
    )
