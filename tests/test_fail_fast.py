"""Commands check their inputs before any heavy import, and never score what they cannot read.

A missing file, a binary "report", an unknown spec, a model never pulled or a folder of runs
given as one run is a clear error (exit 2) raised before torch, transformers, spaCy, open_clip,
Ray, scipy or pandas is imported: the cases run in one fresh interpreter that records, after
each, which heavy modules are loaded (none may be). How long they take is measured in
``benchmarks/bench_startup.py``, never here.

The shipped registry catalog that makes this possible must equal the live registries, and the
checks must agree with the builders they stand in front of.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pathgls.cli import app
from pathgls.cli.catalog import CATALOG, catalog_data, live_registries, load_catalog
from pathgls.cli.preflight import (
    ARGUMENT_CHECKS,
    CHECKED_BY_BUILDER,
    SLIDE_SUFFIXES,
    check_spec,
)
from pathgls.errors import (
    ConfigError,
    ModelNotFoundError,
    NotTextError,
    SeveralRunsError,
    TableError,
    UnknownNameError,
)
from pathgls.io.rundirs import check_new_run_dir, check_run_dir, runs_below
from pathgls.io.sniff import binary_format, read_text_bytes

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
#: Modules no input check may import (each costs 0.3–20 s at start-up).
HEAVY = (
    "torch",
    "transformers",
    "spacy",
    "medspacy",
    "open_clip",
    "ray",
    "scipy",
    "sklearn",
    "skimage",
    "pandas",
    "matplotlib",
    "sentence_transformers",
)


# --- the catalog ----------------------------------------------------------------------------


def test_the_shipped_catalog_equals_the_live_registries() -> None:
    shipped = json.loads(CATALOG.read_text(encoding="utf-8"))
    assert shipped == catalog_data(live_registries()), (
        "resources/registries.json is out of date: run `python -m pathgls.cli.catalog`"
    )
    live = live_registries()
    for kind, registry in load_catalog().items():
        assert [e.to_dict() for e in registry.entries()] == [
            e.to_dict() for e in live[kind].entries()
        ]
        assert registry.label == live[kind].label


def test_every_argument_form_has_a_check_or_is_left_to_its_builder() -> None:
    forms = {e.argument for r in load_catalog().values() for e in r.entries()}
    unknown = forms - set(ARGUMENT_CHECKS) - CHECKED_BY_BUILDER
    assert not unknown, f"add these argument forms to pathgls.cli.preflight: {unknown}"


def test_slide_suffixes_are_the_tiling_packages() -> None:
    from pathgls.tiling.readers import IMAGE_EXTENSIONS, WSI_EXTENSIONS

    assert SLIDE_SUFFIXES == WSI_EXTENSIONS | IMAGE_EXTENSIONS


@pytest.mark.parametrize(
    ("kind", "spec"),
    [
        ("subject", "nosuch"),
        ("encoder", "plipp"),
        ("nli", "bert"),
        ("extractor", "spacy"),
        ("embedder", "e5"),
        ("metric", "meteor"),
        ("subject", "captioner:extra"),
        ("nli", ":rules"),
    ],
)
def test_unknown_or_malformed_specs_fail_as_the_live_registry_fails(kind: str, spec: str) -> None:
    with pytest.raises((UnknownNameError, ConfigError)) as preflight:
        check_spec(kind, spec)
    with pytest.raises(type(preflight.value)) as live:
        live_registries()[kind].parse(spec)
    assert str(preflight.value) == str(live.value)


@pytest.fixture
def no_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty models directory and Hugging Face cache: nothing is pulled."""
    from huggingface_hub import constants

    models = tmp_path / "models"
    models.mkdir()
    monkeypatch.setenv("PATHGLS_MODELS_DIR", str(models))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    return models


def _live_build(kind: str, spec: str) -> None:
    if kind == "encoder":
        from pathgls.config import EncoderConfig
        from pathgls.encoders import build_encoder

        build_encoder(EncoderConfig(name=spec))
    elif kind == "nli":
        from pathgls.nli import build_nli

        build_nli(spec)
    elif kind == "extractor":
        from pathgls.text import build_extractor

        build_extractor(spec)
    elif kind == "embedder":
        from pathgls.text.embedders import build_embedder

        build_embedder(spec)
    else:
        from pathgls.subjects import build_subject

        build_subject(spec)


