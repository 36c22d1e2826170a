"""Open a local HTML file in headless Chromium over the DevTools protocol (tests only).

Chromium (the Debian package ``chromium``) is started on a loopback debugging port with a
throw-away profile; the page is loaded from ``file://``, its images are checked from inside
the page, a full-page screenshot is taken, and every console error, uncaught exception and
failed load the browser logs is returned.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


def find_chromium() -> str | None:
    """Path of a Chromium executable on PATH, or None."""
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


@dataclass
class PageCheck:
    """What the browser saw."""

    title: str
    images: int  # <img> elements on the page
    images_loaded: int  # of them: complete with a natural width > 0
    errors: list[str] = field(default_factory=list)  # console errors, exceptions, failed loads
    screenshot: Path | None = None
    page_width: int = 0  # the document's scroll width, CSS px (wider than the window: scrolls)
    window_width: int = 0  # the window's inner width, CSS px
    body_width: int = 0  # the body's width, CSS px (a fixed page width leaves the rest empty)
    scrolled: int = 0  # elements whose content is wider than they are (scrolled sideways)


class _CDP:
    def __init__(self, ws_url: str) -> None:
        import websocket

        self.ws = websocket.create_connection(ws_url, timeout=60, suppress_origin=True)
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        mine = self.next_id
        self.ws.send(json.dumps({"id": mine, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == mine:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_for(self, method: str, timeout: float) -> None:
        end = time.monotonic() + timeout
        if any(e.get("method") == method for e in self.events):
            return
        while time.monotonic() < end:
            msg = json.loads(self.ws.recv())
            self.events.append(msg)
            if msg.get("method") == method:
                return
        raise TimeoutError(f"no {method} within {timeout} s")

    def close(self) -> None:
        self.ws.close()


def _errors(events: list[dict[str, Any]]) -> list[str]:
    out = []
    for e in events:
        method, params = e.get("method"), e.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            args = [a.get("value", a.get("description", "")) for a in params.get("args", [])]
            out.append(f"console.{params['type']}: {' '.join(map(str, args))}")
        elif method == "Runtime.exceptionThrown":
            out.append(f"exception: {params.get('exceptionDetails', {}).get('text')}")
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            out.append(f"log ({entry.get('source')}): {entry.get('text')} {entry.get('url', '')}")
        elif method == "Network.loadingFailed":
            out.append(f"load failed: {params.get('errorText')}")
    return out


def check_page(
    html: Path, *, screenshot: Path, chromium: str, width: int = 1280, timeout: float = 90
) -> PageCheck:
    """Load ``html`` in headless Chromium, check its images, screenshot the whole page."""
    with tempfile.TemporaryDirectory(
        prefix="pathgls-chromium-", ignore_cleanup_errors=True
    ) as profile:
        proc = subprocess.Popen(
            [
                chromium,
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-extensions",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                f"--user-data-dir={profile}",
                f"--window-size={width},900",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            port = _devtools_port(proc, timeout)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
                targets = json.load(r)
            page = next(t for t in targets if t.get("type") == "page")
            cdp = _CDP(page["webSocketDebuggerUrl"])
            try:
                for domain in ("Page", "Runtime", "Log", "Network"):
                    cdp.call(f"{domain}.enable")
                cdp.call("Page.navigate", url=html.resolve().as_uri())
                cdp.wait_for("Page.loadEventFired", timeout)
                state = cdp.call(
                    "Runtime.evaluate",
                    expression=(
                        "JSON.stringify({title: document.title, images: document.images.length, "
                        "page: document.documentElement.scrollWidth, window: window.innerWidth, "
                        "body: document.body.clientWidth, scrolled: Array.from("
                        "document.querySelectorAll('.scroll, table')).filter("
                        "e => e.scrollWidth > e.clientWidth + 1).length, "
                        "loaded: Array.from(document.images).filter("
                        "i => i.complete && i.naturalWidth > 0).length})"
                    ),
                    returnByValue=True,
                )
                seen = json.loads(state["result"]["value"])
                shot = cdp.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
                screenshot.parent.mkdir(parents=True, exist_ok=True)
                screenshot.write_bytes(base64.b64decode(shot["data"]))
                return PageCheck(
                    title=seen["title"],
                    images=seen["images"],
                    images_loaded=seen["loaded"],
                    errors=_errors(cdp.events),
                    screenshot=screenshot,
                    page_width=seen["page"],
                    window_width=seen["window"],
                    body_width=seen["body"],
                    scrolled=seen["scrolled"],
                )
            finally:
                cdp.close()
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _devtools_port(proc: subprocess.Popen[str], timeout: float) -> int:
    assert proc.stderr is not None
    end = time.monotonic() + timeout
    lines = []
    while time.monotonic() < end:
        line = proc.stderr.readline()
        if not line:
            if proc.poll() is not None:
                break
            continue
        lines.append(line)
        m = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
        if m:
            return int(m.group(1))
    raise RuntimeError("Chromium did not start its DevTools endpoint:\n" + "".join(lines[-20:]))
