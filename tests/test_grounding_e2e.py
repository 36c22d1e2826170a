"""Grounding end to end on the real CMU slide with a tiny random CLIP (wiring, never a result)."""

from __future__ import annotations

import json
from pathlib import Path

import geojson as geojson_lib
import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from pathgls.cli import app
from pathgls.config import load_config
from pathgls.encoders import build_encoder
from pathgls.errors import EncoderMismatchError
from pathgls.features.bags import read_bag
from pathgls.features.extract import extract_slide
from pathgls.grounding.score import RANDOM_WEIGHTS_WARNING, ground
from pathgls.grounding.sources import load_roi_image, open_bag_source, read_slide_region, roi_source
from pathgls.inspect.geojson import grounding_geojson, qupath_geojson_problems
from pathgls.inspect.viz import heatmap_overlay, paint_patches
from pathgls.text import analyze_report, build_extractor
from pathgls.tiling import open_slide

REPORT = (
    "Microscopic: sheets and nests of atypical cells with desmoplastic stroma and lymphocytes.\n"
    "Final diagnosis: invasive ductal carcinoma. No necrosis. ER positive."
)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from pathgls.testing import save_random_hf_clip

    root = tmp_path_factory.mktemp("models")
    return {
        "a": save_random_hf_clip(root / "clip-a", size="tiny", seed=0),
        "b": save_random_hf_clip(root / "clip-b", size="tiny", seed=1),
    }


@pytest.fixture(scope="module")
def cmu_bag(tmp_path_factory: pytest.TempPathFactory, models, cmu_slide: Path) -> Path:
    cfg = load_config(
        encoder={"name": f"hf:{models['a']}", "windows": True}, stream={"batch_size": 8}
    )
    r = extract_slide(
        slide=cmu_slide,
        out_dir=tmp_path_factory.mktemp("bags"),
        encoder=build_encoder(cfg.encoder),
        config=cfg,
    )
    assert r.status == "done", r.error
    return Path(r.bag_path)


@pytest.fixture(scope="module")
def entities():
    return analyze_report(REPORT, extractor=build_extractor("lexicon")).entities


def _encoder(path: Path):
    return build_encoder(load_config(encoder={"name": f"hf:{path}"}).encoder)


def test_bag_grounding_locates_each_entity_where_the_bag_says(cmu_bag, models, entities) -> None:
    enc = _encoder(models["a"])
    bag = read_bag(cmu_bag)
    with open_bag_source(cmu_bag) as src:
        res = ground(entities=entities, encoder=enc, source=src, keep_patch_max=True)
    score = res.score
    assert score.value is not None and 0.0 <= score.value <= 1.0
    assert RANDOM_WEIGHTS_WARNING in score.warnings
    ev = score.evidence
    phrases = [e["phrase"] for e in ev["entities"]]
    assert "invasive ductal carcinoma" in phrases and "lymphocytes" in phrases
    assert ev["negated"] == ["necrosis"]
    assert {s["text"] for s in ev["skipped"]} >= {"ER", "positive"}
    # recompute every entity's best window from the bag with plain numpy
    from pathgls.grounding.targets import encode_phrases

    q = encode_phrases(enc, phrases, templates=("an H&E image of {}.",)).numpy()
    win = bag.window_features.astype(np.float32)
    win /= np.linalg.norm(win, axis=-1, keepdims=True)
    sims = win.reshape(-1, win.shape[-1]) @ q.T
    n_win = win.shape[1]
    for i, e in enumerate(ev["entities"]):
        flat = int(sims[:, i].argmax())
        assert (e["patch"], e["window"]) == divmod(flat, n_win)
        assert e["similarity"] == pytest.approx(float(sims[flat, i]), abs=1e-5)
        # the box lies inside its patch and inside the slide
        px, py = bag.coords[e["patch"]]
        x, y, w, h = e["box"]
        assert px <= x and py <= y and x + w <= px + 512 + 1 and y + h <= py + 512 + 1
        assert x + w <= 2220 + 512 and y + h <= 2967 + 512
        assert e["top_patches"][0]["patch"] == e["patch"]
        assert 0.0 <= e["calibrated"] <= 1.0
        np.testing.assert_allclose(
            res.patch_values(e["phrase"]), sims[:, i].reshape(-1, n_win).max(axis=1), atol=1e-5
        )
    # the foil-rank score is the mean of the ranks among the foils on this bag
    foil_sim = res.foil_similarity
    ranks = [
        ((foil_sim < e["similarity"]).sum() + 0.5 * (foil_sim == e["similarity"]).sum())
        / foil_sim.size
        for e in ev["entities"]
    ]
    assert score.value == pytest.approx(float(np.mean(ranks)))


