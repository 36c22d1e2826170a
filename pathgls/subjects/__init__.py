"""Subject VLM adapters: OpenAI-compatible HTTP, local transformers, replay, and the captioner.

``build_subject("openai:http://localhost:8000/v1#llava")`` parses the spec once and calls the
factory registered for its kind (see :mod:`pathgls.subjects.base`). Importing this package
registers every backend; none loads a model or opens a connection until it is built.

May import: core, :mod:`pathgls.config`, :mod:`pathgls.io`, :mod:`pathgls.hub`,
:mod:`pathgls.llm`, :mod:`pathgls.tiling`, :mod:`pathgls.encoders`, :mod:`pathgls.features`,
:mod:`pathgls.text`.
"""

from __future__ import annotations

from pathgls.registry import RegistryEntry
from pathgls.subjects import captioner as _captioner
from pathgls.subjects import hf as _hf
from pathgls.subjects import openai as _openai
from pathgls.subjects import replay as _replay
from pathgls.subjects.base import (
    SUBJECTS,
    Subject,
    SubjectConfig,
    SubjectError,
    parse_subject_spec,
)
from pathgls.subjects.cache import Generation, SubjectCache, cached_generate

del _captioner, _hf, _openai, _replay


def build_subject(spec: str, config: SubjectConfig | None = None) -> Subject:
    """Build the subject named by ``spec``.

    Raises:
        UnknownNameError: unknown kind (the message lists the known ones).
        ConfigError: a malformed spec or config.
        ModelNotFoundError: local weights (hf) are missing.
    """
    return SUBJECTS.build(spec, config or SubjectConfig())


def list_subjects() -> list[RegistryEntry[Subject]]:
    """The registered subject kinds, sorted by name."""
    return SUBJECTS.entries()


__all__ = [
    "Generation",
    "Subject",
    "SubjectCache",
    "SubjectConfig",
    "SubjectError",
    "build_subject",
    "cached_generate",
    "list_subjects",
    "parse_subject_spec",
]
