"""LLM-as-judge rubric baseline: a chat model compares a candidate report with a reference.

The judge (any OpenAI-compatible endpoint, through :class:`~pathgls.llm.client.ChatClient`) sees
the reference report and the candidate report and scores the candidate on four criteria of our
own rubric (:data:`CRITERIA`):

==========================  =====  ========================================================
``critical_findings``       1–4    the diagnosis and the findings that change management agree
``factual_accuracy``        1–3    nothing stated that the reference contradicts or lacks
``completeness``            1–3    nothing clinically relevant in the reference left out
``clinical_equivalence``    1–4    a clinician would act the same on either report
==========================  =====  ========================================================

plus a short ``reasoning`` string. Higher is better on every criterion.

**Validation is strict.** The reply must be one JSON object with exactly these five keys (an
optional Markdown code fence around it is removed; nothing else is forgiven): each score an
integer in its range — a JSON integer, or a number with an integer value such as ``3.0``;
strings (``"3"``, ``"3/4"``), booleans, objects, fractions and out-of-range values are rejected
— and ``reasoning`` a string. Unknown keys and nesting (``{"scores": {...}}``) are rejected too.
An invalid reply is sent back with a short correction naming every problem, up to
``max_retries_invalid`` times (:func:`~pathgls.llm.json_chat.ask_json`); a sample still invalid
after that, or whose request failed (:class:`~pathgls.errors.LLMError` after the client's own HTTP
retries), is counted in ``n_failed`` with its reason in ``errors`` — never replaced by an invented
score.

**Sampling.** ``n_samples`` independent judgements are asked for, sample ``i`` with seed
``seed + i`` (distinct seeds) and the same temperature (0 for one sample; for several it must be
positive, 0.7 unless set). Per criterion the result gives the scores of the valid samples, their
mean and their population standard deviation (``numpy.std``, ``ddof=0``: 0.0 for one sample), so
that the judge's own variance is visible next to its score.

**Overall score.** Each valid sample is normalised to [0, 1] as the mean over the four criteria of
``(score − min) / (max − min)``; ``overall`` is the mean of these over the valid samples (equal
to the same formula applied to the criterion means) and ``overall_std`` their standard
deviation. When no sample is valid, ``overall`` is None and ``missing_reason`` says why;
:meth:`JudgeResult.require` turns that into a :class:`JudgeError`.

Every request sends ``response_format={"type": "json_object"}`` (``json_mode=False`` turns it
off for servers that reject it). Spec strings ``judge:<base_url>#<model>`` are read by
:func:`parse_judge_spec` / :meth:`JudgeConfig.from_spec`; the API key, if any, comes from the
environment variable named by ``api_key_env`` (default ``$PATHGLS_JUDGE_API_KEY``).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pathgls.errors import ConfigError, JudgeError, LLMError, NoValidReplyError, VerdictError
from pathgls.io.redact import redact
from pathgls.llm.client import (
    MAX_BACKOFF_S,
    MAX_RETRIES,
    MAX_TIMEOUT_S,
    ChatClient,
    chat_completions_url,
)
from pathgls.llm.fence import fenced, fences
from pathgls.llm.json_chat import ChatCompleter, ask_json, join_problems, load_json_object
from pathgls.registry import parse_spec
from pathgls.types import ModuleScore

logger = logging.getLogger(__name__)

#: Environment variable the API key is read from by default (optional: unset sends no key).
API_KEY_ENV = "PATHGLS_JUDGE_API_KEY"
#: Spec scheme: ``judge:<base_url>#<model>``.
SPEC_SCHEME = "judge"
#: Temperature used for several samples when none is configured.
DEFAULT_SAMPLING_TEMPERATURE = 0.7


@dataclass(frozen=True)
class Criterion:
    """One rubric criterion: its JSON key, its integer range and what it asks."""

    name: str
    low: int
    high: int
    question: str


#: The rubric, in the order the scores are listed (our own wording).
CRITERIA: tuple[Criterion, ...] = (
    Criterion(
        "critical_findings",
        1,
        4,
        "Do the findings that drive treatment agree: diagnosis and its subtype, grade, stage, "
        "margin status, lymph node and lymphovascular status, key marker results? "
        "4 = all agree; 3 = a minor difference; 2 = one critical finding differs or is missing; "
        "1 = the main diagnosis differs or several critical findings disagree.",
    ),
    Criterion(
        "factual_accuracy",
        1,
        3,
        "Does the candidate state anything that the reference contradicts or that has no basis "
        "in it (a hallucination)? 3 = nothing; 2 = minor unsupported details only; "
        "1 = at least one clinically relevant false or unsupported statement.",
    ),
    Criterion(
        "completeness",
        1,
        3,
        "Does the candidate leave out findings the reference reports? "
        "3 = nothing relevant omitted; 2 = minor omissions only; "
        "1 = at least one clinically relevant finding omitted.",
    ),
    Criterion(
        "clinical_equivalence",
        1,
        4,
        "Taken as a whole, would a clinician manage the patient the same way on either report? "
        "4 = equivalent; 3 = mostly, with small differences; 2 = partly; 1 = not equivalent.",
    ),
)
_BY_NAME = {c.name: c for c in CRITERIA}
_KEYS = (*_BY_NAME, "reasoning")


@dataclass(frozen=True)
class Verdict:
    """One valid judgement: an integer per criterion and the judge's reasoning."""

    scores: Mapping[str, int]
    reasoning: str

    @property
    def normalised(self) -> float:
        """Mean over the criteria of ``(score − min) / (max − min)``, in [0, 1]."""
        return float(np.mean([_normalise(c, self.scores[c.name]) for c in CRITERIA]))


