"""One pass per slide: opened once, tiled once, read by one path, reruns by identity.

A real slide (the CMU-1 region, 20×, read without resize) and a 40× pyramid of its pixels
without a 20× level (20× patches are 2× reductions of level 0, decoded at half scale) are
evaluated once with a tiny random CLIP (wiring only) and two offline subjects; the tests then
rerun copies of that run and count what the reruns open, read, hash and load.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
from typer.testing import CliRunner

from pathgls.config import ViewConfig, load_config
from pathgls.features import session as session_module
from pathgls.features.bags import read_bag, validate_bag
from pathgls.features.extract import extract_slide
from pathgls.features.patches import read_patches
from pathgls.features.session import SlideSession, bag_read_plan
from pathgls.runner.manifest import Manifest, read_manifest
from pathgls.runner.run import run_benchmark
from pathgls.runner.store import ResultsStore
from pathgls.subjects.views import montage, slide_view
from pathgls.tiling import identity as identity_module
from pathgls.tiling.identity import FileIdentity, check_identity, file_identity, header_sha256
from pathgls.tiling.readers import ImageReader, OpenSlideReader
from pathgls.tiling.stream import read_patch, read_rect

SUBJECTS = ("captioner", "captioner-obedient")


@dataclass
class Counts:
    opens: int = 0  # slides opened (open_slide through a session)
    pixels: int = 0  # pixel reads of any reader
    hashes: int = 0  # whole-file hashes
    loads: int = 0  # load_models calls
    deltas: int = 0  # stability deltas built


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Counts:
    c = Counts()
    _instrument(monkeypatch, c)
    return c


def _instrument(mp: pytest.MonkeyPatch, c: Counts) -> None:
    """Count opens, pixel reads, full hashes, model loads and Δ builds (the real ones run)."""
    import pathgls.runner.models as models_module
    import pathgls.stability.delta as delta_module

    def counted(owner: Any, name: str, field: str) -> None:
        real = getattr(owner, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            setattr(c, field, getattr(c, field) + 1)
            return real(*args, **kwargs)

        mp.setattr(owner, name, wrapper)

    counted(session_module, "open_slide", "opens")
    counted(identity_module, "full_sha256", "hashes")
    counted(models_module, "load_models", "loads")
    counted(delta_module, "make_delta", "deltas")
    for cls, name in (
        (OpenSlideReader, "read_region"),
        (OpenSlideReader, "read_region_scaled"),
        (ImageReader, "read_region"),
    ):
        real = getattr(cls, name)

        def method(self: Any, *args: Any, _real: Any = real, **kwargs: Any) -> Any:
            c.pixels += 1
            return _real(self, *args, **kwargs)

        mp.setattr(cls, name, method)


def _config(tiny_clip: Path, **run: Any) -> Any:
    return load_config(
        run={"subjects": SUBJECTS, **run},
        encoder={"name": f"hf:{tiny_clip}"},
        view={"kind": "montage", "k": 4},
    )


@dataclass
class FirstRun:
    base: Path  # holds slides/ and run/
    counts: Counts
    encoded: dict[str, dict[tuple[int, int], np.ndarray]]  # slide stem → coords → patch pixels
    log: list[str]
    result: Any


@pytest.fixture(scope="module")
def first_run(
    tmp_path_factory: pytest.TempPathFactory, cmu_slide: Path, tiny_clip: Path
) -> FirstRun:
    import openslide

    import pathgls.features.extract as extract_module
    from pathgls.testing.synthetic import write_mosaic_40x

    base = tmp_path_factory.mktemp("one-pass")
    slides = base / "slides"
    slides.mkdir()
    shutil.copy2(cmu_slide, slides / "cmu.svs")  # a copy: the tests touch and replace it
    with openslide.OpenSlide(str(cmu_slide)) as s:
        rgb = np.asarray(s.read_region((0, 0), 0, s.dimensions).convert("RGB"))
    tissue = np.ascontiguousarray(rgb[1024:2048, 512:1536])  # all tissue, 1024² px at 20×
    write_mosaic_40x(slides / "mosaic40x.svs", rgb=tissue, size=2048, level_factor=4)
    encoded: dict[str, dict[tuple[int, int], np.ndarray]] = {}
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    c = Counts()
    handler = Keep(level=logging.INFO)
    runner_log = logging.getLogger("pathgls.runner")
    with pytest.MonkeyPatch.context() as mp:
        _instrument(mp, c)
        real_stream = extract_module.stream_patches

        def stream(reader: Any, coords: Any, plan: Any, **kw: Any) -> Iterator[Any]:
            name = Path(reader.path).stem
            for batch in real_stream(reader, coords, plan, **kw):
                for xy, im in zip(batch.coords, batch.images, strict=True):
                    encoded.setdefault(name, {})[(int(xy[0]), int(xy[1]))] = im.copy()
                yield batch

        mp.setattr(extract_module, "stream_patches", stream)  # keeps what the bag encodes
        runner_log.addHandler(handler)
        old_level = runner_log.level
        runner_log.setLevel(logging.INFO)
        try:
            result = run_benchmark(
                source=slides, config=_config(tiny_clip), out=base / "run", plots=False
            )
        finally:
            runner_log.removeHandler(handler)
            runner_log.setLevel(old_level)
    return FirstRun(base=base, counts=c, encoded=encoded, log=records, result=result)


def _copy(first: FirstRun, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the first run's slides and run directory (mtimes kept: the same files)."""
    shutil.copytree(first.base / "slides", tmp_path / "slides", copy_function=shutil.copy2)
    shutil.copytree(first.base / "run", tmp_path / "run", copy_function=shutil.copy2)
    return tmp_path / "slides", tmp_path / "run"


