"""Tissue detection at low resolution: saturation Otsu, minus glass, pen marks and dark debris.

H&E (and DAB/hematoxylin IHC) tissue is coloured, glass is bright and grey, and pen ink has
hues stain never has (green, blue) or a red with almost no blue in it. The mask is computed on a
coarse thumbnail (``TilingConfig.mask_mpp``), so its cost and memory do not grow with the slide.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import ndimage

from pathgls.config import TilingConfig
from pathgls.tiling.readers import SlideReader, read_downsampled


@dataclass(frozen=True)
class TissueMask:
    """A boolean tissue mask and its scale: one mask pixel covers ``downsample`` level-0 pixels."""

    mask: np.ndarray  # (h, w) bool
    downsample: float  # level-0 pixels per mask pixel
    threshold: float  # saturation threshold that was used (Otsu, floored)

    @property
    def tissue_fraction(self) -> float:
        """Fraction of the slide covered by tissue."""
        return float(self.mask.mean()) if self.mask.size else 0.0


def otsu_threshold(
    values: np.ndarray, *, bins: int = 256, value_range: tuple[float, float] = (0.0, 1.0)
) -> float:
    """Otsu's threshold of 1-D values (maximises the between-class variance)."""
    values = np.asarray(values, dtype=np.float64).ravel()
    if values.size == 0:
        return value_range[1]
    hist, edges = np.histogram(values, bins=bins, range=value_range)
    centers = (edges[:-1] + edges[1:]) / 2
    w0 = np.cumsum(hist)
    w1 = w0[-1] - w0
    m = np.cumsum(hist * centers)
    mu0 = np.divide(m, w0, out=np.zeros_like(m), where=w0 > 0)
    mu1 = np.divide(m[-1] - m, w1, out=np.zeros_like(m), where=w1 > 0)
    between = w0 * w1 * (mu0 - mu1) ** 2
    return float(edges[int(np.argmax(between)) + 1])


def pen_mask(rgb: np.ndarray) -> np.ndarray:
    """Pixels of green, blue or red marker ink (and black/very dark debris)."""
    a = rgb.astype(np.int16)
    r, g, b = a[..., 0], a[..., 1], a[..., 2]
    # Stain is never green-dominant: eosin and hematoxylin both absorb green the most.
    green = (g > r + 30) & (g >= b - 15)
    # Blue/cyan ink: much more blue than red, with green above red (hematoxylin is purple: g < r).
    blue = (b > r + 60) & (g > r) & (b > 110)
    # Red ink: red with very little green *and* blue (eosin keeps blue at about half of red or
    # more); its pink rim has blue no higher than green, while H&E always has blue above green.
    red = ((r > 50) & (g * 100 < 45 * r) & (b * 100 < 45 * r)) | ((r - g > 30) & (b < g + 8))
    # Near-black: marker, dust, folds; nuclei at mask resolution are never this dark.
    dark = a.max(axis=-1) < 50
    return green | blue | red | dark


