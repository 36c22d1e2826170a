"""``build_encoder``: parse the name once, find the weights locally, call the right loader.

Registers the two schemes of :data:`~pathgls.encoders.registry.ENCODERS` (``hf`` and
``open_clip``); the named models register themselves in their loader modules.
"""

from __future__ import annotations

from pathgls.config import EncoderConfig
from pathgls.encoders.base import Encoder
from pathgls.encoders.hf_clip import load_hf_clip
from pathgls.encoders.openclip import load_open_clip_arch, load_open_clip_dir
from pathgls.encoders.registry import (
    ENCODERS,
    SpecKind,
    encoder_location,
    encoder_name,
    parse_encoder_spec,
)
from pathgls.errors import ConfigError


@ENCODERS.register(
    "hf",
    description="any Hugging Face CLIPModel (repo id or local directory)",
    argument="<model>",
    backend="hf_clip",
)
def _hf(argument: str, config: EncoderConfig, *, image_only: bool = False) -> Encoder:
    spec = parse_encoder_spec(encoder_name(config))
    return load_hf_clip(
        config, encoder_location(spec, config), model_id=spec.repo_id, image_only=image_only
    )


@ENCODERS.register(
    "open_clip",
    description="an open_clip model: published on the hub, in a local directory, or a built-in "
    "architecture with a pretrained tag or weights file",
    argument="hf-hub:<repo>|<path>|<arch>:<tag-or-weights-file>",
    backend="open_clip",
)
def _open_clip(argument: str, config: EncoderConfig, *, image_only: bool = False) -> Encoder:
    spec = parse_encoder_spec(encoder_name(config))
    if spec.kind is SpecKind.OPEN_CLIP_DIR:
        location = encoder_location(spec, config)
        return load_open_clip_dir(config, location, model_id=spec.repo_id, image_only=image_only)
    assert spec.arch is not None and spec.weights is not None
    return load_open_clip_arch(config, arch=spec.arch, weights=spec.weights, image_only=image_only)


def build_encoder(config: EncoderConfig, *, image_only: bool = False) -> Encoder:
    """Build the encoder named by ``config.name`` from local weights (never downloads).

    Args:
        config: Which encoder, where it runs, and in what precision.
        image_only: Build only the image tower (no text tower, no tokenizer): what feature
            extraction needs, for less start-up and memory. The encoder's ``encode_text`` then
            raises :class:`~pathgls.errors.EncoderError`; Grounding needs both towers.

    Raises:
        UnknownNameError: the name is not registered and not a known scheme.
        ModelNotFoundError: the weights are not available locally (the message says how to pull).
        EncoderError: the weights are there but cannot be loaded.
        ConfigError: no encoder named (``config.name`` is None), a malformed name, bad device
            or precision.
    """
    if config.name is None:
        raise ConfigError("no image-text encoder named: set encoder.name (--encoder plip, ...)")
    return ENCODERS.build(config.name, config, image_only=image_only)
