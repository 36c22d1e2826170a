"""Slides to patches: readers, resolution, tissue mask, grid and patch streaming.

Owns the slide readers (OpenSlide, Pillow), resolution plans, the tissue mask, the patch grid,
batched patch streaming and the one read-at-resolution path (:func:`.stream.read_rect`), and
slide file identity (:mod:`.identity`); nothing here knows of models or reports.

May import: core, :mod:`pathgls.config`, :mod:`pathgls.io`.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathgls.tiling.grid import PatchGrid, make_grid
    from pathgls.tiling.readers import ImageReader, OpenSlideReader, SlideReader
    from pathgls.tiling.resolution import ReadPlan, plan_read
    from pathgls.tiling.slides import find_slides, open_slide, slide_sha256
    from pathgls.tiling.stream import PatchBatch, stream_patches
    from pathgls.tiling.tissue import TissueMask, slide_tissue_mask, tissue_mask

# Each name is imported from its module on first use (PEP 562), so importing one submodule
# (e.g. ``pathgls.tiling.identity`` for a bag's slide check) does not pay for the tissue mask's
# scipy or the grid.
_WHERE = {
    "PatchGrid": "grid",
    "make_grid": "grid",
    "ImageReader": "readers",
    "OpenSlideReader": "readers",
    "SlideReader": "readers",
    "ReadPlan": "resolution",
    "plan_read": "resolution",
    "find_slides": "slides",
    "open_slide": "slides",
    "slide_sha256": "slides",
    "PatchBatch": "stream",
    "stream_patches": "stream",
    "TissueMask": "tissue",
    "slide_tissue_mask": "tissue",
    "tissue_mask": "tissue",
}


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'pathgls.tiling' has no attribute {name!r}")
    return getattr(importlib.import_module(f"pathgls.tiling.{where}"), name)


__all__ = [
    "ImageReader",
    "OpenSlideReader",
    "PatchBatch",
    "PatchGrid",
    "ReadPlan",
    "SlideReader",
    "TissueMask",
    "find_slides",
    "make_grid",
    "open_slide",
    "plan_read",
    "slide_sha256",
    "slide_tissue_mask",
    "stream_patches",
    "tissue_mask",
]
