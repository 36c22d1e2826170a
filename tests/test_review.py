"""The review page: its cards, the label file (lock, last label wins), the local server's
refusals, and the labels reaching ``calibrate --risk``."""

from __future__ import annotations

import csv
import http.client
import json
import socket
import threading
from pathlib import Path

import pytest
from review_fixtures import card, write_review_run
from typer.testing import CliRunner

from pathgls.cli import app
from pathgls.errors import ReviewError
from pathgls.inspect.review_page import review_cards
from pathgls.inspect.review_server import ReviewSite, make_server, serve_in_thread
from pathgls.inspect.review_store import append_label, current_labels
from pathgls.meta.labels import read_review_labels
from pathgls.runner.store import ResultsStore


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return write_review_run(tmp_path / "run")


def _site(run: Path) -> ReviewSite:
    return ReviewSite(run_dir=run, cards=review_cards(run_dir=run), title="t", reviewer="rv")


def _request(port: int, method: str, path: str, body: object = None, **headers: str):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    data = (
        None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    )
    hdrs = {"Content-Type": "application/json", **headers}
    conn.request(method, path, body=data, headers=hdrs)
    res = conn.getresponse()
    payload = res.read()
    conn.close()
    return res.status, payload, dict(res.getheaders())


def _rows(run: Path) -> list[dict[str, str]]:
    with (run / "labels.tsv").open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def test_review_cards_are_the_review_route_worst_first(run: Path) -> None:
    cards = review_cards(run_dir=run)
    assert [c["id"] for c in cards] == [f"replay:a/rev{i}" for i in range(4)]
    assert [c["trust"] for c in cards] == ["0.550", "0.600", "0.650", "0.700"]
    assert set(cards[0]["modules"]) == {"grounding", "logic", "stability"}
    assert cards[0]["reasons"]  # why it is in review


def test_a_run_without_review_cards_is_a_clear_error(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "run")
    store.write_card(card("good", (0.95, 0.95, 0.95)))
    store.write_card(card("bad", (0.1, 0.1, 0.1)))
    with pytest.raises(ReviewError, match=r"no card is in the review route \(1 deploy, 1 reject\)"):
        review_cards(run_dir=tmp_path / "run")
    res = CliRunner().invoke(app, ["review", str(tmp_path / "run"), "--port", "0"])
    assert res.exit_code != 0 and "nothing to review" in res.output


def test_labels_append_and_the_last_label_wins(run: Path) -> None:
    known = {c["id"] for c in review_cards(run_dir=run)}
    append_label(run, card_id="replay:a/rev0", label="unacceptable", reviewer="a\tb", known=known)
    append_label(run, card_id="replay:a/rev1", label="acceptable", reviewer="x", note="l1\nl2")
    append_label(run, card_id="replay:a/rev0", label="acceptable", reviewer="y", known=known)
    append_label(run, card_id="replay:a/rev2", label="acceptable", reviewer="y")
    append_label(run, card_id="replay:a/rev2", label="skip", reviewer="y")
    rows = _rows(run)
    assert [r["card_id"] for r in rows] == [
        "replay:a/rev0",
        "replay:a/rev1",
        "replay:a/rev0",
        "replay:a/rev2",
        "replay:a/rev2",
    ]
    assert rows[0]["reviewer"] == "a b" and rows[1]["note"] == "l1 l2"  # one line per label
    labels = read_review_labels(run / "labels.tsv")
    assert labels.values == {"replay:a/rev0": 1.0, "replay:a/rev1": 1.0}
    assert labels.relabelled == ("replay:a/rev0", "replay:a/rev2")
    assert labels.skipped == ("replay:a/rev2",)
    assert "the last label counts" in labels.notes()[0]
    assert current_labels(run)["replay:a/rev2"] == "skip"
    with pytest.raises(ReviewError, match="no review card"):
        append_label(run, card_id="replay:a/good", label="acceptable", reviewer="y", known=known)
    with pytest.raises(ReviewError, match="not one of"):
        append_label(run, card_id="replay:a/rev0", label="fine", reviewer="y")


