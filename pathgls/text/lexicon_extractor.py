"""The default, offline entity extractor: the pathology lexicon + medspaCy ConText.

How :meth:`LexiconExtractor.extract` reads a report:

1. :func:`~pathgls.text.sections.parse_report` cleans it and splits sections and sentences; all
   offsets refer to the cleaned text. One spaCy ``Doc`` is made of the whole text (the
   ``spacy.blank("en")`` tokenizer, also splitting ``/ + = ( ) ×`` and hyphens between letters or
   digits) with sentence boundaries set from the parse (text between sentences, such as headings,
   forms sentences of its own).
2. medspaCy's ``TargetMatcher`` finds the lexicon's surface forms (case-insensitive, except forms
   written ``=ER``); the regex rules of ``patterns.tsv`` find numeric and pattern forms (Gleason,
   grade numbers, TNM, stage, sizes, node counts, mitotic counts, IHC signs and scores) and derive
   attributes from them. Overlaps: the longest match wins (lexicon terms before regex rules on
   ties); a match across a sentence boundary is dropped.
3. IHC results are bound to markers in the same sentence: "ER-positive", "HER2 (score 2+)",
   "positive for WT1", "negative progesterone receptors and HER2", "ER, PR and HER2 are negative",
   "ER+/PR-". A bound marker gets ``result`` (and ``score``, ``intensity``, ``distribution``), the
   result gets ``marker``; "Ki-67 20%" gives ``percent`` (ER/PR/AR: ``result`` from ≥ 1%). HER2
   scores read 0/1+ negative, 2+ equivocal, 3+ positive. A stain-result word bound to no marker
   ("lymph nodes negative for metastasis") is dropped unless its sentence is in an "ihc" section;
   signs and scores are always dropped when unbound. Molecular results (``biomarker_result``)
   are always kept.
4. medspaCy ConText — its default English rules less :data:`DROPPED_DEFAULT_CONTEXT_RULES`, plus
   the pathology rules of ``context_rules.json`` — marks negation and uncertainty; modifiers that
   overlap a kept entity are pruned ("negative" bound to CK7 in "negative for CK7" negates
   nothing). A backward modifier ("... was not identified") reaches at most
   :data:`MAX_BACKWARD_TOKENS` tokens back, and not across a comma to a diagnosis.
   NEGATED_EXISTENCE → ``negated``; POSSIBLE_EXISTENCE and HYPOTHETICAL → ``uncertain`` (the
   latter also ``hypothetical=yes``); HISTORICAL / FAMILY → ``historical=yes`` / ``family=yes``.
   "consistent with", "compatible with", "in keeping with" are affirmative: pathologists sign out
   diagnoses with them, so they are no rule.
5. Negation by type: only :data:`NEGATABLE_TYPES` keep ``negated`` (never markers, sites, sizes,
   stages, node counts); a negated margin reads ``result=negative``; a stain result negated right
   before it ("does not express") is inverted. Margins take ``result`` from status words in their
   clause ("margins are negative", "clear of", "uninvolved", "extending to the inked margin");
   "close", "narrow", "within 2 mm" give ``status=close`` and no result.
6. "invasive", "infiltrating", "muscle-invasive", "non-invasive" and "metastatic" before a
   diagnosis in the same clause add ``invasive=yes;depends_on=invasion``, ``invasive=no`` or
   ``depends_on=metastasis`` to it; sites get ``laterality`` (left/right/bilateral) from a side
   word just before or after them.
7. Template placeholders in square brackets ("[Insert diagnosis, e.g. ...]") assert nothing:
   entities inside them are dropped; examples after "e.g." are HYPOTHETICAL.

Long reports are read in blocks of whole sentences (:data:`BLOCK_CHARS`), so the time stays
linear in the length of the report.
"""

from __future__ import annotations

import bisect
import functools
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pathgls.text.base import ParsedReport, register_extractor
from pathgls.text.lexicon import (
    DEFAULT_LEXICON_DIR,
    Lexicon,
    LexiconError,
    load_lexicon,
)
from pathgls.text.lexicon_derive import derive_attributes
from pathgls.text.sections import parse_report
from pathgls.types import Entity

