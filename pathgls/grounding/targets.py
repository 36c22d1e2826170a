"""The text side of grounding: which entities of a report are grounded, as which phrases.

A report's *affirmed visual* entities are grounded: diagnoses, morphology (cell types,
architecture, nuclear and cytoplasmic features), descriptors and grade words, invasion and
metastasis (``GroundingConfig.visual_types``). Negated entities ("no necrosis") claim an
*absence* and are listed as such, never grounded; IHC markers and results are not visible in
an H&E image and are listed as skipped, like sites, stages, margins, sizes and node counts.
Mentions of one concept are grounded once ("IDC" and "invasive ductal carcinoma").

Each target becomes a phrase (as written, abbreviations expanded to their concept) put into
every prompt template and embedded with the encoder's text tower; several templates are
averaged and re-normalised (prompt ensembling).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import torch

from pathgls.config import GroundingConfig
from pathgls.encoders.base import Encoder
from pathgls.errors import ConfigError
from pathgls.io.resources import resource
from pathgls.types import Entity

#: Why entity types outside ``visual_types`` are not grounded.
SKIP_REASONS = {
    "ihc_marker": "IHC marker: not visible in an H&E image",
    "ihc_modifier": "IHC result: not visible in an H&E image",
    "biomarker_result": "biomarker result: not visible in an H&E image",
    "anatomical_site": "anatomical site: a location, not a finding",
    "stage": "stage: a summary over the case, not a visual finding",
    "margin": "margin status: needs the specimen's orientation, not one slide's patches",
    "size": "size: a gross measurement, not a visual finding",
    "lymph_node_involvement": "lymph node count: a summary over several slides",
}
_NUMERIC_GRADE = "numeric grade: a score, not a phrase an image encoder can ground"
DEFAULT_FOILS = resource("grounding_foils.txt")

#: Words too generic to make a foil "related" to a report.
_GENERIC = frozenset(
    [
        "a",
        "an",
        "and",
        "the",
        "of",
        "in",
        "with",
        "on",
        "at",
        "by",
        "for",
        "to",
        "from",
        "into",
        "its",
        "is",
        "are",
        "cell",
        "cells",
        "tissue",
        "tissues",
        "pattern",
        "type",
        "layer",
        "layers",
        "wall",
        "small",
        "large",
        "chronic",
        "acute",
        "normal",
    ]
)
_WORD = re.compile(r"[a-z][a-z0-9'-]+")


@dataclass(frozen=True)
class GroundingTarget:
    """One concept of the report to look for in the image."""

    phrase: str  # what goes into the templates
    concept: str  # canonical concept ("" when the extractor has none)
    type: str  # entity type of the first mention
    mentions: tuple[str, ...]  # every surface form of it in the report
    uncertain: bool  # every mention hedged ("possible ...")


@dataclass
class TargetSelection:
    """What grounding will look for, and what it leaves out and why."""

    targets: list[GroundingTarget] = field(default_factory=list)
    negated: list[str] = field(default_factory=list)  # affirmed nowhere, negated somewhere
    skipped: list[dict[str, str]] = field(default_factory=list)  # text, type, reason


def _is_abbreviation(text: str) -> bool:
    t = text.strip()
    return len(t) <= 6 and t.isupper() and any(c.isalpha() for c in t)


def entity_phrase(entity: Entity, source: str) -> str:
    """The phrase grounded for an entity (``source``: auto, text or concept)."""
    text = " ".join(entity.text.split())
    if source == "concept" or (source == "auto" and _is_abbreviation(text)):
        return entity.concept or text
    return text


def _key(entity: Entity) -> str:
    return (entity.concept or " ".join(entity.text.lower().split())).lower()


def select_targets(entities: list[Entity], *, config: GroundingConfig) -> TargetSelection:
    """Split a report's entities into grounding targets, negated and skipped ones.

    A concept is a target when at least one mention is affirmed (not negated) and of a
    visual type; it is *negated* when all its visual mentions are negated. Uncertain mentions
    count as affirmed unless ``config.include_uncertain`` is False (then they are skipped).
    """
    visual = set(config.visual_types)
    by_key: dict[str, list[Entity]] = {}
    out = TargetSelection()
    seen_skip: set[tuple[str, str]] = set()

    def skip(e: Entity, reason: str) -> None:
        k = (_key(e), reason)
        if k not in seen_skip:
            seen_skip.add(k)
            out.skipped.append({"text": e.text, "type": e.type, "reason": reason})

    for e in entities:
        if e.type not in visual:
            skip(e, SKIP_REASONS.get(e.type, f"{e.type}: not a grounded type"))
        elif e.type == "grade" and ("grade_number" in e.attributes or "system" in e.attributes):
            skip(e, _NUMERIC_GRADE)
        elif e.uncertain and not e.negated and not config.include_uncertain:
            skip(e, "hedged finding (include_uncertain is off)")
        else:
            by_key.setdefault(_key(e), []).append(e)
    for mentions in by_key.values():
        affirmed = [e for e in mentions if not e.negated]
        if not affirmed:
            out.negated.append(mentions[0].text)
            continue
        first = affirmed[0]
        forms = tuple(dict.fromkeys(" ".join(e.text.split()) for e in affirmed))
        out.targets.append(
            GroundingTarget(
                phrase=entity_phrase(first, config.phrase_source),
                concept=first.concept,
                type=first.type,
                mentions=forms,
                uncertain=all(e.uncertain for e in affirmed),
            )
        )
    return out


def encode_phrases(
    encoder: Encoder, phrases: list[str], *, templates: tuple[str, ...]
) -> torch.Tensor:
    """Embed phrases through every template with the encoder's text tower; ``(M, D)`` unit rows.

    With several templates the embeddings of one phrase are averaged and re-normalised.
    """
    if not phrases:
        return torch.zeros((0, encoder.dim), dtype=torch.float32)
    texts = [t.format(p) for t in templates for p in phrases]
    emb = encoder.encode_text(texts).to(torch.float32).reshape(len(templates), len(phrases), -1)
    mean = emb.mean(dim=0)
    return mean / mean.norm(dim=-1, keepdim=True).clamp_min(1e-12)


class FoilEmbeddings:
    """The foil bank embedded once per encoder and templates, for scoring many reports.

    The whole bank is encoded in one call the first time it is needed, so every report of a
    run is calibrated against the same foil vectors, whatever order the reports come in.
    """

    def __init__(self, encoder: Encoder, *, templates: tuple[str, ...], foils: list[str]) -> None:
        self.encoder_name = encoder.name
        self.templates = tuple(templates)
        self.foils = list(dict.fromkeys(foils))
        self._encoder: Encoder | None = encoder
        self._rows: dict[str, torch.Tensor] | None = None

    def rows(self, chosen: list[str]) -> torch.Tensor:
        """``(len(chosen), D)`` embeddings of foils from the bank.

        Raises:
            KeyError: a phrase that is not in the bank.
        """
        if self._rows is None:
            assert self._encoder is not None
            emb = encode_phrases(self._encoder, self.foils, templates=self.templates)
            self._rows = dict(zip(self.foils, emb, strict=True))
            self._encoder = None  # the vectors are all that is needed from now on
        if not chosen:
            return torch.zeros((0, 0), dtype=torch.float32)
        return torch.stack([self._rows[f] for f in chosen])


def load_foils(path: str | Path | None = None) -> list[str]:
    """Foil phrases from a file (one per line, ``#`` comments); the built-in bank by default.

    Raises:
        ConfigError: the file cannot be read or holds no phrase.
    """
    p = Path(path) if path else DEFAULT_FOILS
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read the foil phrase file {p}: {e}") from e
    foils = list(dict.fromkeys(s.split("#", 1)[0].strip() for s in lines))
    foils = [f for f in foils if f]
    if not foils:
        raise ConfigError(f"the foil phrase file {p} holds no phrase")
    return foils


def content_words(text: str) -> set[str]:
    """Lower-case words of a phrase without generic ones, crudely singularised."""
    words = set()
    for w in _WORD.findall(text.lower()):
        if w not in _GENERIC:
            words.add(w[:-1] if len(w) > 4 and w.endswith("s") else w)
    return words


def unrelated_foils(foils: list[str], targets: list[GroundingTarget]) -> list[str]:
    """Foils sharing no content word with any target's phrase, concept or mentions."""
    report_words: set[str] = set()
    for t in targets:
        for text in (t.phrase, t.concept, *t.mentions):
            report_words |= content_words(text)
    return [f for f in foils if not (content_words(f) & report_words)]
