"""HARE: the entity- and relation-centric reference-based metric for histopathology reports.

HARE (Kim et al., Findings of EMNLP 2025; reference code ``knowlab/HARE``) compares a candidate
report with its reference through clinically relevant entities and the relations between them.

**Entities** come from one extractor for both reports, typed as one of HARE's five types
(:func:`~pathgls.text.base.to_hare_type`) and embedded as unit vectors. The soft precision
``P_e`` is the mean over candidate entity mentions of each one's best cosine among the reference
entities; the soft recall ``R_e`` the same from the reference side; ``F1_e`` their harmonic
mean. As in the reference code the cosine is not thresholded and any two types may match
(``type_restricted=True``: only equal types); a negative cosine counts as 0. ``type_weights``
weights mentions by HARE type in both means (0 leaves a type out; default: all 1, as published).

**Relations** are directed triples ``(head, type, tail)``. ``relation_match="exact"`` (as
published): set F1 over triples compared on normalised entity text (:func:`normalise_text`) and
type. ``"soft"``: two triples of the same type score ``min(cos(heads), cos(tails))`` (0 below
``soft_relation_threshold``) and each triple's best score is averaged as on the entity side.

**Score**: ``combine="weighted"``: ``α·F1_e + (1−α)·F1_r`` (reference code, α = 0.5);
``"sum"``: ``F1_e + F1_r`` (the paper's formulation, 0–2). All components are returned, with
each entity's and triple's best match as evidence. **Negation** (``negation_aware=True``; HARE's
stated limitation): an entity negated on one side and affirmed on the other never matches, and
triples carry their entities' negation flags (``hf-ner`` then runs medspaCy ConText).

**Backends** (:func:`build_hare_models`). Offline, :data:`OFFLINE_SPECS`: the ``lexicon``
extractor, MiniLM embeddings and the report graph's relations of :data:`GRAPH_RELATION_TYPES`
(the counterparts of HARE's annotated relations). HARE's models, :data:`HARE_SPECS` (local
weights only): ``hf-ner:`` HARE-NER (threshold 0.7), ``hf-cls:`` HARE-alignment CLS vectors,
``hare-re:`` HARE-RE over pairs marked ``[E1]…[/E1]``/``[E2]…[/E2]`` at their offsets.

**Defects of the reference code fixed here:** NER offsets point into the text itself (the
reference decodes token chunks and loses them after the first); RE runs all pairs of all reports
in batches (not one padded forward per pair), marks pairs whose head follows its tail correctly,
reads a sentence-sized context so markers are never truncated away, and relates only entities
that pass the NER threshold; soft relations and negation are options.

**Conventions.** An empty (or whitespace) candidate or reference scores 0 on every component,
with a warning. A side without entities makes ``F1_e`` 0 (neither side: also a warning). When
neither side has a relation, ``F1_r`` is missing (None) and the score is ``F1_e`` scaled to the
full weight (``no_relations="missing"``, default), or ``F1_r`` is 0 as in the reference code
(``no_relations="zero"``).
"""

from __future__ import annotations

import logging
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

from pathgls.config import HareConfig
from pathgls.errors import EmptyReportWarning as EmptyReportWarning  # re-exported
from pathgls.errors import HareError as HareError  # re-exported
from pathgls.errors import HareInputError
from pathgls.hub.cards import model_card
from pathgls.types import Relation

logger = logging.getLogger(__name__)

#: Hugging Face repos of HARE's relation and alignment models.
HARE_RE_REPO = model_card("hare-re").repo
HARE_ALIGNMENT_REPO = model_card("hare-alignment").repo
#: Report-graph relation types that correspond to HARE's annotated relations.
GRAPH_RELATION_TYPES = ("modifier_of", "result_of", "located_in")

_SPACE = re.compile(r"\s+")
_EDGE_PUNCT = " .,;:!?()[]{}\"'`*-–—/"
#: Relation types of the report graph (:mod:`pathgls.text.relations`).
_GRAPH_TYPES = frozenset({"modifier_of", "result_of", "located_in", "supports", "same_as"})


@dataclass(frozen=True)
class HareEntity:
    """An entity as HARE sees it."""

    text: str  # as written in the (cleaned) report
    type: str  # HARE type
    negated: bool = False
    start: int = 0  # character offsets in the cleaned report text
    end: int = 0

    @property
    def key(self) -> str:
        """Normalised text, the entity's identity in exact relation matching."""
        return normalise_text(self.text)


