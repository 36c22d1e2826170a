"""Run mode of the certified gate: an exact bound on the realised share among one run's reports.

The bound is checked by enumerating every split of small pools (per threshold and for the whole
fixed-sequence procedure), the procedure on hand-made rows with known answers, and the CLI:
``calibrate --risk --for-run`` writes a run-mode certificate that ``gate --config`` shows for
that run and warns about on another.
"""

from __future__ import annotations

import itertools
import math
import tomllib
from pathlib import Path

import numpy as np
import pytest
from review_fixtures import card
from typer.testing import CliRunner

from pathgls.cli import app
from pathgls.errors import CalibrationError
from pathgls.inspect.review_cert import certificate_panel
from pathgls.meta.certificate import read_certificates
from pathgls.meta.certify import CertifyConfig, certify_deploy, certify_for_run
from pathgls.meta.certify_run import count_upper
from pathgls.runner.store import ResultsStore

RUNNER = CliRunner()


@pytest.mark.parametrize(("c", "d", "delta"), [(6, 5, 0.1), (10, 4, 0.2), (3, 8, 0.1)])
def test_the_count_bound_is_exact_over_every_split(c: int, d: int, delta: float) -> None:
    """For every number K of errors in a pool of c + d, over every choice of which c rows are
    the calibration rows, the run's errors exceed the bound in at most δ of the choices — and
    one less than the bound would not hold for some K (it is the tightest such bound)."""
    pool = c + d
    tight = False
    for k_total in range(pool + 1):
        bad = set(range(k_total))
        miss = miss_one_less = total = 0
        for cal in itertools.combinations(range(pool), c):
            k = len(bad.intersection(cal))
            up = count_upper(errors=k, selected=c, run_selected=d, delta=delta)
            assert 0 <= up <= d
            total += 1
            miss += k_total - k > up
            miss_one_less += k_total - k > up - 1
        assert miss / total <= delta + 1e-12, (k_total, miss / total)
        tight |= miss_one_less / total > delta
    assert tight


def test_the_count_bound_at_the_edges() -> None:
    assert count_upper(errors=0, selected=5, run_selected=0, delta=0.1) == 0
    assert count_upper(errors=0, selected=0, run_selected=7, delta=0.1) == 7  # nothing known
    # 40 clean calibration rows beside 10 of the run: P(no error among the 40 | K) =
    # C(50 − K, 40) / C(50, 40) is 0.2 at K = 1 and 0.037 at K = 2, so K⁺ = 1
    assert count_upper(errors=0, selected=40, run_selected=10, delta=0.1) == 1
    assert math.comb(49, 40) / math.comb(50, 40) > 0.1 > math.comb(48, 40) / math.comb(50, 40)
    # with δ = 0.02 K = 2 (0.037) is still possible
    assert count_upper(errors=0, selected=40, run_selected=10, delta=0.02) == 2


def _procedure_failure(trust: np.ndarray, ok: np.ndarray, n_cal: int, cfg: CertifyConfig) -> float:
    """The exact chance, over every split into n_cal calibration rows and a run of the rest,
    that the run's deployed share of unacceptable reports exceeds the risk."""
    size, fails, total = trust.size, 0, 0
    for cal in itertools.combinations(range(size), n_cal):
        cal_i = np.array(cal)
        run = np.setdiff1d(np.arange(size), cal_i)
        res = certify_for_run(
            trust=trust[cal_i],
            acceptable=ok[cal_i],
            run_trust=trust[run],
            config=cfg,
            explain=False,
        )
        total += 1
        if res.threshold is None:
            continue
        dep = run[trust[run] >= res.threshold]
        fails += bool(dep.size) and (~ok[dep]).sum() > cfg.risk * dep.size + 1e-9
    return fails / total


@pytest.mark.parametrize("seed", [3, 11, 19])
def test_the_whole_procedure_keeps_its_level_over_every_split(seed: int) -> None:
    """The fixed sequence across thresholds (not only one threshold) holds its δ exactly on
    small pools: unacceptable reports spread over the trust range, more of them at low trust."""
    rng = np.random.default_rng(seed)
    trust = np.round(rng.random(12), 3)
    ok = rng.random(12) >= np.clip(0.55 - 0.6 * trust, 0.05, 1.0)
    cfg = CertifyConfig(risk=0.3, confidence=0.8)
    assert _procedure_failure(trust, ok, 6, cfg) <= cfg.delta + 1e-12


