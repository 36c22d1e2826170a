"""What a subject sees of a whole slide: a thumbnail, a montage of diverse patches, or patches.

``thumbnail``  the slide scaled to ``thumbnail_size`` px on its long side;
``montage``    k diverse tissue patches in one grid image: k-means (seeded) on the bag's patch
               features, the patch nearest each centre, read from the slide by the bag's own
               read plan and path (the pixels the bag encoded);
``patches``    the same k patches as separate images (a report per patch, then one summary).
An ROI is always its own single image.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from scipy.cluster.vq import kmeans2

from pathgls.config import ViewConfig
from pathgls.errors import ConfigError, PathGLSError

if TYPE_CHECKING:
    from pathgls.features.session import SlideSession


@dataclass
class View:
    """The images a subject is shown for one item."""

    kind: str  # thumbnail, montage, patches or roi
    images: list[np.ndarray]
    patch_indices: list[int] = field(default_factory=list)  # bag rows shown (montage, patches)
    description: str = ""


def diverse_patches(features: np.ndarray, *, k: int, seed: int = 0) -> list[int]:
    """Indices of up to k patches spread over the feature space (nearest to k-means centres).

    Deterministic for a seed; distinct indices; all patches when there are at most k.
    """
    x = np.asarray(features, dtype=np.float64)
    n = x.shape[0]
    if n <= k:
        return list(range(n))
    centres, _ = kmeans2(x, k, seed=np.random.default_rng(seed), minit="++")
    chosen: list[int] = []
    d = ((x[:, None, :] - centres[None, :, :]) ** 2).sum(-1)  # (n, k)
    for c in range(centres.shape[0]):
        order = np.argsort(d[:, c], kind="stable")
        pick = next(int(i) for i in order if int(i) not in chosen)
        chosen.append(pick)
    return sorted(chosen)


def montage(images: list[np.ndarray], *, columns: int | None = None) -> np.ndarray:
    """Images of one size tiled row-major into a grid (white where the grid is not full)."""
    if not images:
        raise PathGLSError("a montage needs at least one image")
    h, w = images[0].shape[:2]
    cols = columns or math.ceil(math.sqrt(len(images)))
    rows = math.ceil(len(images) / cols)
    out = np.full((rows * h, cols * w, 3), 255, dtype=np.uint8)
    for i, im in enumerate(images):
        r, c = divmod(i, cols)
        out[r * h : (r + 1) * h, c * w : (c + 1) * w] = im[:h, :w]
    return out


def slide_view(
    slide: str | os.PathLike[str],
    *,
    bag: str | os.PathLike[str] | None = None,
    config: ViewConfig | None = None,
    mpp: float | None = None,
    session: SlideSession | None = None,
) -> View:
    """The view of a slide a subject is given.

    The montage's (and the patches view's) patches are read with the read plan the bag was
    extracted with, through the bag's own read path (:func:`pathgls.tiling.stream.read_patch`):
    the subject is shown exactly the pixels whose features grounding compares its report with.

    Args:
        slide: The slide file.
        bag: Its feature bag (montage and patches views).
        config: What to show.
        mpp: Level-0 µm/px given by the user (when ``session`` is None).
        session: The item's slide session (the runner's: the slide is opened once per item).

    Raises:
        ConfigError: montage/patches without a bag.
        SlideError: the slide cannot be read.
        BagError: the bag is invalid, has no patch, or does not fit the slide.
    """
    from pathgls.features.session import bag_read_plan, session_for

    cfg = config or ViewConfig()
    if cfg.kind != "thumbnail" and bag is None:
        raise ConfigError(f"the {cfg.kind} view needs the slide's feature bag (--bag)")
    own = session is None
    sess = session or session_for(Path(slide), mpp=mpp)
    try:
        if cfg.kind == "thumbnail":
            thumb = sess.thumbnail(cfg.thumbnail_size)
            return View(
                kind="thumbnail",
                images=[thumb],
                description=f"thumbnail {thumb.shape[1]}×{thumb.shape[0]}",
            )
        assert bag is not None
        fb = sess.read_bag(bag, windows=False)  # checked against this slide (coords inside)
        if len(fb) == 0:
            raise PathGLSError(f"{bag}: the bag has no patch to show")
        idx = diverse_patches(fb.features, k=cfg.k, seed=cfg.seed)
        plan = bag_read_plan(fb.meta, sess.reader.level_downsamples)
        patches = sess.read_patches(fb.coords[idx], plan)
    finally:
        if own:
            sess.close()
    if cfg.kind == "montage":
        return View(
            kind="montage",
            images=[montage(patches)],
            patch_indices=idx,
            description=f"montage of {len(idx)} diverse patches",
        )
    return View(
        kind="patches", images=patches, patch_indices=idx, description=f"{len(idx)} patches"
    )
