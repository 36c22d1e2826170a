"""ScoreCard version 2: status/subject fields, the version-1 reader, value(), typed evidence and
the JSON Schema, on real cards (a run on the real CMU slide and the version-1 fixtures)."""

from __future__ import annotations

import copy
import csv
import dataclasses
import json
import math
import os
import re
import subprocess
import sys
import typing
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest
from replay_inputs import contradicting_records, write_references, write_replay
from typer.testing import CliRunner

from pathgls import schema
from pathgls.cli import app
from pathgls.config import EncoderConfig, PathGLSConfig, RunConfig
from pathgls.errors import EvidenceError, ScoreCardError
from pathgls.evidence import (
    EVIDENCE_TYPES,
    CheckedStatement,
    CheckEvidence,
    ContradictionPair,
    FindingChanges,
    FoilStats,
    GroundedEntity,
    GroundingEvidence,
    GroundingSource,
    HareEntityMatch,
    HareEvidence,
    LogicEvidence,
    Record,
    ReportEvidence,
    SkippedEntity,
    StabilityEvidence,
    TopPatch,
    read_evidence,
)
from pathgls.fusion import FusionConfig, GateConfig, evidence_note, gate_scorecard
from pathgls.io.resources import resource
from pathgls.runner.items import WorkItem
from pathgls.runner.run import plan_tasks, run_benchmark
from pathgls.runner.store import ResultsStore
from pathgls.runner.summary import summarise
from pathgls.schema import REGENERATE, SCHEMA_PATH, schema_text
from pathgls.types import SCORECARD_VERSION, ModuleScore, ScoreCard

ROOT = Path(__file__).resolve().parents[1]
V1 = ROOT / "tests" / "data" / "scorecards_v1"
# the schema ships in the package (pathgls/resources), so installed users can validate cards too
SCHEMA = json.loads(resource("scorecard.schema.json").read_text(encoding="utf-8"))
V1_NAMES = ("ok_grounded", "partial", "failed")
ATTACK = "attack:false-malignant-history"
# schema $defs of each typed evidence record
RECORD_DEFS = {
    GroundingEvidence: "grounding_evidence",
    GroundedEntity: "grounded_entity",
    TopPatch: "top_patch",
    SkippedEntity: "skipped_entity",
    FoilStats: "foil_stats",
    GroundingSource: "grounding_source",
    LogicEvidence: "logic_evidence",
    ContradictionPair: "contradiction_pair",
    CheckEvidence: "check_evidence",
    CheckedStatement: "checked_statement",
    StabilityEvidence: "stability_evidence",
    FindingChanges: "finding_changes",
    HareEvidence: "hare_evidence",
    HareEntityMatch: "hare_entity_match",
    ReportEvidence: "report_evidence",
}


