"""The run directory: where ScoreCards, grounding maps, caches and the errors log live.

```
RUN_DIR/
  manifest.json                 effective config, versions, models, start/end, counts
  config.toml / config.json     the effective pipeline config
  scorecards/<subject>/<item>.json
  grounding/<subject>/<item>.npz  per-entity patch similarities (heat maps)
  features_<encoder>/<slide>.h5   feature bags (reused when complete)
  cache/subjects/                 every generation, so a rerun never asks a model twice
  errors.jsonl                    one line per failed or partial item
  summary.csv / summary.parquet, plots/
  <mag>x_<size>px_<overlap>px_overlap/patches/<slide>_patches.h5   read plan and tissue grid
  logs/<command>-<time>.log       the run log: per item and per stage timings, warnings
```

ScoreCards are written atomically (temporary file + rename): a run killed at any moment
leaves each card either absent or whole. A card whose ``status`` is not ``ok`` (or that
cannot be read) is redone on the next run (its generations come from the cache).

The entries above are pathgls's own (:data:`OWN_ENTRIES`): none of them, nor anything below
them, may be a symbolic link (:func:`~pathgls.io.rundir.refuse_links` at the start of a run), the
errors log is appended to with ``O_NOFOLLOW``, and a card that is a link is neither read nor
written (:class:`~pathgls.errors.RunDirError`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pathgls.config import FusionConfig
from pathgls.errors import ConfigError, PathGLSError, RunDirError, ScoreCardError
from pathgls.io.atomic import describe_os_error, encode_text, write_bytes_atomic, write_text_atomic
from pathgls.io.confine import is_confined
from pathgls.io.names import safe_stem
from pathgls.io.redact import redact, redact_data
from pathgls.io.rundir import make_dir, open_nofollow
from pathgls.types import ScoreCard, Status

#: Names (``fnmatch`` patterns) of what pathgls writes in a run directory; none may be a link.
#: Those of :data:`OWN_ENTRIES` that are folders.
OWN_FOLDERS = ("scorecards", "grounding", "cache", "plots", "logs")
OWN_ENTRIES = (
    ".pathgls.lock",
    "manifest.json",
    "config.toml",
    "config.json",
    "scorecards",
    "grounding",
    "features_*",
    "*px_overlap",  # the patches files: <mag>x_<size>px_<overlap>px_overlap/patches/
    "cache",
    "errors.jsonl",
    "summary.*",
    "plots",
    "logs",
    "report.html",
)


def subject_dir_name(subject: str) -> str:
    """The folder of ``subject``'s files: its spec with secrets masked, made file-name-safe."""
    return safe_stem(redact(subject))


