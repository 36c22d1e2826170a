"""The ``llm:`` extractor and ChatClient against a scripted chat-completions server on loopback."""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from chatserver import ChatServer, Reply, chat, chat_server

from pathgls.errors import ConfigError, NoValidReplyError
from pathgls.llm.client import ChatClient, LLMError, chat_completions_url
from pathgls.text.base import ENTITY_TYPES, EXTRACTORS
from pathgls.text.llm_extractor import AnswerError, LLMExtractor, locate, parse_answer
from pathgls.text.sections import parse_report
from pathgls.types import Relation

MODEL = "tiny-chat"
KEY_ENV = "PATHGLS_TEST_LLM_KEY"
SECRET = "sk-test-Zq81secret"

REPORT = parse_report(
    "DIAGNOSIS:\n"
    "Invasive ductal carcinoma of the left breast, grade 2.\n\n"
    "MICROSCOPIC DESCRIPTION:\n"
    "The carcinoma shows no lymphovascular invasion. Tumour cells are HER2 positive.\n"
    "Carcinoma is present at the deep margin."
).text


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with chat_server() as state:
        yield state


def client(server: ChatServer, **kwargs: Any) -> ChatClient:
    kwargs = {"timeout_s": 5, "max_retries": 2, "backoff_s": 0.01, **kwargs}
    return ChatClient(server.url, MODEL, **kwargs)


def answer(entities: list[dict[str, Any]], relations: list[dict[str, Any]] | None = None) -> str:
    return json.dumps({"entities": entities, "relations": relations or []})


GOOD = answer(
    [
        {"text": "Invasive ductal carcinoma", "type": "pathological_diagnosis"},
        {"text": "left breast", "type": "anatomical_site"},
        {"text": "grade 2", "type": "grade"},
        {"text": "carcinoma", "type": "pathological_diagnosis"},
        {"text": "lymphovascular invasion", "type": "lymphovascular_invasion", "negated": True},
        {"text": "her2", "type": "ihc_marker"},  # case differs from the report
        {"text": "positive", "type": "ihc_modifier"},
        {"text": "carcinoma", "type": "pathological_diagnosis"},  # second unused: "Carcinoma"
        {"text": "deep   margin", "type": "margin"},  # whitespace differs
        {"text": "lobular carcinoma", "type": "pathological_diagnosis"},  # not in the report
    ],
    [
        {"head": 0, "tail": 1, "type": "located_in"},
        {"head": 6, "tail": 5, "type": "result_of"},
        {"head": 2, "tail": 0, "type": "modifier_of"},
        {"head": 9, "tail": 1, "type": "located_in"},  # uses the dropped entity
    ],
)


def test_valid_answer_gives_exact_offsets_sections_and_relations(server: ChatServer) -> None:
    server.play(chat(GOOD))
    ex = LLMExtractor(client(server), name="llm-test", seed=7)
    entities, relations = ex.extract_with_relations(REPORT)
    for e in entities:
        assert REPORT[e.start : e.end] == e.text
    assert [(e.text, e.type) for e in entities] == [
        ("Invasive ductal carcinoma", "pathological_diagnosis"),
        ("left breast", "anatomical_site"),
        ("grade 2", "grade"),
        ("carcinoma", "pathological_diagnosis"),
        ("lymphovascular invasion", "lymphovascular_invasion"),
        ("HER2", "ihc_marker"),
        ("positive", "ihc_modifier"),
        ("Carcinoma", "pathological_diagnosis"),
        ("deep margin", "margin"),
    ]
    assert entities[3].start > entities[0].end  # the first free "carcinoma", not the IDC's
    assert [e.negated for e in entities] == [False] * 4 + [True] + [False] * 4
    assert [e.section for e in entities] == ["diagnosis"] * 3 + ["microscopic"] * 6
    assert relations == [
        Relation(0, 1, "located_in"),
        Relation(2, 0, "modifier_of"),
        Relation(6, 5, "result_of"),
    ]
    assert any("lobular carcinoma" in w for w in ex.last_warnings)
    assert any("relation 9 -located_in-> 1 dropped" in w for w in ex.last_warnings)
    (request,) = server.requests
    payload = request["json"]
    assert request["path"] == "/v1/chat/completions"
    assert (payload["model"], payload["temperature"], payload["seed"]) == (MODEL, 0.0, 7)
    assert payload["response_format"] == {"type": "json_object"}
    system, user = payload["messages"]
    assert all(t in system["content"] for t in ENTITY_TYPES)
    assert REPORT in user["content"]
    assert "Authorization" not in request["headers"]


