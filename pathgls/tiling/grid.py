"""The patch grid: level-0 coordinates of every patch with enough tissue."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pathgls.config import TilingConfig
from pathgls.tiling.readers import SlideReader
from pathgls.tiling.resolution import ReadPlan, plan_read
from pathgls.tiling.tissue import TissueMask, slide_tissue_mask


@dataclass(frozen=True)
class PatchGrid:
    """Patches of one slide: coordinates in level-0 pixels and how to read them."""

    coords: np.ndarray  # (N, 2) int64, level-0 top-left (x, y), row-major order
    tissue_fraction: np.ndarray  # (N,) float32, tissue fraction of each patch
    plan: ReadPlan
    mask: TissueMask
    step_level0: int  # distance between neighbouring patch origins in level-0 pixels

    def __len__(self) -> int:
        return int(self.coords.shape[0])


def grid_origins(length: int, patch: int, step: int) -> np.ndarray:
    """Patch origins along one axis, covering it whole.

    A patch that sticks out over the far edge is kept (its outside is read as white glass, as
    OpenSlide returns it), so tissue at the slide's border is not lost; whether it is used
    depends on its tissue fraction over the *whole* patch area.
    """
    if length <= 0:
        return np.zeros(0, dtype=np.int64)
    last = max(length - patch, 0)
    origins = np.arange(0, last + 1, step, dtype=np.int64)
    if origins[-1] + patch < length:
        origins = np.append(origins, origins[-1] + step)
    return origins


def patch_tissue_fractions(
    mask: TissueMask, coords: np.ndarray, patch_size_level0: int
) -> np.ndarray:
    """Tissue fraction of each patch from the mask, via a summed-area table (O(1) per patch).

    The patch rectangle in mask coordinates is rounded outwards to whole mask pixels (the mask
    is coarse); the part of a patch outside the slide counts as glass.
    """
    m = mask.mask
    if coords.size == 0 or m.size == 0:
        return np.zeros(len(coords), dtype=np.float32)
    sat = np.zeros((m.shape[0] + 1, m.shape[1] + 1), dtype=np.int64)
    sat[1:, 1:] = np.cumsum(np.cumsum(m, axis=0, dtype=np.int64), axis=1)
    ds = mask.downsample
    x0 = np.clip(np.floor(coords[:, 0] / ds).astype(np.int64), 0, m.shape[1])
    y0 = np.clip(np.floor(coords[:, 1] / ds).astype(np.int64), 0, m.shape[0])
    x1u = np.maximum(np.ceil((coords[:, 0] + patch_size_level0) / ds).astype(np.int64), x0 + 1)
    y1u = np.maximum(np.ceil((coords[:, 1] + patch_size_level0) / ds).astype(np.int64), y0 + 1)
    x1, y1 = np.minimum(x1u, m.shape[1]), np.minimum(y1u, m.shape[0])
    total = sat[y1, x1] - sat[y0, x1] - sat[y1, x0] + sat[y0, x0]
    area = (x1u - x0) * (y1u - y0)
    return (total / area).astype(np.float32)


def make_grid(
    reader: SlideReader,
    config: TilingConfig,
    *,
    plan: ReadPlan | None = None,
    mask: TissueMask | None = None,
) -> PatchGrid:
    """All patches of ``config.patch_size`` px at the target resolution with enough tissue.

    Args:
        reader: the open slide.
        config: tiling configuration (magnification, patch size, overlap, tissue threshold).
        plan: read plan, computed with :func:`plan_read` when None.
        mask: tissue mask, computed with :func:`slide_tissue_mask` when None.

    Raises:
        MissingResolutionError: the slide has no mpp and none was given.
    """
    plan = plan or plan_read(reader, config)
    mask = mask or slide_tissue_mask(reader, config, mpp0=plan.level0_mpp)
    scale = plan.patch_size_level0 / plan.patch_size  # level-0 px per target px
    step = max(1, round((config.patch_size - config.overlap) * scale))
    w0, h0 = reader.dimensions
    xs = grid_origins(w0, plan.patch_size_level0, step)
    ys = grid_origins(h0, plan.patch_size_level0, step)
    yy, xx = np.meshgrid(ys, xs, indexing="ij")
    coords = np.stack([xx.ravel(), yy.ravel()], axis=1).astype(np.int64)
    fractions = patch_tissue_fractions(mask, coords, plan.patch_size_level0)
    keep = fractions >= config.tissue_threshold
    if config.tissue_threshold == 0:
        keep[:] = True
    return PatchGrid(
        coords=np.ascontiguousarray(coords[keep]),
        tissue_fraction=fractions[keep],
        plan=plan,
        mask=mask,
        step_level0=step,
    )
