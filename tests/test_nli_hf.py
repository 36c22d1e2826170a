"""The ``hf`` NLI backend on tiny random DeBERTa-v2 classifiers written at test time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from pathgls.errors import ConfigError, ModelNotFoundError
from pathgls.nli import NLI_BACKENDS, NLIScorer, build_nli, list_nli
from pathgls.nli.hf import DEFAULT_NLI_MODEL, HFNLIScorer, load_hf_nli, map_nli_labels
from pathgls.testing import save_random_nli_classifier

ORDERS = {
    "cen": ("contradiction", "entailment", "neutral"),  # pritamdeka/PubMedBERT-MNLI-MedNLI
    "nce": ("neutral", "contradiction", "entailment"),
    "enc": ("entailment", "neutral", "contradiction"),  # MoritzLaurer/DeBERTa-v3-base-...
}

LONG = (
    "Sections show an invasive ductal carcinoma, grade 2, with lymphovascular invasion, "
    "perineural invasion, ductal carcinoma in situ of solid and cribriform type with "
    "comedonecrosis, and a closest margin of 3 mm. "
) * 3  # ~260 tokens
PREMISES = [
    "No evidence of malignancy.",
    LONG,
    "",
    "Benign nevus.",
    "Two of fourteen lymph nodes are positive (2/14).",
    "No evidence of malignancy.",
    "Ki-67 approximately 20%.",
    LONG[:300],
]
HYPOTHESES = [
    "Invasive carcinoma is present.",
    "The margins are negative.",
    "Carcinoma.",
    "",
    "Lymph nodes are negative for metastatic carcinoma.",
    "Invasive carcinoma is present.",  # a repeat of pair 0
    "High-grade dysplasia, suspicious for invasive adenocarcinoma.",
    LONG,
]


@pytest.fixture(scope="session")
def model_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("nli")
    return {
        key: save_random_nli_classifier(root / key, label_order=order, seed=i)
        for i, (key, order) in enumerate(ORDERS.items())
    }


@pytest.fixture(scope="session")
def scorer(model_dirs: dict[str, Path]) -> HFNLIScorer:
    built = NLI_BACKENDS.build(f"hf:{model_dirs['cen']}")
    assert isinstance(built, HFNLIScorer)
    return built


def direct_softmax(directory: Path, premises: list[str], hypotheses: list[str]) -> np.ndarray:
    """Softmax of the classifier computed with plain transformers, one pair at a time."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(directory)
    model = AutoModelForSequenceClassification.from_pretrained(directory).eval()
    rows = []
    with torch.no_grad():
        for p, h in zip(premises, hypotheses, strict=True):
            # Lists: tok(p, "") would encode p alone, without the pair's second [SEP].
            enc = tok([p], [h], truncation=True, max_length=512, return_tensors="pt")
            rows.append(torch.softmax(model(**enc).logits[0].double(), dim=-1).numpy())
    return np.stack(rows)


@pytest.mark.parametrize("key", sorted(ORDERS))
def test_columns_follow_label_names(model_dirs: dict[str, Path], key: str) -> None:
    order = ORDERS[key]
    scorer = NLI_BACKENDS.build(f"hf:{model_dirs[key]}")
    assert isinstance(scorer, HFNLIScorer)
    assert scorer.label_index == {name: i for i, name in enumerate(order)}
    expected = direct_softmax(model_dirs[key], PREMISES, HYPOTHESES)
    got = scorer.contradiction(PREMISES, HYPOTHESES)
    assert got.dtype == np.float64 and got.shape == (len(PREMISES),)
    np.testing.assert_allclose(got, expected[:, order.index("contradiction")], rtol=0, atol=1e-6)
    probs = scorer.probabilities(PREMISES, HYPOTHESES)
    for col, name in enumerate(("entailment", "neutral", "contradiction")):
        np.testing.assert_allclose(probs[:, col], expected[:, order.index(name)], atol=1e-6)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-9)
    # The columns differ visibly, so a wrong index could not pass.
    assert np.ptp(expected.mean(axis=0)) > 0.05


def test_batched_equals_per_pair_loop(scorer: HFNLIScorer) -> None:
    assert isinstance(scorer, NLIScorer)
    loop = np.array(
        [scorer.contradiction([p], [h])[0] for p, h in zip(PREMISES, HYPOTHESES, strict=True)]
    )
    for batch_size in (1, 3, 32):
        scorer.batch_size = batch_size
        batched = scorer.contradiction(PREMISES, HYPOTHESES)
        assert np.max(np.abs(batched - loop)) < 1e-6
    scorer.batch_size = 32
    assert batched[0] == batched[5]  # the repeated pair


