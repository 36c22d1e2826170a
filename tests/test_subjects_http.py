"""The ``openai:`` subject against a chat-completions server on loopback, and ``replay:``."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from chatserver import ChatServer, Reply, chat, chat_server
from PIL import Image

from pathgls.errors import ConfigError
from pathgls.llm.client import LLMError
from pathgls.subjects.base import SUBJECTS, Subject, SubjectConfig, SubjectError
from pathgls.subjects.cache import SubjectCache, cached_generate
from pathgls.subjects.openai import OpenAISubject  # importing registers openai:
from pathgls.subjects.replay import ReplayFileError, ReplaySubject  # ... and replay:

MODEL = "tiny-vlm"
KEY_ENV = "PATHGLS_TEST_SUBJECT_KEY"
SECRET = "sk-subject-9Xq2secret"
DATA_URL = "data:image/png;base64,"


# --- a scripted chat-completions server ----------------------------------------------------


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with chat_server() as state:
        yield state


def subject(server: ChatServer, **config: Any) -> Subject:
    kwargs: dict[str, Any] = {"timeout_s": 5.0, "max_retries": 2, "backoff_s": 0.001, **config}
    return SUBJECTS.build(f"openai:{server.url}#{MODEL}", SubjectConfig(**kwargs))


def image(h: int, w: int, seed: int = 0) -> np.ndarray:
    """A deterministic RGB image whose three channels differ (catches channel swaps)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
    a[..., 0] //= 2  # red darker than the rest
    return a


def decode(url: str) -> np.ndarray:
    assert url.startswith(DATA_URL)
    raw = base64.b64decode(url[len(DATA_URL) :], validate=True)
    with Image.open(io.BytesIO(raw)) as im:
        assert im.format == "PNG" and im.mode == "RGB"
        return np.asarray(im)


# --- openai: ---------------------------------------------------------------------------------


