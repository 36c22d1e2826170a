"""Colour deconvolution: RGB to hematoxylin, eosin and DAB optical densities.

Ruifrok & Johnston's method (Anal. Quant. Cytol. Histol. 23(4), 2001) with their H, E and DAB
stain vectors, written as scikit-image's ``skimage.color.rgb2hed`` computes it (the same
matrix, the same 1e-6 floor before the logarithm, the same scaling by ``log(1e-6)``), so it
gives scikit-image's numbers (a test compares them) without depending on it for this one
call.

May import: core.
"""

from __future__ import annotations

import numpy as np

#: Rows: the optical-density colour of hematoxylin, eosin and DAB (Ruifrok & Johnston).
RGB_FROM_HED = np.array([[0.65, 0.70, 0.29], [0.07, 0.99, 0.11], [0.27, 0.57, 0.78]])
#: Its inverse: RGB optical density → stain amounts.
HED_FROM_RGB = np.linalg.inv(RGB_FROM_HED)
# Pixel values are floored here before the logarithm (a black pixel has no finite density).
_FLOOR = 1e-6


def rgb_to_hed(rgb: np.ndarray) -> np.ndarray:
    """Hematoxylin, eosin and DAB amounts of an RGB image, channels last, never negative.

    Args:
        rgb: ``(..., 3)`` uint8 (0–255) or float (0–1) RGB.

    Returns:
        float64 ``(..., 3)``: H, E, DAB, each ``≥ 0``.

    Raises:
        ValueError: the last axis is not 3 long.
    """
    a = np.asarray(rgb)
    if a.shape[-1:] != (3,):
        raise ValueError(f"expected RGB with 3 channels last, got shape {a.shape}")
    x = a.astype(np.float64) / 255.0 if a.dtype == np.uint8 else a.astype(np.float64)
    np.maximum(x, _FLOOR, out=x)
    stains = (np.log(x) / np.log(_FLOOR)) @ HED_FROM_RGB
    np.maximum(stains, 0.0, out=stains)
    return stains