def test_geojson_is_what_qupath_imports(cmu_bag, models, entities, tmp_path) -> None:
    enc = _encoder(models["a"])
    with open_bag_source(cmu_bag) as src:
        ev = ground(entities=entities, encoder=enc, source=src).score.evidence
    fc = grounding_geojson(ev, top_k=3)
    assert qupath_geojson_problems(fc) == []
    parsed = geojson_lib.loads(json.dumps(fc))
    assert parsed.is_valid, parsed.errors()
    n_ent = len(ev["entities"])
    assert len(fc["features"]) == n_ent * 4  # 3 top patches + the best window each
    first = fc["features"][0]
    ring = first["geometry"]["coordinates"][0]
    x, y, w, h = ev["entities"][0]["top_patches"][0]["box"]
    assert ring == [[x, y], [x + w, y], [x + w, y + h], [x, y + h], [x, y]]
    props = first["properties"]
    assert props["objectType"] == "annotation"
    assert props["classification"]["name"] == ev["entities"][0]["phrase"]
    assert props["measurements"]["similarity"] == pytest.approx(
        ev["entities"][0]["top_patches"][0]["similarity"]
    )
    # the checker catches what QuPath would refuse
    broken = json.loads(json.dumps(fc))
    broken["features"][0]["geometry"]["coordinates"][0].pop()
    broken["features"][1]["properties"]["objectType"] = "cell"
    broken["features"][2]["geometry"] = {"type": "Point", "coordinates": [1, 2]}
    problems = qupath_geojson_problems(broken)
    assert any("feature 0: ring is not closed" in p for p in problems)
    assert any("feature 1: objectType" in p for p in problems)
    assert any("feature 2: geometry is not a Polygon" in p for p in problems)


def test_cli_bag_heatmap_and_geojson(cmu_bag, cmu_slide, tmp_path) -> None:
    report = tmp_path / "r.txt"
    report.write_text(REPORT)
    png, gj = tmp_path / "h.png", tmp_path / "g.geojson"
    args = ["ground", "--bag", str(cmu_bag), "--report", str(report)]
    r = CliRunner().invoke(
        app, [*args, "--geojson", str(gj), "--heatmap", "lymphocytes", "--out", str(png)]
    )
    assert r.exit_code == 0, r.output
    assert "S_g = " in r.output and "random-weight" in r.output
    assert "negated (not grounded): necrosis" in r.output
    reader = open_slide(cmu_slide)
    thumb = reader.thumbnail(1024)
    reader.close()
    with Image.open(png) as im:  # a figure: the thumbnail at full size, colour bar, title
        assert im.size[0] > thumb.shape[1] and im.size[1] > thumb.shape[0]
    png.unlink()  # part of a name, in any case, is enough when only one entity has it
    r = CliRunner().invoke(app, [*args, "--heatmap", "LYMPHO", "--out", str(png)])
    assert r.exit_code == 0 and png.is_file(), r.output
    assert qupath_geojson_problems(json.loads(gj.read_text())) == []
    r = CliRunner().invoke(app, [*args, "--json", "--calibration", "raw"])
    assert r.exit_code == 0, r.output
    # the JSON object, then any warning the console printed after it (the runner mixes stderr)
    out, _ = json.JSONDecoder().raw_decode(r.output[r.output.index("{") :])
    sims = [e["similarity"] for e in out["evidence"]["entities"]]
    assert out["grounding"] == pytest.approx(float(np.mean(sims)))
    r = CliRunner().invoke(app, [*args, "--heatmap", "mitoses", "--out", str(png)])
    assert r.exit_code == 2 and "no grounded entity 'mitoses'" in r.output


def test_cli_rejects_a_bag_of_another_encoder(cmu_bag, models, tmp_path) -> None:
    report = tmp_path / "r.txt"
    report.write_text(REPORT)
    r = CliRunner().invoke(
        app,
        [
            "ground",
            "--bag",
            str(cmu_bag),
            "--report",
            str(report),
            "--encoder",
            f"hf:{models['b']}",
        ],
    )
    assert r.exit_code == 2
    assert "same model" in r.output and "re-extract" in r.output
    with open_bag_source(cmu_bag) as src, pytest.raises(EncoderMismatchError):
        ground(entities=[], encoder=_encoder(models["b"]), source=src)


def test_report_without_visual_entities_and_empty_bag(models, tiles_dir, tmp_path) -> None:
    enc = _encoder(models["a"])
    cfg = load_config(
        encoder={"name": f"hf:{models['a']}", "windows": True}, stream={"batch_size": 8}
    )
    r = extract_slide(
        slide=tiles_dir / "no-tissue.png", out_dir=tmp_path, encoder=enc, config=cfg, mpp=0.5
    )
    assert r.status == "done" and r.n_patches == 0
    ents = analyze_report("ER positive. No carcinoma seen.", extractor=build_extractor("lexicon"))
    with open_bag_source(r.bag_path) as src:
        none_visual = ground(entities=ents.entities, encoder=enc, source=src)
        empty = ground(
            entities=analyze_report(REPORT, extractor=build_extractor("lexicon")).entities,
            encoder=enc,
            source=src,
        )
    assert none_visual.score.value is None
    assert "no affirmed visual entity" in none_visual.score.missing_reason
    assert none_visual.score.evidence["negated"] == ["carcinoma"]
    assert empty.score.value is None and "no tissue patch" in empty.score.missing_reason