def v1(name: str) -> dict:
    return json.loads((V1 / f"{name}.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory, shared_data: Path, tiny_clip: Path) -> Path:
    """A real run: a recorded report on the real CMU slide grounded by a tiny random CLIP and
    scored against a reference (ok, every module), the same subject on a real ROI without a
    stain recording (partial) and a real TCGA slide without resolution metadata (failed)."""
    root = tmp_path_factory.mktemp("cards")
    clip = tiny_clip
    cmu = shared_data / "slides" / "cmu-1-small-region.svs"
    roi = shared_data / "tiles" / "tissue-level0-7352-11762-7864-12274.png"
    no_mpp = shared_data / "slides" / "tcga-cr-7395-01a-01-ts1.svs"
    slides = root / "slides"
    slides.mkdir()
    for f in (cmu, roi, no_mpp):
        (slides / f.name).symlink_to(f.resolve())
    records = contradicting_records(cmu.stem, ATTACK)
    records += contradicting_records(roi.stem, ATTACK, stain=False)
    replay = write_replay(root / "replay.jsonl", records)
    refs = write_references(root / "refs.tsv", cmu.stem)
    config = PathGLSConfig(
        run=RunConfig(subjects=(f"replay:{replay}",)), encoder=EncoderConfig(name=f"hf:{clip}")
    )
    result = run_benchmark(
        source=slides, config=config, out=root / "run", references=refs, plots=False
    )
    assert result.counts == {"ok": 1, "partial": 1, "failed": 1}
    return root / "run"


@pytest.fixture(scope="module")
def run_cards(run_dir: Path) -> dict[str, ScoreCard]:
    """The run's cards by status."""
    cards = ResultsStore(run_dir).load_cards()
    return {c.status: c for c in cards}


def _card_files(run_dir: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((run_dir / "scorecards").rglob("*.json"))]


# --- version 2 on disk ------------------------------------------------------------------------


def test_run_writes_version_2_cards_with_status_and_subject_fields(run_dir: Path) -> None:
    files = _card_files(run_dir)
    assert len(files) == 3
    for data in files:
        assert data["version"] == SCORECARD_VERSION == 2
        assert data["status"] in ("ok", "partial", "failed")
        assert data["subject"].startswith("replay:")
        assert "status" not in data["inputs"] and "subject" not in data["inputs"]
        assert data["inputs"]["subject_model_id"] == "replay.jsonl"
        card = ScoreCard.from_dict(data)
        assert card.to_dict() == data  # exact round trip
        assert ScoreCard.from_json(json.dumps(data)) == card
    failed = next(d for d in files if d["status"] == "failed")
    assert failed["trust"] is None and failed["decision"] is None and failed["modules"] == {}
    assert "MissingResolutionError" in failed["errors"][0]


def test_store_status_of_each_card(run_dir: Path, run_cards: dict[str, ScoreCard]) -> None:
    store = ResultsStore(run_dir)
    for status, card in run_cards.items():
        assert store.status(card.subject, card.item_id) == status
        assert store.is_done(card.subject, card.item_id) == (status == "ok")
    assert store.status(run_cards["ok"].subject, "no-such-item") is None


# --- the version-1 reader ---------------------------------------------------------------------


@pytest.mark.parametrize("name", V1_NAMES)
def test_v1_card_migrates_status_and_subject_out_of_inputs(name: str) -> None:
    old = v1(name)
    assert old["version"] == 1 and "status" in old["inputs"]
    card = ScoreCard.from_dict(old)
    assert card.version == 2
    assert card.status == old["inputs"]["status"] == name.split("_")[0]
    assert card.subject == old["inputs"]["subject"] == "replay:/tmp/v1gen/replay.jsonl"
    expected = copy.deepcopy(old)
    inputs = expected["inputs"]
    expected = {
        "item_id": expected.pop("item_id"),
        "subject": inputs.pop("subject"),
        "status": inputs.pop("status"),
        **expected,
        "version": 2,
    }
    for m in expected["modules"].values():  # the typed flag, read off the old warnings
        m["random_weights"] = any("random-weight" in w for w in m["warnings"])
    assert card.to_dict() == expected  # nothing else changed, nothing else added
    assert ScoreCard.from_dict(card.to_dict()) == card
    assert ScoreCard.from_json(card.to_json()) == card
    jsonschema.validate(card.to_dict(), SCHEMA)


def test_v1_card_without_status_reads_as_ok_and_says_so() -> None:
    old = v1("ok_grounded")
    del old["inputs"]["status"]
    card = ScoreCard.from_dict(old)
    assert card.status == "ok"
    assert card.warnings[-1] == "version-1 ScoreCard without inputs.status: read as ok"
    del old["inputs"]["subject"]
    assert ScoreCard.from_dict(old).subject == ""


def test_a_v1_run_directory_still_loads_plans_summarises_and_gates(
    tmp_path: Path, run_cards: dict[str, ScoreCard]
) -> None:
    old_run, new_run = ResultsStore(tmp_path / "old"), ResultsStore(tmp_path / "new")
    for name in V1_NAMES:
        data = v1(name)
        path = old_run.card_path(data["inputs"]["subject"], data["item_id"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data), encoding="utf-8")
        new_run.write_card(ScoreCard.from_dict(data))
    cards = old_run.load_cards()
    assert sorted(c.status for c in cards) == ["failed", "ok", "partial"]
    subject = cards[0].subject
    # a rerun over the old directory redoes exactly the cards that are not ok
    items = [WorkItem(item_id=c.item_id, path=str(c.inputs["item"]), kind="slide") for c in cards]
    todo = plan_tasks(items, PathGLSConfig(run=RunConfig(subjects=(subject,))), old_run)
    assert sorted(i.item_id for i, _ in todo) == sorted(
        c.item_id for c in cards if c.status != "ok"
    )
    # the summary of the old cards is the summary of the same cards written as version 2
    old_table = summarise(cards, n_boot=200)
    pd.testing.assert_frame_equal(old_table, summarise(new_run.load_cards(), n_boot=200))
    row = old_table.iloc[0]
    assert (row["n_ok"], row["n_partial"], row["n_failed"]) == (1, 1, 1)
    assert row["grounding_n"] == 2 and row["stability_n"] == 1  # the partial card has no S_s
    assert row["stability_mean"] == pytest.approx(
        v1("ok_grounded")["modules"]["stability"]["value"]
    )
    # the gate routes the old cards as their writer did, with the same reasons
    runner = CliRunner()
    for run in (old_run, new_run):
        res = runner.invoke(app, ["gate", str(run.root)])
        assert res.exit_code == 1, res.output  # the failed card
    rows = {}
    for run in (old_run, new_run):
        with (run.root / "gate.csv").open(encoding="utf-8") as f:
            rows[run.root.name] = {r["item_id"]: r for r in csv.DictReader(f)}
    for r in rows["old"].values():
        r.pop("file")
    for r in rows["new"].values():
        r.pop("file")
    assert rows["old"] == rows["new"]
    ok = v1("ok_grounded")
    gated = rows["old"][ok["item_id"]]
    assert gated["route"] == ok["decision"]["route"] == "review"
    # the same decision; the module lines now follow how much each lowered the trust
    reasons = gated["reasons"].split(" | ")
    assert reasons[0] == ok["decision"]["reasons"][0]
    assert {r.split()[0] for r in reasons[1:]} == {
        r.split()[0] for r in ok["decision"]["reasons"][1:]
    }
    assert gated["subject"] == ok["inputs"]["subject"]
    assert gated["grounding"] == f"{ok['modules']['grounding']['value']:.3f}"
    failed = rows["old"][v1("failed")["item_id"]]
    assert failed["route"] == "failed" and "MissingResolutionError" in failed["reasons"]


def test_regating_a_v1_card_repeats_its_decision() -> None:
    old = v1("ok_grounded")
    card = ScoreCard.from_dict(old)
    again = gate_scorecard(card, fusion=FusionConfig(), gate=GateConfig())
    assert again.trust == pytest.approx(old["trust"])
    assert again.decision is not None
    decision = dataclasses.asdict(again.decision)
    assert decision["route"] == old["decision"]["route"]
    assert decision["reasons"][0] == old["decision"]["reasons"][0]  # the same decision line
    assert decision["thresholds"] == {**old["decision"]["thresholds"], "min_coverage": 0.6}
    # every module the old reasons named is named again, the one that lowered the trust most
    # first, with how much (0.4 × (1 − 0.291) = 0.284 for its grounding)
    old_heads = {r.split()[0] for r in old["decision"]["reasons"][1:]}
    assert {r.split()[0] for r in decision["reasons"][1:]} == old_heads
    assert decision["reasons"][1].startswith("grounding 0.291 (lowered the trust by 0.284;")


# --- bad cards --------------------------------------------------------------------------------


def _ok() -> dict:
    return ScoreCard.from_dict(v1("ok_grounded")).to_dict()


def _set(path: str, value: object) -> dict:
    data = _ok()
    *parents, last = path.split(".")
    node = data
    for p in parents:
        node = node[p]
    node[last] = value
    return data


def _del(path: str) -> dict:
    data = _ok()
    *parents, last = path.split(".")
    node = data
    for p in parents:
        node = node[p]
    del node[last]
    return data


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([1, 2], "a ScoreCard is a JSON object, got list"),
        ({"inputs": {}}, "no item_id"),
        (_set("version", 3), "version 3 cannot be read by this pathgls"),
        (_set("version", "2"), "version: expected an integer"),
        (_set("status", "running"), "status: expected ok or partial or failed, got 'running'"),
        (_set("subject", 7), "subject: expected a string, got 7"),
        (_set("inputs.status", "ok"), "inputs holds status: since ScoreCard version 2"),
        (_set("colour", "red"), "ScoreCard: unknown key(s) colour"),
        (_set("modules.logic.value", "high"), "modules.logic.value: expected a number or null"),
        (_set("modules.logic.value", True), "modules.logic.value: expected a number or null"),
        (_set("modules.logic.name", "grounding"), "modules.logic: holds module 'grounding'"),
        (_set("modules.logic.evidence", [1]), "modules.logic.evidence: expected an object"),
        (_set("modules.logic", "x"), "modules.logic: expected an object, got str"),
        (_set("decision.route", "ship"), "decision.route: expected deploy or review or reject"),
        (_set("reports.original.text", None), "reports.original.text: expected a string"),
        (_set("trust", "0.5"), "trust: expected a number or null"),
        (_set("warnings", "oops"), "warnings: expected a list of strings"),
        (_set("status", "failed"), "a failed card has no trust score and no gate decision"),
    ],
)
def test_bad_cards_raise_a_scorecard_error_naming_the_key(data: object, message: str) -> None:
    with pytest.raises(ScoreCardError, match=re.escape(message)):
        ScoreCard.from_dict(data)  # type: ignore[arg-type]


