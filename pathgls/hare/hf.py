"""HARE's own models behind pathgls's interfaces: HARE-RE relations and HARE-alignment embeddings.

:class:`HFRelationClassifier` runs a sequence classifier over entity pairs marked with
``[E1]…[/E1]`` and ``[E2]…[/E2]`` at the entities' character offsets (:func:`mark_pair`), all
pairs of all reports in batches; :class:`HFCLSEmbedder` gives normalised CLS vectors. Both load
local weights only (:func:`load_hare_re`, :func:`load_hf_cls`).
"""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pathgls.hare.metric import HareConfig, HareError
from pathgls.registry import parse_model_ref
from pathgls.text import AnalyzedReport
from pathgls.text.base import ParsedReport
from pathgls.types import Entity, Relation

logger = logging.getLogger(__name__)

RE_MARKERS = ("[E1]", "[/E1]", "[E2]", "[/E2]")
_NO_RELATION = frozenset({"no_rel", "no_relation", "norel", "none", "no", "o", "other", "null"})
_GENERIC_LABEL = re.compile(r"^label_\d+$")


def mark_pair(text: str, head: tuple[int, int], tail: tuple[int, int]) -> str:
    """``text`` with ``[E1]…[/E1]`` around ``head`` and ``[E2]…[/E2]`` around ``tail``.

    Markers are inserted from the end of the text so that the offsets stay valid, whichever
    entity comes first; at a shared position a closing marker precedes an opening one.

    Raises:
        ValueError: the spans overlap or fall outside ``text``.
    """
    (s1, e1), (s2, e2) = head, tail
    if not (0 <= s1 < e1 <= len(text) and 0 <= s2 < e2 <= len(text)):
        raise ValueError(f"spans {head} and {tail} do not fit a text of length {len(text)}")
    if s1 < e2 and s2 < e1:
        raise ValueError(f"spans {head} and {tail} overlap")
    inserts = [(s1, 1, RE_MARKERS[0]), (e1, 0, RE_MARKERS[1])]
    inserts += [(s2, 1, RE_MARKERS[2]), (e2, 0, RE_MARKERS[3])]
    out = text
    for pos, _, marker in sorted(inserts, reverse=True):
        out = out[:pos] + marker + out[pos:]
    return out


def _segment(parsed: ParsedReport, e: Entity) -> tuple[int, int]:
    """The sentence holding ``e``, or its line when no sentence holds it whole."""
    i = parsed.sentence_index(e.start)
    if i is not None and e.end <= parsed.sentences[i].end:
        return parsed.sentences[i].start, parsed.sentences[i].end
    text = parsed.text
    end = text.find("\n", e.end)
    return text.rfind("\n", 0, e.start) + 1, len(text) if end < 0 else end


@dataclass(frozen=True)
class MarkedPair:
    """One entity pair of one report, marked for the RE model."""

    report: int  # index in the batch of reports
    head: int  # entity indices
    tail: int
    text: str  # marked context


