"""``build_encoder``: parse the name once, find the weights locally, call the right loader."""

from __future__ import annotations

from pathgls.config import EncoderConfig
from pathgls.encoders.base import Encoder
from pathgls.encoders.hf_clip import load_hf_clip
from pathgls.encoders.openclip import load_open_clip_arch, load_open_clip_dir
from pathgls.encoders.registry import EncoderSpec, SpecKind, parse_encoder_spec, registered
from pathgls.errors import ConfigError
from pathgls.hub import store as hub


def _location(spec: EncoderSpec, config: EncoderConfig) -> str:
    """Local directory (or file) of a spec with a repo id or a path."""
    if spec.path is not None:
        return str(hub.resolve_path(spec.path, name=spec.spec))
    assert spec.repo_id is not None  # every other kind has a repo id (see parse_encoder_spec)
    pull_name = spec.name if spec.kind is SpecKind.REGISTERED else f"hf:{spec.repo_id}"
    return str(
        hub.resolve_model(
            spec.repo_id, name=spec.spec, pull_name=pull_name, models_dir=config.models_dir
        )
    )


def build_encoder(config: EncoderConfig) -> Encoder:
    """Build the encoder named by ``config.name`` from local weights (never downloads).

    Raises:
        UnknownNameError: the name is not registered and not a known scheme.
        ModelNotFoundError: the weights are not available locally (the message says how to pull).
        EncoderError: the weights are there but cannot be loaded.
        ConfigError: no encoder named (``config.name`` is None), bad device or precision.
    """
    if config.name is None:
        raise ConfigError("no image-text encoder named: set encoder.name (--encoder plip, ...)")
    spec = parse_encoder_spec(config.name)
    if spec.kind is SpecKind.REGISTERED:
        _, factory = registered(spec.name)
        return factory(config, _location(spec, config))
    if spec.kind is SpecKind.HF:
        return load_hf_clip(config, _location(spec, config), model_id=spec.repo_id)
    if spec.kind is SpecKind.OPEN_CLIP_DIR:
        return load_open_clip_dir(config, _location(spec, config), model_id=spec.repo_id)
    assert spec.arch is not None and spec.weights is not None
    return load_open_clip_arch(config, arch=spec.arch, weights=spec.weights)
