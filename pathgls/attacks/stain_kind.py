"""Is an image H&E at all? The Macenko perturbation assumes hematoxylin and eosin.

The stain attack scales the two stain concentrations Macenko finds, which it names
hematoxylin and eosin whatever the slide holds. On an immunohistochemistry image the second
stain is DAB (brown), on a hematoxylin-only section there is no second stain: the attack still
runs and changes something, but not an H&E stain shift, so Δ_aug measures something else.
:func:`stain_kind` says what the image looks like, from the colour of its tissue pixels:

- eosin is pink: green is the weakest channel (green light absorbed);
- DAB is brown: blue is the weakest channel;
- hematoxylin is blue-purple: red is the weakest channel.

Among tissue pixels (optical density summed over RGB above :data:`TISSUE_OD`) that are
coloured at all (channel spread above :data:`MIN_SPREAD`), H&E has a large pink share (0.65
to 1.00 on the project's real H&E tiles and slide thumbnails, red pen marks included), the
real DAB sample (``pathgls data sample ihc``) a brown one (0.90, pink 0.01) and the real
kidney IHC tile, hematoxylin counterstain only, a blue one (0.98, pink 0.02). The cut-offs
sit between those (``tests/test_stain.py`` checks each of these images).

May import: core.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

#: A pixel is tissue when its optical density summed over R, G, B exceeds this.
TISSUE_OD = 0.3
#: A tissue pixel is coloured when its largest and smallest channels differ by more than this.
MIN_SPREAD = 15
#: H&E when at least this share of the coloured tissue pixels is pink.
MIN_PINK = 0.2
#: DAB when, short of pink, at least this share is brown.
MIN_BROWN = 0.1
#: Hematoxylin only when, short of pink and brown, at least this share is blue.
MIN_BLUE = 0.5
#: Fewer coloured tissue pixels than this: nothing is said (too little tissue to tell).
MIN_PIXELS = 200

StainName = Literal["he", "dab", "hematoxylin-only", "unknown", "too-little-tissue"]


@dataclass(frozen=True)
class StainKind:
    """What an image's tissue colours look like."""

    kind: StainName
    shares: dict[str, float] = field(default_factory=dict)  # pink, brown, blue of coloured px
    n_pixels: int = 0  # coloured tissue pixels looked at

    @property
    def warning(self) -> str | None:
        """Why a Macenko H&E perturbation of this image is not an H&E stain shift (or None)."""
        shares = ", ".join(f"{k} {v:.2f}" for k, v in self.shares.items())
        what = {
            "dab": "immunohistochemistry (DAB, brown)",
            "hematoxylin-only": "hematoxylin only (no eosin)",
            "unknown": "neither H&E nor DAB",
        }.get(self.kind)
        if what is None:
            return None
        return (
            f"the image looks like {what}, not H&E (shares of coloured tissue pixels: "
            f"{shares}): the Macenko H&E perturbation rescales whatever two stains it finds, so "
            "the stain condition is not an H&E stain shift"
        )


def stain_kind(image: np.ndarray) -> StainKind:
    """Classify an RGB uint8 ``(H, W, 3)`` image as H&E, DAB, hematoxylin-only or unknown.

    Raises:
        ValueError: not an ``(H, W, 3)`` array.
    """
    a = np.asarray(image)
    if a.ndim != 3 or a.shape[2] != 3:
        raise ValueError(f"expected an (H, W, 3) RGB image, got shape {a.shape}")
    px = a.reshape(-1, 3).astype(np.float32)
    od = -np.log((px + 1.0) / 256.0).sum(axis=1)
    spread = px.max(axis=1) - px.min(axis=1)
    px = px[(od > TISSUE_OD) & (spread > MIN_SPREAD)]
    if len(px) < MIN_PIXELS:
        return StainKind("too-little-tissue", n_pixels=len(px))
    weakest = px.argmin(axis=1)  # 0: red (hematoxylin), 1: green (eosin), 2: blue (DAB)
    shares = {
        "pink": float(np.mean(weakest == 1)),
        "brown": float(np.mean(weakest == 2)),
        "blue": float(np.mean(weakest == 0)),
    }
    if shares["pink"] >= MIN_PINK:
        kind: StainName = "he"
    elif shares["brown"] >= MIN_BROWN:
        kind = "dab"
    elif shares["blue"] >= MIN_BLUE:
        kind = "hematoxylin-only"
    else:
        kind = "unknown"
    return StainKind(kind, shares=shares, n_pixels=len(px))
