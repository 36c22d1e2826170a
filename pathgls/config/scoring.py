"""Scoring sections: how each module scores, how the scores are fused and gated, and HARE.

``[grounding]`` :class:`GroundingConfig` (S_g), ``[logic]`` :class:`LogicConfig` (S_l),
``[stability]`` :class:`StabilityConfig` (S_s), ``[fusion]`` :class:`FusionConfig` (trust
score), ``[gate]`` :class:`GateConfig` (deploy / review / reject), ``[hare]``
:class:`HareConfig` (the reference-based metric), ``[report]`` :class:`ReportConfig` (the
report-side component fused when an item has a reference). The constants their validation needs live
here too; the stage modules import them from here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from pathgls.config.convert import in_range, require
from pathgls.errors import ConfigError
from pathgls.modules import MODULE_NAMES, SCORE_MODULES, module_names, score_modules
from pathgls.numeric import finite

#: Entity types grounded by default: what an H&E image can show.
GROUNDED_TYPES = (
    "pathological_diagnosis",
    "morphology_finding",
    "diagnosis_descriptor",
    "grade",
    "lymphovascular_invasion",
    "perineural_invasion",
    "metastasis",
)


@dataclass(frozen=True)
class GroundingConfig:
    """How the Grounding score S_g is computed (see :mod:`pathgls.grounding`)."""

    # "foil-rank" (default: encoder-independent [0, 1]), "raw" (paper) or "sigmoid" (ref. code).
    calibration: Literal["raw", "sigmoid", "foil-rank"] = "foil-rank"
    # Slope k and midpoint t of the sigmoid calibration (reference code: 60 and 0.20).
    sigmoid_k: float = 60.0
    sigmoid_t: float = 0.20
    # Prompt templates; "{}" is the entity. Several are averaged (prompt ensembling).
    templates: tuple[str, ...] = ("an H&E image of {}.",)
    # Phrase of an entity: "auto" (as written, abbreviations expanded to the concept),
    # "text" (always as written) or "concept" (the canonical concept when there is one).
    phrase_source: Literal["auto", "text", "concept"] = "auto"
    # Entity types that are grounded; other types are listed as skipped with the reason.
    visual_types: tuple[str, ...] = GROUNDED_TYPES
    # Ground hedged findings ("possible carcinoma") too; they are flagged in the evidence.
    include_uncertain: bool = True
    # Foil phrase file (one phrase per line, "#" comments); "" uses the built-in bank.
    foils: str = ""
    # foil-rank needs at least this many foils left after removing the report's own concepts.
    min_foils: int = 16
    # Best patches kept per entity (GeoJSON export, evidence).
    top_patches: int = 5
    # Windows per similarity chunk: bounds memory (~chunk × (D + M) × 4 bytes), not results.
    chunk_windows: int = 32768
    # "auto" (CUDA when present), "cpu", "cuda", ...
    device: str = "auto"
    # Largest ROI side in pixels accepted by ROI mode (bigger regions: extract a bag).
    roi_max_side: int = 16384

    def __post_init__(self) -> None:
        object.__setattr__(self, "templates", tuple(self.templates))
        object.__setattr__(self, "visual_types", tuple(self.visual_types))
        require(
            self.calibration in ("raw", "sigmoid", "foil-rank"),
            f"calibration must be raw, sigmoid or foil-rank, got {self.calibration!r}",
        )
        require(bool(self.templates), "templates must hold at least one prompt template")
        for t in self.templates:
            require(
                isinstance(t, str) and t.count("{}") == 1,
                f"templates: a prompt template must contain exactly one '{{}}', got {t!r}",
            )
        in_range("sigmoid_k", self.sigmoid_k, 0, 10_000, open_low=True)
        in_range("sigmoid_t", self.sigmoid_t, -1, 1)
        require(
            self.phrase_source in ("auto", "text", "concept"),
            f"phrase_source must be auto, text or concept, got {self.phrase_source!r}",
        )
        require(bool(self.visual_types), "visual_types must name at least one entity type")
        in_range("min_foils", self.min_foils, 1, 100_000)
        in_range("top_patches", self.top_patches, 1, 10_000)
        in_range("chunk_windows", self.chunk_windows, 1, 10_000_000)
        in_range("roi_max_side", self.roi_max_side, 16, 65536)


@dataclass(frozen=True)
class CheckWeights:
    """Contradiction probability of each check when it fires (an NLI-like scale)."""

    behaviour: float = 0.95  # no tumour / non-invasive against a malignant / invasive diagnosis
    type: float = 0.9  # two tumour types that cannot name one tumour
    side: float = 0.9  # the tumour left and right
    site: float = 0.85  # the tumour in two lobes
    size: float = 0.85  # two sizes of one tumour beyond rounding
    grade: float = 0.9  # grades that disagree (system, differentiation, Gleason, WHO vs type)
    stage_size: float = 0.85  # a pT category its own stated size rules out
    stage_extent: float = 0.85  # a pT/FIGO category its own stated extent or depth rules out
    stage_nodes: float = 0.9  # pN against the positive node count
    stage_repeat: float = 0.85  # one tumour given two pT (or pN) categories of different rank
    node_counts: float = 0.85  # counts that cannot add up
    node_status: float = 0.9  # nodes negative and positive
    margin: float = 0.9  # one margin involved and free
    marker: float = 0.9  # one marker positive and negative in the same cells
    finding: float = 0.95  # a finding affirmed and denied of the same target
    amount: float = 0.85  # two proliferation indices or shares of the specimen that cannot agree

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            require(0.0 <= value <= 1.0, f"{name} must be in [0, 1], got {value}")


@dataclass(frozen=True)
class LogicConfig:
    """How the Logic score's pairs are formed, checked and aggregated (see :mod:`pathgls.logic`)."""

    # K = ceil(top_k_fraction × number of pairs), at least 1 (PathGLS: 0.3).
    top_k_fraction: float = 0.3
    # A fixed K instead of the fraction (None: use the fraction).
    top_k: int | None = None
    # Pair a benign tumour with a malignancy of its kind (and a diagnosis with its denial).
    diagnosis_pairs: bool = True
    # At most this many pairs (check hits first), to bound NLI cost.
    max_pairs: int = 2000
    # Run the graph-consistency checks (with an NLI model: a pair's probability is the larger).
    checks: bool = True
    # Contradiction probability of a pair when there is no model and no check fires.
    base_probability: float = 0.02
    # Probability of each check when it fires.
    weights: CheckWeights = field(default_factory=CheckWeights)
    # With the learned judge: each statement is paired with its K most similar statements.
    judge_neighbours: int = 3
    # With the learned judge: at most this many pairs are judged per report (check pairs
    # first, then by similarity), bounding the work on huge reports.
    judge_max_pairs: int = 400
    # With the learned judge: at most this many statements are read per report.
    judge_max_units: int = 400
    # With the learned judge: S_l = 1 - mean of the K largest pair probabilities (1: the
    # strongest contradiction decides; the paper's top-30% mean dilutes one contradiction
    # among hundreds of pairs to nothing).
    judge_top_k: int = 1

    def __post_init__(self) -> None:
        in_range("judge_neighbours", self.judge_neighbours, 0, 64)
        in_range("judge_max_pairs", self.judge_max_pairs, 1, 1_000_000)
        in_range("judge_max_units", self.judge_max_units, 2, 1_000_000)
        in_range("judge_top_k", self.judge_top_k, 1, 1_000_000)
        require(
            0 < self.top_k_fraction <= 1,
            f"top_k_fraction must be in (0, 1], got {self.top_k_fraction}",
        )
        if self.top_k is not None:
            in_range("top_k", self.top_k, 1, 1_000_000)
        in_range("max_pairs", self.max_pairs, 1, 1_000_000)
        require(
            0.0 <= self.base_probability < 1.0,
            f"base_probability must be in [0, 1), got {self.base_probability}",
        )


