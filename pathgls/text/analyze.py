"""One call from report text to sections, entities, relations, scopes and the report graph.

An :class:`AnalyzedReport` is the one reading of a report that every score module shares: the
entity view (sections, sentences, entities, relations, scopes) is made when it is analysed,
and the case model's view (its :class:`~pathgls.text.document.Document` and
:class:`~pathgls.text.case.Case`) the first time one is asked for, then kept — Logic reads
``report.case`` and never parses the report again.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pathgls.text.base import EntityExtractor, ParsedEntityExtractor, ParsedReport
from pathgls.text.relations import extract_relations
from pathgls.text.scope import ScopeMap, infer_scopes
from pathgls.text.sections import parse_report
from pathgls.types import Entity, Relation, ReportGraph

if TYPE_CHECKING:
    from pathgls.text.case import Case
    from pathgls.text.document import Document


@dataclass
class AnalyzedReport:
    """A report understood: its parse, entities (offsets into ``parsed.text``) and relations."""

    parsed: ParsedReport
    entities: list[Entity] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The cleaned report text."""
        return self.parsed.text

    @functools.cached_property
    def scopes(self) -> ScopeMap:
        """Which tissue each entity is about (:func:`~pathgls.text.scope.infer_scopes`)."""
        return infer_scopes(self.parsed, self.entities)

    @functools.cached_property
    def document(self) -> Document:
        """The report's regions, parts and statements (:mod:`pathgls.text.document`), read once.

        Read from ``text``, the cleaned text the entities' offsets refer to: cleaning it again
        changes nothing (the 1,820 TCGA reports: identical text, no new warning), so the
        Document is the one :func:`~pathgls.text.case.build_case` makes of ``text``.
        """
        from pathgls.text.document import parse_document  # the case model's view, when asked

        return parse_document(self.text)

    @functools.cached_property
    def case(self) -> Case:
        """The report's case model (:func:`~pathgls.text.case.build_case` of :attr:`document`)."""
        from pathgls.text.case import build_case

        return build_case(self.document)

    @property
    def graph(self) -> ReportGraph:
        """Entities, relations and scopes as a :class:`ReportGraph`."""
        return ReportGraph(
            entities=list(self.entities),
            relations=list(self.relations),
            scopes=list(self.scopes.entity_scopes),
        )

    def entities_by_sentence(self) -> dict[int, list[int]]:
        """Sentence index → indices of the entities that start in it."""
        out: dict[int, list[int]] = {}
        for i, e in enumerate(self.entities):
            s = self.parsed.sentence_index(e.start)
            if s is not None:
                out.setdefault(s, []).append(i)
        return out


def analyze_report(report: str | bytes, *, extractor: EntityExtractor) -> AnalyzedReport:
    """Clean and parse ``report``, extract entities with ``extractor`` and relate them.

    The extractor sees the cleaned text (cleaning is idempotent), so every offset refers to
    ``result.text``; a :class:`~pathgls.text.base.ParsedEntityExtractor` (the lexicon) is given
    this parse instead of parsing the text again. Warnings from cleaning (encoding, HTML,
    size, language) are kept.
    """
    parsed = parse_report(report)
    if isinstance(extractor, ParsedEntityExtractor):
        found = extractor.extract_parsed(parsed)
    else:
        found = extractor.extract(parsed.text)
    entities = sorted(found, key=lambda e: (e.start, e.end))
    relations = extract_relations(parsed, entities)
    return AnalyzedReport(
        parsed=parsed, entities=entities, relations=relations, warnings=list(parsed.warnings)
    )