@pytest.mark.parametrize(
    ("kind", "spec"),
    [
        ("encoder", "plip"),
        ("encoder", "hf:{missing}"),
        ("encoder", "hf:pathgls-test/no-such-clip"),
        ("nli", "hf"),
        ("nli", "hf:{missing}"),
        ("extractor", "hf-ner:{missing}"),
        ("embedder", "st:{missing}"),
        ("subject", "hf:{missing}"),
    ],
)
def test_a_model_not_pulled_fails_as_its_builder_fails(
    kind: str, spec: str, tmp_path: Path, no_models: Path
) -> None:
    spec = spec.format(missing=tmp_path / "no-such-model")
    with pytest.raises(ModelNotFoundError) as preflight:
        check_spec(kind, spec)
    with pytest.raises(ModelNotFoundError) as live:
        _live_build(kind, spec)
    # the same model is named, and the pull command where the builder names one
    missing = str(tmp_path / "no-such-model")
    for error in (preflight.value, live.value):
        assert missing in str(error) or "pathgls models pull" in str(error)
    if "pathgls models pull" in str(live.value):
        assert "pathgls models pull" in str(preflight.value)


def test_specs_that_are_fine_pass(tmp_path: Path, tiny_clip: Path) -> None:
    replay = tmp_path / "r.jsonl"
    replay.write_text("", encoding="utf-8")
    for kind, spec in [
        ("subject", "captioner"),
        ("subject", f"replay:{replay}"),
        ("subject", "openai:http://localhost:8000/v1#llava"),
        ("encoder", f"hf:{tiny_clip}"),
        ("nli", "rules"),
        ("extractor", "lexicon"),
        ("embedder", "minilm"),
        ("metric", "rougeL"),
    ]:
        check_spec(kind, spec)


# --- what a file holds ----------------------------------------------------------------------