@dataclass(frozen=True)
class RelationTriple:
    """A relation compared across reports: normalised head and tail text, type, negations."""

    head: str
    type: str
    tail: str
    head_negated: bool = False
    tail_negated: bool = False


@dataclass(frozen=True, eq=False)
class HareReport:
    """One report prepared for :func:`hare_score`.

    ``embeddings[i]`` is the unit vector of ``entities[i]``; relations hold indices into
    ``entities``.
    """

    text: str  # the cleaned report text (entity offsets refer to it)
    entities: tuple[HareEntity, ...] = ()
    embeddings: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32))
    relations: tuple[Relation, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        """True when the report text is empty or only whitespace."""
        return not self.text.strip()


Side = Literal["candidate", "reference"]
_CANDIDATE: Side = "candidate"
_REFERENCE: Side = "reference"


@dataclass(frozen=True)
class EntityMatch:
    """An entity's best counterpart in the other report."""

    side: Literal["candidate", "reference"]
    text: str
    type: str
    negated: bool
    match: str | None  # best counterpart's text (None: the other side has no entity)
    similarity: float  # after negation / type masks
    weight: float  # its weight in the mean


@dataclass(frozen=True)
class RelationMatch:
    """A relation triple's best counterpart in the other report."""

    side: Literal["candidate", "reference"]
    triple: RelationTriple
    match: RelationTriple | None
    similarity: float  # exact: 1 or 0


@dataclass(frozen=True)
class HareResult:
    """HARE of one candidate against its reference, with all components and the evidence."""

    score: float
    entity_precision: float
    entity_recall: float
    entity_f1: float
    relation_precision: float | None  # None when neither side has a relation ("missing")
    relation_recall: float | None
    relation_f1: float | None
    entity_matches: tuple[EntityMatch, ...] = ()
    relation_matches: tuple[RelationMatch, ...] = ()
    warnings: tuple[str, ...] = ()
    empty: bool = False  # candidate or reference text was empty: scored 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return asdict(self)


def normalise_text(text: str) -> str:
    """Lower case, whitespace collapsed, surrounding punctuation removed."""
    return _SPACE.sub(" ", text).strip(_EDGE_PUNCT).casefold()


def _soft_prf(
    sim: np.ndarray, w_rows: np.ndarray, w_cols: np.ndarray
) -> tuple[float, float, float, np.ndarray, np.ndarray]:
    """Rows = candidate, columns = reference: weighted mean best similarity each way and F1."""
    best_rows = sim.max(axis=1) if sim.shape[1] else np.zeros(sim.shape[0])
    best_cols = sim.max(axis=0) if sim.shape[0] else np.zeros(sim.shape[1])
    p = float(best_rows @ w_rows / w_rows.sum()) if w_rows.sum() > 0 else 0.0
    r = float(best_cols @ w_cols / w_cols.sum()) if w_cols.sum() > 0 else 0.0
    f1 = 0.0 if p + r <= 0 else 2 * p * r / (p + r)
    return p, r, f1, best_rows, best_cols


def _entity_component(
    cand: HareReport, ref: HareReport, cfg: HareConfig
) -> tuple[float, float, float, list[EntityMatch]]:
    ci = [i for i, e in enumerate(cand.entities) if cfg.weight(e.type) > 0]
    ri = [i for i, e in enumerate(ref.entities) if cfg.weight(e.type) > 0]
    ce, re_ = [cand.entities[i] for i in ci], [ref.entities[i] for i in ri]
    if ce and re_:
        sim = np.clip(cand.embeddings[ci] @ ref.embeddings[ri].T, 0.0, 1.0).astype(np.float64)
    else:
        sim = np.zeros((len(ce), len(re_)))
    if cfg.negation_aware and sim.size:
        sim *= np.array([e.negated for e in ce])[:, None] == np.array([e.negated for e in re_])
    if cfg.type_restricted and sim.size:
        sim *= np.array([e.type for e in ce])[:, None] == np.array([e.type for e in re_])
    wc = np.array([cfg.weight(e.type) for e in ce])
    wr = np.array([cfg.weight(e.type) for e in re_])
    p, r, f1, best_c, best_r = _soft_prf(sim, wc, wr)
    matches = [
        EntityMatch(side, e.text, e.type, e.negated,
                    other[int(row.argmax())].text if len(other) else None, float(best), float(w))
        for side, ents, other, s, bests, ws in (
            (_CANDIDATE, ce, re_, sim, best_c, wc),
            (_REFERENCE, re_, ce, sim.T, best_r, wr),
        )
        for e, row, best, w in zip(ents, s, bests, ws, strict=True)
    ]  # fmt: skip
    return p, r, f1, matches


def _triples(report: HareReport, negation: bool) -> dict[RelationTriple, tuple[int, int]]:
    """Distinct triples of ``report`` → (head, tail) entity indices of their first instance."""
    out: dict[RelationTriple, tuple[int, int]] = {}
    for rel in report.relations:
        h, t = report.entities[rel.head], report.entities[rel.tail]
        flags = (h.negated, t.negated) if negation else (False, False)
        out.setdefault(RelationTriple(h.key, rel.type, t.key, *flags), (rel.head, rel.tail))
    return out


def _signature(t: RelationTriple) -> tuple[str, bool, bool]:
    return t.type, t.head_negated, t.tail_negated


def _relation_component(
    cand: HareReport, ref: HareReport, cfg: HareConfig
) -> tuple[float | None, float | None, float | None, list[RelationMatch]]:
    ct, rt = _triples(cand, cfg.negation_aware), _triples(ref, cfg.negation_aware)
    if not ct and not rt:
        return (None, None, None, []) if cfg.no_relations == "missing" else (0.0, 0.0, 0.0, [])
    cl, rl = list(ct), list(rt)
    sim = np.zeros((len(cl), len(rl)))
    for a, x in enumerate(cl):
        for b, y in enumerate(rl):
            if cfg.relation_match == "exact":
                sim[a, b] = float(x == y)
            elif _signature(x) == _signature(y):
                (ch, ctl), (rh, rtl) = ct[x], rt[y]
                heads = float(cand.embeddings[ch] @ ref.embeddings[rh])
                tails = float(cand.embeddings[ctl] @ ref.embeddings[rtl])
                s = min(max(heads, 0.0), max(tails, 0.0), 1.0)
                sim[a, b] = s if s >= cfg.soft_relation_threshold else 0.0
    p, r, f1, best_c, best_r = _soft_prf(sim, np.ones(len(cl)), np.ones(len(rl)))
    matches = [
        RelationMatch(side, t, other[int(row.argmax())] if len(other) and best > 0 else None,
                      float(best))
        for side, trs, other, s, bests in (
            (_CANDIDATE, cl, rl, sim, best_c), (_REFERENCE, rl, cl, sim.T, best_r)
        )
        for t, row, best in zip(trs, s, bests, strict=True)
    ]  # fmt: skip
    return p, r, f1, matches


def hare_score(
    *, reference: HareReport, candidate: HareReport, config: HareConfig | None = None
) -> HareResult:
    """HARE of ``candidate`` against ``reference`` (see the module docstring).

    Args:
        reference: The reference report, prepared by :func:`prepare_reports`.
        candidate: The generated report, prepared the same way (same embedder).
        config: Scoring options (default :class:`HareConfig`).

    Returns:
        The score, its components and the best match of every entity and triple.

    Raises:
        HareInputError: the two reports' embeddings have different dimensions.
    """
    cfg = config or HareConfig()
    notes = [*reference.warnings, *candidate.warnings]
    if reference.empty or candidate.empty:
        which = " and ".join(
            side for side, r in (("reference", reference), ("candidate", candidate)) if r.empty
        )
        notes.append(f"{which} report is empty: every component scored 0")
        return HareResult(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, warnings=tuple(notes), empty=True)
    if candidate.entities and reference.entities:
        dims = (candidate.embeddings.shape[1], reference.embeddings.shape[1])
        if dims[0] != dims[1]:
            raise HareInputError(f"entity embeddings differ in dimension: {dims[0]} vs {dims[1]}")
    elif not candidate.entities and not reference.entities:
        notes.append("no entities in either report: F1_e is 0")
    ep, er, ef, ematches = _entity_component(candidate, reference, cfg)
    rp, rr, rf, rmatches = _relation_component(candidate, reference, cfg)
    w_e, w_r = (cfg.alpha, 1.0 - cfg.alpha) if cfg.combine == "weighted" else (1.0, 1.0)
    score = (w_e + w_r) * ef if rf is None else w_e * ef + w_r * rf
    return HareResult(
        score=float(score),
        entity_precision=ep,
        entity_recall=er,
        entity_f1=ef,
        relation_precision=rp,
        relation_recall=rr,
        relation_f1=rf,
        entity_matches=tuple(ematches),
        relation_matches=tuple(rmatches),
        warnings=tuple(notes),
    )
