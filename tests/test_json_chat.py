"""The one ask-for-JSON → validate → correct loop (pathgls.llm.json_chat)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
from chatserver import ChatServer, Reply, chat, chat_server

from pathgls.errors import (
    ConfigError,
    LLMError,
    NoValidReplyError,
    ReplyFormatError,
    VerdictError,
)
from pathgls.llm.client import ChatClient
from pathgls.llm.json_chat import ask_json, join_problems, load_json_object, strip_fence

SYSTEM = {"role": "system", "content": "Reply with {'n': <integer from 1 to 3>}."}
USER = {"role": "user", "content": "How many?"}


def parse_n(content: str) -> int:
    """A small schema: {"n": 1..3}, nothing else."""
    data = load_json_object(content)
    extra = sorted(set(data) - {"n"})
    problems = [f"unexpected key(s): {', '.join(extra)}"] if extra else []
    n = data.get("n")
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 3:
        problems.append(f"n must be an integer from 1 to 3, got {json.dumps(n)}")
    if problems:
        raise ReplyFormatError(join_problems(problems))
    return n


def correction(problem: str) -> str:
    return f"Fix this: {problem}."


class ScriptedClient:
    """A client double: plays replies, records each call's messages and options."""

    url = "http://scripted/v1/chat/completions"
    model = "scripted-model"

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.calls: list[tuple[list[dict[str, Any]], dict[str, Any]]] = []

    def complete(self, messages: Sequence[Mapping[str, Any]], **options: Any) -> str:
        self.calls.append(([dict(m) for m in messages], options))
        return self.replies.pop(0)


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with chat_server() as state:
        yield state


def test_success_after_a_retry_sends_the_reply_and_the_problem_back() -> None:
    client = ScriptedClient("Two, I think.", '{"n": 2}')
    messages = [SYSTEM, USER]
    options = {"temperature": 0.0, "seed": 7, "response_format": {"type": "json_object"}}
    reply = ask_json(
        chat=client,
        messages=messages,
        parse=parse_n,
        correction=correction,
        max_attempts=3,
        options=options,
    )
    assert reply.value == 2 and reply.n_attempts == 2 and reply.reply == '{"n": 2}'
    first, second = reply.attempts
    assert first.reply == "Two, I think." and "not valid JSON" in (first.problem or "")
    assert second.problem is None
    assert [c[1] for c in client.calls] == [options, options]
    assert client.calls[0][0] == [SYSTEM, USER]
    assert client.calls[1][0] == [
        SYSTEM,
        USER,
        {"role": "assistant", "content": "Two, I think."},
        {"role": "user", "content": f"Fix this: {first.problem}."},
    ]
    assert messages == [SYSTEM, USER]  # the caller's conversation is not modified


def test_exhaustion_names_the_last_problem_and_keeps_every_reply() -> None:
    replies = ('{"n": 9}', '{"n": "two"}', '{"n": 2, "why": "x"}')
    client = ScriptedClient(*replies)
    with pytest.raises(NoValidReplyError) as info:
        ask_json(
            chat=client,
            messages=[USER],
            parse=parse_n,
            correction=correction,
            max_attempts=3,
            label="counter",
        )
    error = info.value
    assert isinstance(error, LLMError)
    assert str(error) == (
        "counter: no valid answer after 3 attempt(s); last problem: unexpected key(s): why"
    )
    assert error.problem == "unexpected key(s): why"
    assert error.replies == replies and error.n_attempts == 3
    assert error.problems == (
        "n must be an integer from 1 to 3, got 9",
        'n must be an integer from 1 to 3, got "two"',
        "unexpected key(s): why",
    )
    assert (error.endpoint, error.model) == (client.url, client.model)
    assert isinstance(error.__cause__, ReplyFormatError)
    assert len(client.calls) == 3  # no request after the last refused reply
    corrections = [m["content"] for m in client.calls[2][0] if m["role"] == "user"][1:]
    assert corrections == [f"Fix this: {p}." for p in error.problems[:2]]