#: Median MiniLM cosine between reference reports of different cases (see
#: :mod:`pathgls.stability.delta`).
UNRELATED_COSINE = 0.36
#: Median MiniLM cosine between the names of two different diagnosis concepts of the shipped
#: lexicon (276 concepts: p10 0.12, p90 0.44), see :mod:`pathgls.stability.dx`.
UNRELATED_DIAGNOSIS_COSINE = 0.28
#: The Δ backends of the Stability score.
DELTAS = ("dx", "embedding", "nli", "entity")


@dataclass(frozen=True)
class StabilityConfig:
    """How the Stability score's Δ is measured (see :mod:`pathgls.stability.delta`)."""

    # dx (default: diagnoses, behaviour and key findings), embedding, nli or entity.
    delta: str = "dx"
    # Compare diagnosis sections when both reports have one (embedding/nli backends).
    diagnosis_section: bool = True
    # Median cosine of unrelated reports for the embedding calibration.
    unrelated_cosine: float = UNRELATED_COSINE
    # Entity Δ: a match needs at least this embedding cosine (soft matching).
    entity_match_threshold: float = 0.5
    # dx Δ: weight of the behaviour change against the diagnosis-type change.
    dx_behaviour_weight: float = 0.5
    # dx Δ: each key finding stated with opposite values moves Δ this share of the way to 1.
    dx_finding_weight: float = 0.5
    # dx Δ: median cosine of two different diagnosis names (a concept match scale's zero).
    dx_unrelated_cosine: float = UNRELATED_DIAGNOSIS_COSINE

    def __post_init__(self) -> None:
        require(self.delta in DELTAS, f"delta must be one of {DELTAS}, got {self.delta!r}")
        for name in ("dx_behaviour_weight", "dx_finding_weight"):
            value = getattr(self, name)
            require(0 <= value <= 1, f"{name} must be in [0, 1], got {value}")
        require(
            0 <= self.dx_unrelated_cosine < 1,
            f"dx_unrelated_cosine must be in [0, 1), got {self.dx_unrelated_cosine}",
        )
        require(
            0 <= self.unrelated_cosine < 1,
            f"unrelated_cosine must be in [0, 1), got {self.unrelated_cosine}",
        )
        require(
            0 <= self.entity_match_threshold <= 1,
            f"entity_match_threshold must be in [0, 1], got {self.entity_match_threshold}",
        )


