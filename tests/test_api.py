"""The public API: one table in pathgls/__init__.py; the stage import paths DESIGN.md promises."""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

import pathgls

INIT = Path(pathgls.__file__)

#: Stage packages and modules DESIGN.md names, with the main functions each must export.
STAGES = {
    "pathgls.grounding": ("ground", "open_bag_source", "roi_source"),
    "pathgls.logic": ("logic_score", "score_logic"),
    "pathgls.stability": ("stability_score", "run_stability"),
    "pathgls.hare": ("hare_score", "score_pairs", "build_hare_models"),
    "pathgls.fusion": ("fuse", "gate_scorecard"),
    "pathgls.meta": ("correlate",),
}


def _defined_under(obj: object, module: str) -> bool:
    """True when ``obj`` comes from ``module`` or one of its submodules (values: always)."""
    home = getattr(obj, "__module__", None)
    if not (inspect.isclass(obj) or inspect.isfunction(obj)) or home is None:
        return True
    return home == module or home.startswith(f"{module}.")


def test_all_is_the_table() -> None:
    assert pathgls.__all__ == sorted(["__version__", *pathgls._LAZY])
    assert len(set(pathgls.__all__)) == len(pathgls.__all__)
    assert dir(pathgls) == pathgls.__all__
    assert isinstance(pathgls.__version__, str)


@pytest.mark.parametrize("name", sorted(pathgls._LAZY))
def test_every_public_name_resolves_to_an_object_of_its_module(name: str) -> None:
    module = importlib.import_module(pathgls._LAZY[name])
    obj = getattr(pathgls, name)
    assert obj is getattr(module, name)
    assert _defined_under(obj, module.__name__), f"{name} comes from {obj.__module__}"


def test_unknown_names_are_attribute_errors() -> None:
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        _ = pathgls.not_a_name  # type: ignore[attr-defined]
    assert not hasattr(pathgls, "_Transient")


def test_star_import_gives_every_public_name() -> None:
    namespace: dict[str, object] = {}
    exec("from pathgls import *", namespace)
    assert set(pathgls.__all__) <= set(namespace)


def _type_checking_imports() -> dict[str, str]:
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    (block,) = [
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    ]
    imports: dict[str, str] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.level == 0, ast.unparse(node)
        for alias in node.names:
            # `X as X` marks a re-export for type checkers (and ruff's F401)
            assert alias.asname == alias.name, ast.unparse(node)
            assert alias.name not in imports, f"{alias.name} imported twice"
            imports[alias.name] = node.module or ""
    return imports


def test_type_checking_block_imports_exactly_the_table() -> None:
    assert _type_checking_imports() == pathgls._LAZY


@pytest.mark.parametrize("module", sorted(STAGES))
def test_stage_import_paths_export_their_main_functions(module: str) -> None:
    stage = importlib.import_module(module)
    for name in STAGES[module]:
        obj = getattr(stage, name, None)
        assert callable(obj), f"{module}.{name}"
        assert _defined_under(obj, module)
        if hasattr(stage, "__all__"):
            assert name in stage.__all__, f"{name} missing from {module}.__all__"
        if name in pathgls._LAZY:
            assert getattr(pathgls, name) is obj


def test_import_pathgls_does_not_import_torch() -> None:
    code = (
        "import sys, pathgls\n"
        "names = pathgls.__all__, dir(pathgls), pathgls.__version__, pathgls.ScoreCard\n"
        "print(sorted(m for m in ('torch', 'transformers', 'ray') if m in sys.modules))\n"
    )
    root = str(INIT.parent.parent)  # the tree under test, not another install
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout.strip() == "[]", out.stderr
