"""Scope: which tissue a statement of the report is about.

A statement about the left breast does not contradict one about the right breast; "no
metastasis in the remaining nodes" says nothing about the nodes already reported positive; a
negated carcinoma "at the margins" is about the margins, not the tumour. :func:`infer_scopes`
gives every entity of a report a :class:`~pathgls.types.Scope`:

* **part** — the specimen part label ("A", "2") from "Part 2:", "Specimen A:", "A." or "1)" at
  the start of a line, inherited by the following sentences until the next label;
* **organ** and **side** — from the anatomical site nearest to the entity in its clause (a site's
  organ is the root of its ``part_of`` chain: nipple → breast), else from a site label that
  opens the sentence or block ("Left breast, lumpectomy: ...", "Uterus: ..."), else from the
  organ a diagnosis names itself (``site=breast`` on invasive ductal carcinoma);
* **station** — for statements about lymph nodes: the node site ("sentinel lymph node",
  "non-sentinel lymph node", "pelvic lymph node"), its level ("level 11") and side;
* **locus** — ``margin`` for a statement made about the margins ("no carcinoma at the margins");
* **lesion** — the diagnosis a grade, marker result or size is said of ("high-grade DCIS",
  "the mucinous carcinoma was positive for WT1");
* **quantifier** — ``partial`` when the statement is about some members of a set only
  ("the remaining nodes", "one of the sentinel nodes", "additional", "most"), ``all`` when it is
  explicitly about all of them ("all margins", "all lymph nodes").

Clauses are the parts of a sentence between ``;`` and contrastive or coordinating joints ("but",
"while", "whereas", ", and"). Nothing is inherited across a sentence except the part label and
a site label written as a heading (alone on its line, or opening a block).
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar, cast

from pathgls.text.base import ParsedReport
from pathgls.types import Entity, Scope

T = TypeVar("T")

#: Lesion words that name "the tumour" without saying which: they bind to no particular lesion.
GENERIC_LESIONS = frozenset(
    {"tumor", "mass", "lesion", "neoplasm", "neoplasia", "carcinoma", "malignancy", "cancer"}
)
#: Organs that are parts of others (beyond the lexicon's ``part_of``): their scope is the whole.
_ORGAN_OF = {"lung lobe": "lung", "nipple": "breast", "endometrium": "uterus"}
_NODE_ROOT = "lymph node"

_PART_LABEL = re.compile(
    r"^[ \t]*(?:[-*•][ \t]*)?(?:(?:part|specimen|container|jar|block)[ \t]*(?:no\.?|#)?[ \t]*"
    r"(?P<named>[A-Z]{1,2}\d?|\d{1,2}[A-Z]?)\b[ \t]*[.:)\-–]?"
    r"|\(?(?P<bare>[A-Z]|\d{1,2})[.)](?=[ \t]+\S))",
    re.I,
)
_CLAUSE_JOINT = re.compile(
    r";|[()]|\b(?:but|however|whereas|while|although|though|except|respectively)\b"
    r"|,\s+with\b(?=[^,;]*\b(?:nodes?|margins?)\b)"
    r"|,\s+and\b(?=\s+(?:the|there|no|a|an|its|this|these|those|it|all|both)\b"
    r"(?:\s+[\w/-]+){0,6}?\s+(?:is|are|was|were|shows?|showed|has|have|had|extends?"
    r"|extending|involves?|demonstrates?|reveals?|measures?)\b)",
    re.I,
)
_PARTIAL = re.compile(
    r"\b(?:remaining|remainder|rest\s+of|other|additional|further|most|some|several|many|few"
    r"|one|two|three|four|five|six|seven|eight|nine|ten|\d{1,3})\s+(?:of\s+)?(?:the\s+)?"
    r"(?:\w+\s+){0,4}?(?:lymph\s+)?(?:nodes?|margins?)\b"
    r"|\b(?:remaining|remainder|rest\s+of|additional|residual|other)\b"
    r"|\bseparate(?:ly)?\s+(?:submitted|specimens?|parts?|wedges?|biops(?:y|ies))\b"
    # some lesions of several: "the two smaller nodules", "a second lesion", "another polyp"
    r"|\b(?:another|second|third|satellite|smaller)\s+(?:\w+\s+)?"
    r"(?:nodules?|lesions?|masses|mass|polyps?|foci|focus|tumou?rs?)\b"
    r"|\b(?:two|three|four|five|six|seven|eight|nine|ten|\d{1,2})\s+(?!(?:mm|cm)\b)(?:\w+\s+)?"
    r"(?:nodules|lesions|masses|polyps|foci|tumou?rs)\b",
    re.I,
)
_PARTIAL_WORDS = frozenset(
    {"remaining", "remainder", "rest", "additional", "residual", "other", "separate", "separately"}
    | {"another", "second", "third", "satellite", "smaller"}
)
_ALL = re.compile(
    r"\b(?:all|each|every|none\s+of\s+the|both)\b(?:\s+\w+){0,3}?\s+(?:lymph\s+)?"
    r"(?:nodes?|margins?)\b",
    re.I,
)
_LEVEL = re.compile(r"\blevels?\s+(?P<level>\d{1,2}[a-c]?|[IVX]{1,4}[ab]?)\b", re.I)
_NON_SENTINEL = re.compile(r"\bnon-?\s*$", re.I)
_BOTH_SIDES = re.compile(r"\b(?:right\s+and\s+left|left\s+and\s+right|bilateral|both)\b", re.I)
_SIDE = re.compile(r"\b(left|right|contralateral)\b", re.I)
#: Procedures that name their organ ("Contralateral prophylactic mastectomy:").
_PROCEDURE_ORGANS = (
    (re.compile(r"mastectomy|lumpectomy|mammoplasty|quadrantectomy", re.I), "breast"),
    (re.compile(r"hysterectomy", re.I), "uterus"),
    (re.compile(r"nephrectomy", re.I), "kidney"),
    (re.compile(r"prostatectomy", re.I), "prostate"),
    (re.compile(r"lobectomy|pneumonectomy|segmentectomy", re.I), "lung"),
    (re.compile(r"colectomy", re.I), "colon"),
    (re.compile(r"cystectomy", re.I), "urinary bladder"),
    (re.compile(r"gastrectomy", re.I), "stomach"),
    (re.compile(r"thyroidectomy", re.I), "thyroid"),
    (re.compile(r"oophorectomy", re.I), "ovary"),
    (re.compile(r"cholecystectomy", re.I), "gallbladder"),
)
#: A site followed by one of these names a procedure ("vaginal hysterectomy"), not a place.
_PROCEDURE_AFTER = re.compile(
    r"\s*(?:[\w-]+ectomy|[\w-]+otomy|biops(?:y|ies)|resection|excision|dissection"
    r"|exenteration)\b",
    re.I,
)
_MARGIN_WORDS = re.compile(r"\b(?:margins?|resection\s+lines?|inked\s+surfaces?)\b", re.I)
_LABEL_END = re.compile(r"(?P<label>[^:.;\n]{2,80}?):(?:\s|$)")
_LABEL_SITES_ONLY = frozenset({"anatomical_site"})
#: Entity types a site label may contain besides sites (procedures are not in the lexicon).
_LABEL_ALLOWED = frozenset({"anatomical_site", "size", "diagnosis_descriptor"})
#: Diagnoses whose name says the lesion, for binding grades, markers and sizes to a lesion.
_LESION_TYPES = frozenset({"pathological_diagnosis"})
_NODE_TYPES = frozenset({"lymph_node_involvement"})


@dataclass
class ScopeMap:
    """The scope of every entity of a report, and what each sentence inherits."""

    entity_scopes: list[Scope] = field(default_factory=list)
    sentence_scopes: list[Scope] = field(default_factory=list)
    clauses: list[tuple[int, int]] = field(default_factory=list)  # per entity: its clause span


def organ_of(entity: Entity) -> str | None:
    """The organ a site entity belongs to (the root of its ``part_of`` chain); None for nodes."""
    concept = entity.concept or entity.text.lower()
    root = entity.attributes.get("part_of") or concept
    root = _ORGAN_OF.get(root, root)
    return None if root == _NODE_ROOT else root


def is_node_site(entity: Entity) -> bool:
    """Whether a site entity names lymph nodes."""
    concept = entity.concept or ""
    return entity.type == "anatomical_site" and (
        concept == _NODE_ROOT or entity.attributes.get("part_of") == _NODE_ROOT
    )


def clause_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The clauses of ``text[start:end]`` (see the module docstring)."""
    cuts = [start]
    for m in _CLAUSE_JOINT.finditer(text, start, end):
        cuts.append(m.start())
    cuts.append(end)
    return [(a, b) for a, b in itertools.pairwise(cuts) if a < b]


