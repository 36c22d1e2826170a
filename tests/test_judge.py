"""The LLM-as-judge rubric baseline against a scripted chat-completions server on loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from chatserver import ChatServer, chat_server

from pathgls.baselines.judge import (
    CRITERIA,
    DEFAULT_SAMPLING_TEMPERATURE,
    JudgeConfig,
    JudgeError,
    VerdictError,
    judge_pair,
    judge_pairs,
    parse_judge_spec,
    parse_verdict,
)
from pathgls.errors import ConfigError
from pathgls.llm.client import ChatClient

MODEL = "tiny-judge"
REFERENCE = (
    "DIAGNOSIS: Invasive ductal carcinoma of the left breast, grade 2. "
    "Margins free. No lymphovascular invasion. ER positive, HER2 negative."
)
CANDIDATE = "Invasive lobular carcinoma, left breast, grade 3. Lymphovascular invasion present."
NAMES = [c.name for c in CRITERIA]


def verdict(scores: tuple[Any, Any, Any, Any], reasoning: Any = "ok", **extra: Any) -> str:
    data = dict(zip(NAMES, scores, strict=True))
    data["reasoning"] = reasoning
    data.update(extra)
    return json.dumps(data)


GOOD = verdict((2, 1, 3, 2), "Lobular instead of ductal; grade and LVI differ.")


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with chat_server() as state:
        yield state


def config(server: ChatServer, **kwargs: Any) -> JudgeConfig:
    settings = {"timeout_s": 5, "http_retries": 0, "backoff_s": 0.0, "api_key_env": None}
    return JudgeConfig(base_url=server.url, model=MODEL, **{**settings, **kwargs})


def normalised(scores: tuple[int, int, int, int]) -> float:
    return float(
        np.mean([(s - c.low) / (c.high - c.low) for s, c in zip(scores, CRITERIA, strict=True)])
    )


def test_valid_reply_and_request_payload(server: ChatServer) -> None:
    server.play(GOOD)
    result = judge_pair(
        reference=REFERENCE, candidate=CANDIDATE, client_or_config=config(server, seed=11)
    )
    assert (result.n_requested, result.n_ok, result.n_failed) == (1, 1, 0)
    assert [result.criteria[n].samples for n in NAMES] == [(2,), (1,), (3,), (2,)]
    assert [result.criteria[n].mean for n in NAMES] == [2.0, 1.0, 3.0, 2.0]
    assert all(result.criteria[n].std == 0.0 for n in NAMES)
    assert result.overall == pytest.approx((1 / 3 + 0 + 1 + 1 / 3) / 4)
    assert result.overall_std == 0.0
    assert result.reasonings == ("Lobular instead of ductal; grade and LVI differ.",)
    assert result.ok and result.require() is result and not result.errors
    assert result.model == MODEL and result.missing_reason is None

    (request,) = server.requests
    payload = request["json"]
    assert request["path"] == "/v1/chat/completions"
    assert payload["model"] == MODEL
    assert payload["response_format"] == {"type": "json_object"}
    assert (payload["temperature"], payload["seed"]) == (0.0, 11)
    system, user = payload["messages"]
    assert system["role"] == "system" and all(n in system["content"] for n in NAMES)
    assert user["role"] == "user"
    assert REFERENCE in user["content"] and CANDIDATE in user["content"]
    assert user["content"].index(REFERENCE) < user["content"].index(CANDIDATE)

    module = result.to_module_score()
    assert module.value == result.overall and module.evidence["criteria"]["completeness"]
    json.dumps(result.to_dict())


def test_not_json_is_retried_with_the_error(server: ChatServer) -> None:
    server.play("The candidate is fairly good, I'd say 3/4.", GOOD)
    result = judge_pair(reference=REFERENCE, candidate=CANDIDATE, client_or_config=config(server))
    assert (result.n_ok, result.n_failed, result.samples[0].attempts) == (1, 0, 2)
    retry = server.payloads[1]
    assert retry["messages"][-2] == {
        "role": "assistant",
        "content": "The candidate is fairly good, I'd say 3/4.",
    }
    assert retry["messages"][-1]["role"] == "user"
    assert "not valid JSON" in retry["messages"][-1]["content"]
    assert retry["seed"] == server.payloads[0]["seed"]
    assert retry["response_format"] == {"type": "json_object"}


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        (json.dumps({n: 2 for n in NAMES[:3]} | {"reasoning": "x"}), "missing key(s): " + NAMES[3]),
        (verdict((5, 1, 3, 2)), f"{NAMES[0]} must be an integer from 1 to 4, got 5"),
        (verdict((2, 0, 3, 2)), f"{NAMES[1]} must be an integer from 1 to 3, got 0"),
        (verdict((2, 1, "3", 2)), f'{NAMES[2]} must be an integer from 1 to 3, got "3"'),
        (verdict((2, 1, 3, "3/4")), f'{NAMES[3]} must be an integer from 1 to 4, got "3/4"'),
        (verdict((2.5, 1, 3, 2)), f"{NAMES[0]} must be an integer from 1 to 4, got 2.5"),
        (verdict((2, 1, 3, 2), reasoning=None), "reasoning must be a string, got null"),
        (json.dumps({"scores": json.loads(GOOD)}), "unexpected key(s): 'scores'"),
    ],
    ids=["missing", "too-high", "too-low", "string", "fraction", "float", "reasoning", "nested"],
)
def test_partial_reply_is_corrected(server: ChatServer, bad: str, expected: str) -> None:
    server.play(bad, GOOD)
    result = judge_pair(reference=REFERENCE, candidate=CANDIDATE, client_or_config=config(server))
    assert (result.n_ok, result.n_failed) == (1, 0)
    assert result.criteria[NAMES[0]].samples == (2,)
    assert len(server.requests) == 2
    correction = server.payloads[1]["messages"][-1]["content"]
    assert expected in correction
    assert server.payloads[1]["messages"][-2]["content"] == bad


def test_always_invalid_is_counted_never_scored(server: ChatServer) -> None:
    server.play(*[verdict((9, 9, 9, 9))] * 3)
    cfg = config(server, max_retries_invalid=2)
    result = judge_pair(reference=REFERENCE, candidate=CANDIDATE, client_or_config=cfg)
    assert len(server.requests) == 3
    assert (result.n_requested, result.n_ok, result.n_failed) == (1, 0, 1)
    assert result.overall is None and result.overall_std is None and not result.ok
    assert all(result.criteria[n].mean is None and not result.criteria[n].samples for n in NAMES)
    assert "no valid reply after 3 attempt(s)" in result.errors[0]
    assert "all 1 judge sample(s) failed" in (result.missing_reason or "")
    with pytest.raises(JudgeError, match="must be an integer from 1 to 4, got 9"):
        result.require()
    assert result.to_module_score().missing


def test_three_samples_mean_and_std_match_numpy(server: ChatServer) -> None:
    scores = [(4, 3, 3, 4), (2, 1, 3, 2), (3, 3, 2, 3)]
    server.play(*[verdict(s, f"sample {i}") for i, s in enumerate(scores)])
    cfg = config(server, n_samples=3, seed=100)
    result = judge_pair(reference=REFERENCE, candidate=CANDIDATE, client_or_config=cfg)
    assert (result.n_requested, result.n_ok, result.n_failed) == (3, 3, 0)
    table = np.array(scores, dtype=float)
    for j, name in enumerate(NAMES):
        stats = result.criteria[name]
        assert stats.samples == tuple(s[j] for s in scores)
        assert stats.mean == float(np.mean(table[:, j]))
        assert stats.std == float(np.std(table[:, j]))
    per_sample = np.array([normalised(s) for s in scores])
    assert result.overall == pytest.approx(float(np.mean(per_sample)), abs=1e-12)
    assert result.overall_std == pytest.approx(float(np.std(per_sample)), abs=1e-12)
    assert result.criteria[NAMES[0]].std > 0
    assert result.reasonings == ("sample 0", "sample 1", "sample 2")
    seeds = [p["seed"] for p in server.payloads]
    assert seeds == [100, 101, 102] and len(set(seeds)) == 3
    assert {p["temperature"] for p in server.payloads} == {DEFAULT_SAMPLING_TEMPERATURE}


def test_failed_sample_among_good_ones_is_reported(server: ChatServer) -> None:
    server.play(verdict((4, 3, 3, 4)), "nope", "still nope", verdict((2, 1, 1, 1)))
    cfg = config(server, n_samples=2, max_retries_invalid=1, temperature=0.3)
    result = judge_pair(reference=REFERENCE, candidate=CANDIDATE, client_or_config=cfg)
    assert (result.n_ok, result.n_failed) == (1, 1)
    assert result.criteria[NAMES[0]].samples == (4,)
    assert result.overall == 1.0
    assert "seed=1" in result.errors[0] and "not valid JSON" in result.errors[0]
    assert any("1 of 2 judge sample(s) failed" in w for w in result.warnings)
    assert len(server.requests) == 3  # the third reply was never asked for
    assert {p["temperature"] for p in server.payloads} == {0.3}


def test_request_failure_is_a_failed_sample(server: ChatServer) -> None:
    server.fail(404, "model tiny-judge not found")
    result = judge_pair(reference=REFERENCE, candidate=CANDIDATE, client_or_config=config(server))
    assert (result.n_ok, result.n_failed, result.overall) == (0, 1, None)
    assert "request failed" in result.errors[0] and "HTTP 404" in result.errors[0]


def test_request_failure_after_a_correction_counts_both_requests(server: ChatServer) -> None:
    server.play("not json")
    server.fail(404, "model tiny-judge not found")
    result = judge_pair(reference=REFERENCE, candidate=CANDIDATE, client_or_config=config(server))
    assert (result.n_ok, result.n_failed, result.samples[0].attempts) == (0, 1, 2)
    assert "request failed" in result.errors[0] and "HTTP 404" in result.errors[0]
    assert len(server.requests) == 2


def test_empty_report_is_not_sent(server: ChatServer) -> None:
    result = judge_pair(reference=REFERENCE, candidate="  \n", client_or_config=config(server))
    assert not server.requests
    assert result.overall is None and result.n_requested == 0 and result.n_failed == 0
    assert result.warnings == ("candidate report is empty; not judged",)
    assert result.missing_reason == "candidate report is empty; not judged"


def test_judge_pairs_aligned_with_an_injected_client(server: ChatServer) -> None:
    server.play(GOOD, verdict((4, 3, 3, 4)))
    client = ChatClient(server.url, MODEL, timeout_s=5, max_retries=0)
    results = judge_pairs(
        references=[REFERENCE, REFERENCE, "Benign breast tissue."],
        candidates=[CANDIDATE, "", "Benign breast tissue."],
        client_or_config=client,
        config=JudgeConfig(seed=5),
    )
    assert [r.ok for r in results] == [True, False, True]
    assert results[2].overall == 1.0 and results[1].warnings
    assert [p["seed"] for p in server.payloads] == [5, 5]
    assert results[0].model == MODEL
    with pytest.raises(ValueError, match="2 references, 1 candidates"):
        judge_pairs(references=["a", "b"], candidates=["c"], client_or_config=client)
    with pytest.raises(ConfigError, match="once"):
        judge_pair(
            reference="a", candidate="b", client_or_config=config(server), config=JudgeConfig()
        )
    with pytest.raises(ConfigError, match="needs base_url and model"):
        judge_pair(reference="a", candidate="b", client_or_config=JudgeConfig())
    with pytest.raises(TypeError):
        judge_pair(reference="a", candidate="b", client_or_config="judge:http://h#m")  # type: ignore[arg-type]


def test_parse_verdict_rules() -> None:
    v = parse_verdict("```json\n" + verdict((3.0, 2, 2, 4.0), " fine ") + "\n```")
    assert dict(v.scores) == dict(zip(NAMES, (3, 2, 2, 4), strict=True))
    assert all(type(s) is int for s in v.scores.values())
    assert v.reasoning == "fine" and v.normalised == normalised((3, 2, 2, 4))
    for bad in (
        verdict((True, 2, 2, 2)),
        verdict((3, 2, 2, {"score": 2})),
        verdict((3, 2, 2, 2), extra="x"),
        "[1, 2, 3]",
        '{"critical_findings": NaN}',
    ):
        with pytest.raises(VerdictError):
            parse_verdict(bad)
    with pytest.raises(VerdictError, match="missing key"):
        parse_verdict("{}")


def test_spec_and_config_validation() -> None:
    assert parse_judge_spec("judge:http://h:8000/v1#qwen2.5-7b") == (
        "http://h:8000/v1",
        "qwen2.5-7b",
    )
    cfg = JudgeConfig.from_spec("judge:http://h:8000#m", n_samples=4)
    assert (cfg.base_url, cfg.model, cfg.n_samples) == ("http://h:8000", "m", 4)
    assert cfg.effective_temperature == DEFAULT_SAMPLING_TEMPERATURE
    assert JudgeConfig().effective_temperature == 0.0
    for spec in ("judge:http://h:8000", "llm:http://h#m", "judge:#m", "judge:ftp://h#m", "x"):
        with pytest.raises(ConfigError):
            parse_judge_spec(spec)
    for bad in (
        {"n_samples": 0},
        {"n_samples": 3, "temperature": 0.0},
        {"temperature": -1.0},
        {"max_retries_invalid": -1},
        {"timeout_s": 0},
        {"base_url": "not a url"},
    ):
        with pytest.raises(ConfigError):
            JudgeConfig(**bad)
