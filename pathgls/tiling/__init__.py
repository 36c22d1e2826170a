"""Slides to patches: readers, resolution, tissue mask, grid and patch streaming.

Owns the slide readers (OpenSlide, Pillow), resolution plans, the tissue mask, the patch grid,
batched patch streaming and the one read-at-resolution path (:func:`.stream.read_rect`), and
slide file identity (:mod:`.identity`); nothing here knows of models or reports.

May import: core, :mod:`pathgls.config`, :mod:`pathgls.io`.
"""

from pathgls.tiling.grid import PatchGrid, make_grid
from pathgls.tiling.readers import ImageReader, OpenSlideReader, SlideReader
from pathgls.tiling.resolution import ReadPlan, plan_read
from pathgls.tiling.slides import find_slides, open_slide, slide_sha256
from pathgls.tiling.stream import PatchBatch, stream_patches
from pathgls.tiling.tissue import TissueMask, slide_tissue_mask, tissue_mask

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
