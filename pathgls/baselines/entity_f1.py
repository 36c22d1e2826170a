"""Exact-match entity F1 between a candidate report and its reference.

Both reports go through the same entity extractor (default: the offline ``lexicon`` backend,
``analyze_report(text, extractor=build_extractor("lexicon"))``). Each entity becomes a match key

    (HARE type, name[, negated])

where the HARE type is :func:`pathgls.text.base.to_hare_type` of the entity type (one of
HARE's five: anatomical_site, pathological_diagnosis, diagnosis_descriptor, ihc_marker,
ihc_modifier), the name is the entity's canonical concept when the extractor gives one (so
"IDC" and "invasive ductal carcinoma" match) and otherwise its normalised text (lower case,
whitespace collapsed, surrounding punctuation removed), and the negation flag is part of the
key only with ``use_negation=True`` ("no necrosis" then does not match "necrosis").

Keys are compared as **sets**: an entity repeated in a report counts once. With ``C`` the
candidate's keys and ``R`` the reference's: ``P = |C ∩ R| / |C|``, ``R = |C ∩ R| / |R|``,
``F1 = 2PR / (P + R)``.

Conventions: a side without entities gives 0 for the ratio it is the denominator of (and F1 0)
when the other side has some; when *neither* side has an entity the three values are
``EntityF1Config.no_entities`` (None by default: undefined, never an invented 1.0 — set 1.0 for
RadGraph-F1's convention). A pair whose candidate or reference text is empty scores 0.0 with an
:class:`~pathgls.baselines.lexical.EmptyTextWarning`, as in the other baselines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pathgls.baselines.lexical import check_pairs, empty_pairs
from pathgls.errors import ConfigError
from pathgls.text.base import HARE_TYPES, EntityExtractor, to_hare_type
from pathgls.types import Entity

__all__ = [
    "EntityF1Config",
    "EntityF1Result",
    "EntityKey",
    "entity_f1",
    "entity_f1_batch",
    "entity_f1_from_entities",
    "entity_key",
    "normalise_entity_text",
]

_SPACE = re.compile(r"\s+")
_EDGE_PUNCT = " \t\n.,;:!?()[]{}\"'`*-–—/"


@dataclass(frozen=True)
class EntityF1Config:
    """How entities are matched."""

    use_negation: bool = False  # the negated flag is part of the key
    use_concept: bool = True  # match on the canonical concept when there is one, else the text
    types: tuple[str, ...] | None = None  # HARE types counted (None: all five)
    no_entities: float | None = None  # P = R = F1 when neither side has an entity (None: undefined)

    def __post_init__(self) -> None:
        if self.types is not None:
            types = (self.types,) if isinstance(self.types, str) else tuple(self.types)
            unknown = [t for t in types if t not in HARE_TYPES]
            if unknown or not types:
                raise ConfigError(
                    f"EntityF1Config.types must be a non-empty subset of {', '.join(HARE_TYPES)}; "
                    f"got {self.types!r}"
                )
            object.__setattr__(self, "types", types)
        if self.no_entities is not None and (
            isinstance(self.no_entities, bool)
            or not isinstance(self.no_entities, int | float)
            or not 0.0 <= self.no_entities <= 1.0
        ):
            raise ConfigError(
                f"EntityF1Config.no_entities must be None or a number in [0, 1], got "
                f"{self.no_entities!r}"
            )


@dataclass(frozen=True, order=True)
class EntityKey:
    """What an entity is matched on."""

    type: str  # HARE type
    name: str  # canonical concept, or normalised text
    negated: bool | None = None  # None when negation is not part of the key


@dataclass(frozen=True)
class EntityF1Result:
    """Exact-match entity precision, recall and F1 of one candidate against its reference."""

    precision: float | None  # None only when neither side has an entity (see no_entities)
    recall: float | None
    f1: float | None
    matched: tuple[EntityKey, ...] = ()  # keys on both sides
    missing: tuple[EntityKey, ...] = ()  # reference keys the candidate lacks
    extra: tuple[EntityKey, ...] = ()  # candidate keys the reference lacks
    empty: bool = False  # candidate or reference text was empty: scored 0.0

    @property
    def n_candidate(self) -> int:
        """Distinct candidate keys."""
        return len(self.matched) + len(self.extra)

    @property
    def n_reference(self) -> int:
        """Distinct reference keys."""
        return len(self.matched) + len(self.missing)


def normalise_entity_text(text: str) -> str:
    """Lower case, whitespace collapsed, surrounding punctuation removed."""
    return _SPACE.sub(" ", text.lower()).strip(_EDGE_PUNCT)


def entity_key(entity: Entity, *, config: EntityF1Config | None = None) -> EntityKey | None:
    """The match key of ``entity``, or None when its HARE type is not counted."""
    cfg = config or EntityF1Config()
    hare_type = to_hare_type(entity.type)
    if cfg.types is not None and hare_type not in cfg.types:
        return None
    name = entity.concept.strip().lower() if cfg.use_concept and entity.concept else ""
    name = name or normalise_entity_text(entity.text)
    if not name:
        return None
    return EntityKey(hare_type, name, bool(entity.negated) if cfg.use_negation else None)


def _keys(entities: Iterable[Entity], config: EntityF1Config) -> set[EntityKey]:
    keys = (entity_key(e, config=config) for e in entities)
    return {k for k in keys if k is not None}


def entity_f1_from_entities(
    *,
    candidate: Sequence[Entity],
    reference: Sequence[Entity],
    config: EntityF1Config | None = None,
) -> EntityF1Result:
    """Entity F1 of already extracted entities (see the module docstring for the conventions)."""
    cfg = config or EntityF1Config()
    cand, ref = _keys(candidate, cfg), _keys(reference, cfg)
    matched, missing, extra = sorted(cand & ref), sorted(ref - cand), sorted(cand - ref)
    if not cand and not ref:
        value = None if cfg.no_entities is None else float(cfg.no_entities)
        return EntityF1Result(precision=value, recall=value, f1=value)
    p = len(matched) / len(cand) if cand else 0.0
    r = len(matched) / len(ref) if ref else 0.0
    f = 2 * p * r / (p + r) if p + r > 0 else 0.0
    return EntityF1Result(
        precision=p,
        recall=r,
        f1=f,
        matched=tuple(matched),
        missing=tuple(missing),
        extra=tuple(extra),
    )


def entity_f1_batch(
    *,
    candidates: Sequence[str],
    references: Sequence[str],
    extractor: EntityExtractor | None = None,
    config: EntityF1Config | None = None,
) -> list[EntityF1Result]:
    """Entity F1 of each candidate report against its reference.

    Args:
        candidates: Generated reports.
        references: One reference report per candidate.
        extractor: Entity extractor used on both sides (default: ``build_extractor("lexicon")``,
            built once per call — pass one to reuse it). Each distinct text is analysed once.
        config: Matching options (default :class:`EntityF1Config`).

    Returns:
        One :class:`EntityF1Result` per pair, in the input order.

    Raises:
        TypeError: an item is not a string.
        BaselineInputError: the lists have different lengths.
    """
    from pathgls.text import analyze_report, build_extractor

    pairs = check_pairs(candidates, references)
    cfg = config or EntityF1Config()
    empty = empty_pairs(pairs, metric="entity F1")
    if len(empty) < len(pairs) and extractor is None:
        extractor = build_extractor("lexicon")
    entities: dict[str, list[Entity]] = {}
    out = []
    for i, (cand, ref) in enumerate(pairs):
        if i in empty:
            out.append(EntityF1Result(precision=0.0, recall=0.0, f1=0.0, empty=True))
            continue
        assert extractor is not None  # built above: a pair is not empty
        for text in (cand, ref):
            if text not in entities:
                entities[text] = analyze_report(text, extractor=extractor).entities
        out.append(
            entity_f1_from_entities(candidate=entities[cand], reference=entities[ref], config=cfg)
        )
    return out


def entity_f1(
    *,
    candidate: str,
    reference: str,
    extractor: EntityExtractor | None = None,
    config: EntityF1Config | None = None,
) -> EntityF1Result:
    """Entity F1 of one candidate report against its reference; see :func:`entity_f1_batch`."""
    return entity_f1_batch(
        candidates=[candidate], references=[reference], extractor=extractor, config=config
    )[0]
