"""Typed config: defaults, validation, TOML round trip, effective config on disk; types JSON."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from pathgls.config import PathGLSConfig, TilingConfig, load_config, save_effective_config
from pathgls.errors import ConfigError
from pathgls.types import Entity, GateDecision, ModuleScore, Report, ScoreCard


def test_defaults_follow_the_design() -> None:
    c = PathGLSConfig()
    assert c.tiling.magnification == 20 and c.tiling.target_mpp == pytest.approx(0.5)
    assert c.tiling.patch_size == 512
    assert (c.encoder.window_size, c.encoder.window_stride) == (224, 224)
    assert c.encoder.name == "plip"


def test_toml_overrides_and_validation(tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_text("[tiling]\nmagnification = 40\npatch_size = 256\n[stream]\nworkers = 4\n")
    c = load_config(f, stream={"workers": None, "batch_size": 8})
    assert c.tiling.target_mpp == pytest.approx(0.25) and c.tiling.patch_size == 256
    assert c.stream.workers == 4 and c.stream.batch_size == 8  # None overrides are ignored
    f.write_text("[tiling]\npatchsize = 256\n")
    with pytest.raises(ConfigError, match=r"unknown key.*patchsize"):
        load_config(f)
    f.write_text('[tiling]\npatch_size = "big"\n')
    with pytest.raises(ConfigError, match="patch_size must be int"):
        load_config(f)
    with pytest.raises(ConfigError, match="overlap"):
        TilingConfig(overlap=512)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.toml")


def test_effective_config_roundtrips(tmp_path: Path) -> None:
    c = load_config(tiling={"magnification": 10.0}, encoder={"name": "hf:/x/y"})
    path = save_effective_config(c, tmp_path)
    assert load_config(path) == c
    assert json.loads((tmp_path / "config.json").read_text())["encoder"]["name"] == "hf:/x/y"
    assert tomllib.loads(path.read_text())["tiling"]["magnification"] == 10.0


def test_scorecard_json_roundtrip() -> None:
    card = ScoreCard(
        item_id="slide-1::subject",
        reports={"original": Report(text="Invasive ductal carcinoma.")},
        modules={
            "logic": ModuleScore(name="logic", value=0.8, evidence={"pairs": [["a", "b", 0.1]]}),
            "grounding": ModuleScore(
                name="grounding", value=None, missing_reason="no encoder weights"
            ),
        },
        decision=GateDecision(route="review", reasons=["grounding missing"]),
    )
    back = ScoreCard.from_dict(json.loads(card.to_json()))
    assert back == card
    assert back.modules["grounding"].missing
    with pytest.raises(ValueError, match="missing_reason"):
        ModuleScore(name="x", value=None)
    e = Entity(text="IDC", type="pathological_diagnosis", start=3, end=6, negated=True)
    assert e.span == (3, 6)


def test_public_api_names_resolve_lazily() -> None:
    import subprocess
    import sys

    import pathgls

    for name in pathgls.__all__:
        assert getattr(pathgls, name) is not None
    with pytest.raises(AttributeError):
        _ = pathgls.not_a_name
    # importing the package (and tiling) does not pull in torch
    code = (
        "import sys, pathgls, pathgls.tiling, pathgls.features.bags; print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
