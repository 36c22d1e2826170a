"""Grounding a report on a feature bag or an ROI image: S_g with its evidence.

:func:`ground` ties the pieces together: the report's targets (:mod:`pathgls.grounding_text`),
their text embeddings, the window similarity (:mod:`pathgls.grounding`) over a
:class:`WindowSource` — a feature bag read lazily from disk (:func:`open_bag_source`) or an ROI
image cut into HighRes windows on the spot (:func:`roi_source`) — and the calibration. The
result carries a :class:`~pathgls.types.ModuleScore` whose evidence says, per entity, its best
window (level-0 box), similarity, calibrated score and best patches, plus what was left out.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from PIL import Image

from pathgls.bags import BagMeta, open_bag
from pathgls.config import GroundingConfig
from pathgls.encoders.base import Encoder, resolve_device
from pathgls.encoders.highres import encode_highres, window_coords
from pathgls.errors import (
    ConfigError,
    EncoderMismatchError,
    GroundingError,
    MissingResolutionError,
)
from pathgls.grounding import (
    SimilarityResult,
    get_calibration,
    grounding_value,
    max_similarity,
    window_boxes,
)
from pathgls.grounding_text import (
    FoilEmbeddings,
    TargetSelection,
    encode_phrases,
    load_foils,
    select_targets,
    unrelated_foils,
)
from pathgls.tiling.slides import open_slide
from pathgls.types import Entity, ModuleScore

RANDOM_WEIGHTS_WARNING = "random-weight encoder: this grounding proves wiring only, not a result"


@dataclass
class WindowSource:
    """HighRes window embeddings to ground in, and where each window lies.

    Attributes:
        windows: ``(N, W, D)`` array-like (numpy, torch or a lazily read h5py dataset).
        coords: ``(N, 2)`` top-left of each patch, in ``space`` pixels.
        patch_size: Patch side in encoder-input pixels.
        patch_size_level0: Patch side in ``space`` pixels.
        window_size: Window side in encoder-input pixels.
        window_offsets: ``(W, 2)`` window top-left ``(x, y)`` inside a patch, in patch pixels.
        kind: ``bag`` or ``roi``.
        name: Slide name or image path.
        space: ``level0`` (slide level-0 pixels) or ``image`` (pixels of the ROI image).
        encoder: Encoder name the embeddings come from.
        encoder_model_id: Its model id (repo, arch:weights or path).
        encoder_revision: Weights revision when known, else "".
        dim: Embedding size D.
        random_weights: The embeddings come from a random-weight test model.
        path: File the source was read from, when any.
    """

    windows: Any
    coords: np.ndarray
    patch_size: int
    patch_size_level0: int
    window_size: int
    window_offsets: np.ndarray
    kind: Literal["bag", "roi"]
    name: str
    space: Literal["level0", "image"]
    encoder: str
    encoder_model_id: str
    encoder_revision: str
    dim: int
    random_weights: bool = False
    path: str = ""

    def __len__(self) -> int:
        return int(self.coords.shape[0])

    @property
    def scale(self) -> float:
        """``space`` pixels per encoder-input pixel."""
        return self.patch_size_level0 / self.patch_size

    def patch_boxes(self, index: np.ndarray) -> np.ndarray:
        """``(K, 4)`` boxes ``(x, y, w, h)`` of patches, in ``space`` pixels."""
        xy = np.asarray(self.coords, dtype=np.int64)[np.asarray(index, dtype=np.int64)]
        return np.concatenate([xy, np.full_like(xy, self.patch_size_level0)], axis=1)

    def describe(self) -> dict[str, Any]:
        """JSON-ready summary for evidence."""
        return {
            "kind": self.kind,
            "name": self.name,
            "path": self.path,
            "space": self.space,
            "n_patches": len(self),
            "n_windows": int(self.window_offsets.shape[0]),
            "patch_size_level0": self.patch_size_level0,
            "encoder": self.encoder,
        }


@contextlib.contextmanager
def open_bag_source(path: str | os.PathLike[str]) -> Iterator[WindowSource]:
    """A validated bag as a :class:`WindowSource`; windows are read from disk chunk by chunk.

    Raises:
        BagError: the bag is invalid or incomplete.
    """
    with open_bag(path) as f:
        meta = BagMeta.from_attrs(f.attrs)
        windows = f["window_features"]
        yield WindowSource(
            windows=windows,
            coords=np.asarray(f["coords"][:], dtype=np.int64),
            patch_size=int(meta.patch_size),
            patch_size_level0=int(meta.patch_size_level0),
            window_size=int(meta.window_size),
            window_offsets=window_coords(
                int(meta.patch_size), meta.window_size, meta.window_stride
            ),
            kind="bag",
            name=meta.slide_name,
            space="level0",
            encoder=meta.encoder,
            encoder_model_id=meta.encoder_model_id,
            encoder_revision=meta.encoder_revision,
            dim=int(windows.shape[2]),
            random_weights=bool(meta.random_weights),
            path=str(path),
        )


def roi_source(
    *,
    encoder: Encoder,
    image: np.ndarray,
    name: str,
    window_size: int = 224,
    window_stride: int = 224,
    origin: tuple[float, float] = (0.0, 0.0),
    scale: float = 1.0,
    space: Literal["level0", "image"] = "image",
    max_side: int = 16384,
) -> WindowSource:
    """Cut an ROI image into HighRes windows and embed them: each window becomes a "patch".

    Args:
        encoder: The encoder whose image tower embeds the windows.
        image: ``(H, W, 3)`` uint8 RGB at the resolution the encoder should see (20×).
        name: What to call the ROI in evidence.
        window_size: Window side in pixels; windows overlapping the edge are shifted inward.
        window_stride: Step between windows.
        origin: ``space`` coordinates of the image's top-left (a slide region's level-0 x, y).
        scale: ``space`` pixels per image pixel (level-0 px per ROI px for a slide region).
        space: ``image`` for a plain image, ``level0`` for a region read from a slide.
        max_side: Larger images are refused (extract a bag for them).

    Raises:
        GroundingError: not an RGB uint8 image, too small or too large.
    """
    img = np.asarray(image)
    if img.ndim != 3 or img.shape[2] != 3 or img.dtype != np.uint8:
        raise GroundingError(f"an ROI must be (H, W, 3) uint8 RGB, got {img.shape} {img.dtype}")
    h, w = int(img.shape[0]), int(img.shape[1])
    if min(h, w) < 16:
        raise GroundingError(f"ROI {name} is {w}×{h} px; at least 16 px per side are needed")
    if max(h, w) > max_side:
        raise GroundingError(
            f"ROI {name} is {w}×{h} px, over roi_max_side={max_side}; extract a feature bag "
            "of the slide instead (pathgls extract)"
        )
    offsets = window_coords((h, w), window_size, window_stride)
    win, _ = encode_highres(
        encoder, img[None], window_size=window_size, window_stride=window_stride
    )
    side = min(window_size, h, w)
    coords = np.rint(np.asarray(origin, dtype=np.float64) + offsets * scale).astype(np.int64)
    return WindowSource(
        windows=win.reshape(-1, 1, win.shape[-1]),
        coords=coords,
        patch_size=side,
        patch_size_level0=max(1, round(side * scale)),
        window_size=side,
        window_offsets=np.zeros((1, 2), dtype=np.int64),
        kind="roi",
        name=name,
        space=space,
        encoder=encoder.name,
        encoder_model_id=encoder.model_id,
        encoder_revision=encoder.revision or "",
        dim=encoder.dim,
        random_weights=encoder.random_weights,
    )


def load_roi_image(path: str | os.PathLike[str]) -> np.ndarray:
    """Read a PNG/JPEG/TIFF ROI as ``(H, W, 3)`` uint8 RGB (alpha composited on white).

    Raises:
        GroundingError: the file cannot be read as an image.
    """
    try:
        with Image.open(path) as im:
            im.load()
            if im.mode in ("RGBA", "LA", "P"):
                rgba = im.convert("RGBA")
                bg = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
                im = Image.alpha_composite(bg, rgba)
            return np.array(im.convert("RGB"), dtype=np.uint8)
    except (OSError, ValueError, Image.DecompressionBombError) as e:
        raise GroundingError(f"cannot read the ROI image {path}: {e}") from e


def check_encoder(source: WindowSource, encoder: Encoder) -> None:
    """Refuse to compare a bag's image embeddings with another encoder's text tower.

    The two match when their names or model ids agree, their dimensions agree and (when both
    are known) their weight revisions agree.

    Raises:
        EncoderMismatchError: they do not match.
    """
    same_model = source.encoder == encoder.name or (
        bool(source.encoder_model_id) and source.encoder_model_id == encoder.model_id
    )
    rev_a, rev_b = source.encoder_revision, encoder.revision or ""
    problems = []
    if not same_model:
        problems.append(
            f"bag encoder {source.encoder!r} ({source.encoder_model_id or '?'}) != "
            f"text encoder {encoder.name!r} ({encoder.model_id})"
        )
    if source.dim != encoder.dim:
        problems.append(f"bag dimension {source.dim} != encoder dimension {encoder.dim}")
    if rev_a and rev_b and rev_a != rev_b:
        problems.append(f"weights revision {rev_a} != {rev_b}")
    if problems:
        raise EncoderMismatchError(
            f"{source.name}: the image embeddings and the text tower must come from the same "
            f"model ({'; '.join(problems)}); pass --encoder {source.encoder} or re-extract the "
            "bag with this encoder"
        )


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

        Raises:
            KeyError: no target by that name (the message lists them).
        """
        needle = entity.strip().lower()
        for i, t in enumerate(self.selection.targets):
            names = {t.phrase.lower(), t.concept.lower(), *(m.lower() for m in t.mentions)}
            if needle in names:
                return i
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


