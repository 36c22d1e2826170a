"""hf-ner: a tiny random BERT token classifier loaded through the registry, and a rule model.

Random weights give random tags, so the decoding is tested with :class:`RuleModel`: it returns
chosen logits per token (by token id) and, to check how window overlaps are merged, deliberately
wrong logits for every token close to a *cut* window edge. A correct merge never uses those.
"""

from __future__ import annotations

import logging
import math
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from pathgls.errors import ConfigError, ModelNotFoundError
from pathgls.testing import save_random_token_classifier
from pathgls.text.base import EXTRACTORS, HARE_TYPES
from pathgls.text.hf_ner import (
    HARE_NER_LABELS,
    HFNERExtractor,
    TaggedWord,
    decode_words,
    label_table,
    parse_label,
)
from pathgls.text.sections import parse_report

WRONG = "B-IHC_modifier"  # what RuleModel predicts next to a cut window edge

RULES = {  # token → (label, probability of that label)
    "invasive": ("B-pathological_diagnosis", 0.97),
    "ductal": ("I-pathological_diagnosis", 0.93),
    "carcinoma": ("I-pathological_diagnosis", 0.95),
    "breast": ("B-anatomical_site", 0.96),
    "lymph": ("B-anatomical_site", 0.9),
    "node": ("I-anatomical_site", 0.9),
    "her2": ("B-IHC", 0.95),
    "positive": ("B-IHC_modifier", 0.92),
    "negative": ("B-IHC_modifier", 0.92),
    "moderately": ("B-diagnosis_descriptor", 0.9),
    "differentiated": ("I-diagnosis_descriptor", 0.9),
    "c": ("B-IHC", 0.9),  # first piece of "CK7" (c ##k ##7)
    "##k": ("O", 0.6),
    "lobular": ("B-pathological_diagnosis", 0.6),  # below the 0.7 threshold
}

# What RULES make of the long report, by regular expression over its text.
EXPECTED = {
    r"invasive ductal carcinoma": "pathological_diagnosis",
    r"breast": "anatomical_site",
    r"lymph node": "anatomical_site",
    r"HER2": "ihc_marker",
    r"CK7": "ihc_marker",
    r"positive|negative": "ihc_modifier",
    r"moderately differentiated": "diagnosis_descriptor",
}

LONG_REPORT = (
    "DIAGNOSIS:\n"
    "Invasive ductal carcinoma of the breast, moderately differentiated.\n\n"
    "MICROSCOPIC DESCRIPTION:\n"
    "The tumour is seen in the skin and the colon with necrosis. "
    "Tumour nuclei are HER2 positive and CK7 positive. "
    "One lymph node is negative. The margins are well away from the tumour. "
    "There is invasive ductal carcinoma in the second piece of the breast as well. "
    "Necrosis is present in the colon. CK7 is negative in the skin.\n\n"
    "COMMENT:\n"
    "Findings of invasive ductal carcinoma were discussed; HER2 negative on repeat."
)


def _logits(n_labels: int, index: int, probability: float) -> torch.Tensor:
    """Logits whose softmax gives ``probability`` to ``index`` and the rest evenly."""
    out = torch.zeros(n_labels)
    out[index] = math.log(probability * (n_labels - 1) / (1 - probability))
    return out


class RuleModel(torch.nn.Module):
    """Token classifier by rule: RULES per token id, O (p = 0.99) otherwise.

    Tokens within ``edge`` positions of a cut edge (not the report's start or end) of their
    window get ``WRONG`` instead; ``n_windows`` says how many windows the report has.
    """

    def __init__(self, tokenizer, labels, *, n_windows: int = 1, edge: int = 0) -> None:
        super().__init__()
        self.labels = list(labels)
        self.rules = {tokenizer.convert_tokens_to_ids(t): r for t, r in RULES.items()}
        self.n_windows, self.edge = n_windows, edge
        self.row = 0
        self.batches: list[int] = []

    def forward(self, input_ids, attention_mask, **_):
        n_labels = len(self.labels)
        logits = torch.zeros(*input_ids.shape, n_labels)
        for b in range(input_ids.shape[0]):
            n = int(attention_mask[b].sum()) - 2  # content tokens between [CLS] and [SEP]
            for j in range(n):
                label, p = self.rules.get(int(input_ids[b, j + 1]), ("O", 0.99))
                left = j if self.row > 0 else math.inf
                right = n - 1 - j if self.row < self.n_windows - 1 else math.inf
                if min(left, right) < self.edge:
                    label, p = WRONG, 0.99
                logits[b, j + 1] = _logits(n_labels, self.labels.index(label), p)
            self.row += 1
        self.batches.append(int(input_ids.shape[0]))
        return SimpleNamespace(logits=logits)