def default_weights() -> dict[str, float]:
    """Module weights of the trust score (PathGLS: w_g = 0.4, w_l = 0.3, w_s = 0.3; the
    report-side component, fused only when an item has a reference: :data:`REPORT_WEIGHT`, where
    the choice is argued): each module's :class:`~pathgls.modules.ModuleScorer` weight, plugins
    included."""
    return {m.name: m.weight for m in score_modules() if m.weight is not None}


def default_reference_modules() -> tuple[str, ...]:
    """Modules fused by default that need a reference report (plugins included): an item
    without one has no such module (absent)."""
    return tuple(m.name for m in score_modules() if m.needs_reference and m.weight is not None)


#: :func:`default_weights` of the built-in modules alone (kept for code that imported it).
DEFAULT_WEIGHTS: Mapping[str, float] = MappingProxyType(
    {m.name: m.weight for m in SCORE_MODULES if m.weight is not None}
)
#: Built-in modules fused by default that need a reference report: an item without one has no
#: such module (absent). (HARE needs one too, but is not fused unless a config weighs it.)
#: Kept for code that imported it; :func:`default_reference_modules` includes the plugins.
REFERENCE_MODULES: tuple[str, ...] = tuple(
    m.name for m in SCORE_MODULES if m.needs_reference and m.weight is not None
)


#: What deploy needs scored by default (``[gate] required``): grounding, the image check.
DEFAULT_REQUIRED: tuple[str, ...] = ("grounding",)

#: Largest fusion or type weight: weights are normalised, only their ratios matter, and a
#: bound keeps their sum finite (1e308 overflowed it and turned a deploy into a reject).
MAX_WEIGHT = 1e6

#: Built-in module names a fusion weight or a gate floor may name (kept for code that imported
#: it; the checks read :func:`~pathgls.modules.module_names`, plugins included).
FUSABLE_MODULES: tuple[str, ...] = MODULE_NAMES


