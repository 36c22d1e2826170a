"""Coverage-aware ranking: subjects compared on the modules they were all scored on.

A card's trust is fused over the modules that could run (:func:`pathgls.fusion.fuse`), so a
subject whose reports give the checks nothing to hold on to — a captioner that states no
diagnosis has no Logic — gets a trust made of fewer, easier numbers: Stability alone can be
1.000 where a full report's trust carries a Logic penalty. Two such numbers do not measure the
same thing. The rule (docs/scores.md states it for users):

1. **Items.** Subjects are ranked over the items every ranked subject completed (card not
   failed); a subject without any completed item is unranked.
2. **Coverage.** A card's *coverage* is the share of the fusion weight, over the modules its
   item can have (a reference module without a reference is absent), carried by the modules
   that were scored (:attr:`pathgls.fusion.FusionResult.coverage`). A subject's coverage is its
   mean over the items, with a bootstrap CI.
3. **Coverage first.** Subjects whose coverage CIs lie apart are ordered by coverage
   (:func:`pathgls.meta.compare.rank_with_ties` on coverage; subjects sharing a coverage rank
   form a *tier*). A subject with clearly less coverage is never ranked above one with more:
   its trust escaped checks the other was penalised on.
4. **Matched trust within a tier.** On each item, the modules every subject of the tier was
   scored on are the *matched* modules; each subject's trust is fused again over exactly those
   (same weights, renormalised) — its *matched trust*. Subjects of a tier are ranked by mean
   matched trust, tied where the CIs overlap; the overall rank adds the subjects of the better
   tiers. The matched modules are named with the number of items each set was used on. A
   tier whose subjects share no scored module on any item is tied below the better tiers.

The pairwise comparison (:func:`pathgls.meta.compare.compare_subjects`) uses the same matched
trust for each pair: the modules both subjects were scored on, item by item.

Pure functions over ScoreCards; no I/O.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from pathgls.config import FusionConfig
from pathgls.fusion import fuse
from pathgls.meta.stats import BootstrapArgs, bootstrap_ci, rank_with_ties
from pathgls.types import ScoreCard

#: One line of the rule, for captions and table notes.
RULE = (
    "rank: coverage first (share of the trust's weight that was scored; tied where the CIs "
    "overlap), then the trust over the modules every subject of that coverage tier was scored "
    "on, item by item (matched trust; tied where the CIs overlap)"
)


def card_modules(card: ScoreCard, fusion: FusionConfig) -> frozenset[str]:
    """The modules fused into the card's trust (scored, with a weight > 0)."""
    if card.status == "failed":
        return frozenset()
    return frozenset(fuse(modules=card.modules, config=fusion).used)


def card_coverage(card: ScoreCard, fusion: FusionConfig) -> float | None:
    """The card's coverage (share of the fusion weight scored), None for a failed card."""
    if card.status == "failed":
        return None
    return fuse(modules=card.modules, config=fusion).coverage


def matched_trust(card: ScoreCard, modules: Iterable[str], fusion: FusionConfig) -> float | None:
    """The card's trust fused again over ``modules`` only (None: none of them scored)."""
    keep = set(modules)
    sub = {name: score for name, score in card.modules.items() if name in keep}
    if not sub:
        return None
    return fuse(modules=sub, config=fusion).trust


def describe_modules(counts: Mapping[frozenset[str], int]) -> str:
    """``{{logic, stability}: 6, {stability}: 1}`` → ``"logic+stability (6 items), stability
    (1 item)"``; the most used set first."""
    if not counts:
        return "no module shared"
    parts = []
    for modules, n in sorted(counts.items(), key=lambda kv: (-kv[1], sorted(kv[0]))):
        names = "+".join(sorted(modules)) or "none"
        parts.append(f"{names} ({n} item{'s' if n != 1 else ''})")
    return ", ".join(parts)


@dataclass(frozen=True)
class MatchedValues:
    """Each subject's matched trust per item, and the module set each item used."""

    values: dict[str, dict[str, float]]  # subject → item → matched trust
    modules: dict[str, frozenset[str]]  # item → matched modules (items with a value)

    @property
    def description(self) -> str:
        """The matched modules with the number of items each set was used on."""
        return describe_modules(Counter(self.modules.values()))


def matched_values(
    cards: Mapping[str, Mapping[str, ScoreCard]],
    *,
    subjects: Sequence[str],
    items: Iterable[str],
    fusion: FusionConfig,
) -> MatchedValues:
    """Matched trust of ``subjects`` on ``items``: fused over the modules all of them have.

    Args:
        cards: subject → item → card.
        subjects: The subjects matched together.
        items: The items (each subject must have a card for each).
        fusion: Weights of the fusion.

    Returns:
        Values for the items where the subjects share at least one scored module.
    """
    values: dict[str, dict[str, float]] = {s: {} for s in subjects}
    used: dict[str, frozenset[str]] = {}
    for item in items:
        sets = [card_modules(cards[s][item], fusion) for s in subjects]
        common = frozenset.intersection(*sets) if sets else frozenset()
        if not common:
            continue
        got = {s: matched_trust(cards[s][item], common, fusion) for s in subjects}
        if any(v is None for v in got.values()):
            continue
        for s, v in got.items():
            values[s][item] = float(v)  # type: ignore[arg-type]
        used[item] = common
    return MatchedValues(values=values, modules=used)


