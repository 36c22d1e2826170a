"""Paired comparison of subjects (VLMs) scored on the same items, and a rank with ties.

Two subjects of one run answered on the same slides, so their scores are *paired*: the question
"is A better than B?" is about the per-item differences ``d_i = A_i − B_i`` over the items both
completed (card not failed, value finite), never about two separate means. For each pair:

- the mean difference and a paired percentile-bootstrap CI (items resampled, both subjects
  together, i.e. the bootstrap of the mean of ``d``);
- a two-sided paired sign-flip permutation p-value (``scipy.stats.permutation_test``, exact
  when 2^n is within the resample budget) — the p-value Holm corrects — and the Wilcoxon
  signed-rank p-value (``scipy.stats.wilcoxon``; None when every difference is 0);
- win / tie / loss counts (a tie: ``|d_i| ≤ tie_margin``);
- Holm's step-down correction across all the pairs compared;
- the items where the two disagree most.

On ``trust`` the two subjects are compared on their *matched* trust: on each item, the trust
fused again over the modules both were scored on (:func:`pathgls.meta.ranking.matched_values`),
so a subject is never ahead because the other was penalised on a module it was not scored on.
The modules used are named (``matched_on``), and each pair carries the full trust and the
coverage of both subjects beside it, over the same items.

Fewer than ``min_items`` shared items is a :class:`~pathgls.errors.ComparisonError`, not a
p-value on noise. The summary's rank is :func:`pathgls.meta.ranking.rank_subjects`.

Pure functions over numbers and ScoreCards; no I/O.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from pathgls.config import FusionConfig
from pathgls.errors import ComparisonError
from pathgls.meta.ranking import card_coverage, matched_values
from pathgls.meta.stats import bootstrap_ci, holm
from pathgls.modules import WEIGHTED, weighted_modules
from pathgls.types import ScoreCard

#: What can be compared among the built-ins (kept for code that imported it).
COMPARABLE = ("trust", *WEIGHTED)


def comparable() -> tuple[str, ...]:
    """What can be compared: the trust score or one weighted module's value, plugins included."""
    return ("trust", *weighted_modules())


@dataclass(frozen=True)
class CompareConfig:
    """How a paired comparison is made."""

    # Fewer shared items than this: refuse (a p-value on a handful of items misleads).
    min_items: int = 5
    # Bootstrap resamples of the mean difference.
    n_boot: int = 2000
    # Coverage of the CI.
    confidence: float = 0.95
    # Permutation resamples (exact sign-flip enumeration when 2^n is at most this).
    n_permutations: int = 9999
    # |A − B| at or below this is a tie: half the last printed decimal, so a difference shown
    # as ±0.000 is never counted as a win or a loss.
    tie_margin: float = 0.0005
    # Items listed where the two disagree most.
    top: int = 5
    # Seed of the bootstrap and of the permutations.
    seed: int = 0

    def __post_init__(self) -> None:
        checks = (
            (self.min_items >= 2, f"min_items must be at least 2, got {self.min_items}"),
            (self.n_boot >= 100, f"n_boot must be at least 100, got {self.n_boot}"),
            (0 < self.confidence < 1, f"confidence must be in (0, 1), got {self.confidence}"),
            (self.n_permutations >= 99, "n_permutations must be at least 99"),
            (self.tie_margin >= 0, f"tie_margin must be ≥ 0, got {self.tie_margin}"),
            (self.top >= 0, f"top must be ≥ 0, got {self.top}"),
        )
        for ok, message in checks:
            if not ok:
                raise ComparisonError(message)


@dataclass(frozen=True)
class ItemDifference:
    """One shared item: both values and A − B."""

    item_id: str
    a: float
    b: float
    difference: float


@dataclass(frozen=True)
class PairComparison:
    """Subject ``a`` against subject ``b`` on ``metric`` over their shared items."""

    a: str
    b: str
    metric: str
    n: int  # shared items
    mean_a: float
    mean_b: float
    mean_difference: float  # mean of A − B (> 0: A scores higher)
    ci_low: float
    ci_high: float
    p_permutation: float  # two-sided paired sign-flip permutation test
    p_wilcoxon: float | None  # None when every difference is 0
    p_holm: float  # p_permutation, Holm-corrected across the pairs compared
    wins: int  # items where A > B (beyond the tie margin)
    ties: int
    losses: int
    disagreements: tuple[ItemDifference, ...]  # largest |A − B| first
    only_a: int  # items A completed that B did not
    only_b: int
    # what was compared: on trust, the modules both were scored on with their item counts
    matched_on: str = ""
    # beside it, over the items both completed: mean full trust and mean coverage of each
    trust_a: float = math.nan
    trust_b: float = math.nan
    coverage_a: float = math.nan
    coverage_b: float = math.nan
    # set when the two were scored on different shares of the weight
    note: str = ""


