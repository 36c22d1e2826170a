"""The models HARE runs on, named by spec, and scoring many report pairs with them.

:func:`build_hare_models` builds an entity extractor, an embedder and a relation backend from
:class:`HareSpecs` (offline: :data:`OFFLINE_SPECS`; HARE's own models: :data:`HARE_SPECS`);
:func:`prepare_reports` runs them once per report and :func:`score_pairs` scores aligned pairs.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from pathgls.errors import UnknownNameError
from pathgls.hare.metric import (
    _GRAPH_TYPES,
    _SPACE,
    GRAPH_RELATION_TYPES,
    HARE_ALIGNMENT_REPO,
    HARE_RE_REPO,
    EmptyReportWarning,
    HareConfig,
    HareEntity,
    HareInputError,
    HareReport,
    HareResult,
    hare_score,
)
from pathgls.text import AnalyzedReport, analyze_report, build_extractor
from pathgls.text.base import EntityExtractor, to_hare_type
from pathgls.text.embedders import TextEmbedder, build_embedder
from pathgls.text.hf_ner import HARE_NER_REPO
from pathgls.types import Relation

logger = logging.getLogger(__name__)


@runtime_checkable
class RelationBackend(Protocol):
    """Finds relations among the entities of analysed reports, all reports in one call."""

    name: str

    def predict(self, reports: Sequence[AnalyzedReport]) -> list[list[Relation]]: ...


@dataclass
class GraphRelations:
    """The report graph's rule-based relations (:mod:`pathgls.text.relations`), by type."""

    types: tuple[str, ...] | None = GRAPH_RELATION_TYPES  # None: every type
    name: str = "graph"

    def predict(self, reports: Sequence[AnalyzedReport]) -> list[list[Relation]]:
        """Relations of each report whose type is kept."""
        keep = self.types
        return [[r for r in a.relations if keep is None or r.type in keep] for a in reports]


@dataclass(frozen=True)
class HareSpecs:
    """Which models HARE uses, by spec."""

    ner: str  # "lexicon", "hf-ner:<repo-or-dir>", or any extractor spec
    embedder: str  # "minilm", "st:<dir>", "hf-cls:<repo-or-dir>"
    relations: str  # "graph", "graph:<type,type>", "graph:all", "hare-re:<repo-or-dir>"


#: HARE offline: lexicon entities, MiniLM embeddings, report-graph relations.
OFFLINE_SPECS = HareSpecs(ner="lexicon", embedder="minilm", relations="graph")
#: HARE's own models (local weights; ``pathgls models pull hf:<repo>`` fetches them).
HARE_SPECS = HareSpecs(
    ner=f"hf-ner:{HARE_NER_REPO}",
    embedder=f"hf-cls:{HARE_ALIGNMENT_REPO}",
    relations=f"hare-re:{HARE_RE_REPO}",
)


@dataclass
class HareModels:
    """The three models HARE needs."""

    extractor: EntityExtractor
    embedder: TextEmbedder
    relations: RelationBackend
    specs: HareSpecs | None = None


def build_hare_models(
    specs: HareSpecs = OFFLINE_SPECS, *, config: HareConfig | None = None
) -> HareModels:
    """Build the extractor, embedder and relation backend named by ``specs``.

    ``hf-ner`` is loaded with ``config.ner_threshold`` (and ConText negation when
    ``config.negation_aware``); ``hare-re`` and ``hf-cls`` with the config's batch options.

    Raises:
        UnknownNameError: an unknown scheme.
        ModelNotFoundError: a model that is not available locally.
        HareError: weights that are not the expected kind of model.
    """
    cfg = config or HareConfig()
    rel_scheme, _, rel_arg = specs.relations.partition(":")
    types = tuple(t.strip() for t in rel_arg.split(",") if t.strip())
    if not (
        rel_scheme == "hare-re" or (rel_scheme == "graph" and set(types) <= _GRAPH_TYPES | {"all"})
    ):
        raise UnknownNameError(
            f"unknown HARE relation backend {specs.relations!r}; known: graph, graph:all, "
            f"graph:<type,...> (of {', '.join(sorted(_GRAPH_TYPES))}), hare-re:<repo-or-dir>"
        )
    relations: RelationBackend
    if rel_scheme == "hare-re":
        from pathgls.hare.hf import load_hare_re

        relations = load_hare_re(rel_arg, config=cfg)
    else:
        relations = GraphRelations(None if "all" in types else types or GRAPH_RELATION_TYPES)
    scheme, _, arg = specs.embedder.partition(":")
    if scheme == "hf-cls":
        from pathgls.hare.hf import load_hf_cls

        embedder: TextEmbedder = load_hf_cls(arg, config=cfg)
    else:
        embedder = build_embedder(specs.embedder)
        if hasattr(embedder, "batch_size"):
            embedder.batch_size = cfg.embed_batch_size
    scheme, _, arg = specs.ner.partition(":")
    if scheme == "hf-ner":
        from pathgls.text.hf_ner import load_hf_ner, resolve_location

        extractor: EntityExtractor = load_hf_ner(
            resolve_location(arg), name=specs.ner, device=cfg.device,
            threshold=cfg.ner_threshold, context=cfg.negation_aware,
        )  # fmt: skip
    else:
        extractor = build_extractor(specs.ner)
    return HareModels(extractor=extractor, embedder=embedder, relations=relations, specs=specs)


