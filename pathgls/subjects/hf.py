"""Local transformers subject: ``hf:<model>``, an image-text-to-text model and chat template.

The model is loaded with ``AutoModelForImageTextToText`` and its ``AutoProcessor`` from local
files only — a directory, or a repo id found in the models directory or the Hugging Face cache
(:mod:`pathgls.hub.store`); a missing model is a :class:`~pathgls.errors.ModelNotFoundError`
naming ``pathgls models pull hf:<repo>``. A model whose processor has no chat template is
refused when it is loaded: the prompt format is the model's own, never guessed.

One call renders ``[system?, user: (image × n, text)]`` with the processor's chat template and
the generation prompt, runs the processor on the text and the images (each downscaled first so
that its longer side is at most ``SubjectConfig.max_image_side``), and decodes only the new
tokens. Decoding is greedy at temperature 0; otherwise it samples at that temperature with the
torch RNG seeded from ``seed`` inside a forked RNG state, so a (seed, inputs) pair always gives
the same text and the caller's RNG is left as it was.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image

from pathgls.errors import ConfigError, ModelNotFoundError
from pathgls.hub import store as hub
from pathgls.hub.device import ResolvedPrecision, resolve_device, resolve_precision, torch_dtype
from pathgls.hub.hf import load_checked
from pathgls.registry import parse_model_ref
from pathgls.subjects.base import (
    Subject,
    SubjectConfig,
    SubjectError,
    check_images,
    fit_image,
    register_subject,
)

logger = logging.getLogger(__name__)


def downscale(image: np.ndarray, *, max_side: int) -> Image.Image:
    """``image`` as PIL RGB, longer side at most ``max_side`` (see :func:`fit_image`)."""
    return Image.fromarray(np.ascontiguousarray(fit_image(image, max_side=max_side)))


def build_messages(n_images: int, prompt: str, system: str | None) -> list[dict[str, Any]]:
    """Chat messages for one request: an optional system turn, then the images and the prompt.

    Content is always a list of typed parts (``{"type": "text", ...}``), the form every
    multimodal chat template accepts (LLaVA's iterates over parts even for the system turn).
    """
    messages: list[dict[str, Any]] = []
    if system:
        messages.append({"role": "system", "content": [{"type": "text", "text": system}]})
    content: list[dict[str, Any]] = [{"type": "image"} for _ in range(n_images)]
    content.append({"type": "text", "text": prompt})
    messages.append({"role": "user", "content": content})
    return messages


class HFSubject:
    """A loaded transformers image-text-to-text model answering as a subject.

    Build it with :func:`load_hf_subject` or ``SUBJECTS.build("hf:<model>", config)``.

    Attributes:
        name: The spec (``hf:<model>``).
        model_id: Repo id when known, else the local path.
        revision: Commit of the weights when the directory records it, else None.
        learned: Always True.
        random_weights: True for pathgls' randomly initialised test models.
        device: Torch device string the model runs on.
        precision: ``fp32``, ``fp16`` or ``bf16``.
        model: The transformers model (eval mode).
        processor: Its processor (tokenizer, image processor and chat template).
    """

    learned = True

    def __init__(
        self,
        model: Any,
        processor: Any,
        *,
        name: str,
        model_id: str,
        revision: str | None,
        random_weights: bool,
        device: torch.device,
        precision: str,
        config: SubjectConfig,
    ) -> None:
        self.model = model
        self.processor = processor
        self.name = name
        self.model_id = model_id
        self.revision = revision
        self.random_weights = random_weights
        self.device = str(device)
        self.precision = precision
        self.config = config
        self._torch_device = device
        tokenizer = getattr(processor, "tokenizer", processor)
        self._bos = getattr(tokenizer, "bos_token", None)
        pad = getattr(tokenizer, "pad_token_id", None)
        self._pad_id = pad if pad is not None else getattr(tokenizer, "eos_token_id", None)

    def __repr__(self) -> str:
        return f"HFSubject({self.name!r}, device={self.device!r}, precision={self.precision!r})"

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

        Args:
            images: One or more images, shown in order before the prompt.
            prompt: The user's instruction.
            seed: Seed of the sampler (unused when greedy).
            system: System prompt, if any.
            item_id: Not used by this backend (part of the protocol).
            condition: Not used by this backend (part of the protocol).

        Returns:
            The newly generated text, special tokens removed, stripped.

        Raises:
            SubjectError: bad images, a chat template that cannot render the request, CUDA out
                of memory, or any other generation failure.
        """
        del item_id, condition  # the same inputs give the same text whatever the item
        pil = [downscale(im, max_side=self.config.max_image_side) for im in check_images(images)]
        inputs = self._inputs(pil, prompt, system)
        output = self._generate(inputs, seed)
        # A decoder-only model returns the prompt followed by the new tokens.
        prompt_len = 0 if self.model.config.is_encoder_decoder else inputs["input_ids"].shape[1]
        new = output[0, prompt_len:]
        text = str(self.processor.decode(new, skip_special_tokens=True)).strip()
        if not text:
            logger.warning("%s: the model generated no text (%d tokens)", self.name, len(new))
        return text

    def _inputs(self, images: list[Image.Image], prompt: str, system: str | None) -> Any:
        """Render the chat template and run the processor; tensors on the model's device."""
        from jinja2 import TemplateError

        messages = build_messages(len(images), prompt, system)
        try:
            text = self.processor.apply_chat_template(
                messages, add_generation_prompt=True, tokenize=False
            )
        except (TemplateError, ValueError, TypeError, KeyError) as e:
            raise SubjectError(
                f"{self.name}: the chat template cannot render the request "
                f"({'with' if system else 'without'} a system prompt, {len(images)} image(s)): "
                f"{type(e).__name__}: {e}"
            ) from e
        # A template that writes the BOS token itself must not get a second one from the
        # tokenizer (what transformers' own tokenize=True path does too).
        add_special = not (self._bos and text.startswith(self._bos))
        try:
            # Images nested per prompt: the batched form every processor accepts.
            inputs = self.processor(
                text=text, images=[images], return_tensors="pt", add_special_tokens=add_special
            )
        except (ValueError, TypeError, KeyError, IndexError, RuntimeError) as e:
            raise SubjectError(
                f"{self.name}: the processor failed on {len(images)} image(s): "
                f"{type(e).__name__}: {e}"
            ) from e
        dtype = next(self.model.parameters()).dtype
        out = {}
        for key, value in inputs.items():
            if isinstance(value, torch.Tensor):
                # Pixel values follow the model's precision; ids and masks stay integers.
                floating = value.is_floating_point()
                value = value.to(device=self._torch_device, dtype=dtype if floating else None)
            out[key] = value
        return out

    def _generate(self, inputs: dict[str, Any], seed: int) -> torch.Tensor:
        """``model.generate`` with the config's decoding; errors become :class:`SubjectError`."""
        sample = self.config.temperature > 0
        kwargs: dict[str, Any] = {
            "max_new_tokens": self.config.max_tokens,
            "do_sample": sample,
        }
        if sample:
            kwargs["temperature"] = self.config.temperature
        if self._pad_id is not None:
            kwargs["pad_token_id"] = self._pad_id
        cuda = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
        try:
            with torch.inference_mode(), torch.random.fork_rng(devices=cuda, enabled=sample):
                if sample:
                    torch.manual_seed(seed)
                return self.model.generate(**inputs, **kwargs)
        except torch.cuda.OutOfMemoryError as e:
            torch.cuda.empty_cache()
            raise SubjectError(
                f"{self.name}: CUDA out of memory while generating on {self.device} "
                f"({self.precision}); lower max_image_side ({self.config.max_image_side}) or "
                f"max_tokens ({self.config.max_tokens}), use fewer images, or another device"
            ) from e
        except (RuntimeError, ValueError, TypeError, IndexError) as e:
            raise SubjectError(f"{self.name}: generation failed: {type(e).__name__}: {e}") from e


def _auto_precision(device: torch.device) -> ResolvedPrecision | None:
    """The CUDA precision ``auto`` prefers: bf16 where the GPU supports it, else fp16."""
    if device.type != "cuda":
        return None
    return "bf16" if torch.cuda.is_bf16_supported() else "fp16"


def load_hf_subject(
    location: str | Path,
    *,
    config: SubjectConfig | None = None,
    name: str | None = None,
    model_id: str | None = None,
) -> HFSubject:
    """Load an image-text-to-text model and its processor from a local directory.

    Args:
        location: Directory with ``config.json``, weights, processor and tokenizer files.
        config: Decoding, device, precision and image size (default :class:`SubjectConfig`).
        name: Spec to report (default ``hf:<location>``).
        model_id: Repo id to record (default: read from the directory, else the path).

    Raises:
        SubjectError: no loadable image-text-to-text model or processor, or no chat template.
        ConfigError: a bad device or precision.
    """
    from transformers import AutoModelForImageTextToText, AutoProcessor

    config = config or SubjectConfig()
    location = str(location)
    name = name or f"hf:{location}"
    try:
        device = resolve_device(config.device)
        precision = resolve_precision(config.precision, device, preferred=_auto_precision(device))
    except ConfigError as e:
        raise ConfigError(f"subject {name!r}: {e}") from e
    try:
        processor = AutoProcessor.from_pretrained(location, local_files_only=True)
    except (OSError, ValueError, TypeError, KeyError, RuntimeError) as e:
        raise SubjectError(f"{name!r}: cannot load the processor in {location}: {e}") from e
    if getattr(processor, "image_processor", None) is None:
        raise SubjectError(
            f"{name!r}: {location} has no image processor (found {type(processor).__name__}); "
            "an hf subject must be an image-text-to-text model"
        )
    if not getattr(processor, "chat_template", None):
        raise SubjectError(
            f"{name!r}: the processor in {location} has no chat template, so the prompt format "
            "is unknown; add the model's chat_template.jinja to the directory"
        )
    model = load_checked(
        AutoModelForImageTextToText,
        location,
        label=name,
        what="an image-text-to-text model",
        dtype=torch_dtype(precision),
        error=SubjectError,
    )
    source_repo, revision, random_weights = hub.weights_provenance(
        location, label=f"subject {name}"
    )
    return HFSubject(
        model.to(device).eval(),
        processor,
        name=name,
        model_id=model_id or source_repo or location,
        revision=revision,
        random_weights=random_weights,
        device=device,
        precision=precision,
        config=config,
    )


def resolve_subject_model(
    target: str, *, models_dir: str | Path | None = None
) -> tuple[Path, str | None]:
    """Local directory of an ``hf`` subject target, and its repo id (None for a local path).

    Args:
        target: A model location: ``org/name[@revision]`` or a local path (``dir:<path>``,
            ``/``, ``./``, ``../``, ``~``).
        models_dir: Models directory (None: ``$PATHGLS_MODELS_DIR`` or the user cache).

    Raises:
        ModelNotFoundError: the repo is not available locally (the message names
            ``pathgls models pull hf:<repo>``) or the path does not exist.
        ConfigError: the target is neither a path form nor an ``org/name`` repo id.
    """
    spec = f"hf:{target.strip()}"
    ref = parse_model_ref(target, what=spec)  # the one model-location grammar, shared with pull
    try:
        return hub.resolve_ref(ref, name=spec, models_dir=models_dir), ref.repo_id
    except ModelNotFoundError as e:
        if ref.repo_id is not None:
            raise
        raise ModelNotFoundError(
            f"{e}; give an existing model directory, or a repo id fetched on a connected "
            "machine with `pathgls models pull hf:<org>/<name>`"
        ) from e


@register_subject(
    "hf",
    description=(
        "local transformers image-text-to-text model with a chat template, by repo id or local "
        "path (LLaVA, Qwen2-VL, ...; weights from a directory or the models directory, never "
        "downloaded)"
    ),
    argument="<model>",
)
def _hf_subject(argument: str, config: SubjectConfig) -> Subject:
    target = argument.strip()
    if not target:
        raise ConfigError("hf subject: expected hf:<org>/<name> or hf:<local-path>")
    location, repo_id = resolve_subject_model(target)
    return load_hf_subject(location, config=config, name=f"hf:{target}", model_id=repo_id)