def test_invalid_json_then_valid_is_retried_with_the_error(server: ChatServer) -> None:
    server.play(chat("Sure! Here are the entities: carcinoma"), chat(GOOD))
    entities = LLMExtractor(client(server)).extract(REPORT)
    assert len(entities) == 9
    assert len(server.requests) == 2
    messages = server.requests[1]["json"]["messages"]
    assert messages[-2] == {
        "role": "assistant",
        "content": "Sure! Here are the entities: carcinoma",
    }
    assert messages[-1]["role"] == "user"
    assert "not valid JSON" in messages[-1]["content"]


def test_schema_violation_is_sent_back(server: ChatServer) -> None:
    bad = answer([{"text": "carcinoma", "type": "tumour"}], [{"head": 0, "tail": 0, "type": "x"}])
    server.play(chat(bad), chat(answer([{"text": "carcinoma", "type": "pathological_diagnosis"}])))
    (entity,) = LLMExtractor(client(server)).extract(REPORT)
    assert entity.text == "carcinoma"
    retry = server.requests[1]["json"]["messages"][-1]["content"]
    assert "entities[0].type 'tumour' is not one of" in retry
    assert "relations[0].type 'x' is not one of" in retry


def test_always_invalid_raises_after_the_retries(server: ChatServer) -> None:
    server.play(*[chat('{"entities": "none"}')] * 3)
    with pytest.raises(LLMError, match=r"no valid answer after 3 attempt\(s\).*entities") as info:
        LLMExtractor(client(server), max_retries=2).extract(REPORT)
    assert len(server.requests) == 3
    assert isinstance(info.value, NoValidReplyError)
    assert info.value.replies == ('{"entities": "none"}',) * 3
    assert info.value.problem == 'the reply has no "entities" list'
    assert (info.value.endpoint, info.value.model) == (server.url + "/chat/completions", MODEL)


def test_server_without_response_format_is_asked_again(server: ChatServer) -> None:
    server.play(Reply(400, {"error": {"message": "response_format is not supported"}}), chat(GOOD))
    ex = LLMExtractor(client(server))
    assert len(ex.extract(REPORT)) == 9
    assert "response_format" in server.requests[0]["json"]
    assert "response_format" not in server.requests[1]["json"]
    assert not ex.json_mode


def test_client_retries_a_500(server: ChatServer) -> None:
    server.play(Reply(500, {"error": {"message": "overloaded"}}), chat("hello"))
    assert client(server).complete([{"role": "user", "content": "hi"}]) == "hello"
    assert len(server.requests) == 2


def test_client_retries_a_timeout(server: ChatServer) -> None:
    server.play(Reply(200, chat("late").body, delay_s=1.0), chat("on time"))
    start = time.monotonic()
    out = client(server, timeout_s=0.3).complete([{"role": "user", "content": "hi"}])
    assert out == "on time"
    assert len(server.requests) == 2
    assert time.monotonic() - start < 1.0


def test_client_fails_at_once_on_a_400(server: ChatServer) -> None:
    server.play(Reply(400, {"error": {"message": "unknown model tiny-chat"}}), chat("never"))
    with pytest.raises(LLMError, match="HTTP 400: unknown model tiny-chat") as info:
        client(server).complete([{"role": "user", "content": "hi"}])
    assert info.value.status == 400
    assert len(server.requests) == 1


