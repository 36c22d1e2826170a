"""Property-based fuzzing of the parsers that read user input (issue 14).

Every parser either returns a value or raises its own specific error (never a bare
``ValueError``, ``KeyError``, ``RecursionError`` or a traceback), and the secret redaction
hides whatever secret a generated URL carries. Bounded to well under 60 s in all.
"""

from __future__ import annotations

import json
import re
import string
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pathgls.errors import BagError, ConfigError, ReplayFileError, TableError
from pathgls.features.bags import BagMeta
from pathgls.io.names import safe_stem
from pathgls.io.redact import redact
from pathgls.io.tables import read_table
from pathgls.subjects.replay import read_replay_file
from pathgls.text.clean import clean_report

FUZZ = settings(
    max_examples=150,
    deadline=None,
    database=None,  # nothing written into the repository
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
CELL = st.text(alphabet=string.ascii_letters + string.digits + " .,;:-()", max_size=20)


@FUZZ
@given(st.text(alphabet='ab\t"\n\r,\ufeff x', max_size=200))
def test_table_reader_returns_a_table_or_a_table_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "t.tsv"
    path.write_text(text, encoding="utf-8", newline="")
    try:
        table = read_table(path)
    except TableError as e:
        assert str(path) in str(e)
        return
    assert len(table.rows) == len(table.lines)
    assert all(set(row) == set(table.columns) for row in table.rows)


@FUZZ
@given(
    st.integers(1, 4).flatmap(
        lambda n: st.tuples(
            st.lists(CELL.filter(str.strip), min_size=n, max_size=n, unique=True),
            st.lists(st.lists(CELL, min_size=n, max_size=n), max_size=8),
        )
    )
)
def test_table_reader_keeps_every_row_of_a_clean_table(
    tmp_path: Path, table: tuple[list[str], list[list[str]]]
) -> None:
    header, rows = table
    rows = [r for r in rows if any(c.strip() for c in r) or len(r) == 1]
    rows = [r for r in rows if "".join(r)]  # an all-empty row is a blank line
    path = tmp_path / "t.tsv"
    path.write_text(
        "\ufeff" + "\n".join("\t".join(r) for r in [header, *rows]) + "\n", encoding="utf-8"
    )
    got = read_table(path)
    assert list(got.columns) == [h.strip() for h in header]
    assert [[row[c] for c in got.columns] for row in got.rows] == rows
    assert got.lines == list(range(2, 2 + len(rows)))


@FUZZ
@given(st.one_of(st.binary(max_size=300), st.text(max_size=300)))
def test_report_cleaner_never_fails_on_any_input(raw: bytes | str) -> None:
    text, warnings = clean_report(raw)
    assert isinstance(text, str) and all(isinstance(w, str) for w in warnings)
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", text)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=10,
)


@FUZZ
@given(
    st.one_of(
        st.text(max_size=80),
        st.dictionaries(
            st.sampled_from(["item_id", "condition", "report", "text", "model", "x"]), JSON_VALUES
        ).map(json.dumps),
        st.integers(1, 5000).map(lambda n: "[" * n + "]" * n),
    )
)
def test_replay_parser_returns_records_or_names_the_line(tmp_path: Path, line: str) -> None:
    path = tmp_path / "r.jsonl"
    good = '{"item_id": "a", "condition": "original", "report": "ok"}'
    path.write_text(good + "\n" + line.replace("\n", " ") + "\n", encoding="utf-8")
    try:
        records = read_replay_file(path=path)
    except ReplayFileError as e:
        assert e.line == 2 and "line 2" in str(e)
        return
    assert all(isinstance(r, str) for r in records.reports.values())


ATTR_VALUES = st.one_of(
    st.integers(-5, 5000),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.booleans(),
    st.binary(max_size=8),
)
GOOD_ATTRS = {
    "encoder": "hf:tiny",
    "patch_size": 512,
    "patch_size_level0": 1024,
    "target_magnification": 20.0,
    "target_mpp": 0.5,
    "level0_magnification": 40.0,
    "level0_mpp": 0.25,
    "window_size": 224,
    "window_stride": 224,
    "slide_name": "s",
    "slide_sha256": "ab" * 32,
    "pathgls_version": "0.1.0",
    "complete": True,
}


@FUZZ
@given(st.dictionaries(st.sampled_from(sorted(GOOD_ATTRS)), ATTR_VALUES, max_size=4))
def test_bag_attributes_parse_or_raise_a_bag_error_naming_one(changes: dict) -> None:
    attrs = {
        **GOOD_ATTRS,
        **{k: np.bytes_(v) if isinstance(v, bytes) else v for k, v in changes.items()},
    }
    try:
        meta = BagMeta.from_attrs(attrs)
    except BagError as e:
        assert any(repr(k) in str(e) for k in changes), str(e)
        return
    assert isinstance(meta.patch_size, int) and meta.patch_size > 0
    assert np.isfinite(meta.target_mpp) and meta.target_mpp > 0


SECRET = st.text(alphabet=string.ascii_letters + string.digits + "_~.", min_size=6, max_size=16)
HOST = st.sampled_from(["h", "127.0.0.1:8000", "api.example.org", "[::1]:9"])


@FUZZ
@given(
    SECRET,
    SECRET,
    HOST,
    st.sampled_from(["api_key", "token", "X-Api-Key", "access_token", "sig"]),
    st.sampled_from(["", "/v1", "/v1/chat/completions"]),
)
def test_subject_specs_parse_and_never_show_their_secrets(
    user: str, password: str, host: str, key: str, path: str
) -> None:
    from pathgls.llm.client import ChatClient
    from pathgls.subjects.openai import parse_openai_argument

    canary = f"Z{password}"
    spec = f"http://{user}:{canary}@{host}{path}?mode=1&{key}={canary}#llava"
    base_url, model = parse_openai_argument(spec)
    assert model == "llava"
    shown = redact(f"openai:{spec}")
    assert canary not in shown and user not in shown.split("@")[0].split("//")[1]
    assert "mode=1" in shown and host in shown
    client = ChatClient(base_url, model)
    assert canary not in repr(client) and canary not in client.shown_url
    assert client.url.endswith(f"/chat/completions?mode=1&{key}={canary}")
    assert "@" not in client.url  # credentials travel as Basic auth, never in the URL
    assert re.fullmatch(r"[A-Za-z0-9._-]+", safe_stem(shown))


@FUZZ
@given(st.lists(st.text(min_size=1, max_size=12), min_size=2, max_size=6, unique=True))
def test_safe_stems_are_safe_and_distinct(names: list[str]) -> None:
    stems = [safe_stem(n) for n in names]
    assert len(set(stems)) == len(names)
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", s) and not s.startswith(".") for s in stems)


@FUZZ
@given(st.text(max_size=40))
def test_spec_parser_refuses_with_a_config_error(argument: str) -> None:
    from pathgls.subjects.openai import parse_openai_argument

    try:
        base_url, model = parse_openai_argument(argument)
    except ConfigError as e:
        assert "openai:<base_url>#<model>" in str(e)
        return
    assert base_url and model and base_url == base_url.strip() and "#" not in base_url


pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