#: Pathology ConText rules shipped with pathgls (medspaCy ConTextRule JSON).
DEFAULT_CONTEXT_RULES = DEFAULT_LEXICON_DIR / "context_rules.json"
#: medspaCy default rules left out: in pathology "X was negative" reports a stain result,
#: "evaluate for" / "to exclude" say what was looked for (re-added as HYPOTHETICAL), and ": no"
#: reads "Bladder: no invasive carcinoma" as denying the bladder (re-added for "LVI: no.").
DROPPED_DEFAULT_CONTEXT_RULES = frozenset(
    {"was negative", "negative on", "has been negative", "evaluate for", "test for"}
    | {"checked for", "to exclude", "any other", "return", "ro", ": no"}
)
#: Types whose ConText negation is kept as ``negated``.
NEGATABLE_TYPES = frozenset(
    {"pathological_diagnosis", "diagnosis_descriptor", "morphology_finding", "grade"}
    | {"lymphovascular_invasion", "perineural_invasion", "metastasis"}
)
#: Types never marked uncertain.
NEVER_UNCERTAIN = frozenset({"anatomical_site", "size", "ihc_marker"})
#: How far back a BACKWARD ConText modifier may reach, in tokens.
MAX_BACKWARD_TOKENS = 8
#: Long reports are read in blocks of whole sentences of about this many characters (ConText
#: compares every entity with every modifier of a Doc).
BLOCK_CHARS = 3000

_RESULT_TYPES = frozenset({"ihc_modifier", "biomarker_result"})
_SCORE_DERIVES = frozenset({"ihc_sign", "ihc_score"})
_FLAGS = {
    "NEGATED_EXISTENCE": "negated",
    "POSSIBLE_EXISTENCE": "uncertain",
    "HYPOTHETICAL": "hypothetical",
    "HISTORICAL": "historical",
    "FAMILY": "family",
}
_STRICT_GAP = re.compile(
    r"(?:[\s:\-–(]|\b(?:is|are|was|were|shows?|showed|scored?|staining|stains?|expression|status"
    r"|protein|by|ihc|immunoreactivity|immunostain(?:ing)?|immunohistochemistry"
    r"|immunohistochemical|receptors?|result)\b)*$",
    re.I,
)
_SIGN_GAP = re.compile(
    r"\s?\(?\s*(?:(?:score|ihc|intensity|immunohistochemistry|immunostain(?:ing)?|staining)"
    r"\s*(?:of|is|was|:)?\s*)?:?\s*$",
    re.I,
)
_LIST_GAP = re.compile(
    r"(?:[\s,/()&\-]|\b(?:and|or|for|of|in|on|with|to|the|both|as|well|focally|diffusely|strongly"
    r"|weakly|patchy|markers?|stains?|immunostains?|antibod(?:y|ies)|are|is|were|was|anti|show|shows"
    r"|showed|demonstrate|demonstrates|demonstrated|exhibit|exhibits|reveal|reveals)\b)*$",
    re.I,
)
_FORWARD_NEXT = re.compile(r"\s*(?:for|of)\b", re.I)  # "positive in/on the cells": not
_FORWARD_WORDS = ("expresses", "express", "expressing", "of", "for")
_PERCENT = re.compile(
    r"\s*[:(\-]?\s*(?:(?:labeling|labelling|proliferation|proliferative)\s+)?(?:index|expression|"
    r"staining|positivity|score)?\s*(?:of|:|=|-|is|was|in|approx\.?|approximately|about|~)?\s*"
    r"(\d{1,3}(?:\.\d+)?)\s*%"
)
_PERCENT_RESULT = frozenset({"estrogen receptor", "progesterone receptor", "androgen receptor"})
_ADVERB = re.compile(r"\b(focally|diffusely|patchily|weakly|moderately|strongly)\s+$", re.I)
_ADVERBS = {
    "focally": ("distribution", "focal"),
    "diffusely": ("distribution", "diffuse"),
    "patchily": ("distribution", "patchy"),
    "weakly": ("intensity", "weak"),
    "moderately": ("intensity", "moderate"),
    "strongly": ("intensity", "strong"),
}
_PLACEHOLDER = re.compile(r"\[[^\[\]\n]{1,400}\]")  # "[Insert diagnosis, e.g. ...]"
_CLAUSE_BREAK = re.compile(r";|\b(?:but|however|while|whereas|though|although|except)\b", re.I)
_MARGIN_CUES = re.compile(
    r"(?P<close>\bclose\b|\bnarrow\b|\bwithin\s+\d|\bapproach(?:es|ing)?\b|<\s*\d"
    r"|\bextend(?:s|ing)?\s+to\s+within\b)"
    r"|(?P<neg>\bnot\s+involv(?:ed|ing)\b|\buninvolved\b|\bfree\b|\bclear\b(?!\s+cell)|\bclean\b"
    r"|\bnormal\b|\bunremarkable\b"
    r"|\bnegative\b|\b(?:no|without)\s+(?:evidence\s+of\s+)?(?:residual\s+)?(?:tumou?r|carcinoma"
    r"|malignancy|neoplasia|dysplasia|invasive|lesion|involvement)|\bR0\b)"
    r"|(?P<pos>\binvolv(?:ed|ing|ement)\b|\bpositive\b|\bextend(?:s|ing)?\s+(?:in)?to\b"
    r"|\b(?:tumou?r|carcinoma)\s+(?:is\s+)?(?:present\s+)?(?:at|on)\b"
    r"|\btransected\b|\bR[12]\b|\breach(?:es|ed|ing)?\b|\babut(?:s|ted|ting)?\b"
    r"|\btouch(?:es|ed|ing)?\b)",
    re.I,
)
_SIDE_BEFORE = re.compile(r"\b(left|right|bilateral|both)\s+(?:[a-z]+\s+)?$", re.I)
_SIDE_AFTER = re.compile(r"\s*,?\s*(left|right)\b", re.I)
_SIDE_INSIDE = re.compile(r"\b(left|right|bilateral)\b", re.I)
_PROPAGATE = {
    "invasive": {"invasive": "yes", "depends_on": "invasion"},
    "infiltrating": {"invasive": "yes", "depends_on": "invasion"},
    "muscle-invasive": {"invasive": "yes", "depends_on": "invasion"},
    "non-invasive": {"invasive": "no"},
    "metastatic": {"depends_on": "metastasis"},
}
_PROPAGATE_STOP = re.compile(
    r"[.;:]|\b(?:with|without|from|arising|was|were|is|are|shows?|and\s+no|in\s+the)\b", re.I
)


