"""An open_clip model's image tower alone: what feature extraction needs.

``open_clip.create_model`` always builds both towers and reads the whole checkpoint; extraction
only ever encodes images. :func:`load_image_tower` builds the vision tower the way open_clip's
``CLIP``, ``CustomTextCLIP`` and ``CoCa`` build theirs (open_clip's own ``_build_vision_tower``
with the same config, QuickGELU setting and cast dtype, then open_clip's precision rule), and
loads the checkpoint's ``visual.*`` tensors only (from a safetensors file nothing else is read).
The features are those of ``create_model(...).encode_image`` (the tests compare them), without
the text tower's construction, weights and tokenizer.

The two open_clip helpers used are private (``open_clip.model._build_vision_tower`` and
``open_clip.factory._set_model_device_and_precision``): a change to them in a later open_clip
shows up as a failure of those tests, not as different features.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from pathgls.errors import EncoderError
from pathgls.hub.hf import refusing_pickles

#: The prefix of the image tower's parameters in an open_clip checkpoint.
VISUAL = "visual."


class ImageTower(nn.Module):
    """An open_clip vision tower under open_clip's attribute name (``visual``), so that the
    checkpoint's ``visual.*`` names, open_clip's preprocessing config and its position-embedding
    resize apply to it unchanged."""

    def __init__(self, visual: nn.Module, *, embed_dim: int) -> None:
        super().__init__()
        self.visual = visual
        self.embed_dim = embed_dim

    def encode_image(self, pixels: torch.Tensor) -> torch.Tensor:
        """Unnormalised image features, as ``CLIP.encode_image(pixels, normalize=False)``."""
        return self.visual(pixels)


def visual_state(checkpoint: Path, *, label: str) -> dict[str, torch.Tensor]:
    """The ``visual.*`` tensors of an open_clip checkpoint (``module.`` prefixes removed).

    A safetensors file is read tensor by tensor, the text tower's never; a torch file is
    memory-mapped and read weights-only.

    Raises:
        EncoderError: the file cannot be read, or holds Python objects besides tensors.
    """
    try:
        with refusing_pickles(label, checkpoint):
            if checkpoint.suffix == ".safetensors":
                from safetensors import safe_open

                with safe_open(str(checkpoint), framework="pt", device="cpu") as f:
                    return {
                        k.removeprefix("module."): f.get_tensor(k)
                        for k in f.keys()  # noqa: SIM118 (safe_open is no dict)
                        if k.removeprefix("module.").startswith(VISUAL)
                    }
            try:  # mapped: the text tower's tensors are never read from disk
                state = torch.load(checkpoint, map_location="cpu", weights_only=True, mmap=True)
            except RuntimeError as e:  # a legacy (non-zip) torch file cannot be mapped
                if "mmap" not in str(e):
                    raise
                state = torch.load(checkpoint, map_location="cpu", weights_only=True)
    except (OSError, ValueError, RuntimeError) as e:
        raise EncoderError(f"{label!r}: cannot read the weights {checkpoint}: {e}") from e
    if isinstance(state, dict) and isinstance(state.get("state_dict"), dict):
        state = state["state_dict"]
    if not isinstance(state, dict):
        raise EncoderError(f"{label!r}: {checkpoint} holds no state dict")
    return {
        k.removeprefix("module."): v
        for k, v in state.items()
        if isinstance(k, str) and k.removeprefix("module.").startswith(VISUAL)
    }


def load_image_tower(
    model_cfg: dict[str, Any],
    checkpoint: Path,
    *,
    label: str,
    precision: str,
    device: torch.device,
    preprocess_cfg: dict[str, Any],
    quick_gelu: bool = False,
    convert: Callable[[dict[str, torch.Tensor]], dict[str, torch.Tensor]] | None = None,
    adapt: Callable[[nn.Module], None] | None = None,
) -> ImageTower:
    """Build an open_clip config's image tower and load its weights from ``checkpoint``.

    Args:
        model_cfg: open_clip ``model_cfg`` (``embed_dim``, ``vision_cfg``, ``quick_gelu``, ...).
        checkpoint: The full model's weights file (only ``visual.*`` is loaded).
        label: The user's name for the model, for messages.
        precision: ``fp32``, ``fp16`` or ``bf16`` (open_clip's mixed-precision rule applies).
        device: Where the tower runs.
        preprocess_cfg: Preprocessing overrides on open_clip's defaults (the model's input size
            always comes from the tower, as open_clip sets it).
        quick_gelu: Force QuickGELU (a pretrained tag's setting).
        convert: Renames a foreign checkpoint's ``visual.*`` tensors to open_clip's (CONCH).
        adapt: Changes the freshly built tower before its weights are loaded (CONCH).

    Raises:
        EncoderError: the config has no vision tower, or the weights do not fit it.
    """
    import open_clip
    from open_clip.factory import _set_model_device_and_precision
    from open_clip.model import _build_vision_tower, get_cast_dtype
    from open_clip.transform import PreprocessCfg, merge_preprocess_dict

    cfg = copy.deepcopy(model_cfg)
    vision_cfg = cfg.get("vision_cfg")
    if not isinstance(vision_cfg, dict) or "embed_dim" not in cfg:
        raise EncoderError(f"{label!r}: the open_clip config has no embed_dim and vision_cfg")
    is_timm = "timm_model_name" in vision_cfg
    if is_timm:
        vision_cfg["timm_model_pretrained"] = False  # the checkpoint holds the weights
    try:
        embed_dim = int(cfg["embed_dim"])
        visual = _build_vision_tower(
            embed_dim,
            vision_cfg,
            bool(quick_gelu or cfg.get("quick_gelu", False)),
            get_cast_dtype(precision),
        )
        tower = ImageTower(visual, embed_dim=embed_dim)
        if adapt is not None:
            adapt(tower.visual)
        _set_model_device_and_precision(tower, device, precision, is_timm)
        state = visual_state(checkpoint, label=label)
        if convert is not None:
            state = convert(state)
        if not state:
            raise EncoderError(f"{label!r}: {checkpoint} has no {VISUAL}* weights")
        open_clip.model.resize_pos_embed(state, tower)
        tower.load_state_dict(state, strict=True)
    except (ValueError, RuntimeError, KeyError, TypeError) as e:
        raise EncoderError(f"{label!r}: cannot build the image tower from {checkpoint}: {e}") from e
    preprocess = merge_preprocess_dict(PreprocessCfg(), preprocess_cfg)
    preprocess["size"] = getattr(visual, "image_size", preprocess["size"])
    open_clip.set_model_preprocess_cfg(tower, preprocess)
    return tower.eval()
