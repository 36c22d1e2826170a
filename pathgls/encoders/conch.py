"""CONCH (MahmoodLab) as an open_clip model.

CONCH's public checkpoint (``pytorch_model.bin`` in the gated Hugging Face repo
``MahmoodLab/CONCH``) is a CoCa model written for the authors' own ``conch.open_clip_custom``
package: a timm ViT-B/16 trunk at 448 px, an attentional-pooling contrastive head, and a
12-layer text transformer with an appended CLS token (the caption decoder is not released).
pathgls does not depend on that package; it rebuilds the contrastive towers as an open_clip
``CustomTextCLIP`` from its own config, ``pathgls/resources/conch_ViT-B-16_open_clip.json``,
and converts the weights on load (:func:`convert_conch_state_dict`).

**open_clip cannot represent CONCH exactly from a config alone.** Three differences, and what
pathgls does about each so that the result is numerically the same model:

1. CONCH's trunk applies a final LayerNorm (timm ``norm``, eps 1e-6) before the attentional
   pooler; open_clip's ``VisionTransformer`` feeds the last block straight into the pooler.
   pathgls inserts that LayerNorm in front of the pooler's own key norm
   (``visual.attn_pool.ln_k`` becomes ``Sequential(trunk_norm, ln_k)``).
2. timm's patch embedding has a bias; open_clip's ``conv1`` has none. The bias is added to the
   positional embedding of every patch token (not the class token), which is exact.
3. The block LayerNorms use eps 1e-6 (timm) but CONCH's contrastive LayerNorm after pooling uses
   1e-5; the config sets 1e-6 for the tower and pathgls sets ``ln_post.eps`` back to 1e-5.

The text tower maps one to one (open_clip's legacy CoCa CLS mask reproduces CONCH's). CONCH
tokenises with its own byte-level BPE (``conch_byte_level_bpe_uncased.json``, licensed
CC BY-NC-ND 4.0, so pathgls does not ship it): put it in the model directory as
``tokenizer.json``, or install the ``conch`` package; it is only needed for text. A model
directory may carry its own ``open_clip_config.json`` (the random test models do); otherwise
the packaged ViT-B/16 config is used.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from pathgls.config import EncoderConfig
from pathgls.encoders.base import ClipEncoder
from pathgls.encoders.image_tower import load_image_tower
from pathgls.encoders.openclip import find_checkpoint, make_open_clip_encoder
from pathgls.encoders.registry import register_encoder
from pathgls.errors import EncoderError, ModelNotFoundError
from pathgls.hub import store as hub
from pathgls.hub.cards import model_card
from pathgls.hub.device import resolve_device, resolve_precision, torch_dtype
from pathgls.hub.hf import refusing_pickles
from pathgls.io.resources import resource

#: CONCH's Hugging Face repo (from its model card, ``resources/models.toml``).
CONCH_REPO = model_card("conch").repo
CONFIG_FILE = resource("conch_ViT-B-16_open_clip.json")
TOKENIZER_FILES = ("tokenizer.json", "conch_byte_level_bpe_uncased.json")
TRUNK_NORM_EPS = 1e-6  # timm ViT LayerNorm
POOL_NORM_EPS = 1e-5  # CONCH's ln_contrast (torch default)
PAD_ID = 0  # "<pad>" in CONCH's tokenizer, also the text tower's pad_id

# timm trunk block names → open_clip resblock names.
_BLOCK_RENAMES = {
    "norm1": "ln_1",
    "attn.qkv.weight": "attn.in_proj_weight",
    "attn.qkv.bias": "attn.in_proj_bias",
    "attn.proj": "attn.out_proj",
    "norm2": "ln_2",
    "mlp.fc1": "mlp.c_fc",
    "mlp.fc2": "mlp.c_proj",
}
_DROPPED = ("visual.attn_pool_caption.", "visual.ln_caption.", "text_decoder.")


def _trunk_key(key: str) -> str:
    """open_clip name of a timm trunk block parameter (``blocks.3.norm1.weight`` → ...)."""
    _, index, rest = key.split(".", 2)
    for old, new in _BLOCK_RENAMES.items():
        if rest == old or rest.startswith(old + "."):
            return f"visual.transformer.resblocks.{index}.{new}{rest[len(old) :]}"
    raise EncoderError(f"unexpected CONCH trunk parameter blocks.{index}.{rest}")


def convert_conch_state_dict(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Rename a CONCH checkpoint for the open_clip model of :func:`build_conch_model`.

    Drops the caption-only pooler and decoder, folds the patch-embedding bias into the patch
    positional embeddings, and moves the trunk's final norm in front of the pooler.

    Raises:
        EncoderError: the checkpoint is not laid out like CONCH's.
    """
    out: dict[str, torch.Tensor] = {}
    patch_bias = None
    for raw_key, value in state.items():
        key = raw_key.removeprefix("module.")
        if key.startswith(_DROPPED):
            continue
        if key.startswith("text.") or key == "logit_scale":
            out[key] = value
        elif key.startswith("visual.attn_pool_contrast.ln_k."):
            out["visual.attn_pool.ln_k.1." + key.rsplit(".", 1)[1]] = value
        elif key.startswith("visual.attn_pool_contrast."):
            out["visual.attn_pool." + key[len("visual.attn_pool_contrast.") :]] = value
        elif key.startswith("visual.ln_contrast."):
            out["visual.ln_post." + key.rsplit(".", 1)[1]] = value
        elif key == "visual.proj_contrast":
            out["visual.proj"] = value
        elif key == "visual.trunk.patch_embed.proj.weight":
            out["visual.conv1.weight"] = value
        elif key == "visual.trunk.patch_embed.proj.bias":
            patch_bias = value
        elif key == "visual.trunk.cls_token":
            out["visual.class_embedding"] = value.reshape(-1)
        elif key == "visual.trunk.pos_embed":
            out["visual.positional_embedding"] = value.reshape(-1, value.shape[-1]).clone()
        elif key.startswith("visual.trunk.norm."):
            out["visual.attn_pool.ln_k.0." + key.rsplit(".", 1)[1]] = value
        elif key.startswith("visual.trunk.blocks."):
            out[_trunk_key(key[len("visual.trunk.") :])] = value
        else:
            raise EncoderError(f"unexpected parameter {raw_key!r}: not a CONCH checkpoint")
    if "visual.positional_embedding" not in out or "visual.conv1.weight" not in out:
        raise EncoderError("not a CONCH checkpoint: no visual.trunk patch embedding")
    if patch_bias is not None:
        pos = out["visual.positional_embedding"]
        pos[1:] += patch_bias.to(pos.dtype)
    return out