def test_cards_read_back_exactly_and_their_numbers_as_the_schema_says() -> None:
    """An integer score or timing stays an integer (the card's JSON is the same after a read);
    timings and thresholds hold numbers, as the schema says (the reader before pydantic took any
    value there)."""
    data = _set("modules.logic.value", 1)
    data["timings"] = {"total": 3, "logic": 0.5}
    card = ScoreCard.from_dict(data)
    assert card.to_dict() == data and card.to_json() == json.dumps(data, indent=2)
    assert type(card.modules["logic"].value) is int and type(card.timings["total"]) is int
    for path, message in [
        ("timings.total", "timings.total: expected a number, got 'slow'"),
        ("decision.thresholds.deploy", "decision.thresholds.deploy: expected a number, got"),
    ]:
        with pytest.raises(ScoreCardError, match=re.escape(message)):
            ScoreCard.from_dict(_set(path, "slow"))


def test_a_missing_module_needs_its_reason() -> None:
    data = _set("modules.logic.value", None)
    with pytest.raises(
        ScoreCardError, match=re.escape("modules.logic: module 'logic' has no value")
    ):
        ScoreCard.from_dict(data)


@pytest.mark.parametrize(
    "kwargs",
    [{"status": "done"}, {"inputs": {"subject": "x"}}, {"item_id": ""}, {"subject": None}],
)
def test_constructor_validates(kwargs: dict) -> None:
    with pytest.raises(ScoreCardError):
        ScoreCard(**{"item_id": "x", **kwargs})