def _known_module(name: str, where: str) -> None:
    """Refuse a module name that no ScoreCard carries (a typo would be silently ignored).

    Raises:
        ConfigError: naming ``name``, the closest known name and the known names.
    """
    known = module_names()
    if name in known:
        return
    import difflib

    close = difflib.get_close_matches(name, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ConfigError(f"{where}: unknown module {name!r}{hint}; known: {', '.join(known)}")


@dataclass(frozen=True)
class FusionConfig:
    """How module scores are fused into the trust score (see :mod:`pathgls.fusion`)."""

    # Weight per module name (a TOML table); modules not named here are not fused (e.g. hare).
    weights: Mapping[str, float] = field(default_factory=default_weights)
    # The reference code's penalties (×0.6 when S_l < 0.5, ×0.8 when S_g < 0.25); off: not in
    # the paper.
    reference_penalties: bool = False
    # Modules scored only against a reference report: on a card without them (no reference)
    # they are absent — not fused, not missing, not counted in the gate's coverage — so the
    # trust and the gate are exactly those of the other modules. Scored but without a value
    # (the backend failed), they are missing like any module.
    reference_modules: tuple[str, ...] = field(default_factory=default_reference_modules)

    def __post_init__(self) -> None:
        try:
            weights = {str(k): float(v) for k, v in dict(self.weights).items()}
        except (TypeError, ValueError) as e:
            raise ConfigError(f"weights must map module names to numbers: {e}") from e
        require(bool(weights), "weights must name at least one module")
        for name, w in weights.items():
            require(bool(name), "weights: empty module name")
            _known_module(name, "weights")
            require(
                math.isfinite(w) and 0 <= w <= MAX_WEIGHT,
                f"weights: the weight of {name!r} must be a number in [0, {MAX_WEIGHT:g}] "
                f"(only their ratios matter), got {w}",
            )
        require(sum(weights.values()) > 0, "weights sum to 0")
        object.__setattr__(self, "weights", MappingProxyType(weights))
        refs = tuple(self.reference_modules)
        require(
            all(isinstance(m, str) and m for m in refs),
            f"reference_modules must be module names, got {list(refs)!r}",
        )
        object.__setattr__(self, "reference_modules", refs)

    def __reduce__(self) -> tuple[Any, ...]:
        # mappingproxy does not pickle; executors (Ray, processes) ship configs by pickle.
        return (
            type(self),
            (dict(self.weights), self.reference_penalties, self.reference_modules),
        )


@dataclass(frozen=True)
class GateConfig:
    """Thresholds of the gate (see :func:`pathgls.fusion.route`)."""

    # Trust at or above which a report is deployed (when every floor holds).
    deploy: float = 0.75
    # Trust at or above which a report goes to human review; below it, rejected.
    review: float = 0.5
    # Per-module minimum (a TOML table): a module below its floor (or missing) blocks deployment.
    floors: Mapping[str, float] = field(default_factory=dict)
    # Deploy only when the modules that ran carry at least this share of the fusion weight
    # (0.6: grounding alone, or logic and stability, are enough; stability alone is not).
    min_coverage: float = 0.6
    # Modules deploy needs scored: each entry must be met; "a|b" is met by either (e.g.
    # "grounding|report": the image, or a reference report where the item has one). Default:
    # grounding, the only module that looks at the image — a consistent, stable report about
    # the wrong tissue is not deployed unchecked. [] deploys on the trust alone.
    required: tuple[str, ...] = DEFAULT_REQUIRED

    def __post_init__(self) -> None:
        for name in ("deploy", "review"):
            v = finite(getattr(self, name))
            require(
                v is not None and 0.0 <= v <= 1.0,
                f"{name} threshold must be in [0, 1], got {getattr(self, name)!r}",
            )
        require(
            self.deploy >= self.review,
            f"deploy threshold {self.deploy} is below the review threshold {self.review}",
        )
        floors: dict[str, float] = {}
        for name, value in dict(self.floors).items():
            v = finite(value)
            if not name or v is None or not 0.0 <= v <= 1.0:
                raise ConfigError(
                    f"floors: {name!r} = {value!r}: need a module name and a value in [0, 1]"
                )
            _known_module(str(name), "floors")
            floors[str(name)] = v
        object.__setattr__(self, "floors", MappingProxyType(floors))
        cov = finite(self.min_coverage)
        require(
            cov is not None and 0.0 <= cov <= 1.0,
            f"min_coverage must be in [0, 1], got {self.min_coverage!r}",
        )
        object.__setattr__(self, "required", _requirements(self.required))

    @property
    def requirements(self) -> tuple[tuple[str, ...], ...]:
        """``required`` parsed: one tuple of alternative modules per entry."""
        return tuple(tuple(entry.split("|")) for entry in self.required)

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            type(self),
            (self.deploy, self.review, dict(self.floors), self.min_coverage, self.required),
        )


def _requirements(value: Any) -> tuple[str, ...]:
    """``[gate] required`` normalised: a tuple of ``module`` or ``module|module`` entries.

    Raises:
        ConfigError: not a list of strings, an empty entry, or an unknown module name.
    """
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise ConfigError(
            f'required must be a list of module names (e.g. ["grounding"] or '
            f'["grounding|report"]), got {value!r}'
        )
    out: list[str] = []
    for entry in value:
        require(isinstance(entry, str), f"required: entries must be strings, got {entry!r}")
        names = [n.strip() for n in entry.split("|")]
        require(all(names), f"required: empty module name in {entry!r}")
        for name in names:
            _known_module(name, "required")
        norm = "|".join(dict.fromkeys(names))
        if norm not in out:
            out.append(norm)
    return tuple(out)


#: HARE's published entity label set (the first five of :data:`pathgls.text.ENTITY_TYPES`).
HARE_TYPES = (
    "anatomical_site",
    "pathological_diagnosis",
    "diagnosis_descriptor",
    "ihc_marker",
    "ihc_modifier",
)
#: The choices of HareConfig's option fields.
HARE_CHOICES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "combine": ("weighted", "sum"),
        "relation_match": ("exact", "soft"),
        "no_relations": ("missing", "zero"),
        "re_scope": ("sentence", "report"),
    }
)