@dataclass(frozen=True)
class Standing:
    """Where one subject stands, and on what numbers."""

    subject: str
    rank: int | None  # 1 = best; None: unranked (see Ranking.unranked)
    tier: int | None  # coverage tier, 1 = most coverage
    coverage: float  # mean coverage over the ranked items (NaN: unranked)
    coverage_ci: tuple[float, float]
    matched: float  # mean matched trust over the tier's items (NaN: none)
    matched_ci: tuple[float, float]
    matched_n: int  # items with a matched trust
    matched_on: str  # the tier's matched modules, with item counts


@dataclass(frozen=True)
class Ranking:
    """Every subject's standing, best first, and the items the ranking used."""

    standings: tuple[Standing, ...]
    items: tuple[str, ...]  # the items every ranked subject completed
    unranked: dict[str, str] = field(default_factory=dict)  # subject → why

    def of(self, subject: str) -> Standing | None:
        """The standing of ``subject`` (None: not in the run)."""
        return next((s for s in self.standings if s.subject == subject), None)


def _stats(
    xs: Sequence[float], *, n_boot: int, confidence: float, seed: int
) -> tuple[float, tuple[float, float]]:
    if not xs:
        return math.nan, (math.nan, math.nan)
    return float(np.mean(xs)), bootstrap_ci(xs, n_boot=n_boot, confidence=confidence, seed=seed)


def rank_subjects(
    cards: Iterable[ScoreCard],
    *,
    fusion: FusionConfig | None = None,
    n_boot: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Ranking:
    """Rank the subjects of a run by coverage, then matched trust (see the module docstring).

    Args:
        cards: The run's ScoreCards.
        fusion: The weights the cards were fused with (default: the default weights).
        n_boot: Bootstrap resamples of each CI.
        confidence: Coverage of the CIs.
        seed: Seed of every bootstrap, so the ranking is reproducible.

    Returns:
        Standings sorted by rank (unranked last, then by subject).
    """
    fusion = fusion or FusionConfig()
    by_subject: dict[str, dict[str, ScoreCard]] = {}
    for card in cards:
        by_subject.setdefault(card.subject, {})
        if card.status != "failed":
            by_subject[card.subject][card.item_id] = card
    unranked = {s: "no completed item" for s, got in by_subject.items() if not got}
    ranked = sorted(s for s, got in by_subject.items() if got)
    shared = sorted(set.intersection(*(set(by_subject[s]) for s in ranked))) if ranked else []
    if ranked and not shared:
        unranked |= {s: "no item completed by every subject" for s in ranked}
        ranked = []
    boot = BootstrapArgs(n_boot=n_boot, confidence=confidence, seed=seed)
    coverage = {}
    for s in ranked:
        xs = [card_coverage(by_subject[s][i], fusion) or 0.0 for i in shared]
        coverage[s] = _stats(xs, **boot)
    cov_rank = rank_with_ties(
        [coverage[s][0] for s in ranked],
        [coverage[s][1][0] for s in ranked],
        [coverage[s][1][1] for s in ranked],
    )
    tiers = sorted({r for r in cov_rank if r is not None})
    standings: list[Standing] = []
    better = 0
    for tier_no, tier_rank in enumerate(tiers, start=1):
        members = [s for s, r in zip(ranked, cov_rank, strict=True) if r == tier_rank]
        matched = matched_values(by_subject, subjects=members, items=shared, fusion=fusion)
        stats = {s: _stats(list(matched.values[s].values()), **boot) for s in members}
        inner = rank_with_ties(
            [stats[s][0] for s in members],
            [stats[s][1][0] for s in members],
            [stats[s][1][1] for s in members],
        )
        for s, r in zip(members, inner, strict=True):
            # no module shared on any item (the tier's subjects were scored on nothing in
            # common): they are tied below the better tiers, with no matched trust
            rank = better + (r if r is not None else 1)
            standings.append(
                Standing(
                    subject=s,
                    rank=rank,
                    tier=tier_no,
                    coverage=coverage[s][0],
                    coverage_ci=coverage[s][1],
                    matched=stats[s][0],
                    matched_ci=stats[s][1],
                    matched_n=len(matched.values[s]),
                    matched_on=matched.description,
                )
            )
        better += len(members)
    nan2 = (math.nan, math.nan)
    for s in sorted(unranked):
        standings.append(Standing(s, None, None, math.nan, nan2, math.nan, nan2, 0, ""))
    standings.sort(key=lambda st: (st.rank is None, st.rank or 0, st.subject))
    return Ranking(standings=tuple(standings), items=tuple(shared), unranked=unranked)
