"""A small client for OpenAI-compatible chat-completion endpoints (vLLM, Ollama, llama.cpp, ...).

:class:`ChatClient` posts ``{"model", "messages", ...}`` to ``<base_url>/chat/completions`` with
the standard library (no HTTP dependency) and returns the text of the first choice. Transient
failures — HTTP 429 and 5xx, timeouts, refused or dropped connections, an unreadable 200 body —
are retried with exponential backoff; any other 4xx fails at once with the server's message.
When every attempt failed, :class:`LLMError` names the endpoint, the model and the last error.

The API key, when there is one, is read from the environment variable named by
``api_key_env`` at each request and sent as ``Authorization: Bearer <key>``; it is never
logged and is removed from every error message (even when a server echoes it back).

``base_url`` may be the server root (``http://host:8000``: ``/v1/chat/completions`` is
appended), the API root (``http://host:8000/v1``: ``/chat/completions`` is appended) or the full
endpoint URL; a query string (``?api-version=...``) is kept after the appended path. Credentials
in the URL (``http://user:pass@host/v1``) are sent as HTTP Basic auth, never in the URL, and
every message shows the URL through :func:`pathgls.io.redact.redact`.

``timeout_s`` is a total deadline per request (connect, send, every read): a server that
trickles its answer one byte at a time is cut off when it expires. An answer body larger than
``max_response_bytes`` is refused (not retried).
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import logging
import os
import re
import socket
import threading
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

from pathgls.config.run import MAX_BACKOFF_S, MAX_RETRIES, MAX_TIMEOUT_S
from pathgls.errors import ConfigError, LLMError
from pathgls.io.redact import Secrets, redact, split_credentials, userinfo_span
from pathgls.jsontext import JSONTextError, loads_strict, valid_unicode

logger = logging.getLogger(__name__)

#: Longest server message kept in an error (the rest is cut).
_MAX_MESSAGE = 500
#: Longest wait honoured from a ``Retry-After`` header, in seconds.
_MAX_RETRY_AFTER_S = 30.0
_VERSION_SUFFIX = re.compile(r"/v\d+[a-z]*$")
#: Largest answer body accepted by default, in bytes.
MAX_RESPONSE_BYTES = 4 * 1024 * 1024


def chat_completions_url(base_url: str) -> str:
    """The ``.../chat/completions`` URL for ``base_url`` (see the module docstring).

    The query string is kept (after the path); userinfo too (see :func:`split_userinfo`).

    Raises:
        ConfigError: not an http(s) URL.
    """
    url = base_url.strip()
    span = userinfo_span(url)
    userinfo = url[span[0] : span[1] + 1] if span else ""  # kept as given (split_userinfo)
    parts = urllib.parse.urlsplit(split_credentials(url)[0])
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"LLM base URL must be an http(s) URL, got {redact(base_url)!r}")
    path = parts.path.rstrip("/")
    if not path.endswith("/chat/completions"):
        path += "/chat/completions" if _VERSION_SUFFIX.search(path) else "/v1/chat/completions"
    return urllib.parse.urlunsplit((parts.scheme, userinfo + parts.netloc, path, parts.query, ""))


def split_userinfo(url: str) -> tuple[str, str | None]:
    """``url`` without its ``user:password@`` part, and the Basic auth header value for it.

    The credentials are found by :func:`pathgls.io.redact.split_credentials` (the one parser:
    a password may hold ``@``, ``#``, spaces and percent-escapes).

    Raises:
        ConfigError: userinfo without a user name.
    """
    bare, user, password = split_credentials(url)
    if user is None:
        return bare, None
    if not user:
        raise ConfigError(
            f"LLM base URL {redact(url)!r} has credentials without a user name; write "
            "http://USER:PASSWORD@host/... or put the key in the API key variable"
        )
    token = base64.b64encode(f"{user}:{password or ''}".encode()).decode("ascii")
    return bare, f"Basic {token}"


class ChatClient:
    """Chat completions from one model at one OpenAI-compatible endpoint.

    Args:
        base_url: Server root, API root (``.../v1``) or full ``.../chat/completions`` URL.
        model: Model name sent with each request.
        api_key_env: Environment variable holding the API key (None: no key is sent). When the
            variable is unset, requests go without a key.
        timeout_s: Socket timeout of one request, in seconds.
        max_retries: Retries after the first attempt on transient failures (0: one attempt).
        backoff_s: Wait before the first retry; doubled for each further one.

    Raises:
        ConfigError: a bad URL, model name or number.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str | None = None,
        timeout_s: float = 60,
        max_retries: int = 3,
        backoff_s: float = 1.0,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
    ) -> None:
        if not model.strip():
            raise ConfigError("LLM model name is empty")
        if not 0 < timeout_s <= MAX_TIMEOUT_S:
            raise ConfigError(f"timeout_s must be in (0, {MAX_TIMEOUT_S:g}] s, got {timeout_s}")
        if not 0 <= max_retries <= MAX_RETRIES:
            raise ConfigError(f"max_retries must be in [0, {MAX_RETRIES}], got {max_retries}")
        if not 0 <= backoff_s <= MAX_BACKOFF_S:
            raise ConfigError(f"backoff_s must be in [0, {MAX_BACKOFF_S:g}] s, got {backoff_s}")
        if max_response_bytes < 1:
            raise ConfigError(f"max_response_bytes must be at least 1, got {max_response_bytes}")
        full = chat_completions_url(base_url)
        self._url_secrets = Secrets.of(url=full)  # masked wherever a server or model echoes them
        self.url, self._basic = split_userinfo(full)
        self.shown_url = redact(self.url)  # what messages and logs show
        self.max_response_bytes = int(max_response_bytes)
        self.model = model.strip()
        self.api_key_env = api_key_env
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)

    def __repr__(self) -> str:
        return f"ChatClient(url={self.shown_url!r}, model={self.model!r})"

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        temperature: float = 0.0,
        seed: int | None = None,
        max_tokens: int | None = None,
        response_format: Mapping[str, Any] | None = None,
    ) -> str:
        """The model's answer to ``messages`` (the content of the first choice).

        Args:
            messages: Chat messages, ``{"role": ..., "content": ...}``.
            temperature: Sampling temperature (0: greedy).
            seed: Sampling seed, sent when given (servers may ignore it).
            max_tokens: Longest answer, sent when given.
            response_format: E.g. ``{"type": "json_object"}``, sent when given.

        Raises:
            LLMError: a 4xx other than 429 (at once), or every attempt failed.
        """
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "temperature": float(temperature),
        }
        if seed is not None:
            payload["seed"] = int(seed)
        if max_tokens is not None:
            payload["max_tokens"] = int(max_tokens)
        if response_format is not None:
            payload["response_format"] = dict(response_format)
        body = json.dumps(payload).encode("utf-8")
        key = self._api_key()
        attempts = self.max_retries + 1
        last = "no attempt made"
        last_status: int | None = None
        for attempt in range(1, attempts + 1):
            try:
                return self._post(body, key)
            except _Transient as e:
                last, last_status = self._mask(str(e), key), e.status
                if attempt == attempts:
                    break
                wait = min(self.backoff_s * 2.0 ** min(attempt - 1, 64), MAX_BACKOFF_S)
                if e.retry_after is not None:
                    wait = max(wait, min(e.retry_after, _MAX_RETRY_AFTER_S))
                logger.warning(
                    "chat completion at %s (model %s) failed: %s; retry %d of %d in %.2f s",
                    self.shown_url,
                    self.model,
                    last,
                    attempt,
                    self.max_retries,
                    wait,
                )
                time.sleep(wait)
        raise LLMError(
            f"chat completion at {self.shown_url} (model {self.model}) failed after {attempts} "
            f"attempt(s); last error: {last}",
            status=last_status,
            endpoint=self.shown_url,
            model=self.model,
        )

    def _mask(self, text: str, key: str | None) -> str:
        """``text`` without the API key, the URL's secrets and anything :func:`redact` finds."""
        return redact(self.secrets(key).scrub(text))

    def secrets(self, key: str | None = None) -> Secrets:
        """The secrets this client knows: its URL's password, query secrets and Basic token,
        and the API key (``key``, else the one in ``api_key_env`` now)."""
        key = key if key is not None else self._api_key()
        return self._url_secrets + Secrets.of(keys=[key]) if key else self._url_secrets

    def scrub(self, text: str) -> str:
        """``text`` with every secret of this client masked (see :meth:`secrets`)."""
        return self.secrets().scrub(text)

    def _api_key(self) -> str | None:
        if not self.api_key_env:
            return None
        key = os.environ.get(self.api_key_env, "").strip()
        if not key:
            logger.debug("$%s is not set; sending no API key", self.api_key_env)
        problem = header_value_problem(key)
        if problem:  # the value itself is never shown: it is a secret
            raise LLMError(
                f"${self.api_key_env} cannot be sent as an HTTP header: it holds {problem}; "
                "set it to the key alone",
                endpoint=self.shown_url,
                model=self.model,
            )
        return key or None

    def _post(self, body: bytes, key: str | None) -> str:
        """One request; transient failures raise :class:`_Transient`, others :class:`LLMError`."""
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if key and self._basic:
            raise LLMError(
                f"chat completion at {self.shown_url}: the URL carries a user and password and "
                f"${self.api_key_env} holds an API key; give one of them",
                endpoint=self.shown_url,
                model=self.model,
            )
        if key:
            headers["Authorization"] = f"Bearer {key}"
        elif self._basic:
            headers["Authorization"] = self._basic
        try:
            status, raw, retry_after = self._exchange(body, headers)
        except TimeoutError as e:  # the deadline, or one socket operation as long as it
            raise _Transient(f"timed out after {self.timeout_s:g} s (whole request)") from e
        except (OSError, http.client.HTTPException) as e:
            raise _Transient(f"connection failed: {type(e).__name__}: {e}") from e
        if status >= 400:
            message = self._mask(_server_message(raw), key)
            if status == 429 or status >= 500:
                raise _Transient(
                    f"HTTP {status}: {message}", status=status, retry_after=retry_after
                )
            hint = ""
            if status in (401, 403) and self.api_key_env and not key and not self._basic:
                hint = f" (no API key sent: ${self.api_key_env} is not set)"
            raise LLMError(
                f"chat completion at {self.shown_url} (model {self.model}) was rejected with "
                f"HTTP {status}: {message}{hint}",
                status=status,
                endpoint=self.shown_url,
                model=self.model,
            )
        return self._content(raw, key)

    def _exchange(self, body: bytes, headers: dict[str, str]) -> tuple[int, bytes, float | None]:
        """POST ``body``; (status, body, Retry-After) within ``timeout_s`` from start to end.

        Raises:
            TimeoutError: the whole request took longer than ``timeout_s``.
            LLMError: the answer body is larger than ``max_response_bytes``.
            OSError, http.client.HTTPException: the connection failed.
        """
        parts = urllib.parse.urlsplit(self.url)
        cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        conn = cls(parts.hostname or "", parts.port, timeout=self.timeout_s)
        expired = threading.Event()
        # The socket, held from the moment it is connected: once a response says it closes the
        # connection (HTTP/1.0, "Connection: close"), getresponse() hands the socket to the
        # response and sets conn.sock to None, so a deadline that looked there found nothing to
        # shut and a server sending a byte every 0.1 s held the request for its whole length.
        held: list[socket.socket] = []

        def cut() -> None:  # a blocked read returns or raises once the socket is shut
            expired.set()
            for sock in held or [s for s in (conn.sock,) if s is not None]:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

        timer = threading.Timer(self.timeout_s, cut)
        timer.daemon = True
        timer.start()
        try:
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            conn.request("POST", target, body=body, headers=headers)
            if conn.sock is not None:
                held.append(conn.sock)
                if expired.is_set():  # the deadline passed while connecting or sending
                    cut()
            response = conn.getresponse()
            raw = response.read(self.max_response_bytes + 1)
            if expired.is_set():
                raise TimeoutError(f"deadline of {self.timeout_s:g} s")
            if response.length and len(raw) <= self.max_response_bytes:  # announced, not sent
                raise _Transient(
                    f"the answer was cut short: the server announced "
                    f"{response.getheader('Content-Length')} bytes (Content-Length) and sent "
                    f"{len(raw)} before closing the connection"
                )
            if len(raw) > self.max_response_bytes:
                raise LLMError(
                    f"chat completion at {self.shown_url} (model {self.model}): the answer is "
                    f"larger than {self.max_response_bytes} bytes (max_response_bytes); refused",
                    endpoint=self.shown_url,
                    model=self.model,
                )
            return response.status, raw, _retry_after(response.getheader("Retry-After"))
        except (OSError, http.client.HTTPException) as e:
            if expired.is_set():
                raise TimeoutError(f"deadline of {self.timeout_s:g} s") from e
            raise
        finally:
            timer.cancel()
            conn.close()

    def _content(self, raw: bytes, key: str | None) -> str:
        """The answer's text: lone surrogates replaced, the client's secrets masked.

        A model may repeat the API key or the Basic-auth password it was sent; the text that
        leaves the client never holds them (see :class:`~pathgls.io.redact.Secrets`).
        """
        try:
            data = loads_strict(raw.decode("utf-8", errors="replace"))
            message = data["choices"][0]["message"]
            content = message.get("content")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as e:
            snippet = self._mask(raw[:200].decode("utf-8", errors="replace"), key)
            why = f"{type(e).__name__}: {e}" if isinstance(e, JSONTextError) else type(e).__name__
            raise _Transient(f"unreadable answer ({self._mask(why, key)}): {snippet!r}") from e
        if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, ...]
            content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        if not isinstance(content, str):
            shown = self._mask(str(message)[:200], key)
            raise _Transient(f"answer has no text content: {shown!r}")
        return self.secrets(key).scrub(valid_unicode(content))


