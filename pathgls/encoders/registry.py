"""The encoder registry and the one parser of encoder names.

Encoder names follow pathgls's spec grammar (:mod:`pathgls.registry`): ``kind[:arg]``, and a
model location is a repo id (``org/name[@revision]``) or an explicit local path (``dir:``,
``/``, ``./``, ``../``, ``~``). Accepted names:

- a named model: ``plip``, ``quiltnet``, ``conch`` — registered with :func:`register_encoder`;
  their weights are the repo of the model card of the same name (``resources/models.toml``);
- ``hf:<model>``: any Hugging Face ``CLIPModel`` (repo id or local directory);
- ``open_clip:hf-hub:<repo>``: an open_clip model published with ``open_clip_config.json``;
- ``open_clip:<path>``: a local directory with ``open_clip_config.json`` and weights;
- ``open_clip:<arch>:<pretrained-tag-or-weights-file>``: a built-in open_clip architecture.

:func:`parse_encoder_spec` is the only place where an encoder name is taken apart; the
``hf`` and ``open_clip`` entries are registered by :mod:`pathgls.encoders.factory`. Every
factory takes ``(argument, config, *, image_only=False)``; ``image_only`` builds the image tower
alone (what extraction needs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from pathgls.errors import ConfigError
from pathgls.hub import store as hub
from pathgls.hub.cards import model_card
from pathgls.registry import ModelRef, Registry, RegistryEntry, parse_model_ref, parse_spec

if TYPE_CHECKING:
    from pathgls.config import EncoderConfig
    from pathgls.encoders.base import Encoder

#: A named model's loader builds an encoder from the config and the local model directory;
#: called as ``loader(config, location, image_only=...)`` (True: the image tower only).
EncoderLoader = Callable[..., "Encoder"]

#: Every encoder name: factories ``(argument, config) -> Encoder``.
ENCODERS: Registry[Encoder] = Registry("encoder")

_OPEN_CLIP_FORMS = (
    "open_clip:hf-hub:<org>/<name>, open_clip:<path> (dir:<path>, /, ./, ../ or ~) or "
    "open_clip:<arch>:<pretrained-tag-or-weights-file>"
)


class SpecKind(Enum):
    """The shape of an encoder name, as found by :func:`parse_encoder_spec`."""

    REGISTERED = "registered"  # plip, quiltnet, conch, ...
    HF = "hf"  # hf:<model>
    OPEN_CLIP_DIR = "open_clip_dir"  # open_clip:hf-hub:<repo> or open_clip:<path>
    OPEN_CLIP_ARCH = "open_clip_arch"  # open_clip:<arch>:<tag-or-file>


@dataclass(frozen=True)
class EncoderSpec:
    """A parsed encoder name.

    Attributes:
        spec: The name as given (trimmed).
        kind: Its shape.
        name: Registered name (``REGISTERED``), else the spec itself.
        repo_id: Hugging Face repo id to look up locally (None for a path or a tag).
        revision: Revision asked for with ``@`` (None: whatever copy is local).
        path: Local directory or weights file given directly (None otherwise).
        arch: open_clip architecture (``OPEN_CLIP_ARCH`` only).
        weights: open_clip pretrained tag or weights file (``OPEN_CLIP_ARCH`` only).
    """

    spec: str
    kind: SpecKind
    name: str
    repo_id: str | None = None
    revision: str | None = None
    path: str | None = None
    arch: str | None = None
    weights: str | None = None

    @property
    def ref(self) -> ModelRef | None:
        """The model location as a :class:`~pathgls.registry.ModelRef` (None for a tag)."""
        if self.path is not None:
            return ModelRef(text=self.path, path=self.path)
        if self.repo_id is not None:
            text = self.repo_id + (f"@{self.revision}" if self.revision else "")
            return ModelRef(text=text, repo_id=self.repo_id, revision=self.revision)
        return None


def register_encoder(
    name: str, *, description: str, backend: str
) -> Callable[[EncoderLoader], EncoderLoader]:
    """Register a named model's loader ``(config, location, *, image_only) -> Encoder`` under
    ``name`` (``image_only``: build the image tower alone, no text tower or tokenizer).

    The weights are those of the model card ``name`` (its repo, found locally by
    :func:`pathgls.hub.store.resolve_model`); the card is read when the encoder is built.

    Args:
        name: Registry name, also the model card's name.
        description: One line shown by ``pathgls list``.
        backend: ``hf_clip`` or ``open_clip``.

    Raises:
        ConfigError: an invalid or duplicate name.
    """

    def deco(loader: EncoderLoader) -> EncoderLoader:
        def factory(argument: str, config: EncoderConfig, *, image_only: bool = False) -> Encoder:
            del argument  # a named model takes none (the registry refuses one)
            spec = parse_encoder_spec(encoder_name(config))
            location = encoder_location(spec, config)
            return loader(config, location, image_only=image_only)

        ENCODERS.register(name, description=description, backend=backend, card=name)(factory)
        return loader

    return deco


def list_encoders() -> list[RegistryEntry[Encoder]]:
    """Every encoder name and scheme, sorted (``meta["card"]`` names a model's card)."""
    return ENCODERS.entries()


def encoder_name(config: EncoderConfig) -> str:
    """``config.name``, set whenever an encoder is built (the registry is looked up by it).

    Raises:
        ConfigError: no encoder is named.
    """
    if config.name is None:
        raise ConfigError("no encoder is named (encoder.name is unset)")
    return config.name


def parse_encoder_spec(spec: str) -> EncoderSpec:
    """Parse an encoder name (see the module docstring for the accepted forms).

    Raises:
        UnknownNameError: the kind is neither a named model nor a scheme.
        ConfigError: a malformed argument, or an argument after a named model.
    """
    parsed, entry = ENCODERS.parse(spec)
    card = entry.meta.get("card")
    if card is not None:
        return EncoderSpec(
            parsed.text, SpecKind.REGISTERED, parsed.kind, repo_id=model_card(card).repo
        )
    if parsed.kind == "hf":
        ref = parse_model_ref(parsed.arg, what=parsed.text)
        return EncoderSpec(
            parsed.text, SpecKind.HF, parsed.text, ref.repo_id, ref.revision, ref.path
        )
    if parsed.kind == "open_clip":
        return _parse_open_clip(parsed.text, parsed.arg)
    raise ConfigError(f"encoder {parsed.text!r}: {entry.name} has no parser")  # pragma: no cover


def _parse_open_clip(text: str, arg: str) -> EncoderSpec:
    if not arg:
        raise ConfigError(f"{text!r}: expected {_OPEN_CLIP_FORMS}")
    inner = parse_spec(arg, what=text)
    if inner.kind == "hf-hub":
        ref = parse_model_ref(inner.arg, what=text)
        if ref.repo_id is None:
            raise ConfigError(f"{text!r}: expected open_clip:hf-hub:<org>/<name>")
        return EncoderSpec(text, SpecKind.OPEN_CLIP_DIR, text, ref.repo_id, ref.revision)
    found: ModelRef | None
    try:
        found = parse_model_ref(arg, what=text)
    except ConfigError:
        found = None
    if found is not None and found.path is not None:
        return EncoderSpec(text, SpecKind.OPEN_CLIP_DIR, text, path=found.path)
    if not inner.arg:
        raise ConfigError(f"{text!r}: expected {_OPEN_CLIP_FORMS}")
    return EncoderSpec(text, SpecKind.OPEN_CLIP_ARCH, text, arch=inner.kind, weights=inner.arg)


def encoder_location(spec: EncoderSpec, config: EncoderConfig) -> str:
    """Local directory (or file) of a spec with a repo id or a path (never downloads).

    Raises:
        ModelNotFoundError: not available locally (the message names the pull command).
        ConfigError: the spec names no location (an open_clip tag).
    """
    ref = spec.ref
    if ref is None:
        raise ConfigError(f"encoder {spec.spec!r} names no model location")
    if spec.kind is SpecKind.HF:  # hf:<model>: the message also says how to name a directory
        return str(hub.resolve_ref(ref, name=spec.spec, models_dir=config.models_dir))
    if ref.path is not None:
        return str(hub.resolve_path(ref.path, name=spec.spec))
    assert ref.repo_id is not None
    return str(
        hub.resolve_model(
            ref.repo_id,
            name=spec.spec,
            pull_name=spec.name if spec.kind is SpecKind.REGISTERED else None,
            models_dir=config.models_dir,
            revision=ref.revision,
        )
    )