def build_conch_model(model_cfg: dict[str, Any]) -> Any:  # open_clip's CustomTextCLIP (untyped)
    """An fp32 open_clip ``CustomTextCLIP`` with CONCH's architecture (see the module docstring)."""
    import open_clip

    cfg = json.loads(json.dumps(model_cfg))  # deep copy
    cfg.pop("custom_text", None)
    model = open_clip.CustomTextCLIP(**cfg)
    adapt_conch_visual(model.visual)
    return model


def adapt_conch_visual(visual: Any) -> None:  # open_clip's VisionTransformer (untyped)
    """Make open_clip's vision tower CONCH's: the trunk norm in front of the pooler's key norm,
    and the contrastive LayerNorm's eps (points 1 and 3 of the module docstring)."""
    from open_clip.transformer import LayerNorm

    width = int(visual.conv1.out_channels)
    visual.attn_pool.ln_k = nn.Sequential(
        LayerNorm(width, eps=TRUNK_NORM_EPS), visual.attn_pool.ln_k
    )
    visual.ln_post.eps = POOL_NORM_EPS


def conch_tokenizer_file(location: str | Path) -> Path | None:
    """CONCH's tokenizer file: in the model directory, else in an installed ``conch`` package."""
    for name in TOKENIZER_FILES:
        if (Path(location) / name).is_file():
            return Path(location) / name
    spec = importlib.util.find_spec("conch")
    for root in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(root) / "open_clip_custom" / "tokenizers" / TOKENIZER_FILES[1]
        if candidate.is_file():
            return candidate
    return None


