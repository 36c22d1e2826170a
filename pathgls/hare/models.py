"""The models HARE runs on, named by spec, and scoring many report pairs with them.

:func:`build_hare_models` builds an entity extractor (the extractor registry), an embedder
(:data:`HARE_EMBEDDERS`) and a relation backend (:data:`HARE_RELATIONS`) from :class:`HareSpecs`
in pathgls's spec grammar (offline: :data:`OFFLINE_SPECS`; HARE's own models, from their model
cards: :data:`HARE_SPECS`);
:func:`prepare_reports` runs them once per report and :func:`score_pairs` scores aligned pairs.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping, Sequence
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
from pathgls.registry import Registry
from pathgls.text import AnalyzedReport, analyze_report
from pathgls.text.base import EXTRACTORS, EntityExtractor, to_hare_type
from pathgls.text.embedders import SentenceTransformerEmbedder, TextEmbedder, build_embedder
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
    """Which models HARE uses, by spec (see :data:`HARE_RELATIONS`, :data:`HARE_EMBEDDERS`)."""

    ner: str  # any entity extractor spec: "lexicon", "hf-ner:<model>", ...
    embedder: str  # "minilm", "st:<model>", "hf-cls:<model>"
    relations: str  # "graph", "graph:<type,type>", "graph:all", "hare-re:<model>"


#: HARE's relation backends: factories ``(argument, config) -> RelationBackend``.
HARE_RELATIONS: Registry[RelationBackend] = Registry(
    "hare-relations", label="HARE relation backend"
)
#: HARE's entity embedders: factories ``(argument, config) -> TextEmbedder``.
HARE_EMBEDDERS: Registry[TextEmbedder] = Registry("hare-embedder", label="HARE embedder")


@HARE_RELATIONS.register(
    "graph",
    description="the report graph's rule-based relations, of HARE's three types by default; "
    f"'all' or a comma list of {', '.join(sorted(_GRAPH_TYPES))}",
    argument="[all|<type,...>]",
)
def _graph_relations(argument: str, config: HareConfig) -> RelationBackend:
    types = tuple(t.strip() for t in argument.split(",") if t.strip())
    unknown = sorted(set(types) - _GRAPH_TYPES - {"all"})
    if unknown:
        raise UnknownNameError(
            f"unknown relation type(s) {', '.join(map(repr, unknown))} in 'graph:{argument}'; "
            f"known: graph, graph:all, graph:<type,...> (of {', '.join(sorted(_GRAPH_TYPES))}), "
            "hare-re:<model>"
        )
    return GraphRelations(None if "all" in types else types or GRAPH_RELATION_TYPES)


@HARE_RELATIONS.register(
    "hare-re",
    description="a pair classifier over [E1]/[E2]-marked entity pairs (HARE-RE), local weights",
    argument="<model>",
    cards=("hare-re",),
)
def _hare_re(argument: str, config: HareConfig) -> RelationBackend:
    from pathgls.hare.hf import load_hare_re

    return load_hare_re(argument, config=config)


def _text_embedder(spec: str, config: HareConfig) -> TextEmbedder:
    embedder = build_embedder(spec)
    if isinstance(embedder, SentenceTransformerEmbedder):
        embedder.batch_size = config.embed_batch_size
    return embedder


@HARE_EMBEDDERS.register(
    "minilm", description="MiniLM sentence embeddings of the entity texts (offline)", card="minilm"
)
def _minilm(argument: str, config: HareConfig) -> TextEmbedder:
    return _text_embedder("minilm", config)


@HARE_EMBEDDERS.register(
    "st", description="a sentence-transformers model's embeddings", argument="<model>"
)
def _sentence_transformer(argument: str, config: HareConfig) -> TextEmbedder:
    return _text_embedder(f"st:{argument}", config)


@HARE_EMBEDDERS.register(
    "hf-cls",
    description="a transformer's normalised CLS vector (HARE-alignment), local weights",
    argument="<model>",
    cards=("hare-alignment",),
)
def _hf_cls(argument: str, config: HareConfig) -> TextEmbedder:
    from pathgls.hare.hf import load_hf_cls

    return load_hf_cls(argument, config=config)


#: HARE offline: lexicon entities, MiniLM embeddings, report-graph relations.
OFFLINE_SPECS = HareSpecs(ner="lexicon", embedder="minilm", relations="graph")
#: HARE's own models, from their model cards (local weights; ``pathgls models pull hare-ner``
#: etc. fetch them).
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

    The extractor comes from the extractor registry; the options its entry declares
    (``meta["options"]``: ``hf-ner`` takes ``device``, ``threshold`` = ``config.ner_threshold``
    and ``context`` = ``config.negation_aware``) are passed to it. ``hare-re`` and ``hf-cls``
    get the config's batch options, ``minilm``/``st`` its embedding batch size.

    Raises:
        UnknownNameError: an unknown backend (the message lists the known ones).
        ConfigError: a malformed spec.
        ModelNotFoundError: a model that is not available locally.
        HareError: weights that are not the expected kind of model.
    """
    cfg = config or HareConfig()
    relations = HARE_RELATIONS.build(specs.relations, cfg)
    embedder = HARE_EMBEDDERS.build(specs.embedder, cfg)
    ner, entry = EXTRACTORS.parse(specs.ner)
    offered = {"device": cfg.device, "threshold": cfg.ner_threshold, "context": cfg.negation_aware}
    accepted = entry.meta.get("options", ())
    extractor = EXTRACTORS.build(ner, **{k: v for k, v in offered.items() if k in accepted})
    return HareModels(extractor=extractor, embedder=embedder, relations=relations, specs=specs)


