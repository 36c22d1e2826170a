"""Hostile bags: non-finite features and attributes of the wrong type are BagErrors (issue 14)."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

from pathgls.errors import BagError
from pathgls.features.bags import BagWriter, validate_bag
from pathgls.grounding.similarity import max_similarity
from pathgls.grounding.sources import open_bag_source
from pathgls.testing.hostile import BAG_D, BAG_N, BAG_W, bag_meta, write_bag

N, W, D = BAG_N, BAG_W, BAG_D


def test_writing_non_finite_features_is_a_bag_error(tmp_path: Path) -> None:
    coords = np.stack([np.arange(N) * 896, np.zeros(N)], 1).astype(np.int64)
    win = np.full((N, W, D), np.nan, np.float32)
    expected = r"non-finite \(NaN or inf\) features in patches 0\.\.5"
    with (
        BagWriter(tmp_path / "b.h5", meta=bag_meta(), coords=coords) as w,
        pytest.raises(BagError, match=expected),
    ):
        w.append(start=0, coords=coords, window_features=win, features=win.mean(1))


@pytest.mark.parametrize("where", ["features", "window_features"])
def test_a_bag_with_nan_or_inf_features_never_becomes_a_score(tmp_path: Path, where: str) -> None:
    path = write_bag(tmp_path / "b.h5")
    with h5py.File(path, "r+") as f:
        data = f[where][:]
        data[3] = np.inf if where == "features" else np.nan
        f[where][...] = data
    query = np.ones((1, D), np.float32) / np.sqrt(D)
    if where == "features":
        with pytest.raises(BagError, match=r"non-finite .* first at patch 3"):
            validate_bag(path)
        return
    with open_bag_source(path) as source, pytest.raises(BagError, match=r"patches 0\.\.5"):
        max_similarity(queries=query, windows=source.windows)  # before: grounding 0.5


@pytest.mark.parametrize("zero", ["all", "one patch"])
def test_all_zero_window_features_are_refused_not_scored_half_grounded(
    tmp_path: Path, zero: str
) -> None:
    path = write_bag(tmp_path / "b.h5")
    with h5py.File(path, "r+") as f:
        data = f["window_features"][:]
        if zero == "all":
            data[...] = 0
        else:
            data[2] = 0
        f["window_features"][...] = data
    query = np.ones((1, D), np.float32) / np.sqrt(D)
    want = rf"{N if zero == 'all' else 1} of {N} patches have all-zero window features"
    with open_bag_source(path) as source, pytest.raises(BagError, match=want):
        max_similarity(queries=query, windows=source.windows)  # before: S_g 0.5, no word
    # one zero window beside real ones is no empty patch
    with h5py.File(path, "r+") as f:
        data = f["window_features"][:]
        data[...] = 1.0 / np.sqrt(D)
        data[2, 0] = 0
        f["window_features"][...] = data
    with open_bag_source(path) as source:
        r = max_similarity(queries=query, windows=source.windows)
    assert r.max_similarity[0] == pytest.approx(1.0, abs=1e-3)


@pytest.mark.parametrize(
    ("attr", "value", "message"),
    [
        ("patch_size", "big", "'patch_size' must be an integer, got 'big'"),
        ("target_mpp", np.nan, "'target_mpp' must be a finite number"),
        ("window_stride", 0, "'window_stride' must be > 0, got 0"),
        ("encoder", 7, "'encoder' must be text, got 7"),
    ],
)
def test_bag_attributes_of_the_wrong_type_name_the_attribute(
    tmp_path: Path, attr: str, value: object, message: str
) -> None:
    path = write_bag(tmp_path / "b.h5")
    with h5py.File(path, "r+") as f:
        f.attrs[attr] = value
    with pytest.raises(BagError, match=message.replace("(", r"\(")):
        validate_bag(path)
    with pytest.raises(BagError, match=attr), open_bag_source(path):  # before: a ValueError
        pass


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ('{"item_id": "a", "condition": "original", "report": 42}', "'report' must be a string"),
        ('{"item_id": "a", "condition": "original", "text": 4.5}', "'text' must be a string"),
        ('{"item_id": "a", "condition": 1, "report": "r"}', "'condition' must be a string"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),  # before: RecursionError
    ],
)
def test_replay_lines_that_are_not_text_are_refused_with_the_line(
    tmp_path: Path, line: str, words: str
) -> None:
    from pathgls.errors import ReplayFileError
    from pathgls.subjects.replay import read_replay_file

    path = tmp_path / "r.jsonl"
    path.write_text('{"item_id": 7, "condition": "original", "report": "ok"}\n' + line + "\n")
    with pytest.raises(ReplayFileError, match=rf"line 2: .*{words}"):
        read_replay_file(path=path)


# -- 10: one reader for every user table -------------------------------------------------------


def test_a_bom_no_longer_hides_the_case_id_column(tmp_path: Path) -> None:
    from pathgls.meta.correlate import read_expert_table

    path = tmp_path / "experts.tsv"
    path.write_text(
        "\ufeffcase_id\treference\tcandidate\texpert_score\n"
        "TCGA-1\tCarcinoma.\tCarcinoma.\t4\nTCGA-2\tBenign.\tCarcinoma.\t0\n",
        encoding="utf-8",
    )
    rows, warnings = read_expert_table(path)
    assert [r.case_id for r in rows] == ["TCGA-1", "TCGA-2"] and warnings == []  # before: 2, 3


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (
            'item_id\treference\na\t"open\nb\tx\n',
            r"line 2: .* a quote opened there is never closed",
        ),
        (
            'item_id\treference\na\t"stray\nb\tx\nc\ty"\nd\tz\n',
            r"line 2: a quoted field runs to line 4 and holds 2 line\(s\) that look like rows",
        ),
        ("item_id\treference\na\tx\textra\n", r"line 2: more values than columns"),
    ],
)
def test_quote_errors_and_swallowed_rows_are_named_by_line(
    tmp_path: Path, text: str, words: str
) -> None:
    from pathgls.errors import ConfigError
    from pathgls.runner.items import read_references

    path = tmp_path / "refs.tsv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=words):  # before: rows b, c silently swallowed
        read_references(path)


def test_the_table_reader_keeps_multiline_quoted_reports_and_their_lines(
    shared_data: Path,
) -> None:
    from pathgls.io.tables import read_table

    table = read_table(shared_data / "expert_scores" / "hare_expert_dev.tsv")
    assert len(table.rows) == 316  # the README's 316 pairs: no row lost or invented
    assert table.lines[0] == 2 and table.lines == sorted(table.lines)
    assert any("\n" in r["reference"] for r in table.rows)


def test_labels_and_validation_tables_use_the_same_reader(tmp_path: Path) -> None:
    from pathgls.errors import CalibrationError
    from pathgls.meta.calibrate import read_labels

    path = tmp_path / "labels.tsv"
    path.write_text('\ufeffitem_id\tlabel\na\t1\nb\t"0\nc\t1\n', encoding="utf-8")
    with pytest.raises(CalibrationError, match=r"line 3: .*never closed"):
        read_labels(path)
    path.write_text("\ufeffitem_id\tlabel\na\t1\nb\t0\n", encoding="utf-8")
    assert read_labels(path) == {(None, "a"): 1.0, (None, "b"): 0.0}


# -- 11: unknown module names and non-finite numbers are refused with the value -------------------


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--weights", "grounding=0.5,logic=0.3,stabilty=0.2"], "'stabilty' (did you mean"),
        (["--floor", "groundng=0.3"], "'groundng' (did you mean 'grounding'?)"),
        (["--deploy", "nan"], "got nan"),
        (["--weights", "grounding=inf"], "must be a number in [0, 1e+06]"),
    ],
)
def test_gate_refuses_typos_and_non_finite_numbers(
    tmp_path: Path, args: list[str], words: str
) -> None:
    from typer.testing import CliRunner

    from pathgls.cli import app

    res = CliRunner().invoke(app, ["gate", str(tmp_path), *args])
    assert res.exit_code == 2 and words in res.output, res.output


def test_gate_config_with_an_unknown_module_is_refused(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from pathgls.cli import app

    config = tmp_path / "c.toml"
    config.write_text("[fusion.weights]\ngrounding = 0.5\nstabilty = 0.5\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["gate", str(tmp_path), "--config", str(config)])
    assert res.exit_code == 2 and "unknown module 'stabilty'" in res.output, res.output


def test_meta_names_a_score_column_without_numbers(tmp_path: Path) -> None:
    from pathgls.errors import MetaError
    from pathgls.meta.correlate import read_expert_table

    path = tmp_path / "e.tsv"
    path.write_text(
        "case_id\treference\tcandidate\texpert_score\tgrade\n"
        "a\tCarcinoma.\tCarcinoma.\t4\thigh\nb\tBenign.\tCarcinoma.\t0\tlow\n",
        encoding="utf-8",
    )
    with pytest.raises(MetaError, match=r"column 'grade' holds no number \(line 2: 'high'\)"):
        read_expert_table(path, score="grade")  # before: "only 0 usable pairs"


def test_references_without_a_header_are_two_columns_id_then_text(tmp_path: Path) -> None:
    from pathgls.errors import ConfigError
    from pathgls.runner.items import read_references

    path = tmp_path / "refs.tsv"
    path.write_text("slide-1\tInvasive carcinoma.\\nGrade 2.\nslide-2\tBenign.\n", "utf-8")
    assert read_references(path) == {
        "slide-1": "Invasive carcinoma.\nGrade 2.",
        "slide-2": "Benign.",
    }
    path.write_text("slide-1\tOne line only.\n", "utf-8")
    assert read_references(path) == {"slide-1": "One line only."}
    path.write_text("slide-1\tA.\nslide-1\tB.\n", "utf-8")
    with pytest.raises(ConfigError, match=r"refs\.tsv:2: item id 'slide-1' appears twice"):
        read_references(path)
    # with a header, as before; three unnamed columns are neither form
    path.write_text("item_id\treference\nslide-1\tA.\n", "utf-8")
    assert read_references(path) == {"slide-1": "A."}
    path.write_text("a\tb\tc\nx\ty\tz\n", "utf-8")
    with pytest.raises(ConfigError, match="exactly two columns without a header"):
        read_references(path)


def test_a_bag_attribute_holding_braces_is_named_not_a_format_error() -> None:
    """Found by the fuzz tests: the message was built with str.format over the bad value."""
    from pathgls.errors import BagError
    from pathgls.features.bags import _typed

    for kind in ("int", "float", "bool"):
        with pytest.raises(BagError, match=r"bag attribute 'patch_size' must be .*, got '\{'"):
            _typed("patch_size", "{", kind)


def test_replay_lines_are_numbered_by_newlines_only(tmp_path: Path) -> None:
    """Found by the fuzz tests: a record separator (\\x1e) inside a line moved every later line
    number by one, because str.splitlines() splits on it."""
    from pathgls.errors import ReplayFileError
    from pathgls.subjects.replay import read_replay_file

    path = tmp_path / "r.jsonl"
    good = '{"item_id": "a", "condition": "original", "report": "Carcinoma, grade 2."}'
    path.write_text(good + "\n" + "\x1e:" + "\n", encoding="utf-8")
    with pytest.raises(ReplayFileError, match="line 2: invalid JSON") as info:
        read_replay_file(path=path)
    assert info.value.line == 2
