"""What a subject sees of a whole slide: a thumbnail, a montage of diverse patches, or patches.

``thumbnail``  the slide scaled to ``thumbnail_size`` px on its long side;
``montage``    k diverse tissue patches in one grid image: k-means (seeded) on the bag's patch
               features, the patch nearest each centre, read from the slide at the bag's
               resolution;
``patches``    the same k patches as separate images (a report per patch, then one summary).
An ROI is always its own single image.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image
from scipy.cluster.vq import kmeans2

from pathgls.config import ViewConfig
from pathgls.errors import ConfigError, PathGLSError


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
) -> View:
    """The view of a slide a subject is given.

    Raises:
        ConfigError: montage/patches without a bag.
        SlideError: the slide cannot be read.
        BagError: the bag is invalid, or has no patch.
    """
    from pathgls.features.bags import read_bag
    from pathgls.tiling.slides import open_slide

    cfg = config or ViewConfig()
    reader = open_slide(Path(slide), mpp=mpp)
    try:
        if cfg.kind == "thumbnail":
            thumb = reader.thumbnail(cfg.thumbnail_size)
            return View(
                kind="thumbnail",
                images=[thumb],
                description=f"thumbnail {thumb.shape[1]}×{thumb.shape[0]}",
            )
        if bag is None:
            raise ConfigError(f"the {cfg.kind} view needs the slide's feature bag (--bag)")
        fb = read_bag(bag, windows=False, slide_size=tuple(reader.dimensions))
        if len(fb) == 0:
            raise PathGLSError(f"{bag}: the bag has no patch to show")
        idx = diverse_patches(fb.features, k=cfg.k, seed=cfg.seed)
        patches = [_read_patch(reader, fb.coords[i], fb.meta) for i in idx]
    finally:
        reader.close()
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


def _read_patch(reader, xy: np.ndarray, meta) -> np.ndarray:
    side0 = int(meta.patch_size_level0)
    region = reader.read_region((int(xy[0]), int(xy[1])), 0, (side0, side0))
    if side0 != meta.patch_size:
        region = np.asarray(
            Image.fromarray(region).resize(
                (meta.patch_size, meta.patch_size), Image.Resampling.LANCZOS
            )
        )
    return np.array(region, dtype=np.uint8)