def test_roi_mode_image_and_slide_region(models, tiles_dir, cmu_slide, tmp_path) -> None:
    enc = _encoder(models["a"])
    tile = tiles_dir / "tissue-level0-4302-10273-4814-10785.png"
    img = load_roi_image(tile)
    assert img.shape == (512, 512, 3)
    src = roi_source(encoder=enc, image=img, name=tile.name)
    assert len(src) == 9 and src.coords[:, 0].tolist() == [0, 224, 288] * 3
    ents = analyze_report(REPORT, extractor=build_extractor("lexicon")).entities
    res = ground(entities=ents, encoder=enc, source=src, keep_patch_max=True)
    assert res.score.value is not None
    for e in res.score.evidence["entities"]:
        assert e["box"][2:] == [224, 224] and e["window"] == 0
    region, scale = read_slide_region(cmu_slide, x=800, y=600, width=1000, height=700)
    assert scale == pytest.approx(0.5 / 0.499, rel=1e-2) and region.shape[2] == 3
    # CLI: ROI from the slide, heat map over the region itself
    report = tmp_path / "r.txt"
    report.write_text(REPORT)
    png = tmp_path / "roi.png"
    r = CliRunner().invoke(
        app,
        [
            "ground",
            "--slide",
            str(cmu_slide),
            "--region",
            "800,600,1000,700",
            "--report",
            str(report),
            "--encoder",
            f"hf:{models['a']}",
            "--heatmap",
            "invasive ductal carcinoma",
            "--out",
            str(png),
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.output[r.output.index("{") :])
    assert out["evidence"]["source"]["space"] == "level0"
    for e in out["evidence"]["entities"]:
        x, y, w, h = e["box"]
        assert x >= 800 and x + w <= 1800 + 2 and y >= 600 and y + h <= 1300 + 2
    with Image.open(png) as im:  # a figure: the region at full size, a colour bar, a title
        assert im.format == "PNG" and im.size[0] > region.shape[1] and im.size[1] > region.shape[0]
    r = CliRunner().invoke(
        app, ["ground", "--image", str(tile), "--report", str(report), "--encoder", "hf:/nope"]
    )
    assert r.exit_code == 2 and "error" in r.output


def test_heatmap_painting_is_exact() -> None:
    canvas = paint_patches(
        values=np.array([0.2, 0.9, 0.5]),
        coords=np.array([[0, 0], [100, 0], [50, 0]]),
        patch_size_level0=100,
        slide_size=(400, 200),
        canvas_size=(40, 20),
    )
    assert canvas.shape == (20, 40)
    assert np.all(canvas[:10, :5] == 0.2) and np.all(canvas[:10, 5:10] == 0.5)
    assert np.all(canvas[:10, 10:20] == 0.9)  # overlap keeps the larger value
    assert np.isnan(canvas[10:, :]).all() and np.isnan(canvas[:, 20:]).all()
    thumb = np.full((20, 40, 3), 200, np.uint8)
    same = heatmap_overlay(
        thumbnail=thumb,
        values=np.array([0.2]),
        coords=np.array([[0, 0]]),
        patch_size_level0=100,
        slide_size=(400, 200),
        alpha=0.0,
    )
    np.testing.assert_array_equal(same, thumb)
    full = heatmap_overlay(
        thumbnail=thumb,
        values=np.array([0.0, 1.0]),
        coords=np.array([[0, 0], [300, 100]]),
        patch_size_level0=100,
        slide_size=(400, 200),
        alpha=1.0,
        cmap="gray",
    )
    assert full[0, 0].tolist() == [0, 0, 0] and full[19, 39].tolist() == [255, 255, 255]
    assert full[0, 39].tolist() == [200, 200, 200]  # no patch there: the thumbnail shows


def test_foil_embeddings_encode_the_bank_once_and_agree(cmu_bag, models, entities) -> None:
    from pathgls.config import GroundingConfig
    from pathgls.errors import ConfigError
    from pathgls.grounding.targets import FoilEmbeddings, load_foils

    enc = _encoder(models["a"])
    cfg = GroundingConfig()
    calls: list[int] = []
    real = enc.encode_text

    def counting(texts):
        calls.append(len(texts))
        return real(texts)

    enc.encode_text = counting
    bank = FoilEmbeddings(enc, templates=tuple(cfg.templates), foils=load_foils())
    with open_bag_source(cmu_bag) as src:
        plain = ground(entities=entities, encoder=enc, source=src, config=cfg)
        calls.clear()
        first = ground(entities=entities, encoder=enc, source=src, foil_embeddings=bank)
        second = ground(entities=entities, encoder=enc, source=src, foil_embeddings=bank)
    n_bank = len(bank.foils) * len(cfg.templates)
    n_targets = len(plain.score.evidence["entities"]) * len(cfg.templates)
    # the bank once, then only the report's phrases for each report
    assert calls == [n_targets, n_bank, n_targets]
    assert first.score.value == second.score.value
    assert first.score.value == pytest.approx(plain.score.value, abs=1e-6)
    assert first.foils == plain.foils
    other = FoilEmbeddings(enc, templates=("a photo of {}.",), foils=load_foils())
    with open_bag_source(cmu_bag) as src, pytest.raises(ConfigError, match="templates"):
        ground(entities=entities, encoder=enc, source=src, foil_embeddings=other)