def conch_tokenize_fn(
    location: str | Path, context_length: int
) -> Callable[[list[str]], torch.Tensor]:
    """CONCH's tokenisation: ``<start_of_text> ... <end_of_text>``, pad 0, fixed length.

    The file is read on first use, so image-only use needs no tokenizer.
    """
    cache: list[Any] = []

    def tokenize(texts: list[str]) -> torch.Tensor:
        if not cache:
            path = conch_tokenizer_file(location)
            if path is None:
                raise ModelNotFoundError(
                    f"CONCH's tokenizer is missing: copy conch_byte_level_bpe_uncased.json from "
                    f"github.com/mahmoodlab/CONCH (conch/open_clip_custom/tokenizers) to "
                    f"{Path(location) / 'tokenizer.json'}, or pip install the conch package"
                )
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(str(path))
            tok.enable_truncation(max_length=context_length)
            tok.enable_padding(length=context_length, pad_id=PAD_ID, pad_token="<pad>")
            cache.append(tok)
        return torch.tensor([e.ids for e in cache[0].encode_batch(texts)], dtype=torch.long)

    return tokenize


def _load_state(path: Path) -> dict[str, torch.Tensor]:
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        return load_file(str(path))
    state = torch.load(path, map_location="cpu", weights_only=True)
    return state.get("state_dict", state) if isinstance(state, dict) else state


def load_conch(
    config: EncoderConfig, location: str, *, model_id: str = CONCH_REPO, image_only: bool = False
) -> ClipEncoder:
    """Build CONCH from a directory holding its checkpoint.

    ``image_only`` builds the image tower alone (no text tower, no tokenizer).

    Raises:
        ModelNotFoundError: no weights file in the directory.
        EncoderError: the weights do not fit CONCH's architecture.
    """
    import open_clip

    d = Path(location)
    checkpoint = find_checkpoint(d)
    if checkpoint is None:
        raise ModelNotFoundError(f"{config.name!r}: no CONCH weights (pytorch_model.bin) in {d}")
    arch_file = (
        d / "open_clip_config.json" if (d / "open_clip_config.json").is_file() else CONFIG_FILE
    )
    arch = json.loads(arch_file.read_text())
    device = resolve_device(config.device)
    precision = resolve_precision(config.precision, device)
    preprocess = {**arch.get("preprocess_cfg", {})}
    preprocess.setdefault("size", arch["model_cfg"]["vision_cfg"]["image_size"])
    source_repo, revision = hub.location_source(d)
    if image_only:
        tower = load_image_tower(
            {k: v for k, v in arch["model_cfg"].items() if k != "custom_text"},
            checkpoint,
            label=str(config.name),
            precision="fp32",  # then the whole tower in the model's precision, as below
            device=torch.device("cpu"),
            preprocess_cfg=preprocess,
            convert=convert_conch_state_dict,
            adapt=adapt_conch_visual,
        )
        tower.to(device=device, dtype=torch_dtype(precision))
        return make_open_clip_encoder(
            config,
            tower,
            None,
            device=device,
            precision=precision,
            model_id=source_repo or model_id,
            revision=revision,
            random_weights=hub.is_random_weights(d),
        )
    try:
        model = build_conch_model(arch["model_cfg"])
        with refusing_pickles(str(config.name), checkpoint):
            state = _load_state(checkpoint)
        model.load_state_dict(convert_conch_state_dict(state), strict=True)
    except (OSError, ValueError, RuntimeError, KeyError) as e:
        raise EncoderError(f"{config.name!r}: cannot load CONCH weights {checkpoint}: {e}") from e
    model.to(device=device, dtype=torch_dtype(precision))  # like HF: the whole model in fp16/bf16
    open_clip.set_model_preprocess_cfg(model, preprocess)
    return make_open_clip_encoder(
        config,
        model,
        conch_tokenize_fn(d, int(model.text.context_length)),
        device=device,
        precision=precision,
        model_id=source_repo or model_id,
        revision=revision,
        random_weights=hub.is_random_weights(d),
    )


@register_encoder(
    "conch",
    description="CONCH: CoCa ViT-B/16 (448 px), 1.17M pathology image–caption pairs (gated)",
    backend="open_clip",
)
def _conch(config: EncoderConfig, location: str, *, image_only: bool = False) -> ClipEncoder:
    return load_conch(config, location, image_only=image_only)
