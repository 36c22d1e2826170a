"""``pathgls.tiling`` imports its names on first use: a submodule alone stays cheap."""

from __future__ import annotations

import subprocess
import sys

import pytest

import pathgls.tiling


def test_identity_alone_does_not_import_the_tissue_mask() -> None:
    code = "import sys, pathgls.tiling.identity; print('scipy' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.split() == ["False"]


def test_every_exported_name_resolves_to_its_module() -> None:
    from pathgls.tiling import grid, stream, tissue

    assert pathgls.tiling.make_grid is grid.make_grid
    assert pathgls.tiling.stream_patches is stream.stream_patches
    assert pathgls.tiling.TissueMask is tissue.TissueMask
    for name in pathgls.tiling.__all__:
        assert getattr(pathgls.tiling, name).__name__ == name
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = pathgls.tiling.nothing