def test_client_gives_up_naming_endpoint_model_and_error(server: ChatServer) -> None:
    server.play(*[Reply(503, "busy")] * 3)
    with pytest.raises(LLMError) as info:
        client(server).complete([{"role": "user", "content": "hi"}])
    message = str(info.value)
    assert server.url in message and MODEL in message and "HTTP 503: busy" in message
    assert "3 attempt(s)" in message and len(server.requests) == 3


def test_client_retries_refused_connections() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    c = ChatClient(f"http://127.0.0.1:{port}", MODEL, max_retries=1, backoff_s=0.01, timeout_s=2)
    with pytest.raises(LLMError, match="connection failed"):
        c.complete([{"role": "user", "content": "hi"}])


def test_api_key_is_sent_but_never_shown(
    server: ChatServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    echo = {"error": {"message": f"invalid key {SECRET}"}}
    server.play(Reply(503, echo), Reply(401, echo))
    with caplog.at_level(logging.DEBUG), pytest.raises(LLMError) as info:
        client(server, api_key_env=KEY_ENV).complete([{"role": "user", "content": "hi"}])
    assert [r["headers"]["Authorization"] for r in server.requests] == [f"Bearer {SECRET}"] * 2
    assert info.value.status == 401
    assert SECRET not in str(info.value) and "invalid key ***" in str(info.value)
    assert caplog.records and SECRET not in caplog.text
    assert SECRET not in repr(client(server, api_key_env=KEY_ENV))


def test_missing_key_is_explained(server: ChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    server.play(Reply(401, {"error": {"message": "no key"}}))
    with pytest.raises(LLMError, match=f"\\${KEY_ENV} is not set"):
        client(server, api_key_env=KEY_ENV).complete([{"role": "user", "content": "hi"}])
    assert "Authorization" not in server.requests[0]["headers"]


def test_registry_and_urls(server: ChatServer) -> None:
    ex = EXTRACTORS.build(f"llm:{server.url}#{MODEL}")
    assert isinstance(ex, LLMExtractor)
    assert ex.client.url == server.url + "/chat/completions"
    assert ex.client.model == MODEL
    with pytest.raises(ConfigError):
        EXTRACTORS.build(f"llm:{server.url}")
    with pytest.raises(ConfigError):
        EXTRACTORS.build(f"llm:ftp://host#{MODEL}")
    assert chat_completions_url("http://h:8000") == "http://h:8000/v1/chat/completions"
    assert chat_completions_url("http://h:8000/v1/") == "http://h:8000/v1/chat/completions"
    assert chat_completions_url("https://h/api/v2") == "https://h/api/v2/chat/completions"
    url = "http://h/openai/v1/chat/completions"
    assert chat_completions_url(url) == url


def test_parse_and_locate_units() -> None:
    entities, relations = parse_answer(
        '```json\n{"entities": [{"text": "ER", "type": "ihc_marker"}]}\n```'
    )
    assert [(e.text, e.type) for e in entities] == [("ER", "ihc_marker")] and relations == []
    with pytest.raises(AnswerError, match="negated must be true or false"):
        parse_answer(answer([{"text": "ER", "type": "ihc_marker", "negated": "no"}]))
    with pytest.raises(AnswerError, match=r"relations\[0\].tail 3 is not in 0..0"):
        parse_answer(
            answer(
                [{"text": "ER", "type": "ihc_marker"}], [{"head": 0, "tail": 3, "type": "same_as"}]
            )
        )
    text = "ER positive. er negative. ER\nstatus"
    used: set[tuple[int, int]] = set()
    spans = []
    for needle in ["ER", "ER", "ER", "er status"]:
        span = locate(text, needle, used)
        assert span is not None
        used.add(span)
        spans.append(text[span[0] : span[1]])
    assert spans == ["ER", "ER", "er", "ER\nstatus"]
    assert locate(text, "ER", used) is None
