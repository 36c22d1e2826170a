"""How Logic forms, checks and aggregates pairs."""

from __future__ import annotations

from dataclasses import dataclass, field

from pathgls.errors import ConfigError
from pathgls.text.consistency.hits import CheckWeights


@dataclass(frozen=True)
class LogicConfig:
    """How pairs are formed, checked and aggregated."""

    # K = ceil(top_k_fraction × number of pairs), at least 1 (PathGLS: 0.3).
    top_k_fraction: float = 0.3
    # A fixed K instead of the fraction (None: use the fraction).
    top_k: int | None = None
    # Pair a benign with a malignant diagnosis of one tissue (and a diagnosis with its denial).
    diagnosis_pairs: bool = True
    # At most this many pairs (check hits first), to bound NLI cost.
    max_pairs: int = 2000
    # Run the graph-consistency checks (with an NLI model: a pair's probability is the larger).
    checks: bool = True
    # Contradiction probability of a pair when there is no model and no check fires.
    base_probability: float = 0.02
    # Probability of each check when it fires.
    weights: CheckWeights = field(default_factory=CheckWeights)

    def __post_init__(self) -> None:
        if not 0 < self.top_k_fraction <= 1:
            raise ConfigError(f"top_k_fraction must be in (0, 1], got {self.top_k_fraction}")
        if self.top_k is not None and self.top_k < 1:
            raise ConfigError(f"top_k must be >= 1, got {self.top_k}")
        if self.max_pairs < 1:
            raise ConfigError(f"max_pairs must be >= 1, got {self.max_pairs}")
        if not 0.0 <= self.base_probability < 1.0:
            raise ConfigError(f"base_probability must be in [0, 1), got {self.base_probability}")
