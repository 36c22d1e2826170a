"""``pathgls calibrate`` (validation table, or run directory + labels) and ``gate --config``."""

from __future__ import annotations

import csv
import tomllib
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from pathgls.cli import calibrate as calibrate_cli
from pathgls.cli import gate as gate_cli
from pathgls.meta.calibrate import read_labels, rows_from_cards
from pathgls.runner.store import ResultsStore
from pathgls.types import ModuleScore, ScoreCard

MODS = ("grounding", "logic", "stability")
WIDE = {"COLUMNS": "200"}  # rich tables unwrapped, so rows can be parsed


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def _main() -> None:
        """Test app."""

    calibrate_cli.register(app)
    gate_cli.register(app)
    return app


def _invoke(*args: str) -> object:
    return CliRunner().invoke(_app(), [str(a) for a in args], env=WIDE)


def _logic_driven(n: int = 60, seed: int = 0) -> list[tuple[float, float, float | None, float]]:
    """(grounding, logic, stability, label 0–4): the label is mostly logic, plus noise."""
    rng = np.random.default_rng(seed)
    g, lo, s = rng.uniform(size=n), rng.uniform(size=n), rng.uniform(size=n)
    label = np.clip(np.round(4 * (0.8 * lo + 0.1 * g + 0.1 * s) + rng.normal(0, 0.3, n)), 0, 4)
    out: list[tuple[float, float, float | None, float]] = []
    for i in range(n):
        out.append((float(g[i]), float(lo[i]), None if i == 5 else float(s[i]), float(label[i])))
    return out


