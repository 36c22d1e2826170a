"""``pathgls evaluate``'s runner function: one item, its reference read like any report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pathgls.cli import app
from pathgls.config import load_config
from pathgls.errors import PathGLSError
from pathgls.runner.run import run_benchmark
from pathgls.runner.single import evaluate_single, read_reference_file
from pathgls.runner.store import ResultsStore

REFERENCE = "Diagnosis: invasive ductal carcinoma, grade 2.\nMargins: negative."
ORIGINAL = (
    "Microscopic: invasive ductal carcinoma with perineural invasion.\n"
    "Diagnosis: invasive ductal carcinoma, no perineural invasion."
)


@pytest.fixture(scope="module")
def ROI(sample_rois: tuple[Path, ...]) -> Path:
    return sample_rois[0]


def _replay(tmp_path: Path, item: str) -> Path:
    records = [
        {"item_id": item, "condition": c, "report": ORIGINAL}
        for c in ("original", "stain", "attack:false-malignant-history")
    ]
    replay = tmp_path / "replay.jsonl"
    replay.write_text("\n".join(json.dumps(r) for r in records))
    return replay


def test_reference_file_is_decoded_and_cleaned(tmp_path: Path) -> None:
    utf16 = tmp_path / "ref16.txt"
    utf16.write_bytes(("<p>" + REFERENCE.replace("\n", "<br>") + "</p>").encode("utf-16"))
    text = read_reference_file(utf16)
    assert "<" not in text and "invasive ductal carcinoma, grade 2." in text
    assert text.splitlines()[-1] == "Margins: negative."
    latin = tmp_path / "ref1252.txt"
    latin.write_bytes("Diagnosis: naevus, 5 µm from the margin.".encode("cp1252"))
    assert read_reference_file(latin) == "Diagnosis: naevus, 5 µm from the margin."
    binary = tmp_path / "ref.png"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    with pytest.raises(PathGLSError, match="reference report"):
        read_reference_file(binary)


def test_a_reference_file_scores_like_the_same_reference_in_a_table(
    tmp_path: Path, ROI: Path
) -> None:
    item = ROI.stem
    config = load_config(run={"subjects": (f"replay:{_replay(tmp_path, item)}",)})
    ref_file = tmp_path / "ref.txt"
    ref_file.write_text(REFERENCE)
    (single,) = evaluate_single(
        source=ROI, config=config, reference=read_reference_file(ref_file), out=tmp_path / "one"
    )
    assert ResultsStore(tmp_path / "one").status(single.subject, item) == "ok"
    refs = tmp_path / "refs.tsv"
    refs.write_text("item_id\treference\n" + f"{item}\t" + REFERENCE.replace("\n", "\\n") + "\n")
    src = tmp_path / "slides"
    src.mkdir()
    (src / ROI.name).symlink_to(ROI.resolve())
    run_benchmark(source=src, config=config, out=tmp_path / "run", references=refs, plots=False)
    (table,) = ResultsStore(tmp_path / "run").load_cards()
    for name in ("report", "hare", "logic", "stability"):
        assert single.modules[name].value is not None, name
        assert single.modules[name].value == table.modules[name].value, name
    assert single.trust == table.trust
    assert single.modules["logic"].value < 0.5  # perineural invasion, then none


def test_evaluate_cli_reference_adds_the_report_side(tmp_path: Path, ROI: Path) -> None:
    ref_file = tmp_path / "ref.txt"
    ref_file.write_text(REFERENCE)
    replay = _replay(tmp_path, ROI.stem)
    res = CliRunner().invoke(
        app,
        ["evaluate", str(ROI), "--subject", f"replay:{replay}", "--reference", str(ref_file)],
    )
    assert res.exit_code == 0, res.output
    card = json.loads(res.stdout[res.stdout.index("{") : res.stdout.rindex("}") + 1])
    assert card["modules"]["report"]["value"] is not None
    missing = CliRunner().invoke(
        app, ["evaluate", str(ROI), "--subject", "captioner", "--reference", str(tmp_path / "no")]
    )
    assert missing.exit_code != 0 and "no such file" in missing.output
