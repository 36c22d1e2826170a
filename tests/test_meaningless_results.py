"""No exit 0 for a result that measures nothing: empty candidates, constant expert scores, a
table without rows, duplicate ids each stop with exit 2 and the reason (references matching no
item: tests/test_repeatable_runs.py)."""

from __future__ import annotations

import math
import re
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pathgls.cli import app
from pathgls.errors import MetaError
from pathgls.meta.correlate import correlate, read_expert_table


def invoke(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})


def test_hare_with_every_candidate_empty_is_an_error(tmp_path: Path) -> None:
    table = tmp_path / "pairs.tsv"
    table.write_text(
        "case_id\treference\tcandidate\n"
        "a\tInvasive ductal carcinoma, grade 2.\t \n"
        "b\tBenign breast tissue.\t\n"
    )
    res = invoke("hare", "--refs", table, "--cands", table)
    assert res.exit_code == 2, res.output
    assert "empty reference or candidate" in res.output and "0.000" not in res.output.split(":")[0]


def _expert(tmp_path: Path, scores: list[str], ids: list[str] | None = None) -> Path:
    ids = ids or [f"c{i}" for i in range(len(scores))]
    rows = [
        f"{i}\tInvasive carcinoma grade {n}.\tCarcinoma, grade {n % 3 + 1}.\t{s}"
        for n, (i, s) in enumerate(zip(ids, scores, strict=True))
    ]
    path = tmp_path / "expert.tsv"
    path.write_text("case_id\treference\tcandidate\texpert_score\n" + "\n".join(rows) + "\n")
    return path


def test_meta_with_constant_expert_scores_is_an_error_without_nan_or_scipy_warnings(
    tmp_path: Path,
) -> None:
    path = _expert(tmp_path, ["3", "3", "3", "3"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # scipy's ConstantInputWarning would raise here
        res = invoke("meta", path, "--metrics", "bleu")
    assert res.exit_code == 2, res.output
    assert "expert scores of all 4 pairs are 3" in " ".join(res.output.split())
    assert not re.search(r"\bnan\b", res.output.lower())
    assert "Pearson" not in res.output  # no table of undefined numbers
    rows, _ = read_expert_table(path)
    with pytest.raises(MetaError, match="constant"):
        correlate(metric="bleu", values=[0.1, 0.2, 0.3, 0.4], expert=[r.expert for r in rows])


def test_a_constant_metric_is_undefined_not_a_perfect_fit() -> None:
    c = correlate(metric="flat", values=[0.5] * 4, expert=[1, 2, 3, 4])
    assert math.isnan(c.pearson) and math.isnan(c.rmse)  # no "RMSE 0.000"
    assert any("constant" in w for w in c.warnings)


def test_meta_with_duplicate_case_ids_is_an_error_naming_them(tmp_path: Path) -> None:
    path = _expert(tmp_path, ["1", "2", "3", "4"], ids=["a", "b", "a", "c"])
    res = invoke("meta", path, "--metrics", "bleu")
    assert res.exit_code == 2, res.output
    assert "'a' (lines 2 and 4)" in " ".join(res.output.split())


def test_logic_on_a_header_only_table_or_duplicate_ids_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.tsv"
    empty.write_text("case_id\treport\n")
    for extra in ((), ("--json",)):
        res = invoke("logic", empty, *extra)
        assert res.exit_code == 2, res.output
        assert "no report rows" in res.output
    twice = tmp_path / "twice.tsv"
    twice.write_text("case_id\treport\nx\tCarcinoma.\nx\tBenign.\n")
    res = invoke("logic", twice)
    assert res.exit_code == 2, res.output
    assert "'x' (lines 2 and 3)" in " ".join(res.output.split())