@dataclass
class HFRelationClassifier:
    """HARE-RE-style relation extraction: a sequence classifier over marked entity pairs.

    ``model`` is a loaded ``AutoModelForSequenceClassification`` on ``device`` in eval mode.
    ``labels`` name its classes; the no-relation class is the one spelt ``NO_REL``,
    ``no_relation``, ``none``, ... or else class 0 (HARE-RE's checkpoint has generic
    ``LABEL_0``/``LABEL_1``; the other is then called ``relation``). A pair's relation is its
    most probable class when that is not no-relation and its probability ≥ ``threshold``.
    ``scope``: ``sentence`` (pairs within one sentence) or ``report`` (all pairs; see
    :meth:`pairs`); ``batch_size`` marked pairs per forward pass, ``max_length`` tokens each.
    """

    model: Any
    tokenizer: Any
    labels: Sequence[str]
    name: str = "hare-re"
    device: str = "cpu"
    threshold: float = 0.7
    scope: str = "sentence"
    batch_size: int = 32
    max_length: int = 512
    model_id: str = ""  # repo id or directory the weights came from
    revision: str | None = None  # commit of the weights when known
    random_weights: bool = False  # a randomly initialised test model
    _names: list[str | None] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        keys = [re.sub(r"[\s\-]+", "_", str(lab).strip()).lower() for lab in self.labels]
        none = {i for i, k in enumerate(keys) if k in _NO_RELATION} or {0}
        if len(none) == len(keys):
            raise HareError(f"{self.name}: no relation label among {list(self.labels)}")
        generic = all(_GENERIC_LABEL.match(k) for k in keys) and len(keys) == 2
        self._names = [
            None if i in none else "relation" if generic else str(lab)
            for i, lab in enumerate(self.labels)
        ]

    def pairs(self, reports: Sequence[AnalyzedReport]) -> list[MarkedPair]:
        """Every ordered pair of non-overlapping entities in scope, with its marked context.

        The context is the sentence (``scope="sentence"``) or the run of sentences from the
        first entity's to the last's; when that is longer than ``max_length`` tokens, the
        pair's own span; a pair that does not fit even so is skipped (and logged).
        """
        out, dropped = [], 0
        for k, a in enumerate(reports):
            segs = [_segment(a.parsed, e) for e in a.entities]
            for (i, h), (j, t) in itertools.permutations(enumerate(a.entities), 2):
                if (self.scope == "sentence" and segs[i] != segs[j]) or (
                    h.start < t.end and t.start < h.end  # overlapping spans
                ):
                    continue
                context = (min(segs[i][0], segs[j][0]), max(segs[i][1], segs[j][1]))
                for lo, hi in (context, (min(h.start, t.start), max(h.end, t.end))):
                    marked = mark_pair(
                        a.text[lo:hi], (h.start - lo, h.end - lo), (t.start - lo, t.end - lo)
                    )
                    if len(self.tokenizer(marked, verbose=False)["input_ids"]) <= self.max_length:
                        out.append(MarkedPair(k, i, j, marked))
                        break
                else:
                    dropped += 1
        if dropped:
            logger.warning("%s: %d entity pairs too far apart for %d tokens were skipped",
                           self.name, dropped, self.max_length)  # fmt: skip
        return out

    def predict(self, reports: Sequence[AnalyzedReport]) -> list[list[Relation]]:
        """Relations of each report, all pairs of all reports batched (shortest first)."""
        import torch

        out: list[list[Relation]] = [[] for _ in reports]
        pairs = self.pairs(reports)
        order = sorted(range(len(pairs)), key=lambda n: len(pairs[n].text))
        with torch.inference_mode():
            for a in range(0, len(order), self.batch_size):
                batch = [pairs[n] for n in order[a : a + self.batch_size]]
                enc = self.tokenizer(
                    [p.text for p in batch], truncation=True, max_length=self.max_length,
                    padding=True, return_tensors="pt",
                ).to(self.device)  # fmt: skip
                probs = self.model(**enc).logits.float().softmax(dim=-1).cpu()
                conf, label = probs.max(dim=-1)
                for p, c, lab in zip(batch, conf.tolist(), label.tolist(), strict=True):
                    name = self._names[lab]
                    if name is not None and c >= self.threshold:
                        out[p.report].append(Relation(p.head, p.tail, name, confidence=c))
        return [sorted(rels, key=lambda r: (r.head, r.tail)) for rels in out]


@dataclass
class HFCLSEmbedder:
    """HARE-alignment-style entity embeddings: a transformer's CLS vector, L2-normalised.

    ``model`` is a loaded ``AutoModel`` on ``device`` in eval mode; texts go through it
    ``batch_size`` at a time, cut at ``max_length`` tokens (HARE's reference code: 30).
    """

    model: Any
    tokenizer: Any
    name: str = "hf-cls"
    device: str = "cpu"
    batch_size: int = 256
    max_length: int = 30
    model_id: str = ""  # repo id or directory the weights came from
    revision: str | None = None  # commit of the weights when known
    random_weights: bool = False  # a randomly initialised test model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``(n, d)`` float32 unit rows, one per text (batched, shortest first)."""
        import torch

        items = list(texts)
        dim = int(self.model.config.hidden_size)
        out = np.zeros((len(items), dim), dtype=np.float32)
        order = sorted(range(len(items)), key=lambda i: len(items[i]))
        with torch.inference_mode():
            for a in range(0, len(order), self.batch_size):
                idx = order[a : a + self.batch_size]
                enc = self.tokenizer(
                    [items[i] for i in idx], truncation=True, max_length=self.max_length,
                    padding=True, return_tensors="pt",
                ).to(self.device)  # fmt: skip
                cls = self.model(**enc).last_hidden_state[:, 0].float()
                out[idx] = torch.nn.functional.normalize(cls, dim=-1).cpu().numpy()
        return out