def _normalise(criterion: Criterion, score: float) -> float:
    return (score - criterion.low) / (criterion.high - criterion.low)


#: Most judgements asked for per pair.
MAX_SAMPLES = 1000


@dataclass(frozen=True)
class JudgeConfig:
    """Settings of the judge.

    ``base_url`` and ``model`` may stay empty when a client is passed to :func:`judge_pair`.
    """

    base_url: str = ""  # server root, API root (.../v1) or full .../chat/completions URL
    model: str = ""  # model name sent with each request
    api_key_env: str | None = API_KEY_ENV  # env var holding the API key (None: never send one)
    n_samples: int = 1  # independent judgements per pair
    temperature: float | None = None  # None: 0 for one sample, 0.7 for several
    max_retries_invalid: int = 2  # corrections asked for after an invalid reply
    timeout_s: float = 60.0  # socket timeout of one request, seconds
    seed: int = 0  # sample i is asked with seed + i
    max_tokens: int | None = 512  # longest reply (None: the server's default)
    json_mode: bool = True  # send response_format={"type": "json_object"}
    http_retries: int = 3  # client retries on 429/5xx/timeouts (see ChatClient)
    backoff_s: float = 1.0  # client wait before its first HTTP retry, doubled after

    def __post_init__(self) -> None:
        if self.base_url:
            chat_completions_url(self.base_url)  # raises ConfigError on a non-http(s) URL
        if not 1 <= self.n_samples <= MAX_SAMPLES:
            raise ConfigError(f"n_samples must be in [1, {MAX_SAMPLES}], got {self.n_samples}")
        if self.temperature is not None:
            if not math.isfinite(self.temperature) or self.temperature < 0:
                raise ConfigError(f"temperature must be ≥ 0, got {self.temperature}")
            if self.n_samples > 1 and self.temperature == 0:
                raise ConfigError(
                    f"n_samples={self.n_samples} needs temperature > 0 (identical samples "
                    "otherwise); leave temperature unset for "
                    f"{DEFAULT_SAMPLING_TEMPERATURE}"
                )
        if not 0 <= self.max_retries_invalid <= MAX_RETRIES:
            raise ConfigError(
                f"max_retries_invalid must be in [0, {MAX_RETRIES}], got {self.max_retries_invalid}"
            )
        if not 0 < self.timeout_s <= MAX_TIMEOUT_S:
            raise ConfigError(f"timeout_s must be in (0, {MAX_TIMEOUT_S:g}], got {self.timeout_s}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ConfigError(f"max_tokens must be at least 1, got {self.max_tokens}")
        if not 0 <= self.http_retries <= MAX_RETRIES:
            raise ConfigError(
                f"http_retries must be in [0, {MAX_RETRIES}], got {self.http_retries}"
            )
        if not 0 <= self.backoff_s <= MAX_BACKOFF_S:
            raise ConfigError(f"backoff_s must be in [0, {MAX_BACKOFF_S:g}], got {self.backoff_s}")
        if not 1 <= self.n_samples <= 1000 or not 0 <= self.max_retries_invalid <= MAX_RETRIES:
            raise ConfigError(
                "n_samples must be in [1, 1000] and max_retries_invalid in [0, "
                f"{MAX_RETRIES}], got {self.n_samples} and {self.max_retries_invalid}"
            )

    @property
    def effective_temperature(self) -> float:
        """The temperature sent: as set, else 0 for one sample and 0.7 for several."""
        if self.temperature is not None:
            return float(self.temperature)
        return 0.0 if self.n_samples == 1 else DEFAULT_SAMPLING_TEMPERATURE

    @classmethod
    def from_spec(cls, spec: str, **settings: Any) -> JudgeConfig:
        """A config for ``judge:<base_url>#<model>``; ``settings`` set the other fields.

        Raises:
            ConfigError: a malformed spec or setting.
        """
        base_url, model = parse_judge_spec(spec)
        return cls(base_url=base_url, model=model, **settings)


def parse_judge_spec(spec: str) -> tuple[str, str]:
    """Split ``judge:<base_url>#<model>`` into the base URL and the model name.

    The model is what follows the last ``#``, as for ``llm:<base_url>#<model>`` extractors.

    Raises:
        ConfigError: not a ``judge:`` spec, a missing URL or model, or a non-http(s) URL.
    """
    parsed = parse_spec(spec, what="judge")
    base_url, sep, model = parsed.arg.rpartition("#")
    base_url, model = base_url.strip(), model.strip()
    if parsed.kind != SPEC_SCHEME or not sep or not base_url or not model:
        raise ConfigError(
            f"judge spec must be {SPEC_SCHEME}:<base_url>#<model> (e.g. "
            f"{SPEC_SCHEME}:http://localhost:8000/v1#qwen2.5-7b-instruct), got {redact(spec)!r}"
        )
    chat_completions_url(base_url)
    return base_url, model


def build_client(config: JudgeConfig) -> ChatClient:
    """The chat client for ``config`` (nothing is contacted here).

    Raises:
        ConfigError: ``base_url`` or ``model`` is empty or invalid.
    """
    if not config.base_url or not config.model.strip():
        raise ConfigError(
            "JudgeConfig needs base_url and model to build a client (or pass a client)"
        )
    return ChatClient(
        config.base_url,
        config.model,
        api_key_env=config.api_key_env,
        timeout_s=config.timeout_s,
        max_retries=config.http_retries,
        backoff_s=config.backoff_s,
    )


def system_prompt() -> str:
    """Instructions and reply format sent as the system message."""
    rubric = "\n".join(f"- {c.name} (integer {c.low} to {c.high}): {c.question}" for c in CRITERIA)
    example = ", ".join(f'"{c.name}": <integer>' for c in CRITERIA)
    return (
        "You are a pathologist reviewing a pathology report written by someone else (the "
        "candidate) against a report you trust (the reference). Judge only the clinical content "
        "of the candidate relative to the reference; ignore wording, order, style and length.\n"
        f"Score each criterion; higher is better:\n{rubric}\n"
        "Reply with one JSON object and nothing else, exactly in this form:\n"
        f'{{{example}, "reasoning": "<one to three sentences naming the main differences>"}}\n'
        "Scores are plain JSON integers (not strings, not fractions); use no other keys."
    )


def user_prompt(reference: str, candidate: str) -> str:
    """The user message holding both reports, each between fence lines it cannot contain.

    The fence is longer than any run of ``<`` or ``>`` in either report
    (:func:`~pathgls.llm.fence.fences`), so a candidate cannot close its block and add a
    "Candidate report" of its own.
    """
    fence = fences(reference, candidate)
    return (
        f"{fenced('Reference report', reference, fence)}\n\n"
        f"{fenced('Candidate report', candidate, fence)}\n\n"
        "Score the candidate report (only the text inside its fence lines is the candidate)."
    )


def correction_prompt(problem: str) -> str:
    """The message sent back after an invalid reply."""
    return (
        f"Your reply could not be used: {problem}. "
        "Reply again with only the corrected JSON object, in the form given above."
    )


def parse_verdict(content: str) -> Verdict:
    """Validate a judge reply strictly (see the module docstring).

    Raises:
        VerdictError: not JSON, or the JSON breaks the schema (up to five reasons listed).
    """
    data = load_json_object(content, error=VerdictError)
    errors: list[str] = []
    missing = [k for k in _KEYS if k not in data]
    if missing:
        errors.append(f"missing key(s): {', '.join(missing)}")
    extra = [k for k in data if k not in _KEYS]
    if extra:
        errors.append(f"unexpected key(s): {', '.join(map(repr, extra))}")
    scores: dict[str, int] = {}
    for c in CRITERIA:
        if c.name in data:
            score = _integer(data[c.name])
            if score is None or not c.low <= score <= c.high:
                errors.append(
                    f"{c.name} must be an integer from {c.low} to {c.high}, got "
                    f"{json.dumps(data[c.name])}"
                )
            else:
                scores[c.name] = score
    reasoning = data.get("reasoning")
    if "reasoning" in data and not isinstance(reasoning, str):
        errors.append(f"reasoning must be a string, got {json.dumps(reasoning)}")
    if errors:
        raise VerdictError(join_problems(errors))
    return Verdict(scores=scores, reasoning=str(reasoning).strip())


def _integer(value: Any) -> int | None:
    """``value`` as an int when it is a JSON integer or an integer-valued number, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return None


@dataclass(frozen=True)
class JudgeSample:
    """One requested judgement: its verdict, or why it failed."""

    seed: int
    attempts: int  # requests made for it (1 + corrections)
    verdict: Verdict | None = None
    error: str | None = None


@dataclass(frozen=True)
class CriterionStats:
    """One criterion over the valid samples (mean and std None when there is none)."""

    name: str
    low: int
    high: int
    samples: tuple[int, ...]
    mean: float | None
    std: float | None  # population standard deviation (numpy.std, ddof=0)


@dataclass(frozen=True)
class JudgeResult:
    """The judge's scores for one (reference, candidate) pair.

    ``overall`` is None exactly when no sample is valid; ``missing_reason`` then says why.
    """

    criteria: Mapping[str, CriterionStats]
    overall: float | None
    overall_std: float | None
    n_requested: int  # samples asked for (0: not judged, e.g. an empty report)
    n_ok: int  # valid samples, the ones scored
    n_failed: int  # samples without a valid reply after the corrections, or whose request failed
    reasonings: tuple[str, ...]  # the valid samples' reasoning, in sample order
    errors: tuple[str, ...]  # one line per failed sample
    warnings: tuple[str, ...] = ()
    missing_reason: str | None = None
    model: str = ""
    samples: tuple[JudgeSample, ...] = field(default=(), repr=False)  # every sample, in order

    @property
    def ok(self) -> bool:
        """True when there is a score."""
        return self.overall is not None

    def require(self) -> JudgeResult:
        """This result, or :class:`JudgeError` when it has no score.

        Raises:
            JudgeError: no valid sample (the message carries ``missing_reason``).
        """
        if self.overall is None:
            raise JudgeError(
                f"LLM judge ({self.model or 'client'}) gave no score: {self.missing_reason}"
            )
        return self

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return dataclasses.asdict(self)

    def to_module_score(self, name: str = "llm_judge") -> ModuleScore:
        """The overall score as a :class:`~pathgls.types.ModuleScore`, per-criterion as evidence."""
        evidence = self.to_dict()
        del evidence["samples"], evidence["warnings"], evidence["missing_reason"]
        return ModuleScore(
            name=name,
            value=self.overall,
            missing_reason=self.missing_reason,
            evidence=evidence,
            warnings=list(self.warnings),
        )


def judge_pair(
    *,
    reference: str,
    candidate: str,
    client_or_config: ChatCompleter | JudgeConfig,
    config: JudgeConfig | None = None,
) -> JudgeResult:
    """Judge ``candidate`` against ``reference`` with ``n_samples`` rubric judgements.

    Args:
        reference: The trusted report.
        candidate: The report under evaluation.
        client_or_config: A :class:`JudgeConfig` (a :class:`ChatClient` is built from it) or a
            client with ``ChatClient.complete``'s signature.
        config: Judge settings when a client is given (default: ``JudgeConfig()``).

    Returns:
        The per-criterion statistics, the overall score and every failure. An empty report
        gives a result without score and with a warning, and no request is made.

    Raises:
        ConfigError: a config without endpoint, or a config given twice.
        TypeError: ``client_or_config`` is neither.
    """
    client, cfg = _resolve(client_or_config, config)
    return _judge(client, cfg, reference, candidate)


def judge_pairs(
    *,
    references: Sequence[str],
    candidates: Sequence[str],
    client_or_config: ChatCompleter | JudgeConfig,
    config: JudgeConfig | None = None,
) -> list[JudgeResult]:
    """:func:`judge_pair` over aligned lists, with one client; results in input order.

    Raises:
        ValueError: the lists differ in length.
        ConfigError: as :func:`judge_pair`.
        TypeError: as :func:`judge_pair`.
    """
    if isinstance(references, str) or isinstance(candidates, str):
        raise TypeError("references and candidates must be sequences of reports, not strings")
    if len(references) != len(candidates):
        raise ValueError(
            f"references and candidates must be aligned: {len(references)} references, "
            f"{len(candidates)} candidates"
        )
    client, cfg = _resolve(client_or_config, config)
    return [_judge(client, cfg, r, c) for r, c in zip(references, candidates, strict=True)]


def _resolve(
    client_or_config: ChatCompleter | JudgeConfig, config: JudgeConfig | None
) -> tuple[ChatCompleter, JudgeConfig]:
    if isinstance(client_or_config, JudgeConfig):
        if config is not None:
            raise ConfigError("pass the JudgeConfig once: as client_or_config or as config")
        return build_client(client_or_config), client_or_config
    if not callable(getattr(client_or_config, "complete", None)):
        raise TypeError(
            "client_or_config must be a JudgeConfig or a chat client with .complete(), got "
            f"{type(client_or_config).__name__}"
        )
    return client_or_config, config if config is not None else JudgeConfig()


def _judge(client: ChatCompleter, cfg: JudgeConfig, reference: str, candidate: str) -> JudgeResult:
    model = cfg.model or str(getattr(client, "model", ""))
    empty = [
        n for n, text in (("reference", reference), ("candidate", candidate)) if not text.strip()
    ]
    if empty:
        what = "reference and candidate reports are" if len(empty) == 2 else f"{empty[0]} report is"
        reason = f"{what} empty; not judged"
        logger.warning("LLM judge: %s", reason)
        return _summarise([], model, warnings=[reason], missing_reason=reason)
    messages = [
        {"role": "system", "content": system_prompt()},
        {"role": "user", "content": user_prompt(reference, candidate)},
    ]
    samples = [_sample(client, cfg, messages, cfg.seed + i) for i in range(cfg.n_samples)]
    return _summarise(samples, model)


def _sample(
    client: ChatCompleter, cfg: JudgeConfig, messages: list[dict[str, Any]], seed: int
) -> JudgeSample:
    options: dict[str, Any] = {"temperature": cfg.effective_temperature, "seed": seed}
    if cfg.max_tokens is not None:
        options["max_tokens"] = cfg.max_tokens
    if cfg.json_mode:
        options["response_format"] = {"type": "json_object"}
    requests = 0

    def complete(conversation: Sequence[Mapping[str, Any]]) -> str:
        nonlocal requests
        requests += 1
        return client.complete(conversation, **options)

    try:
        reply = ask_json(
            chat=complete,
            messages=messages,
            parse=parse_verdict,
            correction=correction_prompt,
            max_attempts=cfg.max_retries_invalid + 1,
            label=f"LLM judge sample (seed {seed})",
        )
    except NoValidReplyError as e:
        return JudgeSample(
            seed=seed,
            attempts=e.n_attempts,
            error=f"no valid reply after {e.n_attempts} attempt(s); last problem: {e.problem}",
        )
    except LLMError as e:
        logger.warning("LLM judge sample (seed %d): request failed: %s", seed, e)
        return JudgeSample(seed=seed, attempts=requests, error=f"request failed: {e}")
    return JudgeSample(seed=seed, attempts=reply.n_attempts, verdict=reply.value)


def _summarise(
    samples: list[JudgeSample],
    model: str,
    *,
    warnings: Sequence[str] = (),
    missing_reason: str | None = None,
) -> JudgeResult:
    verdicts = [s.verdict for s in samples if s.verdict is not None]
    errors = tuple(f"sample seed={s.seed}: {s.error}" for s in samples if s.error is not None)
    criteria = {}
    for c in CRITERIA:
        values = tuple(v.scores[c.name] for v in verdicts)
        mean, std = _mean_std(values)
        criteria[c.name] = CriterionStats(c.name, c.low, c.high, values, mean, std)
    overall, overall_std = _mean_std([v.normalised for v in verdicts])
    notes = list(warnings)
    if verdicts and errors:
        notes.append(f"{len(errors)} of {len(samples)} judge sample(s) failed; scored on the rest")
    if not verdicts and missing_reason is None:
        last = samples[-1].error if samples else "no sample was requested"
        missing_reason = f"all {len(samples)} judge sample(s) failed; last: {last}"
    return JudgeResult(
        criteria=criteria,
        overall=overall,
        overall_std=overall_std,
        n_requested=len(samples),
        n_ok=len(verdicts),
        n_failed=len(errors),
        reasonings=tuple(v.reasoning for v in verdicts),
        errors=errors,
        warnings=tuple(notes),
        missing_reason=missing_reason,
        model=model,
        samples=tuple(samples),
    )


def _mean_std(values: Sequence[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    array = np.asarray(values, dtype=np.float64)
    return float(np.mean(array)), float(np.std(array))
