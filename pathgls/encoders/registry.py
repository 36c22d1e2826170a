"""Encoder registry and the one parser of encoder names.

Named encoders are small factory functions registered with :func:`register_encoder`; the
generic schemes (``hf:...``, ``open_clip:...``) are recognised by :func:`parse_encoder_spec`,
the only place where an encoder name is taken apart. Nothing else in pathgls inspects the
text of an encoder name.

Accepted names:

- a registered name: ``plip``, ``quiltnet``, ``conch`` (see :func:`list_encoders`);
- ``hf:<repo-id-or-local-dir>``: any Hugging Face ``CLIPModel``;
- ``open_clip:hf-hub:<repo-id>``: an open_clip model published with ``open_clip_config.json``;
- ``open_clip:<local-dir>``: a directory with ``open_clip_config.json`` and weights;
- ``open_clip:<arch>:<pretrained-tag-or-weights-file>``: a built-in open_clip architecture.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

from pathgls.errors import ConfigError, UnknownNameError

if TYPE_CHECKING:
    from pathgls.config import EncoderConfig
    from pathgls.encoders.base import Encoder

#: A factory builds an encoder from the config and the local model directory.
EncoderFactory = Callable[["EncoderConfig", str], "Encoder"]

_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


@dataclass(frozen=True)
class EncoderInfo:
    """What :func:`list_encoders` shows about a registered encoder."""

    name: str
    description: str
    repo_id: str  # Hugging Face repo id the weights come from
    backend: str  # "hf_clip" or "open_clip"


class SpecKind(Enum):
    """The shape of an encoder name, as found by :func:`parse_encoder_spec`."""

    REGISTERED = "registered"  # plip, quiltnet, conch, ...
    HF = "hf"  # hf:<repo-or-dir>
    OPEN_CLIP_DIR = "open_clip_dir"  # open_clip:hf-hub:<repo> or open_clip:<dir>
    OPEN_CLIP_ARCH = "open_clip_arch"  # open_clip:<arch>:<tag-or-file>


@dataclass(frozen=True)
class EncoderSpec:
    """A parsed encoder name.

    Attributes:
        spec: The name as given.
        kind: Its shape.
        name: Registered name (``REGISTERED``), else the spec itself.
        repo_id: Hugging Face repo id to look up locally (None for a directory or a tag).
        path: Local directory or weights file given directly (None otherwise).
        arch: open_clip architecture (``OPEN_CLIP_ARCH`` only).
        weights: open_clip pretrained tag or weights file (``OPEN_CLIP_ARCH`` only).
    """

    spec: str
    kind: SpecKind
    name: str
    repo_id: str | None = None
    path: str | None = None
    arch: str | None = None
    weights: str | None = None


@dataclass(frozen=True)
class _Entry:
    info: EncoderInfo
    factory: EncoderFactory


_REGISTRY: dict[str, _Entry] = {}


def register_encoder(
    name: str, *, description: str, repo_id: str, kind: str
) -> Callable[[EncoderFactory], EncoderFactory]:
    """Register a factory ``(config, location) -> Encoder`` under ``name``.

    Args:
        name: Registry name (lower case, no ``:``).
        description: One line shown by ``pathgls models list``.
        repo_id: Hugging Face repo the weights come from (what ``pathgls models pull`` fetches).
        kind: Backend, ``hf_clip`` or ``open_clip``.
    """
    if not name or ":" in name or name != name.strip().lower():
        raise ConfigError(f"invalid encoder registry name {name!r}")

    def decorator(factory: EncoderFactory) -> EncoderFactory:
        if name in _REGISTRY and _REGISTRY[name].factory is not factory:
            raise ConfigError(f"encoder {name!r} is registered twice")
        _REGISTRY[name] = _Entry(EncoderInfo(name, description, repo_id, kind), factory)
        return factory

    return decorator


def list_encoders() -> list[EncoderInfo]:
    """The registered encoders, sorted by name."""
    return [_REGISTRY[n].info for n in sorted(_REGISTRY)]


def registered(name: str) -> tuple[EncoderInfo, EncoderFactory]:
    """Info and factory of a registered name.

    Raises:
        UnknownNameError: the name is not registered (the message lists the known names).
    """
    try:
        entry = _REGISTRY[name]
    except KeyError:
        raise UnknownNameError(_unknown_message(name)) from None
    return entry.info, entry.factory


def _unknown_message(spec: str) -> str:
    known = ", ".join(sorted(_REGISTRY)) or "(none registered)"
    return (
        f"unknown encoder {spec!r}; known names: {known}; or use hf:<repo-or-dir>, "
        "open_clip:hf-hub:<repo>, open_clip:<dir> or open_clip:<arch>:<tag-or-weights-file>"
    )


def _looks_like_path(text: str) -> bool:
    return text.startswith(("/", ".", "~")) or Path(text).expanduser().exists()


def parse_encoder_spec(spec: str) -> EncoderSpec:
    """Parse an encoder name (see the module docstring for the accepted forms).

    Raises:
        UnknownNameError: the name is neither registered nor one of the schemes.
        ConfigError: a scheme is used with a malformed argument.
    """
    text = spec.strip()
    scheme, sep, rest = text.partition(":")
    if not sep:
        if text in _REGISTRY:
            return EncoderSpec(
                spec, SpecKind.REGISTERED, text, repo_id=_REGISTRY[text].info.repo_id
            )
        raise UnknownNameError(_unknown_message(spec))
    if scheme == "hf":
        if not rest:
            raise ConfigError(f"{spec!r}: expected hf:<repo-id-or-local-dir>")
        if _looks_like_path(rest):
            return EncoderSpec(spec, SpecKind.HF, text, path=str(Path(rest).expanduser()))
        if not _REPO_ID.match(rest):
            raise ConfigError(
                f"{spec!r}: {rest!r} is neither a directory nor an <org>/<name> repo id"
            )
        return EncoderSpec(spec, SpecKind.HF, text, repo_id=rest)
    if scheme == "open_clip":
        return _parse_open_clip(spec, rest)
    raise UnknownNameError(_unknown_message(spec))


def _parse_open_clip(spec: str, rest: str) -> EncoderSpec:
    if rest.startswith("hf-hub:"):
        repo = rest[len("hf-hub:") :]
        if not _REPO_ID.match(repo):
            raise ConfigError(f"{spec!r}: expected open_clip:hf-hub:<org>/<name>")
        return EncoderSpec(spec, SpecKind.OPEN_CLIP_DIR, spec.strip(), repo_id=repo)
    if rest and Path(rest).expanduser().is_dir():
        return EncoderSpec(
            spec, SpecKind.OPEN_CLIP_DIR, spec.strip(), path=str(Path(rest).expanduser())
        )
    arch, sep, weights = rest.partition(":")
    if not arch or not sep or not weights:
        raise ConfigError(
            f"{spec!r}: expected open_clip:<arch>:<pretrained-tag-or-weights-file>, "
            "open_clip:hf-hub:<repo> or open_clip:<existing-dir>"
        )
    return EncoderSpec(spec, SpecKind.OPEN_CLIP_ARCH, spec.strip(), arch=arch, weights=weights)
