"""Rule-based relations between the entities of one report.

Relation types (head → tail):

* ``result_of``: an IHC/biomarker result → the marker it reports on ("ER-positive");
* ``modifier_of``: a descriptor, grade or size → the diagnosis or finding it qualifies;
* ``located_in``: a diagnosis or finding → the anatomical site it is in;
* ``supports``: an affirmed finding → a diagnosis stated elsewhere in the report (its first
  statement);
* ``same_as``: a later mention → the first mention of the same concept.

The first three are looked for inside one sentence (nearest candidate wins); ``supports`` links
findings to the report's diagnosis statements; ``same_as`` links repeated concepts.
"""

from __future__ import annotations

from collections.abc import Sequence

from pathgls.text.base import ParsedReport
from pathgls.types import Entity, Relation

RESULT_TYPES = frozenset({"ihc_modifier", "biomarker_result"})
MARKER_TYPES = frozenset({"ihc_marker"})
MODIFIER_TYPES = frozenset({"diagnosis_descriptor", "grade", "size"})
DIAGNOSIS_TYPES = frozenset({"pathological_diagnosis", "metastasis"})
FINDING_TYPES = frozenset(
    {
        "morphology_finding",
        "lymphovascular_invasion",
        "perineural_invasion",
        "lymph_node_involvement",
        "metastasis",
        "margin",
        "stage",
        "grade",
    }
)
SITE_TYPES = frozenset({"anatomical_site"})


def _sentence_of(parsed: ParsedReport, entities: Sequence[Entity]) -> list[int | None]:
    return [parsed.sentence_index(e.start) for e in entities]


def _nearest(i: int, candidates: Sequence[int], entities: Sequence[Entity]) -> int | None:
    if not candidates:
        return None
    e = entities[i]
    return min(candidates, key=lambda j: (abs(entities[j].start - e.start), j))


def extract_relations(parsed: ParsedReport, entities: Sequence[Entity]) -> list[Relation]:
    """Relations among ``entities`` (indices into that list), found by the rules above.

    Args:
        parsed: the report the entities were found in (for sentence boundaries).
        entities: its entities, offsets into ``parsed.text``.

    Returns:
        Relations, sorted by (head, tail, type), without duplicates.
    """
    sent = _sentence_of(parsed, entities)
    by_sentence: dict[int, list[int]] = {}
    for i, s in enumerate(sent):
        if s is not None:
            by_sentence.setdefault(s, []).append(i)
    rels: set[tuple[int, int, str]] = set()
    for members in by_sentence.values():
        for i in members:
            t = entities[i].type
            if t in RESULT_TYPES:
                tail = _nearest(
                    i, [j for j in members if entities[j].type in MARKER_TYPES], entities
                )
                if tail is not None:
                    rels.add((i, tail, "result_of"))
            elif t in MODIFIER_TYPES:
                targets = [
                    j
                    for j in members
                    if entities[j].type in DIAGNOSIS_TYPES | FINDING_TYPES and j != i
                ]
                tail = _nearest(i, targets, entities)
                if tail is not None:
                    rels.add((i, tail, "modifier_of"))
            if t in DIAGNOSIS_TYPES | FINDING_TYPES:
                site = _nearest(i, [j for j in members if entities[j].type in SITE_TYPES], entities)
                if site is not None:
                    rels.add((i, site, "located_in"))
    # With a diagnosis section, findings support the diagnoses stated there; without one, any
    # diagnosis stated in another sentence.
    has_dx_section = any(s.kind == "diagnosis" for s in parsed.sections)
    # the first statement of each diagnosis (later ones are linked to it by same_as), so a long
    # report stays linear in size rather than findings × diagnoses
    diagnoses = list(
        {
            e.concept or e.text.lower(): j
            for j, e in reversed(list(enumerate(entities)))
            if e.type == "pathological_diagnosis"
            and not e.negated
            and sent[j] is not None
            and (e.section == "diagnosis" or not has_dx_section)
        }.values()
    )
    for i, e in enumerate(entities):
        if e.type not in FINDING_TYPES or e.negated or sent[i] is None:
            continue
        for j in diagnoses:
            if sent[j] != sent[i]:
                rels.add((i, j, "supports"))
    first: dict[str, int] = {}
    for i, e in enumerate(entities):
        key = e.concept or e.text.lower()
        if key in first:
            rels.add((i, first[key], "same_as"))
        else:
            first[key] = i
    return [Relation(head=h, tail=t, type=r) for h, t, r in sorted(rels)]
