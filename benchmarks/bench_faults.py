"""Fault benchmark: kills, concurrent runs and hostile names against ``pathgls benchmark``.

Each case runs the real CLI in child processes (``python -m pathgls benchmark``, subject
``captioner``, no encoder) on ROIs linked from the shared tiles folder, and checks what a team
relies on; the table prints each case → held / FAILED with what was seen:

1. ``kill-resume``: a run SIGKILLed after its first ScoreCard, then rerun: the cards equal an
   uninterrupted run's (timings aside), none is lost or doubled, the manifest ends ``finished``.
2. ``two-runs-refused``: a second run on the same ``--out`` while the first runs: it exits 2
   naming the first's pid; the first finishes with every card ``ok`` and an empty errors log.
3. ``two-runs-wait``: the same with ``--wait``: the second waits, then finds everything done.
4. ``stale-lock``: a run SIGKILLed mid-way leaves its lock; the next run takes it over at once
   and completes.
5. ``colliding-names``: ``a b.png``, ``a-b.png``, ``a;b.png``, ``x/a.png``, ``y/a.png``: one
   card each (cards == items × subjects), and a rerun skips all of them.

Usage: ``python benchmarks/bench_faults.py [--items 6] [--repeats 1]``. Timings are printed
for information only (seconds per case, this machine, shared CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TILES = ROOT / ".." / "shared" / "data" / "tiles"
ROI = TILES / "tissue-level0-7352-11762-7864-12274.png"
ENV = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")


def _source(folder: Path, names: list[str]) -> Path:
    for name in names:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(ROI.resolve())
    return folder


def _start(src: Path, out: Path, *extra: str) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "pathgls", "benchmark", str(src), "--out", str(out)]
    cmd += ["--subject", "captioner", "--encoder", "none", *extra]
    return subprocess.Popen(
        cmd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def _finish(proc: subprocess.Popen[str], timeout: float = 600) -> tuple[int, str]:
    out, _ = proc.communicate(timeout=timeout)
    return proc.returncode, out


def _cards(out: Path) -> dict[str, dict]:
    cards = {}
    for path in sorted((out / "scorecards").rglob("*.json")):
        card = json.loads(path.read_text(encoding="utf-8"))
        card.pop("timings", None)
        cards[str(path.relative_to(out))] = card
    return cards


def _wait_for(predicate: Callable[[], bool], timeout: float = 300) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def _manifest(out: Path) -> dict:
    try:
        return json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def case_kill_resume(tmp: Path, n: int) -> tuple[bool, str]:
    src = _source(tmp / "src", [f"roi{i}.png" for i in range(n)])
    ref, out = tmp / "ref", tmp / "out"
    code, text = _finish(_start(src, ref))
    if code != 0:
        return False, f"reference run failed ({code}): {text[-300:]}"
    proc = _start(src, out)
    _wait_for(lambda: any((out / "scorecards").rglob("*.json")) or proc.poll() is not None)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = len(_cards(out))
    code, text = _finish(_start(src, out))
    same = _cards(out) == _cards(ref)
    status = _manifest(out).get("status")
    held = code == 0 and same and status == "finished"
    return held, f"killed with {before}/{n} cards; resumed: identical={same}, manifest {status}"


def case_two_runs(tmp: Path, n: int, *, wait: bool) -> tuple[bool, str]:
    src = _source(tmp / "src", [f"roi{i}.png" for i in range(n)])
    out = tmp / "out"
    first = _start(src, out)
    _wait_for(lambda: (out / ".pathgls.lock").is_file() and bool(_manifest(out)))
    second = _start(src, out, *(["--wait"] if wait else []))
    code2, text2 = _finish(second)
    code1, _ = _finish(first)
    cards = _cards(out)
    ok = sum(c["status"] == "ok" for c in cards.values())
    errors = (out / "errors.jsonl").read_text() if (out / "errors.jsonl").exists() else ""
    first_ok = code1 == 0 and ok == n and len(cards) == n and not errors.strip()
    if wait:
        held = first_ok and code2 == 0 and f"({n} already done, skipped)" in text2
        return held, f"first: {ok}/{n} ok; second waited, exit {code2}"
    named = f"pid {first.pid}" in text2
    held = first_ok and code2 == 2 and named
    return (
        held,
        f"first: {ok}/{n} ok, errors log empty={not errors.strip()}; "
        f"second exit {code2}, names the holder={named}",
    )


def case_stale_lock(tmp: Path, n: int) -> tuple[bool, str]:
    src = _source(tmp / "src", [f"roi{i}.png" for i in range(n)])
    out = tmp / "out"
    proc = _start(src, out)
    _wait_for(lambda: any((out / "scorecards").rglob("*.json")) or proc.poll() is not None)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    left = (out / ".pathgls.lock").read_text()
    t0 = time.monotonic()
    code, _ = _finish(_start(src, out))
    took = time.monotonic() - t0
    logs = "".join(p.read_text() for p in (out / "logs").glob("*.log"))
    over = "took over the lock" in logs
    held = bool(left.strip()) and code == 0 and over and len(_cards(out)) == n
    return (
        held,
        f"lock left by the killed run; next run took it over={over}, exit {code} ({took:.0f} s)",
    )


def case_colliding_names(tmp: Path, n: int) -> tuple[bool, str]:
    names = ["a b.png", "a-b.png", "a;b.png", "x/a.png", "y/a.png"]
    src = _source(tmp / "src", names)
    out = tmp / "out"
    code, _ = _finish(_start(src, out))
    cards = _cards(out)
    code2, text2 = _finish(_start(src, out))
    held = code == 0 and len(cards) == len(names) and "(5 already done, skipped)" in text2
    return held, f"{len(cards)} cards for {len(names)} items; rerun skipped all={code2 == 0}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    if not ROI.is_file():
        sys.exit(f"shared tiles not found: {ROI}")
    cases: list[tuple[str, Callable[[Path, int], tuple[bool, str]]]] = [
        ("kill-resume", case_kill_resume),
        ("two-runs-refused", lambda t, n: case_two_runs(t, n, wait=False)),
        ("two-runs-wait", lambda t, n: case_two_runs(t, n, wait=True)),
        ("stale-lock", case_stale_lock),
        ("colliding-names", case_colliding_names),
    ]
    print(f"{'case':<20} {'result':<8} {'s':>6}  what was seen")
    failed = 0
    for name, case in cases:
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory(prefix=f"pathgls-faults-{name}-") as tmp:
                t0 = time.monotonic()
                held, seen = case(Path(tmp), args.items)
                seconds = time.monotonic() - t0
            failed += not held
            print(
                f"{name:<20} {'held' if held else 'FAILED':<8} {seconds:6.1f}  {seen}", flush=True
            )
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