def test_input_order_is_kept(scorer: HFNLIScorer) -> None:
    base = scorer.contradiction(PREMISES, HYPOTHESES)
    perm = np.random.default_rng(0).permutation(len(PREMISES))
    shuffled = scorer.contradiction([PREMISES[i] for i in perm], [HYPOTHESES[i] for i in perm])
    np.testing.assert_allclose(shuffled, base[perm], rtol=0, atol=1e-6)
    # Swapping premise and hypothesis is a different pair.
    assert scorer.contradiction(PREMISES[:1], HYPOTHESES[:1])[0] != pytest.approx(
        scorer.contradiction(HYPOTHESES[:1], PREMISES[:1])[0], abs=1e-9
    )


class _Spy:
    """Wraps the model; records the shape and attention mask of every forward."""

    def __init__(self, model: Any) -> None:
        self.model, self.config, self.batches = model, model.config, []

    def __call__(self, **batch: torch.Tensor) -> Any:
        self.batches.append(batch["attention_mask"].clone())
        return self.model(**batch)


def test_dedup_sorting_and_dynamic_padding(model_dirs: dict[str, Path]) -> None:
    scorer = load_hf_nli(model_dirs["cen"], batch_size=2)
    spy = _Spy(scorer.model)
    scorer.model = spy
    premises, hypotheses = PREMISES * 3, HYPOTHESES * 3
    out = scorer.contradiction(premises, hypotheses)
    np.testing.assert_array_equal(out, np.tile(out[: len(PREMISES)], 3))
    unique = len(set(zip(PREMISES, HYPOTHESES, strict=True)))
    assert sum(m.shape[0] for m in spy.batches) == unique
    lengths = [int(m.sum(dim=1).max()) for m in spy.batches]
    assert lengths == sorted(lengths, reverse=True)  # longest batches first
    for mask in spy.batches:
        assert mask.shape[1] == int(mask.sum(dim=1).max())  # padded to its own longest pair
        assert int(mask.sum(dim=1).max()) <= scorer.max_length


def test_truncation_to_model_max_length(model_dirs: dict[str, Path]) -> None:
    scorer = load_hf_nli(model_dirs["cen"])
    assert scorer.max_length == 512
    huge = LONG * 3  # ~780 tokens
    assert np.isfinite(scorer.contradiction([huge], [huge])).all()
    # only_first cuts the premise; a pair whose hypothesis alone is too long falls back to
    # longest_first (pair 1 and 2) instead of failing the whole call.
    short = load_hf_nli(model_dirs["cen"], max_length=64, truncation="only_first")
    spy = _Spy(short.model)
    short.model = spy
    got = short.contradiction([LONG, "Benign.", LONG], ["Benign.", LONG, LONG])
    assert all(m.shape[1] <= 64 for m in spy.batches)
    loop = [short.contradiction([p], [h])[0] for p, h in [(LONG, "Benign."), ("Benign.", LONG)]]
    np.testing.assert_allclose(got[:2], loop, atol=1e-6)


def test_empty_input_and_empty_strings(scorer: HFNLIScorer) -> None:
    out = scorer.contradiction([], [])
    assert out.shape == (0,) and out.dtype == np.float64
    assert scorer.probabilities([], []).shape == (0, 3)
    both_empty = scorer.contradiction([""], [""])
    assert both_empty.shape == (1,) and 0.0 <= both_empty[0] <= 1.0


def test_bad_inputs(scorer: HFNLIScorer) -> None:
    with pytest.raises(ValueError, match="differ in length"):
        scorer.contradiction(["a", "b"], ["a"])
    with pytest.raises(TypeError, match="single string"):
        scorer.contradiction("a premise", "a hypothesis")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="pair 1"):
        scorer.contradiction(["a", None], ["b", "c"])  # type: ignore[list-item]


def test_unmappable_labels(tmp_path: Path) -> None:
    directory = save_random_nli_classifier(tmp_path / "m", label_order=("LABEL_0", "LABEL_1"))
    with pytest.raises(ConfigError, match="LABEL_0"):
        NLI_BACKENDS.build(f"hf:{directory}")


