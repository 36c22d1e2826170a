"""The stain-perturbed view: the view's images after the seeded Macenko perturbation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pathgls.attacks.stain import StainConfig, perturb_stain
from pathgls.attacks.stain_kind import stain_kind
from pathgls.subjects.views import View


@dataclass
class StainedView:
    """The images the stain condition shows, what was done to them, and what to warn about."""

    images: list[np.ndarray]
    #: factors, transformed, flags, seed and kinds (the Stability evidence's ``stain``)
    record: dict[str, Any] = field(default_factory=dict)
    #: the images are not H&E, or no image changed: Δ_aug then measures no stain shift
    warnings: list[str] = field(default_factory=list)


def stained_view(
    *, view: View, item_id: str, seed: int, config: StainConfig | None = None
) -> StainedView:
    """The view's images with seeded stain factors (image ``i`` seeded by ``item_id#i``).

    Images of one shape are perturbed as one batch; otherwise only the first image is (the
    others are shown as they are).
    """
    same = _same_shape(view.images)
    stained = perturb_stain(
        images=np.stack(view.images) if same else view.images[0],
        image_ids=[f"{item_id}#{i}" for i in range(len(view.images))] if same else f"{item_id}#0",
        seed=seed,
        config=config,
    )
    images = (
        list(np.asarray(stained.images)) if same else [np.asarray(stained.images), *view.images[1:]]
    )
    record: dict[str, Any] = {
        "factors": np.asarray(stained.factors).tolist(),
        "transformed": np.asarray(stained.transformed).tolist(),
        "flags": list(stained.flags),
        "seed": seed,
    }
    kinds = [stain_kind(np.asarray(im)) for im in view.images]
    record["kinds"] = [k.kind for k in kinds]
    warnings = [f"stain: {w}" for w in dict.fromkeys(k.warning for k in kinds if k.warning)]
    if not any(record["transformed"]):
        warnings.append(
            "stain perturbation left every image unchanged ("
            + "; ".join(f for f in record["flags"] if f)
            + "): Δ_aug measures no stain shift"
        )
    return StainedView(images=images, record=record, warnings=warnings)


def _same_shape(images: list[np.ndarray]) -> bool:
    return len({im.shape for im in images}) == 1
