"""The NLI scorer protocol and its registry.

An NLI scorer gives, for aligned lists of premises and hypotheses, the probability that the
hypothesis *contradicts* the premise. Backends: ``hf[:<model>]`` (any Hugging Face sequence
classifier with an NLI head) and ``rules`` (offline clinical contradiction rules).
"""

from __future__ import annotations

from dataclasses import dataclass

from pathgls.logic.base import NLIScorer  # the protocol lives with Logic, one floor down
from pathgls.registry import Registry

__all__ = ["NLI_BACKENDS", "NLIScorer", "RuleHit", "register_nli"]


@dataclass(frozen=True)
class RuleHit:
    """Why the rules backend called a pair contradictory."""

    rule: str  # e.g. "negation", "benign_vs_malignant", "grade", "marker_result"
    probability: float
    premise_entity: str  # the entity text on the premise side
    hypothesis_entity: str  # the entity text on the hypothesis side
    explanation: str


#: The NLI registry: factories ``(argument) -> NLIScorer`` (filled by the backend modules when
#: ``pathgls.nli`` is imported). ``build("hf:/models/nli")`` calls the ``hf`` factory.
NLI_BACKENDS: Registry[NLIScorer] = Registry("nli", label="NLI backend")
register_nli = NLI_BACKENDS.register