@pytest.fixture(scope="module")
def ner_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_random_token_classifier(tmp_path_factory.mktemp("ner") / "tiny-hare-ner")


@pytest.fixture(scope="module")
def registry_extractor(ner_dir: Path) -> HFNERExtractor:
    extractor = EXTRACTORS.build(f"hf-ner:{ner_dir}")
    assert isinstance(extractor, HFNERExtractor)
    return extractor


def _windows(tokenizer, text: str, max_length: int, stride: int) -> list[tuple[int, int]]:
    """Character range covered by each window."""
    enc = tokenizer(
        text,
        truncation=True,
        max_length=max_length,
        stride=stride,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        return_special_tokens_mask=True,
    )
    ranges = []
    for offsets, special in zip(enc["offset_mapping"], enc["special_tokens_mask"], strict=True):
        content = [o for o, s in zip(offsets, special, strict=True) if not s]
        ranges.append((content[0][0], content[-1][1]))
    return ranges


def _rule_extractor(base: HFNERExtractor, text: str, **options) -> HFNERExtractor:
    max_length, stride = options.pop("max_length", 24), options.pop("stride", 4)
    n_windows = len(_windows(base.tokenizer, text, max_length, stride))
    model = RuleModel(base.tokenizer, base.labels, n_windows=n_windows, edge=options.pop("edge", 0))
    return HFNERExtractor(
        model=model,
        tokenizer=base.tokenizer,
        labels=base.labels,
        name="rules",
        max_length=max_length,
        stride=stride,
        **options,
    )


def test_registry_builds_the_tiny_model(registry_extractor: HFNERExtractor) -> None:
    ex = registry_extractor
    assert ex.labels == list(HARE_NER_LABELS)
    assert ex.random_weights
    assert ex.max_length == 512
    ex_all = HFNERExtractor(
        model=ex.model, tokenizer=ex.tokenizer, labels=ex.labels, threshold=0.0, name="all"
    )
    text = parse_report(LONG_REPORT).text
    entities = ex_all.extract(text)
    assert entities  # random tags, but with threshold 0 some words are entities
    for e in entities:
        assert text[e.start : e.end] == e.text
        assert e.type in HARE_TYPES
        assert 0.0 < e.confidence <= 1.0


def test_hare_labels_map_onto_hare_types() -> None:
    table, unknown = label_table(HARE_NER_LABELS)
    assert not unknown
    assert {t for _, t in table} == {*HARE_TYPES, None}
    assert dict(zip(HARE_NER_LABELS, table, strict=True))["B-IHC"] == ("B", "ihc_marker")
    assert parse_label("I-IHC_modifier") == ("I", "IHC_modifier")
    assert parse_label("O") == ("O", "")
    assert parse_label("disease") == ("I", "disease")  # IO tagging
    table, unknown = label_table(
        ["O", "S-Anatomical Site", "E-diagnosis-descriptor", "B-FOO", "B-Tumour"],
        label_map={"tumour": "pathological_diagnosis"},
    )
    assert table == [
        ("O", None),
        ("S", "anatomical_site"),
        ("E", "diagnosis_descriptor"),
        ("B", None),
        ("B", "pathological_diagnosis"),
    ]
    assert unknown == ["B-FOO"]
    with pytest.raises(ConfigError):
        label_table(["B-X"], label_map={"x": "not-a-type"})


def test_bioes_decoding() -> None:
    labels = ["O", "B-IHC", "I-IHC", "E-IHC", "S-anatomical_site", "I-pathological_diagnosis"]
    table, _ = label_table(labels)

    def w(start: int, label: str) -> TaggedWord:
        return TaggedWord(start, start + 1, labels.index(label), [0.8])

    words = [
        w(0, "B-IHC"), w(2, "I-IHC"), w(4, "E-IHC"), w(6, "I-IHC"),  # E closes: I starts anew
        w(8, "S-anatomical_site"), w(10, "S-anatomical_site"),
        w(12, "O"), w(14, "I-pathological_diagnosis"), w(16, "I-pathological_diagnosis"),
        w(18, "I-IHC"),  # another type: a new entity
    ]  # fmt: skip
    spans = [(s, e, t) for s, e, t, _ in decode_words(words, table)]
    assert spans == [
        (0, 5, "ihc_marker"),
        (6, 7, "ihc_marker"),
        (8, 9, "anatomical_site"),
        (10, 11, "anatomical_site"),
        (14, 17, "pathological_diagnosis"),
        (18, 19, "ihc_marker"),
    ]


