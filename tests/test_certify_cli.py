"""``calibrate --risk`` end to end: the certificate in the config, ``gate --config`` printing it
and warning when a run is unlike the calibration rows; expert scores as labels."""

from __future__ import annotations

import csv
import tomllib
from pathlib import Path

import pytest
from review_fixtures import card
from typer.testing import CliRunner

from pathgls.cli import app
from pathgls.meta.certificate import read_certificates
from pathgls.runner.store import ResultsStore

RUNNER = CliRunner()


def _calibration_run(root: Path, *, n: int = 60) -> tuple[Path, Path]:
    """Cards whose trust is i/n; acceptable above 0.3 (labels as expert scores and as 0/1)."""
    store = ResultsStore(root)
    root.mkdir(parents=True, exist_ok=True)
    with (root / "labels.csv").open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["item_id", "label", "expert_score"])
        for i in range(n):
            v = round((i + 1) / n, 4)
            store.write_card(card(f"it{i}", (v, v, v), subject="replay:a"))
            w.writerow([f"it{i}", int(v > 0.3), 4 if v > 0.3 else 1])
    return root, root / "labels.csv"


def test_certified_config_and_the_gate_shows_it(tmp_path: Path) -> None:
    run, labels = _calibration_run(tmp_path / "cal")
    out = tmp_path / "gate.toml"
    res = RUNNER.invoke(
        app,
        [
            "calibrate",
            str(run),
            "--labels",
            str(labels),
            "--acceptable",
            "1",
            "--risk",
            "0.1",
            "--confidence",
            "0.9",
            "--reject-risk",
            "0.1",
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    cfg = tomllib.loads(out.read_text(encoding="utf-8"))
    cert = cfg["calibration"]["certificate"]
    # the 42 rows above 0.3 are acceptable; at 0.284 one unacceptable row joins 42 acceptable
    # ones and the bound (0.087) still passes; at 0.267 (2 of 44) it does not
    assert cert["certified"] and cfg["gate"]["deploy"] == cert["threshold"] == pytest.approx(0.284)
    assert cert["n"] == 60 and cert["n_selected"] == 43 and cert["n_errors"] == 1
    assert cert["rate"] == pytest.approx(43 / 60, abs=1e-6) and cert["bound"] <= 0.1
    # no reject threshold certified, deploy below the default review 0.5: review = 0 written
    assert cfg["gate"]["review"] == 0.0
    assert cert["subjects"] == ["replay:a"] and cert["organs"] == ["breast"]
    assert cert["coverage"] == {"grounding": 1.0, "logic": 1.0, "stability": 1.0}
    assert cfg["calibration"]["reject_certificate"]["side"] == "reject"
    assert [c.side for c in read_certificates(out)] == ["deploy", "reject"]

    # the same kind of run: the certificate, no drift warning
    res = RUNNER.invoke(app, ["gate", str(run), "--config", str(out)])
    assert "deploy certificate" in res.output and "deploy at trust ≥ 0.284" in res.output
    assert "not among the calibration rows" not in res.output
    # another subject, without grounding: both named
    other = ResultsStore(tmp_path / "other")
    for i in range(5):
        other.write_card(card(f"x{i}", (None, 0.9, 0.9), subject="replay:b"))
    res = RUNNER.invoke(app, ["gate", str(tmp_path / "other"), "--config", str(out)])
    assert "subject(s) not among the calibration rows': replay:b" in res.output
    assert "module grounding scored on 0% of this run's items, 100% at calibration" in res.output

    # the HTML run report shows the certificate beside the gate, with the drift warnings
    html_out = tmp_path / "other.html"
    res = RUNNER.invoke(
        app, ["report", str(tmp_path / "other"), "--config", str(out), "--out", str(html_out)]
    )
    assert res.exit_code == 0, res.output
    html = html_out.read_text(encoding="utf-8")
    gate = html[html.index('<section id="gate">') :]
    assert gate.index("deploy at trust ≥ 0.284") < gate.index("<table")
    assert "subject(s) not among the calibration rows&#39;: replay:b" in gate

    # a config without a certificate says the thresholds carry no guarantee
    plain = tmp_path / "plain.toml"
    plain.write_text("[gate]\ndeploy = 0.8\n", encoding="utf-8")
    res = RUNNER.invoke(app, ["gate", str(run), "--config", str(plain)])
    assert "the thresholds carry no guarantee" in res.output


def test_expert_scores_with_a_cutoff_are_labels(tmp_path: Path) -> None:
    run, labels = _calibration_run(tmp_path / "cal")
    out = tmp_path / "gate.toml"
    res = RUNNER.invoke(
        app,
        [
            "calibrate",
            str(run),
            "--labels",
            str(labels),
            "--cutoff",
            "3",
            "--risk",
            "0.1",
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    cert = tomllib.loads(out.read_text(encoding="utf-8"))["calibration"]["certificate"]
    assert cert["labels"] == "labels.csv: expert_score ≥ 3" and cert["threshold"] == 0.284


def test_too_few_rows_write_no_threshold_and_say_how_many(tmp_path: Path) -> None:
    run, labels = _calibration_run(tmp_path / "cal", n=12)
    out = tmp_path / "gate.toml"
    res = RUNNER.invoke(
        app,
        [
            "calibrate",
            str(run),
            "--labels",
            str(labels),
            "--acceptable",
            "1",
            "--risk",
            "0.1",
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "NOT certified: no threshold puts 22 rows on the deploy side" in res.output
    assert "labelled rows in all" in res.output
    cfg = tomllib.loads(out.read_text(encoding="utf-8"))
    assert "gate" not in cfg and cfg["calibration"]["certificate"]["rows_needed"] >= 22


@pytest.mark.slow  # scores 32 pairs with DxAlign and Logic: ~20 s idle, minutes under load
def test_an_expert_table_is_scored_offline(shared_data: Path, tmp_path: Path) -> None:
    src = shared_data / "expert_scores" / "hare_expert_dev.tsv"
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    with src.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh, delimiter="\t"))
    small = tmp_path / "experts.tsv"  # 32 pairs of 8 cases: quick to score
    with small.open("w", encoding="utf-8", newline="") as fh:
        csv.writer(fh, delimiter="\t").writerows(rows[:33])
    assert lines  # the shared table is there
    res = RUNNER.invoke(app, ["calibrate", str(small), "--risk", "0.2"])
    assert res.exit_code != 0 and "pass --cutoff" in res.output
    res = RUNNER.invoke(app, ["calibrate", str(small), "--cutoff", "2", "--risk", "0.2"])
    assert res.exit_code == 0, res.output
    assert "32 labelled rows" in res.output and "expert_score ≥ 2" in res.output
    assert "organs: " in res.output and "not recorded" not in res.output.split("organs:")[1][:20]
    assert "deploys only with grounding scored ([gate] required)" in res.output


def test_batch_mode_certifies_the_share_of_the_next_batch(tmp_path: Path) -> None:
    run, labels = _calibration_run(tmp_path / "cal", n=120)
    out = tmp_path / "gate.toml"
    args = ["calibrate", str(run), "--labels", str(labels), "--acceptable", "1", "--risk", "0.2"]
    res = RUNNER.invoke(app, [*args, "--batch", "20", "--out", str(out)])
    assert res.exit_code == 0, res.output
    cert = tomllib.loads(out.read_text(encoding="utf-8"))["calibration"]["certificate"]
    # 84 clean rows above 0.3: the batch mode stops there (one bad row among ~14 deployed of
    # a batch of 20 already breaks 0.2 too often at what 120 rows can show), where the
    # population mode goes on to 0.184 with 14 unacceptable of 98
    assert cert["batch"] == 20 and cert["threshold"] == pytest.approx(0.301)
    assert cert["n_selected"] == 84 and cert["n_errors"] == 0
    assert 0 < cert["batch_tail"] <= 0.05 and "batch tail" in cert["method"]
    res = RUNNER.invoke(app, ["gate", str(run), "--config", str(out)])
    assert "batch mode: the realised share in a batch of 20 reports" in res.output
    assert "in a batch of 20 reports, share unacceptable among deployed ≤ 0.2" in res.output
    pop = RUNNER.invoke(app, [*args, "--out", str(tmp_path / "pop.toml")])
    assert pop.exit_code == 0, pop.output
    pop_cert = tomllib.loads((tmp_path / "pop.toml").read_text(encoding="utf-8"))
    assert pop_cert["gate"]["deploy"] == pytest.approx(0.184)
    assert "batch" not in pop_cert["calibration"]["certificate"]

    # a batch of 3 at α = 0.05: one bad report in it breaks the share; 120 rows cannot show it
    res = RUNNER.invoke(app, [*args[:-1], "0.05", "--batch", "3"])
    assert res.exit_code == 0, res.output
    assert "NOT certified: even all 120 rows deployed without an error" in res.output
    assert "in a batch of 3" in res.output
    res = RUNNER.invoke(app, [*args[:-2], "--batch", "3"])
    assert res.exit_code == 2 and "--batch goes with --risk" in res.output
