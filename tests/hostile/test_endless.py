"""Endless and enormous inputs, and request headers (issue 36): every reader is bounded before
it reads, every refusal names its cap and how to raise it.

``pathgls logic /dev/zero`` read the stream until a 6 GB limit stopped it; a 60 GB sparse report
ended in ``MemoryError``; a report nested 200,000 brackets deep ran past 200 s; a 100,000-row
table had not finished after 300 s; a server announcing 5,000 bytes and closing after 100 was
reported as an unreadable answer; an API key holding CR LF and a second header, or a character
outside Latin-1, ended as an "unexpected" failure.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pathgls.errors import InputTooLargeError, LLMError, NotTextError, TableError
from pathgls.io.limits import Limits, limits, nesting_depth, read_capped
from pathgls.io.sniff import read_text_bytes
from pathgls.io.tables import read_table
from pathgls.llm.client import ChatClient, header_value_problem

ROOT = Path(__file__).resolve().parents[2]


def test_caps_come_from_the_environment_and_bad_values_are_named() -> None:
    assert limits({}) == Limits()
    assert limits({"PATHGLS_MAX_ROWS": "1_000"}).rows == 1000
    with pytest.raises(InputTooLargeError, match="PATHGLS_MAX_NESTING"):
        limits({"PATHGLS_MAX_NESTING": "-3"})


def test_a_sparse_60_gb_report_is_refused_by_its_size(tmp_path: Path) -> None:
    path = tmp_path / "huge.txt"
    with path.open("wb") as fh:
        fh.write(b"Diagnosis: carcinoma.\n")
        fh.truncate(60 << 30)  # sparse: nothing is written
    with pytest.raises(InputTooLargeError, match=r"PATHGLS_MAX_TEXT_BYTES") as e:
        read_text_bytes(path)
    assert "64,424,509,440 bytes" in str(e.value)
    with pytest.raises(TableError, match="PATHGLS_MAX_TABLE_BYTES"):
        read_table(path)


def test_an_endless_device_is_refused_after_its_head() -> None:
    with pytest.raises(NotTextError, match="NUL bytes"):
        read_text_bytes("/dev/zero")


def test_an_endless_text_stream_stops_at_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATHGLS_MAX_TEXT_BYTES", str(1 << 20))
    done = subprocess.Popen(["yes", "Invasive carcinoma."], stdout=subprocess.PIPE)
    try:
        assert done.stdout is not None
        with pytest.raises(InputTooLargeError, match=r"goes on past the cap of 1,048,576 bytes"):
            read_capped(done.stdout, what="report", where="a pipe")
    finally:
        done.kill()
        done.wait()


def test_deep_nesting_is_measured_in_linear_time_and_refused() -> None:
    assert nesting_depth("a (b [c {d}] e) f") == 3
    assert nesting_depth(")))(((") == 3
    deep = "Carcinoma " + "(" * 200_000 + ")" * 200_000
    t0 = time.process_time()
    assert nesting_depth(deep) == 200_000
    assert time.process_time() - t0 < 5  # linear: milliseconds; a generous bound on 2 cores


def test_a_report_nested_200000_deep_is_refused_by_the_cli(tmp_path: Path) -> None:
    path = tmp_path / "nested.txt"
    path.write_text("Diagnosis: carcinoma " + "(" * 200_000 + ")" * 200_000 + ".\n")
    done = subprocess.run(
        [sys.executable, "-m", "pathgls", "logic", str(path)],
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert "200,000 deep" in done.stderr and "PATHGLS_MAX_NESTING" in done.stderr


def test_a_table_over_the_row_cap_is_refused_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "rows.tsv"
    path.write_text("item_id\treport\n" + "".join(f"r{i}\tCarcinoma.\n" for i in range(1001)))
    monkeypatch.setenv("PATHGLS_MAX_ROWS", "1000")
    with pytest.raises(InputTooLargeError, match=r"more than 1,000 rows.*PATHGLS_MAX_ROWS"):
        read_table(path)
    monkeypatch.setenv("PATHGLS_MAX_ROWS", "1001")
    assert len(read_table(path).rows) == 1001


def test_a_table_cell_nested_too_deep_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.tsv"
    path.write_text("item_id\treport\na\t" + "[" * 500 + "\n")
    with pytest.raises(InputTooLargeError, match="500 deep"):
        read_table(path)


def _read_request(conn: socket.socket) -> None:
    """Read one HTTP request, headers and its Content-Length body."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip() or 0)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return
        body += chunk