def test_one_attempt_means_no_correction() -> None:
    calls: list[Sequence[Mapping[str, Any]]] = []

    def complete(messages: Sequence[Mapping[str, Any]]) -> str:  # a bare completion function
        calls.append(messages)
        return "[1, 2]"

    with pytest.raises(NoValidReplyError, match="must be a JSON object, got list") as info:
        ask_json(
            chat=complete, messages=[USER], parse=parse_n, correction=correction, max_attempts=1
        )
    assert len(calls) == 1 and (info.value.endpoint, info.value.model) == ("", "")


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"n": 2,', "not valid JSON"),
        ("n = 2", "not valid JSON"),
        ("", "not valid JSON"),
        ('"n"', "must be a JSON object, got str"),
        ("[1, 2]", "must be a JSON object, got list"),
        ("null", "must be a JSON object, got NoneType"),
        ("[" * 100_000 + "]" * 100_000, "not valid JSON"),  # deeper than the parser's recursion
    ],
    ids=["truncated", "prose", "empty", "string", "list", "null", "too-deep"],
)
def test_malformed_json_is_a_reply_format_error(content: str, problem: str) -> None:
    with pytest.raises(VerdictError, match=problem):
        load_json_object(content, error=VerdictError)
    client = ScriptedClient(content, '{"n": 1}')
    reply = ask_json(
        chat=client, messages=[USER], parse=parse_n, correction=correction, max_attempts=2
    )
    assert reply.value == 1 and problem in (reply.attempts[0].problem or "")


@pytest.mark.parametrize(
    "content",
    [
        '```json\n{"n": 3}\n```',
        '```\n{"n": 3}\n```',
        '  ```JSON {"n": 3} ```  \n',
        '\n{"n": 3}\n',
    ],
)
def test_fenced_json_is_accepted(content: str) -> None:
    assert strip_fence(content) == '{"n": 3}'
    reply = ask_json(
        chat=ScriptedClient(content),
        messages=[USER],
        parse=parse_n,
        correction=correction,
        max_attempts=1,
    )
    assert reply.value == 3 and reply.n_attempts == 1


def test_a_client_timeout_propagates_without_a_correction(server: ChatServer) -> None:
    server.play(*[Reply(200, chat('{"n": 1}').body, delay_s=1.0)] * 2)
    client = ChatClient(server.url, "tiny", timeout_s=0.2, max_retries=1, backoff_s=0.0)
    with pytest.raises(LLMError, match=r"timed out after 0\.2 s") as info:
        ask_json(chat=client, messages=[USER], parse=parse_n, correction=correction, max_attempts=3)
    assert not isinstance(info.value, NoValidReplyError)
    assert len(server.requests) == 2  # the client's own retry only; the loop asked nothing more
    assert all(len(p["messages"]) == 1 for p in server.payloads)


def test_a_real_client_gets_the_options_and_the_correction(server: ChatServer) -> None:
    server.play(chat('{"n": 0}'), chat('```json\n{"n": 1}\n```'))
    client = ChatClient(server.url, "tiny", timeout_s=5, max_retries=0)
    reply = ask_json(
        chat=client,
        messages=[SYSTEM, USER],
        parse=parse_n,
        correction=correction,
        max_attempts=2,
        options={"seed": 3, "response_format": {"type": "json_object"}},
    )
    assert reply.value == 1
    first, second = server.payloads
    assert first["seed"] == second["seed"] == 3
    assert second["response_format"] == {"type": "json_object"}
    assert second["messages"][-1] == {
        "role": "user",
        "content": "Fix this: n must be an integer from 1 to 3, got 0.",
    }


def test_other_parse_errors_are_not_retried() -> None:
    client = ScriptedClient('{"n": 1}', '{"n": 1}')

    def broken(content: str) -> int:
        raise KeyError("a bug in the parser")

    with pytest.raises(KeyError, match="a bug in the parser"):
        ask_json(chat=client, messages=[USER], parse=broken, correction=correction, max_attempts=3)
    assert len(client.calls) == 1


def test_bad_arguments() -> None:
    with pytest.raises(ConfigError, match="max_attempts must be at least 1, got 0"):
        ask_json(
            chat=ScriptedClient(), messages=[], parse=parse_n, correction=correction, max_attempts=0
        )
    with pytest.raises(TypeError, match="a function takes none"):
        ask_json(
            chat=lambda m: "{}",
            messages=[],
            parse=parse_n,
            correction=correction,
            max_attempts=1,
            options={"seed": 1},
        )
    with pytest.raises(TypeError, match="got int"):
        ask_json(chat=42, messages=[], parse=parse_n, correction=correction, max_attempts=1)  # type: ignore[arg-type]


def test_join_problems_lists_five_and_counts_the_rest() -> None:
    assert join_problems(["a"]) == "a"
    assert join_problems([f"p{i}" for i in range(7)]) == "p0; p1; p2; p3; p4; and 2 more"
    assert join_problems(["a", "b", "c"], limit=2) == "a; b; and 1 more"
