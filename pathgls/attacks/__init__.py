"""Attacks on the subject model: Macenko stain perturbation (and, later, adversarial prompts)."""

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
    "HE_REFERENCE",
    "MAX_CONCENTRATION_REFERENCE",
    "StainConfig",
    "StainFit",
    "StainInputError",
    "StainResult",
    "StainTarget",
    "fit_stain",
    "fit_target",
    "normalize_stain",
    "perturb_stain",
    "stain_factors",
]
