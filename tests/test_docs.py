"""Every command the README and the docs show runs as written, so the docs cannot rot.

Each ``bash`` block of README.md and of the pages listed in docs/index.md is split into
commands (a line ending in ``\\`` continues on the next) and run in order, in one scratch
folder holding the repository's ``examples/``, as a user runs them from the repository root:
``pathgls ...`` through the command-line app (in this process, so the models it loads are
loaded once), with the exit status the command's comment states (``# exits 1: ...``) or 0.
Nothing else is run, and nothing is silently left out: a command marked ``# placeholder: ...``
(your data, an endpoint, weights to download), ``# skip: ...`` (the suite itself, a
maintainer's command) or an install (``pip ...``) is a skipped test that says why, and any
other command fails the test until it is marked. The README's first block, the install and
test lines, is what ``.ci/run`` runs; that is checked too.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pathgls.cli import app

pytestmark = pytest.mark.slow  # it runs the demo and two benchmarks, as the docs do

ROOT = Path(__file__).resolve().parents[1]
# the index lists the pages in reading order; the commands of a page may use the runs the
# README's quickstart made (runs/demo, runs/example)
PAGES = ["README.md"] + [
    f"docs/{name}"
    for name in re.findall(r"\]\(([\w-]+\.md)\)", (ROOT / "docs" / "index.md").read_text())
]
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
_COMMENT = re.compile(r"\s#\s")  # a comment; a bare '#' inside a word (a URL's #model) is not
_EXITS = re.compile(r"exits (\d+)")


@dataclass(frozen=True)
class Command:
    page: str
    line: int
    text: str  # the command without its comment
    comment: str

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    def skip_reason(self) -> str | None:
        for mark in ("placeholder:", "skip:"):
            if self.comment.startswith(mark):
                return f"{mark} {self.comment[len(mark) :].strip()}"
        if self.text.startswith("pip "):
            return "an install (.ci/run runs the README's install lines)"
        return None


def commands(page: str) -> list[Command]:
    text = (ROOT / page).read_text(encoding="utf-8")
    out = []
    for block in _FENCE.finditer(text):
        if block.group(1) != "bash":
            continue
        first = text.count("\n", 0, block.start(2)) + 1
        pending, start = "", first
        for i, raw in enumerate(block.group(2).splitlines()):
            line = raw.rstrip()
            if not pending:
                start = first + i
            if line.endswith("\\"):
                pending += line[:-1] + " "
                continue
            full, pending = pending + line, ""
            if not full.strip():
                continue
            parts = _COMMENT.split(full, maxsplit=1)
            command, comment = parts[0], (parts[1].strip() if len(parts) > 1 else "")
            out.append(Command(page, start, " ".join(command.split()), comment))
    return out


ALL = [c for page in PAGES for c in commands(page)]


def test_the_docs_are_found_and_hold_commands() -> None:
    assert {"README.md", "docs/cli.md", "docs/models.md"} <= set(PAGES)
    assert all((ROOT / p).is_file() for p in PAGES)
    readme = [c for c in ALL if c.page == "README.md"]
    assert readme[0].text == "pip install -e . && pathgls demo"
    assert readme[1].text == 'pip install -e ".[dev,ray]" && pytest'
    quickstart = [c for c in readme if c.text.startswith("pathgls") and not c.skip_reason()]
    assert 3 <= len(quickstart) <= 5, [c.text for c in quickstart]


def test_the_readmes_first_lines_are_what_the_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert 'pip install -e ".[dev,ray]"' in ci
    assert re.search(r"^pathgls demo\b", ci, re.M)
    assert re.search(r"^python3 -m pytest$", ci, re.M)


def test_the_readme_is_short() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150
    assert "pathgls tells you" in " ".join(lines[:12])  # the purpose, at the top


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder that looks like the repository root to the documented commands."""
    root = tmp_path_factory.mktemp("docs-commands")
    for name in ("examples", "notebooks"):
        (root / name).symlink_to(ROOT / name)
    return root


@pytest.mark.parametrize("command", ALL, ids=[c.id for c in ALL])
def test_documented_command_runs(
    command: Command, scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reason = command.skip_reason()
    if reason is not None:
        pytest.skip(f"{command.id} `{command.text}`: {reason}")
    argv = shlex.split(command.text)
    assert argv[0] == "pathgls", (
        f"{command.id}: `{command.text}` is not a pathgls command: run by no test; mark it "
        "`# placeholder: ...` or `# skip: ...` with the reason"
    )
    monkeypatch.chdir(scratch)
    expected = int(m.group(1)) if (m := _EXITS.search(command.comment)) else 0
    res = CliRunner().invoke(app, argv[1:], env={"COLUMNS": "160"})
    assert res.exit_code == expected, (
        f"{command.id}: `{command.text}` exited {res.exit_code}, the docs say {expected}\n"
        f"{res.output[-3000:]}"
    )
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception


# --- Python examples and quoted figures ---------------------------------------------------------


def python_blocks() -> list[tuple[str, int, str]]:
    """(page, line, code) of every ``python`` block of the README and the docs pages."""
    out = []
    for page in PAGES:
        text = (ROOT / page).read_text(encoding="utf-8")
        for block in _FENCE.finditer(text):
            if block.group(1) == "python":
                out.append((page, text.count("\n", 0, block.start(2)) + 1, block.group(2)))
    return out


PYTHON = python_blocks()


@pytest.mark.parametrize("block", PYTHON, ids=[f"{p}:{n}" for p, n, _ in PYTHON])
def test_documented_python_runs(
    block: tuple[str, int, str], scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every Python example runs offline from the repository root, or says on its first line
    (``# placeholder: ...``) what it needs that a fresh clone lacks."""
    page, line, code = block
    first = code.lstrip().splitlines()[0] if code.strip() else ""
    if first.startswith("# placeholder:"):
        pytest.skip(f"{page}:{line}: {first[2:]}")
    monkeypatch.chdir(scratch)
    exec(compile(code, f"{page}:{line}", "exec"), {"__name__": "__doc_example__"})


#: A quoted measurement: a test count, or seconds of wall time.
_FIGURE = re.compile(r"\b\d+ passed\b|\b\d+(?:\.\d+)? s wall\b")
_DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def test_quoted_figures_carry_their_date_and_machine() -> None:
    """A figure the docs quote (suite time, test counts, a wall time) says when and on what it
    was measured, in its paragraph, so a reader sees its age instead of a number that drifted."""
    undated = []
    for page in PAGES:
        text = (ROOT / page).read_text(encoding="utf-8")
        for para in re.split(r"\n\s*\n", text):
            if _FIGURE.search(para) and not (_DATE.search(para) and "core" in para):
                undated.append(f"{page}: {' '.join(para.split())[:120]}")
    assert not undated, "\n".join(undated)