# --- the first run: one open, one tiling, models and Δ once -------------------------------------


def test_each_slide_is_opened_once_and_tiled_once(first_run: FirstRun) -> None:
    assert first_run.result.counts == {"ok": 4, "partial": 0, "failed": 0}
    c = first_run.counts
    # two items, two subjects each: one open per item, one Δ and one model load per run
    assert (c.opens, c.loads, c.deltas) == (2, 1, 1)
    assert c.hashes == 2  # each slide hashed in full once, for both subjects and the bag
    run = first_run.base / "run"
    for card in ResultsStore(run).load_cards():
        reads = card.inputs["slide_reads"]
        assert reads["opens"] == 1 and reads["full_hashes"] == 1
        assert reads["patches_for_view"] == 4 and reads["thumbnails"] == 0
        assert card.inputs["tiling_reused"] is False
        stored = read_patches(card.inputs["patches_file"])
        bag = read_bag(card.inputs["bag"], windows=False)
        assert np.array_equal(stored.grid.coords, bag.coords)
        assert stored.identity.sha256 == bag.meta.slide_sha256
        assert card.inputs["slide_identity"] == stored.identity.to_dict()
        assert bag.meta.slide_size == Path(card.inputs["item"]).stat().st_size
        # module scores say, as a field, which were computed with random test weights
        assert card.modules["grounding"].random_weights is True
        assert card.modules["logic"].random_weights is False


def test_the_run_log_says_where_the_time_went(first_run: FirstRun) -> None:
    lines = first_run.log
    items = [ln for ln in lines if ln.startswith(("cmu:", "mosaic40x:"))]
    assert len(items) == 2
    for stage in ("tiling", "encoding", "view", "generation", "stability", "logic", "grounding"):
        assert all(stage in ln for ln in items), stage
    assert any(ln.startswith("models loaded in") and "encoder" in ln for ln in lines)
    table = " ".join(lines[lines.index(next(ln for ln in lines if "where the time went" in ln)) :])
    for stage in ("model loading", "tiling", "encoding", "generation", "summary"):
        assert stage in table
    manifest = read_manifest(first_run.base / "run")
    assert manifest is not None and manifest.timings["stages"]["slide.encoding"] > 0
    assert manifest.models is not None and manifest.models.load_seconds["encoder"] > 0


# --- the subject sees the pixels the bag encoded -------------------------------------------------


