"""Report understanding: cleaning, sections, sentences, entities, relations, the report graph.

Entity extractors are built from specs through one registry: ``lexicon`` (default, offline:
medspaCy TargetMatcher over the project's pathology lexicon + ConText), ``hf-ner:<model>``
(token classification, e.g. HARE-NER, by repo id or local path) and ``llm:<base_url>#<model>``
(an OpenAI-compatible endpoint asked for JSON). Importing this package registers them without
loading any model.

The scoped report graph (:mod:`.scope`: which part, organ, side, node station each statement
is about) and the graph-consistency checks (:mod:`.consistency`) live here too, and what a
report diagnoses (:mod:`.diagnoses`: principal diagnoses, behaviour, key findings), shared by
DxAlign and the Stability dx Δ.

May import: core, :mod:`pathgls.config`, :mod:`pathgls.io`, :mod:`pathgls.hub`,
:mod:`pathgls.llm`.
"""

from __future__ import annotations

from pathgls.registry import RegistryEntry
from pathgls.text import hf_ner as _hf_ner  # noqa: F401  (registers "hf-ner")
from pathgls.text import lexicon_extractor as _lexicon  # noqa: F401  (registers "lexicon")
from pathgls.text import llm_extractor as _llm  # noqa: F401  (registers "llm")
from pathgls.text.analyze import AnalyzedReport, analyze_report
from pathgls.text.base import (
    ENTITY_TYPES,
    EXTRACTORS,
    HARE_TYPES,
    SECTION_KINDS,
    EntityExtractor,
    ParsedReport,
    Section,
    Sentence,
    to_hare_type,
)
from pathgls.text.clean import clean_report
from pathgls.text.sections import parse_report


def build_extractor(spec: str) -> EntityExtractor:
    """An entity extractor from a spec: ``lexicon``, ``hf-ner:<model>``, ``llm:<url>#<model>``.

    Raises:
        UnknownNameError: an unknown extractor (the message lists the known ones).
        ConfigError: a malformed spec.
    """
    return EXTRACTORS.build(spec)


def list_extractors() -> list[RegistryEntry[EntityExtractor]]:
    """The registered extractors, sorted by name."""
    return EXTRACTORS.entries()


__all__ = [
    "ENTITY_TYPES",
    "EXTRACTORS",
    "HARE_TYPES",
    "SECTION_KINDS",
    "AnalyzedReport",
    "EntityExtractor",
    "ParsedReport",
    "Section",
    "Sentence",
    "analyze_report",
    "build_extractor",
    "clean_report",
    "list_extractors",
    "parse_report",
    "to_hare_type",
]
