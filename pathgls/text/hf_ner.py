"""Token-classification NER: ``hf-ner:<model>`` (HARE-NER or any BIO tagger).

``<model>`` is a repo id (``org/name[@revision]``) or a local path (``dir:``, ``/``, ``./``,
``../``, ``~``; see :func:`pathgls.registry.parse_model_ref`).

Any Hugging Face ``AutoModelForTokenClassification`` with a fast tokenizer and BIO-style labels
works: ``B-X``/``I-X``/``O`` (IOB2), plain IOB1, BIOES/BILOU (``S-``/``E-``/``U-``/``L-``) and
prefix-less IO labels. Label types are mapped onto :data:`~pathgls.text.base.ENTITY_TYPES` by
:data:`LABEL_TYPES` (any spelling of our own type names works too; ``label_map`` adds more);
labels that map to nothing are skipped (their tokens count as ``O``) with one warning.

HARE-NER (``knowlab-research/HARE-NER``, GatorTronS fine-tuned on the HARE dataset) tags HARE's
five types. The HARE dataset's ``ner_tags`` spell three of them ``anatomical_site``,
``pathological_diagnosis`` and ``IHC`` (the marker); :data:`HARE_NER_LABELS` spells the other two
``diagnosis_descriptor`` and ``IHC_modifier`` after the paper's type names. The model's own
``config.id2label`` is what counts at run time, and :data:`LABEL_TYPES` also accepts the usual
variants (``IHC_result``, ``diagnosis_modifier``, ``Anatomical Site``, ...).

How a report is read:

1. **Chunks.** The fast tokenizer cuts the text into windows of the model's length (minus its
   special tokens) that overlap by ``stride`` tokens (``return_overflowing_tokens``), with
   character offsets into the text (``return_offsets_mapping``). Windows run through the model
   in batches under ``torch.inference_mode``.
2. **Overlaps.** A token seen in two windows takes the prediction of the window in which it sits
   further from a cut edge (the start and end of the report are not cut edges), so an entity in
   an overlap is found once, from its better-placed window, and an entity cut by a window edge
   is read whole. Every offset is a character offset into the text given to :meth:`extract`:
   ``text[e.start:e.end] == e.text`` holds for every entity, in every window.
3. **Words.** A word split into several tokens takes the label of its first token; B/I (and
   S/E) sequences of words are merged into spans; an ``I-`` after ``O`` or after another type
   starts a new entity (IOB1 style).
4. **Confidence** is the mean over the entity's tokens of the token's highest softmax
   probability; entities below ``threshold`` (default 0.7, HARE's) are dropped.
5. **Sections** come from :func:`~pathgls.text.sections.parse_report` (``section_at(start)``).
6. **Negation/uncertainty:** the model predicts none, so ``negated``/``uncertain`` stay False
   unless ``context=True``, which runs medspaCy ConText over the found spans (sentence
   boundaries from ``parse_report``).
"""

from __future__ import annotations

import logging
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pathgls.errors import ConfigError, NERModelError
from pathgls.hub.cards import model_card
from pathgls.registry import parse_model_ref
from pathgls.text.base import ENTITY_TYPES, register_extractor
from pathgls.text.sections import section_lookup
from pathgls.types import Entity

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

#: Hugging Face repo of HARE's NER model (from its model card, ``resources/models.toml``).
HARE_NER_REPO = model_card("hare-ner").repo

#: HARE-NER's BIO label set (entity spellings as in the HARE dataset), sorted as HARE's
#: ``run_ner.py`` sorts string labels.
HARE_NER_LABELS: tuple[str, ...] = tuple(
    sorted(
        ["O"]
        + [
            f"{p}-{t}"
            for t in (
                "IHC",
                "IHC_modifier",
                "anatomical_site",
                "diagnosis_descriptor",
                "pathological_diagnosis",
            )
            for p in "BI"
        ]
    )
)