@dataclass(eq=False)
class _Cand:
    """A candidate entity while the report is read."""

    span: Any  # spaCy Span
    offset: int  # of the span's Doc in the report text
    type: str
    concept: str
    attributes: dict[str, str]
    derive: str | None = None
    sentence: int = -1
    negated: bool = False
    uncertain: bool = False
    context_negated: bool = False
    negator_distance: int = 1_000_000
    markers: list[_Cand] = field(default_factory=list)  # markers a result is bound to

    @property
    def start(self) -> int:
        return self.offset + self.span.start_char

    @property
    def end(self) -> int:
        return self.offset + self.span.end_char


class LexiconExtractor:
    """Entities from the pathology lexicon, with negation and uncertainty from ConText.

    One spaCy pipeline is built per instance (about a second); :meth:`extract` runs it under a
    lock, so an instance can be shared by the threads of a process.

    Args:
        lexicon: The lexicon (default: the one shipped with pathgls).
        context_rules: ConText rule files (medspaCy JSON) added to the defaults; by default the
            pathology rules shipped with pathgls, ``()`` for none.
        medspacy_defaults: Whether to start from medspaCy's default English ConText rules.
    """

    name = "lexicon"

    def __init__(
        self,
        lexicon: Lexicon | None = None,
        *,
        context_rules: Sequence[str | Path] = (DEFAULT_CONTEXT_RULES,),
        medspacy_defaults: bool = True,
    ) -> None:
        self.lexicon = lexicon if lexicon is not None else load_lexicon()
        self._lock = threading.Lock()
        self._nlp, self._matcher, self._context = _build_pipeline(
            self.lexicon, [Path(p) for p in context_rules], medspacy_defaults
        )

    def extract(self, report_text: str) -> list[Entity]:
        """Entities of ``report_text``, offsets into its cleaned text (see the module docs)."""
        return self.extract_parsed(parse_report(report_text))

    def extract_parsed(self, parsed: ParsedReport) -> list[Entity]:
        """Entities of a report already parsed (:func:`~pathgls.text.sections.parse_report`).

        :func:`~pathgls.text.analyze.analyze_report` calls this with its own parse, so a report
        is split into sections once; ``extract(parsed.text)`` gives the same entities (cleaning
        and parsing are idempotent: the 1,820 TCGA reports parse to the same sections and
        sentences twice).
        """
        text = parsed.text
        sentences = [(s.start, s.end) for s in parsed.sentences]
        sections = [s.section for s in parsed.sentences]
        cands: list[_Cand] = []
        with self._lock:
            for lo, hi in _blocks(len(text), sentences):
                cands += self._read_block(text, lo, hi, sentences, sections)
        by_sentence: dict[int, list[_Cand]] = {}
        for c in cands:
            by_sentence.setdefault(c.sentence, []).append(c)
        starts = [s for s, _ in sentences]
        for c in cands:
            _finish(text, c, by_sentence[c.sentence], sentences, starts)
        placeholders = [m.span() for m in _PLACEHOLDER.finditer(text)]
        cands = [c for c in cands if not _inside(c.start, c.end, placeholders)]
        return [
            Entity(
                text=text[c.start : c.end],
                type=c.type,
                start=c.start,
                end=c.end,
                section=sections[c.sentence] if c.sentence >= 0 else parsed.section_at(c.start),
                negated=c.negated,
                uncertain=c.uncertain,
                confidence=1.0,
                concept=c.concept,
                attributes=dict(c.attributes),
            )
            for c in cands
        ]

    def _read_block(
        self,
        text: str,
        lo: int,
        hi: int,
        sentences: list[tuple[int, int]],
        sections: list[str],
    ) -> list[_Cand]:
        """Candidates of ``text[lo:hi]`` (whole sentences), bound and put through ConText."""
        doc = self._nlp.make_doc(text[lo:hi])
        if not len(doc):
            return []
        sent_of = _set_sentences(doc, sentences, lo)
        cands = _bind_results(text, self._candidates(doc, sent_of, lo), sections)
        doc.ents = [c.span for c in cands]
        self._context(doc)
        for c in cands:
            _apply_context(c)
        return cands

    def _candidates(self, doc: Any, sent_of: list[int], offset: int) -> list[_Cand]:
        from spacy.util import filter_spans

        spans = list(self._matcher(doc))
        matches: dict[int, tuple[int, re.Match[str]]] = {}  # id(span) → pattern rule, match
        for index, rule in enumerate(self.lexicon.patterns):
            for m in rule.regex.finditer(doc.text):
                s, e = m.span("span") if "span" in rule.regex.groupindex else m.span()
                span = doc.char_span(s, e, label=rule.type, alignment_mode="expand")
                if span is not None and len(span):
                    matches[id(span)] = (index, m)
                    spans.append(span)
        out = []
        # a match across a sentence boundary is dropped before overlaps are resolved, so it
        # never hides a shorter match inside one sentence ("Lymph node summary: 0/31 nodes")
        spans = [s for s in spans if sent_of[s.start] == sent_of[s.end - 1]]
        for span in sorted(filter_spans(spans), key=lambda s: s.start):
            if id(span) not in matches:
                term = self.lexicon.terms[span._.target_rule.metadata["term"]]
                cand = _Cand(span, offset, term.type, term.concept, dict(term.attributes))
            else:
                index, match = matches[id(span)]
                rule = self.lexicon.patterns[index]
                derived = derive_attributes(rule.derive, match)
                if derived is None:
                    continue  # the match makes no sense ("5 of 3 lymph nodes")
                attrs = {**rule.attributes, **derived}
                cand = _Cand(span, offset, rule.type, rule.concept, attrs, derive=rule.derive)
            cand.sentence = sent_of[span.start]
            out.append(cand)
        return out


