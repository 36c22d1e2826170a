"""Feature bags and the slide session: the HDF5 schemas, their writers and validating readers,
extraction, and one pass per slide.

:mod:`.bags` owns the bag format; :mod:`.patches` the patches file (a slide's read plan and
tissue grid, shared by its encoders and reruns); :mod:`.session` the slide session of an item
(opened once, tiled once, one read path for bag patches, views and regions); :mod:`.extract`
turns a slide into a bag (tiling → HighRes encoding → resumable write).

May import: core, :mod:`pathgls.config`, :mod:`pathgls.io`, :mod:`pathgls.tiling`,
:mod:`pathgls.encoders`.
"""
