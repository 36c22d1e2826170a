"""The score modules, described once: every list of modules in pathgls derives from here.

A ScoreCard carries one :class:`~pathgls.types.ModuleScore` per module that ran. What each
module is — its card name, its default fusion weight, the loaded models its value depends on,
how to get it scored, its console header, its typed evidence, whether it needs a reference
report, the hook that scores it — is one :class:`ModuleScorer`. :func:`score_modules` lists
them: the built-ins (:data:`SCORE_MODULES`) and the plugins installed under the entry-point
group ``pathgls.score_modules``, in the order of the card's, the gate's and the review page's
columns. The config's fusable names and default weights (:mod:`pathgls.config.scoring`), the
fusion's enable hints, the pipeline's model roles and scoring loop, the summary's metrics, the
calibration's and the comparison's modules, the gate's columns and headers, the failure table's
modules and the HTML pages' columns are read from it when they are needed, never at import.

Adding a module therefore touches no other file: a package declares, in its metadata::

    [project.entry-points."pathgls.score_modules"]
    toy = "toy_mod:TOY"          # a ModuleScorer whose score hook is "toy_mod:score"

Plugins are looked up once (the first call of :func:`score_modules`, never at
``import pathgls``); :func:`refresh_score_modules` looks again (tests). A plugin that does not
load, is not a :class:`ModuleScorer` or takes a name already taken raises
:class:`~pathgls.errors.ScoreModuleError` naming its entry point.

Core floor: imports only :mod:`pathgls.evidence` and :mod:`pathgls.errors`.
"""

from __future__ import annotations

import functools
import pkgutil
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from pathgls.errors import ScoreModuleError
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
    # "package.module:function" scoring one subject's reports of one item: called with a
    # :class:`pathgls.runner.scorers.ScoringContext`, it returns the module's ModuleScore, or
    # None when the module does not apply to the item (then it is neither on the card nor
    # timed). Imported when first called. None: the module is never scored by the pipeline.
    score: str | None = None
    # Place in the scoring loop and so in the card's ``modules`` (lowest first; ties keep the
    # column order). The built-ins use 10-50; stability comes first.
    order: int = 100

    def hook(self) -> Callable[[Any], Any]:
        """The function named by :attr:`score`, imported now.

        Raises:
            ScoreModuleError: no hook, or it cannot be imported or is not callable.
        """
        return _resolve_hook(self.name, self.score)


#: The built-in score modules, in the card's column order (plugins: :func:`score_modules`).
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
        score="pathgls.runner.scorers:grounding",
        order=30,
    ),
    ModuleScorer(
        name="logic",
        header="S_l",
        weight=0.3,
        models=("nli", "extractor"),
        enable_hint=None,
        evidence=LogicEvidence,
        score="pathgls.runner.scorers:logic",
        order=20,
    ),
    ModuleScorer(
        name="stability",
        header="S_s",
        weight=0.3,
        models=("embedder", "nli", "extractor"),
        enable_hint=None,
        evidence=StabilityEvidence,
        score="pathgls.runner.scorers:stability",
        order=10,
    ),
    ModuleScorer(
        name="report",
        header="report",
        weight=REPORT_WEIGHT,
        models=("embedder", "extractor"),
        enable_hint=("a reference report for the item", "`--references refs.tsv`"),
        evidence=ReportEvidence,
        needs_reference=True,
        score="pathgls.runner.scorers:report",
        order=50,
    ),
    ModuleScorer(
        name="hare",
        header="hare",
        weight=None,
        models=(),
        enable_hint=("a reference report for the item, with HARE on", "`--references refs.tsv`"),
        evidence=HareEvidence,
        needs_reference=True,
        score="pathgls.runner.scorers:hare",
        order=40,
    ),
)

#: The module scored first, whatever the orders, and the only one scored when the subject gave
#: no original report (its score says why); the others read the original.
SCORED_WITHOUT_ORIGINAL = "stability"
#: Entry-point group of score-module plugins: each entry point names a :class:`ModuleScorer`.
ENTRY_POINT_GROUP = "pathgls.score_modules"
# A hook: "package.module:function" (dotted names).
_HOOK = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
# A module name: it becomes a card key, a config key and CSV column names.
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@functools.cache
def score_modules() -> tuple[ModuleScorer, ...]:
    """Every score module: the built-ins, then the plugins by name (the card's column order).

    The entry points are read on the first call and kept; :func:`refresh_score_modules` reads
    them again.

    Raises:
        ScoreModuleError: a plugin does not load, is not a ModuleScorer, has an invalid name, or
            takes a built-in's or another plugin's name; the message names its entry point.
    """
    return SCORE_MODULES + _plugins({m.name for m in SCORE_MODULES})


