"""Typed configuration.

Every default of DESIGN.md is a field here, with a comment saying what it means. Configs are
plain frozen dataclasses validated in ``__post_init__``; TOML files and CLI options are turned
into them once, at the boundary (:func:`load_config`, :func:`config_from_dict`). The effective
config of every run is written next to its outputs (:func:`save_effective_config`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import tomllib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import tomli_w

from pathgls.errors import ConfigError

#: Microns per pixel at 1× under the usual convention (20× ≙ 0.5 µm/px, 40× ≙ 0.25 µm/px).
MPP_AT_1X = 10.0


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ConfigError(message)


@dataclass(frozen=True)
class TilingConfig:
    """Where patches are cut and at which resolution."""

    # Target magnification of the patches (20 → 0.5 µm/px, see MPP_AT_1X).
    magnification: float = 20.0
    # Patch side in pixels at the target magnification.
    patch_size: int = 512
    # Overlap between neighbouring patches, in pixels at the target magnification.
    overlap: int = 0
    # Minimum tissue fraction of a patch (0–1) for it to be kept.
    tissue_threshold: float = 0.25
    # Resolution of the tissue mask in µm/px (coarse: the mask is cheap).
    mask_mpp: float = 8.0
    # Longest side of the tissue mask in px: larger slides get a coarser mask, so memory is flat.
    mask_max_side: int = 1024
    # A level whose mpp is within this relative tolerance of the target is read without resizing.
    mpp_tolerance: float = 0.05
    # A slide coarser than the target by more than this factor is refused (upsampling invents
    # nothing; such metadata is usually wrong, e.g. a 72-dpi TIFF default).
    max_upsample: float = 2.0
    # Minimum saturation (0–1) for a mask pixel to count as tissue, whatever Otsu says.
    min_saturation: float = 0.07
    # Otsu's saturation threshold is clipped to at most this (tissue-only images have no glass).
    max_saturation: float = 0.15
    # Gaps in the mask narrower than this many µm are closed.
    close_um: float = 32.0
    # Enclosed holes up to this many µm across (fat cells, lumina) are filled.
    fill_hole_um: float = 256.0
    # Tissue specks smaller than this many µm across are dropped.
    min_object_um: float = 64.0
    # Pixels brighter than this (0–255, all channels) are background glass.
    white_level: int = 220
    # Exclude red/green/blue pen marks from the mask.
    exclude_pen: bool = True
    # µm/px assumed for plain images (PNG/JPEG/TIFF ROIs) when none is given.
    image_mpp: float = 0.5

    def __post_init__(self) -> None:
        _require(self.magnification > 0, f"magnification must be > 0, got {self.magnification}")
        _require(self.patch_size >= 16, f"patch_size must be >= 16, got {self.patch_size}")
        _require(
            0 <= self.overlap < self.patch_size,
            f"overlap must be in [0, patch_size), got {self.overlap}",
        )
        _require(
            0.0 <= self.tissue_threshold <= 1.0,
            f"tissue_threshold must be in [0, 1], got {self.tissue_threshold}",
        )
        _require(self.max_upsample >= 1, f"max_upsample must be >= 1, got {self.max_upsample}")
        _require(self.mask_max_side >= 64, f"mask_max_side must be >= 64, got {self.mask_max_side}")
        _require(self.mask_mpp > 0, f"mask_mpp must be > 0, got {self.mask_mpp}")
        _require(
            0 <= self.mpp_tolerance < 1,
            f"mpp_tolerance must be in [0, 1), got {self.mpp_tolerance}",
        )
        _require(0 <= self.min_saturation < 1, "min_saturation must be in [0, 1)")
        _require(
            self.min_saturation <= self.max_saturation < 1,
            "max_saturation must be in [min_saturation, 1)",
        )
        _require(
            min(self.close_um, self.fill_hole_um, self.min_object_um) >= 0,
            "close_um, fill_hole_um and min_object_um must be >= 0",
        )
        _require(0 < self.white_level <= 255, "white_level must be in (0, 255]")
        _require(self.image_mpp > 0, f"image_mpp must be > 0, got {self.image_mpp}")

    @property
    def target_mpp(self) -> float:
        """Microns per pixel of the patches."""
        return MPP_AT_1X / self.magnification


@dataclass(frozen=True)
class StreamConfig:
    """How patches are read: batching and parallel readers."""

    # Patches per batch handed to the encoder.
    batch_size: int = 32
    # Reader threads (OpenSlide and the resize release the GIL).
    workers: int = 2
    # Batches read ahead per worker; bounds memory to (workers × prefetch + 1) batches.
    prefetch: int = 2

    def __post_init__(self) -> None:
        _require(self.batch_size >= 1, f"batch_size must be >= 1, got {self.batch_size}")
        _require(self.workers >= 0, f"workers must be >= 0, got {self.workers}")
        _require(self.prefetch >= 1, f"prefetch must be >= 1, got {self.prefetch}")


Precision = Literal["auto", "fp32", "fp16", "bf16"]


@dataclass(frozen=True)
class EncoderConfig:
    """Which image-text encoder, where it runs, and the HighRes windows."""

    # Registry name or scheme: plip, quiltnet, conch, hf:<repo-or-dir>, open_clip:<arch>:<weights>.
    name: str = "plip"
    # "auto" (CUDA when present), "cpu", "cuda", "cuda:1", ...
    device: str = "auto"
    # "auto" is fp16 on CUDA (bf16 when the model asks for it) and fp32 on CPU.
    precision: Precision = "auto"
    # Encode each patch as windows of this size (HighRes); the window mean is the patch feature.
    window_size: int = 224
    # Stride between windows; edge windows are shifted inward so they stay inside the patch.
    window_stride: int = 224
    # Directory with pulled models; None reads PATHGLS_MODELS_DIR or ~/.cache/pathgls/models.
    models_dir: str | None = None

    def __post_init__(self) -> None:
        _require(bool(self.name.strip()), "encoder name must not be empty")
        _require(self.window_size >= 16, f"window_size must be >= 16, got {self.window_size}")
        _require(
            self.window_stride >= 1,
            f"window_stride must be >= 1, got {self.window_stride}",
        )
        _require(
            self.precision in ("auto", "fp32", "fp16", "bf16"),
            f"precision must be auto, fp32, fp16 or bf16, got {self.precision!r}",
        )


@dataclass(frozen=True)
class BagConfig:
    """How feature bags are written."""

    # Skip slides whose complete bag exists unless True.
    overwrite: bool = False
    # HDF5 compression of the datasets ("gzip", "lzf" or None).
    compression: str | None = None

    def __post_init__(self) -> None:
        _require(
            self.compression in (None, "gzip", "lzf"),
            f"compression must be gzip, lzf or None, got {self.compression!r}",
        )


#: Entity types grounded by default: what an H&E image can show.
GROUNDED_TYPES = (
    "pathological_diagnosis",
    "morphology_finding",
    "diagnosis_descriptor",
    "grade",
    "lymphovascular_invasion",
    "perineural_invasion",
    "metastasis",
)


@dataclass(frozen=True)
class GroundingConfig:
    """How the Grounding score S_g is computed (see :mod:`pathgls.grounding`)."""

    # "foil-rank" (default: encoder-independent [0, 1]), "raw" (paper) or "sigmoid" (ref. code).
    calibration: Literal["raw", "sigmoid", "foil-rank"] = "foil-rank"
    # Slope k and midpoint t of the sigmoid calibration (reference code: 60 and 0.20).
    sigmoid_k: float = 60.0
    sigmoid_t: float = 0.20
    # Prompt templates; "{}" is the entity. Several are averaged (prompt ensembling).
    templates: tuple[str, ...] = ("an H&E image of {}.",)
    # Phrase of an entity: "auto" (as written, abbreviations expanded to the concept),
    # "text" (always as written) or "concept" (the canonical concept when there is one).
    phrase_source: Literal["auto", "text", "concept"] = "auto"
    # Entity types that are grounded; other types are listed as skipped with the reason.
    visual_types: tuple[str, ...] = GROUNDED_TYPES
    # Ground hedged findings ("possible carcinoma") too; they are flagged in the evidence.
    include_uncertain: bool = True
    # Foil phrase file (one phrase per line, "#" comments); "" uses the built-in bank.
    foils: str = ""
    # foil-rank needs at least this many foils left after removing the report's own concepts.
    min_foils: int = 16
    # Best patches kept per entity (GeoJSON export, evidence).
    top_patches: int = 5
    # Windows per similarity chunk: bounds memory (~chunk × (D + M) × 4 bytes), not results.
    chunk_windows: int = 32768
    # "auto" (CUDA when present), "cpu", "cuda", ...
    device: str = "auto"
    # Largest ROI side in pixels accepted by ROI mode (bigger regions: extract a bag).
    roi_max_side: int = 16384

    def __post_init__(self) -> None:
        object.__setattr__(self, "templates", tuple(self.templates))
        object.__setattr__(self, "visual_types", tuple(self.visual_types))
        _require(
            self.calibration in ("raw", "sigmoid", "foil-rank"),
            f"calibration must be raw, sigmoid or foil-rank, got {self.calibration!r}",
        )
        _require(bool(self.templates), "grounding needs at least one prompt template")
        for t in self.templates:
            _require(
                isinstance(t, str) and t.count("{}") == 1,
                f"a prompt template must contain exactly one '{{}}', got {t!r}",
            )
        _require(self.sigmoid_k > 0, f"sigmoid_k must be > 0, got {self.sigmoid_k}")
        _require(
            self.phrase_source in ("auto", "text", "concept"),
            f"phrase_source must be auto, text or concept, got {self.phrase_source!r}",
        )
        _require(bool(self.visual_types), "visual_types must name at least one entity type")
        _require(self.min_foils >= 1, f"min_foils must be >= 1, got {self.min_foils}")
        _require(self.top_patches >= 1, f"top_patches must be >= 1, got {self.top_patches}")
        _require(self.chunk_windows >= 1, f"chunk_windows must be >= 1, got {self.chunk_windows}")
        _require(self.roi_max_side >= 16, f"roi_max_side must be >= 16, got {self.roi_max_side}")


@dataclass(frozen=True)
class PathGLSConfig:
    """The whole configuration; one section per job."""

    tiling: TilingConfig = field(default_factory=TilingConfig)
    stream: StreamConfig = field(default_factory=StreamConfig)
    encoder: EncoderConfig = field(default_factory=EncoderConfig)
    bag: BagConfig = field(default_factory=BagConfig)
    grounding: GroundingConfig = field(default_factory=GroundingConfig)


def _convert(tp: Any, value: Any, where: str) -> Any:
    """Convert a TOML/JSON value to the annotated field type, checking it on the way."""
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise ConfigError(f"{where} must be a table, got {type(value).__name__}")
        return _from_dict(tp, value, where)
    if origin in (types.UnionType, typing.Union):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _convert(arg, value, where)
            except ConfigError as e:
                errors.append(str(e))
        raise ConfigError("; ".join(errors))
    if origin is Literal:
        if value not in typing.get_args(tp):
            raise ConfigError(f"{where} must be one of {typing.get_args(tp)}, got {value!r}")
        return value
    if tp is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if tp in (int, str, bool):
        if type(value) is not tp:
            raise ConfigError(f"{where} must be {tp.__name__}, got {value!r}")
        return value
    return value


def _from_dict(cls: type, data: dict[str, Any], where: str) -> Any:
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"unknown key(s) in {where or 'config'}: {', '.join(unknown)}")
    kwargs = {k: _convert(hints[k], v, f"{where}.{k}" if where else k) for k, v in data.items()}
    return cls(**kwargs)


def config_from_dict(data: dict[str, Any]) -> PathGLSConfig:
    """Build a validated :class:`PathGLSConfig` from nested dicts (TOML layout)."""
    return _from_dict(PathGLSConfig, data, "")


def config_to_dict(config: Any) -> dict[str, Any]:
    """Nested dict of a config, with None values dropped (TOML has no null)."""

    def drop_none(d: Any) -> Any:
        if isinstance(d, dict):
            return {k: drop_none(v) for k, v in d.items() if v is not None}
        return d

    return drop_none(dataclasses.asdict(config))


def load_config(path: str | os.PathLike[str] | None = None, **overrides: Any) -> PathGLSConfig:
    """Load a TOML config file (or the defaults) and apply per-section overrides.

    Args:
        path: TOML file with ``[tiling]``, ``[stream]``, ``[encoder]``, ``[bag]`` tables.
        **overrides: section name → dict of field overrides (None values are ignored).

    Raises:
        ConfigError: the file cannot be read or holds an invalid value.
    """
    data: dict[str, Any] = {}
    if path is not None:
        try:
            with open(path, "rb") as fh:
                data = tomllib.load(fh)
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise ConfigError(f"cannot read config file {path}: {e}") from e
    for section, values in overrides.items():
        merged = dict(data.get(section, {}))
        merged.update({k: v for k, v in values.items() if v is not None})
        data[section] = merged
    return config_from_dict(data)


def save_effective_config(
    config: Any, directory: str | os.PathLike[str], *, name: str = "config"
) -> Path:
    """Write the effective config as TOML (and JSON, for tools without TOML) into ``directory``."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    data = config_to_dict(config)
    toml_path = out / f"{name}.toml"
    tmp = toml_path.with_suffix(".toml.tmp")
    tmp.write_bytes(tomli_w.dumps(data).encode())
    os.replace(tmp, toml_path)
    (out / f"{name}.json").write_text(json.dumps(data, indent=2, sort_keys=True))
    return toml_path