def _check_texts(name: str, texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str | bytes):
        raise TypeError(f"{name} must be a sequence of strings, not a single string")
    items = list(texts)
    for i, t in enumerate(items):
        if not isinstance(t, str):
            raise TypeError(f"{name}[{i}] must be a str, got {type(t).__name__}")
    return items


def prepare_reports(texts: Sequence[str], *, models: HareModels) -> list[HareReport]:
    """Analyse each distinct text once, relate and embed all of them in batched calls.

    Returns:
        One :class:`HareReport` per text, in order (equal texts share one object).

    Raises:
        TypeError: an item is not a string.
    """
    items = _check_texts("texts", texts)
    distinct = [t for t in dict.fromkeys(items) if t.strip()]
    analyzed = [analyze_report(t, extractor=models.extractor) for t in distinct]
    relations = models.relations.predict(analyzed) if analyzed else []
    surface = [_SPACE.sub(" ", e.text).strip() for a in analyzed for e in a.entities]
    unique = list(dict.fromkeys(surface))
    vectors = models.embedder.embed(unique) if unique else np.zeros((0, 0), np.float32)
    row = {t: i for i, t in enumerate(unique)}
    dim = vectors.shape[1] if vectors.ndim == 2 else 0
    out: dict[str, HareReport] = {}
    for text, a, rels in zip(distinct, analyzed, relations, strict=True):
        idx = [row[_SPACE.sub(" ", e.text).strip()] for e in a.entities]
        out[text] = HareReport(
            text=a.text,
            entities=tuple(
                HareEntity(e.text, to_hare_type(e.type), bool(e.negated), e.start, e.end)
                for e in a.entities
            ),
            embeddings=np.asarray(vectors[idx], np.float32).reshape(len(idx), dim),
            relations=tuple(rels),
            warnings=tuple(a.warnings),
        )
    return [out.get(t) or HareReport(text=t) for t in items]


def score_pairs(
    *,
    references: Sequence[str],
    candidates: Sequence[str],
    models: HareModels,
    config: HareConfig | None = None,
) -> list[HareResult]:
    """HARE of each ``candidates[i]`` against ``references[i]``.

    All distinct texts are analysed once and their entities embedded in one batched call
    (:func:`prepare_reports`). Pairs with an empty side score 0; one
    :class:`EmptyReportWarning` names them.

    Raises:
        HareInputError: the lists have different lengths.
        TypeError: an argument is a single string, or an item is not a string.
    """
    refs = _check_texts("references", references)
    cands = _check_texts("candidates", candidates)
    if len(refs) != len(cands):
        raise HareInputError(
            f"{len(refs)} references but {len(cands)} candidates: the lists must be aligned"
        )
    cfg = config or HareConfig()
    reports = prepare_reports([*refs, *cands], models=models)
    pairs = zip(reports[: len(refs)], reports[len(refs) :], strict=True)
    results = [hare_score(reference=r, candidate=c, config=cfg) for r, c in pairs]
    empty = [i for i, r in enumerate(results) if r.empty]
    if empty:
        shown = ", ".join(map(str, empty[:20])) + (" ..." if len(empty) > 20 else "")
        msg = f"{len(empty)} pair(s) with an empty report scored 0: {shown}"
        warnings.warn(msg, EmptyReportWarning, stacklevel=2)
    return results