def _missing(reason: str, evidence: dict[str, Any], warnings: list[str]) -> ModuleScore:
    return ModuleScore(
        name="grounding",
        value=None,
        missing_reason=reason,
        evidence=evidence,
        warnings=warnings,
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
    if source.random_weights or encoder.random_weights:
        warnings.append(RANDOM_WEIGHTS_WARNING)
    evidence: dict[str, Any] = {
        "calibration": cfg.calibration,
        "templates": list(cfg.templates),
        "encoder": encoder.name,
        "source": source.describe(),
        "entities": [],
        "negated": list(selection.negated),
        "skipped": list(selection.skipped),
    }

    def missing(reason: str) -> GroundingResult:
        score = _missing(f"grounding not scored: {reason}", evidence, warnings)
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
    evidence["entities"] = _entity_evidence(selection, sim_t, calibrated, source)
    if chosen_foils:
        fs = sim.max_similarity[m:].astype(np.float64)
        evidence["foils"] = {
            "n": len(chosen_foils),
            "median": float(np.median(fs)),
            "p90": float(np.quantile(fs, 0.9)),
            "max": float(fs.max()),
            "best": chosen_foils[int(np.argmax(fs))],
        }
    score = ModuleScore(
        name="grounding", value=grounding_value(calibrated), evidence=evidence, warnings=warnings
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
) -> list[dict[str, Any]]:
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
        top = [
            {"patch": int(p), "similarity": float(v), "box": source.patch_boxes([p])[0].tolist()}
            for p, v in zip(sim.top_patches[i], sim.top_values[i], strict=True)
        ]
        out.append(
            {
                "phrase": t.phrase,
                "concept": t.concept,
                "type": t.type,
                "mentions": list(t.mentions),
                "uncertain": t.uncertain,
                "similarity": float(sim.max_similarity[i]),
                "calibrated": float(calibrated[i]),
                "patch": int(sim.best_patch[i]),
                "window": int(sim.best_window[i]),
                "box": boxes[i].tolist(),
                "top_patches": top,
            }
        )
    return out


def read_slide_region(
    path: str | os.PathLike[str],
    *,
    x: int,
    y: int,
    width: int,
    height: int,
    target_mpp: float = 0.5,
    mpp: float | None = None,
) -> tuple[np.ndarray, float]:
    """A level-0 region of a slide resampled to ``target_mpp`` µm/px, for ROI mode.

    Returns:
        ``(image, scale)``: the RGB region and the level-0 pixels per image pixel.

    Raises:
        SlideError: the slide cannot be opened or read, or has no resolution (pass ``mpp``).
        GroundingError: the region is empty or outside the slide.
    """
    reader = open_slide(Path(path), mpp=mpp)
    try:
        w0, h0 = reader.dimensions
        if width < 1 or height < 1 or x < 0 or y < 0 or x + width > w0 or y + height > h0:
            raise GroundingError(
                f"region x={x} y={y} {width}×{height} is not inside {Path(path).name} ({w0}×{h0})"
            )
        if reader.mpp is None:
            raise MissingResolutionError(
                f"{path}: no resolution metadata; pass --mpp with level 0's µm/px", path=str(path)
            )
        scale = target_mpp / float(reader.mpp)  # level-0 px per output px
        region = reader.read_region((x, y), 0, (width, height))
    finally:
        reader.close()
    out_w, out_h = max(1, round(width / scale)), max(1, round(height / scale))
    if (out_w, out_h) != (width, height):
        region = np.asarray(
            Image.fromarray(region).resize((out_w, out_h), Image.Resampling.LANCZOS)
        )
    return region, width / out_w


__all__ = [
    "GroundingResult",
    "WindowSource",
    "check_encoder",
    "ground",
    "load_roi_image",
    "open_bag_source",
    "read_slide_region",
    "roi_source",
]
