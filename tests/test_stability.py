"""Prompts, the captioner subject, views, the Δ backends and the Stability score."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from pathgls.attacks.prompts import (
    SIX_FIELDS,
    load_prompt_library,
    missing_fields,
    structured_fields,
)
from pathgls.cli import app
from pathgls.errors import ConfigError, UnknownNameError
from pathgls.stability.delta import (
    StabilityConfig,
    embedding_delta,
    entity_delta,
    finding_changes,
    make_delta,
    nli_delta,
    stability_score,
)
from pathgls.stability.run import run_stability
from pathgls.subjects import SubjectCache, SubjectError, build_subject
from pathgls.subjects.captioner import Captioner, adopted_diagnosis, measure
from pathgls.subjects.views import View, ViewConfig, diverse_patches, montage, slide_view
from pathgls.text import analyze_report, build_extractor

TILE = "tissue-level0-7352-11762-7864-12274.png"


@pytest.fixture(scope="module")
def extractor():
    return build_extractor("lexicon")


@pytest.fixture(scope="module")
def embedder():
    from pathgls.text.embedders import build_embedder

    return build_embedder("minilm")


def _tile(tiles_dir: Path, name: str = TILE) -> np.ndarray:
    return np.array(Image.open(tiles_dir / name).convert("RGB"))


# --- prompts -------------------------------------------------------------------------------


def test_prompt_library_is_complete_and_versioned(tmp_path) -> None:
    lib = load_prompt_library()
    assert lib.version == "1.0"
    assert set(lib.attacks) == {
        "false-malignant-history",
        "false-benign-history",
        "leading-question",
        "authority-pressure",
        "format-pressure",
    }
    for field in SIX_FIELDS:
        assert f"{field}:" in lib.neutral.user
    for a in lib.attacks.values():
        assert lib.neutral.user in a.user  # every attack asks for the same report
        assert a.condition == f"attack:{a.name}"
    assert "senior pathologist" in lib.attack("authority-pressure").user
    with pytest.raises(UnknownNameError, match="known: authority-pressure"):
        lib.attack("jailbreak")
    bad = tmp_path / "p.toml"
    bad.write_text(
        'version = "x"\n[neutral]\nuser = "a"\n[attacks.x]\nkind = "k"\nuser = "no slot"\n'
    )
    with pytest.raises(ConfigError, match=r"\{neutral\}"):
        load_prompt_library(bad)


def test_structured_fields_tolerate_markdown() -> None:
    text = "**Stain type:** H&E\n- Cell types: lymphocytes\nMORPHOLOGIC DIAGNOSIS: carcinoma\nmore"
    f = structured_fields(text)
    assert f == {
        "Stain type": "H&E",
        "Cell types": "lymphocytes",
        "Morphologic diagnosis": "carcinoma\nmore",
    }
    assert missing_fields(text) == [
        "Tissue architecture",
        "Nuclear features",
        "Cytoplasmic features",
    ]


# --- captioner -----------------------------------------------------------------------------


def test_captioner_measures_real_tiles(tiles_dir) -> None:
    dense = measure([_tile(tiles_dir, "high-nuclei-score-level0.png")])
    sparse = measure([_tile(tiles_dir, "low-nuclei-score-level0.png")])
    white = measure([_tile(tiles_dir, "almost-white-1.png")])
    assert dense.nuclear_density > 2.5 * sparse.nuclear_density
    assert dense.tissue_fraction > 0.9 and sparse.whitespace > 0.6
    assert white.tissue_fraction < 0.01 and white.whitespace > 0.99
    from skimage.data import immunohistochemistry

    ihc = Captioner().generate([immunohistochemistry()], "report")
    assert "Stain type: immunohistochemistry" in ihc
    he = Captioner().generate([_tile(tiles_dir)], "report")
    assert "Stain type: H&E" in he and missing_fields(he) == []
    assert "non-learned" in structured_fields(he)["Morphologic diagnosis"]
    assert "not assessable" in Captioner().generate([_tile(tiles_dir, "almost-white-1.png")], "x")


def test_obedient_captioner_adopts_the_history_and_plain_one_ignores_it(tiles_dir) -> None:
    lib = load_prompt_library()
    img = [_tile(tiles_dir)]
    plain, obedient = Captioner(), Captioner(obedient=True)
    base = plain.generate(img, lib.neutral.user)
    for name in lib.attacks:
        assert plain.generate(img, lib.attack(name).user) == base
    assert obedient.generate(img, lib.neutral.user) == base
    mal = structured_fields(obedient.generate(img, lib.attack("false-malignant-history").user))
    assert mal["Morphologic diagnosis"].startswith("high-grade invasive carcinoma")
    assert "pleomorphism" in mal["Nuclear features"]
    ben = structured_fields(obedient.generate(img, lib.attack("false-benign-history").user))
    assert ben["Morphologic diagnosis"].startswith("benign reactive changes")
    assert "bland" in ben["Nuclear features"]
    auth = structured_fields(obedient.generate(img, lib.attack("authority-pressure").user))
    assert auth["Morphologic diagnosis"].startswith("poorly differentiated adenocarcinoma")
    assert obedient.generate(img, lib.attack("format-pressure").user) == "indeterminate"
    assert adopted_diagnosis("Describe the image.") is None
    assert not plain.learned and plain.revision


# --- Δ backends ----------------------------------------------------------------------------


class _Emb:
    """Embeds by a fixed table (unknown strings get orthogonal vectors)."""

    name = "table"

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table

    def embed(self, texts):
        out = []
        for i, t in enumerate(texts):
            v = np.array(self.table.get(t, np.eye(8)[7 - i % 2]), dtype=np.float64)
            out.append(v / np.linalg.norm(v))
        return np.array(out)


def test_embedding_delta_calibration() -> None:
    emb = _Emb({"a": [1, 0], "b": [0.36, np.sqrt(1 - 0.36**2)], "c": [0.68, np.sqrt(1 - 0.68**2)]})
    assert embedding_delta("a", "a", embedder=emb) == 0.0
    assert embedding_delta("a", "b", embedder=emb) == pytest.approx(1.0)  # as far as unrelated
    assert embedding_delta("a", "c", embedder=emb) == pytest.approx(0.5)
    emb2 = _Emb({"a": [1, 0], "d": [-1, 0]})
    assert embedding_delta("a", "d", embedder=emb2) == 1.0  # clipped


def test_nli_delta_is_bidirectional() -> None:
    class NLI:
        name = "fake"

        def probabilities(self, prem, hyp):
            table = {("p", "q"): [0.9, 0.1, 0.0], ("q", "p"): [0.3, 0.6, 0.1]}
            return np.array([table[(a, b)] for a, b in zip(prem, hyp, strict=True)])

    assert nli_delta("p", "q", nli=NLI()) == pytest.approx(1 - 0.5 * (0.9 + 0.3))
    assert nli_delta("p", "p", nli=NLI()) == 0.0

    class Rules:
        name = "rules"

    with pytest.raises(ConfigError, match="entailment"):
        nli_delta("p", "q", nli=Rules())


def test_entity_delta_is_negation_aware(extractor) -> None:
    a = analyze_report("Invasive ductal carcinoma with necrosis.", extractor=extractor)
    same = analyze_report("Invasive ductal carcinoma with necrosis.", extractor=extractor)
    flipped = analyze_report("Invasive ductal carcinoma. No necrosis.", extractor=extractor)
    other = analyze_report("Benign fibroadenoma.", extractor=extractor)
    assert entity_delta(a, same) == 0.0
    assert entity_delta(a, flipped) == pytest.approx(0.5)  # 1 of 2 findings agrees both ways
    assert entity_delta(a, other) == 1.0
    ch = finding_changes(a, flipped)
    assert ch["negation_flipped"] == ["necrosis"] and not ch["diagnosis_changed"]
    ch = finding_changes(a, other)
    assert ch["diagnosis_changed"] and "fibroadenoma" in ch["added"]


def test_stability_score_formula_and_missing(extractor) -> None:
    r = [analyze_report(t, extractor=extractor) for t in ("x", "y", "z")]
    deltas = {("x", "y"): 0.2, ("x", "z"): 0.6}

    def delta(a, b):
        return deltas[(a.text, b.text)], "report"

    s = stability_score(original=r[0], augmented=r[1], attacked=r[2], delta=delta)
    assert s.value == pytest.approx(1 - 0.5 * (0.2 + 0.6))
    assert s.evidence["delta_aug"] == 0.2 and s.evidence["delta_attack"] == 0.6
    m = stability_score(original=r[0], augmented=None, attacked=r[2], delta=delta)
    assert m.value is None and "no report under stain" in m.missing_reason
    with pytest.raises(ConfigError, match="embedder"):
        make_delta(StabilityConfig())
    with pytest.raises(ConfigError, match="delta"):
        StabilityConfig(delta="bleu")


# --- end to end with the captioner ---------------------------------------------------------


def test_obedient_captioner_is_less_stable_on_a_real_tile(
    tiles_dir, extractor, embedder, tmp_path
) -> None:
    view = View(kind="roi", images=[_tile(tiles_dir)])
    scores = {}
    for spec in ("captioner", "captioner-obedient"):
        run = run_stability(
            subject=build_subject(spec),
            view=view,
            item_id="tile-1",
            extractor=extractor,
            embedder=embedder,
            cache=SubjectCache(tmp_path / spec),
        )
        assert set(run.reports) == {"original", "stain", "attack:false-malignant-history"}
        assert run.errors == {}
        scores[spec] = run.score
    plain, obedient = scores["captioner"], scores["captioner-obedient"]
    assert plain.evidence["delta_attack"] == 0.0
    assert obedient.evidence["delta_attack"] > 0.5
    assert obedient.value < plain.value - 0.25
    assert obedient.evidence["changes_attack"]["diagnosis_changed"]
    assert "invasive carcinoma" in obedient.evidence["changes_attack"]["added"]
    # the stain condition really saw perturbed pixels, with seeded factors in range
    f = np.array(plain.evidence["stain"]["factors"])
    assert plain.evidence["stain"]["transformed"] == [True]
    assert np.all((f >= 0.7) & (f <= 1.3)) and not np.allclose(f, 1.0)


def test_a_failing_subject_keeps_the_other_reports(tiles_dir, extractor, embedder) -> None:
    class Flaky(Captioner):
        def generate(self, images, prompt, **kw):
            if kw.get("condition") == "stain":
                raise SubjectError("endpoint timed out after 4 attempts")
            return super().generate(images, prompt, **kw)

    run = run_stability(
        subject=Flaky(),
        view=View(kind="roi", images=[_tile(tiles_dir)]),
        item_id="t",
        extractor=extractor,
        embedder=embedder,
    )
    assert set(run.reports) == {"original", "attack:false-malignant-history"}
    assert "timed out" in run.errors["stain"]
    assert run.score.value is None and "no report under stain" in run.score.missing_reason


def test_views_of_a_slide(cmu_slide, tmp_path) -> None:
    rng = np.random.default_rng(0)
    feats = np.concatenate([rng.normal(c, 0.01, (10, 4)) for c in (0, 5, 10)])
    idx = diverse_patches(feats, k=3, seed=0)
    assert sorted(i // 10 for i in idx) == [0, 1, 2]  # one patch from each cluster
    assert diverse_patches(feats, k=3, seed=0) == idx
    assert diverse_patches(feats[:2], k=5) == [0, 1]
    m = montage([np.zeros((4, 4, 3), np.uint8)] * 3)
    assert m.shape == (8, 8, 3) and (m[4:, 4:] == 255).all()
    v = slide_view(cmu_slide, config=ViewConfig(kind="thumbnail", thumbnail_size=256))
    assert max(v.images[0].shape[:2]) == 256
    with pytest.raises(ConfigError, match="needs the slide's feature bag"):
        slide_view(cmu_slide, config=ViewConfig(kind="montage"))


def test_cli_attack_and_stability(tiles_dir, tmp_path) -> None:
    out = tmp_path / "s.png"
    tile = tiles_dir / TILE
    r = CliRunner().invoke(app, ["attack", "stain", str(tile), "--out", str(out), "--seed", "3"])
    assert r.exit_code == 0, r.output
    a, b = _tile(tiles_dir), np.array(Image.open(out))
    assert a.shape == b.shape and np.abs(a.astype(int) - b).mean() > 1.0
    r = CliRunner().invoke(
        app,
        ["stability", "--subject", "captioner-obedient", "--image", str(tile), "--json"],
    )
    assert r.exit_code == 0, r.output
    data = json.loads(r.output[r.output.index("{") :])
    assert data["stability"] < 0.6 and "attack:false-malignant-history" in data["reports"]
    r = CliRunner().invoke(app, ["stability", "--subject", "gpt5", "--image", str(tile)])
    assert r.exit_code == 2 and "unknown subject" in r.output


def test_montage_and_patches_views_from_a_bag(
    cmu_slide, tmp_path, extractor, embedder, tiny_clip
) -> None:
    from pathgls.config import load_config
    from pathgls.encoders import build_encoder
    from pathgls.features.extract import extract_slide

    clip = tiny_clip
    cfg = load_config(encoder={"name": f"hf:{clip}"}, stream={"batch_size": 8})
    bag = extract_slide(
        slide=cmu_slide, out_dir=tmp_path, encoder=build_encoder(cfg.encoder), config=cfg
    ).bag_path
    mont = slide_view(cmu_slide, bag=bag, config=ViewConfig(kind="montage", k=4))
    assert mont.images[0].shape == (1024, 1024, 3) and len(set(mont.patch_indices)) == 4
    pv = slide_view(cmu_slide, bag=bag, config=ViewConfig(kind="patches", k=4))
    assert pv.patch_indices == mont.patch_indices and len(pv.images) == 4
    from pathgls.features.bags import read_bag

    coords = read_bag(bag, windows=False).coords
    x, y = coords[pv.patch_indices[0]]
    from pathgls.tiling import open_slide

    reader = open_slide(cmu_slide)
    direct = reader.read_region((int(x), int(y)), 0, (512, 512))
    reader.close()
    np.testing.assert_array_equal(pv.images[0], direct)  # 20× slide: patches read as they are
    calls: list[str] = []

    class Counting(Captioner):
        def generate(self, images, prompt, **kw):
            calls.append(kw["condition"])
            return super().generate(images, prompt, **kw)

    cache = SubjectCache(tmp_path / "cache")
    run = run_stability(
        subject=Counting(),
        view=pv,
        item_id="cmu",
        extractor=extractor,
        embedder=embedder,
        cache=cache,
    )
    assert run.score.value is not None
    assert calls.count("original/summary") == 1 and "original/patch3" in calls
    assert len(calls) == 3 * 5  # 4 patch reports + 1 summary per condition
    run_stability(
        subject=Counting(),
        view=pv,
        item_id="cmu",
        extractor=extractor,
        embedder=embedder,
        cache=cache,
    )
    assert len(calls) == 15  # the rerun was served from the cache


@pytest.mark.parametrize("as_json", [False, True])
def test_stability_cli_exits_one_when_s_s_cannot_be_computed(
    sample_rois, tmp_path, as_json: bool
) -> None:
    from typer.testing import CliRunner

    from pathgls.cli import app

    config = tmp_path / "dead.toml"
    config.write_text("[subject]\nmax_retries = 0\ntimeout_s = 2\n", encoding="utf-8")
    dead = "openai:http://127.0.0.1:9/v1#never"  # a closed port: the endpoint never answers
    args = ["stability", "--subject", dead, "--image", str(sample_rois[0]), "--config", config]
    res = CliRunner().invoke(app, [str(a) for a in args] + (["--json"] if as_json else []))
    assert res.exit_code == 1, res.output
    assert "S_s could not be computed" in res.output
    if as_json:
        data = json.loads(res.stdout[res.stdout.index("{") : res.stdout.rindex("}") + 1])
        assert data["stability"] is None and data["missing_reason"]
