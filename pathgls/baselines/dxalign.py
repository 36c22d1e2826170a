"""DxAlign: a reference-based report score that weighs the diagnosis first, as pathologists do.

Pathologists who score a generated report against the reference judge it by its diagnosis
before its descriptions (the HARE expert scale: 4 = right diagnosis, 0 = wrong diagnosis and no
matching description). DxAlign therefore compares *what the candidate diagnoses* with *what the
reference says*:

    dx(candidate) = the candidate's affirmed diagnoses (canonical concept names from the
                    report graph, in order, deduplicated), else its diagnosis section, else
                    "no diagnosis"
    align         = cos(MiniLM(reference), MiniLM(dx(candidate)))
    behaviour     = 1 when the candidate and the reference share a diagnosis behaviour
                    (malignant, benign, in situ, ...), else 0
    DxAlign       = align + w · behaviour,   w = 0.1

The reference is embedded whole, so a candidate diagnosis is credited when the reference
mentions it anywhere (TCGA summaries rarely have a diagnosis section), while the candidate's
descriptions cannot earn credit its diagnosis does not: a fluent report with the wrong
diagnosis scores low. A candidate without any diagnosis is embedded as "no diagnosis". Negated
diagnoses ("no carcinoma") are not diagnoses. The score is a similarity, not a probability;
correlations and rankings are what it is for.

On the 130 non-zero pairs of the HARE expert development set, ``align`` alone reaches Pearson
r = 0.67 and DxAlign 0.70 (``benchmarks/bench_meta.py``); the weight w was chosen on that same
set, so it is the one number here fitted to data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from pathgls.errors import ConfigError
from pathgls.text.analyze import AnalyzedReport, analyze_report
from pathgls.text.base import EntityExtractor
from pathgls.text.diagnoses import behaviours, diagnoses, diagnosis_text
from pathgls.text.embedders import TextEmbedder

NO_DIAGNOSIS = "no diagnosis"
__all__ = [
    "NO_DIAGNOSIS",
    "DxAlignConfig",
    "DxAlignResult",
    "behaviours",
    "candidate_dx_text",
    "diagnoses",
    "dxalign_scores",
]


@dataclass(frozen=True)
class DxAlignConfig:
    """DxAlign's one weight."""

    # Weight of the shared-behaviour indicator (chosen on the HARE dev set; 0 = align alone).
    behaviour_weight: float = 0.1

    def __post_init__(self) -> None:
        if not 0 <= self.behaviour_weight <= 1:
            raise ConfigError(f"behaviour_weight must be in [0, 1], got {self.behaviour_weight}")


@dataclass(frozen=True)
class DxAlignResult:
    """One pair's score and its parts."""

    score: float
    align: float
    behaviour: float
    candidate_dx: str  # what was embedded for the candidate
    shared_behaviour: tuple[str, ...] = ()
    warnings: tuple[str, ...] = field(default_factory=tuple)


def candidate_dx_text(report: AnalyzedReport) -> str:
    """What DxAlign embeds for a candidate (see the module docstring)."""
    dx = diagnoses(report)
    if dx:
        return "; ".join(dx)
    section = diagnosis_text(report)
    return section if section else NO_DIAGNOSIS


def dxalign_scores(
    *,
    references: Sequence[str],
    candidates: Sequence[str],
    extractor: EntityExtractor,
    embedder: TextEmbedder,
    config: DxAlignConfig | None = None,
    analyzed: Mapping[str, AnalyzedReport] | None = None,
) -> list[DxAlignResult]:
    """DxAlign of aligned reference/candidate lists (each distinct text analysed once).

    ``analyzed`` holds readings already made of some of the texts, each
    ``analyze_report(text, extractor=extractor)`` with this very extractor (the pipeline's
    reading of the original report); they are used instead of reading those texts again.

    Raises:
        ValueError: the lists differ in length.
        TypeError: an item is not a string.
    """
    cfg = config or DxAlignConfig()
    if len(references) != len(candidates):
        raise ValueError(f"{len(references)} references for {len(candidates)} candidates")
    for x in (*references, *candidates):
        if not isinstance(x, str):
            raise TypeError(f"reports must be strings, got {type(x).__name__}")
    cache: dict[str, AnalyzedReport] = dict(analyzed or {})

    def analysed(text: str) -> AnalyzedReport:
        if text not in cache:
            cache[text] = analyze_report(text, extractor=extractor)
        return cache[text]

    dx_texts = [candidate_dx_text(analysed(c)) for c in candidates]
    ref_texts = [analysed(r).text for r in references]
    unique = list(dict.fromkeys([*ref_texts, *dx_texts]))
    index = {t: i for i, t in enumerate(unique)}
    emb = np.asarray(embedder.embed(unique), dtype=np.float64)
    out = []
    for ref, cand, ref_t, dx in zip(references, candidates, ref_texts, dx_texts, strict=True):
        warnings = []
        if not ref.strip() or not cand.strip():
            warnings.append("empty reference or candidate: DxAlign is 0")
            out.append(DxAlignResult(0.0, 0.0, 0.0, dx, (), tuple(warnings)))
            continue
        a, b = emb[index[ref_t]], emb[index[dx]]
        align = float(a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-12))
        shared = behaviours(analysed(ref)) & behaviours(analysed(cand))
        beh = 1.0 if shared else 0.0
        if dx == NO_DIAGNOSIS:
            warnings.append("the candidate states no diagnosis")
        out.append(
            DxAlignResult(
                score=align + cfg.behaviour_weight * beh,
                align=align,
                behaviour=beh,
                candidate_dx=dx,
                shared_behaviour=tuple(sorted(shared)),
                warnings=tuple(warnings),
            )
        )
    return out
