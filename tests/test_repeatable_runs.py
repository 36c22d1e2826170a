"""A run folder repeats itself: its config.toml, given back, gives the same ScoreCards.

Everything that decides a card is in the stored config or manifest (the references file too);
an input the config cannot record (a secret) stops the repeat with the reason instead of
scoring something else.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pathgls.cli import app
from pathgls.config import load_config, save_config
from pathgls.errors import ConfigError
from pathgls.runner.run import redacted_config, run_benchmark


def flat(value: Any, prefix: str = "") -> dict[str, Any]:
    """Every leaf of a JSON value by its path (``modules.report.value``, ``errors[0]``)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out |= flat(v, f"{prefix}.{k}" if prefix else str(k))
        return out or {prefix: {}}
    if isinstance(value, list):
        out = {}
        for i, v in enumerate(value):
            out |= flat(v, f"{prefix}[{i}]")
        return out or {prefix: []}
    return {prefix: value}


def cards(run: Path) -> dict[tuple[str, str], dict[str, Any]]:
    out = {}
    for path in sorted((run / "scorecards").rglob("*.json")):
        data = json.loads(path.read_text())
        data.pop("timings")  # seconds: the one field a repeat cannot repeat
        out[(data["subject"], data["item_id"])] = flat(data)
    return out


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory, sample_ihc: Path, sample_rois) -> Path:
    base = tmp_path_factory.mktemp("repeat")
    src = base / "inputs"
    src.mkdir()
    for f in (sample_ihc, sample_rois[0]):
        (src / f.name).symlink_to(f)
    refs = base / "refs.tsv"
    refs.write_text(
        "item_id\treference\n"
        f"{sample_ihc.stem}\tImmunohistochemistry: strong nuclear staining in tumour cells.\n"
        f"{sample_rois[0].stem}\tSkin with a dilated follicular infundibulum. No malignancy.\n"
    )
    return base


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args])


def test_a_run_repeated_from_its_config_gives_identical_cards(inputs: Path) -> None:
    first, again = inputs / "first", inputs / "again"
    res = invoke(
        "benchmark", inputs / "inputs", "--subject", "captioner-obedient", "--seed", "3",
        "--references", inputs / "refs.tsv", "--out", first,
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    stored = tomllib.loads((first / "config.toml").read_text())
    assert stored["run"]["references"] == str((inputs / "refs.tsv").resolve())
    manifest = json.loads((first / "manifest.json").read_text())
    assert len(manifest["references"]["sha256"]) == 64
    # the repeat names the source and the stored config, nothing else
    res = invoke("benchmark", inputs / "inputs", "--config", first / "config.toml", "--out", again)
    assert res.exit_code == 0, res.output
    a, b = cards(first), cards(again)
    assert set(a) == set(b) and len(a) == 2
    for key, fields in a.items():
        # the reference decides the report-side module: both runs have it
        assert fields["inputs.reference"] is True
        assert "modules.report.value" in fields, key
        other = b[key]
        assert set(fields) == set(other), (key, set(fields) ^ set(other))
        for name, value in fields.items():
            assert other[name] == value, f"{key} {name}: {value!r} then {other[name]!r}"


def test_a_stored_config_with_a_masked_secret_stops_the_repeat(inputs: Path) -> None:
    spec = "openai:http://user:hunter22@127.0.0.1:9/v1#model"
    stored = redacted_config(load_config(run={"subjects": (spec, "captioner")}))
    assert "hunter22" not in stored.run.subjects[0]
    path = save_config(stored, inputs / "secret.toml")
    res = invoke("benchmark", inputs / "inputs", "--config", path, "--out", inputs / "secret")
    assert res.exit_code == 2
    assert "run.subjects[0]" in res.output and "holds a secret" in res.output
    assert "--subject" in res.output
    assert not (inputs / "secret" / "scorecards").exists()  # stopped before any card
    with pytest.raises(ConfigError, match="holds a secret"):
        run_benchmark(source=inputs / "inputs", config=stored, out=inputs / "secret2")
    # giving the subject again on the command line runs (nothing masked is left)
    assert "***" not in load_config(path, run={"subjects": ("captioner",)}).run.subjects[0]


def test_references_matching_no_item_stop_and_partial_matches_are_named(inputs: Path) -> None:
    none = inputs / "none.tsv"
    none.write_text("item_id\treference\nslide-x\tBenign.\nslide-y\tBenign.\n")
    res = invoke(
        "benchmark", inputs / "inputs", "--subject", "captioner", "--references", none,
        "--out", inputs / "none",
    )  # fmt: skip
    assert res.exit_code == 2, res.output
    assert "none of its 2 references matches an item" in res.output
    assert "slide-x" in res.output
    some = inputs / "some.tsv"
    some.write_text(
        (inputs / "refs.tsv").read_text() + "slide-unknown\tBenign.\n", encoding="utf-8"
    )
    res = invoke(
        "benchmark", inputs / "inputs", "--subject", "captioner", "--references", some,
        "--out", inputs / "some",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "1 of 3 references match no item" in res.output and "slide-unknown" in res.output
    manifest = json.loads((inputs / "some" / "manifest.json").read_text())
    assert any("slide-unknown" in w for w in manifest["warnings"])