def test_a_clean_top_certifies_for_the_run_and_a_bad_one_says_why() -> None:
    # 60 calibration rows at trust i/60, acceptable above 0.5; the run: 40 reports at (j+0.5)/40
    trust = [round((i + 1) / 60, 3) for i in range(60)]
    ok = [int(t > 0.5) for t in trust]
    run = [round((j + 0.5) / 40, 3) for j in range(40)]
    res = certify_for_run(
        trust=trust, acceptable=ok, run_trust=run, config=CertifyConfig(risk=0.2, confidence=0.9)
    )
    assert res.threshold is not None and res.run_items == 40
    # the certified threshold deploys run reports whose bound stays within α of them
    d = sum(t >= res.threshold for t in run)
    assert res.run_selected == d and res.run_errors_bound is not None
    assert res.run_errors_bound <= 0.2 * d and res.bound == pytest.approx(res.run_errors_bound / d)
    assert res.n_selected == sum(t >= res.threshold for t in trust)
    # the sequence stops where an unacceptable calibration row's weight breaks the bound: the
    # threshold is not far below the 0.5 boundary of the labels
    assert 0.4 <= res.threshold <= 0.55

    # a run whose every report sits where the calibration rows are mostly unacceptable
    bad = certify_for_run(
        trust=trust,
        acceptable=[int(t < 0.2) for t in trust],
        run_trust=[0.9] * 10,
        config=CertifyConfig(risk=0.1, confidence=0.9),
    )
    assert bad.threshold is None and bad.run_items == 10
    assert "of the run's 10 reports" in (bad.reason or "")
    assert "more labelled rows cannot help" in (bad.reason or "")


