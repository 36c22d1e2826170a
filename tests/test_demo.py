"""``pathgls demo`` shows grounding only with real encoder weights."""

from __future__ import annotations

from pathlib import Path

import pytest

from pathgls.cli.demo import link_inputs, real_encoder
from pathgls.hub import store as hub
from pathgls.testing import save_random_hf_clip


@pytest.fixture
def models_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "models"
    d.mkdir()
    monkeypatch.setenv("PATHGLS_MODELS_DIR", str(d))
    from huggingface_hub import constants

    # no cached plip either (snapshot_download reads the constant at call time)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return d


def test_no_weights_names_the_pull_command(models_dir: Path) -> None:
    name, why = real_encoder()
    assert name is None and "pathgls models pull plip" in why


def test_random_test_weights_are_never_used(models_dir: Path) -> None:
    target = models_dir / hub.local_dir_name("vinid/plip")
    save_random_hf_clip(target)
    name, why = real_encoder()
    assert name is None and "random test weights" in why
    # the same files without the random marker count as real weights
    (target / hub.RANDOM_WEIGHTS_MARKER).unlink()
    name, why = real_encoder()
    assert name == "plip" and str(target) in why


def test_link_inputs_replaces_stale_links(tmp_path: Path) -> None:
    a = tmp_path / "a.png"
    a.write_bytes(b"x")
    folder = link_inputs([a], tmp_path / "inputs")
    link_inputs([a], folder)  # a second demo run over the same folder
    assert [p.name for p in folder.iterdir()] == ["a.png"]
    assert (folder / "a.png").read_bytes() == b"x"
