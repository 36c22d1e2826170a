"""The one config tree: defaults, TOML in and out, errors that name the key, pickling, layering.

Also the ScoreCard JSON round trip and the lazily resolved public API.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import pickle
import subprocess
import sys
import tomllib
import types
import typing
from pathlib import Path

import pytest

import pathgls.config as config_pkg
from pathgls.config import (
    DEFAULT_ENCODER,
    PathGLSConfig,
    TilingConfig,
    config_from_dict,
    config_to_dict,
    load_config,
    save_config,
    save_effective_config,
    validate_run,
)
from pathgls.errors import ConfigError
from pathgls.types import Entity, GateDecision, ModuleScore, Report, ScoreCard

#: A value different from the default for one or more keys of every section (the round trip
#: below checks that this covers every section, and that each value is not the default).
NON_DEFAULT = {
    "run": {
        "subjects": ["captioner", "replay:/data/r.jsonl"],
        "attack": "authority-pressure",
        "seed": 7,
        "mpp": 0.25,
        "hare": False,
        "keep_grounding_maps": False,
        "subject_failure_limit": 0,
        "executor": "ray",
        "workers": 3,
        "address": "ray://head:10001",
    },
    "models": {"extractor": "hf-ner:/models/ner", "nli": "hf:/models/nli", "embedder": "x"},
    "tiling": {"magnification": 40.0, "patch_size": 256, "exclude_pen": False},
    "stream": {"batch_size": 8, "workers": 0},
    "encoder": {"name": "hf:/models/clip", "precision": "fp32", "models_dir": "/models"},
    "bag": {"overwrite": True, "compression": "gzip"},
    "grounding": {
        "calibration": "sigmoid",
        "templates": ["an H&E image of {}.", "a photomicrograph showing {}."],
        "visual_types": ["grade"],
    },
    "logic": {"top_k_fraction": 0.5, "top_k": 4, "diagnosis_pairs": False},
    "stability": {"delta": "entity", "unrelated_cosine": 0.4},
    "fusion": {
        "weights": {"grounding": 0.2, "logic": 0.1, "stability": 0.7},
        "reference_penalties": True,
    },
    "gate": {"deploy": 0.8, "review": 0.4, "floors": {"grounding": 0.3}, "min_coverage": 0.5},
    "subject": {"temperature": 0.7, "max_retries": 0, "api_key_env": "VLM_KEY"},
    "view": {"kind": "montage", "k": 4},
    "stain": {"factor_low": 0.8, "factor_high": 1.2, "max_batch": 4},
    "hare": {"combine": "sum", "type_weights": {"anatomical_site": 0.0}, "ner_threshold": 0.5},
    "report": {"backend": "hare", "behaviour_weight": 0.2, "floor": 0.3},
}


def _sections(config: PathGLSConfig) -> dict[str, object]:
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}


def test_defaults_follow_the_design() -> None:
    c = PathGLSConfig()
    assert c.tiling.magnification == 20 and c.tiling.target_mpp == pytest.approx(0.5)
    assert c.tiling.patch_size == 512
    assert (c.encoder.window_size, c.encoder.window_stride) == (224, 224)
    # no encoder unless one is named: a run reports grounding missing; extract uses plip
    assert c.encoder.name is None and DEFAULT_ENCODER == "plip"
    assert c.logic.top_k_fraction == 0.3 and c.logic.top_k is None
    # PathGLS's weights, and the report side's (fused only with a reference; see REPORT_WEIGHT)
    assert dict(c.fusion.weights) == {
        "grounding": 0.4,
        "logic": 0.3,
        "stability": 0.3,
        "report": 0.4,
    }
    assert c.fusion.reference_modules == ("report",) and c.report.backend == "dxalign"
    assert (c.stain.io, c.stain.alpha, c.stain.beta) == (240.0, 1.0, 0.15)
    assert (c.stain.factor_low, c.stain.factor_high) == (0.7, 1.3)
    assert c.hare.ner_threshold == 0.7
    assert c.run.subjects == () and c.run.attack == "false-malignant-history"
    assert (c.models.extractor, c.models.nli, c.models.embedder) == ("lexicon", "rules", "minilm")


def test_stage_modules_expose_their_config_from_the_tree() -> None:
    from pathgls.attacks import DEFAULT_ATTACK, StainConfig
    from pathgls.fusion import FusionConfig, GateConfig
    from pathgls.grounding.score import GroundingConfig
    from pathgls.hare import HareConfig
    from pathgls.logic import LogicConfig
    from pathgls.stability import StabilityConfig
    from pathgls.stability.delta import DELTAS
    from pathgls.subjects.base import SubjectConfig
    from pathgls.subjects.views import ViewConfig
    from pathgls.text import ENTITY_TYPES, HARE_TYPES

    c = PathGLSConfig()
    for cls in (
        StainConfig,
        FusionConfig,
        GateConfig,
        GroundingConfig,
        HareConfig,
        LogicConfig,
        StabilityConfig,
        SubjectConfig,
        ViewConfig,
    ):
        assert cls.__module__.startswith("pathgls.config.")
        assert any(type(s) is cls for s in _sections(c).values()), cls
    assert c.run.attack == DEFAULT_ATTACK and c.stability.delta in DELTAS
    assert ENTITY_TYPES[:5] == HARE_TYPES


def test_toml_overrides_and_validation(tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_text("[tiling]\nmagnification = 40\npatch_size = 256\n[stream]\nworkers = 4\n")
    c = load_config(f, stream={"workers": None, "batch_size": 8})
    assert c.tiling.target_mpp == pytest.approx(0.25) and c.tiling.patch_size == 256
    assert c.stream.workers == 4 and c.stream.batch_size == 8  # None overrides are ignored
    assert c.logic == PathGLSConfig().logic  # sections the file leaves out: defaults
    f.write_text("[tiling]\npatchsize = 256\n")
    with pytest.raises(ConfigError, match=r"unknown key tiling\.patchsize.*tiling\.patch_size"):
        load_config(f)
    f.write_text('[tiling]\npatch_size = "big"\n')
    with pytest.raises(ConfigError, match=r"tiling\.patch_size must be int"):
        load_config(f)
    with pytest.raises(ConfigError, match="overlap"):
        TilingConfig(overlap=512)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.toml")
    f.write_text("[tiling\n")
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(f)


def test_every_optional_field_defaults_to_none() -> None:
    """TOML has no null: a None field is left out of a saved file and must load as None."""
    for name, section in _sections(PathGLSConfig()).items():
        hints = typing.get_type_hints(type(section))
        for f in dataclasses.fields(section):
            args = typing.get_args(hints[f.name])
            if typing.get_origin(hints[f.name]) in (types.UnionType, typing.Union) and (
                type(None) in args
            ):
                assert getattr(section, f.name) is None, f"{name}.{f.name}"


def test_whole_tree_round_trips_defaults(tmp_path: Path) -> None:
    default = PathGLSConfig()
    path = save_config(default, tmp_path / "all.toml")
    text = path.read_text(encoding="utf-8")
    data = tomllib.loads(text)
    # every section and every field that is not None is written, defaults included
    assert list(data) == [f.name for f in dataclasses.fields(PathGLSConfig)]
    for name, section in _sections(default).items():
        expected = {f.name for f in dataclasses.fields(section)}
        expected -= {
            f.name for f in dataclasses.fields(section) if getattr(section, f.name) is None
        }
        assert set(data[name]) == expected, name
    assert "[fusion.weights]" in text and data["fusion"]["weights"]["grounding"] == 0.4
    assert data["gate"]["floors"] == {}
    assert load_config(path) == default


def test_whole_tree_round_trips_a_non_default_value_in_every_section(tmp_path: Path) -> None:
    assert set(NON_DEFAULT) == {f.name for f in dataclasses.fields(PathGLSConfig)}
    config = config_from_dict(NON_DEFAULT)
    default = PathGLSConfig()
    for name, values in NON_DEFAULT.items():
        section, base = getattr(config, name), getattr(default, name)
        for key, value in values.items():
            got = getattr(section, key)
            assert got != getattr(base, key), f"{name}.{key} is its default"
            assert config_to_dict(got) == value, f"{name}.{key}"
    path = save_config(config, tmp_path / "run.toml")
    back = load_config(path)
    assert back == config
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    assert data["fusion"]["weights"] == NON_DEFAULT["fusion"]["weights"]
    assert data["gate"]["floors"] == {"grounding": 0.3}
    assert data["hare"]["type_weights"] == {"anatomical_site": 0.0}
    assert data["run"]["subjects"] == NON_DEFAULT["run"]["subjects"]
    assert data["logic"]["top_k"] == 4 and data["stain"]["max_batch"] == 4
    # and the JSON copy of the effective config says the same
    save_effective_config(config, tmp_path / "eff")
    assert json.loads((tmp_path / "eff" / "config.json").read_text()) == data
    assert load_config(tmp_path / "eff" / "config.toml") == config


def test_effective_config_roundtrips(tmp_path: Path) -> None:
    c = load_config(tiling={"magnification": 10.0}, encoder={"name": "hf:/x/y"})
    path = save_effective_config(c, tmp_path)
    assert load_config(path) == c
    assert json.loads((tmp_path / "config.json").read_text())["encoder"]["name"] == "hf:/x/y"
    assert tomllib.loads(path.read_text())["tiling"]["magnification"] == 10.0
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*.tmp"))


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        # unknown sections and keys: named, with the nearest known one
        ("[logik]\ntop_k = 2\n", r"unknown section \[logik\].*did you mean logic\?"),
        ("seed = 3\n", r"unknown section \[seed\].*seed is a key of \[run\], \[view\]"),
        ("[logic]\ntopk = 2\n", r"unknown key logic\.topk .*did you mean logic\.top_k\?"),
        ("[fusion]\nweight = 1\n", r"unknown key fusion\.weight\b"),
        # wrong types
        ('[logic]\ntop_k = "3"\n', r"logic\.top_k must be int, got '3'"),
        ('[run]\nhare = "yes"\n', r"run\.hare must be bool"),
        ("[subject]\ntimeout_s = true\n", r"subject\.timeout_s must be float, got True"),
        ("[fusion]\nweights = 3\n", r"fusion\.weights must be a table"),
        ('[fusion.weights]\nlogic = "high"\n', r"fusion\.weights\.logic must be float"),
        ("logic = 3\n", r"logic must be a table"),
        ('[grounding]\ntemplates = "x {}"\n', r"grounding\.templates must be an array"),
        ("[grounding]\ntemplates = ['a {}', 3]\n", r"grounding\.templates\[1\] must be str"),
        ('[run]\nexecutor = "spark"\n', r"run\.executor must be one of 'local', 'ray'"),
        ('[hare]\ncombine = "max"\n', r"hare\.combine must be one of 'weighted', 'sum'"),
        # out of range / refused by the section's own validation
        ("[logic]\ntop_k_fraction = 2\n", r"logic\.top_k_fraction must be in \(0, 1\], got 2"),
        ("[logic]\ntop_k = 0\n", r"logic\.top_k must be a number in \[1, 1000000\], got 0"),
        ("[fusion.weights]\nlogic = -1\n", r"fusion\.weights: the weight of 'logic' must be"),
        ("[gate]\nreview = 0.9\n", r"gate\.deploy threshold 0\.75 is below the review"),
        ("[gate.floors]\nlogic = 2\n", r"gate\.floors: 'logic' = 2"),
        ("[run]\nsubjects = ['a', ' a']\n", r"run\.subjects: a given twice"),
        ("[run]\nsubjects = ['']\n", r"run\.subjects must be non-empty"),
        ("[run]\nmpp = -1\n", r"run\.mpp must be a number in \(0, 1000\], got -1"),
        ("[run]\nworkers = 0\n", r"run\.workers must be a number in \[1, 4096\], got 0"),
        ('[models]\nnli = " "\n', r"models\.nli must not be empty"),
        ('[encoder]\nname = ""\n', r"encoder\.name must not be empty"),
        ("[tiling]\noverlap = 600\n", r"tiling\.overlap must be in \[0, patch_size\)"),
        ("[grounding]\ntemplates = ['no slot']\n", r"grounding\.templates: a prompt template"),
        ('[stability]\ndelta = "bleu"\n', r"stability\.delta must be one of"),
        ("[view]\nk = 0\n", r"view\.k must be a number in \[1, 256\], got 0"),
        ("[subject]\nmax_tokens = 0\n", r"subject\.max_tokens must be a number in \[1, 1000000\]"),
        ("[stain]\nfactor_low = 2.0\n", r"stain\.factor_low and factor_high must satisfy"),
        ("[hare.type_weights]\nnope = 1\n", r"hare\.type_weights maps HARE types"),
    ],
)
def test_bad_file_errors_name_the_file_and_the_key(tmp_path: Path, toml: str, message: str) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(toml, encoding="utf-8")
    with pytest.raises(ConfigError, match=message) as info:
        load_config(f)
    assert str(info.value).startswith(f"{f}: ")


def test_overrides_win_over_the_file_and_are_blamed_themselves(tmp_path: Path) -> None:
    f = tmp_path / "run.toml"
    f.write_text('[run]\nseed = 3\nattack = "authority-pressure"\n[gate]\ndeploy = 0.4\n')
    # the file alone is wrong (deploy 0.4 < review 0.5), the override makes it right
    c = load_config(f, run={"seed": 9}, gate={"review": 0.3})
    assert (c.run.seed, c.run.attack, c.gate.deploy, c.gate.review) == (
        9,
        "authority-pressure",
        0.4,
        0.3,
    )
    with pytest.raises(ConfigError, match="below the review threshold") as info:
        load_config(f)
    assert str(info.value).startswith(f"{f}: gate.deploy")
    f.write_text("[run]\nseed = 3\n")
    with pytest.raises(ConfigError) as info:  # a bad override is not the file's fault
        load_config(f, logic={"top_k_fraction": 0.0})
    assert str(info.value).startswith("logic.top_k_fraction") and str(f) not in str(info.value)
    with pytest.raises(ConfigError, match=r"unknown section \[logc\]"):
        load_config(logc={"top_k": 1})
    with pytest.raises(ConfigError, match=r"overrides of \[logic\]"):
        load_config(logic=3)


def test_note_tables_are_skipped(tmp_path: Path) -> None:
    f = tmp_path / "calibrated.toml"
    f.write_text("[fusion.weights]\nlogic = 1.0\n[calibration]\nn_rows = 80\nspearman = 0.5\n")
    c = load_config(f)
    assert dict(c.fusion.weights) == {"logic": 1.0}
    assert "calibration" not in config_to_dict(c)


def test_configs_pickle(tmp_path: Path) -> None:
    config = config_from_dict(NON_DEFAULT)
    back = pickle.loads(pickle.dumps(config))
    assert back == config and dict(back.fusion.weights) == NON_DEFAULT["fusion"]["weights"]
    assert dict(back.gate.floors) == {"grounding": 0.3}
    for section in _sections(config).values():
        assert pickle.loads(pickle.dumps(section)) == section
    with pytest.raises(TypeError):  # mapping fields stay read-only after unpickling
        back.fusion.weights["logic"] = 1.0  # type: ignore[index]


def test_validate_run() -> None:
    with pytest.raises(ConfigError, match="at least one subject"):
        validate_run(PathGLSConfig())
    ok = load_config(run={"subjects": ["captioner"]})
    validate_run(ok)
    with pytest.raises(ConfigError, match=r"montage view picks patches.*--encoder"):
        validate_run(load_config(run={"subjects": ["captioner"]}, view={"kind": "montage"}))
    validate_run(
        load_config(
            run={"subjects": ["captioner"]}, view={"kind": "montage"}, encoder={"name": "plip"}
        )
    )
    with pytest.raises(ConfigError, match=r"run\.workers and run\.address set the Ray executor"):
        validate_run(load_config(run={"subjects": ["a"], "workers": 2, "address": "auto"}))
    validate_run(load_config(run={"subjects": ["a"], "workers": 2, "executor": "ray"}))


def test_config_imports_no_stage_module() -> None:
    # the core floor only: the front door (and its version), errors, types, the finite-number
    # test, the score modules' descriptions and their evidence types
    allowed = {"pathgls", "pathgls.version", "pathgls.errors", "pathgls.types", "pathgls.numeric"}
    allowed |= {"pathgls.modules", "pathgls.evidence"}
    code = "import sys, pathgls.config; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = {m for m in out.stdout.split() if m.startswith("pathgls")}
    assert {m for m in loaded if not m.startswith("pathgls.config")} <= allowed
    # and no import of a stage anywhere in the package's source (lazy imports included)
    for path in Path(config_pkg.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                if name.startswith("pathgls"):
                    assert name.startswith("pathgls.config") or name in allowed, (path, name)


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
    import pathgls

    for name in pathgls.__all__:
        assert getattr(pathgls, name) is not None
    assert "RunConfig" not in pathgls.__all__ and pathgls.PathGLSConfig is PathGLSConfig
    with pytest.raises(AttributeError):
        _ = pathgls.not_a_name
    # importing the package (and tiling) does not pull in torch
    code = (
        "import sys, pathgls, pathgls.tiling, pathgls.features.bags; print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_config_names_the_registered_delta_backends() -> None:
    """The config validates Δ names without importing stability: both lists must agree."""
    from pathgls.config import DELTAS
    from pathgls.stability.delta import DELTA_BACKENDS

    assert set(DELTAS) == set(DELTA_BACKENDS.names())
