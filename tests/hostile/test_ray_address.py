"""A Ray address that cannot be reached (issue 36).

``--executor ray --address 127.0.0.1:1`` (nothing listening) printed no pathgls message for
300 s and ignored SIGTERM: ``ray.init`` retries the head in 30-second rounds and Python's signal
handlers run only between them. Now the head is probed first, within ``run.ray_connect_s``: a TCP
connection and the HTTP/2 preface a gRPC server (a Ray head) answers; an error naming the
address otherwise, and the probe waits in Python, so SIGTERM ends the command at once.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pathgls.config import load_config
from pathgls.errors import ClusterError, ConfigError
from pathgls.runner.ray_connect import host_port, probe_address

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    """A port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Silent:
    """A TCP server that accepts every connection and never answers (not a Ray head)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.accepted = threading.Event()
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            self.accepted.set()


@pytest.fixture
def silent() -> Iterator[_Silent]:
    server = _Silent()
    yield server
    server.sock.close()
    for conn in server.conns:
        conn.close()


@pytest.mark.parametrize(
    ("address", "parsed"),
    [
        ("127.0.0.1:1", ("127.0.0.1", 1)),
        ("ray://head.example:10001", ("head.example", 10001)),
        ("[::1]:6379", ("::1", 6379)),
        ("auto", None),
        ("local", None),
        ("head-without-port", None),
    ],
)
def test_host_and_port_of_an_address(address: str, parsed: tuple[str, int] | None) -> None:
    assert host_port(address) == parsed


@pytest.mark.parametrize("address", ["127.0.0.1:0", "127.0.0.1:70000", "h:port"])
def test_a_port_that_is_no_port_is_refused(address: str) -> None:
    with pytest.raises(ClusterError, match="port must be a number"):
        host_port(address)


def test_nothing_listening_is_refused_naming_the_address() -> None:
    address = f"127.0.0.1:{_free_port()}"
    with pytest.raises(ClusterError) as info:
        probe_address(address, seconds=30)
    assert f"cannot reach the Ray cluster at {address}" in str(info.value)
    assert "refused" in str(info.value).lower()


def test_a_listener_that_never_answers_is_given_up_on(silent: _Silent) -> None:
    address = f"127.0.0.1:{silent.port}"
    with pytest.raises(ClusterError) as info:  # connected, but no HTTP/2 answer: a deadline
        probe_address(address, seconds=0.5)
    assert silent.accepted.is_set()
    assert f"at {address}: no answer within 0.5 s" in str(info.value)
    assert "run.ray_connect_s = 0.5" in str(info.value)


def _answering(reply: bytes) -> tuple[socket.socket, str]:
    """A server answering each connection's first bytes with ``reply``; (socket, address)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = sock.accept()
                conn.recv(64)
                conn.sendall(reply)
                conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return sock, f"127.0.0.1:{sock.getsockname()[1]}"


def test_a_server_that_is_not_grpc_is_refused_and_a_grpc_one_is_tried() -> None:
    web, address = _answering(b"HTTP/1.1 400 Bad Request\r\n\r\n")
    with web, pytest.raises(ClusterError, match=f"at {address}: .* not a Ray head"):
        probe_address(address, seconds=5)
    settings_frame = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # what a gRPC server sends
    grpc, address = _answering(settings_frame)
    with grpc:
        probe_address(address, seconds=5)


def test_the_connect_deadline_is_a_setting_with_a_range() -> None:
    assert load_config().run.ray_connect_s == 30.0
    assert load_config(run={"ray_connect_s": 2}).run.ray_connect_s == 2
    for bad in (0, -1, float("inf")):
        with pytest.raises(ConfigError, match="ray_connect_s"):
            load_config(run={"ray_connect_s": bad})


def _benchmark(src: Path, out: Path, address: str, config: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pathgls",
            "benchmark",
            str(src),
            "--out",
            str(out),
            "--subject",
            "captioner",
            "--executor",
            "ray",
            "--address",
            address,
            "--config",
            str(config),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=out.parent,
        env=dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="400"),
    )


@pytest.fixture
def one_roi(tmp_path: Path, sample_rois: tuple[Path, ...]) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    (src / "roi.png").symlink_to(sample_rois[0].resolve())
    return src


def test_the_command_names_an_address_nothing_listens_on(one_roi: Path, tmp_path: Path) -> None:
    pytest.importorskip("ray")
    config = tmp_path / "c.toml"
    config.write_text("[run]\nray_connect_s = 600\n")  # refused at once, whatever the deadline
    address = f"127.0.0.1:{_free_port()}"
    proc = _benchmark(one_roi, tmp_path / "run", address, config)
    output, _ = proc.communicate(timeout=300)
    assert proc.returncode == 2, output
    assert f"error: cannot reach the Ray cluster at {address}" in " ".join(output.split())
    assert "Traceback" not in output


def test_sigterm_stops_a_command_waiting_for_a_head(
    one_roi: Path, tmp_path: Path, silent: _Silent
) -> None:
    pytest.importorskip("ray")
    config = tmp_path / "c.toml"
    config.write_text("[run]\nray_connect_s = 600\n")
    out = tmp_path / "run"
    proc = _benchmark(one_roi, out, f"127.0.0.1:{silent.port}", config)
    try:
        assert silent.accepted.wait(240), "the command never tried the address"
        proc.send_signal(signal.SIGTERM)  # while ray.init waits for the head
        output, _ = proc.communicate(timeout=120)  # before: held until Ray gave up (minutes)
    finally:
        proc.kill()
    assert proc.returncode == 130, output[-3000:]
    assert json.loads((out / "manifest.json").read_text())["status"] == "interrupted"
