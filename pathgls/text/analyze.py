"""One call from report text to sections, entities, relations, scopes and the report graph."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from pathgls.text.base import EntityExtractor, ParsedReport
from pathgls.text.relations import extract_relations
from pathgls.text.scope import ScopeMap, infer_scopes
from pathgls.text.sections import parse_report
from pathgls.types import Entity, Relation, ReportGraph


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
    ``result.text``. Warnings from cleaning (encoding, HTML, size, language) are kept.
    """
    parsed = parse_report(report)
    entities = sorted(extractor.extract(parsed.text), key=lambda e: (e.start, e.end))
    relations = extract_relations(parsed, entities)
    return AnalyzedReport(
        parsed=parsed, entities=entities, relations=relations, warnings=list(parsed.warnings)
    )
