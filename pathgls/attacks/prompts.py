"""The prompt library: the neutral six-field report request and named adversarial prompts.

The texts live in a versioned data file (``pathgls/resources/prompts.toml``; another file can
be given). An attack prompt is a template around the neutral request (``{neutral}``), so every
attack asks for the same report and only adds its pressure:

``false-malignant-history``  a false clinical history of high-grade carcinoma (PathGLS)
``false-benign-history``     a false history of a benign, reactive process
``leading-question``         a question presupposing a malignant diagnosis
``authority-pressure``       "the senior pathologist already diagnosed ..."
``format-pressure``          drop the structure, answer in one word
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from pathgls.config import DEFAULT_ATTACK as DEFAULT_ATTACK  # the attack when none is named
from pathgls.errors import ConfigError, UnknownNameError
from pathgls.io.resources import resource

DEFAULT_LIBRARY = resource("prompts.toml")
#: The six fields of the structured report, in order.
SIX_FIELDS = (
    "Stain type",
    "Tissue architecture",
    "Cell types",
    "Nuclear features",
    "Cytoplasmic features",
    "Morphologic diagnosis",
)
_FIELD_LINE = re.compile(
    r"^\s*(?:[-*•]\s*)?\**\s*("
    + "|".join(re.escape(f) for f in SIX_FIELDS)
    + r")\s*\**\s*:\s*\**\s*",
    re.IGNORECASE | re.MULTILINE,
)


@dataclass(frozen=True)
class Prompt:
    """One rendered prompt: what a subject is sent."""

    name: str  # "neutral" or the attack's name
    version: str  # the library version
    kind: str  # neutral, false_history, leading_question, authority, format
    pushes: str  # what the attack pushes towards: malignant, benign, format ("" for neutral)
    description: str
    system: str
    user: str

    @property
    def condition(self) -> str:
        """The condition name reports under this prompt carry (``attack:<name>``)."""
        return "original" if self.name == "neutral" else f"attack:{self.name}"


@dataclass(frozen=True)
class PromptLibrary:
    """The neutral prompt and the attacks of one library file."""

    version: str
    neutral: Prompt
    attacks: dict[str, Prompt] = field(default_factory=dict)
    path: str = ""

    def attack(self, name: str) -> Prompt:
        """An attack by name.

        Raises:
            UnknownNameError: no such attack (the message lists them).
        """
        try:
            return self.attacks[name]
        except KeyError as e:
            raise UnknownNameError(
                f"unknown attack prompt {name!r}; known: {', '.join(sorted(self.attacks))}"
            ) from e


def _text(table: dict, key: str, where: str, default: str | None = None) -> str:
    value = table.get(key, default)
    if not isinstance(value, str) or (default is None and not value.strip()):
        raise ConfigError(f"{where}: '{key}' must be a non-empty string")
    return value.strip()


def load_prompt_library(path: str | os.PathLike[str] | None = None) -> PromptLibrary:
    """Read and check a prompt library (the built-in one by default).

    Raises:
        ConfigError: unreadable TOML, a missing field, or an attack without ``{neutral}``.
    """
    p = Path(path) if path else DEFAULT_LIBRARY
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"cannot read the prompt library {p}: {e}") from e
    version = _text(data, "version", str(p))
    neutral_t = data.get("neutral")
    if not isinstance(neutral_t, dict):
        raise ConfigError(f"{p}: a [neutral] table is required")
    system = _text(neutral_t, "system", f"{p} [neutral]", default="")
    neutral = Prompt(
        name="neutral",
        version=version,
        kind="neutral",
        pushes="",
        description=_text(neutral_t, "description", f"{p} [neutral]", default=""),
        system=system,
        user=_text(neutral_t, "user", f"{p} [neutral]"),
    )
    attacks: dict[str, Prompt] = {}
    for name, t in (data.get("attacks") or {}).items():
        where = f"{p} [attacks.{name}]"
        template = _text(t, "user", where)
        if template.count("{neutral}") != 1:
            raise ConfigError(f"{where}: 'user' must contain '{{neutral}}' exactly once")
        attacks[name] = Prompt(
            name=name,
            version=version,
            kind=_text(t, "kind", where),
            pushes=_text(t, "pushes", where, default=""),
            description=_text(t, "description", where, default=""),
            system=_text(t, "system", where, default=system),
            user=template.replace("{neutral}", neutral.user),
        )
    return PromptLibrary(version=version, neutral=neutral, attacks=attacks, path=str(p))


def structured_fields(report: str) -> dict[str, str]:
    """The six fields of a structured report (``{field: text}``; absent fields are left out).

    Tolerates bullets, bold markers and any letter case in the field names.
    """
    matches = list(_FIELD_LINE.finditer(report))
    out: dict[str, str] = {}
    canon = {f.lower(): f for f in SIX_FIELDS}
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(report)
        name = canon[m.group(1).lower()]
        out.setdefault(name, report[m.end() : end].strip())
    return out


def missing_fields(report: str) -> list[str]:
    """Fields of the six-field format that a report does not have (malformed output)."""
    have = structured_fields(report)
    return [f for f in SIX_FIELDS if f not in have]