def header_value_problem(value: str) -> str | None:
    """Why ``value`` cannot be an HTTP header value (a line break, which would forge a second
    header, another control character, or a character outside Latin-1), naming the position
    but never the value; None when it can."""
    for i, char in enumerate(value):
        if char in "\r\n":
            return f"a line break at character {i + 1}"
        if (ord(char) < 32 and char != "\t") or ord(char) == 127:
            return f"a control character (U+{ord(char):04X}) at character {i + 1}"
        if ord(char) > 255:
            return f"a character outside Latin-1 (U+{ord(char):04X}) at character {i + 1}"
    return None


class _Transient(Exception):
    """A failure worth retrying (internal to :class:`ChatClient`)."""

    def __init__(
        self, message: str, *, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


def _server_message(raw: bytes) -> str:
    """The ``error.message`` of an OpenAI-style error body, else the body text, shortened."""
    text = raw.decode("utf-8", errors="replace").strip()
    try:
        data = loads_strict(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        err = data.get("error", data.get("detail", data.get("message")))
        if isinstance(err, dict):
            err = err.get("message", err)
        if err:
            text = str(err)
    text = " ".join(text.split()) or "(empty response body)"
    return text if len(text) <= _MAX_MESSAGE else text[:_MAX_MESSAGE] + "…"


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None