def _build_pipeline(
    lexicon: Lexicon, context_rules: list[Path], medspacy_defaults: bool
) -> tuple[Any, Any, Any]:
    import medspacy  # noqa: F401  (registers the medspaCy factories)
    import spacy
    from medspacy.context import ConTextRule
    from medspacy.target_matcher import TargetRule
    from spacy.util import compile_infix_regex, compile_suffix_regex

    # Any: spaCy types Defaults.infixes as optional and the tokenizer and pipes as callables;
    # this builder configures the concrete Tokenizer, TargetMatcher and ConText objects
    nlp: Any = spacy.blank("en")
    infixes = [*nlp.Defaults.infixes, r"[/+=()\[\]×]", r"(?<=[A-Za-z0-9])[-–−](?=[A-Za-z0-9/)])"]
    nlp.tokenizer.infix_finditer = compile_infix_regex(infixes).finditer
    suffixes = [*nlp.Defaults.suffixes, r"[+\-−]", r"(?<=[A-Z])\."]  # "MSI-H." ends in "."
    nlp.tokenizer.suffix_search = compile_suffix_regex(suffixes).search
    matcher = nlp.add_pipe("medspacy_target_matcher", config={"result_type": None})
    rules = []
    for i, term in enumerate(lexicon.terms):
        for form in term.forms:
            rules.append(TargetRule(form, term.type, metadata={"term": i}))
        for form in term.exact_forms:
            pattern = [{"TEXT": t.text} for t in nlp.make_doc(form)]
            rules.append(TargetRule(form, term.type, pattern=pattern, metadata={"term": i}))
    context = nlp.add_pipe(
        "medspacy_context",
        config={"rules": None, "span_attrs": None, "prune_on_target_overlap": True},
    )
    ctx_rules = []
    if medspacy_defaults:
        defaults = ConTextRule.from_json(context.DEFAULT_RULES_FILEPATH)
        ctx_rules += [r for r in defaults if r.literal not in DROPPED_DEFAULT_CONTEXT_RULES]
    for path in context_rules:
        try:
            ctx_rules += ConTextRule.from_json(path)
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise LexiconError(f"cannot load ConText rules from {path}: {e}") from e
    with nlp.select_pipes(disable=nlp.pipe_names):  # rules are tokenized by nlp(...)
        matcher.add(rules)
        context.add(ctx_rules)
    return nlp, matcher, context