@dataclass(frozen=True)
class HareConfig:
    """How HARE scores, and the options of the models it loads (see :mod:`pathgls.hare`)."""

    alpha: float = 0.5  # weight of F1_e in combine="weighted" (reference code: 0.5)
    combine: Literal["weighted", "sum"] = "weighted"  # α·F1_e + (1−α)·F1_r, or F1_e + F1_r
    negation_aware: bool = False  # negated vs affirmed entities never match
    relation_match: Literal["exact", "soft"] = "exact"  # triple matching (published: exact)
    soft_relation_threshold: float = 0.0  # soft triple similarity below this counts 0
    type_restricted: bool = False  # an entity matches only entities of its own HARE type
    type_weights: Mapping[str, float] | None = None  # HARE type → mention weight (None: all 1)
    no_relations: Literal["missing", "zero"] = "missing"  # F1_r when neither side has one
    ner_threshold: float = 0.7  # hf-ner: entities with a lower confidence are dropped
    re_threshold: float = 0.7  # hare-re: relations with a lower probability are dropped
    re_scope: Literal["sentence", "report"] = "sentence"  # hare-re: which entity pairs
    re_batch_size: int = 32  # hare-re: marked pairs per forward pass
    re_max_length: int = 512  # hare-re: tokens per marked pair
    embed_batch_size: int = 256  # entity texts per embedding forward pass
    device: str = "auto"  # where hf-ner / hf-cls / hare-re run

    def __post_init__(self) -> None:
        for name in ("alpha", "soft_relation_threshold", "ner_threshold", "re_threshold"):
            v = getattr(self, name)
            require(
                not isinstance(v, bool) and isinstance(v, int | float) and 0.0 <= v <= 1.0,
                f"{name} must be a number in [0, 1], got {v!r}",
            )
        for name, allowed in HARE_CHOICES.items():
            require(
                getattr(self, name) in allowed,
                f"{name} must be one of {', '.join(allowed)}, got {getattr(self, name)!r}",
            )
        for name, least in (("re_batch_size", 1), ("embed_batch_size", 1), ("re_max_length", 8)):
            in_range(name, getattr(self, name), least, 65536)
        if self.type_weights is not None:
            weights = dict(self.type_weights)
            unknown = sorted(set(weights) - set(HARE_TYPES))
            bad = [
                v
                for v in weights.values()
                if not (isinstance(v, int | float) and 0 <= v <= MAX_WEIGHT)
            ]
            all_zero = not any(weights.get(t, 1.0) > 0 for t in HARE_TYPES)
            require(
                not (unknown or bad or all_zero),
                f"type_weights maps HARE types ({', '.join(HARE_TYPES)}) to weights ≥ 0, "
                f"not all 0; got {self.type_weights!r}",
            )
            object.__setattr__(self, "type_weights", weights)

    def weight(self, hare_type: str) -> float:
        """Mention weight of ``hare_type`` in the entity means."""
        return float(self.type_weights.get(hare_type, 1.0)) if self.type_weights else 1.0


#: The report-side backends (registered in :mod:`pathgls.baselines.report_side`).
REPORT_BACKENDS = ("dxalign", "hare")


@dataclass(frozen=True)
class ReportConfig:
    """The report-side component: a reference-based score of the report, in [0, 1].

    Scored for an item that has a reference report and fused with the weight
    ``fusion.weights.report`` (see :data:`REPORT_WEIGHT`); see
    :mod:`pathgls.baselines.report_side`.
    """

    # dxalign (offline: the run's entity extractor and sentence embedder) or hare (HARE with
    # the models of [hare]; HARE-NER/RE/alignment when given there).
    backend: str = "dxalign"
    # DxAlign: weight of the shared-behaviour indicator (chosen on the HARE dev set).
    behaviour_weight: float = 0.1
    # DxAlign → [0, 1]: (DxAlign − floor) / (1 + behaviour_weight − floor), clipped; the floor is
    # the median MiniLM cosine of unrelated reports, so an unrelated report scores 0.
    floor: float = UNRELATED_COSINE

    def __post_init__(self) -> None:
        require(
            self.backend in REPORT_BACKENDS,
            f"backend must be one of {', '.join(REPORT_BACKENDS)}, got {self.backend!r}",
        )
        require(
            0.0 <= self.behaviour_weight <= 1.0,
            f"behaviour_weight must be in [0, 1], got {self.behaviour_weight}",
        )
        require(0.0 <= self.floor < 1.0, f"floor must be in [0, 1), got {self.floor}")