def refresh_score_modules() -> None:
    """Forget the plugins found so far: the next :func:`score_modules` looks them up again."""
    score_modules.cache_clear()


def module_by_name() -> Mapping[str, ModuleScorer]:
    """Module name → its :class:`ModuleScorer`, every module (:func:`score_modules`)."""
    return MappingProxyType({m.name: m for m in score_modules()})


def module_names() -> tuple[str, ...]:
    """Every module's name, in the card's column order."""
    return tuple(m.name for m in score_modules())


def weighted_modules() -> tuple[str, ...]:
    """The modules fused by default (those with a default weight), in column order."""
    return tuple(m.name for m in score_modules() if m.weight is not None)


def reference_free_modules() -> tuple[str, ...]:
    """The modules every item can have (no reference report needed), in column order."""
    return tuple(m.name for m in score_modules() if not m.needs_reference)


def scoring_order() -> tuple[ModuleScorer, ...]:
    """The modules with a score hook, in the order the pipeline scores them (and the card's
    ``modules`` holds them): :data:`SCORED_WITHOUT_ORIGINAL` first, then by
    :attr:`ModuleScorer.order`, ties in column order."""
    hooked = [m for m in score_modules() if m.score is not None]
    return tuple(sorted(hooked, key=lambda m: (m.name != SCORED_WITHOUT_ORIGINAL, m.order)))


def _plugins(taken: set[str]) -> tuple[ModuleScorer, ...]:
    from importlib.metadata import entry_points

    found: dict[str, tuple[ModuleScorer, str]] = {}
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: (e.name, e.value)):
        where = (
            f"score-module plugin {ep.name!r} ({ep.value}, entry point group {ENTRY_POINT_GROUP!r})"
        )
        try:
            scorer = ep.load()
        except Exception as e:
            raise ScoreModuleError(f"{where} cannot be loaded: {type(e).__name__}: {e}") from e
        if not isinstance(scorer, ModuleScorer):
            raise ScoreModuleError(
                f"{where} is a {type(scorer).__name__}, not a pathgls.modules.ModuleScorer"
            )
        if not _NAME.match(scorer.name):
            raise ScoreModuleError(
                f"{where}: module name {scorer.name!r} is not lower-case letters, digits and '_'"
            )
        if scorer.name in taken or scorer.name in ("trust", "coverage", "matched_trust"):
            raise ScoreModuleError(
                f"{where}: module name {scorer.name!r} is a built-in's (modules: "
                f"{', '.join(sorted(taken))}; columns: trust, coverage, matched_trust); "
                "choose another name"
            )
        if scorer.name in found:
            raise ScoreModuleError(
                f"{where}: module name {scorer.name!r} is also given by entry point "
                f"{found[scorer.name][1]!r}; uninstall one of them"
            )
        if scorer.score is not None and not _HOOK.match(scorer.score):
            raise ScoreModuleError(
                f"{where}: score hook {scorer.score!r} is not 'package.module:function'"
            )
        found[scorer.name] = (scorer, ep.name)
    return tuple(found[name][0] for name in sorted(found))


def _resolve_hook(name: str, spec: str | None) -> Callable[[Any], Any]:
    if spec is None:
        raise ScoreModuleError(f"score module {name!r} has no score hook")
    try:  # "package.module:function", as entry points name objects
        target: Any = pkgutil.resolve_name(spec)
    except (ImportError, AttributeError, ValueError) as e:
        raise ScoreModuleError(
            f"score module {name!r}: its score hook {spec!r} cannot be imported: "
            f"{type(e).__name__}: {e}"
        ) from e
    if not callable(target):
        raise ScoreModuleError(f"score module {name!r}: its score hook {spec!r} is not callable")
    return target


# The built-ins alone, fixed at import (kept for code that imported them; pathgls itself reads
# the functions above, which include the plugins).
#: Built-in module name → its :class:`ModuleScorer`.
BY_NAME: Mapping[str, ModuleScorer] = MappingProxyType({m.name: m for m in SCORE_MODULES})
#: Every built-in module's name, in the card's column order.
MODULE_NAMES: tuple[str, ...] = tuple(BY_NAME)
#: The built-in modules fused by default (those with a default weight).
WEIGHTED: tuple[str, ...] = tuple(m.name for m in SCORE_MODULES if m.weight is not None)
#: The built-in modules every item can have: no reference report needed.
REFERENCE_FREE: tuple[str, ...] = tuple(m.name for m in SCORE_MODULES if not m.needs_reference)
