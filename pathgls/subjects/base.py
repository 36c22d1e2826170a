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
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
from PIL import Image

from pathgls.errors import ConfigError, SubjectError
from pathgls.registry import Registry, Spec, parse_spec


@dataclass(frozen=True)
class SubjectConfig:
    """How subjects are asked."""

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

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ConfigError(f"temperature must be >= 0, got {self.temperature}")
        if self.max_tokens < 1:
            raise ConfigError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if self.timeout_s <= 0 or self.max_retries < 0 or self.backoff_s < 0:
            raise ConfigError("timeout_s must be > 0, max_retries and backoff_s >= 0")
        if self.precision not in ("auto", "fp32", "fp16", "bf16"):
            raise ConfigError(f"precision must be auto, fp32, fp16 or bf16: {self.precision!r}")
        if self.max_image_side < 32:
            raise ConfigError(f"max_image_side must be >= 32, got {self.max_image_side}")


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