def _xlsx(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
    return path


def test_binary_formats_are_named(tmp_path: Path, tiles_dir: Path, slides_dir: Path) -> None:
    import h5py
    import numpy as np

    bag = tmp_path / "bag.h5"
    with h5py.File(bag, "w") as f:
        f["features"] = np.zeros((2, 3))
    gz = tmp_path / "r.txt.gz"
    gz.write_bytes(gzip.compress(b"Diagnosis: carcinoma."))
    cases = {
        next(tiles_dir.glob("*.png")): "PNG",
        slides_dir / "cmu-1-small-region.svs": "TIFF",
        slides_dir / "openslide-boxes_0.dcm": "DICOM",
        bag: "HDF5",
        _xlsx(tmp_path / "t.xlsx"): "ZIP",
        gz: "gzip",
    }
    for path, name in cases.items():
        found = binary_format(path.read_bytes()[:65536])
        assert found is not None and name in found, (path, found)
    assert "PDF" in binary_format(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj")
    assert "NUL" in binary_format(b"Diagnosis\x00\x01\x02 carcinoma")
    assert "control bytes" in binary_format(bytes(range(1, 32)) * 10 + b"text")


def test_real_reports_in_every_encoding_are_text(shared_data: Path) -> None:
    from pathgls.io.tables import read_table

    table = read_table(shared_data / "reports" / "tcga_reports_dev.tsv")
    flagged = [
        row["id"]
        for row in table.rows
        if binary_format((row["report"] or "").encode("utf-8")) is not None
    ]
    assert not flagged, f"real reports taken for binary: {flagged[:5]}"
    text = "Diagnóstico: carcinoma ductal invasivo, sin necrosis. Größe 2 cm.\n"
    for encoded in (
        text.encode("utf-8"),
        text.encode("latin-1"),
        text.encode("utf-16"),  # with its byte-order mark (clean_report decodes it)
        b"\xef\xbb\xbf" + text.encode("utf-8"),
        b"Header\tvalue\r\n\x0cpage 2\x1b[0m",
    ):
        assert binary_format(encoded) is None, encoded[:20]


def test_read_text_bytes_and_tables_refuse_binary(tmp_path: Path, tiles_dir: Path) -> None:
    png = next(tiles_dir.glob("*.png"))
    with pytest.raises(NotTextError, match="is a PNG image, not a text report"):
        read_text_bytes(png)
    with pytest.raises(NotTextError, match="no such file"):
        read_text_bytes(tmp_path / "none.txt")
    with pytest.raises(NotTextError, match="is a directory"):
        read_text_bytes(tmp_path)
    from pathgls.io.tables import read_table

    with pytest.raises(TableError, match="ZIP archive"):
        read_table(_xlsx(tmp_path / "refs.tsv"), what="references")


# --- run directories ------------------------------------------------------------------------


def _run(path: Path) -> Path:
    (path / "scorecards").mkdir(parents=True)
    (path / "manifest.json").write_text("{}", encoding="utf-8")
    return path


def test_a_folder_of_runs_is_not_a_run(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    a, b = _run(runs / "a"), _run(runs / "group" / "b")
    (runs / ".hidden").mkdir()
    assert runs_below(runs) == [a, b]
    assert runs_below(a) == []  # a run's own folders are not searched
    assert check_run_dir(a) == a
    with pytest.raises(SeveralRunsError, match="holds 2 runs") as e:
        check_run_dir(runs)
    assert e.value.runs == (a, b)
    with pytest.raises(SeveralRunsError):
        check_run_dir(runs, cards_folder=True)
    plain = tmp_path / "cards"
    plain.mkdir()
    assert check_run_dir(plain, cards_folder=True) == plain
    with pytest.raises(Exception, match="not a run directory"):
        check_run_dir(plain)
    with pytest.raises(SeveralRunsError, match="give a folder of its own"):
        check_new_run_dir(runs)
    assert check_new_run_dir(a) == a and check_new_run_dir(tmp_path / "new") == tmp_path / "new"
    (tmp_path / "f").write_text("x")
    with pytest.raises(ConfigError, match="is a file"):
        check_new_run_dir(tmp_path / "f")


# --- the commands, in a fresh interpreter --------------------------------------------------

#: Runs each case as ``pathgls ARGS`` in this process, in order, and prints one JSON line per
#: case: exit code, output, and the heavy modules loaded so far.
_DRIVER = r"""
import json, sys
from typer.testing import CliRunner
from pathgls.cli import app
HEAVY = json.loads(sys.argv[1])
for args in json.loads(sys.argv[2]):
    res = CliRunner().invoke(app, args)
    loaded = sorted(h for h in HEAVY if h in sys.modules)
    print(json.dumps({"args": args, "code": res.exit_code, "output": res.output,
                      "heavy": loaded}))
"""


def _fresh(cases: list[list[str]], env: dict[str, str], cwd: Path) -> list[dict]:
    proc = subprocess.run(
        [sys.executable, "-c", _DRIVER, json.dumps(HEAVY), json.dumps(cases)],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, str]:
    """One bad input of each kind, and a folder holding two runs (no shared data needed)."""
    import numpy as np
    from PIL import Image

    png = tmp_path / "tile.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 255, (64, 64, 3), np.uint8)).save(png)
    pdf = tmp_path / "report.txt"
    pdf.write_bytes(b"%PDF-1.4\n" + bytes(range(256)))
    nul = tmp_path / "report.md"
    nul.write_bytes(b"Diagnosis: carcinoma\x00\x00\x00\x01\x02")
    h5 = tmp_path / "bag.txt"
    h5.write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(64))
    xlsx = _xlsx(tmp_path / "refs.xlsx")
    gz = tmp_path / "expert.tsv"
    gz.write_bytes(gzip.compress(b"reference\tcandidate\texpert_score\n"))
    cfg = tmp_path / "run.toml"
    cfg.write_bytes(png.read_bytes())
    runs = tmp_path / "runs"
    _run(runs / "demo")
    _run(runs / "bench")
    empty = tmp_path / "empty"
    empty.mkdir()
    roi = tmp_path / "roi" / png.name
    roi.parent.mkdir()
    roi.symlink_to(png)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "readme.txt").write_text("no slide here\n")
    other = tmp_path / "other.jsonl"  # records another item only
    other.write_text('{"item_id": "elsewhere", "condition": "original", "report": "Benign."}\n')
    blank_replay = tmp_path / "blank.jsonl"  # the item's original report is empty
    blank_replay.write_text('{"item_id": "tile", "condition": "original", "report": " "}\n')
    blank = tmp_path / "blank.md"
    blank.write_text("\n  \n")
    return {
        "notes": str(notes),
        "other": str(other),
        "blank_replay": str(blank_replay),
        "blank": str(blank),
        "png": str(png),
        "pdf": str(pdf),
        "nul": str(nul),
        "h5": str(h5),
        "xlsx": str(xlsx),
        "gz": str(gz),
        "cfg": str(cfg),
        "runs": str(runs),
        "empty": str(empty),
        "roi": str(roi.parent),
        "missing": str(tmp_path / "missing"),
        "report": str(EXAMPLES / "report.md"),
        "reports": str(EXAMPLES / "reports.tsv"),
        "expert": str(EXAMPLES / "reports.tsv"),
    }


#: (arguments, what the error must say): every one exits 2 before any heavy import.
CASES: list[tuple[list[str], str]] = [
    # missing files and folders
    (["logic", "{missing}.md"], "no such file"),
    (["entities", "{missing}.txt"], "no such file"),
    (["ground", "--report", "{missing}.md", "--image", "{png}"], "no such file"),
    (["benchmark", "{missing}", "--subject", "captioner"], "no such file or directory"),
    (["benchmark", "{empty}", "--subject", "captioner"], "no slides found"),
    (["extract", "{empty}"], "no slides found"),
    (["evaluate", "{missing}.svs", "--subject", "captioner"], "no such file"),
    (["meta", "{missing}.tsv"], "no such file"),
    (["hare", "--refs", "{missing}", "--cands", "{report}"], "no such file"),
    (["logic", "{report}", "--config", "{missing}.toml"], "cannot read config file"),
    # binary or non-text inputs where text is read
    (["logic", "{png}"], "is a PNG image, not a text report"),
    (["logic", "{pdf}"], "is a PDF document"),
    (["logic", "{nul}"], "NUL bytes"),
    (["entities", "{h5}"], "HDF5"),
    (["ground", "--report", "{png}", "--image", "{png}"], "PNG image, not a text report"),
    (["hare", "--refs", "{xlsx}", "--cands", "{report}"], "ZIP archive"),
    (["meta", "{gz}"], "gzip"),
    (["logic", "{report}", "--config", "{cfg}"], "is a PNG image, not TOML"),
    (["benchmark", "{roi}", "--subject", "captioner", "--references", "{png}"], "PNG"),
    # text or the wrong binary where an image or a bag is read
    (["attack", "stain", "{report}"], "is a text file, not an image"),
    (["ground", "--report", "{report}", "--image", "{pdf}"], "not an image"),
    (["ground", "--report", "{report}", "--bag", "{report}"], "not an HDF5 feature bag"),
    (["stability", "--subject", "captioner", "--image", "{nul}"], "not an image"),
    # unknown names and malformed specs
    (["benchmark", "{roi}", "--subject", "nosuch"], "unknown subject 'nosuch'"),
    (["benchmark", "{roi}", "--subject", "captioner:x"], "takes no argument"),
    (["benchmark", "{roi}", "--subject", "replay:{missing}.jsonl"], "does not exist"),
    (["benchmark", "{roi}", "--subject", "replay:{png}"], "is a PNG image, not a text file"),
    (["benchmark", "{roi}", "--subject", "openai:http://h:8000/v1"], "names no model"),
    (["benchmark", "{roi}", "--subject", "openai:ftp://h/v1#m"], "http(s) URL"),
    (["benchmark", "{roi}", "--subject", "captioner", "--encoder", "pilp"], "unknown encoder"),
    (["benchmark", "{roi}", "--subject", "captioner", "--nli", "bert"], "unknown NLI backend"),
    (["logic", "{report}", "--extractor", "spacy"], "unknown entity extractor"),
    (["benchmark", "{roi}", "--subject", "hf:"], "no model given"),
    (["stability", "--subject", "nosuch", "--image", "{png}"], "unknown subject"),
    (["meta", "{expert}", "--metrics", "bleu,meteor"], "unknown metric 'meteor'"),
    # models never pulled (empty models directory and Hugging Face cache)
    (["benchmark", "{roi}", "--subject", "captioner", "--encoder", "plip"], "models pull plip"),
    (["extract", "{roi}", "--encoder", "quiltnet"], "models pull quiltnet"),
    (["ground", "--report", "{report}", "--image", "{png}"], "models pull plip"),
    (["logic", "{report}", "--nli", "hf"], "models pull nli-deberta"),
    (["logic", "{report}", "--nli", "hf:{missing}"], "does not exist"),
    (["logic", "{report}", "--extractor", "hf-ner:org/no-such-ner"], "models pull hf:org"),
    (["benchmark", "{roi}", "--subject", "hf:{missing}"], "does not exist"),
    # a folder of runs given as one run, or as the place of a new one
    (["gate", "{runs}"], "holds 2 runs"),
    (["report", "{runs}"], "holds 2 runs"),
    (["compare", "{runs}"], "holds 2 runs"),
    (["calibrate", "{runs}", "--labels", "{reports}"], "holds 2 runs"),
    (["benchmark", "{roi}", "--subject", "captioner", "--out", "{runs}"], "holds 2 runs"),
    (["demo", "--out", "{runs}"], "holds 2 runs"),
    (["extract", "{roi}", "--out", "{runs}"], "holds 2 runs"),
    # inputs the model-loading commands read, checked before a model is built
    (["evaluate", "{report}", "--subject", "captioner"], "unsupported file type .md"),
    (["evaluate", "{nul}", "--subject", "captioner"], "unsupported file type .md"),
    (["benchmark", "{notes}", "--subject", "captioner"], "no slides found"),
    (["benchmark", "{report}", "--subject", "captioner"], "unsupported file type .md"),
    (["extract", "{report}"], "unsupported file type .md"),
    (["ground", "--report", "{report}", "--slide", "{report}", "--region", "0,0,64,64"],
     "unsupported file type .md"),
    (["ground", "--report", "{blank}", "--image", "{png}"], "is empty"),
    (["evaluate", "{png}", "--subject", "replay:{other}"], "records no original report"),
    (["benchmark", "{roi}", "--subject", "replay:{other}"], "records no original report"),
    (["evaluate", "{png}", "--subject", "replay:{blank_replay}"], "are empty"),
    # the same column as references and candidates
    (["hare", "--refs", "{expert}", "--cands", "{expert}", "--ref-column", "reference",
      "--cand-column", "reference"], "both read column 'reference'"),
    (["hare", "--refs", "{report}", "--cands", "{report}"], "both read"),
]  # fmt: skip


def test_input_errors_exit_two_before_any_heavy_import(
    inputs: dict[str, str], tmp_path: Path
) -> None:
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        PATHGLS_MODELS_DIR=str(tmp_path / "models"),
        HF_HUB_CACHE=str(tmp_path / "hf-cache"),
        HF_HUB_OFFLINE="1",
        COLUMNS="400",
    )
    cases = [[a.format(**inputs) for a in args] for args, _ in CASES]
    work = tmp_path / "cwd"
    work.mkdir()
    results = _fresh([*cases, ["list"], ["list", "subject", "--json"]], env, work)
    assert len(results) == len(cases) + 2
    for (args, message), got in zip(CASES, results, strict=False):
        where = " ".join(args)
        assert got["code"] == 2, f"pathgls {where}: exit {got['code']}\n{got['output']}"
        assert message in " ".join(got["output"].split()), f"pathgls {where}: {got['output']}"
        assert "Traceback" not in got["output"]
        assert not got["heavy"], f"pathgls {where} imported {got['heavy']} before failing"
    listed, subjects = results[-2:]
    assert listed["code"] == 0 and not listed["heavy"], listed
    for kind in load_catalog():
        assert f" {kind} " in listed["output"]
    assert {e["name"] for e in json.loads(subjects["output"])} == set(
        live_registries()["subject"].names()
    )
    assert not (work / "runs").exists()  # nothing was written by a command that failed


def test_hare_reads_reference_and_candidate_columns_of_one_table(tmp_path: Path) -> None:
    table = tmp_path / "pairs.tsv"
    table.write_text(
        "case_id\treference\tcandidate\n"
        "a\tInvasive ductal carcinoma with necrosis.\tBenign breast tissue, no carcinoma.\n",
        encoding="utf-8",
    )
    res = CliRunner().invoke(app, ["hare", "--refs", str(table), "--cands", str(table), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["score"] < 0.9  # a candidate unlike its reference