@pytest.mark.parametrize("stem", ["cmu", "mosaic40x"])
def test_montage_patches_are_the_bags_patch_pixels(first_run: FirstRun, stem: str) -> None:
    slide = first_run.base / "slides" / f"{stem}.svs"
    bag = first_run.base / "run" / "features_hf-tiny-clip" / f"{stem}.h5"
    encoded = first_run.encoded[stem]
    fb = read_bag(bag, windows=False)
    assert {tuple(map(int, xy)) for xy in fb.coords} == set(encoded)
    with SlideSession(slide) as session:
        view = slide_view(slide, bag=bag, config=ViewConfig(kind="patches", k=3), session=session)
        assert session.stats.opens == 1
        for i, image in zip(view.patch_indices, view.images, strict=True):
            xy = tuple(map(int, fb.coords[i]))
            assert np.array_equal(image, encoded[xy])  # exactly, not approximately
            # a region that is a bag patch, read by grounding's path, is that patch too
            size = int(fb.meta.patch_size_level0)
            region, scale = session.read_region(x=xy[0], y=xy[1], width=size, height=size)
            assert np.array_equal(region, encoded[xy]) and scale == size / fb.meta.patch_size
    mont = slide_view(slide, bag=bag, config=ViewConfig(kind="montage", k=3))
    expected = montage([encoded[tuple(map(int, fb.coords[i]))] for i in mont.patch_indices])
    assert np.array_equal(mont.images[0], expected)


def test_read_rect_of_a_patch_is_read_patch(first_run: FirstRun) -> None:
    slide = first_run.base / "slides" / "mosaic40x.svs"
    with SlideSession(slide) as s:
        plan = s.plan()
        assert plan.level == 0 and plan.reduction == 2  # no 20× level: a 2× reduction
        xy, side = (1024, 512), plan.patch_size_level0
        assert np.array_equal(
            read_rect(s.reader, xy, (side, side), plan), read_patch(s.reader, xy, plan)
        )
        wide = read_rect(s.reader, (0, 0), (2 * side, side), plan)
        assert wide.shape == (plan.patch_size, 2 * plan.patch_size, 3)
        assert np.array_equal(wide[:, plan.patch_size :], read_patch(s.reader, (side, 0), plan))


# --- reruns ----------------------------------------------------------------------------------


def test_a_finished_run_reruns_without_models_pixels_or_hashes(
    first_run: FirstRun, tiny_clip: Path, tmp_path: Path, counts: Counts
) -> None:
    slides, run = _copy(first_run, tmp_path)
    again = run_benchmark(source=slides, config=_config(tiny_clip), out=run, plots=False)
    assert again.skipped == 4 and again.counts["ok"] == 4 and len(again.cards) == 4
    assert (counts.opens, counts.pixels, counts.hashes, counts.loads) == (0, 0, 0, 0)
    manifest = read_manifest(run)
    assert manifest is not None and manifest.models is not None
    assert manifest.models.source == "cards" and manifest.counts.evaluated == 0


def test_a_touched_slide_is_not_recomputed(
    first_run: FirstRun, tiny_clip: Path, tmp_path: Path, counts: Counts
) -> None:
    slides, run = _copy(first_run, tmp_path)
    slide = slides / "cmu.svs"
    st = slide.stat()
    os.utime(slide, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))  # content unchanged
    again = run_benchmark(source=slides, config=_config(tiny_clip), out=run, plots=False)
    assert again.skipped == 4 and counts.loads == 0 and counts.pixels == 0
    assert counts.hashes == 1  # the touched slide, once for both of its cards
    card = ResultsStore(run).read_card(ResultsStore(run).card_path("captioner", "cmu"))
    assert card.inputs["slide_identity"]["mtime_ns"] == slide.stat().st_mtime_ns
    assert not any("changed" in w for w in card.warnings)
    # the new mtime was stored: the next rerun hashes nothing
    run_benchmark(source=slides, config=_config(tiny_clip), out=run, plots=False)
    assert counts.hashes == 1 and counts.opens == 0


