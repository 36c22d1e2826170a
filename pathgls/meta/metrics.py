"""Named reference-based report metrics, for ``pathgls meta`` and the benchmarks.

``METRICS`` (a :class:`~pathgls.registry.Registry`) maps a name to a function ``(references,
candidates, context) → one float per pair``; every entry also says whether higher is better
(``meta["higher_is_better"]``). The :class:`MetricContext` loads the shared models (lexicon
extractor, MiniLM, the BERTScore encoder) once, on first use, so a table of several metrics
analyses each report and loads each model a single time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pathgls.registry import Registry

MetricFn = Callable[[Sequence[str], Sequence[str], "MetricContext"], list[float]]


@dataclass
class MetricContext:
    """Models shared by the metrics of one run, built on first use."""

    extractor_spec: str = "lexicon"
    embedder_spec: str = "minilm"
    bertscore_model: str | None = None  # None: BERTScore's default (MiniLM)
    _cache: dict[str, Any] = field(default_factory=dict)

    def get(self, key: str, build: Callable[[], Any]) -> Any:
        """A shared object, built once."""
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    @property
    def extractor(self) -> Any:
        from pathgls.text import build_extractor

        return self.get("extractor", lambda: build_extractor(self.extractor_spec))

    @property
    def embedder(self) -> Any:
        from pathgls.text.embedders import build_embedder

        return self.get("embedder", lambda: build_embedder(self.embedder_spec))


#: Metric name → function (``METRICS.get(name).factory``); listed by ``pathgls list metric``.
METRICS: Registry[list[float]] = Registry("metric")


def _factory(name: str) -> Callable[..., list[float]]:
    """The function registered as metric ``name`` (UnknownNameError: none is)."""
    factory = METRICS.get(name).factory
    assert factory is not None  # register() always sets it
    return factory


@METRICS.register(
    "bleu", description="sentence BLEU-4, effective order (sacrebleu)", higher_is_better=True
)
def _bleu(refs: Sequence[str], cands: Sequence[str], ctx: MetricContext) -> list[float]:
    from pathgls.baselines.lexical import bleu_batch

    return [r.score for r in bleu_batch(candidates=cands, references=refs)]


@METRICS.register(
    "rouge1", description="ROUGE-1 F-measure (rouge-score, stemmed)", higher_is_better=True
)
def _rouge1(refs: Sequence[str], cands: Sequence[str], ctx: MetricContext) -> list[float]:
    return [r.rouge1 for r in _rouge(refs, cands, ctx)]


@METRICS.register(
    "rougeL", description="ROUGE-L F-measure (rouge-score, stemmed)", higher_is_better=True
)
def _rougel(refs: Sequence[str], cands: Sequence[str], ctx: MetricContext) -> list[float]:
    return [r.rougeL for r in _rouge(refs, cands, ctx)]


def _rouge(refs: Sequence[str], cands: Sequence[str], ctx: MetricContext) -> list[Any]:
    from pathgls.baselines.lexical import rouge_batch

    key = f"rouge:{hash((tuple(refs), tuple(cands)))}"
    return ctx.get(key, lambda: rouge_batch(candidates=cands, references=refs))


@METRICS.register(
    "bertscore",
    description="BERTScore F1, greedy matching (MiniLM by default)",
    higher_is_better=True,
    cards=("minilm",),
)
def _bertscore(refs: Sequence[str], cands: Sequence[str], ctx: MetricContext) -> list[float]:
    from pathgls.baselines.bertscore import BERTScoreConfig, bertscore, load_bertscorer

    def build() -> Any:
        cfg = BERTScoreConfig(model=ctx.bertscore_model) if ctx.bertscore_model else None
        return load_bertscorer(config=cfg)

    scorer = ctx.get("bertscorer", build)
    return list(bertscore(candidates=cands, references=refs, scorer=scorer).f1)


@METRICS.register(
    "entity_f1", description="exact-match F1 over extracted entities", higher_is_better=True
)
def _entity_f1(refs: Sequence[str], cands: Sequence[str], ctx: MetricContext) -> list[float]:
    from pathgls.baselines.entity_f1 import entity_f1_batch

    # F1 is undefined (None) for a pair where neither side has an entity: NaN, which the
    # correlation drops like every other non-finite value
    return [
        math.nan if r.f1 is None else r.f1
        for r in entity_f1_batch(candidates=cands, references=refs, extractor=ctx.extractor)
    ]


@METRICS.register(
    "hare",
    description="HARE offline: lexicon entities, MiniLM, graph relations",
    higher_is_better=True,
)
def _hare(refs: Sequence[str], cands: Sequence[str], ctx: MetricContext) -> list[float]:
    from pathgls.hare.models import build_hare_models, score_pairs

    models = ctx.get("hare_models", build_hare_models)
    return [r.score for r in score_pairs(references=refs, candidates=cands, models=models)]


@METRICS.register(
    "dxalign",
    description="DxAlign: candidate diagnosis vs reference (pathgls)",
    higher_is_better=True,
)
def _dxalign(refs: Sequence[str], cands: Sequence[str], ctx: MetricContext) -> list[float]:
    from pathgls.baselines.dxalign import dxalign_scores

    return [
        r.score
        for r in dxalign_scores(
            references=refs, candidates=cands, extractor=ctx.extractor, embedder=ctx.embedder
        )
    ]


def compute_metrics(
    names: Sequence[str],
    *,
    references: Sequence[str],
    candidates: Sequence[str],
    context: MetricContext | None = None,
) -> dict[str, list[float]]:
    """Every named metric over the aligned pairs.

    Raises:
        UnknownNameError: an unknown metric name (before anything is computed).
        ValueError: the lists differ in length.
    """
    if len(references) != len(candidates):
        raise ValueError(f"{len(references)} references for {len(candidates)} candidates")
    fns = {n: _factory(n) for n in names}
    ctx = context or MetricContext()
    return {n: [float(v) for v in fn(references, candidates, ctx)] for n, fn in fns.items()}