def tissue_mask(rgb: np.ndarray, *, mpp: float, config: TilingConfig | None = None) -> TissueMask:
    """Tissue mask of an RGB uint8 image whose pixels are ``mpp`` µm wide.

    Steps: drop glass (all channels above ``white_level``); Otsu on saturation over the rest,
    clipped to [``min_saturation``, ``max_saturation``] (a tile that is all tissue has no
    background for Otsu to find); remove pen ink and a halo around it; close gaps of
    ``close_um``, fill enclosed holes up to ``fill_hole_um`` across (fat cells, lumina) and drop
    specks smaller than ``min_object_um`` across.
    """
    cfg = config or TilingConfig()
    rgb = np.asarray(rgb)[..., :3]
    if rgb.size == 0:
        return TissueMask(np.zeros(rgb.shape[:2], bool), 1.0, 1.0)
    mx = rgb.max(axis=-1)
    mn = rgb.min(axis=-1)
    glass = mn > cfg.white_level
    sat = (mx - mn).astype(np.float32)  # uint8 difference: never negative
    np.divide(sat, mx, out=sat, where=mx > 0)
    del mx, mn
    candidates = sat[~glass]
    if candidates.size:
        thr = float(np.clip(otsu_threshold(candidates), cfg.min_saturation, cfg.max_saturation))
    else:
        thr = 1.0
    tissue = (sat > thr) & ~glass
    if cfg.exclude_pen:
        # Ink comes in strokes: isolated ink-coloured pixels are stain noise, not pen.
        pen = _remove_small(
            pen_mask(rgb),
            min_pixels=min(round((32.0 / mpp) ** 2), rgb.shape[0] * rgb.shape[1] // 100),
        )
        halo = max(1, round(24.0 / mpp))  # ink bleeds ~24 µm into a light pink/green rim
        pen = ndimage.binary_dilation(pen, iterations=halo) if pen.any() else pen
        tissue &= ~pen
    tissue = _close(tissue, radius=cfg.close_um / mpp)
    tissue = _fill_small_holes(tissue, max_pixels=round((cfg.fill_hole_um / mpp) ** 2))
    if cfg.exclude_pen:
        tissue &= ~pen  # closing and filling must not grow tissue back into ink
    min_pixels = min(round((cfg.min_object_um / mpp) ** 2), tissue.size // 100)
    tissue = _remove_small(tissue, min_pixels=min_pixels)
    return TissueMask(tissue, 1.0, thr)


def _disk(radius: int) -> np.ndarray:
    r = np.arange(-radius, radius + 1)
    return (r[:, None] ** 2 + r[None, :] ** 2) <= radius**2


def _close(mask: np.ndarray, *, radius: float) -> np.ndarray:
    """Morphological closing with a disk of ``radius`` px.

    Small radii (the slide mask: a few px) use binary dilation/erosion, which only needs bool
    arrays; large ones (a 40× tile) use distance transforms, O(n) whatever the radius.
    """
    if radius < 1 or not mask.any():
        return mask
    if radius <= 12:
        disk = _disk(round(radius))
        pad = round(radius)
        # Outside the image counts as tissue for the erosion, so the border is not eaten away.
        grown = np.pad(ndimage.binary_dilation(mask, structure=disk), pad, constant_values=True)
        return ndimage.binary_erosion(grown, structure=disk)[pad:-pad, pad:-pad]
    grown = ndimage.distance_transform_edt(~mask) <= radius
    if grown.all():
        return grown
    # Outside the image counts as tissue for the erosion, so the border is not eaten away.
    return ndimage.distance_transform_edt(grown) > radius


def _fill_small_holes(mask: np.ndarray, *, max_pixels: int) -> np.ndarray:
    """Fill holes (fat cells, lumina) smaller than ``max_pixels``; large enclosed glass stays."""
    if max_pixels < 1 or not mask.any():
        return mask
    holes = ndimage.binary_fill_holes(mask) & ~mask
    labels, n = ndimage.label(holes)
    if n == 0:
        return mask
    sizes = np.bincount(labels.ravel())
    small = sizes <= max_pixels
    small[0] = False
    return mask | small[labels]


def _remove_small(mask: np.ndarray, *, min_pixels: int) -> np.ndarray:
    if min_pixels <= 1 or not mask.any():
        return mask
    labels, n = ndimage.label(mask)
    if n == 0:
        return mask
    sizes = np.bincount(labels.ravel())
    keep = sizes >= min_pixels
    keep[0] = False
    return keep[labels]


def slide_tissue_mask(reader: SlideReader, config: TilingConfig, *, mpp0: float) -> TissueMask:
    """Tissue mask of a whole slide at ``config.mask_mpp``, coarser for slides whose mask would
    exceed ``config.mask_max_side`` px (never finer than level 0)."""
    downsample = max(1.0, config.mask_mpp / mpp0)
    # The mask is at most mask_max_side px on its long side, so memory is flat in slide size.
    w0, h0 = reader.dimensions
    downsample = max(downsample, max(w0, h0) / config.mask_max_side)
    thumb = read_downsampled(reader, downsample, max_read_pixels=config.max_level_read_pixels)
    real_ds = w0 / thumb.shape[1]
    tm = tissue_mask(thumb, mpp=mpp0 * real_ds, config=config)
    return TissueMask(tm.mask, real_ds, tm.threshold)
