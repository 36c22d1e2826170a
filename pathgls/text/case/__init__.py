"""The typed case model of a pathology report: parts → lesions → typed slots.

:func:`build_case` reads a report's structure (:mod:`pathgls.text.document`: regions, specimen
parts, statement kinds — only assertions are read), then every assertion for typed slot facts
(:mod:`.read_tumour`, :mod:`.read_findings`, :mod:`.read_staging`, :mod:`.read_margins`) about a
target (the tumour of a part, another lesion, a margin by name, a node group by station, a
tissue, a cell population), and resolves the targets (:mod:`.build`). Logic's checks
(:mod:`pathgls.logic.checks`) compare facts of the same target.
"""

from __future__ import annotations

from pathgls.text.case.build import build_case, compatible_types
from pathgls.text.case.model import SLOTS, TARGET_KINDS, Case, Fact, PartCase, Target

__all__ = [
    "SLOTS",
    "TARGET_KINDS",
    "Case",
    "Fact",
    "PartCase",
    "Target",
    "build_case",
    "compatible_types",
]
