"""One typed config tree for every stage, TOML in and out.

:class:`PathGLSConfig` is the root; each of its fields is a section (a TOML table) owned by one
job:

==============  =========================================================  ==================
section         what it sets                                               module
==============  =========================================================  ==================
``run``         subjects, attack, seed, mpp, HARE, executor                :mod:`.run`
``models``      entity extractor, NLI and sentence-embedder specs          :mod:`.run`
``tiling``      magnification, patch size, tissue mask                     :mod:`.slide`
``stream``      batching and reader threads                                :mod:`.slide`
``encoder``     image-text encoder (none: grounding missing), windows      :mod:`.slide`
``bag``         how feature bags are written                               :mod:`.slide`
``grounding``   S_g: calibration, prompt templates, grounded entity types  :mod:`.scoring`
``logic``       S_l: top-K, pairs                                          :mod:`.scoring`
``stability``   S_s: Δ backend and its calibration                         :mod:`.scoring`
``fusion``      trust score weights (a table), reference penalties         :mod:`.scoring`
``gate``        deploy / review thresholds, per-module floors (a table)    :mod:`.scoring`
``subject``     how subjects are asked (tokens, timeouts, retries)         :mod:`.run`
``view``        what a subject sees of a slide                             :mod:`.run`
``stain``       the Macenko stain perturbation                             :mod:`.run`
``hare``        the HARE reference metric                                  :mod:`.scoring`
``report``      the report-side component (backend) fused with a reference :mod:`.scoring`
==============  =========================================================  ==================

A TOML file holds any subset of the sections and keys (:func:`load_config`); an unknown section
or key, a value of the wrong type or out of range is a :class:`~pathgls.errors.ConfigError` that
names it (``logic.top_k_fraction``). :func:`save_config` writes the complete tree, defaults
included, so that a run directory's ``config.toml`` reproduces the run. Fields that are None are
left out of the file (TOML has no null) and load as None again: every ``X | None`` field
defaults to None.

This package sits just above :mod:`pathgls.types` and :mod:`pathgls.errors`: it imports no
stage module, and the stages import their config (and the constants its validation needs) from
here.

May import: the core floor only — :mod:`pathgls.errors`, :mod:`pathgls.numeric` and the score
modules' descriptions (:mod:`pathgls.modules`, with their evidence types) — it sits just above
the core; every stage reads it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pathgls.config.convert import (
    from_dict,
    read_toml,
    to_dict,
    write_text_replacing,
    write_toml,
)
from pathgls.config.run import (
    DEFAULT_ATTACK,
    EXECUTORS,
    STAIN_PRECISIONS,
    VIEW_KINDS,
    ModelsConfig,
    RunConfig,
    StainConfig,
    SubjectConfig,
    ViewConfig,
)
from pathgls.config.scoring import (
    DEFAULT_WEIGHTS,
    DELTAS,
    GROUNDED_TYPES,
    HARE_CHOICES,
    HARE_TYPES,
    REFERENCE_MODULES,
    REPORT_BACKENDS,
    UNRELATED_COSINE,
    UNRELATED_DIAGNOSIS_COSINE,
    CheckWeights,
    FusionConfig,
    GateConfig,
    GroundingConfig,
    HareConfig,
    LogicConfig,
    ReportConfig,
    StabilityConfig,
    default_reference_modules,
    default_weights,
)
from pathgls.config.slide import (
    DEFAULT_ENCODER,
    DEFAULT_LEVEL_READ_PIXELS,
    DEFAULT_PIXELS_PER_BYTE,
    MPP_AT_1X,
    SLIDE_SECTIONS,
    BagConfig,
    EncoderConfig,
    Precision,
    StreamConfig,
    TilingConfig,
)
from pathgls.errors import ConfigError
from pathgls.modules import REPORT_WEIGHT


@dataclass(frozen=True)
class PathGLSConfig:
    """The whole configuration: one section per job (see the module docstring)."""

    run: RunConfig = field(default_factory=RunConfig)
    models: ModelsConfig = field(default_factory=ModelsConfig)
    tiling: TilingConfig = field(default_factory=TilingConfig)
    stream: StreamConfig = field(default_factory=StreamConfig)
    encoder: EncoderConfig = field(default_factory=EncoderConfig)
    bag: BagConfig = field(default_factory=BagConfig)
    grounding: GroundingConfig = field(default_factory=GroundingConfig)
    logic: LogicConfig = field(default_factory=LogicConfig)
    stability: StabilityConfig = field(default_factory=StabilityConfig)
    fusion: FusionConfig = field(default_factory=FusionConfig)
    gate: GateConfig = field(default_factory=GateConfig)
    subject: SubjectConfig = field(default_factory=SubjectConfig)
    view: ViewConfig = field(default_factory=ViewConfig)
    stain: StainConfig = field(default_factory=StainConfig)
    hare: HareConfig = field(default_factory=HareConfig)
    report: ReportConfig = field(default_factory=ReportConfig)

    def __post_init__(self) -> None:
        s, patch = self.stream, self.tiling.patch_size
        need = s.buffer_bytes(patch)
        if need > s.max_buffer_mb << 20:
            raise ConfigError(
                f"stream.workers = {s.workers}, stream.prefetch = {s.prefetch} and "
                f"stream.batch_size = {s.batch_size} with tiling.patch_size = {patch} need "
                f"{need / 2**20:.0f} MiB of patch buffers, more than stream.max_buffer_mb = "
                f"{s.max_buffer_mb}: lower them (or raise max_buffer_mb)"
            )


#: Tables a config file may carry that record where its values came from (``pathgls calibrate``
#: writes ``[calibration]``); loaders skip them, :func:`save_config` never writes them.
NOTE_TABLES = ("calibration",)


def config_from_dict(data: Mapping[str, Any]) -> PathGLSConfig:
    """Build a validated :class:`PathGLSConfig` from nested dicts (the TOML layout).

    Raises:
        ConfigError: an unknown section or key, or an invalid value (named ``section.key``).
    """
    return from_dict(PathGLSConfig, {k: v for k, v in data.items() if k not in NOTE_TABLES})


def config_to_dict(config: Any) -> dict[str, Any]:
    """Nested dict of a config (or of one section), with None values dropped (TOML has no null)."""
    tables: dict[str, Any] = to_dict(config)
    return tables


def _merge(data: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(data)
    for section, values in overrides.items():
        if values is None:
            continue
        if not isinstance(values, Mapping):
            raise ConfigError(f"the overrides of [{section}] must map its keys to values")
        base = out.get(section, {})
        merged = dict(base) if isinstance(base, Mapping) else {}
        merged.update({k: v for k, v in values.items() if v is not None})
        out[section] = merged
    return out


def load_config(path: str | os.PathLike[str] | None = None, **overrides: Any) -> PathGLSConfig:
    """Load a TOML config file (or the defaults) and apply per-section overrides.

    Args:
        path: TOML file with any subset of the sections (``[run]``, ``[logic]``, ...); None:
            the defaults.
        **overrides: section name → mapping of keys to values that replace the file's (command
            line options); None values are ignored, so an option the user did not give leaves
            the file's value (or the default) in place.

    Raises:
        ConfigError: the file cannot be read; an unknown section or key, a value of the wrong
            type or out of range, in the file (the message starts with the file) or in the
            overrides.
    """
    data = read_toml(path) if path is not None else {}
    try:
        return config_from_dict(_merge(data, overrides))
    except ConfigError:
        if path is not None:  # blame the file when the file alone is wrong
            try:
                config_from_dict(data)
            except ConfigError as e:
                raise ConfigError(f"{path}: {e}") from e
        raise


def save_config(config: PathGLSConfig, path: str | os.PathLike[str]) -> Path:
    """Write the complete config tree as TOML: every section and field, defaults included.

    Fields that are None are left out (TOML has no null); :func:`load_config` restores them.

    Raises:
        OSError: the file cannot be written.
    """
    if not isinstance(config, PathGLSConfig):
        raise TypeError(f"save_config writes a PathGLSConfig, got {type(config).__name__}")
    return write_toml(
        to_dict(config),
        path,
        header=(
            "pathgls configuration: every section and field, defaults included; a field left\n"
            "out is None. Load it with `pathgls benchmark ... --config FILE` or load_config()."
        ),
    )


def save_effective_config(
    config: PathGLSConfig, directory: str | os.PathLike[str], *, name: str = "config"
) -> Path:
    """Write the effective config as ``<name>.toml`` (and ``<name>.json``) into ``directory``."""
    out = Path(directory)
    toml_path = save_config(config, out / f"{name}.toml")
    write_text_replacing(
        out / f"{name}.json", json.dumps(to_dict(config), indent=2, sort_keys=True)
    )
    return toml_path


def validate_run(config: PathGLSConfig) -> None:
    """Check what a benchmark run needs beyond valid sections; called where a run starts.

    Raises:
        ConfigError: no subject; a montage/patches view without an encoder; Ray settings
            (workers, address) with the local executor.
    """
    run = config.run
    if not run.subjects:
        raise ConfigError(
            "a run needs at least one subject: --subject SPEC, or subjects = [...] under [run] "
            "in the --config file"
        )
    if config.view.kind != "thumbnail" and config.encoder.name is None:
        raise ConfigError(
            f"the {config.view.kind} view picks patches from the slide's feature bag: give "
            "--encoder (encoder.name), or use --view thumbnail"
        )
    ray_only = [k for k in ("workers", "address") if getattr(run, k) is not None]
    if run.executor != "ray" and ray_only:
        raise ConfigError(
            f"run.{' and run.'.join(ray_only)} set the Ray executor: give --executor ray "
            '(executor = "ray" under [run]) or leave them out'
        )


__all__ = [
    "DEFAULT_ATTACK",
    "DEFAULT_ENCODER",
    "DEFAULT_LEVEL_READ_PIXELS",
    "DEFAULT_PIXELS_PER_BYTE",
    "DEFAULT_WEIGHTS",
    "DELTAS",
    "EXECUTORS",
    "GROUNDED_TYPES",
    "HARE_CHOICES",
    "HARE_TYPES",
    "MPP_AT_1X",
    "NOTE_TABLES",
    "REFERENCE_MODULES",
    "REPORT_BACKENDS",
    "REPORT_WEIGHT",
    "SLIDE_SECTIONS",
    "STAIN_PRECISIONS",
    "UNRELATED_COSINE",
    "UNRELATED_DIAGNOSIS_COSINE",
    "VIEW_KINDS",
    "BagConfig",
    "CheckWeights",
    "EncoderConfig",
    "FusionConfig",
    "GateConfig",
    "GroundingConfig",
    "HareConfig",
    "LogicConfig",
    "ModelsConfig",
    "PathGLSConfig",
    "Precision",
    "ReportConfig",
    "RunConfig",
    "StabilityConfig",
    "StainConfig",
    "StreamConfig",
    "SubjectConfig",
    "TilingConfig",
    "ViewConfig",
    "config_from_dict",
    "config_to_dict",
    "default_reference_modules",
    "default_weights",
    "load_config",
    "save_config",
    "save_effective_config",
    "validate_run",
]
