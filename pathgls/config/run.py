"""Run sections: what a run evaluates and with which models, and how subjects are asked.

``[run]`` :class:`RunConfig` (subjects, attack, seed, executor, ...), ``[models]``
:class:`ModelsConfig` (entity extractor, NLI, sentence embedder), ``[subject]``
:class:`SubjectConfig` (how subjects are queried), ``[view]`` :class:`ViewConfig` (what a subject
sees of a slide), ``[stain]`` :class:`StainConfig` (the Macenko stain perturbation of the
Stability score).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pathgls.config.convert import in_range, require
from pathgls.errors import ConfigError

#: Largest seed (numpy and torch take 64-bit seeds).
MAX_SEED = 2**63 - 1
#: Largest µm/px accepted for a slide (1 mm per pixel: no microscope image is coarser).
MAX_MPP = 1000.0
#: Most Ray actors a run may ask for.
MAX_RAY_WORKERS = 4096
#: Longest image side a subject is sent, or a thumbnail is drawn at, in pixels.
MAX_IMAGE_SIDE = 16384
#: Bounds of the request settings (the chat client holds to the same).
MAX_TIMEOUT_S = 86400.0
MAX_BACKOFF_S = 3600.0
MAX_RETRIES = 100

#: The attack of the PathGLS paper, used when none is named.
DEFAULT_ATTACK = "false-malignant-history"
#: How a run's items are spread: one process, or Ray actors.
EXECUTORS = ("local", "ray")


@dataclass(frozen=True)
class RunConfig:
    """What a benchmark run evaluates (``[run]``); a run needs at least one subject."""

    # Subject specs (captioner, openai:<url>#<model>, hf:<dir>, replay:<jsonl>); a run needs one.
    subjects: tuple[str, ...] = ()
    # Adversarial prompt of the attack condition (a name of the prompt library).
    attack: str = DEFAULT_ATTACK
    # Generation and stain seed.
    seed: int = 0
    # Level-0 µm/px for slides without resolution metadata (None: such slides fail).
    mpp: float | None = None
    # Compute HARE against the items' reference reports (offline models) when they have one.
    hare: bool = True
    # Keep per-entity patch similarities for heat maps (grounding/<subject>/<item>.npz).
    keep_grounding_maps: bool = True
    # A subject whose original report failed on this many items in a row is skipped for the
    # rest of the run (each worker counts its own; its items fail with the reason and a rerun
    # tries them again), so a dead endpoint does not cost its timeout on every item. 0: never.
    subject_failure_limit: int = 3
    # local (one process, models loaded once) or ray (actors on a Ray cluster).
    executor: Literal["local", "ray"] = "local"
    # Ray actors (None: one per CPU, or per GPU when encoding on GPUs).
    workers: int | None = None
    # Ray cluster to connect to (ray://host:10001, auto); None starts a local Ray for the run.
    address: str | None = None
    # Hash every input file in full on a rerun to check its finished ScoreCards, patches files
    # and feature bags against it, even when its size, mtime and header are unchanged (without
    # it, a full hash is only taken when the mtime changed).
    verify: bool = False
    # Seconds the Ray driver waits without any result before it checks the cluster; a cluster
    # without a live node (or that does not answer) for as long again ends the run (manifest
    # "failed"). Below 30: Ray itself ends a driver that cannot reach its head for 60 s.
    ray_health_s: float = 20.0
    # Seconds for the Ray head at `address` to answer a connection (a TCP and HTTP/2 probe
    # before ray.init); beyond it the run fails naming the address (Ray alone retries for
    # minutes and holds SIGTERM meanwhile).
    ray_connect_s: float = 30.0
    # TSV of reference reports (item_id<TAB>reference) for HARE and the report-side module;
    # a run stores it as an absolute path, so its config.toml repeats the run with them.
    references: str | None = None

    def __post_init__(self) -> None:
        if self.references is not None:
            require(
                isinstance(self.references, str) and bool(self.references.strip()),
                f"references must name a TSV file, got {self.references!r}",
            )
        subjects = tuple(s.strip() if isinstance(s, str) else s for s in self.subjects)
        require(
            all(isinstance(s, str) and s for s in subjects),
            f"subjects must be non-empty subject specs, got {list(self.subjects)!r}",
        )
        twice = sorted({s for s in subjects if subjects.count(s) > 1})
        require(not twice, f"subjects: {', '.join(twice)} given twice")
        object.__setattr__(self, "subjects", subjects)
        require(bool(self.attack.strip()), "attack must name an attack prompt")
        in_range("seed", self.seed, 0, MAX_SEED)
        if self.mpp is not None:
            in_range("mpp", self.mpp, 0, MAX_MPP, open_low=True)
        in_range("subject_failure_limit", self.subject_failure_limit, 0, 1_000_000)
        require(
            self.executor in EXECUTORS,
            f"executor must be one of {', '.join(EXECUTORS)}, got {self.executor!r}",
        )
        if self.workers is not None:
            in_range("workers", self.workers, 1, MAX_RAY_WORKERS)
        in_range("ray_health_s", self.ray_health_s, 1, MAX_TIMEOUT_S)
        in_range("ray_connect_s", self.ray_connect_s, 0.1, MAX_TIMEOUT_S)


@dataclass(frozen=True)
class ModelsConfig:
    """The text models of a run, by spec (``[models]``); the image encoder is ``[encoder]``."""

    # Entity extractor: lexicon, hf-ner:<dir>, llm:<url>#<model>.
    extractor: str = "lexicon"
    # NLI for the Logic score: rules, hf:<repo-or-dir>.
    nli: str = "rules"
    # Sentence embedder for the Stability Δ: minilm, ...
    embedder: str = "minilm"

    def __post_init__(self) -> None:
        for name in ("extractor", "nli", "embedder"):
            require(bool(getattr(self, name).strip()), f"{name} must not be empty")


@dataclass(frozen=True)
class SubjectConfig:
    """How subjects are asked (``[subject]``; see :mod:`pathgls.subjects`)."""

    # Sampling temperature (0: greedy).
    temperature: float = 0.0
    # Longest report, in tokens.
    max_tokens: int = 768
    # Seconds one request may take (openai).
    timeout_s: float = 120.0
    # Retries after the first attempt on 429/5xx/timeouts (openai).
    max_retries: int = 3
    # Wait before the first retry, doubled each time (openai).
    backoff_s: float = 1.0
    # Environment variable holding the API key (openai); never logged.
    api_key_env: str = "OPENAI_API_KEY"
    # "auto", "cpu", "cuda", ... (hf).
    device: str = "auto"
    # "auto" (fp16/bf16 on GPU, fp32 on CPU), "fp32", "fp16", "bf16" (hf).
    precision: str = "auto"
    # Longest image side sent to a subject; larger images are downscaled (aspect kept).
    max_image_side: int = 1024
    # Longest report accepted, in characters; a longer answer fails its generation (not cached).
    max_report_chars: int = 262144

    def __post_init__(self) -> None:
        in_range("temperature", self.temperature, 0, 10)
        in_range("max_tokens", self.max_tokens, 1, 1_000_000)
        in_range("timeout_s", self.timeout_s, 0, MAX_TIMEOUT_S, open_low=True)
        in_range("max_retries", self.max_retries, 0, MAX_RETRIES)
        in_range("backoff_s", self.backoff_s, 0, MAX_BACKOFF_S)
        in_range("max_report_chars", self.max_report_chars, 1, 100_000_000)
        require(
            self.precision in ("auto", "fp32", "fp16", "bf16"),
            f"precision must be auto, fp32, fp16 or bf16, got {self.precision!r}",
        )
        in_range("max_image_side", self.max_image_side, 32, MAX_IMAGE_SIDE)


#: What a subject can be shown of a whole slide.
VIEW_KINDS = ("thumbnail", "montage", "patches")


@dataclass(frozen=True)
class ViewConfig:
    """How a slide is shown to a subject (``[view]``; see :mod:`pathgls.subjects.views`)."""

    # thumbnail, montage or patches (montage and patches need an encoder: they pick patches
    # from the slide's feature bag).
    kind: str = "thumbnail"
    # Patches in a montage / patches view.
    k: int = 9
    # Long side of a thumbnail, in pixels.
    thumbnail_size: int = 1024
    # Seed of the k-means that picks diverse patches.
    seed: int = 0

    def __post_init__(self) -> None:
        require(self.kind in VIEW_KINDS, f"kind must be one of {VIEW_KINDS}, got {self.kind!r}")
        in_range("k", self.k, 1, 256)
        in_range("thumbnail_size", self.thumbnail_size, 32, MAX_IMAGE_SIDE)
        in_range("seed", self.seed, 0, 2**32 - 1)


#: Per-pixel arithmetic of the Macenko engine.
STAIN_PRECISIONS = ("float32", "float64")


@dataclass(frozen=True)
class StainConfig:
    """The Macenko stain perturbation of the Stability score (``[stain]``; see
    :mod:`pathgls.attacks.macenko`): parameters, perturbation range, when an image is left alone.
    """

    # Transmitted light intensity: OD = −log((I + 1) / io) (Macenko, torchstain: 240).
    io: float = 240.0
    # Tissue pixels have OD ≥ beta in every channel (0.15).
    beta: float = 0.15
    # Stain vectors at the alpha-th and (100 − alpha)-th angle percentiles (1).
    alpha: float = 1.0
    # Percentile of each stain's concentrations taken as its maximum (99).
    max_percentile: float = 99.0
    # H and E concentrations are scaled by factors drawn from U(factor_low, factor_high).
    factor_low: float = 0.7
    factor_high: float = 1.3
    # An image needs at least this fraction of tissue pixels ...
    min_tissue_fraction: float = 0.01
    # ... and at least this many, or it is returned unchanged (flagged).
    min_tissue_pixels: int = 100
    # Second-largest / largest eigenvalue of the tissue OD covariance below this: the tissue
    # has (nearly) one colour direction, two stains cannot be told apart (flagged).
    min_eigen_ratio: float = 1e-4
    # |sin| of the angle between the two stain vectors below this: degenerate (flagged).
    min_stain_separation: float = 1e-3
    # Per-pixel arithmetic: "float32" (fast; stain matrices within ~1e-6 of float64) or
    # "float64" (torchstain's arithmetic). Sums and per-image statistics are always float64.
    precision: str = "float32"
    # Images per internal pass: bounds memory, does not change results (None: 2 on the CPU,
    # where small passes stay in cache, 32 on other devices).
    max_batch: int | None = None

    def __post_init__(self) -> None:
        in_range("io", self.io, 0, 1e6, open_low=True)
        in_range("beta", self.beta, -10, 10)
        if not 0 <= self.alpha < 50:
            raise ConfigError(f"alpha must be in [0, 50), got {self.alpha}")
        if not 0 < self.max_percentile <= 100:
            raise ConfigError(f"max_percentile must be in (0, 100], got {self.max_percentile}")
        in_range("factor_low", self.factor_low, 0, 10, open_low=True)
        in_range("factor_high", self.factor_high, 0, 10, open_low=True)
        if not self.factor_low <= self.factor_high:
            raise ConfigError(
                "factor_low and factor_high must satisfy 0 < factor_low <= factor_high <= 10, "
                f"got {self.factor_low}, {self.factor_high}"
            )
        if not 0 <= self.min_tissue_fraction <= 1:
            raise ConfigError(
                f"min_tissue_fraction must be in [0, 1], got {self.min_tissue_fraction}"
            )
        in_range("min_tissue_pixels", self.min_tissue_pixels, 3, 1 << 40)
        if not 0 <= self.min_eigen_ratio < 1:
            raise ConfigError(f"min_eigen_ratio must be in [0, 1), got {self.min_eigen_ratio}")
        if not 0 <= self.min_stain_separation < 1:
            raise ConfigError(
                f"min_stain_separation must be in [0, 1), got {self.min_stain_separation}"
            )
        if self.precision not in STAIN_PRECISIONS:
            raise ConfigError(
                f"precision must be one of {list(STAIN_PRECISIONS)}, got {self.precision!r}"
            )
        if self.max_batch is not None:
            in_range("max_batch", self.max_batch, 1, 65536)
