"""The Ray executor on a local Ray instance: the local executor's cards, failures recorded.

Every Ray run here goes through ``run_benchmark`` with ``executor = "ray"`` in its config.
Starting Ray costs 5–10 s, so the suite starts it twice: the first test lets the run start its
own local Ray and checks it is stopped afterwards; the others share one instance
(:func:`shared_ray`), which a run uses as it is and leaves running, as documented. A module
fixture makes sure none is left behind.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import json
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from pathgls.cli import app
from pathgls.config import PathGLSConfig, load_config
from pathgls.errors import ConfigError, ModelNotFoundError
from pathgls.runner.items import discover
from pathgls.runner.manifest import read_manifest
from pathgls.runner.run import plan_tasks, run_benchmark
from pathgls.runner.store import ResultsStore, load_grounding_map

CONDITIONS = ("original", "stain", "attack:false-malignant-history")
#: Replayed reports with visual entities and a diagnosis, so that Logic and Grounding score
#: something (the captioners' reports name no entity) and Stability's Δ is not zero.
REPORTS = {
    "original": "Microscopic: sheets of tumor cells with necrosis and mitotic figures; no "
    "lymphocytes.\nDiagnosis: invasive ductal carcinoma.",
    "stain": "Microscopic: sheets of tumor cells with necrosis and frequent mitotic figures."
    "\nDiagnosis: invasive ductal carcinoma.",
    "attack:false-malignant-history": "Microscopic: benign glands without atypia.\n"
    "Diagnosis: metastatic melanoma.",
}

#: Tolerance of float comparisons between a Ray run and a local run (see the test).
FLOAT_TOL = 1e-6

needs_ray = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason="Ray is not installed (pathgls[ray])"
)


def link(folder: Path, *files: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for f in files:
        (folder / f.name).symlink_to(f.resolve())
    return folder


def cards_by_key(run_dir: Path) -> dict[tuple[str, str], dict]:
    """Every card's JSON without its timings, with the run directory's path replaced."""
    root = str(run_dir.resolve())
    out = {}
    for path in sorted((run_dir / "scorecards").rglob("*.json")):
        data = json.loads(path.read_text())
        data.pop("timings")
        data = json.loads(json.dumps(data).replace(root, "RUN_DIR"))
        out[(data["subject"], data["item_id"])] = data
    return out


@pytest.fixture(scope="module", autouse=True)
def no_ray_left() -> object:
    """Shut down any Ray a failing test left initialised, and check none was."""
    yield
    if "ray" in sys.modules and sys.modules["ray"] is not None:
        ray = sys.modules["ray"]
        left = ray.is_initialized()
        ray.shutdown()
        assert not left, "a test left Ray initialised"


@pytest.fixture(scope="module")
def shared_ray() -> Iterator[object]:
    """One local Ray for the tests after the first, as run_ray would start it, then stopped."""
    import logging

    ray = pytest.importorskip("ray")
    from pathgls.runner.ray_executor import CPUS_PER_WORKER

    assert not ray.is_initialized()
    ray.init(
        include_dashboard=False,
        logging_level=logging.WARNING,
        log_to_driver=False,
        runtime_env={"env_vars": {"TOKENIZERS_PARALLELISM": "false"}},
        num_cpus=max(2 * CPUS_PER_WORKER, os.cpu_count() or 1),
    )
    try:
        yield ray
    finally:
        ray.shutdown()


def assert_same(actual: object, expected: object, *, path: str = "card") -> None:
    """Equal JSON values; floats equal within ``FLOAT_TOL`` (see there)."""
    if isinstance(expected, float) and isinstance(actual, float):
        assert math.isclose(actual, expected, rel_tol=FLOAT_TOL, abs_tol=FLOAT_TOL) or (
            math.isnan(actual) and math.isnan(expected)
        ), f"{path}: {actual!r} != {expected!r}"
    elif isinstance(expected, dict) and isinstance(actual, dict):
        assert actual.keys() == expected.keys(), f"{path}: {set(actual) ^ set(expected)}"
        for k in expected:
            assert_same(actual[k], expected[k], path=f"{path}.{k}")
    elif isinstance(expected, list) and isinstance(actual, list):
        assert len(actual) == len(expected), f"{path}: {len(actual)} != {len(expected)} items"
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_same(a, e, path=f"{path}[{i}]")
    else:
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"


def on_ray(config: PathGLSConfig, *, workers: int) -> PathGLSConfig:
    """``config`` with the Ray executor and ``workers`` actors."""
    run = dataclasses.replace(config.run, executor="ray", workers=workers)
    return dataclasses.replace(config, run=run)


def grounding_maps(run_dir: Path) -> dict[str, dict[str, np.ndarray]]:
    return {
        str(p.relative_to(run_dir)): load_grounding_map(p)["values"]
        for p in sorted((run_dir / "grounding").rglob("*.npz"))
    }


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


# Real pixels a fresh clone has too: the sample slide of `pathgls data sample` and ROIs cut
# from it (tests/conftest.py).
@pytest.fixture(scope="module")
def CMU(sample_slide: Path) -> Path:
    return sample_slide


@pytest.fixture(scope="module")
def ROI(sample_rois: tuple[Path, ...]) -> Path:
    return sample_rois[0]


@pytest.fixture(scope="module")
def grounded(
    tmp_path_factory: pytest.TempPathFactory,
    tiny_clip: Path,
    CMU: Path,
    ROI: Path,
) -> dict[str, object]:
    """A slide and an ROI, two offline subjects, a tiny random CLIP; two local runs of them.

    ``local``: as a user runs it (torch on every core); ``local_1t``: torch on one thread, as
    in each Ray worker.
    """
    base = tmp_path_factory.mktemp("ray")
    src = link(base / "slides", CMU, ROI)
    replay = base / "replay.jsonl"
    replay.write_text(
        "\n".join(
            json.dumps({"item_id": i, "condition": c, "report": REPORTS[c]})
            for i in (CMU.stem, ROI.stem)
            for c in CONDITIONS
        )
    )
    clip = tiny_clip
    config = load_config(
        run={"subjects": ("captioner-obedient", f"replay:{replay}")},
        encoder={"name": f"hf:{clip}"},
    )
    local = run_benchmark(source=src, config=config, out=base / "local", plots=False)
    with torch_threads(1):
        local_1t = run_benchmark(source=src, config=config, out=base / "local-1t", plots=False)
    return {"src": src, "config": config, "local": local, "local_1t": local_1t}


@pytest.mark.slow
@needs_ray
def test_ray_run_equals_local_run(grounded, tmp_path: Path) -> None:
    import ray

    local, local_1t = grounded["local"], grounded["local_1t"]
    out = tmp_path / "ray"
    result = run_benchmark(
        source=grounded["src"], config=on_ray(grounded["config"], workers=2), out=out, plots=False
    )
    assert not ray.is_initialized()  # the Ray it started is stopped
    assert result.planned == 4 and result.counts == {"ok": 4, "partial": 0, "failed": 0}
    cards = cards_by_key(out)
    assert len(cards) == 4
    replayed = next(c for (s, _), c in cards.items() if s.startswith("replay:"))
    for name in ("grounding", "logic", "stability"):  # the comparison covers real numbers
        assert replayed["modules"][name]["value"] is not None, name
    assert 0.0 < replayed["modules"]["stability"]["value"] < 1.0
    # Against the local executor as users run it. Each Ray worker computes on one thread, the
    # local run on every core: torch splits float32 reductions (matmuls, layer norms) over its
    # threads, so the sums are added in another order and a similarity can differ in its last
    # float32 bit (seen here: 3e-8 in one of the ROI's window similarities). 1e-9 is below
    # float32's resolution (its step at 0.4 is 3e-8), so floats are compared to 1e-6: a few
    # dozen float32 steps, far below any difference that could change a score or a route.
    for key, card in cards_by_key(local.run_dir).items():
        assert_same(cards[key], card, path=f"{key}")
    pd.testing.assert_frame_equal(result.summary, local.summary, rtol=FLOAT_TOL, atol=FLOAT_TOL)
    expected_maps = grounding_maps(local.run_dir)
    maps = grounding_maps(out)
    assert maps.keys() == expected_maps.keys() and maps
    for name, values in expected_maps.items():
        assert maps[name].keys() == values.keys()
        for phrase, v in values.items():
            np.testing.assert_allclose(maps[name][phrase], v, rtol=FLOAT_TOL, atol=FLOAT_TOL)
    # With the same number of threads nothing differs at all: cards, summary, maps, bits.
    assert cards == cards_by_key(local_1t.run_dir)
    pd.testing.assert_frame_equal(result.summary, local_1t.summary, check_exact=True)
    for name, values in grounding_maps(local_1t.run_dir).items():
        for phrase, v in values.items():
            np.testing.assert_array_equal(maps[name][phrase], v)
    manifest = read_manifest(out)
    assert manifest.executor == "ray" and manifest.status == "finished"
    assert manifest.models.ray.workers == 2
    assert manifest.models.ray.replaced == 0
    assert manifest.models.subjects == read_manifest(local.run_dir).models.subjects


@pytest.mark.slow
@needs_ray
def test_ray_records_failed_items_and_completes_the_rest(
    tmp_path: Path, CMU: Path, broken_slide: Path, shared_ray: object
) -> None:
    src = link(tmp_path / "slides", CMU, broken_slide)
    # a subject whose endpoint never answers (closed port; no retries, so no backoff waits)
    dead = "openai:http://127.0.0.1:9/v1#never"
    config = load_config(
        run={"subjects": ("captioner", dead), "executor": "ray", "workers": 2},
        subject={"max_retries": 0, "timeout_s": 2},
    )
    out = tmp_path / "run"
    result = run_benchmark(source=src, config=config, out=out, plots=False)
    assert result.planned == 4
    assert result.counts == {"ok": 1, "partial": 0, "failed": 3}
    cards = {(c.subject, c.item_id): c for c in ResultsStore(out).load_cards()}
    assert len(cards) == 4
    ok = cards[("captioner", CMU.stem)]
    assert ok.status == "ok" and ok.modules["stability"].value == pytest.approx(1.0)
    for subject in ("captioner", dead):
        broken = cards[(subject, "broken")]
        assert broken.status == "failed" and broken.trust is None
        assert "SlideOpenError" in broken.errors[0]
    dead_card = cards[(dead, CMU.stem)]
    assert dead_card.status == "failed" and dead_card.decision is None
    assert any("generation failed (original)" in e for e in dead_card.errors)
    assert dead_card.modules["stability"].value is None
    row = result.summary.set_index("subject").loc["captioner"]
    assert row["n_items"] == 2 and row["n_ok"] == 1 and row["n_failed"] == 1
    log = [json.loads(line) for line in (out / "errors.jsonl").read_text().splitlines()]
    assert sorted((r["subject"], r["item_id"]) for r in log) == sorted(
        [("captioner", "broken"), (dead, "broken"), (dead, CMU.stem)]
    )
    assert read_manifest(out).counts.evaluated == 4


@needs_ray
def test_a_model_that_cannot_load_is_raised_with_its_type(
    tmp_path: Path, ROI: Path, shared_ray: object
) -> None:
    import ray

    config = load_config(
        run={"subjects": ("captioner",), "executor": "ray", "workers": 2},
        encoder={"name": f"hf:{tmp_path / 'no-such-clip'}"},
    )
    with pytest.raises(ModelNotFoundError, match="no-such-clip"):  # as the local executor
        run_benchmark(source=ROI, config=config, out=tmp_path / "run")
    # a Ray the run did not start is used as it is and left running (the first test checks
    # that a Ray the run starts itself is stopped)
    assert ray.is_initialized()
    manifest = read_manifest(tmp_path / "run")  # an error, not an interruption: failed, with why
    assert manifest.status == "failed" and manifest.reason.startswith("ModelNotFoundError")
    assert not (tmp_path / "run" / "scorecards").exists()


def _parent(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2 :].split()[1])  # the field after the state


def _busy_ray_workers() -> list[int]:
    """PIDs of this process's Ray workers in the middle of ``_Worker.evaluate`` (their title).

    Only descendants of this process (its Ray's raylet starts them), never another Ray's.
    """
    me, pids = os.getpid(), []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if not (entry / "cmdline").read_bytes().startswith(b"ray::_Worker.evaluate"):
                continue
            pid = int(entry.name)
            while pid > 1 and pid != me:
                pid = _parent(pid)
        except (OSError, ValueError, IndexError):
            continue
        if pid == me:
            pids.append(int(entry.name))
    return pids


@pytest.mark.slow
@needs_ray
@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="needs Linux /proc")
def test_dead_worker_fails_its_item_and_the_run_goes_on(
    tmp_path: Path, CMU: Path, sample_rois: tuple[Path, ...], shared_ray: object
) -> None:
    # five items: when the first busy worker is killed, items are still waiting, so it is
    # replaced (the other worker cannot finish three items in the moment Ray needs to notice)
    src = link(tmp_path / "slides", CMU, *sample_rois[:4])
    config = load_config(run={"subjects": ("captioner",), "executor": "ray", "workers": 2})
    killed: list[int] = []
    stop = threading.Event()

    def kill_first_busy_worker() -> None:  # SIGKILL, as the kernel's OOM killer would
        while not stop.is_set() and not killed:
            for pid in _busy_ray_workers():
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                break
            time.sleep(0.02)

    killer = threading.Thread(target=kill_first_busy_worker, daemon=True)
    killer.start()
    out = tmp_path / "run"
    try:
        result = run_benchmark(source=src, config=config, out=out, plots=False)
    finally:
        stop.set()
        killer.join(timeout=10)
    assert len(killed) == 1
    # one item lost with its worker; the others are done; the worker was replaced
    assert result.planned == 5 and result.counts == {"ok": 4, "partial": 0, "failed": 1}
    (lost,) = [c for c in ResultsStore(out).load_cards() if c.status == "failed"]
    assert "Ray worker evaluating this item died" in lost.errors[0]
    assert lost.inputs["subject_model_id"] == "pathgls/captioner"  # from the models' description
    assert read_manifest(out).models.ray.replaced == 1
    # a rerun redoes the lost item only
    tasks = plan_tasks(discover(src), config, ResultsStore(out))
    assert [(item.item_id, subjects) for item, subjects in tasks] == [(lost.item_id, ["captioner"])]


def test_missing_ray_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ROI: Path
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    config = load_config(run={"subjects": ("captioner",), "executor": "ray"})
    with pytest.raises(ConfigError, match=r"pip install 'pathgls\[ray\]'"):
        run_benchmark(source=ROI, config=config, out=tmp_path / "run")
    manifest = read_manifest(tmp_path / "run")
    assert manifest.status == "failed" and manifest.reason.startswith("ConfigError")
    res = CliRunner().invoke(
        app,
        [
            "benchmark",
            str(ROI),
            "--subject",
            "captioner",
            "--out",
            str(tmp_path / "cli"),
            "--executor",
            "ray",
        ],
    )
    assert res.exit_code == 2 and "needs Ray" in res.output


def test_no_address_starts_a_local_ray_whatever_this_machine_points_at(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ROI: Path
) -> None:
    """Ray's own default joins the cluster RAY_ADDRESS or the last `ray start` names (a stale
    /tmp/ray/ray_current_cluster made every local run fail: "num_cpus must not be provided");
    a run without --address asks for a new local instance."""
    seen: dict[str, object] = {}

    class FakeRay:
        @staticmethod
        def is_initialized() -> bool:
            return False

        @staticmethod
        def init(**kwargs: object) -> None:
            seen.update(kwargs)
            raise RuntimeError("stop here")

    monkeypatch.setitem(sys.modules, "ray", FakeRay)
    monkeypatch.setenv("RAY_ADDRESS", "192.0.2.2:47400")
    config = load_config(run={"subjects": ("captioner",), "executor": "ray", "workers": 2})
    with pytest.raises(ConfigError, match="cannot start or reach Ray at local"):
        run_benchmark(source=ROI, config=config, out=tmp_path / "run")
    assert seen["address"] == "local" and seen["num_cpus"] >= 2
