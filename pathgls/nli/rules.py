"""Offline clinical contradiction rules: an NLI scorer without a model that explains itself.

The premise and the hypothesis are read as one two-part report (the premise first, a blank line,
the hypothesis) and the graph-consistency checks of :mod:`pathgls.text.consistency` run over it;
a check whose two statements lie on different sides is a contradiction between the texts, and
the strongest one gives the probability (``base_probability`` when none fires). Every check is
symmetric in the two texts; scope still applies ("no metastasis in the remaining nodes" denies
nothing about "two nodes positive").

One rule is added for two texts that describe the same thing, as NLI pairs do:
``benign_vs_malignant`` also fires when one text diagnoses a benign neoplasm and the other a
malignancy of the same organ (within one report the two could coexist; between the premise
and the hypothesis of an NLI pair they are two answers to one question).

Within a report, Logic does not ask this backend pair by pair: it has no model
(:attr:`RulesNLI.model_free`), so the checks over the whole report, which see every statement
and scope, are its answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from pathgls.config import CheckWeights
from pathgls.nli.base import RuleHit, register_nli
from pathgls.text.analyze import analyze_report
from pathgls.text.base import EntityExtractor
from pathgls.text.consistency import run_checks
from pathgls.text.consistency.statements import DIAGNOSIS_TYPES, Statement, report_statements

_SEPARATOR = "\n\n"
_CACHE_LIMIT = 4096


class RulesNLI:
    """Contradiction probabilities from the consistency checks over two texts.

    Args:
        extractor: entity extractor for both texts (default: the ``lexicon`` backend).
        weights: probability of each check.
        base_probability: probability when no check fires (never exactly 0: rules are not proof
            of consistency).
    """

    name = "rules"
    #: No model: within a report, Logic's checks over all statements are this backend's answer.
    model_free = True

    def __init__(
        self,
        extractor: EntityExtractor | None = None,
        *,
        weights: CheckWeights | None = None,
        base_probability: float = 0.02,
    ) -> None:
        if extractor is None:
            from pathgls.text import build_extractor

            extractor = build_extractor("lexicon")
        self.extractor = extractor
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
        report = analyze_report(premise + _SEPARATOR + hypothesis, extractor=self.extractor)
        split = report.text.find(_SEPARATOR)
        rs = report_statements(report)

        def side(s: Statement) -> int:
            return 0 if s.entity.start < split else 1

        hits = []
        for h in run_checks(rs, weights=self.weights):
            if side(h.a) == side(h.b):
                continue
            p, q = (h.a, h.b) if side(h.a) == 0 else (h.b, h.a)
            hits.append(RuleHit(h.rule, h.probability, p.entity.text, q.entity.text, h.explanation))
        hits += self._benign_vs_malignant(rs.statements, side)
        return sorted(hits, key=lambda x: -x.probability)

    def _benign_vs_malignant(
        self, statements: list[Statement], side: Callable[[Statement], int]
    ) -> list[RuleHit]:
        dx = [s for s in statements if s.type in DIAGNOSIS_TYPES and s.affirmed]
        hits = []
        for b in dx:
            if b.attr("behavior") != "benign_neoplasm":
                continue
            if any(d.attr("behavior") == "malignant" and side(d) == side(b) for d in dx):
                continue  # "carcinoma arising in an adenoma" states both on one side
            for m in dx:
                if side(m) == side(b) or m.attr("behavior") != "malignant":
                    continue
                if b.scope.organ and m.scope.organ and b.scope.organ != m.scope.organ:
                    continue
                first, second = (b, m) if side(b) == 0 else (m, b)
                why = f"benign '{b.entity.text}' vs malignant '{m.entity.text}'"
                hits.append(
                    RuleHit(
                        "benign_vs_malignant",
                        self.weights.benign_vs_malignant,
                        first.entity.text,
                        second.entity.text,
                        why,
                    )
                )
        return hits

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
    description="offline, no model: the graph-consistency checks over lexicon entities and scopes",
)
def _build_rules(arg: str) -> RulesNLI:
    return RulesNLI()
