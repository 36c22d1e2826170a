"""The review page in headless Chromium: label three cards (keys and clicks), reload, find the
labels again and in ``labels.tsv``; hostile report text stays inert; screenshots at 1024 and
1920 px (kept in ``PATHGLS_SCREENSHOT_DIR`` when set)."""

from __future__ import annotations

import base64
import csv
import json
import os
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from browser import _CDP, _devtools_port, _errors, find_chromium
from review_fixtures import write_review_run

from pathgls.inspect.review_page import review_cards
from pathgls.inspect.review_server import ReviewSite, serve_in_thread

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="headless Chromium not installed (Debian package `chromium`: apt-get install chromium)",
)
SCREENSHOT_DIR = os.environ.get("PATHGLS_SCREENSHOT_DIR")


def _eval(cdp: _CDP, expression: str) -> Any:
    res = cdp.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
    if "exceptionDetails" in res:
        raise AssertionError(f"{expression}: {res['exceptionDetails']}")
    return res["result"].get("value")


def _wait(cdp: _CDP, expression: str, timeout: float = 60) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = _eval(cdp, expression)
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {expression}")


def _key(cdp: _CDP, key: str) -> None:
    for kind in ("keyDown", "keyUp"):
        cdp.call(
            "Input.dispatchKeyEvent", type=kind, key=key, text=key if kind == "keyDown" else ""
        )


def _load(cdp: _CDP, url: str) -> None:
    cdp.events.clear()
    cdp.call("Page.navigate", url=url)
    cdp.wait_for("Page.loadEventFired", 60)


def _shot(cdp: _CDP, path: Path, width: int) -> None:
    cdp.call(
        "Emulation.setDeviceMetricsOverride",
        width=width,
        height=900,
        deviceScaleFactor=1,
        mobile=False,
    )
    time.sleep(0.3)
    shot = cdp.call("Page.captureScreenshot", format="png")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))


def test_label_three_cards_reload_and_read_them_back(tmp_path: Path) -> None:
    run = write_review_run(tmp_path / "run", review=4)
    site = ReviewSite(run_dir=run, cards=review_cards(run_dir=run), title="review", reviewer="rv")
    server, _ = serve_in_thread(site)
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    shots = Path(SCREENSHOT_DIR) if SCREENSHOT_DIR else tmp_path
    with tempfile.TemporaryDirectory(prefix="pathgls-chromium-", ignore_cleanup_errors=True) as p:
        proc = subprocess.Popen(
            [
                str(CHROMIUM),
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-extensions",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                f"--user-data-dir={p}",
                "--window-size=1024,900",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            port = _devtools_port(proc, 90)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
                page = next(t for t in json.load(r) if t.get("type") == "page")
            cdp = _CDP(page["webSocketDebuggerUrl"])
            try:
                for domain in ("Page", "Runtime", "Log", "Network"):
                    cdp.call(f"{domain}.enable")
                _load(cdp, url)
                assert _eval(cdp, "document.querySelectorAll('.card').length") == 4
                assert _eval(cdp, "document.querySelector('.card.current').dataset.id") == (
                    "replay:a/rev0"
                )
                _eval(cdp, "document.getElementById('reviewer').value = 'dr <b>x</b>'")
                # 1: key a; 2: the unacceptable button, with a note; 3: key a again
                _key(cdp, "a")
                _wait(cdp, "document.getElementById('status').textContent.startsWith('saved')")
                _wait(cdp, "document.querySelector('.card.current').dataset.id == 'replay:a/rev1'")
                _eval(
                    cdp,
                    "document.querySelector('.card.current .note').value = "
                    "'margin <i>unclear</i>\\tsee slide'",
                )
                _eval(cdp, "document.querySelector('.card.current button.bad').click()")
                _wait(cdp, "document.querySelector('.card.current').dataset.id == 'replay:a/rev2'")
                _key(cdp, "u")
                _wait(cdp, "document.querySelector('.card.current').dataset.id == 'replay:a/rev3'")
                # hostile card (rev1) text stayed text: no script ran, no injected element
                assert _eval(cdp, "typeof window.__pwned") == "undefined"
                assert _eval(cdp, "document.querySelectorAll('script').length") == 1
                assert _eval(cdp, "document.querySelectorAll('img[src=x], style').length") == 1
                assert "window.__pwned = 1" in _eval(
                    cdp, "document.querySelectorAll('.card')[1].querySelector('pre').textContent"
                )
                _load(cdp, url)  # reload: the labels come back from labels.tsv
                got = _eval(
                    cdp, "Array.from(document.querySelectorAll('.card')).map(c => c.dataset.label)"
                )
                assert got == ["acceptable", "unacceptable", "unacceptable", ""]
                # the page opens on the first card without a label
                assert _eval(cdp, "document.querySelector('.card.current').dataset.id") == (
                    "replay:a/rev3"
                )
                _shot(cdp, shots / "review-1024.png", 1024)
                _shot(cdp, shots / "review-1920.png", 1920)
                _eval(
                    cdp,
                    "document.querySelectorAll('.card').forEach((c, i) => "
                    "c.classList.toggle('current', i === 1))",
                )
                _shot(cdp, shots / "review-hostile-1024.png", 1024)
                assert _eval(cdp, "typeof window.__pwned") == "undefined"
                errors = [e for e in _errors(cdp.events) if "favicon" not in e]
                assert not errors, errors
            finally:
                cdp.close()
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            server.shutdown()
            server.server_close()
    with (run / "labels.tsv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    assert [(r["card_id"], r["label"]) for r in rows] == [
        ("replay:a/rev0", "acceptable"),
        ("replay:a/rev1", "unacceptable"),
        ("replay:a/rev2", "unacceptable"),
    ]
    assert rows[0]["reviewer"] == "dr <b>x</b>"  # stored as given (escaped where shown)
    assert rows[1]["note"] == "margin <i>unclear</i> see slide"  # the tab made a space
    assert all(r["time"].endswith("Z") for r in rows)
