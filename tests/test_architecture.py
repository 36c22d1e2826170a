"""The package's shape: one folder per stage, floors that only look down, no import cycles.

The floors are written in ``docs/architecture.md``; a module may import modules of its own
floor and of lower floors, at the top of the file or inside a function alike.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import networkx as nx

import pathgls

PACKAGE = Path(pathgls.__file__).resolve().parent
DOCS = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"

#: Lowest first. Each entry is a top-level module or package of pathgls.
FLOORS: list[tuple[str, ...]] = [
    (
        "types",
        "errors",
        "registry",
        "evidence",
        "jsontext",
        "reasons",
        "version",
        "numeric",
        "modules",
        "schema",
    ),
    ("config",),
    ("io",),
    ("hub",),
    ("llm",),
    ("tiling",),
    ("encoders",),
    ("features",),
    ("text",),
    ("logic",),
    ("nli",),
    ("attacks",),
    ("subjects",),
    ("generation",),
    ("grounding",),
    ("stability",),
    ("hare",),
    ("baselines",),
    ("fusion",),
    ("meta",),
    ("runner",),
    ("inspect",),
    ("cli",),
    ("testing",),
]
FLOOR = {name: i for i, names in enumerate(FLOORS) for name in names}
#: The package's front door and entry point sit above every floor.
TOP = {"__init__", "__main__"}


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        name = ".".join(p for p in parts if p != "__init__") or "__init__"
        out[name] = path
    return out


def _imports(path: Path, module: str) -> set[str]:
    """Every pathgls module ``path`` imports (relative imports resolved), anywhere in it.

    ``import pathgls`` and ``from pathgls import X`` (X not a module) import the front door,
    ``__init__``; ``from pathgls import types`` imports ``types`` only.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules = _modules()
    package = module.split(".")[:-1] if path.name != "__init__.py" else module.split(".")
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("pathgls")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join(["pathgls", *base, *(node.module or "").split(".")]).strip(".")
            else:
                target = node.module or ""
            if target.startswith("pathgls"):
                named = {f"{target}.{a.name}" for a in node.names}
                found |= named
                if target != "pathgls" or not {_name(m) for m in named} <= modules.keys():
                    found.add(target)
    return {_name(m) for m in found if _name(m) in modules} - {module}


def _name(dotted: str) -> str:
    """``pathgls.a.b`` → ``a.b``; the package itself → ``__init__``."""
    return "__init__" if dotted == "pathgls" else dotted.removeprefix("pathgls.")


def _top(module: str) -> str:
    return module.split(".")[0]


def test_every_stage_is_on_a_floor() -> None:
    stages = {_top(m) for m in _modules()} - TOP
    assert stages == set(FLOOR), f"unplaced: {stages - set(FLOOR)}; gone: {set(FLOOR) - stages}"


def test_lower_floors_never_import_higher_ones() -> None:
    violations = []
    for module, path in _modules().items():
        if _top(module) in TOP:
            continue
        for imported in _imports(path, module):
            if _top(imported) in TOP:
                violations.append(f"{module} imports pathgls.{imported}")
            elif FLOOR[_top(imported)] > FLOOR[_top(module)]:
                violations.append(
                    f"{module} (floor {FLOOR[_top(module)]}) imports pathgls.{imported}"
                )
    assert not violations, "\n".join(sorted(violations))


def test_no_import_cycles_between_modules() -> None:
    graph = nx.DiGraph()
    for module, path in _modules().items():
        for imported in _imports(path, module):
            # a package's __init__ re-exporting its modules is not a cycle of theirs
            if not imported.startswith(module + ".") and not module.startswith(imported + "."):
                graph.add_edge(module, imported)
    cycles = list(nx.simple_cycles(graph))
    assert not cycles, cycles[:5]


def test_the_runtime_never_imports_the_test_helpers() -> None:
    users = [
        m
        for m, p in _modules().items()
        if _top(m) not in ("testing", *TOP) and any(_top(i) == "testing" for i in _imports(p, m))
    ]
    assert not users


def test_each_stage_package_says_what_it_owns_and_may_import() -> None:
    for name in FLOOR:
        init = PACKAGE / name / "__init__.py"
        if not init.exists():
            continue  # a single-module stage (types.py, logic is a package, fusion.py, ...)
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert len(doc) > 80, f"pathgls/{name}/__init__.py needs a docstring saying what it owns"
        assert "May import" in doc or "may import" in doc, f"pathgls/{name}: say what it may import"


def _documented_floors() -> list[tuple[str, ...]]:
    """The floor table of docs/architecture.md, lowest first: each row's stages, bare names."""
    rows = []
    for line in DOCS.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and re.fullmatch(r"core|\d+", cells[0]):
            stages = re.findall(r"`([A-Za-z_]+)(?:\.py|/)`", cells[1])
            rows.append((cells[0], tuple(stages)))
    numbers = [n for n, _ in rows]
    assert numbers == ["core", *map(str, range(1, len(rows)))], f"floor numbers: {numbers}"
    return [stages for _, stages in rows]


def test_the_documented_floors_are_the_tested_ones() -> None:
    documented = [set(stages) for stages in _documented_floors()]
    assert documented == [set(stages) for stages in FLOORS], (
        "docs/architecture.md's floor table and FLOORS disagree"
    )


def test_importing_a_name_from_the_package_root_is_seen(tmp_path: Path) -> None:
    source = tmp_path / "probe.py"
    source.write_text(
        "from pathgls import __version__\nfrom pathgls import types\n", encoding="utf-8"
    )
    assert _imports(source, "features.probe") == {"__init__", "types"}
    source.write_text("from pathgls import types, errors\n", encoding="utf-8")
    assert _imports(source, "features.probe") == {"types", "errors"}