def test_wrong_types_anywhere_give_only_scorecard_errors(tmp_path: Path) -> None:
    """Every top-level and module key replaced by values of other types: a clear error or a
    card, never another exception (the store lists such files as unreadable)."""
    base = _ok()
    keys = [(k,) for k in base] + [
        ("modules", "grounding", k) for k in base["modules"]["grounding"]
    ]
    seen = 0
    for key in keys:
        for bad in (None, 3, "x", [], {}, [1], {"a": 1}):
            data = copy.deepcopy(base)
            node = data
            for k in key[:-1]:
                node = node[k]
            node[key[-1]] = bad
            try:
                ScoreCard.from_dict(data)
            except ScoreCardError:
                seen += 1
    assert seen > 50
    store = ResultsStore(tmp_path)
    (store.scorecards_dir / "s").mkdir(parents=True)
    (store.scorecards_dir / "s" / "bad.json").write_text(json.dumps(_set("status", 3)))
    (store.scorecards_dir / "s" / "nojson.json").write_text("{")
    listed = list(store.iter_cards())
    assert [c for _, c, _ in listed] == [None, None]
    assert all(e.startswith("ScoreCardError: ") for _, _, e in listed)
    assert store.status("s", "bad") is None


# --- value() ----------------------------------------------------------------------------------


def test_value_is_none_when_absent_missing_or_not_finite() -> None:
    card = ScoreCard(
        item_id="x",
        modules={
            "grounding": ModuleScore("grounding", 0.25),
            "logic": ModuleScore("logic", None, "no pair to check"),
            "stability": ModuleScore("stability", math.nan),
            "hare": ModuleScore("hare", math.inf),
            "judge": ModuleScore("judge", 1),
            "flag": ModuleScore("flag", True),  # type: ignore[arg-type]
        },
    )
    assert card.value("grounding") == 0.25
    assert card.value("judge") == 1.0 and isinstance(card.value("judge"), float)
    for name in ("logic", "stability", "hare", "flag", "absent"):
        assert card.value(name) is None, name


def test_value_on_real_cards(run_cards: dict[str, ScoreCard]) -> None:
    ok, partial, failed = run_cards["ok"], run_cards["partial"], run_cards["failed"]
    for name in ("grounding", "logic", "stability", "hare"):
        assert ok.value(name) == ok.modules[name].value and 0.0 <= ok.value(name) <= 1.0
    assert partial.value("stability") is None and partial.value("hare") is None
    assert all(failed.value(m) is None for m in ("grounding", "logic", "stability"))


# --- typed evidence ---------------------------------------------------------------------------


