"""The settings of one benchmark run (one typed config, shipped to every worker)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from pathgls.attacks.prompts import DEFAULT_ATTACK
from pathgls.config import PathGLSConfig
from pathgls.errors import ConfigError
from pathgls.fusion import FusionConfig, GateConfig
from pathgls.logic import LogicConfig
from pathgls.stability.delta import StabilityConfig
from pathgls.subjects.base import SubjectConfig
from pathgls.subjects.views import ViewConfig


@dataclass(frozen=True)
class RunConfig:
    """What a run evaluates and with which models."""

    # Subject specs (captioner, openai:<url>#<model>, hf:<dir>, replay:<jsonl>), at least one.
    subjects: tuple[str, ...]
    # Image-text encoder for grounding and bags; None: grounding is reported missing.
    encoder: str | None = None
    # Pipeline settings (tiling, bag, encoder device/precision/windows, grounding).
    pipeline: PathGLSConfig = field(default_factory=PathGLSConfig)
    # How a whole slide is shown to the subject (an ROI is shown as itself).
    view: ViewConfig = field(default_factory=ViewConfig)
    # Adversarial prompt of the attack condition.
    attack: str = DEFAULT_ATTACK
    # Generation and stain seed.
    seed: int = 0
    # Entity extractor spec (lexicon, hf-ner:<dir>, llm:...).
    extractor: str = "lexicon"
    # NLI spec for the Logic score (rules, hf:<dir>).
    nli: str = "rules"
    # Sentence embedder for the Stability Δ.
    embedder: str = "minilm"
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
    # Section configs.
    logic: LogicConfig = field(default_factory=LogicConfig)
    stability: StabilityConfig = field(default_factory=StabilityConfig)
    subject: SubjectConfig = field(default_factory=SubjectConfig)
    fusion: FusionConfig = field(default_factory=FusionConfig)
    gate: GateConfig = field(default_factory=GateConfig)

    def __post_init__(self) -> None:
        subjects = tuple(s.strip() for s in self.subjects)
        if not subjects or any(not s for s in subjects):
            raise ConfigError("a run needs at least one non-empty --subject")
        if len(set(subjects)) != len(subjects):
            raise ConfigError(f"a subject is given twice: {', '.join(subjects)}")
        object.__setattr__(self, "subjects", subjects)
        if self.view.kind != "thumbnail" and self.encoder is None:
            raise ConfigError(
                f"the {self.view.kind} view picks patches from the slide's feature bag: give "
                "--encoder, or use --view thumbnail"
            )
        if self.subject_failure_limit < 0:
            raise ConfigError(
                f"subject_failure_limit must be >= 0, got {self.subject_failure_limit}"
            )
        if self.mpp is not None and not self.mpp > 0:
            raise ConfigError(f"mpp must be > 0, got {self.mpp}")
        if self.encoder is not None and self.encoder != self.pipeline.encoder.name:
            enc = replace(self.pipeline.encoder, name=self.encoder)
            object.__setattr__(self, "pipeline", replace(self.pipeline, encoder=enc))
