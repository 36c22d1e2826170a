"""Pictures of the evidence: similarity heat maps over a slide thumbnail (or an ROI).

:func:`heatmap_overlay` paints per-patch values onto a thumbnail and returns an RGB array of
exactly the thumbnail's size (so it can be saved or stacked as is); :func:`plot_heatmap` draws
the same on a matplotlib axis with a colour bar, for notebooks. Only matplotlib's colour maps
and Agg-safe calls are used: nothing here needs a display.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
from PIL import Image

from pathgls.errors import PathGLSError


def paint_patches(
    *,
    values: np.ndarray,
    coords: np.ndarray,
    patch_size_level0: int,
    slide_size: tuple[int, int],
    canvas_size: tuple[int, int],
) -> np.ndarray:
    """Per-patch values rasterised onto a ``(height, width)`` canvas; NaN where no patch lies.

    Args:
        values: ``(N,)`` one value per patch.
        coords: ``(N, 2)`` level-0 top-left ``(x, y)`` of each patch.
        patch_size_level0: Patch side in level-0 pixels.
        slide_size: Level-0 ``(width, height)`` the canvas covers.
        canvas_size: ``(width, height)`` of the canvas (the thumbnail's size).

    Where patches overlap, the larger value is kept.
    """
    vals = np.asarray(values, dtype=np.float64).reshape(-1)
    xy = np.asarray(coords, dtype=np.float64).reshape(-1, 2)
    if vals.shape[0] != xy.shape[0]:
        raise ValueError(f"{vals.shape[0]} values for {xy.shape[0]} patches")
    cw, ch = (int(v) for v in canvas_size)
    sx, sy = cw / slide_size[0], ch / slide_size[1]
    canvas = np.full((ch, cw), np.nan)
    for (x, y), v in zip(xy, vals, strict=True):
        x0, y0 = max(0, math.floor(x * sx)), max(0, math.floor(y * sy))
        x1 = min(cw, max(x0 + 1, math.ceil((x + patch_size_level0) * sx)))
        y1 = min(ch, max(y0 + 1, math.ceil((y + patch_size_level0) * sy)))
        if x0 < cw and y0 < ch:
            np.fmax(canvas[y0:y1, x0:x1], v, out=canvas[y0:y1, x0:x1])
    return canvas


def _colormap(name: str) -> Any:
    import matplotlib

    try:
        return matplotlib.colormaps[name]
    except KeyError as e:
        raise PathGLSError(f"unknown matplotlib colour map {name!r}") from e


def value_range(
    values: np.ndarray, vmin: float | None = None, vmax: float | None = None
) -> tuple[float, float]:
    """The colour range: given bounds, else the finite values' min and max (never empty)."""
    finite = np.asarray(values, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    lo = float(vmin) if vmin is not None else (float(finite.min()) if finite.size else 0.0)
    hi = float(vmax) if vmax is not None else (float(finite.max()) if finite.size else 1.0)
    if hi <= lo:
        hi = lo + 1e-6
    return lo, hi


def heatmap_overlay(
    *,
    thumbnail: np.ndarray,
    values: np.ndarray,
    coords: np.ndarray,
    patch_size_level0: int,
    slide_size: tuple[int, int],
    cmap: str = "inferno",
    alpha: float = 0.55,
    vmin: float | None = None,
    vmax: float | None = None,
) -> np.ndarray:
    """Blend per-patch values, coloured, over a thumbnail; ``(H, W, 3)`` uint8 of its size.

    Args:
        thumbnail: ``(H, W, 3)`` uint8 RGB picture of the whole slide (or the ROI).
        values: ``(N,)`` per-patch values (e.g. an entity's similarity).
        coords: ``(N, 2)`` level-0 top-left of each patch.
        patch_size_level0: Patch side in level-0 pixels.
        slide_size: Level-0 ``(width, height)`` the thumbnail shows.
        cmap: Matplotlib colour map.
        alpha: Opacity of the colours over tissue patches (elsewhere the thumbnail shows).
        vmin: Value drawn with the colour map's first colour (default: the values' minimum).
        vmax: Value drawn with its last colour (default: the maximum).
    """
    thumb = np.asarray(thumbnail)
    if thumb.ndim != 3 or thumb.shape[2] != 3 or thumb.dtype != np.uint8:
        raise ValueError(f"thumbnail must be (H, W, 3) uint8, got {thumb.shape} {thumb.dtype}")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    h, w = thumb.shape[:2]
    canvas = paint_patches(
        values=values,
        coords=coords,
        patch_size_level0=patch_size_level0,
        slide_size=slide_size,
        canvas_size=(w, h),
    )
    lo, hi = value_range(values, vmin, vmax)
    painted = np.isfinite(canvas)
    norm = np.clip((np.nan_to_num(canvas, nan=lo) - lo) / (hi - lo), 0.0, 1.0)
    colours = _colormap(cmap)(norm)[..., :3] * 255.0
    out = thumb.astype(np.float64)
    out[painted] = (1 - alpha) * out[painted] + alpha * colours[painted]
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def save_png(path: str | os.PathLike[str], image: np.ndarray) -> None:
    """Write an RGB array as PNG (its size unchanged)."""
    Image.fromarray(np.asarray(image, dtype=np.uint8)).save(path, format="PNG")


def plot_heatmap(
    ax: Any,
    *,
    thumbnail: np.ndarray,
    values: np.ndarray,
    coords: np.ndarray,
    patch_size_level0: int,
    slide_size: tuple[int, int],
    title: str = "",
    cmap: str = "inferno",
    alpha: float = 0.55,
    vmin: float | None = None,
    vmax: float | None = None,
    mark: tuple[int, int, int, int] | None = None,
) -> Any:
    """Draw :func:`heatmap_overlay` on a matplotlib axis with a colour bar; returns the image.

    ``mark`` outlines a level-0 box ``(x, y, w, h)`` (e.g. the entity's best window).
    """
    import matplotlib.cm as mcm
    import matplotlib.colors as mcolors
    from matplotlib.patches import Rectangle

    over = heatmap_overlay(
        thumbnail=thumbnail,
        values=values,
        coords=coords,
        patch_size_level0=patch_size_level0,
        slide_size=slide_size,
        cmap=cmap,
        alpha=alpha,
        vmin=vmin,
        vmax=vmax,
    )
    im = ax.imshow(over)
    lo, hi = value_range(values, vmin, vmax)
    mappable = mcm.ScalarMappable(norm=mcolors.Normalize(lo, hi), cmap=_colormap(cmap))
    ax.figure.colorbar(mappable, ax=ax, fraction=0.046, pad=0.04, label="cosine similarity")
    if mark is not None:
        sx = over.shape[1] / slide_size[0]
        sy = over.shape[0] / slide_size[1]
        x, y, w, h = mark
        ax.add_patch(
            Rectangle((x * sx, y * sy), w * sx, h * sy, fill=False, edgecolor="cyan", lw=1.5)
        )
    ax.set_axis_off()
    if title:
        ax.set_title(title)
    return im