def test_typed_evidence_round_trips_every_real_card(
    run_cards: dict[str, ScoreCard], run_dir: Path
) -> None:
    n = 0
    cards = [*run_cards.values(), *(ScoreCard.from_dict(v1(x)) for x in V1_NAMES)]
    for card in cards:
        for name, score in card.modules.items():
            ev = read_evidence(name, score.evidence)
            assert isinstance(ev, EVIDENCE_TYPES[name])
            assert ev.to_dict() == score.evidence and ev.extra == {}
            assert type(ev).from_dict(ev.to_dict()) == ev
            n += 1
    # ok: 5 modules (the report side with its reference), partial: 3, their v1 twins: 4 and 3
    assert n == 5 + 3 + 4 + 3


def test_grounding_evidence_attributes(run_cards: dict[str, ScoreCard], run_dir: Path) -> None:
    card = run_cards["ok"]
    raw = card.modules["grounding"].evidence
    ev = card.evidence(GroundingEvidence)
    assert ev is not None and ev.calibration == "foil-rank" and ev.source is not None
    assert ev.source.kind == "bag" and ev.source.n_patches == card.inputs["n_patches"]
    assert [e.phrase for e in ev.entities] == [e["phrase"] for e in raw["entities"]]
    assert card.value("grounding") == pytest.approx(np.mean([e.calibrated for e in ev.entities]))
    low = ev.least_grounded()
    assert low is not None and low.calibrated == min(e["calibrated"] for e in raw["entities"])
    assert ev.find(low.concept.upper()) is low and ev.find("mitoses") is None
    assert len(low.box or ()) == 4 and low.top_patches[0].similarity == low.similarity
    assert [s.text for s in ev.skipped] == ["ER", "positive"]
    assert ev.negated == ("atypia",)
    assert ev.foils is not None and ev.foils.n == raw["foils"]["n"] > 0
    assert ev.map is not None and (run_dir / ev.map).is_file()


def test_logic_evidence_attributes(run_cards: dict[str, ScoreCard]) -> None:
    card = run_cards["ok"]
    ev = card.evidence(LogicEvidence)
    assert ev is not None and ev.nli == "rules" and ev.k == len(ev.top_pairs) == 1
    assert ev.n_pairs is not None and ev.n_pairs >= ev.k
    top = ev.top_pair()
    assert top is not None and top.rule == "finding" and top.explanation
    assert (top.premise, top.hypothesis) == (
        "Lymphovascular invasion is present.",
        "invasive carcinoma, no lymphovascular invasion.",
    )
    assert card.value("logic") == pytest.approx(
        1.0 - np.mean([p.probability for p in ev.top_pairs])
    )
    ranked = LogicEvidence(
        top_pairs=(
            ContradictionPair(premise="a", probability=0.2),
            ContradictionPair(premise="b"),
            ContradictionPair(premise="c", probability=0.9),
            ContradictionPair(premise="d", probability=0.9),
        )
    ).ranked()
    assert [p.premise for p in ranked] == ["c", "d", "a", "b"]


def test_stability_evidence_attributes(run_cards: dict[str, ScoreCard]) -> None:
    card = run_cards["ok"]
    ev = card.evidence(StabilityEvidence)
    assert ev is not None and ev.conditions == ("stain", ATTACK) and ev.attack in ATTACK
    assert ev.role("stain") == "aug" and ev.role(ATTACK) == "attack"
    assert ev.delta_of("aug") == ev.delta_aug == pytest.approx(0.0)  # same recorded text
    d_att = ev.delta_of("attack")
    # the default dx Δ: the same diagnosis and no key finding flipped, so no clinical change;
    # what the attack added is listed as evidence
    assert d_att == pytest.approx(0.0) and ev.delta == "dx"
    assert card.value("stability") == pytest.approx(1.0 - 0.5 * (abs(ev.delta_aug) + abs(d_att)))
    changes = ev.changes_of("attack")
    assert changes is not None and {"necrosis", "high grade"} <= set(changes.added)
    assert changes.diagnosis_changed is False and changes.diagnoses_after == ("invasive carcinoma",)
    assert ev.stain is not None and ev.stain["transformed"] == [True]
    # a stability that could not run keeps its sparse JSON: no Δ, no invented keys
    partial = run_cards["partial"].evidence(StabilityEvidence)
    assert partial is not None and partial.delta_aug is None and partial.conditions == ()
    assert "delta_aug" not in partial.to_dict() and partial.to_dict()["delta"] == "dx"


