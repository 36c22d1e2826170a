"""Attacks on the subject model: Macenko stain perturbation and the adversarial prompt library.

Owns the batched torch Macenko stain fit and perturbation (:mod:`.stain`, :mod:`.macenko`)
and the versioned prompt library (:mod:`.prompts`); nothing here calls a model.

May import: core, :mod:`pathgls.config`, :mod:`pathgls.io`.
"""

from pathgls.attacks.prompts import (
    DEFAULT_ATTACK,
    Prompt,
    PromptLibrary,
    load_prompt_library,
)
from pathgls.attacks.stain import (
    HE_REFERENCE,
    MAX_CONCENTRATION_REFERENCE,
    StainConfig,
    StainFit,
    StainInputError,
    StainResult,
    StainTarget,
    fit_stain,
    fit_target,
    normalize_stain,
    perturb_stain,
    stain_factors,
)

__all__ = [
    "DEFAULT_ATTACK",
    "HE_REFERENCE",
    "MAX_CONCENTRATION_REFERENCE",
    "Prompt",
    "PromptLibrary",
    "StainConfig",
    "StainFit",
    "StainInputError",
    "StainResult",
    "StainTarget",
    "fit_stain",
    "fit_target",
    "load_prompt_library",
    "normalize_stain",
    "perturb_stain",
    "stain_factors",
]