_UNSET = object()
#: Entities of a clause an entity's scope looks at: the nearest this many (no real clause holds
#: more; a clause of 6,000 entities made scoping quadratic: 176 s).
NEAREST = 64


class _Clauses:
    """The clauses of one sentence, found once, and what each entity's scope asks of them:
    its clause (by bisection), the members near it, and per-clause facts computed once (what
    used to be recomputed per entity, quadratic in a clause of thousands of entities)."""

    def __init__(
        self, text: str, start: int, end: int, entities: Sequence[Entity], members: list[int]
    ) -> None:
        self.text, self.start, self.end, self.entities = text, start, end, entities
        self.spans = clause_spans(text, start, end)
        self.starts = [a for a, _ in self.spans]
        ordered = sorted(members, key=lambda j: entities[j].start)
        self.order = ordered
        self.member_starts = [entities[j].start for j in ordered]
        self.memo: dict[tuple[str, int, int], object] = {}

    def of(self, e: Entity) -> tuple[int, int]:
        k = bisect.bisect_right(self.starts, e.start) - 1
        if 0 <= k < len(self.spans) and self.spans[k][0] <= e.start < self.spans[k][1]:
            return self.spans[k]
        return self.start, self.end

    def before(self, at: int) -> int:
        """The start of the clause before the one starting at ``at`` (else the sentence's)."""
        k = bisect.bisect_left(self.starts, at) - 1
        return self.starts[k] if k >= 0 else self.start

    def _range(self, lo: int, hi: int) -> tuple[int, int]:
        starts = self.member_starts
        return bisect.bisect_left(starts, lo), bisect.bisect_left(starts, hi)

    def has_site(self, clause: tuple[int, int]) -> bool:
        def find() -> bool:
            a, b = self._range(*clause)
            return any(self.entities[j].type == "anatomical_site" for j in self.order[a:b])

        return bool(self.fact("site", clause, find))

    def near(self, i: int, clause: tuple[int, int]) -> list[int]:
        """The members in ``clause`` other than ``i``, at most :data:`NEAREST` of them (the
        nearest to ``i`` by position), in their order."""
        a, b = self._range(*clause)
        if b - a <= NEAREST + 1:
            return sorted(j for j in self.order[a:b] if j != i)
        at = bisect.bisect_left(self.member_starts, self.entities[i].start, a, b)
        lo = max(a, min(at - NEAREST // 2, b - NEAREST - 1))
        return sorted([j for j in self.order[lo : lo + NEAREST + 1] if j != i][:NEAREST])

    def fact(self, name: str, clause: tuple[int, int], compute: Callable[[], T]) -> T:
        """``compute()`` for ``clause``, computed once."""
        key = (name, *clause)
        if key not in self.memo:
            self.memo[key] = compute()
        return cast(T, self.memo[key])  # stored by this method under this name: a T


def infer_scopes(parsed: ParsedReport, entities: Sequence[Entity]) -> ScopeMap:
    """Scopes of ``entities`` (offsets into ``parsed.text``), see the module docstring."""
    text = parsed.text
    sentences = parsed.sentences
    starts = [s.start for s in sentences]
    by_sentence: dict[int, list[int]] = {}
    for i, e in enumerate(entities):
        k = bisect.bisect_right(starts, e.start) - 1
        if 0 <= k < len(sentences) and e.start < sentences[k].end:
            by_sentence.setdefault(k, []).append(i)
    out = ScopeMap(
        entity_scopes=[Scope() for _ in entities], clauses=[(e.start, e.end) for e in entities]
    )
    part: str | None = None
    header = Scope()
    header_sticky = False
    prev_end = 0
    for k, sent in enumerate(sentences):
        members = by_sentence.get(k, [])
        gap = text[prev_end : sent.start]
        new_block = "\n" in gap or k == 0
        line_start = text.rfind("\n", 0, sent.start) + 1
        lead = text[line_start : sent.start] + sent.text[:24]
        label = _PART_LABEL.match(lead)
        if label is not None:
            part = (label.group("named") or label.group("bare")).upper()
            header, header_sticky = Scope(), False
        elif new_block and not header_sticky:
            header = Scope()
        label_start = sent.start
        if label is not None:  # "Part 3: Sentinel lymph node, left axilla:": the site follows
            label_start = max(sent.start, line_start + label.end())
            label_start += len(text[label_start : sent.end]) - len(
                text[label_start : sent.end].lstrip()
            )
        own = _site_label(text, label_start, sent.end, [entities[i] for i in members])
        if own is not None:
            header = own
            # A label alone on its line ("Left breast, lumpectomy:") heads what follows; one
            # with text after it heads the rest of its block.
            header_sticky = not text[label_start : sent.end].split(":", 1)[1].strip()
        elif not header_sticky and _leads_with_site(sent.start, [entities[i] for i in members]):
            header = Scope()  # "Breast left, excision showed ...": a new subject ends the label
        base = Scope(part=part, organ=header.organ, side=header.side, station=header.station)
        out.sentence_scopes.append(base)
        clauses = _Clauses(text, sent.start, sent.end, entities, members)
        for i in members:
            clause = clauses.of(entities[i])
            if text[clause[0] : clause[0] + 1] == "(" and not clauses.has_site(clause):
                # "(no dysplasia or malignancy)": about what the parenthesis follows
                clause = (clauses.before(clause[0]), clause[1])
            out.clauses[i] = clause
            near = clauses.near(i, clause)
            out.entity_scopes[i] = _entity_scope(text, entities, i, near, clause, base, clauses)
        prev_end = sent.end
    _modifiers_take_their_lesion(entities, out)
    return out


_MODIFIER_TYPES = frozenset({"diagnosis_descriptor", "grade"})


def _modifiers_take_their_lesion(entities: Sequence[Entity], out: ScopeMap) -> None:
    """A descriptor or grade without a place of its own is where the lesion it is said of is."""
    heads: dict[tuple[str, tuple[int, int]], int] = {}  # (lesion, clause) → its first entity
    for j, d in enumerate(entities):
        if d.type in _LESION_TYPES:
            heads.setdefault((d.concept or d.text.lower(), out.clauses[j]), j)
    for i, e in enumerate(entities):
        scope = out.entity_scopes[i]
        if e.type not in _MODIFIER_TYPES or scope.lesion is None or scope.organ is not None:
            continue
        head = heads.get((scope.lesion, out.clauses[i]))
        if head is not None:
            lesion_scope = out.entity_scopes[head]
            out.entity_scopes[i] = dataclasses.replace(
                scope, organ=lesion_scope.organ, side=scope.side or lesion_scope.side
            )


def _leads_with_site(start: int, members: list[Entity]) -> bool:
    """Whether a sentence opens with a place of its own (within its first words)."""
    return any(e.type == "anatomical_site" and e.start - start <= 30 for e in members)


def _site_label(text: str, start: int, end: int, members: list[Entity]) -> Scope | None:
    """The scope a leading ``Site, procedure:`` label of a sentence sets, if it has one."""
    m = _LABEL_END.match(text, start, end)
    if m is None:
        return None
    label_end = m.end("label")
    inside = [e for e in members if e.end <= label_end]
    if any(e.type not in _LABEL_ALLOWED for e in inside):
        return None
    label = text[start:label_end]
    sites = [e for e in inside if e.type in _LABEL_SITES_ONLY]
    side = _side(label)
    if not sites:  # "Contralateral prophylactic mastectomy:" names organ and side by procedure
        organ = next((o for p, o in _PROCEDURE_ORGANS if p.search(label)), None)
        return Scope(organ=organ, side=side) if organ else None
    organs = {o for o in (organ_of(e) for e in sites) if o}
    nodes = [e for e in sites if is_node_site(e)]
    if nodes:
        side = nodes[0].attributes.get("laterality") or side
        return Scope(station=_station(text, nodes[0], start, label_end), side=side)
    return Scope(organ=next(iter(organs)) if len(organs) == 1 else None, side=side)


def _side(text: str) -> str | None:
    if _BOTH_SIDES.search(text):
        return "bilateral"
    sides = {m.group(1).lower() for m in _SIDE.finditer(text)}
    return sides.pop() if len(sides) == 1 else None


#: Station words inside a lymph-node count ("4 of 8 peribronchial lymph nodes"), named as the
#: lexicon's node sites are.
_COUNT_STATIONS = (
    (re.compile(r"non-?\s*sentinel", re.I), "non-sentinel lymph node"),
    (re.compile(r"sentinel", re.I), "sentinel lymph node"),
    (re.compile(r"axillary", re.I), "axillary lymph node"),
    (re.compile(r"intramammary", re.I), "intramammary lymph node"),
    (re.compile(r"pelvic|obturator|iliac|hypogastric", re.I), "pelvic lymph node"),
    (re.compile(r"regional", re.I), "regional lymph node"),
    (re.compile(r"mediastinal|paratracheal|subcarinal", re.I), "mediastinal lymph node"),
    (re.compile(r"hilar|peribronchial|interlobar", re.I), "hilar lymph node"),
    (re.compile(r"cervical|neck", re.I), "cervical lymph node"),
    (re.compile(r"mesenteric|pericolic|pericolonic|perirectal", re.I), "mesenteric lymph node"),
)


def _count_station(text: str, e: Entity, lo: int, hi: int) -> str:
    """The station a node count names in its words or just before ("sentinel nodes: 1/3")."""
    own, before = text[e.start : e.end], text[max(lo, e.start - 25) : e.start]
    name = next((n for p, n in _COUNT_STATIONS if p.search(own) or p.search(before)), _NODE_ROOT)
    level = _LEVEL.search(own) or _LEVEL.search(before)
    return f"{name} level {level.group('level').lower()}" if level else name


def _station(text: str, site: Entity, lo: int, hi: int, *, level: object = _UNSET) -> str:
    """A node station: the node site's concept, qualified by "non-" and its level (``level``:
    ``_LEVEL.search(text, lo, hi)`` when already found)."""
    name = site.concept or _NODE_ROOT
    if _NON_SENTINEL.search(text[max(lo, site.start - 5) : site.start]) and "sentinel" in name:
        name = "non-" + name
    if level is _UNSET:
        level = _LEVEL.search(text, lo, hi)
    return f"{name} level {level.group('level').lower()}" if level else name  # type: ignore[attr-defined]


#: Entity types that make a statement: a site between one of them and a statement is theirs.
_STATEMENT_TYPES = frozenset(
    {
        "pathological_diagnosis",
        "metastasis",
        "morphology_finding",
        "lymphovascular_invasion",
        "perineural_invasion",
        "lymph_node_involvement",
        "margin",
    }
)
#: A diagnosis between a site and a statement takes the site for itself.
_BLOCKING_TYPES = frozenset({"pathological_diagnosis", "metastasis"})
#: Findings whose site is the structure invaded, not the organ of the tumour.
_INVASION_GROUPS = frozenset({"invasion", "lvi", "pni", "extranodal_extension"})


def _is_invasion(e: Entity) -> bool:
    """An invasion finding, whose site is the structure invaded, not where it was seen."""
    return e.attributes.get("group") in _INVASION_GROUPS and e.type != "pathological_diagnosis"


#: Concepts that are about lymph nodes whatever the sentence says.
_NODAL_CONCEPTS = frozenset({"nodal metastasis", "node-negative", "node-positive"})
#: Tissues that are no organ of their own: a statement placed in them keeps its organ.
_TISSUES = frozenset(
    {
        "soft tissue",
        "stroma",
        "mucosa",
        "submucosa",
        "muscularis propria",
        "blood vessel",
        "nerve",
        "skeletal muscle",
        "cartilage",
    }
)


def _own_sites(
    text: str, entities: Sequence[Entity], e: Entity, sites: list[Entity]
) -> list[Entity]:
    """The sites of a clause that belong to ``e``: no other statement stands between them, and
    the site names a place, not a procedure ("vaginal hysterectomy")."""
    others = [x for x in entities if x.type in _BLOCKING_TYPES and x is not e]
    out = []
    for site in sites:
        if _PROCEDURE_AFTER.match(text, site.end):
            continue
        if site.start < e.start and e.negated and not _is_invasion(e):
            out.append(site)  # "The right breast shows fibrocystic change and no malignancy"
            continue
        lo, hi = sorted((site.start, e.start))
        between = [x for x in others if lo < x.start < hi and not _coordinated(text, e, x)]
        if not between:
            out.append(site)
    return out


_COORDINATION = re.compile(r"\s*(?:,|and|or|nor|/|,\s*and|,\s*or)\s*")


def _listed_with(text: str, sites: list[Entity], first: Entity) -> list[Entity]:
    """``first`` and the sites that follow it in one list ("ovaries and fallopian tubes")."""
    out = [first]
    for site in sorted(sites, key=lambda x: x.start):
        if site.start > out[-1].start and _COORDINATION_GAP.fullmatch(
            text[out[-1].end : site.start]
        ):
            out.append(site)
    return out


_COORDINATION_GAP = re.compile(
    r"[\s,]*(?:(?:and|or)\s+)?(?:the\s+)?(?:bilateral\s+|left\s+|right\s+)?", re.I
)
#: Structures of an organ that a negation may be about alone ("the serosa is free of tumour").
_STRUCTURES = re.compile(
    r"\b(?:serosa|serosal|subserosa|stroma|capsule|wall|surface|fat|parametri(?:um|a))\b", re.I
)


def _coordinated(text: str, a: Entity, b: Entity) -> bool:
    """Whether two entities are items of one list ("no atypia or carcinoma"): what one says
    of a place, the other says too."""
    first, second = sorted((a, b), key=lambda x: x.start)
    return bool(_COORDINATION.fullmatch(text[first.end : second.start]))


def _site_side(text: str, site: Entity) -> str | None:
    """The side of a site: "right and left ureters" is bilateral, else the site's laterality."""
    before = text[max(0, site.start - 25) : site.start]
    if _BOTH_SIDES.search(before + text[site.start : site.end]):
        return "bilateral"
    if re.search(r"\bcontralateral\s+(?:\w+\s+)?$", before, re.I):
        return "contralateral"
    return site.attributes.get("laterality")


def _entity_scope(
    text: str,
    entities: Sequence[Entity],
    i: int,
    in_clause: list[int],
    clause: tuple[int, int],
    base: Scope,
    clauses: _Clauses,
) -> Scope:
    """The scope of entity ``i``; ``in_clause``: the other entities of its clause (the nearest
    :data:`NEAREST`), ``clauses``: the facts of its sentence's clauses, computed once."""
    e = entities[i]
    lo, hi = clause
    clause_entities = [entities[j] for j in in_clause]
    sites = _own_sites(
        text, clause_entities, e, [x for x in clause_entities if x.type == "anatomical_site"]
    )
    node_sites = [x for x in sites if is_node_site(x)]
    organ_sites = [x for x in sites if not is_node_site(x) and organ_of(x) not in _TISSUES]
    clause_text = str(clauses.fact("text", clause, lambda: text[lo:hi]))
    organ, side, station, locus = base.organ, base.side, base.station, None
    invasion = _is_invasion(e)
    counts = [x for x in clause_entities if x.type in _NODE_TYPES]
    nodal = (
        e.type in _NODE_TYPES
        or (e.concept or "") in _NODAL_CONCEPTS
        or bool(node_sites)
        or is_node_site(e)
        or (bool(counts) and e.type in _BLOCKING_TYPES)  # "2 of 10 nodes positive for carcinoma"
    )
    if e.type == "anatomical_site":
        organ = organ_of(e)
        side = e.attributes.get("laterality") or side
    elif invasion:
        target = [x for x in sites if not is_node_site(x)]
        structure = e.attributes.get("site") or (organ_of(_nearest(e, target)) if target else None)
        locus = structure
    elif organ_sites and not nodal:
        site = _nearest(e, organ_sites, text)
        roots = sorted({r for r in (organ_of(x) for x in organ_sites) if r})
        listed = _listed_with(text, organ_sites, organ_sites[0])
        if e.negated and len(roots) > 1 and len(listed) > 1:
            # "ovaries and fallopian tubes are negative": each of them
            organ = "|".join(sorted({r for r in (organ_of(x) for x in listed) if r}))
            side = _site_side(text, site) or base.side
        elif e.negated and len(roots) > 1:  # "the adrenal received with the kidney is free"
            organ = organ_of(organ_sites[0])
            side = _site_side(text, organ_sites[0]) or base.side
        elif len(roots) == 1 or abs(site.start - e.start) <= 25:
            organ = organ_of(site)
            side = _site_side(text, site) or base.side
        parts = [x for x in organ_sites if x.attributes.get("part_of")]
        if parts and organ is not None:  # "the nipple is free of ...", "in the right upper lobe"
            locus = "|".join(sorted({x.concept for x in parts}))
        structures = clauses.fact(
            "structures",
            clause,
            lambda: {m.group(0).lower() for m in _STRUCTURES.finditer(clause_text)},
        )
        if e.negated and structures and locus is None:  # "the serosa is free of tumour"
            locus = "|".join(sorted(structures))
    if organ is None and e.attributes.get("site") and not nodal and not invasion:
        organ = _ORGAN_OF.get(e.attributes["site"], e.attributes["site"])
    if nodal:
        site_e = e if is_node_site(e) else (_nearest(e, node_sites, text) if node_sites else None)
        if e.type in _NODE_TYPES or (site_e is None and counts):  # a count names its station
            count = e if e.type in _NODE_TYPES else counts[0]
            station = _count_station(text, count, lo, hi)
            side = _side(text[count.start : count.end]) or clauses.fact(
                "side", clause, lambda: _side(clause_text)
            )
        elif site_e is not None:
            level = clauses.fact("level-at", clause, lambda: _LEVEL.search(text, lo, hi))
            station = _station(text, site_e, lo, hi, level=level)
            side = _site_side(text, site_e)

        else:
            level = clauses.fact("level", clause, lambda: _LEVEL.search(clause_text))
            station = station or (
                f"{_NODE_ROOT} level {level.group('level').lower()}" if level else _NODE_ROOT
            )
            side = clauses.fact("side", clause, lambda: _side(clause_text)) or (
                side if base.station else None
            )
        if station == _NODE_ROOT and base.station:  # "lymph nodes" under "Sentinel node:"
            station, side = base.station, side or base.side
        organ = None
    if (
        locus is None
        and e.type != "margin"
        and (
            any(x.type == "margin" for x in clause_entities)
            or clauses.fact("margin", clause, lambda: _MARGIN_WORDS.search(clause_text))
        )
    ):
        locus = "margin"
    return Scope(
        part=base.part,
        organ=organ,
        side=side,
        station=station,
        locus=locus,
        lesion=_lesion(entities, e, in_clause),
        quantifier=_quantifier(
            e,
            lo,
            clauses.fact("all", clause, lambda: _ALL.search(clause_text) is not None),
            clauses.fact("partial", clause, lambda: list(_PARTIAL.finditer(clause_text))),
        ),
    )


_PLACE_PREPOSITION = re.compile(
    r"\b(?:in|of|at|to|from|with|within|involving|into|on)\b(?:\s+(?:the|a|an|one|two|both|all))?"
)


def _nearest(e: Entity, candidates: list[Entity], text: str = "") -> Entity:
    """The site a statement is placed in: one introduced by a preposition right after it ("no
    tumour in the right pelvic node"), else the nearest."""
    if text:
        after = sorted((c for c in candidates if 0 <= c.start - e.end <= 60), key=lambda c: c.start)
        for c in after:
            if _PLACE_PREPOSITION.search(text, e.end, c.start):
                return c
    return min(candidates, key=lambda c: (abs(c.start - e.start), c.start < e.start))


def _lesion(entities: Sequence[Entity], e: Entity, in_clause: list[int]) -> str | None:
    """The named diagnosis the statement is about (None: the report's main lesion)."""
    if e.type in _LESION_TYPES:
        concept = e.concept or e.text.lower()
        return None if concept in GENERIC_LESIONS else concept
    named = [
        entities[j]
        for j in in_clause
        if entities[j].type in _LESION_TYPES
        and (entities[j].concept or entities[j].text.lower()) not in GENERIC_LESIONS
    ]
    if not named:
        return None
    # A modifier right before a diagnosis ("high-grade DCIS") is said of it; otherwise the
    # nearest diagnosis before the statement ("IDC, grade 3"), else the nearest after.
    after = [d for d in named if 0 <= d.start - e.end <= 3]
    if after:
        return after[0].concept
    before = [d for d in named if d.end <= e.start]
    chosen = max(before, key=lambda d: d.end) if before else min(named, key=lambda d: d.start)
    return chosen.concept or chosen.text.lower()


#: Statements whose truth depends on which members of a set of nodes or margins they are about.
_SET_TYPES = frozenset(
    {"lymph_node_involvement", "metastasis", "pathological_diagnosis", "margin", "anatomical_site"}
)


def _quantifier(e: Entity, lo: int, says_all: object, partial: object) -> str | None:
    """``partial`` / ``all`` when the statement speaks of part or all of a set.

    "Two of the nodes", "most nodes" make a statement about node or margin involvement partial;
    "remaining", "other", "additional", "residual" make any statement partial. ``says_all``:
    whether the clause (starting at ``lo``) matches ``_ALL``; ``partial``: its ``_PARTIAL``
    matches (both found once per clause).
    """
    if says_all:
        return "all"
    for m in partial:  # type: ignore[attr-defined]
        if m.group(0).split()[0].lower() not in _PARTIAL_WORDS and e.type not in _SET_TYPES:
            continue
        # a count about *these* nodes ("2 of 14 nodes") is the statement itself, not a part
        if (
            e.type == "lymph_node_involvement"
            and lo + m.start() >= e.start
            and (lo + m.end() <= e.end + 12)
        ):
            continue
        return "partial"
    return None