def test_hare_evidence_attributes(run_cards: dict[str, ScoreCard]) -> None:
    ev = run_cards["ok"].evidence(HareEvidence)
    assert ev is not None and ev.backend.startswith("offline")
    assert 0.0 < (ev.entity_f1 or 0) <= 1.0 and 0 < len(ev.entity_matches) <= 20
    best = max(ev.entity_matches, key=lambda m: m.similarity or 0.0)
    assert {best.text, best.match} == {"invasive carcinoma", "invasive ductal carcinoma"}
    assert run_cards["partial"].evidence(HareEvidence) is None  # no reference for the ROI


def test_unknown_keys_survive_a_round_trip(run_cards: dict[str, ScoreCard]) -> None:
    raw = copy.deepcopy(run_cards["ok"].modules["grounding"].evidence)
    raw["from_the_future"] = {"a": [1, 2]}
    raw["entities"][0]["attention"] = 0.5
    raw["entities"][0]["top_patches"][0]["stain"] = "dark"
    raw["source"]["mpp"] = 0.5
    ev = GroundingEvidence.from_dict(raw)
    assert ev.extra == {"from_the_future": {"a": [1, 2]}}
    assert ev.entities[0].extra == {"attention": 0.5}
    assert ev.entities[0].top_patches[0].extra == {"stain": "dark"}
    assert ev.source is not None and ev.source.extra == {"mpp": 0.5}
    assert ev.to_dict() == raw
    card = ScoreCard.from_dict(run_cards["ok"].to_dict())
    card.modules["grounding"].evidence = raw
    assert ScoreCard.from_json(card.to_json()).evidence(GroundingEvidence) == ev
    jsonschema.validate(card.to_dict(), SCHEMA)  # the schema admits keys it does not list


@pytest.mark.parametrize(
    ("kind", "data", "message"),
    [
        (
            GroundingEvidence,
            {"entities": [{"phrase": "x", "calibrated": "high"}]},
            "grounding evidence.entities[0].calibrated: expected a number, got 'high'",
        ),
        (GroundingEvidence, {"entities": [{}, "junk"]}, "entities[1]: expected an object"),
        (GroundingEvidence, {"templates": "a {}"}, "templates: expected a list of strings"),
        (GroundingEvidence, {"phrase": None, "entities": None}, "entities: expected a list"),
        (LogicEvidence, {"k": 1.5}, "logic evidence.k: expected an integer, got 1.5"),
        (LogicEvidence, {"top_pairs": [{"probability": True}]}, "probability: expected a number"),
        (StabilityEvidence, {"changes_attack": {"diagnosis_changed": "yes"}}, "true or false"),
        (StabilityEvidence, {"stain": [1]}, "stability evidence.stain: expected an object"),
        (HareEvidence, [], "hare evidence: expected an object, got []"),
    ],
)
def test_malformed_evidence_names_the_key(kind: type[Record], data: object, message: str) -> None:
    with pytest.raises(EvidenceError, match=re.escape(message)):
        kind.from_dict(data)


def test_a_record_held_twice_is_read_the_same_both_times() -> None:
    """pydantic builds a record's reader once and refers to it: the second field of the same
    record type (changes_attack after changes_aug) is read as strictly, and keeps its extras."""
    data = {"changes_aug": {"added": ["a"], "x": 1}, "changes_attack": {"removed": ["b"], "y": 2}}
    ev = StabilityEvidence.from_dict(data)
    assert ev.changes_aug is not None and ev.changes_aug.extra == {"x": 1}
    assert ev.changes_attack is not None and ev.changes_attack.extra == {"y": 2}
    assert ev.to_dict() == data
    for key in ("changes_aug", "changes_attack"):
        bad = {key: {"diagnosis_changed": "yes"}}
        with pytest.raises(EvidenceError, match=re.escape(f"{key}.diagnosis_changed: expected")):
            StabilityEvidence.from_dict(bad)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"statements": {"assertion": "12"}}, "statements.assertion: expected an integer"),
        ({"pairs_by_kind": {"check": 1.5}}, "pairs_by_kind.check: expected an integer"),
        ({"silent": ["a", 3]}, "logic evidence.silent[1]: expected a string, got 3"),
        ({"top_pairs": [{"checks": [{"first": None}]}]}, "checks[0].first: expected an object"),
        ({"n_pairs": True}, "logic evidence.n_pairs: expected an integer, got True"),
        ({"nli": "x" * 500}, None),  # long strings are read
    ],
)
def test_logic_evidence_is_read_as_its_schema_says(data: dict, message: str | None) -> None:
    """Values are read as the JSON Schema states them, counts included (the reader before
    pydantic accepted any value in ``statements`` and ``pairs_by_kind``)."""
    if message is None:
        assert LogicEvidence.from_dict(data).to_dict() == data
        return
    with pytest.raises(EvidenceError, match=re.escape(message)):
        LogicEvidence.from_dict(data)


