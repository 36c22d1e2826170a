"""What setup.cfg declares is what pathgls imports, no more and no less.

A dependency nothing imports (torchvision was one) costs every user its download; an import
nothing declares (tifffile was one: imported by the JPEG-tile reader, declared only for the
tests) fails or silently degrades on a clean install. Optional features import their extra
lazily and say how to install it.
"""

from __future__ import annotations

import ast
import configparser
import importlib.metadata
import os
import re
import subprocess
import sys
from pathlib import Path

import pathgls

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(pathgls.__file__).resolve().parent
#: Declared but not imported by name, and why.
NOT_IMPORTED = {"openslide-bin": "ships the OpenSlide C library that openslide-python loads"}
#: Imported only by an optional feature, from the extra that provides it.
OPTIONAL = {"ray": "ray"}


def _names(block: str) -> set[str]:
    names = set()
    for line in block.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.add(re.split(r"[<>=!~\[; ]", line, maxsplit=1)[0].lower().replace("_", "-"))
    return names


def _setup() -> configparser.ConfigParser:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    return cfg


def _imports(*, testing: bool = False) -> dict[str, set[str]]:
    """Third-party top-level modules imported by the runtime package (or by its shipped test
    helpers, ``pathgls/testing/``), with the files."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if ("testing" in path.relative_to(PACKAGE).parts) != testing:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                mods = [node.module]
            else:
                continue
            for mod in mods:
                top = mod.split(".")[0]
                if top != "pathgls" and top not in sys.stdlib_module_names:
                    found.setdefault(top, set()).add(path.name)
    return found


def _distributions(module: str, found: dict[str, list[str]]) -> set[str]:
    return {d.lower().replace("_", "-") for d in found.get(module, [])}


def test_every_import_is_declared_and_every_declaration_imported() -> None:
    cfg = _setup()
    required = _names(cfg["options"]["install_requires"])
    extras = {k: _names(v) for k, v in cfg["options.extras_require"].items()}
    imported = _imports()
    installed = importlib.metadata.packages_distributions()  # module -> distributions
    used: set[str] = set()
    for module, files in sorted(imported.items()):
        dists = _distributions(module, installed)
        assert dists, f"{module} (imported in {sorted(files)}) is not installed"
        used |= dists
        if dists & required:
            continue
        extra = OPTIONAL.get(module)
        assert extra is not None and dists & extras[extra], (
            f"{module} is imported in {sorted(files)} but declared in no install_requires"
        )
    unused = required - used - set(NOT_IMPORTED)
    assert not unused, f"declared but never imported by pathgls: {sorted(unused)}"
    assert "torchvision" not in required and "scikit-image" not in required


def test_optional_features_are_extras_and_the_package_is_typed() -> None:
    cfg = _setup()
    extras = {k: _names(v) for k, v in cfg["options.extras_require"].items()}
    assert extras["parquet"] == {"pyarrow"} and "pyarrow" in extras["dev"]
    assert {"ray"} <= extras["ray"]
    assert (PACKAGE / "py.typed").is_file()
    assert "py.typed" in cfg["options.package_data"]["pathgls"]


#: Imported by pathgls/testing/ without being declared: installed by a declared dependency.
COMES_WITH = {"timm": "open-clip-torch"}


def test_the_shipped_test_helpers_import_only_runtime_dependencies() -> None:
    required = _names(_setup()["options"]["install_requires"])
    installed = importlib.metadata.packages_distributions()
    for module, files in sorted(_imports(testing=True).items()):
        dists = _distributions(module, installed)
        if dists & required:
            continue
        parent = COMES_WITH.get(module)
        assert parent in required, f"pathgls/testing imports {module} ({sorted(files)})"
        needs = {_names(r.split(";")[0]).pop() for r in importlib.metadata.requires(parent) or []}
        assert dists & needs, f"{parent} does not install {module}"


def test_the_test_helpers_write_a_slide_without_the_dev_extra(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['imagecodecs'] = None\n"
        "import numpy as np, openslide\n"
        "from pathgls.testing import write_aperio_pyramid\n"
        "rgb = np.random.default_rng(0).integers(0, 256, (300, 400, 3), dtype=np.uint8)\n"
        "args = dict(source=rgb, width=400, height=300, mpp=0.5, magnification=20)\n"
        "out = write_aperio_pyramid(sys.argv[1] + '/d.svs', compression='deflate', **args)\n"
        "with openslide.OpenSlide(str(out)) as s:\n"
        "    assert (np.asarray(s.read_region((0, 0), 0, (400, 300)))[..., :3] == rgb).all()\n"
        "try:\n"
        "    write_aperio_pyramid(sys.argv[1] + '/j.svs', compression='jpeg', **args)\n"
        "except ModuleNotFoundError as e:\n"
        "    print(e.name, e)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    res = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.startswith("imagecodecs ") and "pathgls[dev]" in res.stdout
