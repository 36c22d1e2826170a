"""A chat-completions endpoint on 127.0.0.1 that plays a script, shared by the HTTP tests."""

from __future__ import annotations

import contextlib
import json
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer: HTTP status, body (a dict is sent as JSON) and a delay before it."""

    status: int = 200
    body: Any = None
    delay_s: float = 0.0
    echo_auth: bool = False  # put the request's Authorization header into the body
    drip_s: float = 0.0  # send the body one byte at a time, this many seconds apart


def chat(content: str, *, model: str = "tiny") -> Reply:
    """A 200 chat-completion answer with ``content``."""
    return Reply(
        body={
            "id": "cmpl-1",
            "object": "chat.completion",
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
        }
    )


@dataclass
class ChatServer:
    """The script (``default`` when it runs out) and every request received."""

    url: str = ""
    script: deque[Reply] = field(default_factory=deque)
    default: Reply | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    sent: list[int] = field(default_factory=list)  # body bytes written, per dripped reply

    def play(self, *replies: Reply | str) -> None:
        """Queue replies; a string is a 200 answer with that content."""
        self.script.extend(r if isinstance(r, Reply) else chat(r) for r in replies)

    def fail(self, status: int, message: str) -> None:
        """Queue an error answer."""
        self.script.append(Reply(status, {"error": {"message": message}}))

    @property
    def payloads(self) -> list[dict[str, Any]]:
        """The JSON bodies of the requests, in order."""
        return [r["json"] for r in self.requests]


def _handler(server: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            server.requests.append(
                {"path": self.path, "headers": dict(self.headers), "json": json.loads(body)}
            )
            if server.script:
                reply = server.script.popleft()
            else:
                reply = server.default or Reply(500, "script exhausted")
            server.stop.wait(reply.delay_s)  # interruptible, so teardown is never held up
            data = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
            if reply.echo_auth:
                data = json.dumps({"error": {"message": f"bad {self.headers['Authorization']}"}})
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data.encode())))
                self.end_headers()
                if reply.drip_s:
                    server.sent.append(0)
                    for byte in data.encode():
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        server.sent[-1] += 1
                        if server.stop.wait(reply.drip_s):
                            return
                else:
                    self.wfile.write(data.encode())
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                pass

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

    return Handler


@contextlib.contextmanager
def chat_server() -> Iterator[ChatServer]:
    """Start a server on an ephemeral port; stopped (and its waits interrupted) on exit."""
    state = ChatServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    httpd.block_on_close = False
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield state
    finally:
        state.stop.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