def test_a_changed_slide_is_recomputed_with_a_warning(
    first_run: FirstRun, tiny_clip: Path, tmp_path: Path, counts: Counts, caplog: Any
) -> None:
    slides, run = _copy(first_run, tmp_path)
    slide = slides / "cmu.svs"
    old_bag = read_bag(run / "features_hf-tiny-clip" / "cmu.h5", windows=False)
    flipped = np.ascontiguousarray(_pixels(slide)[::-1])  # other pixels under the same name
    slide.unlink()
    from pathgls.testing.synthetic import write_aperio_pyramid

    write_aperio_pyramid(
        slide,
        source=flipped,
        width=flipped.shape[1],
        height=flipped.shape[0],
        mpp=0.499,
        magnification=20,
    )
    with caplog.at_level(logging.WARNING, logger="pathgls"):
        again = run_benchmark(source=slides, config=_config(tiny_clip), out=run, plots=False)
    assert again.skipped == 2 and again.counts["ok"] == 4  # the mosaic's cards are kept
    assert counts.loads == 1 and counts.opens == 1  # only the changed slide
    assert any("cmu.svs changed since its earlier ScoreCards" in r.message for r in caplog.records)
    store = ResultsStore(run)
    for subject in SUBJECTS:
        card = store.read_card(store.card_path(subject, "cmu"))
        assert any("changed since" in w for w in card.warnings), card.warnings
        assert card.inputs["slide_identity"]["sha256"] == _sha(slide)
    bag = read_bag(run / "features_hf-tiny-clip" / "cmu.h5", windows=False)
    assert bag.meta.slide_sha256 == _sha(slide) != old_bag.meta.slide_sha256
    assert read_patches(run / "20x_512px_0px_overlap/patches/cmu_patches.h5").identity.sha256 == (
        _sha(slide)
    )


