"""Lexical overlap baselines: sentence BLEU-4 (sacrebleu) and ROUGE-1 / ROUGE-L (rouge-score).

These are the n-gram metrics report-generation papers quote; pathgls computes them with the
reference packages themselves so that its numbers are the numbers users compare against.

**BLEU-4** is sacrebleu's sentence-level BLEU with *effective order*
(``sacrebleu.metrics.BLEU(effective_order=True).sentence_score``): n-gram orders a short
sentence cannot have are left out of the geometric mean instead of zeroing it, and the
smoothing is sacrebleu's default (``exp``). The score is sacrebleu's divided by 100, so it lies
in [0, 1]; every result carries sacrebleu's signature string (``nrefs:1|case:mixed|eff:yes|
tok:13a|smooth:exp|version:…``) so that a number can be reproduced.

**ROUGE-1 / ROUGE-L** are the F-measures of ``rouge_score.rouge_scorer.RougeScorer(["rouge1",
"rougeL"], use_stemmer=True)`` (Porter stemming; rouge-score's tokenizer lower-cases and keeps
only ASCII letters and digits). ROUGE-L is the sentence-level LCS variant, not ``rougeLsum``.

**Empty texts.** A pair whose candidate or reference is empty or only whitespace scores 0.0 on
every metric without calling the packages, is flagged ``empty=True`` in its result, and the call
emits one :class:`EmptyTextWarning` naming the affected pair indices.

Batch functions take aligned lists (``candidates[i]`` is scored against ``references[i]``);
lists of different lengths raise :class:`BaselineInputError`, a non-string item ``TypeError``
naming its index. :func:`check_pairs` is that validation, shared by the other baselines.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pathgls.errors import BaselineInputError, ConfigError, EmptyTextWarning

__all__ = [
    "BaselineInputError",
    "BleuConfig",
    "BleuResult",
    "EmptyTextWarning",
    "RougeConfig",
    "RougeResult",
    "bleu",
    "bleu_batch",
    "check_pairs",
    "empty_pairs",
    "rouge",
    "rouge_batch",
]


def check_pairs(candidates: Sequence[str], references: Sequence[str]) -> list[tuple[str, str]]:
    """Validate aligned candidate / reference lists and return them as pairs.

    Args:
        candidates: Generated texts.
        references: Reference texts, ``references[i]`` for ``candidates[i]``.

    Returns:
        ``[(candidate, reference), ...]`` in the input order.

    Raises:
        TypeError: an argument is a plain string instead of a list, or an item is not a string.
        BaselineInputError: the lists have different lengths.
    """
    for name, seq in (("candidates", candidates), ("references", references)):
        if isinstance(seq, str | bytes):
            raise TypeError(f"{name} must be a sequence of strings, not a single string")
    cands, refs = list(candidates), list(references)
    if len(cands) != len(refs):
        raise BaselineInputError(
            f"{len(cands)} candidates but {len(refs)} references: the lists must be aligned"
        )
    for i, (c, r) in enumerate(zip(cands, refs, strict=True)):
        if not isinstance(c, str) or not isinstance(r, str):
            raise TypeError(
                f"pair {i}: candidate and reference must be strings, got "
                f"{type(c).__name__} and {type(r).__name__}"
            )
    return list(zip(cands, refs, strict=True))


def empty_pairs(pairs: Sequence[tuple[str, str]], *, metric: str) -> set[int]:
    """Indices of pairs with an empty (or whitespace-only) side; warns once when there are any.

    Args:
        pairs: ``(candidate, reference)`` pairs.
        metric: Metric name used in the warning.

    Returns:
        The set of indices that must score 0.0.
    """
    empty = {i for i, (c, r) in enumerate(pairs) if not c.strip() or not r.strip()}
    if empty:
        shown = ", ".join(str(i) for i in sorted(empty)[:20]) + (" …" if len(empty) > 20 else "")
        warnings.warn(
            f"{metric}: {len(empty)} pair(s) with an empty candidate or reference scored 0.0 "
            f"(indices {shown})",
            EmptyTextWarning,
            stacklevel=3,
        )
    return empty


# --------------------------------------------------------------------------------------- BLEU


@dataclass(frozen=True)
class BleuConfig:
    """Options of sentence BLEU-4 (sacrebleu's names and defaults)."""

    tokenize: str = "13a"  # sacrebleu tokenizer: 13a (WMT default), intl, char, none, ...
    lowercase: bool = False  # lower-case both sides before matching
    smooth_method: str = "exp"  # sacrebleu smoothing: exp, floor, add-k or none

    def __post_init__(self) -> None:
        from sacrebleu.metrics import BLEU

        if self.tokenize not in BLEU.TOKENIZERS:
            raise ConfigError(
                f"BleuConfig.tokenize={self.tokenize!r}; sacrebleu knows "
                f"{', '.join(sorted(BLEU.TOKENIZERS))}"
            )
        if self.smooth_method not in BLEU.SMOOTH_DEFAULTS:
            raise ConfigError(
                f"BleuConfig.smooth_method={self.smooth_method!r}; expected one of "
                f"{', '.join(BLEU.SMOOTH_DEFAULTS)}"
            )

    def metric(self) -> Any:
        """A ``sacrebleu.metrics.BLEU`` with effective order and these options."""
        from sacrebleu.metrics import BLEU

        return BLEU(
            lowercase=self.lowercase,
            tokenize=self.tokenize,
            smooth_method=self.smooth_method,
            effective_order=True,
        )


@dataclass(frozen=True)
class BleuResult:
    """Sentence BLEU-4 of one candidate against its reference."""

    score: float  # sacrebleu's BLEU / 100, in [0, 1]
    signature: str  # sacrebleu signature of the settings
    empty: bool = False  # candidate or reference was empty: score set to 0.0


def bleu_batch(
    *, candidates: Sequence[str], references: Sequence[str], config: BleuConfig | None = None
) -> list[BleuResult]:
    """Sentence BLEU-4 (effective order) of each candidate against its reference.

    Args:
        candidates: Generated texts.
        references: One reference per candidate.
        config: Tokenizer, case and smoothing options (default :class:`BleuConfig`).

    Returns:
        One :class:`BleuResult` per pair, in the input order.

    Raises:
        TypeError: an item is not a string.
        BaselineInputError: the lists have different lengths.
    """
    pairs = check_pairs(candidates, references)
    metric = (config or BleuConfig()).metric()
    empty = empty_pairs(pairs, metric="BLEU")
    scores = [
        # clipped: sacrebleu's 100.0 can come back as 100.00000000000004
        None if i in empty else min(1.0, float(metric.sentence_score(cand, [ref]).score) / 100.0)
        for i, (cand, ref) in enumerate(pairs)
    ]
    if len(empty) == len(pairs):
        metric.sentence_score("a", ["a"])  # sacrebleu signs a metric only once it has scored
    signature = str(metric.get_signature())
    return [
        BleuResult(score=0.0, signature=signature, empty=True)
        if score is None
        else BleuResult(score=score, signature=signature)
        for score in scores
    ]


def bleu(*, candidate: str, reference: str, config: BleuConfig | None = None) -> BleuResult:
    """Sentence BLEU-4 of one pair; see :func:`bleu_batch`."""
    return bleu_batch(candidates=[candidate], references=[reference], config=config)[0]


# -------------------------------------------------------------------------------------- ROUGE


@dataclass(frozen=True)
class RougeConfig:
    """Options of ROUGE-1 / ROUGE-L (rouge-score)."""

    use_stemmer: bool = True  # Porter-stem tokens before matching (the usual report setting)


@dataclass(frozen=True)
class RougeResult:
    """ROUGE F-measures of one candidate against its reference."""

    rouge1: float  # unigram F-measure, in [0, 1]
    rougeL: float  # longest-common-subsequence F-measure (rouge-score's key name)
    empty: bool = False  # candidate or reference was empty: both set to 0.0


def rouge_batch(
    *, candidates: Sequence[str], references: Sequence[str], config: RougeConfig | None = None
) -> list[RougeResult]:
    """ROUGE-1 and ROUGE-L F-measures of each candidate against its reference.

    Args:
        candidates: Generated texts.
        references: One reference per candidate.
        config: Stemming option (default :class:`RougeConfig`).

    Returns:
        One :class:`RougeResult` per pair, in the input order.

    Raises:
        TypeError: an item is not a string.
        BaselineInputError: the lists have different lengths.
    """
    from rouge_score import rouge_scorer

    pairs = check_pairs(candidates, references)
    cfg = config or RougeConfig()
    scorer = rouge_scorer.RougeScorer(["rouge1", "rougeL"], use_stemmer=cfg.use_stemmer)
    empty = empty_pairs(pairs, metric="ROUGE")
    out = []
    for i, (cand, ref) in enumerate(pairs):
        if i in empty:
            out.append(RougeResult(rouge1=0.0, rougeL=0.0, empty=True))
            continue
        scores = scorer.score(ref, cand)  # rouge-score's order: (target, prediction)
        out.append(
            RougeResult(
                rouge1=float(scores["rouge1"].fmeasure), rougeL=float(scores["rougeL"].fmeasure)
            )
        )
    return out


def rouge(*, candidate: str, reference: str, config: RougeConfig | None = None) -> RougeResult:
    """ROUGE-1 and ROUGE-L of one pair; see :func:`rouge_batch`."""
    return rouge_batch(candidates=[candidate], references=[reference], config=config)[0]