#: Normalised label type (lower case, ``_`` for spaces and hyphens) → our entity type. Our own
#: type names map to themselves as well.
LABEL_TYPES: dict[str, str] = {
    **{t: t for t in ENTITY_TYPES},
    **dict.fromkeys(["anatomy", "site", "anatomical_location", "anatomic_site"], "anatomical_site"),
    **dict.fromkeys(
        ["diagnosis", "pathology_diagnosis", "pathologic_diagnosis", "histological_diagnosis"],
        "pathological_diagnosis",
    ),
    **dict.fromkeys(
        ["descriptor", "diagnosis_modifier", "diagnosis_description", "diagnostic_descriptor"],
        "diagnosis_descriptor",
    ),
    **dict.fromkeys(["ihc", "ihc_test", "ihc_stain", "marker", "stain"], "ihc_marker"),
    **dict.fromkeys(
        ["ihc_result", "ihc_descriptor", "ihc_status", "ihc_value", "marker_result"],
        "ihc_modifier",
    ),
}

_PREFIX = re.compile(r"^([BIESLU])[-_](.+)$")


def normalize_label_type(label_type: str) -> str:
    """``"IHC Modifier"`` / ``"ihc-modifier"`` → ``"ihc_modifier"``."""
    return re.sub(r"[\s\-]+", "_", label_type.strip()).lower()


def parse_label(label: str) -> tuple[str, str]:
    """``(prefix, type)`` of a tag: ``"B-IHC"`` → ``("B", "IHC")``; ``"O"`` → ``("O", "")``.

    Prefix-less labels other than ``O`` are IO tags: ``("I", label)``.
    """
    text = label.strip()
    if text.upper() in ("O", "OUTSIDE"):
        return "O", ""
    m = _PREFIX.match(text)
    return (m.group(1), m.group(2)) if m else ("I", text)


def label_table(
    labels: Sequence[str], label_map: Mapping[str, str] | None = None
) -> tuple[list[tuple[str, str | None]], list[str]]:
    """Per label id ``(prefix, entity type or None)``, and the labels that map to nothing.

    Raises:
        ConfigError: ``label_map`` maps onto something that is not an entity type.
    """
    extra = {normalize_label_type(k): v for k, v in (label_map or {}).items()}
    bad = sorted(v for v in extra.values() if v not in ENTITY_TYPES)
    if bad:
        raise ConfigError(f"label_map values must be entity types, got {bad}")
    table: list[tuple[str, str | None]] = []
    unknown: list[str] = []
    for label in labels:
        prefix, raw = parse_label(label)
        if prefix == "O":
            table.append(("O", None))
            continue
        key = normalize_label_type(raw)
        etype = extra.get(key, LABEL_TYPES.get(key))
        if etype is None:
            unknown.append(label)
        table.append((prefix, etype))
    return table, unknown


@dataclass
class TaggedWord:
    """A word of the report with the label of its first token and all its tokens' confidences."""

    start: int
    end: int
    label: int  # label id of the word's first token
    confidences: list[float] = field(default_factory=list)


def decode_words(
    words: Sequence[TaggedWord], table: Sequence[tuple[str, str | None]]
) -> list[tuple[int, int, str, float]]:
    """BIO/BIOES decoding of labelled words → ``(start, end, type, mean token confidence)``."""
    spans: list[tuple[int, int, str, float]] = []
    current: tuple[int, int, str, list[float]] | None = None

    def close() -> None:
        nonlocal current
        if current is not None:
            s, e, t, conf = current
            spans.append((s, e, t, sum(conf) / len(conf)))
            current = None

    for w in words:
        prefix, etype = table[w.label]
        if etype is None:
            close()
            continue
        if prefix in ("B", "S", "U") or current is None or current[2] != etype:
            close()
            current = (w.start, w.end, etype, list(w.confidences))
        else:
            current = (current[0], w.end, etype, current[3] + w.confidences)
        if prefix in ("S", "U", "E", "L"):
            close()
    close()
    return spans


