"""Hostile inputs and concurrent use of a run: nothing lost, nothing hangs, nothing leaks.

Each test reproduces a case of issue 14 that failed before its fix.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from chatserver import Reply, chat_server
from typer.testing import CliRunner

from pathgls.cli import app
from pathgls.config import load_config
from pathgls.errors import LockedError, RunIntegrityError
from pathgls.io.lock import RUN_LOCK, acquire
from pathgls.io.names import safe_stem
from pathgls.runner.items import plan_items
from pathgls.runner.manifest import Manifest, read_manifest
from pathgls.runner.run import run_benchmark
from pathgls.runner.store import ResultsStore

REPORT = (
    "Microscopic: sheets of tumor cells with necrosis and mitotic figures.\n"
    "Diagnosis: invasive ductal carcinoma."
)


def _link(target: Path, roi: Path, *names: str) -> None:
    for name in names:
        path = target / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(roi.resolve())


@pytest.fixture
def roi(sample_rois: tuple[Path, ...]) -> Path:
    """A real 512 px H&E ROI (cut from the sample slide; no shared data needed)."""
    return sample_rois[0]


# -- 1: unique, stable ids and file names ---------------------------------------------------------


def test_colliding_names_get_distinct_stable_ids_and_files(tmp_path: Path) -> None:
    names = ["a b.png", "a-b.png", "a;b.png", "a.svs", "a.png", "dir1/c.svs", "dir2/c.tif"]
    paths = [tmp_path / n for n in names]
    items = plan_items(paths, root=tmp_path)
    ids = [i.item_id for i in items]
    assert ids == ["a b", "a-b", "a;b", "a.svs", "a.png", "dir1/c.svs", "dir2/c.tif"]
    store = ResultsStore(tmp_path / "run")
    files = {store.card_path("captioner", i) for i in ids}
    assert len(files) == len(ids)  # before: a b / a-b / a;b → one a-b.json; a.svs / a.png → a.json
    assert store.card_path("captioner", "a-b").name == "a-b.json"  # a safe name is kept as is
    assert store.card_path("captioner", "a b").name.startswith("a-b-")  # changed → short hash
    assert len({safe_stem(i) for i in ids}) == len(ids)  # bag names (features_*/<stem>.h5)
    again = plan_items(list(reversed(paths)), root=tmp_path)  # stable whatever the order
    assert {i.path: i.item_id for i in again} == {i.path: i.item_id for i in items}


def test_names_equal_but_for_case_are_refused_before_the_run(tmp_path: Path) -> None:
    from pathgls.errors import ConfigError

    with pytest.raises(ConfigError, match=r"'A\.png' and 'a\.png'"):
        plan_items([tmp_path / "A.png", tmp_path / "a.png"], root=tmp_path)


def test_benchmark_keeps_every_colliding_item(tmp_path: Path, roi: Path) -> None:
    src = tmp_path / "src"
    _link(src, roi, "a b.png", "a-b.png", "a;b.png", "x/a.png", "y/a.png")
    out = tmp_path / "run"
    config = load_config(run={"subjects": ("captioner",)})
    result = run_benchmark(source=src, config=config, out=out, plots=False)
    assert result.planned == 5 and result.counts["ok"] == 5
    cards = ResultsStore(out).load_cards()
    assert sorted(c.item_id for c in cards) == ["a b", "a-b", "a;b", "x/a.png", "y/a.png"]
    assert len(list((out / "scorecards").rglob("*.json"))) == 5
    again = run_benchmark(source=src, config=config, out=out, plots=False)
    assert again.skipped == 5 and again.counts["ok"] == 5


def test_count_check_refuses_a_run_whose_cards_do_not_add_up(tmp_path: Path, roi: Path) -> None:
    from pathgls.runner import run as run_module

    src = tmp_path / "src"
    _link(src, roi, "one.png", "two.png")
    config = load_config(run={"subjects": ("captioner",)})
    real = run_module.ResultsStore.write_card

    def lose_two(self: ResultsStore, card: object) -> Path:
        path = real(self, card)  # type: ignore[arg-type]
        if card.item_id == "two":  # type: ignore[attr-defined]
            path.unlink()
        return path

    run_module.ResultsStore.write_card = lose_two  # type: ignore[method-assign]
    try:
        with pytest.raises(RunIntegrityError, match=r"1 ScoreCards for 2 .* 1 missing"):
            run_benchmark(source=src, config=config, out=tmp_path / "run", plots=False)
    finally:
        run_module.ResultsStore.write_card = real  # type: ignore[method-assign]
    manifest = read_manifest(tmp_path / "run")
    assert manifest.status == "failed" and "RunIntegrityError" in manifest.reason


# -- 4: secrets ----------------------------------------------------------------------------------


def test_no_secret_reaches_any_file_or_output(tmp_path: Path, roi: Path) -> None:
    src = tmp_path / "src"
    _link(src, roi, "first.png", "second.png")
    out = tmp_path / "run"
    with chat_server() as server:
        host = server.url.removeprefix("http://")
        spec = f"openai:http://user:CANARYPASS@{host}?api_key=CANARYKEY&mode=x#tiny"
        # the first item's original fails and the server echoes the secret in its message
        server.play(Reply(400, {"error": {"message": "bad key CANARYKEY for user:CANARYPASS"}}))
        server.default = Reply(
            body={"choices": [{"message": {"role": "assistant", "content": REPORT}}]}
        )
        res = CliRunner().invoke(
            app,
            ["benchmark", str(src), "--subject", spec, "--out", str(out), "--subject-retries", "0"],
        )
        requests = list(server.requests)
    assert res.exit_code == 0, res.output
    # the URL works: userinfo as Basic auth, the query kept after /chat/completions
    assert requests[0]["path"] == "/v1/chat/completions?api_key=CANARYKEY&mode=x"
    assert requests[0]["headers"]["Authorization"] == "Basic dXNlcjpDQU5BUllQQVNT"
    # 6: no stain/attack request after the first item's original failed: 1 + 3 requests
    assert len(requests) == 4
    cards = {c.item_id: c for c in ResultsStore(out).load_cards()}
    assert cards["first"].status == "failed" and cards["second"].status == "ok"
    assert any("not asked: the original report failed" in e for e in cards["first"].errors)
    leaks = [str(p) for p in out.rglob("*") if "CANARY" in str(p)]
    for path in out.rglob("*"):
        if path.is_file() and b"CANARY" in path.read_bytes():
            leaks.append(str(path))
    assert "CANARY" not in res.output
    assert leaks == []
    assert (out / "errors.jsonl").is_file() and (out / "manifest.json").is_file()
    assert any(p.name.startswith("openai-http-") for p in (out / "scorecards").iterdir())


def test_redact_masks_userinfo_query_secrets_and_auth_headers() -> None:
    from pathgls.io.redact import redact

    text = (
        "openai:https://bob:s3cr%40t@h.example/v1?api-version=2&api_key=K1&token=T#m "
        '"Authorization: Bearer sk-abcdefghijkl" http://h/x?sig=S&ok=1'
    )
    out = redact(text)
    for secret in ("bob", "s3cr", "K1", "=T#", "sk-abc", "sig=S"):
        assert secret not in out
    assert "api-version=2" in out and "ok=1" in out and "h.example/v1" in out


def test_chat_url_keeps_the_query_and_moves_userinfo_to_basic_auth() -> None:
    from pathgls.llm.client import chat_completions_url, split_userinfo

    assert (
        chat_completions_url("http://h:8000/v1?api-version=2024-02")
        == "http://h:8000/v1/chat/completions?api-version=2024-02"
    )
    assert chat_completions_url("http://h") == "http://h/v1/chat/completions"
    bare, auth = split_userinfo("http://u%40x:p@h/v1/chat/completions?q=1")
    assert bare == "http://h/v1/chat/completions?q=1" and auth == "Basic dUB4OnA="


# -- 2: locks ------------------------------------------------------------------------------------


def test_a_second_run_on_the_same_directory_is_refused_naming_the_holder(
    tmp_path: Path, roi: Path
) -> None:
    src = tmp_path / "src"
    _link(src, roi, "one.png")
    out = tmp_path / "run"
    out.mkdir()
    held = acquire(out / RUN_LOCK, what="run directory")
    try:
        with pytest.raises(LockedError, match=rf"pid {os.getpid()} on .*--wait") as e:
            run_benchmark(source=src, config=load_config(run={"subjects": ("captioner",)}), out=out)
        assert e.value.holder["pid"] == os.getpid() and e.value.holder["started"]
        res = CliRunner().invoke(
            app, ["benchmark", str(src), "--subject", "captioner", "--out", str(out)]
        )
        assert res.exit_code == 2 and f"pid {os.getpid()}" in res.output
        assert not (out / "scorecards").exists()  # refused before anything was written
    finally:
        held.release()


def test_wait_takes_the_lock_when_the_holder_lets_go(tmp_path: Path) -> None:
    held = acquire(tmp_path / "l", what="x")
    threading.Timer(0.3, held.release).start()
    lock = acquire(tmp_path / "l", what="x", wait_s=30)
    assert lock.took_over is None  # released cleanly: nothing stale
    lock.release()


def test_a_killed_holders_lock_is_stale_and_taken_over(tmp_path: Path) -> None:
    code = (
        "import os, signal, sys; from pathgls.io.lock import acquire; "
        f"acquire({str(tmp_path / 'l')!r}, what='x'); os.kill(os.getpid(), signal.SIGKILL)"
    )
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    proc = subprocess.run([sys.executable, "-c", code], env=env, check=False)
    assert proc.returncode == -9
    lock = acquire(tmp_path / "l", what="x")
    assert lock.took_over is not None and lock.took_over["pid"] != os.getpid()
    lock.release()


# -- 3: the manifest ends with the run -----------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "status"), [(RuntimeError("boom"), "failed"), (KeyboardInterrupt(), "interrupted")]
)
def test_manifest_ends_failed_or_interrupted_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: BaseException, status: str, roi: Path
) -> None:
    from pathgls.runner import run as run_module

    src = tmp_path / "src"
    _link(src, roi, "one.png")

    def explode(**_: object) -> None:
        raise error

    monkeypatch.setattr(run_module, "run_local", explode)
    with pytest.raises(type(error)):
        run_benchmark(
            source=src, config=load_config(run={"subjects": ("captioner",)}), out=tmp_path
        )
    manifest = read_manifest(tmp_path)
    assert manifest.status == status and manifest.finished
    assert manifest.reason.startswith(type(error).__name__)


def test_an_interrupt_between_a_card_and_its_count_still_counts_the_card(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, roi: Path
) -> None:
    """A signal that lands after a card reached the disk but before the run counted it: the
    manifest counts the card on disk (a SIGTERM in CI once left ``evaluated = 0`` beside one)."""
    from pathgls.runner import run as run_module

    src = tmp_path / "src"
    _link(src, roi, "one.png", "two.png")

    def interrupted(self: object, item_id: str, cards: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(run_module.RunTimings, "add_item", interrupted)
    out = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        run_benchmark(
            source=src, config=load_config(run={"subjects": ("captioner",)}), out=out, plots=False
        )
    manifest = read_manifest(out)
    assert manifest.status == "interrupted"
    assert len(list((out / "scorecards").rglob("*.json"))) == 1
    assert manifest.counts.evaluated == 1


def test_a_manifest_write_failure_never_hides_the_original_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, roi: Path
) -> None:
    from pathgls.runner import run as run_module

    src = tmp_path / "src"
    _link(src, roi, "one.png")
    calls = []
    real = run_module.write_manifest

    def disk_full_after_start(run_dir: Path, manifest: Manifest) -> Path:
        calls.append(manifest.status)
        if len(calls) > 1:
            raise OSError(28, "No space left on device")
        return real(run_dir, manifest)

    def explode(**_: object) -> None:
        raise RuntimeError("the original failure")

    monkeypatch.setattr(run_module, "write_manifest", disk_full_after_start)
    monkeypatch.setattr(run_module, "run_local", explode)
    with pytest.raises(RuntimeError, match="the original failure") as e:
        run_benchmark(
            source=src, config=load_config(run={"subjects": ("captioner",)}), out=tmp_path
        )
    assert e.value.__context__ is None  # no chained traceback from the handler
    assert calls == ["running", "failed"]


# -- 5, 6: deadlines and caps -------------------------------------------------------------------


def test_subject_timeout_is_a_total_deadline_against_a_trickling_server() -> None:
    from pathgls.errors import LLMError
    from pathgls.llm.client import ChatClient

    with chat_server() as server:
        body = json.dumps({"choices": [{"message": {"content": "x" * 200}}]})
        server.play(Reply(body=body, drip_s=0.1))  # 20+ s in total, one byte each 0.1 s
        client = ChatClient(server.url, "tiny", timeout_s=1.0, max_retries=0)
        with pytest.raises(LLMError, match=r"timed out after 1 s \(whole request\)"):
            client.complete([{"role": "user", "content": "hi"}])
        # the client hung up at its deadline, long before the server had dripped the body
        # (it once read on to the last byte when the server closes after the answer, HTTP/1.0)
        assert server.sent and server.sent[0] < len(body) // 2, server.sent


def test_an_oversized_answer_is_refused_not_retried() -> None:
    from pathgls.errors import LLMError
    from pathgls.llm.client import ChatClient

    with chat_server() as server:
        server.default = Reply(body={"choices": [{"message": {"content": "x" * 300_000}}]})
        client = ChatClient(server.url, "tiny", max_retries=2, max_response_bytes=100_000)
        with pytest.raises(LLMError, match="larger than 100000 bytes"):
            client.complete([{"role": "user", "content": "hi"}])
        assert len(server.requests) == 1


def test_a_too_long_report_fails_its_generation_and_is_not_cached(tmp_path: Path) -> None:
    import numpy as np

    from pathgls.errors import SubjectError
    from pathgls.subjects.cache import SubjectCache, cached_generate

    class Verbose:
        name, model_id, revision = "verbose", "verbose", None

        def generate(self, images: object, prompt: str, **_: object) -> str:
            return "tumor " * 1000

    cache = SubjectCache(tmp_path)
    image = np.zeros((8, 8, 3), np.uint8)
    with pytest.raises(SubjectError, match="6000 characters, more than the 5000 allowed"):
        cached_generate(Verbose(), images=[image], prompt="p", cache=cache, max_chars=5000)  # type: ignore[arg-type]
    assert not list(tmp_path.rglob("*.json"))
    text = cached_generate(Verbose(), images=[image], prompt="p", cache=cache, max_chars=6000)  # type: ignore[arg-type]
    assert len(text.text) == 6000


# -- 1, 2: bags ---------------------------------------------------------------------------------


def test_two_slides_with_one_stem_get_two_bags_and_a_locked_bag_is_left_alone(
    tmp_path: Path, tiny_clip: Path, slides_dir: Path
) -> None:
    from pathgls.features.bags import validate_bag

    src = tmp_path / "src"
    for folder, slide in (("dir1", "cmu-1-small-region.svs"), ("dir2", "openslide-small.svs")):
        (src / folder).mkdir(parents=True)
        (src / folder / "a.svs").symlink_to(slides_dir / slide)
    out = tmp_path / "run"
    args = ["extract", str(src), "--out", str(out), "--encoder", f"hf:{tiny_clip}"]
    res = CliRunner().invoke(app, args)
    bags = sorted((out / "features_hf-tiny-clip").glob("*.h5"))
    # before: one a.h5, the second slide failed as "made with other settings"
    assert [b.name.split("-")[0] for b in bags] == ["dir1", "dir2"], res.output
    assert validate_bag(bags[0]).slide_sha256 != validate_bag(bags[1]).slide_sha256
    # a bag another process is writing: this slide fails naming the writer, its files untouched
    bags[0].unlink()
    partial = bags[0].with_name(bags[0].name + ".partial")
    partial.write_bytes(b"someone else's half-written bag")
    held = acquire(bags[0].with_name(bags[0].name + ".lock"), what="bag", command="other run")
    try:
        res = CliRunner().invoke(app, args)
    finally:
        held.release()
    assert f"in use by pid {os.getpid()}" in res.output and "(other run)" in res.output
    assert partial.read_bytes() == b"someone else's half-written bag"


@pytest.mark.slow
def test_sigterm_ends_the_run_with_an_interrupted_manifest(tmp_path: Path, roi: Path) -> None:
    import signal
    import time

    src = tmp_path / "src"
    _link(src, roi, *(f"roi{i}.png" for i in range(6)))
    out = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    cmd = [sys.executable, "-m", "pathgls", "benchmark", str(src), "--out", str(out)]
    proc = subprocess.Popen(
        [*cmd, "--subject", "captioner"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    end = time.monotonic() + 300
    while not any((out / "scorecards").rglob("*.json")) and proc.poll() is None:
        assert time.monotonic() < end
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) != 0
    manifest = read_manifest(out)
    if manifest.status == "finished":  # every item was done before the signal came
        pytest.skip("the run finished before SIGTERM arrived")
    assert manifest.status == "interrupted" and "SIGTERM" in manifest.reason
    assert manifest.counts.evaluated >= 1


def test_the_count_check_reads_each_pair_at_its_own_path(tmp_path: Path, roi: Path) -> None:
    import shutil

    src = tmp_path / "src"
    _link(src, roi, "one.png", "two.png")
    out = tmp_path / "run"
    config = load_config(run={"subjects": ("captioner",)})
    run_benchmark(source=src, config=config, out=out, plots=False)
    folder = out / "scorecards" / "captioner"
    # a card left by an earlier layout elsewhere is not this run's: ignored, not a double
    (out / "scorecards" / "old-layout").mkdir()
    shutil.copy(folder / "one.json", out / "scorecards" / "old-layout" / "one.json")
    again = run_benchmark(source=src, config=config, out=out, plots=False)
    assert again.counts["ok"] == 2 and again.planned == 2
    # a file holding another pair's card (what colliding names used to do) is refused
    shutil.copy(folder / "two.json", folder / "one.json")
    with pytest.raises(RunIntegrityError, match=r"1 overwritten \(one\.json holds two"):
        run_benchmark(source=src, config=config, out=out, plots=False)
