"""What every part of report understanding shares: sections, sentences, the extractor protocol.

A report is split once into :class:`Section` s (with a canonical kind) and :class:`Sentence` s
(each knowing its section); entity extractors, relation rules, the report graph and the Logic
score all work on these character offsets into the *cleaned* report text.
"""

from __future__ import annotations

import bisect
import functools
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from pathgls.config import HARE_TYPES
from pathgls.registry import Registry
from pathgls.types import Entity

#: Canonical section kinds.
SECTION_KINDS = ("diagnosis", "microscopic", "gross", "ihc", "comment", "other")

#: Entity types: HARE's five, then the tumour characteristics of oncology reporting schemas.
ENTITY_TYPES = (
    *HARE_TYPES,
    "morphology_finding",
    "grade",
    "stage",
    "margin",
    "lymphovascular_invasion",
    "perineural_invasion",
    "size",
    "lymph_node_involvement",
    "metastasis",
    "biomarker_result",
)

# HARE_TYPES (HARE's published label set, from pathgls.config): every type above maps onto
# one of these (see ``to_hare_type``).

_HARE_MAP = {
    "morphology_finding": "diagnosis_descriptor",
    "grade": "diagnosis_descriptor",
    "stage": "diagnosis_descriptor",
    "margin": "diagnosis_descriptor",
    "lymphovascular_invasion": "diagnosis_descriptor",
    "perineural_invasion": "diagnosis_descriptor",
    "size": "diagnosis_descriptor",
    "lymph_node_involvement": "diagnosis_descriptor",
    "metastasis": "pathological_diagnosis",
    "biomarker_result": "ihc_modifier",
}


def to_hare_type(entity_type: str) -> str:
    """The HARE type an entity type counts as (HARE's own types map to themselves)."""
    return (
        entity_type
        if entity_type in HARE_TYPES
        else _HARE_MAP.get(entity_type, "diagnosis_descriptor")
    )


@dataclass(frozen=True)
class Section:
    """A run of the report under one heading (or the whole text when there are none)."""

    kind: str  # one of SECTION_KINDS
    title: str  # heading as written ("Final Diagnosis"), "" when none
    start: int  # offset of the section body in the cleaned text
    end: int


@dataclass(frozen=True)
class Sentence:
    """A sentence or bullet item, with the kind of the section it is in."""

    text: str
    start: int
    end: int
    section: str  # section kind


@dataclass
class ParsedReport:
    """A cleaned report split into sections and sentences, with what cleaning had to say."""

    text: str  # the cleaned text all offsets refer to
    sections: list[Section] = field(default_factory=list)
    sentences: list[Sentence] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def section_at(self, offset: int) -> str:
        """Kind of the section that holds character ``offset`` ("other" outside all)."""
        for s in self.sections:
            if s.start <= offset < s.end:
                return s.kind
        return "other"

    def sentence_index(self, offset: int) -> int | None:
        """Index of the sentence that holds ``offset``, or None (a binary search: sentences are
        in text order and do not overlap)."""
        i = bisect.bisect_right(self._starts, offset) - 1
        if i >= 0 and offset < self.sentences[i].end:
            return i
        return None

    @functools.cached_property
    def _starts(self) -> list[int]:
        return [s.start for s in self.sentences]


@runtime_checkable
class EntityExtractor(Protocol):
    """Finds entities in a report: ``extract(text)`` → entities with offsets into ``text``."""

    name: str

    def extract(self, report_text: str) -> list[Entity]: ...


@runtime_checkable
class ParsedEntityExtractor(EntityExtractor, Protocol):
    """An extractor that also takes a report already parsed (the lexicon's): given
    :func:`~pathgls.text.sections.parse_report`'s result, it finds the same entities as
    ``extract(parsed.text)`` without splitting the report again."""

    def extract_parsed(self, parsed: ParsedReport) -> list[Entity]: ...


#: The extractor registry: factories ``(argument, **options) -> EntityExtractor`` (filled by the
#: backend modules on import of ``pathgls.text``). An entry's ``meta["options"]`` names the
#: keyword options its factory takes (e.g. HARE passes ``threshold`` to ``hf-ner``).
EXTRACTORS: Registry[EntityExtractor] = Registry("extractor", label="entity extractor")
register_extractor = EXTRACTORS.register
