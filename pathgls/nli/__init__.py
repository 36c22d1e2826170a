"""NLI backends: P(contradiction) between premise and hypothesis sentences of one report.

Build one with :func:`build_nli` from a spec: ``hf:<model>`` (any Hugging Face sequence
classifier with an NLI head, by repo id or local path; plain ``hf`` is DeBERTa-v3-base
fine-tuned for NLI, the ``nli-deberta`` model card), ``judge[:<dir>]`` (pathgls's learned
contradiction judge, trained here from real reports and shipped; offline) and ``rules``
(offline clinical contradiction rules over lexicon entities, with explanations). Weights are
only ever read from local directories (``pathgls models pull nli-deberta`` / ``hf:<repo>``
fetches them).
Importing this package loads no model and touches no network.

May import: core, :mod:`pathgls.config`, :mod:`pathgls.hub`, :mod:`pathgls.text`.
"""

from __future__ import annotations

from pathgls.nli import hf as _hf  # noqa: F401  (registers "hf")
from pathgls.nli import judge as _judge  # noqa: F401  (registers "judge")
from pathgls.nli import rules as _rules  # noqa: F401  (registers "rules")
from pathgls.nli.base import NLI_BACKENDS, NLIScorer, RuleHit
from pathgls.registry import RegistryEntry

__all__ = ["NLI_BACKENDS", "NLIScorer", "RuleHit", "build_nli", "list_nli"]


def build_nli(spec: str) -> NLIScorer:
    """Build the NLI scorer named by ``spec`` (``hf``, ``hf:<model>``, ``rules``).

    Raises:
        UnknownNameError: the backend is not registered.
        ModelNotFoundError: the model is not available locally (the message says how to pull).
        ConfigError: the model's labels do not map to NLI classes, or the spec is malformed.
        EncoderError: the weights are there but cannot be loaded.
    """
    return NLI_BACKENDS.build(spec)


def list_nli() -> list[RegistryEntry[NLIScorer]]:
    """The registered NLI backends, sorted by name."""
    return NLI_BACKENDS.entries()
