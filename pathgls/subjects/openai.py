"""The ``openai:<base_url>#<model>`` subject: a VLM behind an OpenAI-compatible chat endpoint.

Works with vLLM, Ollama, TGI, llama.cpp servers and the OpenAI API. Each image is checked,
downscaled when its longest side exceeds ``SubjectConfig.max_image_side`` (Lanczos, aspect kept)
and sent as a PNG ``data:`` URL in one user message after the prompt text::

    {"role": "user", "content": [{"type": "text", "text": prompt},
                                 {"type": "image_url", "image_url": {"url": "data:image/png;..."}}]}

preceded by a system message when a system prompt is given. Requests, retries with backoff and
API-key handling are :class:`pathgls.llm.client.ChatClient`'s: the key is read from the
environment variable ``SubjectConfig.api_key_env`` and never logged or shown in an error.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image

from pathgls.errors import ConfigError
from pathgls.io.redact import redact, userinfo_span
from pathgls.llm.client import ChatClient, LLMError
from pathgls.subjects.base import (
    SubjectConfig,
    SubjectError,
    check_images,
    fit_image,
    register_subject,
)

_SCHEME = "openai"


def parse_openai_argument(argument: str) -> tuple[str, str]:
    """Split ``<base_url>#<model>`` into the base URL and the model name.

    The model follows the first ``#`` after the URL's credentials (a password may hold ``#``:
    :func:`~pathgls.io.redact.split_credentials`). Messages show the argument redacted.

    Raises:
        ConfigError: the URL or the ``#<model>`` part is missing or empty.
    """
    text = argument.strip()
    span = userinfo_span(text)
    cut = text.find("#", span[1] + 1 if span else 0)
    base_url, model = (text[:cut].strip(), text[cut + 1 :].strip()) if cut >= 0 else (text, "")
    example = "openai:http://localhost:8000/v1#llava-hf/llava-1.5-7b-hf"
    if not model:
        raise ConfigError(
            f"openai subject {redact(argument)!r} names no model: write "
            f"openai:<base_url>#<model>, e.g. {example}"
        )
    if not base_url:
        raise ConfigError(
            f"openai subject {redact(argument)!r} names no base URL: write "
            f"openai:<base_url>#<model>, e.g. {example}"
        )
    return base_url, model


def image_data_url(image: np.ndarray, *, max_side: int) -> str:
    """A ``data:image/png;base64,...`` URL of ``image`` (uint8 RGB), downscaled to ``max_side``."""
    fitted = np.ascontiguousarray(fit_image(image, max_side=max_side))
    buf = io.BytesIO()
    Image.fromarray(fitted).save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def vision_messages(
    *,
    images: Sequence[np.ndarray],
    prompt: str,
    system: str | None = None,
    max_side: int = 1024,
) -> list[dict[str, Any]]:
    """The chat messages asking about ``images`` under ``prompt`` (OpenAI vision format).

    Raises:
        SubjectError: no image, or one that is not ``(H, W, 3)`` uint8.
    """
    content: list[dict[str, Any]] = [{"type": "text", "text": prompt}]
    for im in check_images(images):
        url = image_data_url(im, max_side=max_side)
        content.append({"type": "image_url", "image_url": {"url": url}})
    messages: list[dict[str, Any]] = []
    if system is not None:
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": content})
    return messages


class OpenAISubject:
    """A VLM served by an OpenAI-compatible chat-completions endpoint.

    Args:
        base_url: Server root, API root (``.../v1``) or full ``.../chat/completions`` URL.
        model: Model name sent with each request.
        config: Sampling, timeout, retry, API-key and image-size settings.
        name: The spec it was built from (default: ``openai:<base_url>#<model>``).

    Raises:
        ConfigError: a bad URL or an empty model name.
    """

    learned = True
    revision: str | None = None

    def __init__(
        self, *, base_url: str, model: str, config: SubjectConfig, name: str | None = None
    ) -> None:
        self.config = config
        self.client = ChatClient(
            base_url,
            model,
            api_key_env=config.api_key_env or None,
            timeout_s=config.timeout_s,
            max_retries=config.max_retries,
            backoff_s=config.backoff_s,
            # JSON escapes take up to 6 bytes a character; the report cap is checked after
            max_response_bytes=6 * config.max_report_chars + 65536,
        )
        self.model_id = self.client.model
        self.name = name or f"{_SCHEME}:{base_url}#{self.model_id}"

    def __repr__(self) -> str:
        return f"OpenAISubject(url={self.client.shown_url!r}, model={self.model_id!r})"

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
        """The model's report for ``images`` under ``prompt`` (surrounding whitespace removed).

        Raises:
            SubjectError: a bad image, every attempt failed, the request was rejected, or the
                answer is empty.
        """
        messages = vision_messages(
            images=images, prompt=prompt, system=system, max_side=self.config.max_image_side
        )
        where = (
            f"subject {self.model_id!r} at {self.client.url} "
            f"(item {item_id!r}, condition {condition!r})"
        )
        try:
            text = self.client.complete(
                messages,
                temperature=self.config.temperature,
                seed=seed,
                max_tokens=self.config.max_tokens,
            )
        except LLMError as e:
            raise SubjectError(f"{where} gave no report: {self.scrub(str(e))}") from e
        report = text.strip()  # the client has masked its secrets in it
        if not report:
            raise SubjectError(f"{where} returned an empty report")
        return report

    def scrub(self, text: str) -> str:
        """``text`` without this subject's secrets (API key, URL password, Basic token).

        The client masks them in every answer; cached answers of an earlier pathgls pass
        through here too (:func:`~pathgls.subjects.cache.cached_generate`).
        """
        return self.client.scrub(text)


@register_subject(
    _SCHEME,
    description="OpenAI-compatible chat completions (vLLM, Ollama, TGI, OpenAI): "
    "openai:<base_url>#<model>",
    argument="<base_url>#<model>",
)
def build_openai_subject(argument: str, config: SubjectConfig) -> OpenAISubject:
    """The subject for ``openai:<argument>``.

    Raises:
        ConfigError: the argument is not ``<base_url>#<model>`` or the URL is not http(s).
    """
    base_url, model = parse_openai_argument(argument)
    return OpenAISubject(
        base_url=base_url, model=model, config=config, name=f"{_SCHEME}:{argument.strip()}"
    )