def _check_texts(name: str, texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str | bytes):
        raise TypeError(f"{name} must be a sequence of strings, not a single string")
    items = list(texts)
    for i, t in enumerate(items):
        if not isinstance(t, str):
            raise TypeError(f"{name}[{i}] must be a str, got {type(t).__name__}")
    return items


def prepare_reports(
    texts: Sequence[str],
    *,
    models: HareModels,
    analyzed: Mapping[str, AnalyzedReport] | None = None,
) -> list[HareReport]:
    """Analyse each distinct text once, relate and embed all of them in batched calls.

    ``analyzed`` holds readings already made of some of the texts, each
    ``analyze_report(text, extractor=models.extractor)`` with this very extractor (the
    pipeline's reading of the original report); they are used instead of reading those texts
    again, in the same order, so the embedding batch is the same.

    Returns:
        One :class:`HareReport` per text, in order (equal texts share one object).

    Raises:
        TypeError: an item is not a string.
    """
    items = _check_texts("texts", texts)
    distinct = [t for t in dict.fromkeys(items) if t.strip()]
    read = analyzed or {}
    reports = [
        read[t] if t in read else analyze_report(t, extractor=models.extractor) for t in distinct
    ]
    relations = models.relations.predict(reports) if reports else []
    surface = [_SPACE.sub(" ", e.text).strip() for a in reports for e in a.entities]
    unique = list(dict.fromkeys(surface))
    vectors = models.embedder.embed(unique) if unique else np.zeros((0, 0), np.float32)
    row = {t: i for i, t in enumerate(unique)}
    dim = vectors.shape[1] if vectors.ndim == 2 else 0
    out: dict[str, HareReport] = {}
    for text, a, rels in zip(distinct, reports, relations, strict=True):
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
    analyzed: Mapping[str, AnalyzedReport] | None = None,
) -> list[HareResult]:
    """HARE of each ``candidates[i]`` against ``references[i]``.

    All distinct texts are analysed once and their entities embedded in one batched call
    (:func:`prepare_reports`; ``analyzed``: readings of some texts already made with
    ``models.extractor``, used as they are). Pairs with an empty side score 0; one
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
    reports = prepare_reports([*refs, *cands], models=models, analyzed=analyzed)
    pairs = zip(reports[: len(refs)], reports[len(refs) :], strict=True)
    results = [hare_score(reference=r, candidate=c, config=cfg) for r, c in pairs]
    empty = [i for i, r in enumerate(results) if r.empty]
    if empty:
        shown = ", ".join(map(str, empty[:20])) + (" ..." if len(empty) > 20 else "")
        msg = f"{len(empty)} pair(s) with an empty report scored 0: {shown}"
        warnings.warn(msg, EmptyReportWarning, stacklevel=2)
    return results