def _blocks(n: int, sentences: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Cut ``[0, n)`` at sentence starts into blocks of about :data:`BLOCK_CHARS`."""
    cuts = [0]
    for start, _ in sentences:
        if start - cuts[-1] >= BLOCK_CHARS:
            cuts.append(start)
    return list(zip(cuts, [*cuts[1:], n], strict=True))


def _set_sentences(doc: Any, sentences: list[tuple[int, int]], offset: int) -> list[int]:
    """Set sentence starts from char spans; returns each token's sentence index (< 0 between)."""
    import numpy as np
    from spacy.attrs import SENT_START

    starts = [s for s, _ in sentences]
    sent_of: list[int] = []
    flags = np.empty((len(doc), 1), dtype=np.int64)
    for tok in doc:
        idx = tok.idx + offset
        k = bisect.bisect_right(starts, idx) - 1
        sid = k if k >= 0 and idx < sentences[k][1] else -(k + 2)
        flags[tok.i, 0] = 1 if tok.i == 0 or sid != sent_of[-1] else -1
        sent_of.append(sid)
    doc.from_array([SENT_START], flags.astype(np.uint64))
    return sent_of


def _masked(text: str, start: int, end: int, cands: list[_Cand]) -> str:
    """``text[start:end]`` with the markers inside it blanked out."""
    chars = list(text[start:end])
    for c in cands:
        if c.type == "ihc_marker" and start <= c.start and c.end <= end:
            chars[c.start - start : c.end - start] = " " * (c.end - c.start)
    return "".join(chars)


def _bind_results(text: str, cands: list[_Cand], sections: list[str]) -> list[_Cand]:
    """Bind IHC results to their markers (see the module docs); drop unbound stain results."""
    by_sentence: dict[int, list[_Cand]] = {}
    for c in cands:
        by_sentence.setdefault(c.sentence, []).append(c)
    for members in by_sentence.values():
        markers = [c for c in members if c.type == "ihc_marker"]
        results = [c for c in members if c.type in _RESULT_TYPES]
        for m in markers:
            r = _result_for(text, m, results, members)
            end = m.end
            if r is not None:
                _bind(text, m, r)
                if r.start >= m.end:
                    end = r.end
                    score = next((s for s in results if s.start >= r.end), None)
                    if (
                        score is not None
                        and score.derive in _SCORE_DERIVES
                        and _SIGN_GAP.match(text[r.end : score.start])
                    ):
                        _bind(text, m, score)  # "HER2 negative (1+)"
                        end = score.end
            p = _PERCENT.match(text, end)
            if p is not None:
                m.attributes["percent"] = p.group(1)
                if r is None and m.concept in _PERCENT_RESULT:
                    m.attributes["result"] = "positive" if float(p.group(1)) >= 1 else "negative"
    kept = []
    for c in cands:
        if c.type in _RESULT_TYPES and not c.markers:
            in_ihc = c.sentence >= 0 and sections[c.sentence] == "ihc"
            if c.derive in _SCORE_DERIVES or (c.type == "ihc_modifier" and not in_ihc):
                continue
        kept.append(c)
    return kept


def _result_for(text: str, m: _Cand, results: list[_Cand], members: list[_Cand]) -> _Cand | None:
    after = [r for r in results if r.start >= m.end]
    before = [r for r in results if r.end <= m.start]
    nxt = after[0] if after else None
    if nxt is not None:
        gap = text[m.end : nxt.start]
        if nxt.derive in _SCORE_DERIVES:
            if _SIGN_GAP.match(gap):
                return nxt
        elif not _forward(text, nxt) and _STRICT_GAP.match(gap):
            return nxt
    for r in reversed(before):
        if r.derive in _SCORE_DERIVES:
            continue
        governs = _forward(text, r) or _prefix(text, r, members)
        if governs and _LIST_GAP.match(_masked(text, r.end, m.start, members)):
            return r
        break
    for r in after:
        if r.derive not in _SCORE_DERIVES and not _forward(text, r):
            return r if _LIST_GAP.match(_masked(text, m.end, r.start, members)) else None
    return None


def _forward(text: str, r: _Cand) -> bool:
    """A result that governs the markers after it ("positive for", "expresses")."""
    last = text[r.start : r.end].lower().split()[-1]
    return last in _FORWARD_WORDS or bool(_FORWARD_NEXT.match(text, r.end))


def _prefix(text: str, r: _Cand, members: list[_Cand]) -> bool:
    """A result written right before a marker ("negative progesterone receptors")."""
    nxt = [c for c in members if c.start >= r.end and c.type == "ihc_marker"]
    return bool(nxt) and not text[r.end : nxt[0].start].strip()


def _bind(text: str, m: _Cand, r: _Cand) -> None:
    r.markers.append(m)
    r.attributes["marker"] = ",".join(x.concept for x in r.markers)
    if m.concept == "her2" and r.derive == "ihc_score":
        score = r.attributes["score"]
        r.attributes["result"] = {"0": "negative", "1+": "negative", "2+": "equivocal"}.get(
            score, "positive"
        )
    for key in ("result", "score", "intensity", "distribution"):
        if key in r.attributes:
            m.attributes[key] = r.attributes[key]
    adverb = _ADVERB.search(text, max(0, m.start - 16), m.start)
    if adverb is not None:  # "diffusely expresses TTF-1 and focally synaptophysin"
        key, value = _ADVERBS[adverb.group(1).lower()]
        m.attributes[key] = value


def _apply_context(c: _Cand) -> None:
    """Negation, uncertainty and context attributes from the ConText modifiers of ``c``."""
    span = c.span
    for mod in span._.modifiers:
        flag = _FLAGS.get(mod.category)
        types = (mod.rule.metadata or {}).get("types")
        if flag is None or (types is not None and c.type not in types):
            continue
        m_start, m_end = mod.modifier_span
        if mod.direction == "BACKWARD" and m_start >= span.end:
            between = span.doc[span.end : m_start]
            if len(between) > MAX_BACKWARD_TOKENS or (
                c.type == "pathological_diagnosis" and any(t.text == "," for t in between)
            ):
                continue
        if flag == "negated":
            c.context_negated = True
            distance = max(span.start - m_end, m_start - span.end, 0)
            c.negator_distance = min(c.negator_distance, distance)
        elif c.type in NEVER_UNCERTAIN:
            continue
        elif flag in ("uncertain", "hypothetical"):
            c.uncertain = True
            if flag == "hypothetical":
                c.attributes["hypothetical"] = "yes"
        else:
            c.attributes[flag] = "yes"
    c.negated = c.context_negated and c.type in NEGATABLE_TYPES


def _finish(
    text: str,
    c: _Cand,
    members: list[_Cand],
    sentences: list[tuple[int, int]],
    starts: list[int],
) -> None:
    """Type-specific attributes after ConText: inverted results, margins, sides, propagation."""
    if c.type in _RESULT_TYPES and c.context_negated and c.negator_distance <= 2:
        flipped = {"positive": "negative", "negative": "positive"}.get(
            c.attributes.get("result") or ""
        )
        if flipped:
            c.attributes["result"] = flipped
            for m in c.markers:
                m.attributes["result"] = flipped
    elif c.type == "margin":
        _margin_result(text, c, sentences, starts)
    elif c.type == "anatomical_site":
        side = _SIDE_INSIDE.search(text, c.start, c.end) or _SIDE_BEFORE.search(
            text[max(0, c.start - 25) : c.start]
        )
        side = side or _SIDE_AFTER.match(text, c.end)
        if side:
            word = side.group(1).lower()
            c.attributes["laterality"] = "bilateral" if word == "both" else word
    elif c.type == "diagnosis_descriptor" and c.concept in _PROPAGATE and not c.negated:
        _propagate(text, c, members)


def _clause(
    text: str, c: _Cand, sentences: list[tuple[int, int]], starts: list[int]
) -> tuple[int, int]:
    k = bisect.bisect_right(starts, c.start) - 1
    lo, hi = sentences[k] if k >= 0 and c.start < sentences[k][1] else (0, len(text))
    for b in _CLAUSE_BREAK.finditer(text, lo, hi):
        if b.end() <= c.start:
            lo = b.end()
        elif b.start() >= c.end:
            hi = b.start()
            break
    return lo, hi


def _margin_result(
    text: str, c: _Cand, sentences: list[tuple[int, int]], starts: list[int]
) -> None:
    if "result" not in c.attributes:
        lo, hi = _clause(text, c, sentences, starts)
        best: tuple[int, str] | None = None
        placeholders = [m.span() for m in _PLACEHOLDER.finditer(text, lo, hi)]
        for cue in _MARGIN_CUES.finditer(text, lo, hi):
            if _inside(cue.start(), cue.end(), placeholders):
                continue
            if cue.end() <= c.start:
                d = c.start - cue.end()
            elif cue.start() >= c.end:
                d = cue.start() - c.end
            else:
                continue
            if best is None or d < best[0]:
                best = (d, str(cue.lastgroup))
        if best is not None and best[1] == "close":
            c.attributes["status"] = "close"
        elif best is not None:
            c.attributes["result"] = "negative" if best[1] == "neg" else "positive"
        elif c.context_negated:
            c.attributes["result"] = "negative"
    c.negated = False


def _inside(start: int, end: int, spans: list[tuple[int, int]]) -> bool:
    return any(a <= start and end <= b for a, b in spans)


def _propagate(text: str, c: _Cand, members: list[_Cand]) -> None:
    for d in members:
        if d.start < c.end:
            continue
        if d.type == "metastasis":
            return
        if d.type != "pathological_diagnosis":
            continue
        gap = text[c.end : d.start]
        if len(gap) > 50 or _PROPAGATE_STOP.search(gap):
            return
        if d.attributes.get("behavior", "malignant") != "malignant":
            return
        for key, value in _PROPAGATE[c.concept].items():
            if key == "depends_on":
                have = [v for v in d.attributes.get(key, "").split(",") if v]
                d.attributes[key] = ",".join(dict.fromkeys([*have, value]))
            else:
                d.attributes.setdefault(key, value)
        return


@register_extractor(
    "lexicon",
    description="offline pathology lexicon (medspaCy TargetMatcher + regex rules) with ConText "
    "negation/uncertainty; 'lexicon:<dir-or-file>' reads another lexicon",
    argument="[<dir-or-file>]",
)
def _make_lexicon_extractor(argument: str) -> LexiconExtractor:
    return _cached_extractor(argument)


@functools.lru_cache(maxsize=4)
def _cached_extractor(argument: str) -> LexiconExtractor:
    """One extractor per lexicon path and process (building one takes about a second)."""
    return LexiconExtractor(load_lexicon([argument]) if argument else None)