def test_more_rows_are_asked_for_when_the_rates_allow() -> None:
    # 8 clean calibration rows at the top, 30 run reports there: too few rows to certify
    trust = [0.9] * 8 + [0.1] * 8
    ok = [1] * 8 + [0] * 8
    res = certify_for_run(
        trust=trust,
        acceptable=ok,
        run_trust=[0.9] * 30,
        config=CertifyConfig(risk=0.1, confidence=0.9),
    )
    assert res.threshold is None and res.rows_needed is not None and res.rows_needed > 16
    assert f"{res.rows_needed - 16} more" in (res.reason or "")
    # and that many clean rows (the observed rates) do certify
    more = res.rows_needed
    again = certify_for_run(
        trust=[0.9] * (more // 2) + [0.1] * (more - more // 2),
        acceptable=[1] * (more // 2) + [0] * (more - more // 2),
        run_trust=[0.9] * 30,
        config=CertifyConfig(risk=0.1, confidence=0.9),
    )
    # (every threshold above the unacceptable rows at 0.1 deploys the same: the loosest is kept)
    assert again.threshold == pytest.approx(0.101) and again.run_selected == 30


def test_reject_side_mirrors_deploy() -> None:
    trust = [round((i + 1) / 80, 3) for i in range(80)]
    ok = [int(t > 0.5) for t in trust]
    res = certify_for_run(
        trust=trust,
        acceptable=ok,
        run_trust=[round((j + 0.5) / 50, 3) for j in range(50)],
        config=CertifyConfig(risk=0.2, confidence=0.9),
        side="reject",
    )
    assert res.side == "reject" and res.threshold is not None and 0.45 <= res.threshold <= 0.6
    assert res.run_errors_bound is not None and res.run_selected is not None
    assert res.run_errors_bound <= 0.2 * res.run_selected


def test_bad_input_is_refused() -> None:
    cfg = CertifyConfig(risk=0.1)
    with pytest.raises(CalibrationError, match="no trust value"):
        certify_for_run(trust=[0.5], acceptable=[1], run_trust=[], config=cfg)
    with pytest.raises(CalibrationError, match="finite"):
        certify_for_run(trust=[0.5], acceptable=[1], run_trust=[float("nan")], config=cfg)
    with pytest.raises(CalibrationError, match="no batch size"):
        certify_for_run(
            trust=[0.5], acceptable=[1], run_trust=[0.5], config=CertifyConfig(batch=10)
        )
    with pytest.raises(CalibrationError, match="side"):
        certify_for_run(trust=[0.5], acceptable=[1], run_trust=[0.5], config=cfg, side="both")
    with pytest.raises(CalibrationError, match="3 trust values for 2"):
        certify_for_run(trust=[0.1, 0.2, 0.3], acceptable=[1, 0], run_trust=[0.5], config=cfg)


def test_population_mode_is_unchanged_by_run_mode() -> None:
    trust = [round((i + 1) / 60, 3) for i in range(60)]
    ok = [int(t > 0.3) for t in trust]
    res = certify_deploy(trust=trust, acceptable=ok, config=CertifyConfig(risk=0.1))
    assert res.threshold == pytest.approx(0.284) and res.run_items is None


def _write_run(root: Path, values: list[float], *, prefix: str) -> Path:
    store = ResultsStore(root)
    root.mkdir(parents=True, exist_ok=True)
    for i, v in enumerate(values):
        store.write_card(card(f"{prefix}{i}", (v, v, v), subject="replay:a"))
    return root


def test_cli_certifies_for_a_run_and_the_gate_checks_it_is_that_run(tmp_path: Path) -> None:
    cal = _write_run(tmp_path / "cal", [round((i + 1) / 80, 4) for i in range(80)], prefix="c")
    labels = tmp_path / "labels.csv"
    labels.write_text(
        "item_id,label\n" + "".join(f"c{i},{int((i + 1) / 80 > 0.5)}\n" for i in range(80)),
        encoding="utf-8",
    )
    new = _write_run(tmp_path / "new", [round((j + 0.5) / 40, 4) for j in range(40)], prefix="n")
    out = tmp_path / "gate.toml"
    args = ["calibrate", str(cal), "--labels", str(labels), "--acceptable", "1"]
    res = RUNNER.invoke(app, [*args, "--risk", "0.2", "--for-run", str(new), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "run mode" in res.output and "of this run's" in res.output
    cert = tomllib.loads(out.read_text(encoding="utf-8"))["calibration"]["certificate"]
    assert cert["certified"] and cert["run"] == str(new) and cert["run_items"] == 40
    assert cert["run_errors_bound"] <= 0.2 * cert["run_selected"]
    assert "hypergeometric" in cert["method"] and len(cert["run_cards"]) == 16
    (back,) = read_certificates(out)
    assert back.run_items == 40 and back.run_cards == cert["run_cards"]

    # the gate on that run: the certificate, and no warning that the run differs
    res = RUNNER.invoke(app, ["gate", str(new), "--config", str(out)])
    assert "run mode" in res.output and "not that run's" not in res.output
    # on the calibration run (other reports): the guarantee does not apply, said
    res = RUNNER.invoke(app, ["gate", str(cal), "--config", str(out)])
    assert "not that run's" in res.output.replace("\n", " ")

    # the HTML report's certificate panel: the same check
    def panel(run_dir: Path) -> dict:
        cards = [c for _, c, _ in ResultsStore(run_dir).iter_cards() if c is not None]
        return certificate_panel(out, cards)

    same, other = panel(new), panel(cal)
    assert any("run mode" in line for line in same["certificates"][0]["lines"])
    assert not any("not that run's" in w for w in same["certificate_warnings"])
    assert any("not that run's" in w for w in other["certificate_warnings"])


def test_cli_refuses_run_mode_without_risk_with_batch_or_without_a_run(tmp_path: Path) -> None:
    cal = _write_run(tmp_path / "cal", [0.2, 0.8], prefix="c")
    labels = tmp_path / "labels.csv"
    labels.write_text("item_id,label\nc0,0\nc1,1\n", encoding="utf-8")
    base = ["calibrate", str(cal), "--labels", str(labels), "--acceptable", "1"]
    res = RUNNER.invoke(app, [*base, "--for-run", str(cal)])
    assert res.exit_code != 0 and "--for-run goes with --risk" in res.output
    res = RUNNER.invoke(app, [*base, "--risk", "0.1", "--batch", "5", "--for-run", str(cal)])
    assert res.exit_code != 0 and "drop --batch" in res.output
    res = RUNNER.invoke(app, [*base, "--risk", "0.1", "--for-run", str(tmp_path / "nowhere")])
    assert res.exit_code != 0 and "not a run directory" in res.output
    # the labelled run itself: refused; another run with the same card ids: warned
    res = RUNNER.invoke(app, [*base, "--risk", "0.1", "--for-run", str(cal)])
    assert res.exit_code != 0 and "cannot vouch for themselves" in res.output
    twin = _write_run(tmp_path / "twin", [0.3, 0.9], prefix="c")
    res = RUNNER.invoke(app, [*base, "--risk", "0.1", "--for-run", str(twin)])
    assert "2 report(s)" in res.output and "id of a calibration row" in res.output