def test_long_report_offsets_overlaps_and_sections(registry_extractor: HFNERExtractor) -> None:
    text = parse_report(LONG_REPORT).text
    windows = _windows(registry_extractor.tokenizer, text, 24, 4)
    assert len(windows) >= 5
    ex = _rule_extractor(registry_extractor, text, edge=2, batch_size=3)
    entities = ex.extract(text)

    expected = sorted(
        (m.start(), m.end(), etype)
        for pattern, etype in EXPECTED.items()
        for m in re.finditer(pattern, text, flags=re.IGNORECASE)
    )
    assert [(e.start, e.end, e.type) for e in entities] == expected
    for e in entities:
        assert text[e.start : e.end] == e.text
    # the same entity text in the first window and in a window from the third on: two spans
    idc = [e for e in entities if e.text.lower() == "invasive ductal carcinoma"]
    assert len({e.start for e in idc}) == len(idc) == 3
    in_window = [
        [k for k, (a, b) in enumerate(windows) if a <= e.start and e.end <= b] for e in idc
    ]
    assert in_window[0] == [0] and min(in_window[-1]) >= 2
    # entities inside an overlap (two windows) are found once, not twice
    shared = [e for e in entities if sum(a <= e.start and e.end <= b for a, b in windows) == 2]
    assert shared
    # batched: at most batch_size windows per forward pass, every window once
    assert max(ex.model.batches) == 3 and sum(ex.model.batches) == len(windows)
    # sections from parse_report
    parsed = parse_report(text)
    assert [e.section for e in entities] == [parsed.section_at(e.start) for e in entities]
    assert entities[0].section == "diagnosis"
    assert {e.section for e in entities} == {"diagnosis", "microscopic", "comment"}
    assert not any(e.negated or e.uncertain for e in entities)


def test_word_label_confidence_and_threshold(registry_extractor: HFNERExtractor) -> None:
    text = "HER2 positive; CK7 positive; lobular neoplasia."
    ex = _rule_extractor(registry_extractor, text, max_length=512, stride=64)
    found = {e.text: e for e in ex.extract(text)}
    assert found["HER2"].confidence == pytest.approx(0.95, abs=1e-5)
    # CK7 = c ##k ##7: the word takes its first token's label; confidence is the token mean
    assert found["CK7"].type == "ihc_marker"
    assert found["CK7"].confidence == pytest.approx((0.9 + 0.6 + 0.99) / 3, abs=1e-5)
    assert "lobular" not in found  # confidence 0.6 < 0.7 (the default threshold)
    ex_low = _rule_extractor(registry_extractor, text, max_length=512, stride=64, threshold=0.5)
    lobular = {e.text: e for e in ex_low.extract(text)}["lobular"]
    assert (lobular.type, lobular.confidence) == ("pathological_diagnosis", pytest.approx(0.6))


def test_unknown_labels_are_skipped_with_one_warning(
    registry_extractor: HFNERExtractor, caplog: pytest.LogCaptureFixture
) -> None:
    labels = [
        "FOO" if lab == "B-IHC_modifier" else lab for lab in registry_extractor.labels
    ]  # the model's "positive"/"negative" label no longer means anything to us
    text = "HER2 positive and CK7 negative."
    with caplog.at_level(logging.WARNING, logger="pathgls.text.hf_ner"):
        ex = HFNERExtractor(
            model=RuleModel(registry_extractor.tokenizer, registry_extractor.labels),
            tokenizer=registry_extractor.tokenizer,
            labels=labels,
            name="foo",
        )
        entities = ex.extract(text)
        ex.extract(text)
    assert [r.getMessage() for r in caplog.records if "FOO" in r.getMessage()] == [
        "foo: labels FOO map to no pathgls entity type and are skipped (treated as O); "
        "pass label_map to keep them"
    ]
    assert [(e.text, e.type) for e in entities] == [("HER2", "ihc_marker"), ("CK7", "ihc_marker")]


def test_context_sets_negation(registry_extractor: HFNERExtractor) -> None:
    pytest.importorskip("medspacy")
    text = parse_report(
        "DIAGNOSIS:\nNo invasive ductal carcinoma is identified. The breast is HER2 positive."
    ).text
    ex = _rule_extractor(registry_extractor, text, max_length=512, stride=64, context=True)
    flags = {e.text: (e.negated, e.uncertain) for e in ex.extract(text)}
    assert flags["invasive ductal carcinoma"] == (True, False)
    assert flags["breast"] == (False, False)
    assert flags["HER2"] == (False, False)


def test_missing_model_names_the_pull_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATHGLS_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    with pytest.raises(ModelNotFoundError, match=r"pathgls models pull hf:nobody/no-such-ner"):
        EXTRACTORS.build("hf-ner:nobody/no-such-ner")
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        EXTRACTORS.build(f"hf-ner:{tmp_path / 'absent'}")
    with pytest.raises(ConfigError):
        EXTRACTORS.build("hf-ner:not a repo")
