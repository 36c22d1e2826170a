"""The report as statements: every entity with its polarity, sentence and scope.

Logic compares *statements*: "lymphovascular invasion is present" (affirmed), "no necrosis"
(denied), "possible perineural invasion" (uncertain: never compared). A statement knows its
sentence (what an NLI model is shown), its clause and its :class:`~pathgls.types.Scope` (which
tissue it is about, :mod:`pathgls.text.scope`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pathgls.text.analyze import AnalyzedReport
from pathgls.text.scope import GENERIC_LESIONS
from pathgls.types import Entity, Scope

#: Entity types that make a sentence a diagnosis statement.
DIAGNOSIS_TYPES = frozenset({"pathological_diagnosis"})
#: Entity types that state findings (premises of the report's diagnoses).
FINDING_TYPES = frozenset(
    {
        "morphology_finding",
        "grade",
        "stage",
        "margin",
        "lymphovascular_invasion",
        "perineural_invasion",
        "lymph_node_involvement",
        "metastasis",
        "ihc_marker",
        "ihc_modifier",
        "biomarker_result",
        "diagnosis_descriptor",
    }
)
_NOT_CERTAIN = ("hypothetical", "historical", "family")


@dataclass(frozen=True, eq=False)
class Statement:
    """One entity of the report, as a claim about some tissue."""

    index: int  # into the report's entities
    entity: Entity
    sentence: int  # into the report's sentences
    scope: Scope
    clause: tuple[int, int]  # character span of its clause in the report text

    @property
    def concept(self) -> str:
        """The canonical concept (lower-case text when the extractor gives none)."""
        return self.entity.concept or self.entity.text.lower().strip()

    @property
    def type(self) -> str:
        """The entity type."""
        return self.entity.type

    def attr(self, key: str) -> str:
        """An attribute of the entity ("" when absent)."""
        return self.entity.attributes.get(key, "")

    def attrs(self, key: str) -> set[str]:
        """A comma-separated attribute as a set ("depends_on", "implies")."""
        return {v.strip() for v in self.attr(key).split(",") if v.strip()}

    @property
    def certain(self) -> bool:
        """Not hedged, hypothetical, historical or about family history."""
        e = self.entity
        return not e.uncertain and not any(e.attributes.get(k) == "yes" for k in _NOT_CERTAIN)

    @property
    def affirmed(self) -> bool:
        """A certain, positive statement."""
        return self.certain and not self.entity.negated

    @property
    def denied(self) -> bool:
        """A certain negation ("no necrosis", "negative for malignancy")."""
        return self.certain and self.entity.negated

    @property
    def generic(self) -> bool:
        """A lesion word that names no particular lesion ("tumor", "carcinoma")."""
        return self.concept in GENERIC_LESIONS

    def describe(self) -> str:
        """The entity as written, with its polarity ("¬necrosis", "?LVI")."""
        mark = "¬" if self.entity.negated else "?" if not self.certain else ""
        return f"{mark}{self.entity.text}"


@dataclass
class ReportStatements:
    """The statements of one analysed report, with the sentences they come from."""

    report: AnalyzedReport
    statements: list[Statement] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The cleaned report text."""
        return self.report.text

    def sentence(self, index: int) -> str:
        """The text of sentence ``index``."""
        return self.report.parsed.sentences[index].text

    def clause_text(self, s: Statement) -> str:
        """The text of a statement's clause."""
        return self.text[s.clause[0] : s.clause[1]]

    def of_types(self, *types: str) -> list[Statement]:
        """Statements whose entity has one of ``types``."""
        return [s for s in self.statements if s.type in types]

    def main_lesion(self) -> str | None:
        """The first named, affirmed malignant diagnosis: what "the tumour" refers to."""
        for s in self.statements:
            if (
                s.type in DIAGNOSIS_TYPES
                and s.affirmed
                and not s.generic
                and s.attr("behavior") == "malignant"
                and "metastasis" not in s.attrs("depends_on")
            ):
                return s.concept
        return None


#: The same claim about the same tissue counts this many times at most: a report that repeats a
#: sentence a thousand times says nothing new after the first few (and must not cost n²).
MAX_REPEATS = 3


def report_statements(report: AnalyzedReport) -> ReportStatements:
    """Every entity of ``report`` that lies in a sentence, as a :class:`Statement`.

    A statement repeated word for word about the same tissue (same type, concept, polarity,
    attributes and scope) is kept :data:`MAX_REPEATS` times.
    """
    scopes = report.scopes
    out = ReportStatements(report=report)
    seen: dict[tuple[object, ...], int] = {}
    for i, e in enumerate(report.entities):
        k = report.parsed.sentence_index(e.start)
        if k is None:
            continue
        scope = scopes.entity_scopes[i]
        key = (
            e.type,
            e.concept,
            e.negated,
            e.uncertain,
            tuple(sorted(e.attributes.items())),
            scope,
        )
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > MAX_REPEATS:
            continue
        out.statements.append(
            Statement(index=i, entity=e, sentence=k, scope=scope, clause=scopes.clauses[i])
        )
    return out
