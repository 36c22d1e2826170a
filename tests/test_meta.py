"""Metric validation (published protocol, sensitivity harness) and the DxAlign score."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from pathgls.baselines.dxalign import NO_DIAGNOSIS, candidate_dx_text, diagnoses, dxalign_scores
from pathgls.meta.correlate import (
    MetaError,
    correlate,
    read_expert_table,
    scatter_plot,
    sensitivity,
)
from pathgls.text import analyze_report, build_extractor


def test_correlate_follows_the_published_protocol() -> None:
    expert = np.array([0, 1, 2, 3, 4, 4, 0, 2.0])
    metric = np.array([0.9, 0.2, 0.35, 0.5, 0.8, 0.7, 0.1, 0.4])
    c = correlate(metric="m", values=metric, expert=expert)
    keep = expert != 0
    x = (metric[keep] - metric[keep].min()) / np.ptp(metric[keep])
    y = expert[keep] / 4
    assert c.n == 6
    assert c.pearson == pytest.approx(stats.pearsonr(x, y)[0])
    assert c.spearman == pytest.approx(stats.spearmanr(x, y)[0])
    assert c.kendall == pytest.approx(stats.kendalltau(x, y)[0])
    slope, icpt = np.polyfit(x, y, 1)
    resid = y - (slope * x + icpt)
    assert c.rmse == pytest.approx(np.sqrt((resid**2).mean()))
    assert c.r2 == pytest.approx(c.pearson**2)  # one regressor: R² = r²
    with_zeros = correlate(metric="m", values=metric, expert=expert, include_zeros=True)
    assert with_zeros.n == 8 and with_zeros.pearson < c.pearson
    nan = correlate(metric="m", values=[*metric, np.nan], expert=[*expert, 3])
    assert nan.n == 6 and "dropped" in nan.warnings[0]
    with pytest.raises(MetaError, match="7 metric values for 8"):
        correlate(metric="m", values=metric[:7], expert=expert)
    with pytest.raises(MetaError, match="at least 3"):
        correlate(metric="m", values=[1, 2], expert=[1, 2])
    flat = correlate(metric="flat", values=[0.5] * 4, expert=[1, 2, 3, 4])
    assert np.isnan(flat.pearson) and "constant" in flat.warnings[0]


def test_expert_table_and_scatter(shared_data, tmp_path) -> None:
    rows, warnings = read_expert_table(shared_data / "expert_scores" / "hare_expert_dev.tsv")
    assert len(rows) == 316 and warnings == []
    assert sum(r.expert > 0 for r in rows) == 130
    bad = tmp_path / "t.tsv"
    bad.write_text(
        "case_id\treference\tcandidate\texpert_score\n1\ta\tb\tNaN\n2\t\tb\t3\n3\ta\tb\t2\n"
    )
    rows, warnings = read_expert_table(bad)
    assert [r.case_id for r in rows] == ["3"]
    assert "line 2" in warnings[0] and "line 3: empty" in warnings[1]
    (tmp_path / "c.tsv").write_text("ref\tcand\n")
    with pytest.raises(MetaError, match="missing column"):
        read_expert_table(tmp_path / "c.tsv")
    png = scatter_plot(
        tmp_path / "s.png", metric="m", values=[0.1, 0.5, 0.9, 0.3], expert=[1, 2, 4, 2]
    )
    assert png.stat().st_size > 1000


def test_sensitivity_table() -> None:
    originals = ["a", "b"]
    scores = {("a", "a"): 1.0, ("b", "b"): 0.8, ("a", "A"): 0.5, ("b", "B"): 0.4, ("a", "x"): 1.0}
    table = sensitivity(
        score="s",
        originals=originals,
        sets={"logic": ("logic", ["A", "B"]), "control": ("control", ["x", None])},
        score_fn=lambda o, v: scores.get((o, v)),
    )
    assert table.original_mean == pytest.approx(0.9)
    logic, control = table.rows
    assert logic.mean == pytest.approx(0.45) and logic.delta_percent == pytest.approx(-50.0)
    assert control.n == 1 and control.delta_percent == pytest.approx(100 * (1.0 - 0.9) / 0.9)
    with pytest.raises(MetaError, match="1 variants for 2"):
        sensitivity(
            score="s", originals=originals, sets={"x": ("c", ["a"])}, score_fn=lambda o, v: 1
        )


class _Table:
    """A fake embedder: known strings get known vectors."""

    name = "table"

    def __init__(self, table):
        self.table = table

    def embed(self, texts):
        out = np.array([self.table[t] for t in texts], dtype=np.float64)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_dxalign_compares_the_candidate_diagnosis_with_the_reference() -> None:
    ex = build_extractor("lexicon")
    ref = "Invasive ductal carcinoma of the breast, grade 2."
    right = "Microscopic: sheets of atypical cells.\nDiagnosis: invasive ductal carcinoma."
    wrong = "Microscopic: sheets of atypical cells.\nDiagnosis: fibroadenoma. No carcinoma."
    silent = "Microscopic: sheets of atypical cells."
    a = analyze_report(wrong, extractor=ex)
    assert diagnoses(a) == ["fibroadenoma"]  # the negated carcinoma is not a diagnosis
    assert candidate_dx_text(analyze_report(silent, extractor=ex)) == NO_DIAGNOSIS
    ref_text = analyze_report(ref, extractor=ex).text
    emb = _Table(
        {
            ref_text: [1, 0, 0],
            "invasive ductal carcinoma": [0.9, 0.1, 0],
            "fibroadenoma": [0.2, 1, 0],
            NO_DIAGNOSIS: [0, 0, 1],
        }
    )
    r = dxalign_scores(
        references=[ref] * 3, candidates=[right, wrong, silent], extractor=ex, embedder=emb
    )
    cos_right = 0.9 / np.hypot(0.9, 0.1)
    assert r[0].align == pytest.approx(cos_right) and r[0].behaviour == 1.0
    assert r[0].score == pytest.approx(cos_right + 0.1)
    assert r[1].align == pytest.approx(0.2 / np.hypot(0.2, 1)) and r[1].behaviour == 0.0
    assert r[2].align == pytest.approx(0.0) and "no diagnosis" in r[2].warnings[0]
    assert r[0].score > r[1].score > r[2].score
    with pytest.raises(ValueError, match="3 references for 2"):
        dxalign_scores(references=[ref] * 3, candidates=[right] * 2, extractor=ex, embedder=emb)


def test_metric_registry_and_meta_cli(shared_data, tmp_path) -> None:
    import json

    from typer.testing import CliRunner

    from pathgls.cli import app
    from pathgls.errors import UnknownNameError
    from pathgls.meta.metrics import compute_metrics

    rows, _ = read_expert_table(shared_data / "expert_scores" / "hare_expert_dev.tsv")
    rows = [r for r in rows if r.expert > 0][:12]
    table = tmp_path / "t.tsv"
    lines = ["case_id\treference\tcandidate\texpert_score"]
    for i, r in enumerate(rows):  # one row per (case, candidate): ids made unique
        ref, cand = (" ".join(x.split()) for x in (r.reference, r.candidate))
        lines.append(f"{r.case_id}-{i}\t{ref}\t{cand}\t{r.expert}")
    table.write_text("\n".join(lines) + "\n")
    with pytest.raises(UnknownNameError, match="known: bertscore, bleu"):
        compute_metrics(["bleu", "meteor"], references=["a"], candidates=["a"])
    res = CliRunner().invoke(app, ["meta", str(table), "--metrics", "bleu,rougeL", "--json"])
    assert res.exit_code == 0, res.output
    out = {c["metric"]: c for c in json.loads(res.output[res.output.index("[") :])}
    rows2, _ = read_expert_table(table)
    vals = compute_metrics(
        ["bleu"], references=[r.reference for r in rows2], candidates=[r.candidate for r in rows2]
    )["bleu"]
    direct = correlate(metric="bleu", values=vals, expert=[r.expert for r in rows2])
    assert out["bleu"]["pearson"] == pytest.approx(direct.pearson)
    assert out["bleu"]["n"] == 12 and set(out) == {"bleu", "rougeL"}
    res = CliRunner().invoke(app, ["meta", str(table), "--metrics", "bleu,nope"])
    assert res.exit_code == 2 and "unknown metric 'nope'" in res.output
    ref = tmp_path / "ref.txt"
    ref.write_text("Invasive ductal carcinoma with necrosis.")
    # the same file as references and candidates: refused (every pair would score 1.0)
    res = CliRunner().invoke(app, ["hare", "--refs", str(ref), "--cands", str(ref), "--json"])
    assert res.exit_code == 2 and "both read" in res.output
    # another file with the same text: scored (1.0), with a warning that says why
    cand = tmp_path / "cand.txt"
    cand.write_text(ref.read_text())
    res = CliRunner().invoke(app, ["hare", "--refs", str(ref), "--cands", str(cand), "--json"])
    assert res.exit_code == 0, res.output
    assert "identical to its reference" in res.stderr
    assert json.loads(res.stdout)["score"] == pytest.approx(1.0)


def test_entity_f1_metric_is_nan_where_neither_side_has_an_entity() -> None:
    # entity F1 is undefined (None) for such a pair; compute_metrics used to crash on
    # float(None) there. NaN is what the correlation drops.
    import math

    from pathgls.meta.metrics import compute_metrics

    vals = compute_metrics(
        ["entity_f1"],
        references=["Thank you.", "Invasive ductal carcinoma."],
        candidates=["See you soon.", "Invasive ductal carcinoma."],
    )["entity_f1"]
    assert math.isnan(vals[0])
    assert vals[1] == pytest.approx(1.0)


def test_meta_on_the_examples_shows_progress_except_under_json() -> None:
    import json
    from pathlib import Path

    from typer.testing import CliRunner

    from pathgls.cli import app

    table = Path(__file__).resolve().parents[1] / "examples" / "reports.tsv"
    res = CliRunner().invoke(app, ["meta", str(table), "--metrics", "bleu,rougeL", "--json"])
    assert res.exit_code == 0, res.output
    assert [c["metric"] for c in json.loads(res.stdout)] == ["bleu", "rougeL"]  # stdout: JSON only
    assert "pairs" not in res.stderr  # quiet under --json
    res = CliRunner().invoke(app, ["meta", str(table), "--metrics", "bleu,rougeL"])
    assert res.exit_code == 0, res.output
    assert "rougeL on 8 pairs" in res.stderr and "2/2" in res.stderr
