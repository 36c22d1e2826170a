"""Offline clinical contradiction rules: an NLI scorer without a model that explains itself.

The premise and the hypothesis are read as one two-part report (the premise first, a blank line,
the hypothesis) into the typed case model (:mod:`pathgls.text.case`), and Logic's checks
(:mod:`pathgls.logic.checks`) run over it; a conflict whose two facts lie on different sides is
a contradiction between the texts, and the strongest one gives the probability
(``base_probability`` when none fires). Every check is symmetric in the two texts, and the
same-target rule still applies ("no metastasis in the remaining nodes" denies nothing about "two
nodes positive").

Within a report, Logic does not ask this backend pair by pair: it has no model
(:attr:`RulesNLI.model_free`), so the checks over the whole case model are its answer.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pathgls.config import CheckWeights
from pathgls.logic.checks import run_checks
from pathgls.logic.score import fact_label
from pathgls.nli.base import RuleHit, register_nli
from pathgls.text.case import build_case

_SEPARATOR = "\n\n"
_CACHE_LIMIT = 4096


class RulesNLI:
    """Contradiction probabilities from Logic's checks over two texts.

    Args:
        weights: probability of each check.
        base_probability: probability when no check fires (never exactly 0: rules are not proof
            of consistency).
    """

    name = "rules"
    #: No model: within a report, Logic's checks over the case model are this backend's answer.
    model_free = True

    def __init__(
        self, *, weights: CheckWeights | None = None, base_probability: float = 0.02
    ) -> None:
        self.weights = weights or CheckWeights()
        self.base_probability = base_probability
        self._cache: dict[tuple[str, str], list[RuleHit]] = {}

    def explain(self, premise: str, hypothesis: str) -> list[RuleHit]:
        """Every hit between the two texts, strongest first (premise side on the left)."""
        key = (premise, hypothesis)
        if key not in self._cache:
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[key] = self._explain(premise, hypothesis)
        return list(self._cache[key])

    def _explain(self, premise: str, hypothesis: str) -> list[RuleHit]:
        if not premise.strip() or not hypothesis.strip():
            return []
        case = build_case(premise.strip() + _SEPARATOR + hypothesis.strip())
        split = case.document.text.find(_SEPARATOR)
        hits = []
        for c in run_checks(case, weights=self.weights):
            if not c.conflict:
                continue
            sa, sb = c.a.start >= split, c.b.start >= split
            if sa == sb:
                continue
            p, q = (c.a, c.b) if not sa else (c.b, c.a)
            hits.append(
                RuleHit(
                    c.rule, c.probability, fact_label(case, p), fact_label(case, q), c.explanation
                )
            )
        return sorted(hits, key=lambda x: -x.probability)

    def contradiction(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        """P(contradiction) per pair: the strongest hit's probability, else the base."""
        if len(premises) != len(hypotheses):
            raise ValueError(f"{len(premises)} premises but {len(hypotheses)} hypotheses")
        out = np.full(len(premises), self.base_probability, dtype=np.float64)
        for i, (p, h) in enumerate(zip(premises, hypotheses, strict=True)):
            hits = self.explain(p, h)
            if hits:
                out[i] = max(self.base_probability, hits[0].probability)
        return out


@register_nli(
    "rules",
    description="offline, no model: Logic's consistency checks over the typed case model",
)
def _build_rules(arg: str) -> RulesNLI:
    return RulesNLI()
