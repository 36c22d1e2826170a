"""Loading Hugging Face checkpoints the same way everywhere (CLIP encoders, NLI, NER).

Local files only (pathgls never downloads implicitly), transformers' progress bars hidden,
library errors turned into pathgls errors that name the model, and a checkpoint whose weights
do not cover the model (e.g. a base model without its task head) refused instead of silently
running with randomly initialised layers.
"""

from __future__ import annotations

import contextlib
import os
import pickle
from collections.abc import Iterator
from typing import Any, Literal

from pathgls.errors import EncoderError, PathGLSError


@contextlib.contextmanager
def quiet_loading() -> Iterator[None]:
    """Hide transformers' loading/saving progress bars (they garble pathgls' own output)."""
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


#: Why a pickled checkpoint is refused (torch's weights-only loader never runs its code).
PICKLE_REFUSED = (
    "this checkpoint is a pickle; pathgls loads only safetensors or weights_only checkpoints"
)


def _is_pickle_refusal(error: BaseException) -> bool:
    return isinstance(error, pickle.UnpicklingError) or "Weights only load failed" in str(error)


@contextlib.contextmanager
def refusing_pickles(
    label: str, location: Any, *, error: type[PathGLSError] = EncoderError
) -> Iterator[None]:
    """Turn torch's refusal of a pickled checkpoint into ``error`` naming the model and file.

    Torch's weights-only loader refuses a checkpoint holding Python objects (its code never
    runs) with a traceback that suggests ``weights_only=False``, which pathgls never does; the
    message says what the file is and what to use instead.
    """
    try:
        yield
    except Exception as e:
        if not _is_pickle_refusal(e):
            raise
        detail = next((ln.strip() for ln in str(e).splitlines() if "GLOBAL" in ln), "")
        raise error(
            f"{label!r}: {location}: {PICKLE_REFUSED} (it holds Python objects besides "
            f"tensors{': ' + detail if detail else ''}); convert it to safetensors on a machine "
            "you trust, or use another copy of the model"
        ) from e


def saved_precision(hf_config: Any) -> Literal["bf16"] | None:
    """``"bf16"`` when the checkpoint was saved in bfloat16 (CUDA then runs it so), else None."""
    import torch

    saved = getattr(hf_config, "dtype", None) or getattr(hf_config, "torch_dtype", None)
    return "bf16" if saved in (torch.bfloat16, "bfloat16") else None


def load_checked(
    model_class: Any,
    location: str | os.PathLike[str],
    *,
    label: str,
    what: str,
    head_hint: str = "",
    dtype: Any = None,
    error: type[PathGLSError] = EncoderError,
    config: Any = None,
) -> Any:
    """``model_class.from_pretrained(location)`` from local files, checked.

    Args:
        model_class: a transformers class (``CLIPModel``, ``AutoModelFor...``).
        location: local directory of the checkpoint.
        label: the user's name for the model, used in messages.
        what: what the model should be ("CLIPModel", "an NLI classifier", ...).
        head_hint: added to the missing-weights message (e.g. "is it a base model without its
            NLI head?").
        dtype: torch dtype to load in (None: the checkpoint's).
        error: the pathgls error class to raise.
        config: the model config to build (None: the checkpoint's ``config.json``).

    Raises:
        PathGLSError: ``error`` when loading fails, weights are missing, or the checkpoint is a
            pickle (:data:`PICKLE_REFUSED`).
    """
    kwargs: dict[str, Any] = {"local_files_only": True, "output_loading_info": True}
    if dtype is not None:
        kwargs["dtype"] = dtype
    if config is not None:
        kwargs["config"] = config
    try:
        with quiet_loading(), refusing_pickles(label, location, error=error):
            model, info = model_class.from_pretrained(location, **kwargs)
    except (OSError, ValueError, RuntimeError, KeyError) as e:
        raise error(f"{label!r}: cannot load {what} from {location}: {e}") from e
    missing = [k for k in info.get("missing_keys", []) if not k.endswith("position_ids")]
    if missing:
        raise error(
            f"{label!r}: weights in {location} do not cover the model ({len(missing)} missing, "
            f"e.g. {missing[:3]}){'; ' + head_hint if head_hint else ''}"
        )
    return model


#: Model types whose position ids start after the padding index (RoBERTa family).
_OFFSET_POSITIONS = frozenset(
    {"roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "roberta-prelayernorm", "longformer"}
)


def model_max_length(config: Any, tokenizer: Any) -> int:
    """Longest input the model takes, special tokens included."""
    limits = []
    positions = getattr(config, "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0:
        if getattr(config, "model_type", "") in _OFFSET_POSITIONS:
            positions -= (getattr(config, "pad_token_id", None) or 1) + 1
        limits.append(positions)
    tok_max = getattr(tokenizer, "model_max_length", None)
    if isinstance(tok_max, int) and 0 < tok_max < 1_000_000:
        limits.append(tok_max)
    return min(limits) if limits else 512