def _write_table(path: Path, data: list[tuple[float, float, float | None, float]]) -> Path:
    lines = ["item_id\tgrounding\tlogic\tstability\tlabel"]
    for i, (g, lo, s, y) in enumerate(data):
        lines.append(f"it{i}\t{g:.4f}\t{lo:.4f}\t{'' if s is None else f'{s:.4f}'}\t{y:g}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _table_rows(output: str, first_cells: set[str]) -> dict[str, list[str]]:
    """Rows of the printed rich tables whose first cell is in ``first_cells``."""
    rows = {}
    for line in output.splitlines():
        if line.startswith("│"):
            cells = [c.strip() for c in line.strip().strip("│").split("│")]
            if cells[0] in first_cells:
                rows[cells[0]] = cells
    return rows


def _card(
    item: str,
    values: tuple[float | None, float | None, float | None],
    *,
    subject: str = "replay:demo",
    status: str = "ok",
) -> ScoreCard:
    modules = {
        m: ModuleScore(m, v, None if v is not None else "did not run")
        for m, v in zip(MODS, values, strict=True)
    }
    return ScoreCard(item_id=item, subject=subject, status=status, modules=modules)


def _routes(csv_path: Path) -> dict[str, str]:
    with csv_path.open(encoding="utf-8") as f:
        return {r["item_id"]: r["route"] for r in csv.DictReader(f)}


# --- table input ---------------------------------------------------------------------------


def test_table_finds_logic_weights_and_ablation(tmp_path: Path) -> None:
    table = _write_table(tmp_path / "val.tsv", _logic_driven())
    out = tmp_path / "cfg" / "fusion.toml"
    res = _invoke("calibrate", table, "--out", out)
    assert res.exit_code == 0, res.output
    cfg = tomllib.loads(out.read_text(encoding="utf-8"))
    weights = cfg["fusion"]["weights"]
    # the table has no report column: report is not searched and keeps its default weight
    # relative to the searched ones (0.4 : 1); the weights written sum to 1 (not 1.4)
    searched = {m: w for m, w in weights.items() if m != "report"}
    assert set(searched) == set(MODS) and sum(weights.values()) == pytest.approx(1.0, abs=1e-5)
    assert weights["report"] / sum(searched.values()) == pytest.approx(0.4, abs=1e-5)
    text = out.read_text(encoding="utf-8")
    shares = {m: w / sum(searched.values()) for m, w in searched.items()}
    assert (
        "without a reference report: " + ", ".join(f"{m} {w:.2f}" for m, w in shares.items())
        in text
    )
    assert "with one, report carries 0.29" in text
    assert max(searched, key=searched.get) == "logic"
    cal = cfg["calibration"]
    assert cal["n_rows"] == 60 and cal["spearman"] >= cal["default_spearman"]
    assert 0.0 < cfg["gate"]["deploy"] <= 1.0 and "review" not in cfg["gate"]
    assert cal["precision"] >= 0.9

    printed = _table_rows(res.output, {"best", "default", "none", *MODS})
    best_rho, ci = printed["best"][-1].split(" ", 1)  # "0.812 [0.70, 0.89]"
    low, high = (float(x) for x in ci.strip("[]").split(","))
    assert low < float(best_rho) < high and float(best_rho) >= float(printed["default"][-1])
    assert "labelled rows (fewer than" not in res.output  # 60 rows: no small-n warning
    deltas = {m: float(printed[m][4]) for m in MODS}
    assert printed["none"][4] == "+0.000"
    assert min(deltas, key=deltas.get) == "logic" and deltas["logic"] < -0.3
    assert "Top grid points" in res.output
    assert "Deploy threshold for precision ≥ 0.9 (label ≥ 3)" in res.output
    assert "recall" in res.output


def test_binary_labels_need_acceptable_one(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    n = 50
    g, lo, s = rng.uniform(size=n), rng.uniform(size=n), rng.uniform(size=n)
    label = (lo + rng.normal(0, 0.05, n) > 0.45).astype(int)
    lines = ["item_id,grounding,logic,stability,label"]
    lines += [f"it{i},{g[i]:.4f},{lo[i]:.4f},{s[i]:.4f},{label[i]}" for i in range(n)]
    table = tmp_path / "bin.csv"
    table.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "f.toml"

    # default --acceptable 3: nothing is acceptable; weights are written, no deploy threshold
    res = _invoke("calibrate", table, "--out", out)
    assert res.exit_code == 0, res.output
    assert "unreachable" in res.output and "--acceptable 1" in res.output
    assert "gate" not in tomllib.loads(out.read_text(encoding="utf-8"))

    # the threshold (~0.4) is below the default review threshold 0.5: refuse to write it ...
    res = _invoke("calibrate", table, "--acceptable", "1", "--out", out)
    assert res.exit_code == 2, res.output
    assert "below the review threshold" in res.output and "--review" in res.output
    # ... unless a review threshold at or below it is given
    res = _invoke("calibrate", table, "--acceptable", "1", "--review", "0.2", "--out", out)
    assert res.exit_code == 0, res.output
    gate = tomllib.loads(out.read_text(encoding="utf-8"))["gate"]
    assert gate["review"] == 0.2 and 0.2 <= gate["deploy"] < 0.5


# --- calibrate --out → gate --config ------------------------------------------------------


def test_gate_uses_calibrated_config(tmp_path: Path) -> None:
    table = _write_table(tmp_path / "val.tsv", _logic_driven())
    cfg_path = tmp_path / "fusion.toml"
    assert _invoke("calibrate", table, "--out", cfg_path).exit_code == 0
    cfg = tomllib.loads(cfg_path.read_text(encoding="utf-8"))
    written, deploy = cfg["fusion"]["weights"], cfg["gate"]["deploy"]
    # cards without a reference: the trust renormalises over grounding, logic, stability
    base = sum(written[m] for m in MODS)
    w = {m: written[m] / base for m in MODS}
    assert w["logic"] > 0.5 and deploy < 0.75

    run = tmp_path / "run"
    store = ResultsStore(run)
    # sound logic, weak grounding: rejected by the default weights, deployed when logic counts
    store.write_card(_card("logic-good", (0.2, 0.95, 0.3)))
    # good grounding/stability but contradictory: review by default, rejected when logic counts
    store.write_card(_card("logic-bad", (0.95, 0.2, 0.9)))
    trust = {
        "logic-good": w["grounding"] * 0.2 + w["logic"] * 0.95 + w["stability"] * 0.3,
        "logic-bad": w["grounding"] * 0.95 + w["logic"] * 0.2 + w["stability"] * 0.9,
    }
    assert trust["logic-good"] >= deploy and trust["logic-bad"] < 0.5

    assert _invoke("gate", run).exit_code == 1
    assert _routes(run / "gate.csv") == {"logic-good": "reject", "logic-bad": "review"}

    res = _invoke("gate", run, "--config", cfg_path)
    assert res.exit_code == 1, res.output
    assert _routes(run / "gate.csv") == {"logic-good": "deploy", "logic-bad": "reject"}
    with (run / "gate.csv").open(encoding="utf-8") as f:
        got = {r["item_id"]: float(r["trust"]) for r in csv.DictReader(f)}
    assert got == pytest.approx(trust, abs=1e-3)

    # explicit flags override the file: a higher deploy threshold, then the default weights
    _invoke("gate", run, "--config", cfg_path, "--deploy", str(trust["logic-good"] + 0.01))
    assert _routes(run / "gate.csv")["logic-good"] == "review"
    # default weights but the file's (lower) deploy threshold: logic-bad (0.71) now deploys
    spec = "grounding=0.4,logic=0.3,stability=0.3"
    _invoke("gate", run, "--config", cfg_path, "--weights", spec)
    assert deploy <= 0.71
    assert _routes(run / "gate.csv") == {"logic-good": "reject", "logic-bad": "deploy"}
    # --weights alone
    _invoke("gate", run, "--weights", "logic=1")
    assert _routes(run / "gate.csv") == {"logic-good": "deploy", "logic-bad": "reject"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--weights", "grounding=0.5,logic"], "--weights must be module=weight"),
        (["--weights", "grounding=high"], "--weights must be module=weight"),
        (["--weights", "logic=0.5,logic=0.2"], "logic given twice"),
        (["--weights", "logic=-1"], "must be a number in [0, 1e+06]"),
        (["--config", "{cfg}"], "unknown key gate.deplo"),
        (["--config", "{missing}"], "cannot read config file"),
        (["--config", "{cfg}", "--review", "0.9"], "below the review threshold"),
    ],
)
def test_gate_bad_weights_or_config_exit_two(tmp_path: Path, args: list[str], message: str) -> None:
    ResultsStore(tmp_path / "run").write_card(_card("s1", (0.9, 0.9, 0.9)))
    cfg = tmp_path / "bad.toml"
    if "--review" in args:
        cfg.write_text("[gate]\ndeploy = 0.8\n", encoding="utf-8")
    else:
        cfg.write_text("[gate]\ndeplo = 0.8\n", encoding="utf-8")
    subs = {"{cfg}": str(cfg), "{missing}": str(tmp_path / "nope.toml")}
    res = _invoke("gate", tmp_path / "run", *(subs.get(a, a) for a in args))
    assert res.exit_code == 2, res.output
    assert message in res.output


# --- run directory + labels ---------------------------------------------------------------


def _run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    store = ResultsStore(run)
    for i, (g, lo, s, _) in enumerate(_logic_driven(n=40, seed=3)):
        store.write_card(_card(f"it{i}", (g, lo, s), subject="replay:a"))
        # the same items from a second subject; partial (grounding missing) for half of them
        partial = i % 2 == 0
        values = (None if partial else g, lo, s)
        status = "partial" if partial else "ok"
        store.write_card(_card(f"it{i}", values, subject="replay:b", status=status))
    store.write_card(_card("dead", (None, None, None), subject="replay:a", status="failed"))
    store.write_card(_card("stray", (0.5, 0.5, 0.5), subject="replay:a"))
    return run


def test_run_dir_with_labels(tmp_path: Path) -> None:
    run = _run_dir(tmp_path)
    data = _logic_driven(n=40, seed=3)
    labels = tmp_path / "labels.tsv"
    lines = ["item_id\tlabel"] + [f"it{i}\t{y:g}" for i, (*_, y) in enumerate(data)]
    labels.write_text("\n".join([*lines, "dead\t0"]) + "\n", encoding="utf-8")
    out = tmp_path / "fusion.toml"
    res = _invoke("calibrate", run, "--labels", labels, "--out", out)
    assert res.exit_code == 0, res.output
    assert "skipped 1 card(s) failed (no report): replay:a/dead" in res.output
    assert "skipped 1 card(s) without a label: replay:a/stray" in res.output
    cfg = tomllib.loads(out.read_text(encoding="utf-8"))
    assert cfg["calibration"]["n_rows"] == 80  # 40 items × 2 subjects
    w = cfg["fusion"]["weights"]
    assert max(w, key=w.get) == "logic"
    assert cfg["calibration"]["spearman"] >= cfg["calibration"]["default_spearman"]


def test_labels_per_subject(tmp_path: Path) -> None:
    labels = tmp_path / "labels.csv"
    labels.write_text(
        "subject,item_id,label\nreplay:a,x,4\nreplay:b,x,1\n,y,2\nreplay:a,z,\n", encoding="utf-8"
    )
    got = read_labels(labels)
    assert got == {("replay:a", "x"): 4.0, ("replay:b", "x"): 1.0, (None, "y"): 2.0}
    cards = [
        _card("x", (0.1, 0.2, 0.3), subject="replay:a"),
        _card("x", (0.1, 0.2, None), subject="replay:b"),
        _card("y", (0.1, 0.2, 0.3), subject="replay:b"),
        _card("z", (0.1, 0.2, 0.3), subject="replay:a"),
        _card("y", (None, None, None), subject="replay:a", status="failed"),
    ]
    joined = rows_from_cards(cards=cards, labels=got)
    assert [(r.item_id, r.label) for r in joined.rows] == [
        ("replay:a/x", 4.0),
        ("replay:b/x", 1.0),
        ("replay:b/y", 2.0),
    ]
    assert joined.rows[1].scores == {
        "grounding": 0.1,
        "logic": 0.2,
        "stability": None,
        "report": None,  # no reference: absent
    }
    assert joined.unlabelled == ("replay:a/z",) and joined.failed == ("replay:a/y",)


# --- bad inputs ---------------------------------------------------------------------------


def test_bad_inputs_exit_two(tmp_path: Path) -> None:
    no_label = tmp_path / "nolabel.tsv"
    no_label.write_text("item_id\tgrounding\tlogic\tstability\nit0\t0.1\t0.2\t0.3\n")
    res = _invoke("calibrate", no_label)
    assert res.exit_code == 2 and "missing column(s) label" in res.output

    empty_run = tmp_path / "empty"
    (empty_run / "scorecards").mkdir(parents=True)
    labels = tmp_path / "labels.tsv"
    labels.write_text("item_id\tlabel\nit0\t3\n", encoding="utf-8")
    res = _invoke("calibrate", empty_run, "--labels", labels)
    assert res.exit_code == 2 and "no readable ScoreCard" in res.output

    run = _run_dir(tmp_path)
    res = _invoke("calibrate", run)
    assert res.exit_code == 2 and "pass --labels" in res.output
    bad_labels = tmp_path / "bad_labels.tsv"
    bad_labels.write_text("item_id\tscore\nit0\t3\n", encoding="utf-8")
    res = _invoke("calibrate", run, "--labels", bad_labels)
    assert res.exit_code == 2 and "missing column(s) label" in res.output
    other = tmp_path / "other.tsv"
    other.write_text("item_id\tlabel\nnot-there\t3\n", encoding="utf-8")
    res = _invoke("calibrate", run, "--labels", other)
    assert res.exit_code == 2 and "has a label" in res.output

    res = _invoke("calibrate", tmp_path / "missing.tsv")
    assert res.exit_code == 2 and "no such file or directory" in res.output
    table = _write_table(tmp_path / "val.tsv", _logic_driven())
    res = _invoke("calibrate", table, "--labels", labels)
    assert res.exit_code == 2 and "--labels goes with a run directory" in res.output
    res = _invoke("calibrate", table, "--step", "0.3")
    assert res.exit_code == 2 and "step must divide 1" in res.output


def test_few_rows_are_warned_about_and_the_ci_shown(tmp_path: Path) -> None:
    # five rows, one swap from a perfect order: ρ 0.9 looks strong, its CI shows it is not
    data = [(0.5, lo, 0.5, float(y)) for y, lo in enumerate((0.1, 0.3, 0.2, 0.7, 0.9))]
    res = _invoke("calibrate", _write_table(tmp_path / "five.tsv", data))
    assert res.exit_code == 0, res.output
    assert "only 5 labelled rows (fewer than 30): ρ 0.900" in res.output
    best = _table_rows(res.output, {"best"})["best"][-1]
    assert best.startswith("0.900 [")
    low, high = (float(x) for x in best.split("[", 1)[1].strip("]").split(","))
    # Fisher z by hand: tanh(atanh(0.9) ± 1.96 · sqrt(1.06 / 2))
    assert (low, high) == (pytest.approx(0.05, abs=0.006), pytest.approx(0.99, abs=0.006))
