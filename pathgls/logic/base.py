"""The contradiction-scorer protocol Logic is given (an NLI model or the offline rules).

It lives with Logic, the floor below the NLI backends (:mod:`pathgls.nli`), because the offline
``rules`` backend is Logic's own checks over two texts; :mod:`pathgls.nli.base` re-exports it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray


@runtime_checkable
class NLIScorer(Protocol):
    """``contradiction(premises, hypotheses)`` → float array of P(contradiction), one per pair."""

    name: str

    def contradiction(
        self, premises: Sequence[str], hypotheses: Sequence[str]
    ) -> NDArray[np.float64]: ...
