"""The review page's local server: 127.0.0.1 only, the page, and one endpoint that saves labels.

The standard library's :class:`http.server.ThreadingHTTPServer` serves it: three routes, no
framework needed, and no new dependency (none of pathgls's declared dependencies ships a web
server). Routes:

* ``GET /`` — the page (:func:`pathgls.inspect.review_page.render_review_page`), re-rendered
  on each load with the labels saved so far, so a reload shows them;
* ``POST /label`` — JSON ``{card_id, label, reviewer, note}``; appended to ``RUN/labels.tsv``
  (:func:`pathgls.inspect.review_store.append_label`); answers JSON;
* ``GET /labels`` — the current label of each card, as JSON.

It binds to 127.0.0.1 only and refuses requests whose ``Host`` is not the loopback address it
serves (a web page elsewhere cannot reach it by DNS rebinding), cross-origin POSTs (``Origin``
must be this server's), and POSTs that are not ``application/json`` (a cross-site form cannot
send one without a preflight, which is never answered). The page runs under a Content Security
Policy that allows only its own inline script (by nonce), inline styles and ``data:`` pictures.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from pathgls.errors import PathGLSError, ReviewError

HOST = "127.0.0.1"
#: Largest request body accepted (bytes): a label with a long note.
MAX_BODY = 64 * 1024


@dataclass
class ReviewSite:
    """What the server serves: the run, its review cards, the default reviewer."""

    run_dir: Path
    cards: list[dict[str, Any]]
    title: str
    reviewer: str = ""
    ids: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.ids = {c["id"] for c in self.cards}


def _handler(site: ReviewSite) -> type[BaseHTTPRequestHandler]:
    from pathgls.inspect.review_page import render_review_page
    from pathgls.inspect.review_store import append_label, current_labels

    class Handler(BaseHTTPRequestHandler):
        server_version = "pathgls-review"
        sys_version = ""

        def log_message(self, format: str, *args: Any) -> None:
            return  # quiet: the console shows the saved labels instead

        def _port(self) -> object:
            address = self.server.server_address
            assert isinstance(address, tuple)  # an AF_INET server: (host, port)
            return address[1]

        def _origin(self) -> str:
            return f"http://{HOST}:{self._port()}"

        def _host_ok(self) -> bool:
            port = self._port()
            return self.headers.get("Host", "") in (f"{HOST}:{port}", f"localhost:{port}")

        def _send(
            self, status: int, body: bytes, kind: str, extra: dict[str, str] | None = None
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Referrer-Policy", "no-referrer")
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def _json(self, status: int, data: dict[str, Any]) -> None:
            self._send(status, json.dumps(data).encode(), "application/json")

        def do_GET(self) -> None:
            if not self._host_ok():
                return self._json(403, {"error": "wrong Host"})
            path = self.path.split("?", 1)[0]
            if path == "/labels":
                return self._json(200, {"labels": current_labels(site.run_dir)})
            if path != "/":
                return self._json(404, {"error": "not found"})
            nonce = secrets.token_urlsafe(16)
            try:
                html = render_review_page(
                    cards=site.cards,
                    labels=current_labels(site.run_dir),
                    title=site.title,
                    nonce=nonce,
                    reviewer=site.reviewer,
                )
            except PathGLSError as e:
                return self._json(500, {"error": str(e)})
            csp = (
                f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'unsafe-inline'; "
                "img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
                "frame-ancestors 'none'"
            )
            self._send(
                200, html.encode(), "text/html; charset=utf-8", {"Content-Security-Policy": csp}
            )

        def do_POST(self) -> None:
            if not self._host_ok():
                return self._json(403, {"error": "wrong Host"})
            origin = self.headers.get("Origin")
            if (
                origin is not None
                and origin != self._origin()
                and origin != self._origin().replace(HOST, "localhost")
            ):
                return self._json(403, {"error": "cross-origin request refused"})
            if self.path != "/label":
                return self._json(404, {"error": "not found"})
            if not self.headers.get("Content-Type", "").startswith("application/json"):
                return self._json(415, {"error": "send application/json"})
            try:
                size = int(self.headers.get("Content-Length", "0"))
            except ValueError:
                size = -1
            if not 0 < size <= MAX_BODY:
                return self._json(413, {"error": f"body must be 1 to {MAX_BODY} bytes"})
            try:
                data = json.loads(self.rfile.read(size))
                if not isinstance(data, dict):
                    raise ValueError("not an object")
                card, label = str(data["card_id"]), str(data["label"])
                reviewer = str(data.get("reviewer") or site.reviewer)
                note = str(data.get("note") or "")
            except (ValueError, KeyError, UnicodeDecodeError) as e:
                return self._json(400, {"error": f"bad label request: {e}"})
            try:
                path = append_label(
                    site.run_dir,
                    card_id=card,
                    label=label,
                    reviewer=reviewer,
                    note=note,
                    known=site.ids,
                )
            except ReviewError as e:
                return self._json(400, {"error": str(e)})
            except PathGLSError as e:  # the lock stayed held (another reviewer's disk stalled)
                return self._json(503, {"error": str(e)})
            saved = sum(1 for _ in path.open(encoding="utf-8")) - 1
            return self._json(200, {"ok": True, "saved": saved})

    return Handler


def make_server(site: ReviewSite, *, port: int = 0) -> ThreadingHTTPServer:
    """A server for ``site`` on 127.0.0.1:``port`` (0: a free port; read it from
    ``server.server_address[1]``). Not started: call ``serve_forever``.

    Raises:
        ReviewError: the port is in use, or cannot be bound.
    """
    if not 0 <= port <= 65535:
        raise ReviewError(f"port must be 0 to 65535; got {port}")
    try:
        server = ThreadingHTTPServer((HOST, port), _handler(site))
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            raise ReviewError(
                f"port {port} on {HOST} is in use (another review page?); pass --port 0 for a "
                "free port"
            ) from e
        raise ReviewError(f"cannot listen on {HOST}:{port}: {e}") from e
    server.daemon_threads = True
    return server


def serve_in_thread(
    site: ReviewSite, *, port: int = 0
) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """Start :func:`make_server` in a daemon thread (tests, notebooks); ``server.shutdown()``
    stops it."""
    server = make_server(site, port=port)
    thread = threading.Thread(target=server.serve_forever, name="pathgls-review", daemon=True)
    thread.start()
    return server, thread


def default_reviewer() -> str:
    """The login name, for the labels file (``anonymous`` when there is none)."""
    for var in ("PATHGLS_REVIEWER", "USER", "LOGNAME"):
        if os.environ.get(var):
            return os.environ[var]
    return "anonymous"
