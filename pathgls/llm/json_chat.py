"""Ask a chat model for JSON until a reply validates: the one loop behind every JSON-chat caller.

:func:`ask_json` sends the conversation, hands the reply to the caller's ``parse`` and, when
``parse`` refuses it with a :class:`~pathgls.errors.ReplyFormatError`, appends the reply and a
correction naming the problem (``correction(problem)``) and asks again, up to ``max_attempts``
requests in all. The result keeps every raw reply with why it was refused, as evidence. Running
out of attempts raises :class:`~pathgls.errors.NoValidReplyError` (an
:class:`~pathgls.errors.LLMError`) naming the last problem.

Only a refused reply is retried here. A failed request (:class:`~pathgls.errors.LLMError` from
the client, after the client's own HTTP retries) propagates at once, and so does any other
exception ``parse`` raises (a bug, not a reply to correct).

:func:`load_json_object` and :func:`join_problems` are the shared first and last steps of a
``parse``: a Markdown code fence around the reply (```` ```json ... ``` ````) is removed, the rest
must be one JSON object; schema problems are listed, at most five.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from pathgls.errors import ConfigError, NoValidReplyError, ReplyFormatError
from pathgls.jsontext import JSONTextError, loads_strict

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: A completion function: the conversation in, the model's reply text out.
Complete = Callable[[Sequence[Mapping[str, Any]]], str]

_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*(.*?)\s*```\s*$", re.DOTALL)
#: Problems named in one correction; the rest are counted.
MAX_LISTED_PROBLEMS = 5


class ChatCompleter(Protocol):
    """What a JSON-chat caller needs from a client (``ChatClient`` or a test double)."""

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        temperature: float = 0.0,
        seed: int | None = None,
        max_tokens: int | None = None,
        response_format: Mapping[str, Any] | None = None,
    ) -> str: ...


@dataclass(frozen=True)
class Attempt:
    """One request of the loop: the model's reply and why it was refused (None: accepted)."""

    reply: str
    problem: str | None = None


@dataclass(frozen=True)
class JSONReply(Generic[T]):
    """The parsed value of the accepted reply, and every attempt that led to it."""

    value: T
    attempts: tuple[Attempt, ...]  # in order; the last one is the accepted reply

    @property
    def n_attempts(self) -> int:
        """Requests made (1 + corrections)."""
        return len(self.attempts)

    @property
    def reply(self) -> str:
        """The accepted reply, raw."""
        return self.attempts[-1].reply


def ask_json(
    *,
    chat: ChatCompleter | Complete,
    messages: Sequence[Mapping[str, Any]],
    parse: Callable[[str], T],
    correction: Callable[[str], str],
    max_attempts: int,
    options: Mapping[str, Any] | None = None,
    label: str = "LLM",
) -> JSONReply[T]:
    """Ask until ``parse`` accepts a reply (see the module docstring).

    Args:
        chat: A client with ``ChatClient.complete``'s signature (called with ``options`` as
            keyword arguments), or a completion function taking the messages only.
        messages: The conversation to start from; not modified (the loop works on a copy).
        parse: Reply text → value; raises :class:`~pathgls.errors.ReplyFormatError` (or a
            subclass) whose message tells the model what to fix.
        correction: Problem → the user message sent back after a refused reply.
        max_attempts: Requests at most (1: no correction).
        options: Keyword arguments of ``chat.complete`` (temperature, seed, response_format,
            ...); only with a client.
        label: Who is asking, for log lines and the exhaustion error.

    Returns:
        The parsed value with every attempt (raw replies and problems).

    Raises:
        NoValidReplyError: ``max_attempts`` replies refused; names the last problem and keeps
            every reply. The client's endpoint and model when ``chat`` is a client.
        LLMError: a request failed (from the client, unchanged; nothing is retried here).
        ConfigError: ``max_attempts`` below 1.
        TypeError: ``chat`` is neither a client nor a function, or ``options`` come with a
            function.
    """
    if max_attempts < 1:
        raise ConfigError(f"max_attempts must be at least 1, got {max_attempts}")
    complete = _completion(chat, options)
    conversation = [dict(m) for m in messages]
    attempts: list[Attempt] = []
    refused: ReplyFormatError | None = None
    for attempt in range(1, max_attempts + 1):
        reply = complete(conversation)
        try:
            value = parse(reply)
        except ReplyFormatError as e:
            refused, problem = e, str(e)
            attempts.append(Attempt(reply=reply, problem=problem))
            logger.warning(
                "%s: invalid reply (attempt %d of %d): %s", label, attempt, max_attempts, problem
            )
            if attempt < max_attempts:
                conversation += [
                    {"role": "assistant", "content": reply},
                    {"role": "user", "content": correction(problem)},
                ]
            continue
        attempts.append(Attempt(reply=reply))
        return JSONReply(value=value, attempts=tuple(attempts))
    raise NoValidReplyError(
        f"{label}: no valid answer after {max_attempts} attempt(s); last problem: {refused}",
        replies=[a.reply for a in attempts],
        problems=[a.problem or "" for a in attempts],
        endpoint=str(getattr(chat, "url", "")),
        model=str(getattr(chat, "model", "")),
    ) from refused


def _completion(chat: ChatCompleter | Complete, options: Mapping[str, Any] | None) -> Complete:
    method = getattr(chat, "complete", None)
    if callable(method):
        kwargs = dict(options or {})
        return lambda messages: method(messages, **kwargs)
    if not callable(chat):
        raise TypeError(
            f"chat must be a client with .complete() or a completion function, got "
            f"{type(chat).__name__}"
        )
    if options:
        raise TypeError("options are passed to a client's .complete(); a function takes none")
    return chat


def strip_fence(content: str) -> str:
    """``content`` without a Markdown code fence around it (and surrounding whitespace)."""
    fenced = _FENCE.match(content)
    return fenced.group(1) if fenced else content.strip()


def load_json_object(
    content: str, *, error: type[ReplyFormatError] = ReplyFormatError
) -> dict[str, Any]:
    """The JSON object in a reply (an optional code fence removed).

    Args:
        content: The reply.
        error: The :class:`~pathgls.errors.ReplyFormatError` subclass to raise.

    Raises:
        ReplyFormatError: (as ``error``) not valid JSON, JSON that is not an object, an object
            that gives one key twice (``json.loads`` would keep the last value silently), or
            nesting deeper than :data:`~pathgls.jsontext.MAX_DEPTH`.
    """
    try:
        data = loads_strict(strip_fence(content))
    except JSONTextError as e:  # invalid, a key given twice, nested too deeply
        raise error(f"the reply is not valid JSON ({e})") from e
    if not isinstance(data, dict):
        raise error(f"the reply must be a JSON object, got {type(data).__name__}")
    return data


def join_problems(problems: Sequence[str], *, limit: int = MAX_LISTED_PROBLEMS) -> str:
    """``problems`` as one message: the first ``limit`` joined by ``; ``, the rest counted."""
    more = len(problems) - limit
    return "; ".join(problems[:limit]) + (f"; and {more} more" if more > 0 else "")