@dataclass
class HFNERExtractor:
    """Entity extractor over a token-classification model (see the module docstring).

    Args:
        model: A loaded token-classification model (anything returning ``.logits`` of shape
            ``(batch, tokens, labels)``), on ``device``, in eval mode.
        tokenizer: Its fast tokenizer.
        labels: Label name per class id (``config.id2label``).
        name: Name reported in results.
        device: Where inputs go.
        max_length: Window length in tokens, special tokens included.
        threshold: Entities with a lower confidence are dropped.
        stride: Tokens shared by consecutive windows (clamped below half a window).
        batch_size: Windows per forward pass.
        label_map: Extra label type → entity type entries (see :data:`LABEL_TYPES`).
        context: Run medspaCy ConText for ``negated``/``uncertain``.
        model_id: Repo id or directory the model came from.
        revision: Commit of the weights when known.
        random_weights: The model is a randomly initialised test model.
    """

    model: Any
    tokenizer: Any
    labels: Sequence[str]
    name: str = "hf-ner"
    device: str = "cpu"
    max_length: int = 512
    threshold: float = 0.7
    stride: int = 64
    batch_size: int = 8
    label_map: Mapping[str, str] | None = None
    context: bool = False
    model_id: str = ""
    revision: str | None = None
    random_weights: bool = False
    _table: list[tuple[str, str | None]] = field(init=False, repr=False)
    _context_nlp: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.threshold <= 1.0:
            raise ConfigError(f"threshold must be in [0, 1], got {self.threshold}")
        if self.batch_size < 1:
            raise ConfigError(f"batch_size must be at least 1, got {self.batch_size}")
        if self.stride < 0:
            raise ConfigError(f"stride must be at least 0, got {self.stride}")
        if not getattr(self.tokenizer, "is_fast", False):
            raise NERModelError(f"{self.name}: needs a fast tokenizer (for character offsets)")
        content = self.max_length - self.tokenizer.num_special_tokens_to_add(pair=False)
        if content < 2:
            raise ConfigError(f"{self.name}: max_length {self.max_length} leaves no room for text")
        if self.stride > (content - 1) // 2:
            logger.warning(
                "%s: stride %d is too large for windows of %d tokens; using %d",
                self.name,
                self.stride,
                content,
                (content - 1) // 2,
            )
            self.stride = (content - 1) // 2
        self._table, unknown = label_table(self.labels, self.label_map)
        if unknown:
            logger.warning(
                "%s: labels %s map to no pathgls entity type and are skipped (treated as O); "
                "pass label_map to keep them",
                self.name,
                ", ".join(unknown),
            )
        if all(etype is None for _, etype in self._table):
            raise NERModelError(
                f"{self.name}: no label maps to a pathgls entity type (labels: {list(self.labels)})"
            )
        self.tokenizer.padding_side = "right"
        self.tokenizer.truncation_side = "right"

    def extract(self, report_text: str) -> list[Entity]:
        """Entities of ``report_text`` (offsets into it), sorted by position."""
        if not report_text.strip():
            return []
        words = self._words(report_text)
        spans = [s for s in decode_words(words, self._table) if s[3] >= self.threshold]
        section_at = section_lookup(report_text)
        entities = []
        for start, end, etype, conf in spans:
            start, end = _trim(report_text, start, end)
            if start < end:
                entities.append(
                    Entity(
                        text=report_text[start:end],
                        type=etype,
                        start=start,
                        end=end,
                        section=section_at(start),
                        confidence=float(conf),
                    )
                )
        if self.context and entities:
            entities = self._with_context(report_text, entities)
        return entities

    def _words(self, text: str) -> list[TaggedWord]:
        """Words of ``text`` with their first token's label and all their tokens' confidences."""
        import torch

        enc = self.tokenizer(
            text,
            truncation=True,
            max_length=self.max_length,
            stride=self.stride,
            return_overflowing_tokens=True,
            return_offsets_mapping=True,
            return_special_tokens_mask=True,
            padding="longest",
            return_tensors="pt",
        )
        n_chunks = int(enc["input_ids"].shape[0])
        step = self.max_length - self.tokenizer.num_special_tokens_to_add(pair=False) - self.stride
        inputs = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in enc]
        labels: list[torch.Tensor] = []
        confs: list[torch.Tensor] = []
        with torch.inference_mode():
            for a in range(0, n_chunks, self.batch_size):
                batch = {k: enc[k][a : a + self.batch_size].to(self.device) for k in inputs}
                probs = self.model(**batch).logits.float().softmax(dim=-1)
                conf, label = probs.max(dim=-1)
                confs.append(conf.cpu())
                labels.append(label.cpu())
        label_ids = torch.cat(labels).tolist()
        conf_values = torch.cat(confs).tolist()
        offsets = enc["offset_mapping"].tolist()
        content_mask = (enc["special_tokens_mask"] == 0) & (enc["attention_mask"] == 1)
        # global token index → (distance from a cut edge, start, end, word id, label, confidence)
        best: dict[int, tuple[float, int, int, int | None, int, float]] = {}
        for k in range(n_chunks):
            positions = content_mask[k].nonzero().flatten().tolist()
            word_ids = enc.word_ids(k)
            n = len(positions)
            for j, p in enumerate(positions):
                left = j if k > 0 else math.inf
                right = n - 1 - j if k < n_chunks - 1 else math.inf
                g = k * step + j
                start, end = offsets[k][p]
                if g in best:
                    if best[g][1:3] != (start, end):
                        raise NERModelError(
                            f"{self.name}: tokenizer windows do not overlap as expected "
                            f"(token {g} at {best[g][1:3]} and {(start, end)})"
                        )
                    if min(left, right) <= best[g][0]:
                        continue
                best[g] = (
                    min(left, right),
                    start,
                    end,
                    word_ids[p],
                    label_ids[k][p],
                    conf_values[k][p],
                )
        words: list[TaggedWord] = []
        last_word: int | None = None
        for g in sorted(best):
            _, start, end, word, label, conf = best[g]
            if end <= start:  # zero-width token: nothing to point at
                continue
            if words and word is not None and word == last_word:
                words[-1].end = max(words[-1].end, end)
                words[-1].confidences.append(conf)
            else:
                words.append(TaggedWord(start, end, label, [conf]))
            last_word = word
        return words

    def _with_context(self, text: str, entities: list[Entity]) -> list[Entity]:
        """Entities with ``negated``/``uncertain`` set by medspaCy ConText."""
        import dataclasses

        from spacy.util import filter_spans

        from pathgls.text.sections import parse_report

        if self._context_nlp is None:
            import medspacy  # noqa: F401  (registers the medspaCy factories)
            import spacy

            nlp = spacy.blank("en")
            nlp.add_pipe("sentencizer")
            nlp.add_pipe("medspacy_context")
            self._context_nlp = nlp
        nlp = self._context_nlp
        doc = nlp.make_doc(text)
        parsed = parse_report(text)
        if parsed.text == text and parsed.sentences:
            starts = {s.start for s in parsed.sentences}
            for i, token in enumerate(doc):
                token.is_sent_start = i == 0 or token.idx in starts
        else:  # not clean text: the rule-based sentencizer instead
            doc = nlp.get_pipe("sentencizer")(doc)
        spans = [
            span
            for e in entities
            if (span := doc.char_span(e.start, e.end, label=e.type, alignment_mode="expand"))
            is not None
        ]
        doc.ents = filter_spans(spans)
        doc = nlp.get_pipe("medspacy_context")(doc)
        flags = {(s.start_char, s.end_char): s for s in doc.ents}
        out = []
        for e in entities:
            span = doc.char_span(e.start, e.end, alignment_mode="expand")
            hit = flags.get((span.start_char, span.end_char)) if span is not None else None
            if hit is None:
                out.append(e)
                continue
            out.append(
                dataclasses.replace(
                    e, negated=bool(hit._.is_negated), uncertain=bool(hit._.is_uncertain)
                )
            )
        return out


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def resolve_location(argument: str, *, models_dir: str | os.PathLike[str] | None = None) -> str:
    """Local directory for an ``hf-ner`` model location (never downloads).

    Raises:
        ConfigError: the argument is neither a path form nor an ``org/name`` repo id.
        ModelNotFoundError: it is not available locally (the message says how to pull it).
    """
    from pathgls.hub import store as hub

    name = f"hf-ner:{argument.strip()}"
    ref = parse_model_ref(argument, what=name)
    return str(hub.resolve_ref(ref, name=name, models_dir=models_dir))