def _load(model_class: Any, argument: str, scheme: str, what: str, device: str) -> tuple:
    """Model, tokenizer, label and provenance of a model location, from local files only.

    The location is a repo id or a local path (:func:`pathgls.registry.parse_model_ref`). The
    weights must cover the model (its pooler aside: the CLS embedder never reads it).
    Provenance is ``(model_id, revision, random_weights)``.
    """
    from transformers import AutoTokenizer

    from pathgls.hub import store as hub
    from pathgls.hub.device import resolve_device
    from pathgls.hub.hf import quiet_loading, refusing_pickles

    label = f"{scheme}:{str(argument).strip()}"
    ref = parse_model_ref(str(argument), what=label)
    location = str(hub.resolve_ref(ref, name=label))
    try:
        with quiet_loading(), refusing_pickles(label, location, error=HareError):
            model, info = model_class.from_pretrained(
                location, local_files_only=True, output_loading_info=True
            )
        tokenizer = AutoTokenizer.from_pretrained(location, local_files_only=True)
    except (OSError, ValueError, KeyError, RuntimeError) as e:
        raise HareError(f"{label}: cannot load {what} from {location}: {e}") from e
    ignored = ("position_ids", "pooler.dense.weight", "pooler.dense.bias")
    missing = [k for k in info.get("missing_keys", []) if not k.endswith(ignored)]
    if missing:
        raise HareError(
            f"{label}: weights in {location} do not cover {what} ({len(missing)} missing, "
            f"e.g. {sorted(missing)[:3]})"
        )
    repo, revision, random_weights = hub.weights_provenance(
        location, label=label
    )  # warns if random
    provenance = (ref.repo_id or repo or location, revision, random_weights)
    return model.to(resolve_device(device)).eval(), tokenizer, label, provenance


def load_hare_re(location: str, *, config: HareConfig | None = None) -> HFRelationClassifier:
    """A local pair-classifier directory or repo id (HARE-RE) as a relation backend.

    Raises:
        ModelNotFoundError: a repo id that is not available locally.
        HareError: no loadable sequence classifier or tokenizer there.
    """
    from transformers import AutoModelForSequenceClassification

    cfg = config or HareConfig()
    model, tokenizer, label, (model_id, revision, random_weights) = _load(
        AutoModelForSequenceClassification, location, "hare-re", "a pair classifier", cfg.device
    )
    id2label = model.config.id2label or {}
    return HFRelationClassifier(
        model=model, tokenizer=tokenizer, name=label, model_id=model_id, revision=revision,
        random_weights=random_weights,
        labels=[str(id2label.get(i, f"LABEL_{i}")) for i in range(model.config.num_labels)],
        device=str(next(model.parameters()).device), threshold=cfg.re_threshold,
        scope=cfg.re_scope, batch_size=cfg.re_batch_size, max_length=cfg.re_max_length,
    )  # fmt: skip


def load_hf_cls(location: str, *, config: HareConfig | None = None) -> HFCLSEmbedder:
    """A local transformer directory or repo id (HARE-alignment) as a CLS entity embedder.

    Raises:
        ModelNotFoundError: a repo id that is not available locally.
        HareError: no loadable model or tokenizer there.
    """
    from transformers import AutoModel

    cfg = config or HareConfig()
    model, tokenizer, label, (model_id, revision, random_weights) = _load(
        AutoModel, location, "hf-cls", "a text encoder", cfg.device
    )
    return HFCLSEmbedder(
        model=model, tokenizer=tokenizer, name=label, model_id=model_id, revision=revision,
        random_weights=random_weights,
        device=str(next(model.parameters()).device), batch_size=cfg.embed_batch_size,
    )  # fmt: skip
