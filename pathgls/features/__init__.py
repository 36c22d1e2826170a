"""Feature bags: the HDF5 schema, its resumable writer and validating reader, and extraction.

:mod:`.bags` owns the on-disk format; :mod:`.extract` turns a slide into a bag (tiling →
HighRes encoding → resumable write).

May import: core, :mod:`pathgls.config`, :mod:`pathgls.io`, :mod:`pathgls.tiling`,
:mod:`pathgls.encoders`.
"""