def load_hf_ner(
    location: str | os.PathLike[str],
    *,
    name: str | None = None,
    device: str = "auto",
    max_length: int | None = None,
    **options: Any,
) -> HFNERExtractor:
    """Load a local token-classification model directory as an extractor.

    Args:
        location: Directory with ``config.json``, weights and a (fast) tokenizer.
        name: Name reported in results (default ``hf-ner:<location>``).
        device: ``auto`` (CUDA when available), ``cpu``, ``cuda``, ``cuda:1``, ...
        max_length: Window length (default and upper bound: the model's own limit).
        **options: Further :class:`HFNERExtractor` fields (``threshold``, ``stride``,
            ``batch_size``, ``label_map``, ``context``, ``model_id``).

    Raises:
        NERModelError: the directory holds no loadable token classifier.
        ConfigError: bad options.
    """
    from transformers import AutoConfig, AutoModelForTokenClassification, AutoTokenizer

    from pathgls.hub import store as hub
    from pathgls.hub.device import resolve_device
    from pathgls.hub.hf import load_checked, model_max_length

    label = name or f"hf-ner:{location}"
    torch_device = resolve_device(device)
    try:
        config = AutoConfig.from_pretrained(location, local_files_only=True)
    except (OSError, ValueError, KeyError, RuntimeError) as e:
        raise NERModelError(f"{label}: no Hugging Face model config in {location}: {e}") from e
    model = load_checked(
        AutoModelForTokenClassification,
        location,
        label=label,
        what="a token classifier",
        head_hint="is it a base model without its token-classification head?",
        error=NERModelError,
    )
    try:
        tokenizer = AutoTokenizer.from_pretrained(location, local_files_only=True)
    except (OSError, ValueError, KeyError, RuntimeError) as e:
        raise NERModelError(f"{label}: cannot load the tokenizer in {location}: {e}") from e
    id2label = getattr(config, "id2label", None) or {}
    labels = [
        str(id2label.get(i, id2label.get(str(i), f"LABEL_{i}"))) for i in range(len(id2label))
    ]
    limit = model_max_length(config, tokenizer)
    if max_length is not None and not 2 < max_length <= limit:
        raise ConfigError(f"{label}: max_length must be in 3..{limit}, got {max_length}")
    repo, revision, random_weights = hub.weights_provenance(location, label=label)
    options.setdefault("model_id", repo or str(location))
    options.setdefault("revision", revision)
    return HFNERExtractor(
        model=model.to(torch_device).eval(),
        tokenizer=tokenizer,
        labels=labels,
        name=label,
        device=str(torch_device),
        max_length=max_length or limit,
        random_weights=random_weights,
        **options,
    )


@register_extractor(
    "hf-ner",
    description="Hugging Face token-classification model with BIO labels (e.g. HARE-NER, "
    f"{HARE_NER_REPO}); local weights only",
    argument="<model>",
    options=("device", "threshold", "context"),
    cards=("hare-ner",),
)
def build_hf_ner(argument: str, **options: Any) -> HFNERExtractor:
    """``hf-ner:<model>`` → an :class:`HFNERExtractor` from local weights.

    Args:
        argument: Repo id (``org/name[@revision]``) or local path.
        **options: ``device``, ``threshold``, ``context`` (see :func:`load_hf_ner`).

    Raises:
        ConfigError: a malformed model location or option.
        ModelNotFoundError: a repo id that is not in the models directory or the HF cache.
        NERModelError: the weights are there but are not a usable token classifier.
    """
    location = resolve_location(argument)
    return load_hf_ner(location, name=f"hf-ner:{argument.strip()}", **options)