def test_answer_and_request_payload(server: ChatServer) -> None:
    server.play(chat("  Invasive ductal carcinoma, grade 2.\n"))
    small, wide = image(40, 120, seed=1)[:, ::2], image(100, 300, seed=2)  # a strided view too
    subj = subject(server, temperature=0.7, max_tokens=321, max_image_side=64)

    text = subj.generate(
        [small, wide],
        "Describe the slide.",
        seed=17,
        system="You are a pathologist.",
        item_id="s1",
        condition="stain",
    )

    assert isinstance(subj, OpenAISubject)
    assert text == "Invasive ductal carcinoma, grade 2."
    assert (subj.name, subj.model_id, subj.revision, subj.learned) == (
        f"openai:{server.url}#{MODEL}",
        MODEL,
        None,
        True,
    )
    assert len(server.requests) == 1
    req = server.requests[0]
    assert req["path"] == "/v1/chat/completions"
    payload = req["json"]
    assert payload["model"] == MODEL
    assert payload["temperature"] == 0.7
    assert payload["seed"] == 17
    assert payload["max_tokens"] == 321
    messages = payload["messages"]
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[0]["content"] == "You are a pathologist."
    parts = messages[1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url", "image_url"]
    assert parts[0]["text"] == "Describe the slide."
    sent_small = decode(parts[1]["image_url"]["url"])
    sent_wide = decode(parts[2]["image_url"]["url"])
    np.testing.assert_array_equal(sent_small, small)  # fits: sent losslessly, unchanged
    assert sent_wide.shape == (21, 64, 3)  # 100×300 → longest side 64, aspect kept
    expected = np.asarray(Image.fromarray(wide).resize((64, 21), Image.Resampling.LANCZOS))
    np.testing.assert_array_equal(sent_wide, expected)


def test_no_system_message_without_system_prompt(server: ChatServer) -> None:
    server.play(chat("Benign breast tissue."))
    subj = subject(server)
    assert subj.generate([image(8, 8)], "What is this?") == "Benign breast tissue."
    messages = server.requests[0]["json"]["messages"]
    assert [m["role"] for m in messages] == ["user"]
    assert server.requests[0]["json"]["seed"] == 0
    assert server.requests[0]["json"]["max_tokens"] == SubjectConfig().max_tokens


def test_timeout_on_every_attempt(server: ChatServer) -> None:
    server.default = Reply(delay_s=3.0, body="late")
    subj = subject(server, timeout_s=0.25, max_retries=2)
    t0 = time.perf_counter()
    with pytest.raises(SubjectError) as info:
        subj.generate([image(8, 8)], "p", item_id="slide-7", condition="attack:history")
    elapsed = time.perf_counter() - t0
    assert len(server.requests) == 3  # max_retries + 1
    # not a speed assertion: without the timeout each of the 3 attempts waits the full 3 s (9 s)
    assert elapsed < 6.0
    message = str(info.value)
    for part in ("timed out", server.url, MODEL, "slide-7", "attack:history", "3 attempt"):
        assert part in message


def test_server_error_then_success(server: ChatServer) -> None:
    server.play(Reply(500, {"error": {"message": "overloaded"}}), chat("Necrosis present."))
    assert subject(server).generate([image(8, 8)], "p") == "Necrosis present."
    assert len(server.requests) == 2
    assert server.requests[0]["json"] == server.requests[1]["json"]  # same request re-sent


def test_malformed_json_answer(server: ChatServer) -> None:
    server.default = Reply(200, "{this is not json")
    with pytest.raises(SubjectError) as info:
        subject(server, max_retries=1).generate([image(8, 8)], "p", item_id="x")
    assert len(server.requests) == 2
    assert "unreadable answer" in str(info.value)
    assert "{this is not json" in str(info.value)
    assert isinstance(info.value.__cause__, LLMError)


@pytest.mark.parametrize("answer", ["", "   \n\t"])
def test_empty_answer_is_an_error(server: ChatServer, answer: str) -> None:
    server.play(chat(answer))
    with pytest.raises(SubjectError, match="empty report"):
        subject(server).generate([image(8, 8)], "p", item_id="s3")
    assert len(server.requests) == 1  # an empty answer is not retried


def test_bad_image_is_refused_before_any_request(server: ChatServer) -> None:
    with pytest.raises(SubjectError, match="uint8"):
        subject(server).generate([np.zeros((8, 8, 3), np.float32)], "p")
    with pytest.raises(SubjectError, match="at least one image"):
        subject(server).generate([], "p")
    assert server.requests == []


@pytest.mark.parametrize("status", [500, 401])
def test_api_key_is_sent_but_never_shown(
    server: ChatServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    status: int,
) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    server.default = Reply(status, echo_auth=True)
    subj = subject(server, api_key_env=KEY_ENV, max_retries=1)
    with caplog.at_level(logging.DEBUG), pytest.raises(SubjectError) as info:
        subj.generate([image(8, 8)], "p", item_id="k1")
    attempts = 2 if status == 500 else 1  # a 401 is not retried
    auth = [r["headers"]["Authorization"] for r in server.requests]
    assert auth == [f"Bearer {SECRET}"] * attempts
    message = str(info.value)
    assert f"HTTP {status}" in message and "bad Bearer ***" in message
    assert SECRET not in message
    assert SECRET not in caplog.text
    assert SECRET not in repr(subj)


@pytest.mark.parametrize(
    "spec",
    [
        "openai:http://127.0.0.1:9/v1",
        "openai:http://127.0.0.1:9/v1#",
        "openai:http://127.0.0.1:9/v1#   ",
        "openai:#tiny-vlm",
        "openai:ftp://127.0.0.1:9/v1#tiny-vlm",
    ],
)
def test_bad_openai_specs(spec: str) -> None:
    with pytest.raises(ConfigError) as info:
        SUBJECTS.build(spec, SubjectConfig())
    if "#" not in spec or spec.rstrip().endswith("#"):
        assert "names no model" in str(info.value)


def test_cache_asks_the_server_once_per_distinct_request(
    server: ChatServer, tmp_path: Path
) -> None:
    server.default = chat("Reactive lymph node.")
    subj = subject(server)
    cache = SubjectCache(tmp_path / "cache")
    base = {"images": [image(16, 16)], "prompt": "p", "seed": 1, "item_id": "n1"}

    first = cached_generate(subj, cache=cache, **base)
    again = cached_generate(subj, cache=cache, **base)
    assert (first.cached, again.cached) == (False, True)
    assert first.text == again.text == "Reactive lymph node."
    assert len(server.requests) == 1

    changes: list[dict[str, Any]] = [
        {"seed": 2},
        {"condition": "stain"},
        {"images": [image(16, 16, seed=5)]},
    ]
    for n, change in enumerate(changes, start=2):
        gen = cached_generate(subj, cache=cache, **{**base, **change})
        assert not gen.cached
        assert len(server.requests) == n
        assert cached_generate(subj, cache=cache, **{**base, **change}).cached
        assert len(server.requests) == n
    assert [r["json"]["seed"] for r in server.requests] == [1, 2, 1, 1]


# --- replay: ---------------------------------------------------------------------------------


def write_jsonl(path: Path, lines: list[Any]) -> Path:
    path.write_text(
        "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n",
        encoding="utf-8",
    )
    return path


def test_replay_lookup(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "rec.jsonl",
        [
            {"item_id": "a", "condition": "original", "report": "Carcinoma.", "model": "m7"},
            "",
            {"item_id": "a", "condition": "stain", "text": "Carcinoma, grade 2.", "model": "m7"},
            {"item_id": "b", "condition": "original", "report": "Benign."},
            {"item_id": "a", "condition": "original", "report": "Carcinoma.", "model": "m7"},
        ],
    )
    subj = SUBJECTS.build(f"replay:{path}", SubjectConfig())
    assert isinstance(subj, ReplaySubject) and len(subj) == 3
    none = np.zeros((0, 0, 3), np.uint8)  # images are ignored
    assert subj.generate([none], "ignored", item_id="a") == "Carcinoma."
    assert subj.generate([], "x", item_id="a", condition="stain") == "Carcinoma, grade 2."
    assert subj.generate([], "x", item_id="b", seed=9) == "Benign."
    assert subj.revision == hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    assert (subj.name, subj.model_id, subj.learned) == (f"replay:{path}", "m7", True)


def test_replay_model_id_is_the_file_name_when_models_disagree(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "mixed.jsonl",
        [
            {"item_id": "a", "condition": "original", "report": "x", "subject": "m1"},
            {"item_id": "b", "condition": "original", "report": "y", "model": "m2"},
        ],
    )
    assert ReplaySubject(path=path).model_id == "mixed.jsonl"


def test_replay_missing_entry(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "rec.jsonl",
        [
            {"item_id": "a", "condition": "original", "report": "r1"},
            {"item_id": "a", "condition": "stain", "report": "r2"},
        ],
    )
    subj = ReplaySubject(path=path)
    with pytest.raises(SubjectError) as info:
        subj.generate([], "p", item_id="a", condition="attack:history")
    message = str(info.value)
    for part in ("'a'", "'attack:history'", str(path), "2 record(s)", "'original', 'stain'"):
        assert part in message
    with pytest.raises(SubjectError, match="not in the file"):
        subj.generate([], "p", item_id="zz")


@pytest.mark.parametrize(
    ("lines", "line", "words"),
    [
        (['{"item_id": "a", "condition": "original", "report": "r"}', "{oops"], 2, "invalid JSON"),
        (['{"item_id": "a", "report": "r"}'], 1, "missing key(s) condition"),
        (["", '{"item_id": "a", "condition": "c"}'], 2, "missing key(s) report"),
        (['["a", "original", "r"]'], 1, "expected a JSON object"),
        (['{"item_id": "a", "condition": "c", "report": 5.5}'], 1, "'report' must be a string"),
    ],
)
def test_replay_bad_line_is_named(tmp_path: Path, lines: list[str], line: int, words: str) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", lines)
    with pytest.raises(ReplayFileError) as info:
        SUBJECTS.build(f"replay:{path}", SubjectConfig())
    assert info.value.line == line
    assert f"line {line}" in str(info.value) and words in str(info.value)
    assert str(path) in str(info.value)


def test_replay_conflicting_duplicate(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "dup.jsonl",
        [
            {"item_id": "a", "condition": "original", "report": "Carcinoma."},
            {"item_id": "b", "condition": "original", "report": "Benign."},
            {"item_id": "a", "condition": "original", "report": "Lymphoma."},
        ],
    )
    with pytest.raises(ReplayFileError) as info:
        ReplaySubject(path=path)
    message = str(info.value)
    assert "line 3" in message and "line 1" in message and "different report" in message


def test_replay_missing_or_unnamed_file(tmp_path: Path) -> None:
    with pytest.raises(ReplayFileError, match="not found"):
        SUBJECTS.build(f"replay:{tmp_path / 'nope.jsonl'}", SubjectConfig())
    with pytest.raises(ConfigError, match="names no file"):
        SUBJECTS.build("replay:", SubjectConfig())
    with pytest.raises(ReplayFileError, match="no records"):
        ReplaySubject(path=write_jsonl(tmp_path / "empty.jsonl", ["", "  "]))
