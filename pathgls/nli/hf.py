"""Hugging Face NLI backend: ``hf:<model>``, any sequence classifier with an NLI head.

``<model>`` is a repo id (``org/name[@revision]``) or a local path (``dir:``, ``/``, ``./``,
``../``, ``~``; see :func:`pathgls.registry.parse_model_ref`). The default model is the
``nli-deberta`` model card (``MoritzLaurer/DeBERTa-v3-base-mnli-fever-anli``: DeBERTa-v3-base
fine-tuned on MultiNLI, Fever-NLI and ANLI, the paper's backbone); ``nli-pubmedbert``
(``pritamdeka/PubMedBERT-MNLI-MedNLI``: PubMedBERT fine-tuned on MNLI then MedNLI) is the
biomedical alternative. Weights are read from local directories only (:mod:`pathgls.hub.store`:
the models directory, then the Hugging Face cache); a missing model is a
:class:`~pathgls.errors.ModelNotFoundError` that names the ``pathgls models pull`` command.

Which output is "contradiction" is read from ``config.id2label`` by label *name* — checkpoints
disagree on the order (MoritzLaurer: entailment, neutral, contradiction; PubMedBERT-MNLI-MedNLI:
contradiction, entailment, neutral) — never from a position.

Scoring is batched: identical pairs are scored once, pairs are tokenised once, sorted by
length and cut into batches padded to their own longest pair (dynamic padding), and the
results come back in the input order. Probabilities are a softmax over all the classes.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from pathgls.errors import ConfigError, EncoderError
from pathgls.hub import store as hub
from pathgls.hub.cards import model_card
from pathgls.hub.device import resolve_device, resolve_precision, torch_dtype
from pathgls.hub.hf import load_checked, model_max_length, saved_precision
from pathgls.nli.base import register_nli
from pathgls.registry import parse_model_ref

logger = logging.getLogger(__name__)

#: The default ``hf`` model: DeBERTa-v3-base fine-tuned for NLI (MNLI + Fever-NLI + ANLI).
DEFAULT_NLI_MODEL = model_card("nli-deberta").repo
#: A biomedical alternative: PubMedBERT fine-tuned on MNLI, then MedNLI.
MEDICAL_NLI_MODEL = model_card("nli-pubmedbert").repo
#: Column order of :meth:`HFNLIScorer.probabilities`.
NLI_CLASSES = ("entailment", "neutral", "contradiction")

Truncation = Literal["longest_first", "only_first"]

# A label name (lower case, letters only) names a class when it starts with one of these.
_LABEL_PREFIXES = {
    "entailment": ("entail",),
    "neutral": ("neutral",),
    "contradiction": ("contradict", "contra"),
}
# Fallback when neither the tokenizer nor the config gives a usable maximum length.
_DEFAULT_MAX_LENGTH = 512


def _label_class(label: str) -> str | None:
    """The NLI class a label name stands for (``CONTRADICTION``, ``Entails``, ...), or None."""
    letters = re.sub(r"[^a-z]", "", label.lower())
    for cls, prefixes in _LABEL_PREFIXES.items():
        if letters.startswith(prefixes):
            return cls
    return None


def map_nli_labels(id2label: Mapping[int, str] | Mapping[str, str]) -> dict[str, int]:
    """Class → output index, read from a model's ``id2label`` by label name.

    Names are matched case-insensitively on their letters: ``entail…`` is entailment,
    ``neutral…`` neutral, ``contradict…``/``contra…`` contradiction. Entailment and
    contradiction are required; neutral may be absent (a two-way model).

    Args:
        id2label: ``config.id2label`` (keys may be ints or digit strings).

    Returns:
        ``{"entailment": i, "contradiction": j}`` plus ``"neutral": k`` when present.

    Raises:
        ConfigError: a label names no NLI class (e.g. ``LABEL_0``), two labels name the same
            class, or entailment or contradiction is missing.
    """
    mapping: dict[str, int] = {}
    shown = ", ".join(f"{k}: {v!r}" for k, v in sorted(id2label.items(), key=lambda kv: int(kv[0])))
    for key, label in id2label.items():
        cls = _label_class(str(label))
        if cls is None:
            raise ConfigError(
                f"cannot map the classifier's label {label!r} to an NLI class (id2label: "
                f"{{{shown}}}); an NLI model must name its labels entailment / neutral / "
                "contradiction in config.json (set id2label there if the checkpoint uses "
                "LABEL_0, LABEL_1, ...)"
            )
        if cls in mapping:
            raise ConfigError(f"two labels map to {cls} (id2label: {{{shown}}})")
        mapping[cls] = int(key)
    missing = [c for c in ("entailment", "contradiction") if c not in mapping]
    if missing:
        raise ConfigError(f"no {' or '.join(missing)} label in id2label {{{shown}}}")
    return mapping


class HFNLIScorer:
    """A loaded Hugging Face NLI classifier, scoring premise/hypothesis pairs in batches.

    Build it with :func:`load_hf_nli` or ``NLI_BACKENDS.build("hf:<model>")``.

    Attributes:
        name: The spec it was built from (``hf:...``).
        model_id: Repo id, or the local path when the repo cannot be told.
        revision: Commit of the snapshot when known.
        random_weights: The directory carries pathgls' random-weights marker.
        device: Torch device the model runs on.
        precision: ``fp32``, ``fp16`` or ``bf16``.
        batch_size: Pairs per forward pass.
        max_length: Token limit of a pair (premise and hypothesis together).
        truncation: How a pair over ``max_length`` is cut (a Hugging Face strategy).
        label_index: NLI class → output index of the model.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        name: str,
        model_id: str,
        label_index: Mapping[str, int],
        device: torch.device,
        precision: str,
        revision: str | None = None,
        random_weights: bool = False,
        batch_size: int = 32,
        max_length: int = _DEFAULT_MAX_LENGTH,
        truncation: Truncation = "longest_first",
    ) -> None:
        if batch_size < 1:
            raise ConfigError(f"NLI batch_size must be >= 1, got {batch_size}")
        if truncation not in ("longest_first", "only_first"):
            raise ConfigError(
                f"NLI truncation must be longest_first or only_first, got {truncation!r}"
            )
        self.model = model
        self.tokenizer = tokenizer
        self.name = name
        self.model_id = model_id
        self.revision = revision
        self.random_weights = random_weights
        self.device = str(device)
        self.precision = precision
        self.batch_size = batch_size
        self.max_length = max_length
        self.truncation = truncation
        self.label_index = dict(label_index)
        self._torch_device = device
        self._pad_id = int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0)
        self._pad_left = getattr(tokenizer, "padding_side", "right") == "left"
        # Models without token types (DeBERTa-v3: type_vocab_size 0) ignore them: don't build them.
        self._token_types = int(getattr(model.config, "type_vocab_size", 0) or 0) > 0
        self._columns = [self.label_index.get(c) for c in NLI_CLASSES]

    def __repr__(self) -> str:
        return (
            f"HFNLIScorer(name={self.name!r}, model_id={self.model_id!r}, device={self.device!r}, "
            f"precision={self.precision!r}, batch_size={self.batch_size})"
        )

    def contradiction(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        """P(contradiction) of each pair: the contradiction column of the softmax.

        Args:
            premises: One premise per pair (empty strings are scored like any text).
            hypotheses: One hypothesis per pair, aligned with ``premises``.

        Returns:
            Float64 array ``(n,)`` in the input order.

        Raises:
            ValueError: the two lists differ in length.
            TypeError: an item is not a string (or a bare string was passed for a list).
        """
        return self.probabilities(premises, hypotheses)[:, 2]

    def probabilities(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        """Softmax probabilities of each pair, columns ``(entailment, neutral, contradiction)``.

        The softmax runs over all of the model's classes; a two-way model (no neutral label)
        gets a neutral column of zeros.

        Args:
            premises: One premise per pair.
            hypotheses: One hypothesis per pair, aligned with ``premises``.

        Returns:
            Float64 array ``(n, 3)`` in the input order.

        Raises:
            ValueError: the two lists differ in length.
            TypeError: an item is not a string (or a bare string was passed for a list).
        """
        pairs = _check_pairs(premises, hypotheses)
        out = np.zeros((len(pairs), len(NLI_CLASSES)), dtype=np.float64)
        if not pairs:
            return out
        # Score each distinct pair once; `inverse` maps every input pair to its distinct pair.
        index: dict[tuple[str, str], int] = {}
        inverse = np.fromiter(
            (index.setdefault(p, len(index)) for p in pairs), dtype=np.int64, count=len(pairs)
        )
        unique = list(index)
        probs = self._score_unique([p for p, _ in unique], [h for _, h in unique])
        for col, model_col in enumerate(self._columns):
            if model_col is not None:
                out[:, col] = probs[inverse, model_col]
        return out

    def _encode(self, premises: list[str], hypotheses: list[str]) -> dict[str, list[list[int]]]:
        """Token ids (and token types) of every pair, truncated, unpadded."""
        kwargs: dict[str, Any] = {
            "max_length": self.max_length,
            "padding": False,
            "return_attention_mask": False,
            "return_token_type_ids": self._token_types,
        }
        try:
            return dict(self.tokenizer(premises, hypotheses, truncation=self.truncation, **kwargs))
        except Exception as e:  # the Rust tokenizer raises a bare Exception on truncation errors
            if self.truncation == "longest_first":
                raise
            error = e
        # only_first fails for a pair whose hypothesis alone is over the limit: such pairs (and
        # only those) are cut with longest_first instead.
        out: dict[str, list[list[int]]] = {}
        fallbacks = 0
        for p, h in zip(premises, hypotheses, strict=True):
            # Lists, not strings: a lone "" hypothesis would be taken for "no second text".
            try:
                enc = self.tokenizer([p], [h], truncation="only_first", **kwargs)
            except Exception:
                enc = self.tokenizer([p], [h], truncation="longest_first", **kwargs)
                fallbacks += 1
            for key, value in enc.items():
                out.setdefault(key, []).append(value[0])
        logger.warning(
            "%s: only_first truncation impossible for %d pair(s) (%s); cut with longest_first",
            self.name,
            fallbacks,
            error,
        )
        return out

    def _score_unique(self, premises: list[str], hypotheses: list[str]) -> np.ndarray:
        """Softmax over the model's classes, ``(m, num_labels)`` float64, in the given order."""
        enc = self._encode(premises, hypotheses)
        ids: list[list[int]] = enc["input_ids"]
        types: list[list[int]] | None = enc.get("token_type_ids") if self._token_types else None
        lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
        # Longest first: the biggest batch comes first, so running out of memory shows at once.
        order = np.argsort(-lengths, kind="stable")
        probs = np.empty((len(ids), self.model.config.num_labels), dtype=np.float64)
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                rows = order[start : start + self.batch_size]
                batch = self._pad(
                    [ids[i] for i in rows], None if types is None else [types[i] for i in rows]
                )
                logits = self.model(**batch).logits
                probs[rows] = torch.softmax(logits.double(), dim=-1).cpu().numpy()
        return probs

    def _pad(self, ids: list[list[int]], types: list[list[int]] | None) -> dict[str, torch.Tensor]:
        """One batch padded to its own longest pair, on the model's device."""
        width = max(len(x) for x in ids)
        input_ids = np.full((len(ids), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        token_types = np.zeros((len(ids), width), dtype=np.int64) if types is not None else None
        for row, seq in enumerate(ids):
            span = slice(width - len(seq), width) if self._pad_left else slice(0, len(seq))
            input_ids[row, span] = seq
            mask[row, span] = 1
            if token_types is not None and types is not None:
                token_types[row, span] = types[row]
        batch = {"input_ids": input_ids, "attention_mask": mask}
        if token_types is not None:
            batch["token_type_ids"] = token_types
        return {k: torch.from_numpy(v).to(self._torch_device) for k, v in batch.items()}


def _check_pairs(premises: Sequence[str], hypotheses: Sequence[str]) -> list[tuple[str, str]]:
    for what, seq in (("premises", premises), ("hypotheses", hypotheses)):
        if isinstance(seq, str):
            raise TypeError(f"{what} must be a sequence of strings, not a single string")
    if len(premises) != len(hypotheses):
        raise ValueError(
            f"premises and hypotheses differ in length: {len(premises)} vs {len(hypotheses)}"
        )
    pairs = list(zip(premises, hypotheses, strict=True))
    for i, (p, h) in enumerate(pairs):
        if not isinstance(p, str) or not isinstance(h, str):
            raise TypeError(
                f"pair {i}: premise and hypothesis must be strings, got "
                f"{type(p).__name__} and {type(h).__name__}"
            )
    return pairs


def load_hf_nli(
    location: str | os.PathLike[str],
    *,
    name: str | None = None,
    model_id: str | None = None,
    device: str = "auto",
    precision: str = "auto",
    batch_size: int = 32,
    truncation: Truncation = "longest_first",
    max_length: int | None = None,
) -> HFNLIScorer:
    """Load an NLI classifier from a local Hugging Face model directory.

    Args:
        location: Directory with ``config.json``, weights and tokenizer files.
        name: Spec to report (default ``hf:<location>``).
        model_id: Repo id to record (default: read from the directory, else the path).
        device: ``auto`` (CUDA when available), ``cpu``, ``cuda``, ``cuda:1``, ...
        precision: ``auto`` (fp32 on CPU; fp16 on CUDA, bf16 when the checkpoint is bf16),
            ``fp32``, ``fp16`` or ``bf16``.
        batch_size: Pairs per forward pass.
        truncation: ``longest_first`` (cut the longer text first) or ``only_first`` (cut the
            premise only; pairs whose hypothesis alone is too long fall back to
            ``longest_first`` with a warning).
        max_length: Token limit of a pair (default: the tokenizer's and the model's limit,
            512 for DeBERTa-v3 and BERT).

    Raises:
        EncoderError: the directory holds no loadable sequence classifier and tokenizer.
        ConfigError: the labels do not map to NLI classes; bad device, precision or options.
    """
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

    location = str(location)
    name = name or f"hf:{location}"
    try:
        hf_config = AutoConfig.from_pretrained(location, local_files_only=True)
    except (OSError, ValueError) as e:
        raise EncoderError(f"{name!r}: no Hugging Face model config in {location}: {e}") from e
    label_index = map_nli_labels(hf_config.id2label)
    try:
        torch_device = resolve_device(device)
        resolved = resolve_precision(precision, torch_device, preferred=saved_precision(hf_config))
    except ConfigError as e:
        raise ConfigError(f"NLI model {name!r}: {e}") from e
    model = load_checked(
        AutoModelForSequenceClassification,
        location,
        label=name,
        what="an NLI classifier",
        head_hint="is it a base model without its NLI head?",
        dtype=torch_dtype(resolved),
    )
    try:
        tokenizer = AutoTokenizer.from_pretrained(location, local_files_only=True)
    except (OSError, ValueError, RuntimeError, KeyError) as e:
        raise EncoderError(f"{name!r}: cannot load the tokenizer in {location}: {e}") from e
    source_repo, revision, random_weights = hub.weights_provenance(
        location, label=f"NLI model {name}"
    )
    return HFNLIScorer(
        model.to(torch_device).eval(),
        tokenizer,
        name=name,
        model_id=model_id or source_repo or location,
        revision=revision,
        random_weights=random_weights,
        label_index=label_index,
        device=torch_device,
        precision=resolved,
        batch_size=batch_size,
        max_length=max_length or model_max_length(hf_config, tokenizer),
        truncation=truncation,
    )


def resolve_nli_model(
    target: str, *, models_dir: str | os.PathLike[str] | None = None
) -> tuple[Path, str | None]:
    """Local directory of an ``hf`` NLI target, and its repo id (None for a local path).

    Args:
        target: A model location: ``org/name[@revision]`` or a local path (``dir:<path>``,
            ``/``, ``./``, ``../``, ``~``).
        models_dir: Models directory (None: ``$PATHGLS_MODELS_DIR`` or the user cache).

    Raises:
        ModelNotFoundError: the repo is not available locally (the message names
            ``pathgls models pull hf:<repo>``) or the path does not exist.
        ConfigError: the target is neither a repo id nor a path form.
    """
    name = f"hf:{target.strip()}"
    ref = parse_model_ref(target, what=name)
    return hub.resolve_ref(ref, name=name, models_dir=models_dir), ref.repo_id


@register_nli(
    "hf",
    description=(
        "Hugging Face sequence classifier with an NLI head, by repo id or local path "
        f"(plain `hf`: {DEFAULT_NLI_MODEL}; biomedical: {MEDICAL_NLI_MODEL})"
    ),
    argument="[<model>]",
    cards=("nli-deberta", "nli-pubmedbert"),
    default_card="nli-deberta",  # plain `hf` (DEFAULT_NLI_MODEL)
)
def _hf_backend(arg: str) -> HFNLIScorer:
    target = arg.strip() or DEFAULT_NLI_MODEL
    location, repo_id = resolve_nli_model(target)
    return load_hf_nli(location, name=f"hf:{target}", model_id=repo_id)
