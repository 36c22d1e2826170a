"""The NLI scorer protocol and its registry.

An NLI scorer gives, for aligned lists of premises and hypotheses, the probability that the
hypothesis *contradicts* the premise. Backends: ``hf:<repo-or-dir>`` (any Hugging Face
sequence classifier with an NLI head) and ``rules`` (offline clinical contradiction rules).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from pathgls.errors import UnknownNameError


@runtime_checkable
class NLIScorer(Protocol):
    """``contradiction(premises, hypotheses)`` → float array of P(contradiction), one per pair."""

    name: str

    def contradiction(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class RuleHit:
    """Why the rules backend called a pair contradictory."""

    rule: str  # e.g. "negation", "benign_vs_malignant", "grade", "marker_result"
    probability: float
    premise_entity: str  # the entity text on the premise side
    hypothesis_entity: str  # the entity text on the hypothesis side
    explanation: str


NLIFactory = Callable[[str], NLIScorer]


@dataclass
class NLIRegistry:
    """Scheme → factory: ``build("hf:/models/nli")`` calls the ``hf`` factory with the rest."""

    factories: dict[str, NLIFactory] = field(default_factory=dict)
    descriptions: dict[str, str] = field(default_factory=dict)

    def register(self, scheme: str, *, description: str) -> Callable[[NLIFactory], NLIFactory]:
        def deco(fn: NLIFactory) -> NLIFactory:
            self.factories[scheme] = fn
            self.descriptions[scheme] = description
            return fn

        return deco

    def build(self, spec: str) -> NLIScorer:
        scheme, _, arg = spec.partition(":")
        if scheme not in self.factories:
            raise UnknownNameError(
                f"unknown NLI backend {spec!r}; known: {', '.join(sorted(self.factories))}"
            )
        return self.factories[scheme](arg)


#: The NLI registry (filled by the backend modules when ``pathgls.nli`` is imported).
NLI_BACKENDS = NLIRegistry()
register_nli = NLI_BACKENDS.register
