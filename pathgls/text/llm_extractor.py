"""Entities (and relations) from a large language model: ``llm:<base_url>#<model>``.

The report is sent to an OpenAI-compatible chat endpoint (:class:`~pathgls.llm.client.ChatClient`)
with our entity types and a JSON reply format; the answer is validated strictly:

* it must be a JSON object with an ``entities`` list (``relations`` optional); every entity has a
  non-empty ``text`` and a ``type`` from :data:`~pathgls.text.base.ENTITY_TYPES`, ``negated`` and
  ``uncertain`` are booleans when present; every relation joins two distinct entity indices with
  a type from :data:`RELATION_TYPES`;
* a reply that breaks these rules is sent back with the reasons, up to ``max_retries`` times
  (:func:`~pathgls.llm.json_chat.ask_json`); after that
  :class:`~pathgls.errors.NoValidReplyError` (an :class:`~pathgls.errors.LLMError`) is raised;
* each entity is then located in the report (:func:`locate`): the first occurrence that does not
  overlap an earlier entity, matched exactly, else ignoring case, else ignoring case and runs of
  whitespace (overlapping occurrences only when there is no other, for nested mentions). The
  entity keeps the report's own spelling, so ``text[e.start:e.end] == e.text`` always holds.
  Entities that cannot be found (paraphrases, hallucinations) or repeat an already-located
  mention are dropped with a warning, and so are the relations that use them.

Requests use temperature 0, a fixed seed and ``response_format={"type": "json_object"}``; a server
that rejects ``response_format`` (HTTP 400/422) is asked again without it (the conversation starts
over), and no longer gets it.
Warnings of the last call are kept in :attr:`LLMExtractor.last_warnings` and logged.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import ahocorasick

from pathgls.errors import AnswerError, ConfigError, LLMError
from pathgls.llm.client import ChatClient
from pathgls.llm.fence import fenced, fences
from pathgls.llm.json_chat import (
    ChatCompleter,
    JSONReply,
    ask_json,
    join_problems,
    load_json_object,
)
from pathgls.text.base import ENTITY_TYPES, register_extractor
from pathgls.text.sections import section_lookup
from pathgls.types import Entity, Relation

logger = logging.getLogger(__name__)

#: Environment variable the ``llm:`` registry entry reads the API key from (optional).
API_KEY_ENV = "PATHGLS_LLM_API_KEY"

#: Relation types the model may use (head → tail), as in :mod:`pathgls.text.relations`.
RELATION_TYPES = ("result_of", "modifier_of", "located_in", "supports", "same_as")

_TYPE_HINTS: dict[str, str] = {
    "anatomical_site": 'organ, tissue or place a specimen or finding comes from ("left breast")',
    "pathological_diagnosis": 'a named disease or diagnosis ("invasive ductal carcinoma")',
    "diagnosis_descriptor": 'words qualifying a diagnosis, if no type below fits ("multifocal")',
    "ihc_marker": 'an immunohistochemical or special stain or marker ("ER", "HER2", "Ki-67")',
    "ihc_modifier": 'the result of a marker ("positive", "3+", "strong diffuse staining")',
    "morphology_finding": 'a microscopic observation ("necrosis", "nuclear pleomorphism")',
    "grade": 'a histologic grade or score ("grade 2", "Gleason score 3 + 4 = 7")',
    "stage": 'a stage or TNM category ("pT2", "N1a", "stage II")',
    "margin": 'a statement on resection margins ("margins are free", "closest margin 2 mm")',
    "lymphovascular_invasion": 'lymphatic or vascular invasion ("lymphovascular invasion")',
    "perineural_invasion": 'invasion along nerves ("perineural invasion")',
    "size": 'a measurement of a tumour or specimen ("2.1 cm")',
    "lymph_node_involvement": 'lymph nodes and their status ("2/14 lymph nodes positive")',
    "metastasis": 'spread to another site ("metastatic carcinoma")',
    "biomarker_result": 'a molecular or other biomarker result ("KRAS mutation", "MSI-high")',
}

_RELATION_HINTS = {
    "result_of": "a result → the marker it is the result of",
    "modifier_of": "a descriptor, grade or size → what it qualifies",
    "located_in": "a diagnosis or finding → the site it is in",
    "supports": "a finding → the diagnosis it supports",
    "same_as": "a later mention → the first mention of the same thing",
}


@dataclass(frozen=True)
class RawEntity:
    """An entity as the model wrote it (not located yet)."""

    text: str
    type: str
    negated: bool = False
    uncertain: bool = False


#: What :func:`parse_answer` returns: the entities and ``(head, tail, type)`` relations.
Answer = tuple[list[RawEntity], list[tuple[int, int, str]]]


def system_prompt() -> str:
    """Instructions and reply format sent as the system message."""
    types = "\n".join(f"  - {t}: {_TYPE_HINTS.get(t, t)}" for t in ENTITY_TYPES)
    relations = "\n".join(f"  - {t}: {_RELATION_HINTS[t]}" for t in RELATION_TYPES)
    return (
        "You find clinical entities in a pathology report and how they relate.\n"
        "Reply with a single JSON object and nothing else, in this form:\n"
        '{"entities": [{"text": "...", "type": "...", "negated": false, "uncertain": false}], '
        '"relations": [{"head": 0, "tail": 1, "type": "..."}]}\n'
        "Rules:\n"
        "- text: copied exactly from the report, a contiguous piece of it; do not rephrase,\n"
        "  correct or expand abbreviations.\n"
        "- List entities in the order they appear; a repeated mention is listed each time.\n"
        f"- type: one of\n{types}\n"
        '- negated: true when the report says it is absent ("no lymphovascular invasion").\n'
        '- uncertain: true when the report hedges ("suspicious for", "cannot exclude").\n'
        "- head and tail: 0-based positions in your entities list; relation type: one of\n"
        f"{relations}\n"
        "- Use empty lists when there is nothing to report."
    )


def user_prompt(report_text: str) -> str:
    """The user message holding the report, between fence lines it cannot contain."""
    return fenced("Pathology report", report_text, fences(report_text))


def parse_answer(content: str) -> Answer:
    """Validate an answer; returns its entities and ``(head, tail, type)`` relations.

    Raises:
        AnswerError: not JSON, or the JSON breaks the schema (all reasons, up to five, listed).
    """
    data = load_json_object(content, error=AnswerError)
    items = data.get("entities")
    if not isinstance(items, list):
        raise AnswerError('the reply has no "entities" list')
    links = data.get("relations", [])
    if not isinstance(links, list):
        raise AnswerError('"relations" must be a list')
    errors: list[str] = []
    entities = [e for i, item in enumerate(items) if (e := _entity(i, item, errors)) is not None]
    found = (_relation(i, item, len(items), errors) for i, item in enumerate(links))
    relations = [r for r in found if r is not None]
    if errors:
        raise AnswerError(join_problems(errors))
    return entities, relations


def _entity(i: int, item: Any, errors: list[str]) -> RawEntity | None:
    if not isinstance(item, dict):
        errors.append(f"entities[{i}] is not an object")
        return None
    text, etype = item.get("text"), item.get("type")
    n = len(errors)
    if not isinstance(text, str) or not text.strip():
        errors.append(f"entities[{i}].text must be a non-empty string")
    if etype not in ENTITY_TYPES:
        errors.append(f"entities[{i}].type {etype!r} is not one of {', '.join(ENTITY_TYPES)}")
    for flag in ("negated", "uncertain"):
        if flag in item and not isinstance(item[flag], bool):
            errors.append(f"entities[{i}].{flag} must be true or false, got {item[flag]!r}")
    if len(errors) > n or not isinstance(text, str) or not isinstance(etype, str):
        return None  # (the str checks only narrow: a non-string is an error above)
    return RawEntity(
        text.strip(), etype, bool(item.get("negated", False)), bool(item.get("uncertain", False))
    )


def _relation(i: int, item: Any, n_entities: int, errors: list[str]) -> tuple[int, int, str] | None:
    if not isinstance(item, dict):
        errors.append(f"relations[{i}] is not an object")
        return None
    head, tail, rtype = item.get("head"), item.get("tail"), item.get("type")
    n = len(errors)
    for name, value in (("head", head), ("tail", tail)):
        if isinstance(value, bool) or not isinstance(value, int):
            errors.append(f"relations[{i}].{name} must be an entity index, got {value!r}")
        elif not 0 <= value < n_entities:
            errors.append(f"relations[{i}].{name} {value} is not in 0..{n_entities - 1}")
    if len(errors) == n and head == tail:
        errors.append(f"relations[{i}] joins entity {head} to itself")
    if rtype not in RELATION_TYPES:
        errors.append(f"relations[{i}].type {rtype!r} is not one of {', '.join(RELATION_TYPES)}")
    if len(errors) > n:
        return None
    return int(head), int(tail), str(rtype)  # type: ignore[arg-type]


def locate(text: str, needle: str, used: set[tuple[int, int]]) -> tuple[int, int] | None:
    """Span of the first free occurrence of ``needle`` in ``text``, or None.

    Matching is tried exactly, then ignoring case, then ignoring case with any run of
    whitespace matching any other. An occurrence overlapping a ``used`` span is taken only when
    there is no free one (a nested mention: "breast" after "left breast"), and one equal to a
    ``used`` span never. (One needle; :class:`_Locator` places a whole answer at once.)
    """
    finder = _Locator(text, [needle])
    for span in sorted(used):
        finder.take(span)
    return finder.find(needle)


def _occurrences(haystack: str, needles: set[str]) -> dict[str, list[int]]:
    """Every start of every needle in ``haystack`` (overlapping ones too), in order: one
    Aho-Corasick pass, linear in the haystack, the needles and the matches."""
    found: dict[str, list[int]] = {}
    if not needles:
        return found
    automaton = ahocorasick.Automaton()
    for needle in needles:
        automaton.add_word(needle, needle)
    automaton.make_automaton()
    for end, needle in automaton.iter(haystack):
        found.setdefault(needle, []).append(end - len(needle) + 1)
    return found


def _non_overlapping(starts: list[int], length: int) -> list[int]:
    """The starts a left-to-right scan keeps (as ``re.finditer`` does)."""
    kept: list[int] = []
    for s in starts:
        if not kept or s >= kept[-1] + length:
            kept.append(s)
    return kept


class _Locator:
    """Places the mentions of one report: :meth:`find` then :meth:`take` per entity.

    Every candidate span of every needle of the answer is found up front in three
    Aho-Corasick passes (exactly; ignoring case; ignoring case and whitespace runs), in the
    order :func:`locate` tries them. A candidate that is taken or overlaps a taken span never
    becomes free again, and one equal to a taken span never becomes usable again, so each
    needle's two cursors only move forward; taken characters are marked in a byte array, so an
    overlap test costs the span's length. Placing ``n`` mentions is linear in the report, the
    answer and the matches (6,000 mentions: milliseconds; re-scanning the report for each
    mention was quadratic: 130 s).
    """

    def __init__(self, text: str, needles: Iterable[str]) -> None:
        distinct = {n for n in needles if n}
        self._spans: dict[str, list[tuple[int, int]]] = {n: [] for n in distinct}
        for needle, starts in _occurrences(text, distinct).items():
            self._spans[needle] += [(s, s + len(needle)) for s in starts]
        self._case_blind(text, distinct)
        self._space_blind(text, distinct)
        self._free_at = dict.fromkeys(distinct, 0)  # first candidate that may still be free
        self._usable_at = dict.fromkeys(distinct, 0)  # first that may still be unused
        self._taken = bytearray(len(text))
        self._used: set[tuple[int, int]] = set()

    def _case_blind(self, text: str, needles: set[str]) -> None:
        lowered = text.lower()
        if len(lowered) != len(text):  # a character whose lower case is longer: use regex
            for n in needles:
                self._spans[n] += [m.span() for m in re.finditer(re.escape(n), text, re.I)]
            return
        by_lower: dict[str, list[str]] = {}
        for n in needles:
            if len(n.lower()) == len(n):
                by_lower.setdefault(n.lower(), []).append(n)
            else:
                self._spans[n] += [m.span() for m in re.finditer(re.escape(n), text, re.I)]
        for low, starts in _occurrences(lowered, set(by_lower)).items():
            spans = [(s, s + len(low)) for s in _non_overlapping(starts, len(low))]
            for n in by_lower[low]:
                self._spans[n] += spans

    def _space_blind(self, text: str, needles: set[str]) -> None:
        spaced = {n for n in needles if len(n.split()) > 1}
        if not spaced:
            return  # without whitespace the pass above found every candidate already
        lowered = text.lower()
        if len(lowered) != len(text):
            for n in spaced:
                pattern = r"\s+".join(re.escape(w) for w in n.split())
                self._spans[n] += [m.span() for m in re.finditer(pattern, text, re.I)]
            return
        # the text with each whitespace run as one space; where each of its characters was
        pieces, origin, pos = list[str](), list[int](), 0
        for m in re.finditer(r"\s+", lowered):
            pieces.append(lowered[pos : m.start()])
            origin.extend(range(pos, m.start()))
            pieces.append(" ")
            origin.append(m.start())
            pos = m.end()
        pieces.append(lowered[pos:])
        origin.extend(range(pos, len(lowered)))
        collapsed = "".join(pieces)
        by_key: dict[str, list[str]] = {}
        for n in spaced:
            by_key.setdefault(" ".join(n.lower().split()), []).append(n)
        for key, starts in _occurrences(collapsed, set(by_key)).items():
            spans = [
                (origin[s], origin[s + len(key) - 1] + 1)
                for s in _non_overlapping(starts, len(key))
            ]
            for n in by_key[key]:
                self._spans[n] += spans

    def _free(self, span: tuple[int, int]) -> bool:
        return span not in self._used and self._taken.find(1, span[0], span[1]) < 0

    def find(self, needle: str) -> tuple[int, int] | None:
        """The first free candidate of ``needle``, else its first unused one, else None."""
        spans = self._spans.get(needle, [])
        i = self._free_at.get(needle, 0)
        while i < len(spans) and not self._free(spans[i]):
            i += 1
        self._free_at[needle] = i
        if i < len(spans):
            return spans[i]
        j = self._usable_at.get(needle, 0)
        while j < len(spans) and spans[j] in self._used:
            j += 1
        self._usable_at[needle] = j
        return spans[j] if j < len(spans) else None

    def exists(self, needle: str) -> bool:
        """Whether ``needle`` occurs at all (taken or not)."""
        return bool(self._spans.get(needle))

    def take(self, span: tuple[int, int]) -> None:
        """Mark ``span`` as a placed mention."""
        self._used.add(span)
        self._taken[span[0] : span[1]] = b"\x01" * (span[1] - span[0])


@dataclass
class LLMExtractor:
    """Entity extractor asking a chat model for JSON (see the module docstring).

    Args:
        client: A :class:`~pathgls.llm.client.ChatClient` (or anything with its ``complete``).
        name: Name reported in results.
        max_retries: How often an invalid answer is sent back for correction.
        seed: Sampling seed sent with each request (None: none sent).
        json_mode: Ask for ``response_format={"type": "json_object"}``.
        max_tokens: Longest answer (None: the server's default).
    """

    client: ChatCompleter
    name: str = "llm"
    max_retries: int = 3
    seed: int | None = 0
    json_mode: bool = True
    max_tokens: int | None = None
    last_warnings: list[str] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ConfigError(f"max_retries must be at least 0, got {self.max_retries}")

    def extract(self, report_text: str) -> list[Entity]:
        """Entities of ``report_text`` (offsets into it), sorted by position."""
        return self.extract_with_relations(report_text)[0]

    def extract_with_relations(self, report_text: str) -> tuple[list[Entity], list[Relation]]:
        """Entities sorted by position, and the model's relations as indices into them.

        Raises:
            NoValidReplyError: no valid answer came within ``max_retries`` corrections (an
                :class:`LLMError` naming the last problem, with every reply).
            LLMError: the endpoint failed.
        """
        self.last_warnings = []
        if not report_text.strip():
            return [], []
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system_prompt()},
            {"role": "user", "content": user_prompt(report_text)},
        ]
        try:
            reply = self._ask(messages)
        except LLMError as e:
            if not self.json_mode or e.status not in (400, 422):
                raise
            logger.warning(
                "%s: the server rejected response_format (%s); asking without it", self.name, e
            )
            self.json_mode = False
            reply = self._ask(messages)
        raw_entities, raw_relations = reply.value
        return self._finish(report_text, raw_entities, raw_relations)

    def _ask(self, messages: Sequence[Mapping[str, Any]]) -> JSONReply[Answer]:
        options: dict[str, Any] = {"temperature": 0.0, "seed": self.seed}
        if self.max_tokens is not None:
            options["max_tokens"] = self.max_tokens
        if self.json_mode:
            options["response_format"] = {"type": "json_object"}
        return ask_json(
            chat=self.client,
            messages=messages,
            parse=parse_answer,
            correction=_correction,
            max_attempts=self.max_retries + 1,
            options=options,
            label=self.name,
        )

    def _finish(
        self,
        text: str,
        raw_entities: list[RawEntity],
        raw_relations: list[tuple[int, int, str]],
    ) -> tuple[list[Entity], list[Relation]]:
        section_at = section_lookup(text)
        finder = _Locator(text, (raw.text for raw in raw_entities))
        located: dict[int, Entity] = {}
        for i, raw in enumerate(raw_entities):
            span = finder.find(raw.text)
            if span is None:
                taken = finder.exists(raw.text)
                why = "every occurrence is already taken" if taken else "it is not in the report"
                self._warn(f"entity {raw.text!r} ({raw.type}) dropped: {why}")
                continue
            finder.take(span)
            start, end = span
            located[i] = Entity(
                text=text[start:end],
                type=raw.type,
                start=start,
                end=end,
                section=section_at(start),
                negated=raw.negated,
                uncertain=raw.uncertain,
            )
        order = sorted(located, key=lambda i: (located[i].start, located[i].end, i))
        new_index = {old: new for new, old in enumerate(order)}
        relations: set[Relation] = set()
        for head, tail, rtype in raw_relations:
            if head not in new_index or tail not in new_index:
                self._warn(f"relation {head} -{rtype}-> {tail} dropped: an entity was dropped")
                continue
            relations.add(Relation(new_index[head], new_index[tail], rtype))
        entities = [located[i] for i in order]
        return entities, sorted(relations, key=lambda r: (r.head, r.tail, r.type))

    def _warn(self, message: str) -> None:
        self.last_warnings.append(message)
        logger.warning("%s: %s", self.name, message)


def _correction(problem: str) -> str:
    return (
        f"Your reply could not be used: {problem}. "
        "Reply again with only the corrected JSON object, following the rules above."
    )


@register_extractor(
    "llm",
    description="an OpenAI-compatible chat endpoint asked for entities and relations as JSON "
    f"(API key, if any, from ${API_KEY_ENV})",
    argument="<base_url>#<model>",
)
def build_llm_extractor(argument: str) -> LLMExtractor:
    """``llm:<base_url>#<model>`` → an :class:`LLMExtractor` (nothing is contacted here).

    Raises:
        ConfigError: the argument is not ``<base_url>#<model>``.
    """
    base_url, sep, model = argument.rpartition("#")
    if not sep or not base_url.strip() or not model.strip():
        raise ConfigError(
            f"llm extractor needs llm:<base_url>#<model> (e.g. llm:http://localhost:8000/v1#"
            f"qwen2.5-7b-instruct), got llm:{argument}"
        )
    client = ChatClient(base_url, model, api_key_env=API_KEY_ENV)
    return LLMExtractor(client=client, name=f"llm:{argument}")
