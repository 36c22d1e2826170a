"""The score modules, described once: every list of modules in pathgls derives from here.

A ScoreCard carries one :class:`~pathgls.types.ModuleScore` per module that ran. What each
module is — its card name, its default fusion weight, the loaded models its value depends on,
how to get it scored, its console header, its typed evidence, whether it needs a reference
report — is one :class:`ModuleScorer` in :data:`SCORE_MODULES`, in the order of the card's,
the gate's and the review page's columns. The config's fusable names and default weights
(:mod:`pathgls.config.scoring`), the fusion's enable hints, the pipeline's model roles, the
summary's metrics, the calibration's and the comparison's modules, the gate's columns and
headers and the failure table's modules are read from it.

Core floor: imports only :mod:`pathgls.evidence` (for the evidence types).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from pathgls.evidence import (
    GroundingEvidence,
    HareEvidence,
    LogicEvidence,
    ModuleEvidence,
    ReportEvidence,
    StabilityEvidence,
)

#: Weight of the report-side component (a reference-based score, ``[report]`` in the config) in
#: the trust score, next to PathGLS's 0.4 / 0.3 / 0.3. It equals the grounding weight: both ask
#: whether the diagnosis is right — grounding against the image, the report side against a
#: pathologist's reference (DxAlign: Pearson r = 0.69 with pathologists on the HARE expert
#: set, ``benchmarks/bench_meta.py``) — so with a reference it carries 0.4 / 1.4 ≈ 29 % of the
#: trust and the reference-free modules keep the majority (a reference can be terse or about
#: another block). Not fitted: ``pathgls calibrate`` searches it on labelled runs.
REPORT_WEIGHT = 0.4


@dataclass(frozen=True)
class ModuleScorer:
    """One score module: what every table, config check and hint needs to know of it."""

    # The module's name on the card (``modules.<name>``), in configs and in column names.
    name: str
    # Its console column header (the gate table).
    header: str
    # Default weight in the trust score; None: on the card, not fused unless a config weighs it.
    weight: float | None
    # Roles of the loaded models (:class:`pathgls.runner.models.Models`) its value depends on:
    # a random test model in one of them marks the module.
    models: tuple[str, ...]
    # (what to give, the command) when the gate requires it and it is missing; None: its
    # missing reason says it already.
    enable_hint: tuple[str, str] | None
    # Typed record of its evidence on the card.
    evidence: type[ModuleEvidence]
    # Scored only when the item has a reference report (else absent, not missing).
    needs_reference: bool = False


#: Every score module, in the card's column order.
SCORE_MODULES: tuple[ModuleScorer, ...] = (
    ModuleScorer(
        name="grounding",
        header="S_g",
        weight=0.4,
        models=("encoder", "extractor"),
        enable_hint=(
            "an image-text encoder and a report that names what the image shows",
            "`pathgls models pull plip`, then `--encoder plip`",
        ),
        evidence=GroundingEvidence,
    ),
    ModuleScorer(
        name="logic",
        header="S_l",
        weight=0.3,
        models=("nli", "extractor"),
        enable_hint=None,
        evidence=LogicEvidence,
    ),
    ModuleScorer(
        name="stability",
        header="S_s",
        weight=0.3,
        models=("embedder", "nli", "extractor"),
        enable_hint=None,
        evidence=StabilityEvidence,
    ),
    ModuleScorer(
        name="report",
        header="report",
        weight=REPORT_WEIGHT,
        models=("embedder", "extractor"),
        enable_hint=("a reference report for the item", "`--references refs.tsv`"),
        evidence=ReportEvidence,
        needs_reference=True,
    ),
    ModuleScorer(
        name="hare",
        header="hare",
        weight=None,
        models=(),
        enable_hint=("a reference report for the item, with HARE on", "`--references refs.tsv`"),
        evidence=HareEvidence,
        needs_reference=True,
    ),
)

#: Module name → its :class:`ModuleScorer`.
BY_NAME: Mapping[str, ModuleScorer] = MappingProxyType({m.name: m for m in SCORE_MODULES})
#: Every module's name, in the card's column order.
MODULE_NAMES: tuple[str, ...] = tuple(BY_NAME)
#: The modules fused by default (those with a default weight).
WEIGHTED: tuple[str, ...] = tuple(m.name for m in SCORE_MODULES if m.weight is not None)
#: The modules every item can have: no reference report needed.
REFERENCE_FREE: tuple[str, ...] = tuple(m.name for m in SCORE_MODULES if not m.needs_reference)