def test_same_size_and_header_new_content_is_found_by_the_full_hash(tmp_path: Path) -> None:
    f = tmp_path / "slide.dcm"
    data = bytearray(np.random.default_rng(0).bytes(5 << 20))  # header hash: first/last MiB
    f.write_bytes(bytes(data))
    stored = file_identity(f)
    assert check_identity(f, stored).status == "same"
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    touched = check_identity(f, stored)
    assert (touched.status, touched.hashed) == ("touched", True)
    data[len(data) // 2] ^= 0xFF  # the middle: neither the size nor the header changes
    f.write_bytes(bytes(data))
    now = file_identity(f, full=False)
    assert (now.size, now.header_sha256) == (stored.size, stored.header_sha256)
    changed = check_identity(f, stored)
    assert changed.status == "changed" and "content changed" in changed.reason
    assert check_identity(f, file_identity(f), verify=True).hashed  # --verify always hashes


def test_the_header_hash_covers_the_tiff_tile_table(cmu_slide: Path, tmp_path: Path) -> None:
    import tifffile

    f = tmp_path / "copy.svs"
    shutil.copy2(cmu_slide, f)
    before = header_sha256(f)
    with tifffile.TiffFile(f) as tif:
        page = tif.pages[0]
        where = page.tags["TileByteCounts"].valueoffset
        n = len(page.databytecounts)
    assert n > 1
    with open(f, "r+b") as fh:  # swap two tile byte counts: same size, another tile table
        fh.seek(where)
        raw = bytearray(fh.read(8))
        fh.seek(where)
        fh.write(bytes(raw[4:8] + raw[0:4]))
    assert header_sha256(f) != before
    stored = FileIdentity(f.stat().st_size, f.stat().st_mtime_ns, before, "x")
    assert check_identity(f, stored).status == "changed"


def test_verify_hashes_every_slide(
    first_run: FirstRun, tiny_clip: Path, tmp_path: Path, counts: Counts
) -> None:
    slides, run = _copy(first_run, tmp_path)
    again = run_benchmark(
        source=slides, config=_config(tiny_clip, verify=True), out=run, plots=False
    )
    assert again.skipped == 4 and counts.hashes == 2 and counts.pixels == 0 and counts.loads == 0


def test_the_cli_rerun_writes_its_log(first_run: FirstRun, tiny_clip: Path, tmp_path: Path) -> None:
    from pathgls.cli import app

    slides, run = _copy(first_run, tmp_path)
    args = ["benchmark", str(slides), "--out", str(run), "--encoder", f"hf:{tiny_clip}"]
    args += [a for s in SUBJECTS for a in ("--subject", s)] + ["--view", "montage"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    (log,) = (run / "logs").glob("benchmark-*.log")
    text = log.read_text()
    assert "4 finished earlier, 0 to evaluate" in text and "where the time went" in text


# --- bags and patches files across encoders and versions -------------------------------------


def test_a_second_encoder_reuses_the_tiling(
    first_run: FirstRun, tmp_path: Path, counts: Counts
) -> None:
    from pathgls.encoders import build_encoder
    from pathgls.testing import save_random_hf_clip

    slides, run = _copy(first_run, tmp_path)
    other = save_random_hf_clip(tmp_path / "other-clip", size="tiny", seed=1)
    config = load_config(encoder={"name": f"hf:{other}"})
    patches = run / "20x_512px_0px_overlap/patches/mosaic40x_patches.h5"
    mtime = patches.stat().st_mtime_ns
    res = extract_slide(
        slide=slides / "mosaic40x.svs",
        out_dir=run,
        encoder=build_encoder(config.encoder),
        config=config,
    )
    assert res.status == "done" and res.tiling_reused and counts.hashes == 0
    assert "slide.identity" not in res.timings  # no full hash: the patches file had it
    assert patches.stat().st_mtime_ns == mtime
    first = read_bag(run / "features_hf-tiny-clip" / "mosaic40x.h5", windows=False)
    second = read_bag(res.bag_path, windows=False)
    assert np.array_equal(first.coords, second.coords)
    assert second.meta.encoder == f"hf:{other}" and counts.opens == 1  # opened to encode only


def test_bags_without_the_identity_attributes_are_read_and_reused(
    first_run: FirstRun, tiny_clip: Path, tmp_path: Path
) -> None:
    from pathgls.encoders import build_encoder

    slides, run = _copy(first_run, tmp_path)
    bag = run / "features_hf-tiny-clip" / "cmu.h5"
    with h5py.File(bag, "r+") as f:  # as a bag of an earlier pathgls
        for key in ("slide_size", "slide_mtime_ns", "slide_header_sha256"):
            del f.attrs[key]
    meta = validate_bag(bag)
    assert (meta.slide_size, meta.slide_header_sha256) == (0, "")
    shutil.rmtree(run / "20x_512px_0px_overlap")  # and no patches file: tiled again, once
    config = _config(tiny_clip)
    res = extract_slide(
        slide=slides / "cmu.svs",
        out_dir=run,
        encoder=build_encoder(config.encoder),
        config=config,
        bag_name="cmu",
        windows=True,  # the runner's bag
    )
    assert res.status == "skipped" and res.n_encoded == 0, res.warnings
    assert not any("rebuilt" in w for w in res.warnings)  # same slide: its full hash agrees


def test_a_damaged_patches_file_is_recomputed(first_run: FirstRun, tmp_path: Path) -> None:
    slides, run = _copy(first_run, tmp_path)
    patches = run / "20x_512px_0px_overlap/patches/cmu_patches.h5"
    with h5py.File(patches, "r+") as f:
        f.attrs["read_size"] = -3
    s = SlideSession(slides / "cmu.svs", out_dir=run, name="cmu")
    with s:
        tiling = s.tiling()
    assert any("patches file not used" in n and "read_size" in n for n in s.notes)
    assert len(tiling.grid) == len(read_patches(patches).grid)  # rewritten, readable again
    meta = read_bag(run / "features_hf-tiny-clip" / "cmu.h5", windows=False).meta
    with SlideSession(slides / "cmu.svs") as other:
        assert bag_read_plan(meta, other.reader.level_downsamples) == tiling.plan


# --- the manifest ------------------------------------------------------------------------------


def test_old_manifests_are_read_as_the_typed_manifest(tmp_path: Path) -> None:
    old = {
        "status": "finished",
        "started": "2026-01-01T00:00:00+0000",
        "finished": "2026-01-01T00:01:00+0000",
        "source": "slides/",
        "executor": "local",
        "address": None,
        "config": {"run": {"subjects": ["captioner"]}},
        "packages": {"pathgls": "0.1"},
        "python": "3.11",
        "platform": "linux",
        "models": {
            "subjects": {"captioner": {"model_id": "c"}},
            "encoder": None,
            "from": "stored ScoreCards",
        },
        "counts": {"items": 1, "planned": 1, "skipped": 1, "ok": 1, "cards": 1},
        "something_newer": 1,
    }
    (tmp_path / "manifest.json").write_text(json.dumps(old))
    m = read_manifest(tmp_path)
    assert isinstance(m, Manifest) and m.models is not None
    assert m.models.source == "cards" and m.models.subjects["captioner"]["model_id"] == "c"
    assert m.counts.skipped == 1 and m.counts.evaluated == 0 and m.status == "finished"
    ray = dict(old, models={"subjects": {}, "ray": {"workers": 2, "startup_s": 1.5, "replaced": 0}})
    (tmp_path / "manifest.json").write_text(json.dumps(ray))
    m = read_manifest(tmp_path)
    assert m is not None and m.models is not None and m.models.ray is not None
    assert m.models.ray.workers == 2 and m.models.source == "loaded"
    (tmp_path / "manifest.json").write_text(json.dumps({"status": "nonsense", "source": "x"}))
    assert read_manifest(tmp_path) is None


def _pixels(slide: Path) -> np.ndarray:
    import openslide

    with openslide.OpenSlide(str(slide)) as s:
        return np.asarray(s.read_region((0, 0), 0, s.dimensions).convert("RGB"))


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_roi_items_rerun_by_identity_too(
    sample_rois: tuple[Path, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "rois"
    src.mkdir()
    a, b = src / "a.png", src / "b.png"
    shutil.copy2(sample_rois[0], a)
    shutil.copy2(sample_rois[1], b)
    config = load_config(run={"subjects": ("captioner",)})
    out = tmp_path / "run"
    run_benchmark(source=src, config=config, out=out, plots=False)
    store = ResultsStore(out)
    assert store.read_card(store.card_path("captioner", "a")).inputs["slide_identity"]["sha256"]
    st = a.stat()
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # touched: kept
    shutil.copyfile(sample_rois[2], b)  # other pixels under b's name: redone
    again = run_benchmark(source=src, config=config, out=out, plots=False)
    assert again.skipped == 1 and again.counts["ok"] == 2
    card_b = store.read_card(store.card_path("captioner", "b"))
    assert any("b.png changed since its earlier ScoreCards" in w for w in card_b.warnings)
    assert card_b.inputs["slide_identity"]["sha256"] == _sha(b)
    card_a = store.read_card(store.card_path("captioner", "a"))
    assert card_a.inputs["slide_identity"]["mtime_ns"] == a.stat().st_mtime_ns
    assert not card_a.warnings or not any("changed" in w for w in card_a.warnings)


def test_a_flat_tiffs_card_and_bag_agree_on_its_resolution(
    cmu_slide: Path, tiny_clip: Path, tmp_path: Path
) -> None:
    from PIL import Image

    src = tmp_path / "slides"
    src.mkdir()
    tissue = _pixels(cmu_slide)[1024:2048, 512:1536]
    Image.fromarray(tissue).save(src / "flat.tif")  # no resolution tags: tiling.image_mpp
    config = load_config(
        run={"subjects": ("captioner",)},
        encoder={"name": f"hf:{tiny_clip}"},
        tiling={"image_mpp": 0.25},
    )
    result = run_benchmark(source=src, config=config, out=tmp_path / "run", plots=False)
    (card,) = result.cards
    bag = read_bag(card.inputs["bag"], windows=False)
    assert card.inputs["level0_mpp"] == bag.meta.level0_mpp == 0.25
    assert card.inputs["mpp_source"] == bag.meta.mpp_source == "default"
    assert bag.meta.patch_size_level0 == 1024 and len(bag) == 1  # 40× read, reduced 2×
    assert any("assumed 0.25 µm/px" in w for w in card.warnings)