def test_pydantic_is_imported_on_the_first_read_not_at_import() -> None:
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "import pathgls, pathgls.evidence, pathgls.schema, pathgls.types\n"
        "from pathgls.cli import app\n"
        "assert CliRunner().invoke(app, ['--help']).exit_code == 0\n"
        "print('pydantic' in sys.modules)\n"
        "pathgls.evidence.LogicEvidence.from_dict({'k': 1})\n"
        "print('pydantic' in sys.modules)\n"
    )
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout.split() == ["False", "True"], out.stderr


def test_absent_keys_read_as_defaults_never_invented_numbers() -> None:
    ev = GroundingEvidence.from_dict({})
    assert ev.entities == () and ev.least_grounded() is None and ev.map is None
    assert ev.to_dict() == {}
    e = GroundedEntity.from_dict({"phrase": "x"})
    assert e.similarity is None and e.calibrated is None and e.uncertain is None
    # JSON null is read where the field may be None, and written back
    m = HareEntityMatch.from_dict({"text": "a", "match": None})
    assert m.match is None and m.to_dict() == {"text": "a", "match": None}


def test_records_built_in_code_write_todays_json() -> None:
    assert LogicEvidence(n_pairs=0, nli="rules").to_dict() == {"n_pairs": 0, "nli": "rules"}
    assert StabilityEvidence(delta="embedding").to_dict() == {"delta": "embedding"}
    pair = ContradictionPair(premise="a", hypothesis="b", probability=0.5, kind="k")
    assert pair.to_dict() == {
        "premise": "a",
        "hypothesis": "b",
        "probability": 0.5,
        "kind": "k",
        "premise_sentence": None,
        "hypothesis_sentence": None,
    }
    with pytest.raises(EvidenceError, match="extra repeats the field"):
        LogicEvidence(extra={"k": 3})


def test_evidence_note_on_malformed_evidence_says_so() -> None:
    score = ModuleScore("grounding", 0.3, evidence={"entities": [{"phrase": "x"}, "junk"]})
    note = evidence_note(score)
    assert note.startswith("grounding 0.300 (evidence unreadable: grounding evidence.entities[1]")
    ok = ModuleScore("grounding", 0.3, evidence={"entities": [{"phrase": "x", "calibrated": 0.1}]})
    assert evidence_note(ok) == "grounding 0.300: least grounded 'x' (calibrated 0.100)"
    assert evidence_note(ModuleScore("judge", 0.5, evidence={"any": "thing"})) == "judge 0.500"


# --- the JSON Schema --------------------------------------------------------------------------


def test_the_shipped_schema_is_the_generated_one() -> None:
    """The schema is generated from the card dataclasses and evidence records: a field added in
    code and not regenerated fails here."""
    assert resource("scorecard.schema.json") == SCHEMA_PATH
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text(), (
        f"{SCHEMA_PATH} differs from the code's schema: run `{REGENERATE}` and commit it"
    )


def test_the_schema_is_valid_and_every_real_card_matches_it(run_dir: Path) -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    validator = jsonschema.Draft202012Validator(SCHEMA)
    files = _card_files(run_dir)
    for data in files:
        errors = [e.message for e in validator.iter_errors(data)]
        assert not errors, (data["item_id"], errors)
    for name in V1_NAMES:
        raw = v1(name)
        assert not validator.is_valid(raw)  # a v1 card is not a v2 card ...
        assert validator.is_valid(ScoreCard.from_dict(raw).to_dict())  # ... until read


