"""The subject: the vision-language model under test, behind one small protocol.

A subject turns images and a prompt into a report. Backends are named by a spec in pathgls's
one grammar (:mod:`pathgls.registry`) and built by the factory registered for its kind
(``SUBJECTS.build(spec, config)``):

``openai:<base_url>#<model>``  OpenAI-compatible chat completions (vLLM, Ollama, TGI, OpenAI)
``hf:<model>``                 a local transformers image-text-to-text model (repo id or path)
``replay:<file.jsonl>``        reports recorded earlier, looked up by (item id, condition)
``captioner``                  the non-learned measuring baseline (``captioner-obedient``: it
                               adopts the clinical history a prompt gives it)

Every call carries the item id and the condition (``original``, ``stain``, ``attack:<name>``)
so that replay can find its record and caches can key on them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
from PIL import Image

from pathgls.config import SubjectConfig as SubjectConfig  # re-exported
from pathgls.errors import SubjectError
from pathgls.registry import Registry, Spec, parse_spec


@runtime_checkable
class Subject(Protocol):
    """A model that writes a report about images.

    Attributes:
        name: The spec it was built from (``openai:http://host/v1#llava``, ``captioner``, ...).
        model_id: Model name, repo id or path.
        revision: Weights revision when known (caches key on it), else None.
        learned: False for the measuring baselines (their reports are never a VLM's).
    """

    name: str
    model_id: str
    revision: str | None
    learned: bool

    def generate(
        self,
        images: Sequence[np.ndarray],
        prompt: str,
        *,
        seed: int = 0,
        system: str | None = None,
        item_id: str = "",
        condition: str = "original",
    ) -> str:
        """The report for ``images`` (uint8 RGB ``(H, W, 3)`` each) under ``prompt``.

        Raises:
            SubjectError: no report could be produced.
        """
        ...


#: The subject registry: factories ``(argument, config) -> Subject`` (filled by the backend
#: modules on import of :mod:`pathgls.subjects`).
SUBJECTS: Registry[Subject] = Registry("subject")
register_subject = SUBJECTS.register


def parse_subject_spec(spec: str) -> Spec:
    """Split ``kind[:argument]``; a bare name (``captioner``) has an empty argument.

    Raises:
        ConfigError: an empty spec.
    """
    return parse_spec(spec, what="subject")


def check_images(images: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Validate a list of uint8 RGB images.

    Raises:
        SubjectError: no image, or one that is not ``(H, W, 3)`` uint8.
    """
    out = []
    if len(images) == 0:
        raise SubjectError("a subject needs at least one image")
    for i, im in enumerate(images):
        a = np.asarray(im)
        if a.ndim != 3 or a.shape[2] != 3 or a.dtype != np.uint8 or min(a.shape[:2]) < 1:
            raise SubjectError(f"image {i} must be (H, W, 3) uint8 RGB, got {a.shape} {a.dtype}")
        out.append(a)
    return out


def fit_image(image: np.ndarray, *, max_side: int) -> np.ndarray:
    """``image`` downscaled (Lanczos, aspect kept) so its longest side is at most ``max_side``.

    An image that already fits is returned unchanged.
    """
    h, w = image.shape[:2]
    longest = max(h, w)
    if longest <= max_side:
        return image
    scale = max_side / longest
    size = (max(1, round(w * scale)), max(1, round(h * scale)))  # PIL wants (width, height)
    resized = Image.fromarray(np.ascontiguousarray(image)).resize(size, Image.Resampling.LANCZOS)
    return np.asarray(resized)
