"""Files in and out: atomic writes, checksums, the sample data, process memory tuning, locks
(:mod:`.lock`), unique file names (:mod:`.names`), secret redaction for every writer
(:mod:`.redact`) and the one reader of user tables (:mod:`.tables`).

Owns nothing about slides, models or scores.

May import: core (:mod:`pathgls.errors`, :mod:`pathgls.config`).
"""