def test_two_reviewers_at_once_lose_nothing(run: Path) -> None:
    """Two reviewers (threads through the server, and a second writer process) label at once."""
    import os
    import subprocess
    import sys

    import pathgls

    root = str(Path(pathgls.__file__).resolve().parents[1])  # this checkout's pathgls
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    server, _ = serve_in_thread(_site(run))
    port = server.server_address[1]
    other = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from pathgls.inspect.review_store import append_label\n"
            "for i in range(30): append_label(sys.argv[1], card_id='replay:a/rev3', "
            "label='unacceptable', reviewer='proc', note=str(i))",
            str(run),
        ],
        env=env,
    )
    errors: list[object] = []

    def reviewer(name: str) -> None:
        for i in range(15):
            status, body, _ = _request(
                port,
                "POST",
                "/label",
                {
                    "card_id": f"replay:a/rev{i % 3}",
                    "label": "acceptable",
                    "reviewer": name,
                    "note": str(i),
                },
            )
            if status != 200:
                errors.append(body)

    try:
        threads = [threading.Thread(target=reviewer, args=(n,)) for n in ("ann", "bob")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert other.wait(timeout=120) == 0
    finally:
        server.shutdown()
        server.server_close()
    assert not errors
    rows = _rows(run)
    assert len(rows) == 60
    for who, n in (("ann", 15), ("bob", 15), ("proc", 30)):
        notes = sorted(int(r["note"]) for r in rows if r["reviewer"] == who)
        assert notes == list(range(n)), who


def test_the_server_saves_labels_and_refuses_what_it_should(run: Path) -> None:
    server, _ = serve_in_thread(_site(run))
    port = server.server_address[1]
    try:
        status, body, headers = _request(port, "GET", "/")
        assert status == 200
        html = body.decode()
        csp = headers["Content-Security-Policy"]
        assert "default-src 'none'" in csp and "script-src 'nonce-" in csp
        # hostile report text is escaped: no tag of it survives, the page has one script
        assert "<script>window.__pwned" not in html and 'onerror="window' not in html
        assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in html
        assert html.count("<script") == 1 and "http://" not in html and "https://" not in html
        ok = {"card_id": "replay:a/rev0", "label": "acceptable", "reviewer": "ann"}
        assert _request(port, "POST", "/label", ok)[0] == 200
        status, body, _ = _request(port, "POST", "/label", {**ok, "card_id": "nope"})
        assert status == 400 and b"no review card" in body
        assert _request(port, "POST", "/label", {**ok, "label": "maybe"})[0] == 400
        assert (
            _request(
                port,
                "POST",
                "/label",
                b"[1",
            )[0]
            == 400
        )
        assert _request(port, "POST", "/label", ok, **{"Content-Type": "text/plain"})[0] == 415
        assert _request(port, "POST", "/label", ok, Host="evil.example:80")[0] == 403
        assert _request(port, "POST", "/label", ok, Origin="http://evil.example")[0] == 403
        assert _request(port, "GET", "/", Host="rebind.example")[0] == 403
        assert _request(port, "GET", "/../labels.tsv")[0] == 404
        status, body, _ = _request(port, "GET", "/labels")
        assert json.loads(body) == {"labels": {"replay:a/rev0": "acceptable"}}
        status, body, _ = _request(port, "GET", "/")
        assert 'data-id="replay:a/rev0" data-label="acceptable"' in body.decode()
    finally:
        server.shutdown()
        server.server_close()
    assert [r["label"] for r in _rows(run)] == ["acceptable"]


def test_a_port_in_use_is_a_clear_error(run: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        with pytest.raises(ReviewError, match=f"port {port} on 127.0.0.1 is in use"):
            make_server(_site(run), port=port)
        res = CliRunner().invoke(app, ["review", str(run), "--port", str(port)])
        assert res.exit_code != 0 and "is in use" in res.output


def test_review_labels_reach_calibrate_risk(run: Path, tmp_path: Path) -> None:
    """labels.tsv (with a relabel and an unknown id) calibrates; nothing certifiable on 4 rows."""
    for cid, word in (
        ("replay:a/rev0", "unacceptable"),
        ("replay:a/rev1", "acceptable"),
        ("replay:a/rev0", "acceptable"),
        ("ghost/item", "acceptable"),
    ):
        append_label(run, card_id=cid, label=word, reviewer="ann")
    out = tmp_path / "gate.toml"
    res = CliRunner().invoke(
        app,
        [
            "calibrate",
            str(run),
            "--labels",
            str(run / "labels.tsv"),
            "--risk",
            "0.1",
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "1 card(s) labelled more than once; the last label counts" in res.output
    assert "1 label(s) for no card of this run, ignored: ghost/item" in res.output
    # review labels are the review route's, not a random sample of the run: said
    assert "not a random sample of the run" in " ".join(res.output.split())
    assert "NOT certified" in res.output and "no deploy threshold written" in res.output
    import tomllib

    cfg = tomllib.loads(out.read_text(encoding="utf-8"))
    assert "deploy" not in cfg.get("gate", {})
    cert = cfg["calibration"]["certificate"]
    assert cert["certified"] is False and cert["n"] == 2 and cert["subjects"] == ["replay:a"]