@contextlib.contextmanager
def _raw_server(mode: str) -> Iterator[str]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(5)
    stop = threading.Event()

    def run() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            _read_request(conn)  # all of it: unread bytes at close would reset the connection
            try:
                if mode == "chunked":
                    conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                    while not stop.is_set():
                        conn.sendall(b"1\r\n \r\n")
                        time.sleep(0.05)
                else:
                    head = b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n"
                    conn.sendall(head + b"x" * 100)
                    conn.shutdown(socket.SHUT_WR)  # a clean end of the stream, 4,900 bytes short
            except OSError:
                pass
            finally:
                conn.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.getsockname()[1]}/v1"
    finally:
        stop.set()
        srv.close()


def test_a_chunked_body_that_never_ends_is_cut_at_the_deadline() -> None:
    with _raw_server("chunked") as url:
        client = ChatClient(url, "m", timeout_s=1.5, max_retries=0)
        t0 = time.monotonic()
        with pytest.raises(LLMError, match=r"timed out after 1\.5 s"):
            client.complete([{"role": "user", "content": "x"}])
        assert time.monotonic() - t0 < 30  # cut at the deadline, not at the body's end


def test_a_body_shorter_than_its_content_length_is_named() -> None:
    with (
        _raw_server("short") as url,
        pytest.raises(LLMError, match=r"cut short.*announced 5000 bytes.*sent 100"),
    ):
        ChatClient(url, "m", max_retries=0).complete([{"role": "user", "content": "x"}])


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("sk-abc\r\nX-Evil: 1", "a line break at character 7"),
        ("sk-ключ", "outside Latin-1 (U+043A)"),
        ("sk-\x01", "a control character (U+0001)"),
    ],
)
def test_a_header_value_that_cannot_be_sent_is_named_never_shown(
    value: str, words: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert words in (header_value_problem(value) or "")
    monkeypatch.setenv("OPENAI_API_KEY", value)
    client = ChatClient("http://127.0.0.1:9/v1", "m", api_key_env="OPENAI_API_KEY")
    with pytest.raises(LLMError, match=r"\$OPENAI_API_KEY cannot be sent") as e:
        client.complete([{"role": "user", "content": "x"}])
    assert words in str(e.value)
    assert "X-Evil" not in str(e.value) and "ключ" not in str(e.value)


def test_ordinary_keys_pass() -> None:
    assert header_value_problem("sk-proj-AbC_123.xyz") is None
    assert header_value_problem("") is None


@pytest.mark.timeout(60)  # quadratic scoping took 176 s for 6,000 entities in one clause
@pytest.mark.parametrize("joint", [", ", "; ", " "])
def test_six_thousand_identical_entities_are_scoped(joint: str) -> None:
    import json

    from pathgls.text.llm_extractor import LLMExtractor
    from pathgls.text.scope import infer_scopes
    from pathgls.text.sections import parse_report

    n = 6000
    parsed = parse_report("Left breast: " + joint.join(["carcinoma"] * n) + ".")
    reply = json.dumps({"entities": [{"text": "carcinoma", "type": "pathological_diagnosis"}] * n})

    class Client:
        def complete(self, messages: object, **options: object) -> str:
            return reply

    entities = LLMExtractor(client=Client()).extract(parsed.text)
    assert len(entities) == n
    scopes = infer_scopes(parsed, entities).entity_scopes
    assert len(scopes) == n
    assert len({repr(s) for s in scopes}) == 1  # identical entities, one scope
