"""Logic with a judge that embeds: top-K similar statement pairs plus the checks' pairs.

With an NLI backend that can embed statements (the learned judge, :mod:`pathgls.nli.judge`),
every judge unit (:func:`pathgls.logic.units.judge_units`: the case model's assertions, one
field line each, shown with their specimen part) is embedded once; each is paired with its
``judge_neighbours`` most similar units, and with every unit a check compared it with
(same-target pairs of the case model). At most ``judge_max_pairs`` pairs are judged (check pairs
first, then by similarity), in batches. No unit is paired with itself.

Fusion. The judge's probability is calibrated so that its decision threshold τ (chosen on
dev data, :func:`judge_calibrated`) lands on 0.2 — S_l's 0.8 line. The checks keep their own
score, computed exactly as the offline ``rules`` backend does over the pairs they compared
(S_checks = 1 − mean of the top ⌈0.3·pairs⌉ probabilities); the judge's is the strongest
contradiction it found (S_judge = 1 − mean of the ``judge_top_k`` largest calibrated
probabilities, K = 1 by default). The report's score is the lower of the two present:

    S_l = min(S_checks, S_judge).

So the judge can only add contradictions to what the checks find, never hide one; each pair's
evidence probability is max(judge calibrated, strongest check on it).

A pair *contradicts* when a check fired on it or its calibrated judge probability is ≥ 0.2. A
check that fires within one unit ("glioblastoma, WHO grade II") is its own entry, not a pair of
the unit with itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from pathgls.config import LogicConfig
from pathgls.logic.checks import Comparison
from pathgls.logic.units import Unit, judge_units
from pathgls.text.case import Case

#: A calibrated judge probability at or above this calls the pair a contradiction.
CALLED = 0.2


@runtime_checkable
class EmbeddingJudge(Protocol):
    """An NLI scorer that also embeds statements and has a decision threshold."""

    name: str
    threshold: float

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]: ...

    def contradiction(
        self, premises: Sequence[str], hypotheses: Sequence[str]
    ) -> NDArray[np.float64]: ...


@dataclass
class JudgedPair:
    """One scored pair of units (``b`` is ``a`` for a check that fired within one unit)."""

    a: int
    b: int
    kind: str  # "similar", "check", "within-statement"
    similarity: float | None = None
    judge: float | None = None  # the judge's own probability (None: not judged)
    calibrated: float = 0.0
    checks: list[Comparison] = field(default_factory=list)  # conflicts on the pair

    @property
    def check_probability(self) -> float:
        return max((c.probability for c in self.checks), default=0.0)

    @property
    def probability(self) -> float:
        return max(self.calibrated, self.check_probability)

    @property
    def contradicts(self) -> bool:
        return bool(self.checks) or self.calibrated >= CALLED

    @property
    def source(self) -> str:
        rule = f"check:{self.checks[0].rule}" if self.checks else ""
        if self.judge is not None and self.calibrated >= CALLED:
            return "judge" + (f"+{rule}" if rule else "")
        return rule or "judge"


@dataclass
class JudgedReport:
    """The units of a report and its scored pairs."""

    units: list[Unit]
    texts: list[str]  # the units as the judge read them
    pairs: list[JudgedPair]


def judge_calibrated(p: NDArray[np.float64], threshold: float) -> NDArray[np.float64]:
    """The judge's probability placed on Logic's scale: ``threshold`` ↦ 0.2 (S_l's 0.8 line).

    Piecewise linear and monotone: [0, t] → [0, 0.2], [t, 1] → [0.2, 1]. A pair is called a
    contradiction exactly when its calibrated probability reaches 0.2.
    """
    t = min(max(float(threshold), 1e-6), 1 - 1e-6)
    p = np.clip(np.asarray(p, dtype=np.float64), 0.0, 1.0)
    return np.where(p < t, CALLED * p / t, CALLED + (1 - CALLED) * (p - t) / (1 - t))


def _shown(case: Case, u: Unit) -> str:
    part = case.document.statements[u.statement].part
    return f"({part}) {u.text}" if part else u.text


def _unit_of(units: Sequence[Unit], statement: int, offset: int) -> int | None:
    first = None
    for i, u in enumerate(units):
        if u.statement == statement:
            if u.start <= offset < u.end:
                return i
            first = i if first is None else first
    return first


def judge_report(
    case: Case,
    comparisons: Sequence[Comparison],
    judge: EmbeddingJudge,
    config: LogicConfig,
) -> JudgedReport:
    """Units, pairs and probabilities of one report (see the module docstring)."""
    units = judge_units(case, max_units=config.judge_max_units)
    texts = [_shown(case, u) for u in units]
    pairs: dict[tuple[int, int], JudgedPair] = {}
    within: list[JudgedPair] = []
    for c in comparisons:
        ia = _unit_of(units, c.a.statement, c.a.start)
        ib = _unit_of(units, c.b.statement, c.b.start)
        if ia is None or ib is None:
            continue
        if ia == ib:
            if c.conflict:
                within.append(JudgedPair(ia, ia, "within-statement", checks=[c]))
            continue
        key = (min(ia, ib), max(ia, ib))
        p = pairs.setdefault(key, JudgedPair(*key, "check"))
        if c.conflict:
            p.checks.append(c)
    budget = config.judge_max_pairs
    if len(units) >= 2 and config.judge_neighbours > 0:
        emb = np.asarray(judge.embed(texts), dtype=np.float32)
        sim = emb @ emb.T
        np.fill_diagonal(sim, -np.inf)
        k = min(config.judge_neighbours, len(units) - 1)
        near = np.argpartition(-sim, k - 1, axis=1)[:, :k]
        ranked: list[tuple[float, int, int]] = []
        for i in range(len(units)):
            for j in near[i]:
                key = (min(i, int(j)), max(i, int(j)))
                ranked.append((float(sim[i, j]), *key))
        ranked.sort(key=lambda x: (-x[0], x[1], x[2]))
        for s, i, j in ranked:
            if (i, j) in pairs:
                if pairs[(i, j)].similarity is None:
                    pairs[(i, j)].similarity = s
                continue
            if len(pairs) >= budget:
                break
            pairs[(i, j)] = JudgedPair(i, j, "similar", similarity=s)
    judged = list(pairs.values())[:budget] if len(pairs) > budget else list(pairs.values())
    if judged:
        probs = np.asarray(
            judge.contradiction([texts[p.a] for p in judged], [texts[p.b] for p in judged]),
            dtype=np.float64,
        )
        if probs.shape != (len(judged),) or not np.all(np.isfinite(probs)):
            raise ValueError(f"judge {judge.name!r} returned misshaped or non-finite probabilities")
        cal = judge_calibrated(probs, judge.threshold)
        for p, raw, c in zip(judged, probs, cal, strict=True):
            p.judge = float(raw)
            p.calibrated = float(c)
    return JudgedReport(units, texts, [*judged, *within])