@dataclass(frozen=True)
class ComparisonResult:
    """Every pair compared, with the settings used."""

    metric: str
    subjects: tuple[str, ...]
    pairs: tuple[PairComparison, ...]
    config: CompareConfig


def _value(card: ScoreCard, metric: str) -> float | None:
    if metric == "trust":
        t = card.trust
        return float(t) if t is not None and math.isfinite(t) else None
    return card.value(metric)


def completed_values(cards: Iterable[ScoreCard], *, metric: str) -> dict[str, dict[str, float]]:
    """``subject → item_id → value`` of ``metric`` over the cards that are not failed.

    Raises:
        ComparisonError: ``metric`` is not one of :func:`comparable`.
    """
    known = comparable()
    if metric not in known:
        raise ComparisonError(f"unknown metric {metric!r}; known: {', '.join(known)}")
    out: dict[str, dict[str, float]] = {}
    for card in cards:
        bucket = out.setdefault(card.subject, {})
        if card.status == "failed":
            continue
        v = _value(card, metric)
        if v is not None:
            bucket[card.item_id] = v
    return out


def _p_permutation(d: np.ndarray, cfg: CompareConfig) -> float:
    if not np.any(np.abs(d) > 0):
        return 1.0
    res = stats.permutation_test(
        (d,),
        np.mean,
        permutation_type="samples",  # one sample: flips the sign of each difference
        n_resamples=cfg.n_permutations,
        alternative="two-sided",
        random_state=cfg.seed,
    )
    return float(min(1.0, res.pvalue))


def _p_wilcoxon(d: np.ndarray) -> float | None:
    if not np.any(d != 0):
        return None
    return float(stats.wilcoxon(d, zero_method="zsplit", alternative="two-sided").pvalue)


def compare_pair(
    *,
    a: str,
    b: str,
    values_a: Mapping[str, float],
    values_b: Mapping[str, float],
    metric: str = "trust",
    config: CompareConfig | None = None,
) -> PairComparison:
    """Compare ``a`` with ``b`` over the items both have (``p_holm`` = ``p_permutation``).

    Raises:
        ComparisonError: fewer than ``config.min_items`` shared items.
    """
    cfg = config or CompareConfig()
    shared = sorted(set(values_a) & set(values_b))
    if len(shared) < cfg.min_items:
        raise ComparisonError(
            f"{a} and {b} share {len(shared)} completed item(s) on {metric} ({a}: "
            f"{len(values_a)}, {b}: {len(values_b)}); a paired comparison needs at least "
            f"{cfg.min_items} (min_items)"
        )
    x = np.array([values_a[i] for i in shared], dtype=np.float64)
    y = np.array([values_b[i] for i in shared], dtype=np.float64)
    d = x - y
    low, high = bootstrap_ci(d, n_boot=cfg.n_boot, confidence=cfg.confidence, seed=cfg.seed)
    p = _p_permutation(d, cfg)
    wins = int((d > cfg.tie_margin).sum())
    losses = int((d < -cfg.tie_margin).sum())
    order = sorted(range(len(shared)), key=lambda k: (-abs(d[k]), shared[k]))
    top = tuple(
        ItemDifference(shared[k], float(x[k]), float(y[k]), float(d[k]))
        for k in order[: cfg.top]
        if abs(d[k]) > cfg.tie_margin
    )
    return PairComparison(
        a=a,
        b=b,
        metric=metric,
        n=len(shared),
        mean_a=float(x.mean()),
        mean_b=float(y.mean()),
        mean_difference=float(d.mean()),
        ci_low=low,
        ci_high=high,
        p_permutation=p,
        p_wilcoxon=_p_wilcoxon(d),
        p_holm=p,
        wins=wins,
        ties=len(shared) - wins - losses,
        losses=losses,
        disagreements=top,
        only_a=len(set(values_a) - set(values_b)),
        only_b=len(set(values_b) - set(values_a)),
    )


def _completed_cards(cards: Iterable[ScoreCard]) -> dict[str, dict[str, ScoreCard]]:
    out: dict[str, dict[str, ScoreCard]] = {}
    for card in cards:
        bucket = out.setdefault(card.subject, {})
        if card.status != "failed":
            bucket[card.item_id] = card
    return out


