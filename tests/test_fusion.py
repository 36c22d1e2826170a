"""Fusion (trust score with renormalised weights), gate routing and ``pathgls gate``."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from pathgls.cli import gate as gate_cli
from pathgls.errors import ConfigError
from pathgls.fusion import FusionConfig, GateConfig, fuse, gate_scorecard, route
from pathgls.types import ModuleScore, ScoreCard

G_EV = {
    "entities": [
        {"phrase": "invasive ductal carcinoma", "calibrated": 0.8},
        {"phrase": "mitotic figures", "calibrated": 0.12},
    ]
}
L_EV = {
    "top_pairs": [
        # a check fired on it: a contradiction (a probability alone is not one: test_reasons)
        {
            "premise": "tumour is benign",
            "hypothesis": "invasive carcinoma",
            "probability": 0.93,
            "rule": "benign_vs_malignant",
        }
    ]
}
S_EV = {"delta_aug": 0.1, "delta_attack": 0.6, "changes_attack": {"diagnosis_changed": True}}


def mods(g: float | None = 0.8, lo: float | None = 0.6, s: float | None = 0.5, **kw):
    out = {}
    for name, v, ev in (("grounding", g, G_EV), ("logic", lo, L_EV), ("stability", s, S_EV)):
        if v is None:
            out[name] = ModuleScore(name=name, value=None, missing_reason=f"no {name} input")
        else:
            out[name] = ModuleScore(name=name, value=v, evidence=kw.get(name, ev))
    return out


def test_all_present_weighted_sum() -> None:
    res = fuse(modules=mods(0.8, 0.6, 0.5), config=FusionConfig())
    assert res.trust == pytest.approx(0.4 * 0.8 + 0.3 * 0.6 + 0.3 * 0.5)
    assert res.used == pytest.approx({"grounding": 0.4, "logic": 0.3, "stability": 0.3})
    assert res.missing == {} and res.penalties == [] and res.reason is None


def test_one_missing_renormalises() -> None:
    res = fuse(modules=mods(None, 0.6, 0.4), config=FusionConfig())
    assert res.used == pytest.approx({"logic": 0.5, "stability": 0.5})
    assert res.trust == pytest.approx(0.5)
    assert res.missing == {"grounding": "no grounding input"}
    res = fuse(modules=mods(0.8, 0.6, None), config=FusionConfig())
    assert res.used == pytest.approx({"grounding": 4 / 7, "logic": 3 / 7})
    assert res.trust == pytest.approx((0.4 * 0.8 + 0.3 * 0.6) / 0.7)


def test_absent_module_is_missing_too() -> None:
    m = mods()
    del m["stability"]
    res = fuse(modules=m, config=FusionConfig())
    assert res.missing == {"stability": "not in the scorecard"}
    assert sum(res.used.values()) == pytest.approx(1.0)


def test_all_missing_gives_none_with_reason() -> None:
    res = fuse(modules=mods(None, None, None), config=FusionConfig())
    assert res.trust is None and res.used == {}
    assert set(res.missing) == {"grounding", "logic", "stability"}
    assert res.reason and "no logic input" in res.reason
    assert fuse(modules={}, config=FusionConfig()).trust is None


def test_reference_penalties_off_and_on() -> None:
    m = mods(0.2, 0.4, 0.9)
    base = 0.4 * 0.2 + 0.3 * 0.4 + 0.3 * 0.9
    off = fuse(modules=m, config=FusionConfig())
    assert off.trust == pytest.approx(base) and off.penalties == []
    on = fuse(modules=m, config=FusionConfig(reference_penalties=True))
    assert on.trust == pytest.approx(base * 0.6 * 0.8)
    assert len(on.penalties) == 2
    # At the boundaries no penalty applies (strictly below).
    at = fuse(modules=mods(0.25, 0.5, 0.9), config=FusionConfig(reference_penalties=True))
    assert at.penalties == []


@pytest.mark.parametrize(
    "kw",
    [
        {"weights": {"grounding": -0.1}},
        {"weights": {}},
        {"weights": {"grounding": 0.0}},
        {"weights": {"grounding": float("nan")}},
    ],
)
def test_fusion_config_validation(kw) -> None:
    with pytest.raises(ConfigError):
        FusionConfig(**kw)


@pytest.mark.parametrize(
    "kw",
    [{"deploy": 0.4, "review": 0.5}, {"deploy": 1.2}, {"floors": {"grounding": 2.0}}],
)
def test_gate_config_validation(kw) -> None:
    with pytest.raises(ConfigError):
        GateConfig(**kw)


@pytest.mark.parametrize(
    ("trust", "expected"),
    [
        (0.75, "deploy"),
        (0.7495, "deploy"),  # printed 0.750: the rounded number decides
        (0.7494999, "review"),  # printed 0.749
        (0.5, "review"),
        (0.4996, "review"),  # printed 0.500 (the demo's captioner-obedient, issue 24)
        (0.4994999, "reject"),  # printed 0.499
        (1.0, "deploy"),
        (0.0, "reject"),
    ],
)
def test_route_at_thresholds_agrees_with_the_printed_trust(trust: float, expected: str) -> None:
    d = route(trust=trust, modules=mods(), config=GateConfig())
    assert d.route == expected
    assert d.thresholds == {"deploy": 0.75, "review": 0.5, "min_coverage": 0.6}
    # the decision line shows the trust with the decimals it was decided on
    shown = f"{round(trust, 3):.3f}"
    assert f"trust {shown} " in d.reasons[0]
    sign = {"deploy": "≥ deploy", "review": "in review band", "reject": "< review"}[expected]
    assert sign in d.reasons[0]


def test_floor_blocks_deploy_and_names_module() -> None:
    cfg = GateConfig(floors={"grounding": 0.9})
    d = route(trust=0.95, modules=mods(0.85), config=cfg)
    assert d.route == "review"
    assert "grounding" in d.reasons[0] and "0.850" in d.reasons[0] and "0.900" in d.reasons[0]
    assert d.thresholds["floor:grounding"] == 0.9
    # Floor exactly met holds.
    assert route(trust=0.95, modules=mods(0.9), config=cfg).route == "deploy"
    # A floored module that is missing does not hold.
    d = route(trust=0.95, modules=mods(None), config=cfg)
    assert d.route == "review" and "missing" in d.reasons[0]
    # Floors never lift a reject.
    assert route(trust=0.1, modules=mods(0.1), config=cfg).route == "reject"


def test_missing_trust_is_reviewed_never_deployed() -> None:
    m = mods(None, None, None)
    d = route(trust=None, modules=m, config=GateConfig(deploy=0.0, review=0.0))
    assert d.route == "review"
    assert d.reasons[0].startswith("no trust score: ")
    card = gate_scorecard(
        ScoreCard(item_id="x", modules=m), fusion=FusionConfig(), gate=GateConfig()
    )
    assert card.trust is None and card.decision is not None
    assert card.decision.route == "review"
    assert card.decision.reasons[0].startswith("no trust score: ")


def test_reasons_point_to_evidence() -> None:
    d = route(trust=0.3, modules=mods(0.2, 0.3, 0.4), config=GateConfig())
    text = "\n".join(d.reasons)
    assert "'mitotic figures'" in text and "0.120" in text
    assert "'tumour is benign'" in text and "'invasive carcinoma'" in text and "0.930" in text
    assert "prompt attack (0.600)" in text and "diagnosis changed" in text
    # Without the weights: the weakest module first after the decisive reason.
    assert d.reasons[1].startswith("grounding 0.200")


def test_reasons_follow_how_much_each_module_lowered_the_trust() -> None:
    # grounding 0.7 with weight 0.4 lowers the trust by 0.12; logic 0.5 with 0.3 by 0.15;
    # stability 0.9 by 0.03: logic moved it most although grounding's weight is larger
    card = ScoreCard(item_id="x", modules=mods(0.7, 0.5, 0.9))
    got = gate_scorecard(card, fusion=FusionConfig(), gate=GateConfig())
    assert got.trust == pytest.approx(0.7)
    heads = [r.split(" (")[0] for r in got.decision.reasons[1:4]]
    assert heads == ["logic 0.500", "grounding 0.700", "stability 0.900"]
    assert "lowered the trust by 0.150; 30% of the weight" in got.decision.reasons[1]
    assert "lowered the trust by 0.120; 40% of the weight" in got.decision.reasons[2]
    # the lowered amounts add up to 1 − trust
    lowered = [float(r.split("lowered the trust by ")[1][:5]) for r in got.decision.reasons[1:4]]
    assert sum(lowered) == pytest.approx(1 - got.trust)
    # a scored module without a weight (hare) is named, marked as not fused, after them
    card.modules["hare"] = ModuleScore(name="hare", value=0.2)
    got = gate_scorecard(card, fusion=FusionConfig(), gate=GateConfig())
    assert got.trust == pytest.approx(0.7)
    assert got.decision.reasons[4] == "hare 0.200 (not fused)"


def test_evidence_with_missing_keys_does_not_crash() -> None:
    m = mods(0.2, 0.3, 0.4, grounding={}, logic={"top_pairs": []}, stability={"delta_aug": 0.2})
    m["grounding"].evidence = {"entities": [{"phrase": "x"}, "junk"]}
    d = route(trust=0.3, modules=m, config=GateConfig())
    assert d.route == "reject"
    assert any("stain augmentation (0.200)" in r for r in d.reasons)


def test_gate_scorecard_fills_and_keeps_original() -> None:
    card = ScoreCard(item_id="a", modules=mods(0.9, 0.9, 0.9))
    out = gate_scorecard(card, fusion=FusionConfig(), gate=GateConfig())
    assert out.trust == pytest.approx(0.9) and out.decision.route == "deploy"
    assert card.trust is None and card.decision is None
    pen = gate_scorecard(
        ScoreCard(item_id="b", modules=mods(0.9, 0.4, 0.9)),
        fusion=FusionConfig(reference_penalties=True),
        gate=GateConfig(),
    )
    assert any(r.startswith("reference penalty: logic") for r in pen.decision.reasons)


# --- CLI -------------------------------------------------------------------------------


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def _main() -> None:
        """Test app."""

    gate_cli.register(app)
    return app


def _write(path: Path, item: str, values: tuple[float | None, float | None, float | None]) -> None:
    card = ScoreCard(item_id=item, subject="replay:demo", modules=mods(*values))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(card.to_json(), encoding="utf-8")


def test_cli_routes_run_dir(tmp_path: Path) -> None:
    _write(tmp_path / "a" / "deploy.json", "slide-ok", (0.9, 0.9, 0.9))
    _write(tmp_path / "b" / "review.json", "slide-meh", (0.6, 0.6, 0.6))
    _write(tmp_path / "reject.json", "slide-bad", (0.1, 0.2, 0.3))
    (tmp_path / "broken.json").write_text("{not json", encoding="utf-8")
    (tmp_path / "manifest.json").write_text('{"slides": []}', encoding="utf-8")
    res = CliRunner().invoke(_app(), ["gate", str(tmp_path)])
    assert res.exit_code == 1, res.output
    assert "broken.json" in res.output and "manifest.json" in res.output
    with (tmp_path / "gate.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    routes = {r["item_id"]: r["route"] for r in rows}
    assert routes == {"slide-ok": "deploy", "slide-meh": "review", "slide-bad": "reject"}
    bad = next(r for r in rows if r["item_id"] == "slide-bad")
    assert bad["subject"] == "replay:demo" and bad["grounding"] == "0.100"
    assert bad["trust"] == f"{0.4 * 0.1 + 0.3 * 0.2 + 0.3 * 0.3:.3f}"
    assert "mitotic figures" in bad["reasons"] and " | " in bad["reasons"]


def test_cli_all_deploy_exits_zero_and_custom_csv(tmp_path: Path) -> None:
    _write(tmp_path / "one.json", "s1", (0.9, 0.9, 0.9))
    _write(tmp_path / "two.json", "s2", (0.8, None, 0.8))
    out = tmp_path / "out" / "g.csv"
    res = CliRunner().invoke(_app(), ["gate", str(tmp_path), "--csv", str(out)])
    assert res.exit_code == 0, res.output
    assert out.is_file() and not (tmp_path / "gate.csv").exists()
    # A floor on a missing module sends it to review, still exit 0.
    res = CliRunner().invoke(_app(), ["gate", str(tmp_path), "--floor", "logic=0.5"])
    assert res.exit_code == 0, res.output
    with (tmp_path / "gate.csv").open(encoding="utf-8") as f:
        routes = {r["item_id"]: r["route"] for r in csv.DictReader(f)}
    assert routes == {"s1": "deploy", "s2": "review"}


@pytest.mark.parametrize(
    "args",
    [
        ["--floor", "grounding"],
        ["--floor", "grounding=high"],
        ["--floor", "=0.3"],
        ["--deploy", "0.4", "--review", "0.5"],
    ],
)
def test_cli_usage_errors_exit_two(tmp_path: Path, args: list[str]) -> None:
    _write(tmp_path / "one.json", "s1", (0.9, 0.9, 0.9))
    res = CliRunner().invoke(_app(), ["gate", str(tmp_path), *args])
    assert res.exit_code == 2, res.output


def test_cli_no_scorecards_exit_two(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("[]", encoding="utf-8")
    assert CliRunner().invoke(_app(), ["gate", str(tmp_path)]).exit_code == 2


def test_deploy_needs_enough_of_the_fusion_weight() -> None:
    # Stability alone (0.3 of the weight) at 1.0 is not enough to deploy; logic + stability is.
    alone = gate_scorecard(
        ScoreCard(item_id="s", modules=mods(None, None, 1.0)),
        fusion=FusionConfig(),
        gate=GateConfig(),
    )
    assert alone.trust == pytest.approx(1.0) and alone.decision.route == "review"
    assert any("only 30.0% of the fusion weight" in r for r in alone.decision.reasons)
    no_image = GateConfig(required=[])  # the coverage rule alone, without the image rule
    pair = gate_scorecard(
        ScoreCard(item_id="p", modules=mods(None, 0.9, 0.9)),
        fusion=FusionConfig(),
        gate=no_image,
    )
    assert pair.decision.route == "deploy"
    relaxed = gate_scorecard(
        ScoreCard(item_id="s", modules=mods(None, None, 1.0)),
        fusion=FusionConfig(),
        gate=GateConfig(min_coverage=0.3, required=[]),
    )
    assert relaxed.decision.route == "deploy"
    with pytest.raises(ConfigError):
        GateConfig(min_coverage=1.5)


def test_cli_reads_run_scorecards_and_lists_failed_items(tmp_path: Path) -> None:
    _write(tmp_path / "scorecards" / "replay-demo" / "ok.json", "s1", (0.9, 0.9, 0.9))
    failed = ScoreCard(
        item_id="broken",
        subject="replay:demo",
        status="failed",
        errors=["SlideOpenError: broken.svs: not a slide\ntraceback"],
    )
    (tmp_path / "scorecards" / "replay-demo" / "broken.json").write_text(failed.to_json())
    (tmp_path / "manifest.json").write_text('{"status": "finished"}', encoding="utf-8")
    res = CliRunner().invoke(_app(), ["gate", str(tmp_path)])
    # the manifest next to scorecards/ is not read as a card; the failed item makes exit 1
    assert res.exit_code == 1, res.output
    assert "manifest.json" not in res.output and "1 failed (no report)" in res.output
    with (tmp_path / "gate.csv").open(encoding="utf-8") as f:
        rows = {r["item_id"]: r for r in csv.DictReader(f)}
    assert rows["s1"]["route"] == "deploy"
    assert rows["broken"]["route"] == "failed" and rows["broken"]["trust"] == ""
    assert rows["broken"]["reasons"] == "SlideOpenError: broken.svs: not a slide"


def test_cli_reference_penalties_flag(tmp_path: Path) -> None:
    # S_l = 0.4 < 0.5: trust 0.4·0.9 + 0.3·0.4 + 0.3·0.9 = 0.75 deploys without the penalty,
    # and 0.75 × 0.6 = 0.45 is rejected with it
    _write(tmp_path / "a.json", "s1", (0.9, 0.4, 0.9))
    plain = CliRunner().invoke(_app(), ["gate", str(tmp_path)])
    assert plain.exit_code == 0, plain.output
    res = CliRunner().invoke(_app(), ["gate", str(tmp_path), "--reference-penalties"])
    assert res.exit_code == 1, res.output
    with (tmp_path / "gate.csv").open(encoding="utf-8") as f:
        (row,) = list(csv.DictReader(f))
    assert row["route"] == "reject" and row["trust"] == "0.450"
    assert "reference penalty: logic" in row["reasons"]


def test_floors_and_coverage_decide_on_the_printed_numbers() -> None:
    # grounding 0.8996 is printed 0.900: it holds a 0.9 floor
    cfg = GateConfig(floors={"grounding": 0.9})
    assert route(trust=0.95, modules=mods(0.8996), config=cfg).route == "deploy"
    d = route(trust=0.95, modules=mods(0.8994), config=cfg)
    assert d.route == "review" and "grounding 0.899 < 0.900" in d.reasons[0]
    # coverage 0.5996 is printed 60.0%: enough for min_coverage 0.6
    assert route(trust=0.9, modules=mods(), config=GateConfig(), coverage=0.5996).route == (
        "deploy"
    )
    d = route(trust=0.9, modules=mods(), config=GateConfig(), coverage=0.5994)
    assert d.route == "review" and "only 59.9% of the fusion weight" in d.reasons[0]


# --- deploy needs the image ([gate] required) --------------------------------------------


def test_deploy_needs_grounding_by_default() -> None:
    # consistent and stable (logic, stability 0.99) but never checked against the image
    unseen = ScoreCard(item_id="u", modules=mods(None, 0.99, 0.99))
    got = gate_scorecard(unseen, fusion=FusionConfig(), gate=GateConfig())
    assert got.trust == pytest.approx(0.99) and got.decision.route == "review"
    first = got.decision.reasons[0]
    assert first.startswith("trust 0.990 ≥ deploy 0.750, but deploy needs grounding scored")
    assert "grounding missing (no grounding input)" in first
    assert "pathgls models pull plip" in first and "--encoder plip" in first
    assert "[gate] required" in first
    # with grounding scored the same report deploys
    seen = ScoreCard(item_id="s", modules=mods(0.9, 0.99, 0.99))
    assert gate_scorecard(seen, fusion=FusionConfig(), gate=GateConfig()).decision.route == (
        "deploy"
    )
    # a requirement never lifts a low trust: below review it is still rejected, and says so
    low = gate_scorecard(
        ScoreCard(item_id="l", modules=mods(None, 0.2, 0.3)),
        fusion=FusionConfig(),
        gate=GateConfig(),
    )
    assert low.decision.route == "reject"
    assert any(
        r.startswith("also blocks deploy: deploy needs grounding") for r in low.decision.reasons
    )


def test_required_modules_come_from_the_config(tmp_path: Path) -> None:
    from pathgls.config import load_config

    unseen = ScoreCard(item_id="u", modules=mods(None, 0.99, 0.99))
    path = tmp_path / "gate.toml"
    path.write_text("[gate]\nrequired = []\n", encoding="utf-8")
    gate = load_config(path).gate
    assert gate.required == ()
    assert gate_scorecard(unseen, fusion=FusionConfig(), gate=gate).decision.route == "deploy"
    path.write_text('[gate]\nrequired = ["logic", "stability"]\n', encoding="utf-8")
    gate = load_config(path).gate
    assert gate.requirements == (("logic",), ("stability",))
    assert gate_scorecard(unseen, fusion=FusionConfig(), gate=gate).decision.route == "deploy"
    no_logic = ScoreCard(item_id="n", modules=mods(0.9, None, 0.99))
    d = gate_scorecard(no_logic, fusion=FusionConfig(), gate=gate).decision
    assert d.route == "review" and "deploy needs logic scored" in d.reasons[0]
    # unknown names are refused with the closest known one
    path.write_text('[gate]\nrequired = ["grounding|refrence"]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"gate\.required: unknown module 'refrence'"):
        load_config(path)
    for bad in ("grounding", ["groundng"], [""], ["grounding|"], [1]):
        with pytest.raises(ConfigError, match="required"):
            GateConfig(required=bad)


def test_the_report_side_can_stand_in_for_the_image_when_asked() -> None:
    either = GateConfig(required=["grounding|report"])
    with_ref = ScoreCard(item_id="r", modules=mods(None, 0.95, 0.95))
    with_ref.modules["report"] = ModuleScore(name="report", value=0.9)
    assert gate_scorecard(with_ref, fusion=FusionConfig(), gate=either).decision.route == "deploy"
    # by default the reference does not stand in for the image
    d = gate_scorecard(with_ref, fusion=FusionConfig(), gate=GateConfig()).decision
    assert d.route == "review" and "deploy needs grounding scored" in d.reasons[0]
    # without a reference the report side is absent: the image is needed, and both are named
    no_ref = ScoreCard(item_id="n", modules=mods(None, 0.95, 0.95))
    d = gate_scorecard(no_ref, fusion=FusionConfig(), gate=either).decision
    assert d.route == "review"
    assert "deploy needs grounding or report scored" in d.reasons[0]
    assert "report absent (the item has no reference report)" in d.reasons[0]
    assert "--references refs.tsv" in d.reasons[0]


def test_cli_require_flag_overrides_the_config(tmp_path: Path) -> None:
    _write(tmp_path / "a.json", "unseen", (None, 0.95, 0.95))
    res = CliRunner().invoke(_app(), ["gate", str(tmp_path)])
    assert res.exit_code == 0, res.output
    with (tmp_path / "gate.csv").open(encoding="utf-8") as f:
        (row,) = list(csv.DictReader(f))
    assert row["route"] == "review" and "deploy needs grounding" in row["reasons"]
    res = CliRunner().invoke(_app(), ["gate", str(tmp_path), "--require", "none"])
    assert res.exit_code == 0, res.output
    with (tmp_path / "gate.csv").open(encoding="utf-8") as f:
        (row,) = list(csv.DictReader(f))
    assert row["route"] == "deploy"
    res = CliRunner().invoke(_app(), ["gate", str(tmp_path), "--require", "groundin"])
    assert res.exit_code == 2 and "did you mean 'grounding'" in res.output


def test_gate_csv_and_console_show_every_module_with_the_one_that_decides(tmp_path: Path) -> None:
    # issue 24: a captioner with a reference — S_s 1.000, report 0.000 → trust 0.429, rejected;
    # the report side decides and must be a column and the first module reason
    card = ScoreCard(item_id="ihc", subject="captioner", modules=mods(None, None, 1.0))
    card.modules["report"] = ModuleScore(name="report", value=0.0)
    card.modules["hare"] = ModuleScore(name="hare", value=0.05)
    (tmp_path / "c.json").write_text(card.to_json(), encoding="utf-8")
    _write(tmp_path / "plain.json", "slide-ok", (0.9, 0.9, 0.9))  # no reference: cells empty
    res = CliRunner().invoke(_app(), ["gate", str(tmp_path)], env={"COLUMNS": "250"})
    assert res.exit_code == 1, res.output
    with (tmp_path / "gate.csv").open(encoding="utf-8") as f:
        reader = csv.DictReader(f)
        rows = {r["item_id"]: r for r in reader}
        header = reader.fieldnames
    assert header == [
        "file", "item_id", "subject", "grounding", "logic", "stability", "report", "hare",
        "trust", "coverage", "route", "reasons",
    ]  # fmt: skip
    row = rows["ihc"]
    assert (row["stability"], row["report"], row["hare"]) == ("1.000", "0.000", "0.050")
    assert (row["grounding"], row["logic"]) == ("", "")
    assert (row["trust"], row["route"]) == ("0.429", "reject")
    assert row["coverage"] == f"{0.7 / 1.4:.3f}"  # stability + report of the 1.4 possible
    reasons = row["reasons"].split(" | ")
    assert reasons[0] == "trust 0.429 < review 0.500"
    assert reasons[1].startswith("report 0.000 (lowered the trust by 0.571; 57% of the weight)")
    assert rows["slide-ok"]["report"] == "" and rows["slide-ok"]["coverage"] == "1.000"
    # the console shows the report and hare columns and the module that decided
    for text in ("report", "hare", "report 0.000 (lowered the trust by 0.571", "cov"):
        assert text in res.output, text
