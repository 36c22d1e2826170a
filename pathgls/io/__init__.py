"""Files in and out: atomic writes, checksums, the sample data, process memory tuning.

Owns nothing about slides, models or scores.

May import: core (:mod:`pathgls.errors`, :mod:`pathgls.config`).
"""
