"""One spec grammar, one model-location grammar, and one generic registry.

Every backend pathgls can build from a string (encoders, NLI, entity extractors, subjects,
embedders, metrics, HARE's backends, stability Δs) is named by a **spec**::

    kind[:arg]          e.g.  plip · hf:vinid/plip · graph:has_site · openai:http://h/v1#llava

The first colon splits; both sides are trimmed; an empty spec or kind is a ConfigError
(:func:`parse_spec`). Where the argument names model weights it has one grammar too
(:func:`parse_model_ref`)::

    <org>/<name>[@revision]      a Hugging Face repo id (looked up locally, never downloaded)
    dir:<path>                   a local directory or file
    /abs  ./rel  ../rel  ~/home  a local path (explicit prefixes only)

Nothing is guessed from what happens to exist on disk: ``hf:models/nli`` is the repo id
``models/nli`` even when such a folder exists (write ``hf:./models/nli`` or
``hf:dir:models/nli`` for the folder).

A :class:`Registry` maps kinds to factories; ``build(spec, ...)`` parses the spec and calls the
factory with its argument, and ``entries()`` lists every registry in one
:class:`RegistryEntry` shape (``pathgls list``). Registries are filled by decorators when the
module defining a backend is imported, never by anything that loads a model.

Core floor: imports only :mod:`pathgls.errors`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from pathgls.errors import ConfigError, UnknownNameError

T = TypeVar("T")

#: A Hugging Face repo id with an optional ``@revision`` (branch, tag or commit). The one
#: repo-id pattern of pathgls: everything that takes a repo id goes through
#: :func:`parse_model_ref` or :func:`is_repo_id`.
REPO_ID_PATTERN = re.compile(r"^(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)(?:@(?P<revision>[\w./-]+))?$")
#: Prefixes that make an argument an explicit local path.
PATH_PREFIXES = ("/", "./", "../", "~")
#: Scheme that marks any text after it as a local path.
DIR_SCHEME = "dir:"
#: The accepted forms of a model location, for messages.
MODEL_REF_FORMS = (
    "<org>/<name>[@revision] (a Hugging Face repo id), dir:<path>, or a path starting with "
    "/, ./, ../ or ~"
)
# Registry names: letters and digits joined by '-', '_' or '.', never a colon.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class Spec:
    """A parsed ``kind[:arg]`` spec."""

    text: str  # the spec as given, trimmed
    kind: str  # what comes before the first colon
    arg: str  # what comes after it, trimmed ("" when there is none)

    def __str__(self) -> str:
        return self.text


def parse_spec(text: str, *, what: str = "spec") -> Spec:
    """Split ``kind[:arg]`` at the first colon.

    Args:
        text: The spec.
        what: What the spec names, for messages ("NLI backend", "subject", ...).

    Raises:
        ConfigError: not a string, empty, or an empty kind (``":x"``).
    """
    if not isinstance(text, str):
        raise ConfigError(f"{what} spec must be a string, got {type(text).__name__}")
    stripped = text.strip()
    if not stripped:
        raise ConfigError(f"{what} spec is empty; expected kind[:argument]")
    kind, _, arg = stripped.partition(":")
    kind = kind.strip()
    if not kind:
        raise ConfigError(f"{what} spec {stripped!r} has no kind before ':'")
    return Spec(text=stripped, kind=kind, arg=arg.strip())


@dataclass(frozen=True)
class ModelRef:
    """Where a model's weights are: a Hugging Face repo id (with a revision) or a local path.

    Exactly one of ``repo_id`` and ``path`` is set.
    """

    text: str  # the argument as given, trimmed
    repo_id: str | None = None  # "org/name"
    revision: str | None = None  # branch, tag or commit after "@" (None: whatever is local)
    path: str | None = None  # local path, "~" expanded

    @property
    def is_local(self) -> bool:
        """True for a local path."""
        return self.path is not None

    @property
    def repo_spec(self) -> str:
        """``org/name[@revision]`` (repo ids only)."""
        if self.repo_id is None:
            raise ConfigError(f"{self.text!r} is a local path, not a repo id")
        return self.repo_id + (f"@{self.revision}" if self.revision else "")

    def __str__(self) -> str:
        return self.text


def is_repo_id(text: str) -> bool:
    """True when ``text`` is ``org/name`` (no revision)."""
    m = REPO_ID_PATTERN.match(text.strip())
    return m is not None and m.group("revision") is None


def parse_model_ref(arg: str, *, what: str = "model") -> ModelRef:
    """Parse the model-location grammar (see the module docstring).

    Args:
        arg: The argument (e.g. what follows ``hf:``).
        what: What it names, for messages (e.g. ``"hf-ner:not a repo"``).

    Raises:
        ConfigError: empty, an empty ``dir:``, or neither a path form nor a repo id (the
            message names the accepted forms).
    """
    if not isinstance(arg, str):
        raise ConfigError(f"{what}: a model location must be a string, got {type(arg).__name__}")
    text = arg.strip()
    if not text:
        raise ConfigError(f"{what}: no model given; expected {MODEL_REF_FORMS}")
    if text.startswith(DIR_SCHEME):
        path = text[len(DIR_SCHEME) :].strip()
        if not path:
            raise ConfigError(f"{what}: 'dir:' names no path")
        return ModelRef(text=text, path=str(Path(path).expanduser()))
    if text.startswith(PATH_PREFIXES) or text in (".", ".."):
        return ModelRef(text=text, path=str(Path(text).expanduser()))
    m = REPO_ID_PATTERN.match(text)
    if m is None:
        raise ConfigError(f"{what}: {text!r} is not a model location; expected {MODEL_REF_FORMS}")
    return ModelRef(text=text, repo_id=m.group("repo"), revision=m.group("revision"))


def local_path_hint(ref: ModelRef, *, prefix: str = "") -> str:
    """How to write ``ref`` as a local directory (for "not found" messages of repo ids)."""
    if ref.repo_id is None:
        return ""
    return (
        f"if you meant a local directory, write {prefix}./{ref.text} or {prefix}dir:{ref.text} "
        "(a name with one '/' is read as a Hugging Face repo id)"
    )


@dataclass(frozen=True)
class RegistryEntry(Generic[T]):
    """One registered name, in the shape every listing shares."""

    kind: str  # the registry: "encoder", "nli", "extractor", "subject", ...
    name: str  # what comes before ':' in a spec
    argument: str  # what may follow ':' ("" when the name takes none; [..] when optional)
    description: str  # one line
    meta: Mapping[str, Any] = field(default_factory=dict)  # registry-specific fields
    factory: Callable[..., T] | None = field(default=None, repr=False, compare=False)

    @property
    def form(self) -> str:
        """``name`` or ``name:<argument>`` as a user writes it."""
        return f"{self.name}:{self.argument}" if self.argument else self.name

    def to_dict(self) -> dict[str, Any]:
        """``kind, name, argument, description`` and the JSON-able meta fields."""
        out: dict[str, Any] = {
            "kind": self.kind,
            "name": self.name,
            "argument": self.argument,
            "description": self.description,
        }
        for key, value in self.meta.items():
            if isinstance(value, str | int | float | bool) or value is None:
                out[key] = value
            elif isinstance(value, tuple | list) and all(isinstance(v, str) for v in value):
                out[key] = list(value)
        return out


class Registry(Generic[T]):
    """Name → factory, with the one spec grammar.

    ``build("hf:org/model", ...)`` calls the factory registered as ``hf`` with ``"org/model"``
    and the extra arguments. A name registered with ``argument=""`` takes no argument.

    Args:
        kind: The registry's kind as listed ("encoder", "nli", ...).
        label: What a name stands for in messages ("NLI backend"); defaults to ``kind``.
    """

    def __init__(self, kind: str, *, label: str | None = None) -> None:
        if not _NAME.match(kind):
            raise ConfigError(f"invalid registry kind {kind!r}")
        self.kind = kind
        self.label = label or kind
        self._entries: dict[str, RegistryEntry[T]] = {}

    def register(
        self, name: str, *, description: str, argument: str = "", **meta: Any
    ) -> Callable[[Callable[..., T]], Callable[..., T]]:
        """Decorator registering a factory under ``name``.

        Args:
            name: Lower-case name without ``:``.
            description: One line for listings.
            argument: What may follow ``name:`` (``""``: nothing may).
            **meta: Registry-specific fields kept on the entry (e.g. ``higher_is_better``).

        Raises:
            ConfigError: an invalid name, an empty description, or a name registered twice.
        """
        if not isinstance(name, str) or not _NAME.match(name):
            raise ConfigError(
                f"invalid {self.label} name {name!r}: letters, digits, '.', '_' and '-' only"
            )
        if not description.strip():
            raise ConfigError(f"{self.label} {name!r} needs a description")

        def deco(factory: Callable[..., T]) -> Callable[..., T]:
            if name in self._entries:
                raise ConfigError(f"{self.label} {name!r} is registered twice")
            self._entries[name] = RegistryEntry(
                kind=self.kind,
                name=name,
                argument=argument,
                description=description,
                meta=MappingProxyType(dict(meta)),
                factory=factory,
            )
            return factory

        return deco

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> tuple[str, ...]:
        """Registered names, sorted."""
        return tuple(sorted(self._entries))

    def entries(self) -> list[RegistryEntry[T]]:
        """Every entry, sorted by name."""
        return [self._entries[n] for n in sorted(self._entries)]

    def known(self) -> str:
        """The registered forms, for messages (``"graph[:<types>], hare-re:<model>"``)."""
        return ", ".join(e.form for e in self.entries()) or "(none registered)"

    def get(self, name: str) -> RegistryEntry[T]:
        """The entry of ``name``.

        Raises:
            UnknownNameError: not registered (the message lists the known forms).
        """
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            raise UnknownNameError(
                f"unknown {self.label} {name!r}; known: {self.known()}"
            ) from None

    def parse(self, spec: str | Spec) -> tuple[Spec, RegistryEntry[T]]:
        """The parsed spec and its entry.

        Raises:
            ConfigError: a malformed spec, or an argument given to a name that takes none.
            UnknownNameError: an unknown kind (the message lists the known forms).
        """
        parsed = spec if isinstance(spec, Spec) else parse_spec(spec, what=self.label)
        if parsed.kind not in self._entries:
            raise UnknownNameError(f"unknown {self.label} {parsed.text!r}; known: {self.known()}")
        entry = self._entries[parsed.kind]
        if parsed.arg and not entry.argument:
            raise ConfigError(f"{self.label} {entry.name!r} takes no argument, got {parsed.text!r}")
        return parsed, entry

    def build(self, spec: str | Spec, *args: Any, **kwargs: Any) -> T:
        """Parse ``spec`` and call its factory with ``(spec.arg, *args, **kwargs)``.

        Raises:
            ConfigError / UnknownNameError: see :meth:`parse`; and whatever the factory raises.
        """
        parsed, entry = self.parse(spec)
        assert entry.factory is not None  # register() always sets it
        return entry.factory(parsed.arg, *args, **kwargs)