class ResultsStore:
    """Paths and atomic writes of one run directory."""

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.root = Path(run_dir)

    @property
    def scorecards_dir(self) -> Path:
        """Where ScoreCards live (one folder per subject)."""
        return self.root / "scorecards"

    @property
    def cache_dir(self) -> Path:
        """The subject generation cache."""
        return self.root / "cache" / "subjects"

    @property
    def errors_path(self) -> Path:
        """The errors log (JSON lines)."""
        return self.root / "errors.jsonl"

    def card_path(self, subject: str, item_id: str) -> Path:
        """The ScoreCard file of ``item_id`` under ``subject`` (see :func:`subject_dir_name`)."""
        return self.scorecards_dir / subject_dir_name(subject) / f"{safe_stem(item_id)}.json"

    def grounding_path(self, subject: str, item_id: str) -> Path:
        """The per-patch grounding similarities of ``item_id`` under ``subject``."""
        return self.root / "grounding" / subject_dir_name(subject) / f"{safe_stem(item_id)}.npz"

    def read_card(self, path: str | os.PathLike[str]) -> ScoreCard:
        """The ScoreCard stored at ``path`` (any version :meth:`ScoreCard.from_dict` reads).

        Raises:
            OSError: the file cannot be read.
            ScoreCardError: it is not a ScoreCard.
            RunDirError: it is a symbolic link (never followed).
        """
        fd = open_nofollow(path, os.O_RDONLY)
        with os.fdopen(fd, "rb") as fh:
            return ScoreCard.from_json(fh.read())

    def status(self, subject: str, item_id: str) -> Status | None:
        """``ok``, ``partial`` or ``failed`` from the stored card; None if absent or unreadable."""
        try:
            return self.read_card(self.card_path(subject, item_id)).status
        except (OSError, ScoreCardError):
            return None  # a link (RunDirError) is not caught: the run refuses it

    def is_done(self, subject: str, item_id: str) -> bool:
        """Whether the item has a finished (``ok``) ScoreCard, so a rerun skips it."""
        return self.status(subject, item_id) == "ok"

    def write_card(self, card: ScoreCard) -> Path:
        """Write ``card`` atomically under its subject.

        Raises:
            RunDirError: the card, or a folder on its way, is a symbolic link.
            PathGLSError: the file cannot be written (disk full, read-only: the message names
                the file and the reason).
        """
        path = self.card_path(card.subject, card.item_id)
        try:
            make_dir(self.root, "scorecards", path.parent.name)
            if path.is_symlink():
                raise RunDirError(
                    f"{path} is a symbolic link (to {os.readlink(path)}); pathgls never writes "
                    "through a link: remove it"
                )
            return write_text_atomic(path, redact(card.to_json(indent=2)))
        except OSError as e:
            raise PathGLSError(f"cannot write ScoreCard {path}: {describe_os_error(e)}") from e

    def write_card_stored(self, card: ScoreCard) -> ScoreCard:
        """Write ``card`` (:meth:`write_card`) and return it as stored: secrets masked, as a
        reader of the file gets it (what a run's summary is built from).

        Raises:
            PathGLSError: the file cannot be written.
        """
        self.write_card(card)
        return ScoreCard.from_json(redact(card.to_json()))

    def write_grounding_map(
        self,
        subject: str,
        item_id: str,
        *,
        coords: NDArray[np.int64],
        values: dict[str, NDArray[np.float64]],
        patch_size_level0: int,
        space: str,
    ) -> Path:
        """Store per-entity patch similarities (rows of ``values`` follow ``coords``)."""
        import io

        buf = io.BytesIO()
        names = list(values)
        stacked = np.stack([values[n] for n in names]) if names else np.zeros((0, len(coords)))
        np.savez_compressed(
            buf,
            coords=np.asarray(coords, np.int64),
            values=stacked.astype(np.float32),
            entities=np.asarray(names, dtype=str),
            patch_size_level0=np.int64(patch_size_level0),
            space=np.asarray(space),
        )
        path = self.grounding_path(subject, item_id)
        try:
            make_dir(self.root, "grounding", path.parent.name)
            return write_bytes_atomic(path, buf.getvalue())
        except OSError as e:
            raise PathGLSError(f"cannot write heat map {path}: {describe_os_error(e)}") from e

    def log_error(
        self, *, item_id: str, subject: str | None, status: str, errors: list[str]
    ) -> None:
        """Append one line to the errors log (flushed to disk, so a kill keeps it).

        Raises:
            RunDirError: the errors log is a symbolic link.
            PathGLSError: it cannot be written (the message names it and why).
        """
        record = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "item_id": item_id,
            "subject": subject,
            "status": status,
            "errors": errors,
        }
        record = redact_data(record)
        line = encode_text(json.dumps(record, ensure_ascii=False) + "\n")
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd = open_nofollow(self.errors_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            with os.fdopen(fd, "wb") as f:
                f.write(line)
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            raise PathGLSError(
                f"cannot write the errors log {self.errors_path}: {describe_os_error(e)}"
            ) from e

    def iter_cards(self) -> Iterator[tuple[Path, ScoreCard | None, str | None]]:
        """Every stored card as ``(path, card, None)``, or ``(path, None, error)`` if unreadable."""
        for path in sorted(self.scorecards_dir.rglob("*.json")):
            if not is_confined(path, run_dir=self.root):  # a link out of a received run
                yield path, None, f"RunDirError: {path} is a link out of the run; not read"
                continue
            try:
                yield path, self.read_card(path), None
            except (OSError, ScoreCardError) as e:
                yield path, None, f"{type(e).__name__}: {e}"

    def load_cards(self) -> list[ScoreCard]:
        """Every readable card, sorted by path."""
        return [card for _, card, _ in self.iter_cards() if card is not None]

    def fusion_config(self) -> FusionConfig:
        """The fusion weights the run's cards were fused with: its ``config.toml``, or the
        defaults for a folder without one.

        Raises:
            ConfigError: ``config.toml`` exists but is not a valid pathgls config.
        """
        from pathgls.config import load_config

        path = self.root / "config.toml"
        if path.is_file() and not is_confined(path, run_dir=self.root):
            raise ConfigError(f"{path} is a link out of the run (to {os.path.realpath(path)})")
        return load_config(path).fusion if path.is_file() else FusionConfig()


def load_grounding_map(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a grounding map written by :meth:`ResultsStore.write_grounding_map`."""
    with np.load(path, allow_pickle=False) as z:
        return {
            "coords": z["coords"],
            "values": {str(n): z["values"][i] for i, n in enumerate(z["entities"])},
            "patch_size_level0": int(z["patch_size_level0"]),
            "space": str(z["space"]),
        }
