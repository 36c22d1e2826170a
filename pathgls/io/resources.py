"""The data files shipped inside the package (lexicon, prompts, foils, model configs)."""

from __future__ import annotations

from pathlib import Path

#: The package's ``resources`` folder.
RESOURCES = Path(__file__).resolve().parents[1] / "resources"


def resource(*parts: str) -> Path:
    """Path of a shipped resource file, e.g. ``resource("lexicon", "sites.tsv")``."""
    return RESOURCES.joinpath(*parts)