def test_a_constraint_on_a_field_that_is_gone_stops_the_generator(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(schema, "CONSTRAINTS", {**schema.CONSTRAINTS, (TopPatch, "boxes"): {}})
    with pytest.raises(ValueError, match=re.escape("names TopPatch.boxes, which has no such")):
        schema.scorecard_schema()


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("status", "done"),
        ("status", "failed"),  # with a trust score and a decision
        ("inputs.status", "ok"),
        ("version", 1),
        ("trust", "high"),
        ("modules.logic.value", "x"),
        ("modules.logic.value", 1.5),  # a score outside [0, 1]
        ("modules.logic.value", -0.01),
        ("modules.logic.value", True),
        ("modules.logic.missing_reason", 3),
        ("modules.logic.random_weights", "no"),
        ("modules.logic.colour", "red"),
        ("decision.route", "ship"),
        ("decision.reasons", "why"),
        ("reports.original.text", None),
        ("reports.original.tone", "calm"),
        ("status", "running"),
        ("subject", 7),
        ("item_id", ""),
        ("colour", "red"),
        ("warnings", "oops"),
        ("version", "2"),
    ],
)
def test_the_schema_rejects_what_the_reader_rejects(path: str, value: object) -> None:
    data = _set(path, value)
    assert not jsonschema.Draft202012Validator(SCHEMA).is_valid(data)
    with pytest.raises(ScoreCardError):
        ScoreCard.from_dict(data)


@pytest.mark.parametrize(
    "path", ["item_id", "modules.logic.value", "modules.logic.name", "reports.original.text"]
)
def test_the_schema_requires_what_the_reader_requires(path: str) -> None:
    data = _del(path)
    assert not jsonschema.Draft202012Validator(SCHEMA).is_valid(data)
    with pytest.raises(ScoreCardError):
        ScoreCard.from_dict(data)


def test_the_schema_requires_every_key_a_card_writes() -> None:
    """The reader fills absent keys with defaults; the schema describes what ``to_dict``
    writes: every key (``random_weights`` excepted: cards written before it lack it)."""
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for path in ("trust", "decision", "modules.logic.warnings", "decision.thresholds"):
        data = _del(path)
        assert not validator.is_valid(data), path
        ScoreCard.from_dict(data)  # read, with the default
    assert validator.is_valid(_del("modules.logic.random_weights"))


def test_the_schema_rejects_malformed_evidence(run_cards: dict[str, ScoreCard]) -> None:
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for module, key, value in [
        ("grounding", "entities", [{"calibrated": "high"}]),
        ("logic", "top_pairs", [{"probability": "x"}]),
        ("stability", "delta_aug", "x"),
        ("hare", "entity_f1", []),
        ("grounding", "source", {"n_patches": "12"}),
        ("grounding", "entities", [{"box": [1, 2, "3", 4]}]),
        ("grounding", "templates", "a {}"),
        ("logic", "k", 1.5),
        ("logic", "top_pairs", [{"checks": [{"first": {"sentence": 3}}]}]),
        ("stability", "changes_attack", {"diagnosis_changed": "yes"}),
        ("stability", "stain", [1]),
        ("hare", "entity_matches", [{"negated": 0}]),
        ("report", "raw", "0.5"),
    ]:
        data = run_cards["ok"].to_dict()
        data["modules"][module]["evidence"][key] = value
        assert not validator.is_valid(data), module
        with pytest.raises(EvidenceError):
            read_evidence(module, data["modules"][module]["evidence"])
    failed = run_cards["failed"].to_dict()
    failed["trust"] = 0.5
    assert not validator.is_valid(failed)  # a failed card has no trust


@pytest.mark.parametrize("record", list(RECORD_DEFS), ids=lambda r: r.__name__)
def test_the_schema_documents_every_record_field(record: type[Record]) -> None:
    props = SCHEMA["$defs"][RECORD_DEFS[record]]["properties"]
    fields = {f.name: f for f in dataclasses.fields(record) if f.name not in ("extra", "_keys")}
    assert set(props) == set(fields)
    for name, f in fields.items():
        spec = props[name]
        types = spec.get("type", [])
        nullable = "null" in types or {"type": "null"} in spec.get("oneOf", [])
        assert nullable == (f.default is None), name
        hint = typing.get_type_hints(record)[name]
        assert ("null" in typing.get_args(hint) or type(None) in typing.get_args(hint)) == (
            f.default is None
        ), name


def test_schema_and_card_fields_agree() -> None:
    assert set(SCHEMA["properties"]) == {f.name for f in dataclasses.fields(ScoreCard)}
    assert SCHEMA["properties"]["status"]["enum"] == ["ok", "partial", "failed"]
    assert SCHEMA["properties"]["version"]["const"] == SCORECARD_VERSION


def test_fixtures_are_untouched_v1_cards() -> None:
    """The fixtures are version 1 as written (regenerating them needs the old code)."""
    for name in V1_NAMES:
        data = v1(name)
        assert data["version"] == 1 and "status" not in data and "subject" not in data