def _mean(xs: Iterable[float | None]) -> float:
    got = [x for x in xs if x is not None and math.isfinite(x)]
    return float(np.mean(got)) if got else math.nan


def _beside(
    a: str, b: str, by: Mapping[str, Mapping[str, ScoreCard]], fusion: FusionConfig
) -> dict[str, object]:
    """Full trust and coverage of both subjects over the items both completed, and a note."""
    shared = sorted(set(by[a]) & set(by[b]))
    out: dict[str, object] = {
        "trust_a": _mean(by[a][i].trust for i in shared),
        "trust_b": _mean(by[b][i].trust for i in shared),
        "coverage_a": _mean(card_coverage(by[a][i], fusion) for i in shared),
        "coverage_b": _mean(card_coverage(by[b][i], fusion) for i in shared),
    }
    ca, cb = out["coverage_a"], out["coverage_b"]
    if isinstance(ca, float) and isinstance(cb, float) and f"{ca:.0%}" != f"{cb:.0%}":
        low, high = (a, b) if ca < cb else (b, a)
        out["note"] = (
            f"{low} was scored on less of the trust's weight ({min(ca, cb):.0%} vs "
            f"{max(ca, cb):.0%}): compared on what both were scored on; its full trust leaves "
            f"out checks {high} was scored on"
        )
    return out


def compare_subjects(
    *,
    cards: Iterable[ScoreCard],
    subjects: Sequence[str] | None = None,
    metric: str = "trust",
    config: CompareConfig | None = None,
    fusion: FusionConfig | None = None,
) -> ComparisonResult:
    """Every pair of ``subjects`` (default: all of the run's), Holm-corrected across pairs.

    On ``trust`` each pair is compared on its matched trust (the modules both subjects were
    scored on, item by item; see the module docstring); on a module, on that module's value.
    ``subjects`` may name the same subject twice (a null comparison: every difference is 0).

    Args:
        cards: The run's ScoreCards.
        subjects: The subjects to compare (default: all).
        metric: ``trust`` or a module of :func:`comparable`.
        config: Items needed, bootstrap, permutations, ties.
        fusion: The weights the cards were fused with (default: the default weights).

    Raises:
        ComparisonError: an unknown metric or subject, fewer than two subjects, or a pair with
            fewer than ``min_items`` shared items (the message names the pair).
    """
    cfg = config or CompareConfig()
    fusion = fusion or FusionConfig()
    cards = list(cards)
    values = completed_values(cards, metric=metric)
    by = _completed_cards(cards)
    chosen = tuple(subjects) if subjects is not None else tuple(sorted(values))
    unknown = [s for s in chosen if s not in values]
    if unknown:
        raise ComparisonError(
            f"no card of subject(s) {', '.join(unknown)} in the run; subjects: "
            f"{', '.join(sorted(values)) or '(none)'}"
        )
    if len(chosen) < 2:
        raise ComparisonError(f"a comparison needs two subjects; got {list(chosen)}")
    pairs = []
    for a, b in itertools.combinations(chosen, 2):
        va, vb, on = values[a], values[b], metric
        if metric == "trust":
            shared = sorted(set(by[a]) & set(by[b]))
            pair_subjects = list(dict.fromkeys((a, b)))  # a null comparison names one twice
            matched = matched_values(by, subjects=pair_subjects, items=shared, fusion=fusion)
            va, vb, on = matched.values[a], matched.values[b], matched.description
        try:
            pair = compare_pair(a=a, b=b, values_a=va, values_b=vb, metric=metric, config=cfg)
        except ComparisonError as e:
            unmatched = len(set(by[a]) & set(by[b])) - len(va)
            if metric != "trust" or unmatched <= 0:
                raise
            raise ComparisonError(
                f"{e}; {unmatched} item(s) both completed share no scored module"
            ) from e
        extra = {
            "matched_on": on,
            "only_a": len(set(values[a]) - set(values[b])),
            "only_b": len(set(values[b]) - set(values[a])),
            **_beside(a, b, by, fusion),
        }
        pairs.append(PairComparison(**{**vars(pair), **extra}))
    adjusted = holm([p.p_permutation for p in pairs])
    pairs = [
        PairComparison(**{**vars(p), "p_holm": q}) for p, q in zip(pairs, adjusted, strict=True)
    ]
    return ComparisonResult(metric=metric, subjects=chosen, pairs=tuple(pairs), config=cfg)
