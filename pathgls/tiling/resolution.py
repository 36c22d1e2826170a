"""Which pyramid level to read and how much, to get patches at the target resolution."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

from pathgls.config import MPP_AT_1X, TilingConfig
from pathgls.errors import MissingResolutionError, ResolutionError
from pathgls.tiling.readers import SlideReader

#: The finest level-0 µm/px a slide can plausibly have (a 100× oil objective is about 0.1 µm/px):
#: a finer value is broken metadata (or a typo of --mpp) and would tile the slide into zero
#: patches or overflow. Too coarse a value is refused by the upsampling limit instead.
FINEST_MPP = 0.01


@dataclass(frozen=True)
class ReadPlan:
    """How one patch is read: ``read_size`` px at ``level``, resized to ``patch_size`` px."""

    level: int  # pyramid level read from
    read_size: int  # side in pixels at that level
    patch_size: int  # side in pixels of the patch handed to the encoder
    patch_size_level0: int  # side in level-0 pixels covered by one patch
    level0_mpp: float  # µm/px at level 0
    target_mpp: float  # µm/px of the patches
    mpp_source: str  # metadata, objective, user or default
    resample: str = "area"  # filter of a whole-factor reduction: area or lanczos
    scaled_decode: bool = True  # decode JPEG tiles at reduced scale where possible

    @property
    def reduction(self) -> int | None:
        """The whole factor ``read_size / patch_size`` (≥ 2), or None for any other ratio."""
        k, rest = divmod(self.read_size, self.patch_size)
        return k if k >= 2 and rest == 0 else None

    @property
    def needs_resize(self) -> bool:
        """True when the region read must be resized to the patch size."""
        return self.read_size != self.patch_size

    @property
    def resampling(self) -> str:
        """The filter patches actually get: ``none`` (read at the patch size), ``area`` (a
        whole-factor reduction with ``resample = "area"``) or ``lanczos``."""
        if not self.needs_resize:
            return "none"
        return "area" if self.reduction is not None and self.resample == "area" else "lanczos"

    @property
    def level0_magnification(self) -> float:
        """Objective-equivalent magnification of level 0 (10 / mpp)."""
        return MPP_AT_1X / self.level0_mpp

    @property
    def target_magnification(self) -> float:
        """Objective-equivalent magnification of the patches."""
        return MPP_AT_1X / self.target_mpp


def plan_read(
    reader: SlideReader, config: TilingConfig, *, patch_size: int | None = None
) -> ReadPlan:
    """Pick the pyramid level closest above the target resolution and the size to read there.

    The chosen level is the coarsest one whose mpp is not coarser than the target (within
    ``config.mpp_tolerance``); a level within the tolerance is read at ``patch_size`` without
    resizing. A slide slightly coarser than the target (up to ``config.max_upsample``) is read
    at level 0 and upsampled, with a warning.

    Raises:
        MissingResolutionError: the reader knows no mpp (pass ``--mpp``; pathgls never guesses).
        ResolutionError: the slide is far coarser than the target, or its µm/px is implausible
            (finer than :data:`FINEST_MPP`, or not finite; the value is named).
    """
    size = patch_size or config.patch_size
    if reader.mpp is None:
        raise MissingResolutionError(
            f"{reader.path}: the slide has no microns-per-pixel or objective-power metadata, so "
            f"{config.magnification:g}× cannot be located; pass --mpp with level 0's µm/px",
            path=reader.path,
        )
    mpp0 = float(reader.mpp)
    if not (mpp0 >= FINEST_MPP and math.isfinite(mpp0)):  # NaN fails too
        raise ResolutionError(
            f"{reader.path}: level 0 is {mpp0:.4g} µm/px (from {reader.mpp_source}), finer than "
            f"the {FINEST_MPP:g} µm/px any slide has: the resolution metadata is broken; "
            "pass --mpp with level 0's µm/px",
            path=reader.path,
        )
    target = config.target_mpp
    tol = config.mpp_tolerance
    level = 0
    for i, ds in enumerate(reader.level_downsamples):
        if mpp0 * ds <= target * (1 + tol) and ds >= reader.level_downsamples[level]:
            level = i
    ds = reader.level_downsamples[level]
    level_mpp = mpp0 * ds
    if level_mpp > target * config.max_upsample:
        raise ResolutionError(
            f"{reader.path}: level 0 is {level_mpp:.4g} µm/px (from {reader.mpp_source}), "
            f"{level_mpp / target:.1f}× coarser than the {target:g} µm/px target; either this is "
            "not a slide for that magnification or its resolution metadata is wrong: pass --mpp",
            path=reader.path,
        )
    if level_mpp > target * (1 + tol):
        warnings.warn(
            f"{reader.name}: level 0 is {level_mpp:.3g} µm/px, coarser than the target "
            f"{target:.3g} µm/px; patches are upsampled",
            stacklevel=2,
        )
    # A ratio within the tolerance of a whole number is snapped to it: a 0.2495 µm/px "40×"
    # level gives 20× patches by reading exactly 2 × patch_size pixels, not 2.004 ×.
    ratio = target / level_mpp
    whole = round(ratio)
    if whole >= 1 and abs(ratio / whole - 1) <= tol:
        read_size = size * whole
    else:
        read_size = max(1, round(size * ratio))
    return ReadPlan(
        level=level,
        read_size=read_size,
        patch_size=size,
        patch_size_level0=max(1, round(read_size * ds)),
        level0_mpp=mpp0,
        target_mpp=target,
        mpp_source=reader.mpp_source,
        resample=config.resample,
        scaled_decode=config.scaled_decode,
    )
