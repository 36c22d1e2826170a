"""Subject outputs cached in the run directory, so a rerun never asks a model twice.

A generation is keyed by everything that can change its text: the subject spec, model id and
revision, a hash of the image pixels, the system and user prompt, the condition and the seed.
Each entry is one small JSON file written atomically (temporary file + rename), so a run
killed mid-write leaves either the old state or the new entry, never a torn one.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pathgls.io.atomic import write_text_atomic
from pathgls.io.redact import redact
from pathgls.io.rundir import make_dir
from pathgls.jsontext import valid_unicode
from pathgls.subjects.base import Subject, SubjectError, check_images


def image_digest(images: Sequence[np.ndarray]) -> str:
    """SHA-256 over the shapes and pixels of the images, in order."""
    h = hashlib.sha256()
    for im in images:
        a = np.ascontiguousarray(im)
        h.update(repr((a.shape, str(a.dtype))).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def generation_key(
    subject: Subject,
    *,
    images_sha: str,
    prompt: str,
    system: str | None,
    condition: str,
    seed: int,
) -> str:
    """The cache key of one generation (hex SHA-256 of its inputs)."""
    fields = {
        "subject": subject.name,
        "model_id": subject.model_id,
        "revision": subject.revision or "",
        "images": images_sha,
        "system": system or "",
        "prompt": prompt,
        "condition": condition,
        "seed": int(seed),
    }
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class Generation:
    """A report with where it came from."""

    text: str
    key: str
    cached: bool  # read from the cache, not generated now
    seconds: float  # generation time (0 when cached)


class SubjectCache:
    """A directory of cached generations (``<dir>/<key[:2]>/<key>.json``)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.dir = Path(directory)

    def _path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.json"

    def get(self, key: str) -> str | None:
        """The cached text, or None (an unreadable entry counts as absent)."""
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
            text = data["text"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return text if isinstance(text, str) else None

    def put(self, key: str, text: str, meta: dict[str, Any]) -> None:
        """Store a generation atomically.

        Raises:
            RunDirError: the entry's folder is a symbolic link (never written through).
            OSError: it cannot be written.
        """
        payload = json.dumps({"text": text, **meta}, ensure_ascii=False, indent=1)
        path = self._path(key)
        make_dir(self.dir, path.parent.name)
        write_text_atomic(path, payload, fsync=False)


def cached_generate(
    subject: Subject,
    *,
    images: Sequence[np.ndarray],
    prompt: str,
    seed: int = 0,
    system: str | None = None,
    item_id: str = "",
    condition: str = "original",
    cache: SubjectCache | None = None,
    max_chars: int | None = None,
) -> Generation:
    """``subject.generate`` through the cache (no cache: always generate).

    Args:
        max_chars: Longest answer accepted; a longer one fails (and is not cached).

    Raises:
        SubjectError: the subject failed, or answered more than ``max_chars`` characters
            (nothing is cached then).
    """
    imgs = check_images(images)
    key = generation_key(
        subject,
        images_sha=image_digest(imgs),
        prompt=prompt,
        system=system,
        condition=condition,
        seed=seed,
    )
    # a subject that knows secrets (an API key, a URL password) masks them in its answers;
    # answers cached before it did are masked here on the way out
    scrub = getattr(subject, "scrub", None) or (lambda t: t)
    if cache is not None:
        hit = cache.get(key)
        if hit is not None:
            return Generation(text=valid_unicode(scrub(hit)), key=key, cached=True, seconds=0.0)
    t0 = time.perf_counter()
    text = subject.generate(
        imgs, prompt, seed=seed, system=system, item_id=item_id, condition=condition
    )
    seconds = time.perf_counter() - t0
    if not isinstance(text, str):
        raise SubjectError(f"{redact(subject.name)}: answered a {type(text).__name__}, not text")
    text = valid_unicode(scrub(text))  # a lone surrogate cannot be stored as UTF-8
    if max_chars is not None and len(text) > max_chars:
        raise SubjectError(
            f"the answer has {len(text)} characters, more than the {max_chars} allowed "
            "(subject.max_report_chars); refused, not cached"
        )
    if cache is not None:
        cache.put(
            key,
            text,
            {
                "subject": redact(subject.name),
                "model_id": subject.model_id,
                "revision": subject.revision,
                "item_id": item_id,
                "condition": condition,
                "seed": seed,
                "seconds": seconds,
            },
        )
    return Generation(text=text, key=key, cached=False, seconds=seconds)
