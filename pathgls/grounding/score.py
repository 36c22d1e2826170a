"""Grounding a report on a feature bag or an ROI image: S_g with its evidence.

:func:`ground` ties the pieces together: the report's targets (:mod:`pathgls.grounding.targets`),
their text embeddings, the window similarity (:mod:`pathgls.grounding`) over a
:class:`WindowSource` — a feature bag read lazily from disk (:func:`open_bag_source`) or an ROI
image cut into HighRes windows on the spot (:func:`roi_source`) — and the calibration. The
result carries a :class:`~pathgls.types.ModuleScore` whose evidence says, per entity, its best
window (level-0 box), similarity, calibrated score and best patches, plus what was left out.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from pathgls.config import GroundingConfig
from pathgls.encoders.base import Encoder
from pathgls.errors import (
    ConfigError,
    GroundingError,
)
from pathgls.evidence import (
    FoilStats,
    GroundedEntity,
    GroundingEvidence,
    GroundingSource,
    SkippedEntity,
    TopPatch,
)
from pathgls.grounding.similarity import (
    SimilarityResult,
    get_calibration,
    grounding_value,
    max_similarity,
    window_boxes,
)
from pathgls.grounding.sources import WindowSource, check_encoder
from pathgls.grounding.targets import (
    FoilEmbeddings,
    TargetSelection,
    encode_phrases,
    load_foils,
    select_targets,
    unrelated_foils,
)
from pathgls.hub.device import resolve_device
from pathgls.types import Entity, ModuleScore

RANDOM_WEIGHTS_WARNING = "random-weight encoder: this grounding proves wiring only, not a result"


@dataclass
class GroundingResult:
    """S_g as a :class:`ModuleScore`, with the arrays behind it for heat maps and export."""

    score: ModuleScore
    selection: TargetSelection
    similarity: SimilarityResult | None = None
    foil_similarity: np.ndarray | None = None
    foils: list[str] = field(default_factory=list)
    source: dict[str, Any] = field(default_factory=dict)

    def entity_index(self, entity: str) -> int:
        """Index of a target by phrase, concept or mention (case-insensitive).

        A name that is no target's exact name may be part of one (``carcinoma`` for "invasive
        ductal carcinoma") when exactly one target contains it.

        Raises:
            KeyError: no target by that name, or a part of several (the message lists them).
        """
        needle = entity.strip().lower()
        names = [
            {t.phrase.lower(), t.concept.lower(), *(m.lower() for m in t.mentions)}
            for t in self.selection.targets
        ]
        for i, known_names in enumerate(names):
            if needle in known_names:
                return i
        partial = [i for i, ns in enumerate(names) if needle and any(needle in n for n in ns)]
        if len(partial) == 1:
            return partial[0]
        if partial:
            candidates = ", ".join(repr(self.selection.targets[i].phrase) for i in partial)
            raise KeyError(f"{entity!r} is part of several grounded entities: {candidates}")
        known = ", ".join(t.phrase for t in self.selection.targets) or "none"
        raise KeyError(f"no grounded entity {entity!r}; grounded: {known}")

    def patch_values(self, entity: str) -> np.ndarray:
        """``(N,)`` per-patch maximum similarity of one entity (needs ``keep_patch_max``).

        Raises:
            GroundingError: per-patch maxima were not kept or nothing was grounded.
        """
        if self.similarity is None or self.similarity.patch_max is None:
            raise GroundingError("per-patch similarities were not kept (keep_patch_max=True)")
        return self.similarity.patch_max[self.entity_index(entity)]


def _missing(
    reason: str, evidence: dict[str, Any], warnings: list[str], *, random: bool
) -> ModuleScore:
    return ModuleScore(
        name="grounding",
        value=None,
        missing_reason=reason,
        evidence=evidence,
        warnings=warnings,
        random_weights=random,
    )


def ground(
    *,
    entities: list[Entity],
    encoder: Encoder,
    source: WindowSource,
    config: GroundingConfig | None = None,
    keep_patch_max: bool = False,
    foils: list[str] | None = None,
    foil_embeddings: FoilEmbeddings | None = None,
) -> GroundingResult:
    """S_g of a report's entities on a bag or ROI, with the encoder's text tower.

    Args:
        entities: The report's entities (``AnalyzedReport.entities``).
        encoder: The encoder the windows come from; its text tower embeds the phrases.
        source: Windows to look in (:func:`open_bag_source`, :func:`roi_source`).
        config: Grounding settings (calibration, templates, types, chunking).
        keep_patch_max: Keep per-patch similarities of every entity (heat maps).
        foils: Foil phrases for ``foil-rank`` (default: ``config.foils`` or the built-in bank).
        foil_embeddings: The foil bank already embedded with this encoder and the config's
            templates (a run scoring many reports encodes it once); overrides ``foils``.

    Returns:
        A :class:`GroundingResult`; its score is *missing* (value None, with the reason) when
        the report has no affirmed visual entity or the source has no patch.

    Raises:
        EncoderMismatchError: the source's embeddings come from another encoder.
        ConfigError: bad calibration settings or foil file.
    """
    cfg = config or GroundingConfig()
    check_encoder(source, encoder)
    selection = select_targets(entities, config=cfg)
    warnings: list[str] = []
    random = bool(source.random_weights or encoder.random_weights)
    if random:
        warnings.append(RANDOM_WEIGHTS_WARNING)
    evidence = GroundingEvidence(
        calibration=cfg.calibration,
        templates=tuple(cfg.templates),
        encoder=encoder.name,
        source=GroundingSource.from_dict(source.describe()),
        negated=tuple(selection.negated),
        skipped=tuple(SkippedEntity.from_dict(s) for s in selection.skipped),
    )

    def missing(reason: str) -> GroundingResult:
        score = _missing(
            f"grounding not scored: {reason}", evidence.to_dict(), warnings, random=random
        )
        return GroundingResult(score=score, selection=selection, source=source.describe())

    if not selection.targets:
        return missing(
            f"no affirmed visual entity in the report ({len(selection.negated)} negated, "
            f"{len(selection.skipped)} skipped)"
        )
    if len(source) == 0:
        return missing(f"{source.name} has no tissue patch to look in")
    phrases = [t.phrase for t in selection.targets]
    chosen_foils: list[str] = []
    if cfg.calibration == "foil-rank":
        if foil_embeddings is not None:
            _check_foil_embeddings(foil_embeddings, encoder, cfg)
            bank = foil_embeddings.foils
        else:
            bank = foils if foils is not None else load_foils(cfg.foils or None)
        chosen_foils = unrelated_foils(bank, selection.targets)
        if len(chosen_foils) < cfg.min_foils:
            return missing(
                f"only {len(chosen_foils)} foil phrases are unrelated to the report "
                f"(min_foils={cfg.min_foils}); add foils or use another calibration"
            )
    if foil_embeddings is not None and chosen_foils:
        queries = torch.cat(
            [
                encode_phrases(encoder, phrases, templates=cfg.templates),
                foil_embeddings.rows(chosen_foils),
            ]
        )
    else:
        queries = encode_phrases(encoder, phrases + chosen_foils, templates=cfg.templates)
    sim = max_similarity(
        queries=queries,
        windows=source.windows,
        chunk_windows=cfg.chunk_windows,
        top_k=cfg.top_patches,
        keep_patch_max=keep_patch_max,
        device=resolve_device(cfg.device),
    )
    m = len(phrases)
    sim_t, sim_f = _split(sim, m)
    calibrate = get_calibration(cfg.calibration)
    calibrated = calibrate(
        sim_t.max_similarity,
        k=cfg.sigmoid_k,
        t=cfg.sigmoid_t,
        foil_similarity=sim.max_similarity[m:],
    )
    foil_stats = None
    if chosen_foils:
        fs = sim.max_similarity[m:].astype(np.float64)
        foil_stats = FoilStats(
            n=len(chosen_foils),
            median=float(np.median(fs)),
            p90=float(np.quantile(fs, 0.9)),
            max=float(fs.max()),
            best=chosen_foils[int(np.argmax(fs))],
        )
    evidence = dataclasses.replace(
        evidence,
        entities=_entity_evidence(selection, sim_t, calibrated, source),
        foils=foil_stats,
    )
    score = ModuleScore(
        name="grounding",
        value=grounding_value(calibrated),
        evidence=evidence.to_dict(),
        warnings=warnings,
        random_weights=random,
    )
    return GroundingResult(
        score=score,
        selection=selection,
        similarity=sim_t,
        foil_similarity=None if sim_f is None else sim_f.max_similarity,
        foils=chosen_foils,
        source=source.describe(),
    )


def _check_foil_embeddings(fe: FoilEmbeddings, encoder: Encoder, cfg: GroundingConfig) -> None:
    if fe.encoder_name != encoder.name or fe.templates != tuple(cfg.templates):
        raise ConfigError(
            f"foil embeddings were made with encoder {fe.encoder_name!r} and templates "
            f"{fe.templates}, not {encoder.name!r} and {tuple(cfg.templates)}"
        )


def _split(sim: SimilarityResult, m: int) -> tuple[SimilarityResult, SimilarityResult | None]:
    """The targets' part of a similarity over targets + foils (and the foils' part)."""

    def rows(a: slice) -> SimilarityResult:
        return SimilarityResult(
            max_similarity=sim.max_similarity[a],
            best_patch=sim.best_patch[a],
            best_window=sim.best_window[a],
            top_patches=sim.top_patches[a],
            top_values=sim.top_values[a],
            patch_max=None if sim.patch_max is None else sim.patch_max[a],
            n_patches=sim.n_patches,
            n_windows=sim.n_windows,
        )

    n = sim.max_similarity.shape[0]
    return rows(slice(0, m)), (rows(slice(m, n)) if n > m else None)


def _entity_evidence(
    selection: TargetSelection,
    sim: SimilarityResult,
    calibrated: np.ndarray,
    source: WindowSource,
) -> tuple[GroundedEntity, ...]:
    boxes = window_boxes(
        coords=source.coords,
        patch_index=sim.best_patch,
        window_index=sim.best_window,
        window_offsets=source.window_offsets,
        window_size=source.window_size,
        scale=source.scale,
    )
    out = []
    for i, t in enumerate(selection.targets):
        top = tuple(
            TopPatch(
                patch=int(p),
                similarity=float(v),
                box=tuple(source.patch_boxes([p])[0].tolist()),
            )
            for p, v in zip(sim.top_patches[i], sim.top_values[i], strict=True)
        )
        out.append(
            GroundedEntity(
                phrase=t.phrase,
                concept=t.concept,
                type=t.type,
                mentions=tuple(t.mentions),
                uncertain=t.uncertain,
                similarity=float(sim.max_similarity[i]),
                calibrated=float(calibrated[i]),
                patch=int(sim.best_patch[i]),
                window=int(sim.best_window[i]),
                box=tuple(boxes[i].tolist()),
                top_patches=top,
            )
        )
    return tuple(out)