def test_map_nli_labels() -> None:
    assert map_nli_labels({0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}) == {
        "contradiction": 0,
        "neutral": 1,
        "entailment": 2,
    }
    assert map_nli_labels({"0": "Entails", "1": "contradict"}) == {
        "entailment": 0,
        "contradiction": 1,
    }
    with pytest.raises(ConfigError, match="not_entailment"):
        map_nli_labels({0: "entailment", 1: "not_entailment"})
    with pytest.raises(ConfigError, match="two labels"):
        map_nli_labels({0: "entailment", 1: "contradiction", 2: "Contradiction"})
    with pytest.raises(ConfigError, match="no contradiction"):
        map_nli_labels({0: "entailment", 1: "neutral"})


def test_two_way_model_has_zero_neutral(tmp_path: Path) -> None:
    directory = save_random_nli_classifier(
        tmp_path / "m", label_order=("entailment", "contradiction")
    )
    probs = load_hf_nli(directory).probabilities(PREMISES[:3], HYPOTHESES[:3])
    assert (probs[:, 1] == 0).all()
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-9)


def test_missing_model_names_the_pull_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATHGLS_MODELS_DIR", str(tmp_path))
    with pytest.raises(ModelNotFoundError, match="pathgls models pull hf:nobody/no-such-nli"):
        build_nli("hf:nobody/no-such-nli")
    with pytest.raises(ModelNotFoundError, match=f"pathgls models pull hf:{DEFAULT_NLI_MODEL}"):
        build_nli("hf")
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        build_nli(f"hf:{tmp_path / 'absent'}")


def test_repo_id_resolves_in_models_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    save_random_nli_classifier(tmp_path / "org--tiny-nli", label_order=ORDERS["nce"])
    monkeypatch.setenv("PATHGLS_MODELS_DIR", str(tmp_path))
    scorer = build_nli("hf:org/tiny-nli")
    assert isinstance(scorer, HFNLIScorer)
    assert scorer.name == "hf:org/tiny-nli" and scorer.model_id == "org/tiny-nli"
    assert scorer.random_weights and scorer.device == "cpu" and scorer.precision == "fp32"
    assert scorer.contradiction(PREMISES[:2], HYPOTHESES[:2]).shape == (2,)


def test_registry_listing() -> None:
    entries = {e.name: e for e in list_nli()}
    assert {"hf", "rules"} <= set(entries) and entries["hf"].kind == "nli"
    assert DEFAULT_NLI_MODEL in entries["hf"].description
    assert entries["hf"].meta["cards"] == ("nli-deberta", "nli-pubmedbert")


def _save_tiny_bert_nli(directory: Path) -> Path:
    """A tiny random BERT classifier laid out like pritamdeka/PubMedBERT-MNLI-MedNLI.

    BERT uses token types (``type_vocab_size=2``), which DeBERTa-v3 does not.
    """
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    words = sorted({w for t in PREMISES + HYPOTHESES for w in t.lower().replace(".", " ").split()})
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    chars = [chr(c) for c in range(33, 127)]
    vocab = {tok: i for i, tok in enumerate(dict.fromkeys(specials + chars + words))}
    tokenizer = BertTokenizer(vocab=vocab, model_max_length=128)
    order = ("contradiction", "entailment", "neutral")
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        type_vocab_size=2,
        initializer_range=0.25,
        id2label=dict(enumerate(order)),
        label2id={name: i for i, name in enumerate(order)},
    )
    torch.manual_seed(0)
    BertForSequenceClassification(config).eval().save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def test_bert_classifier_with_token_types(tmp_path: Path) -> None:
    directory = _save_tiny_bert_nli(tmp_path / "bert")
    scorer = load_hf_nli(directory, batch_size=3)
    assert scorer.max_length == 128
    got = scorer.contradiction(PREMISES, HYPOTHESES)  # compared with token types below
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(directory)
    model = AutoModelForSequenceClassification.from_pretrained(directory).eval()
    expected = []
    with torch.no_grad():
        for p, h in zip(PREMISES, HYPOTHESES, strict=True):
            enc = tok([p], [h], truncation=True, max_length=128, return_tensors="pt")
            assert int(enc["token_type_ids"].max()) == 1
            expected.append(torch.softmax(model(**enc).logits[0].double(), dim=-1)[0].item())
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)
