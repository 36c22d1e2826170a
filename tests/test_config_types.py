"""The typed layer of the config: pydantic-core checks the tree, the messages stay the old ones.

Each message is asserted whole: which key is blamed when several are wrong (the first in the
data's order, unknown keys of a table before its values), the "did you mean" hints, the range
checks of the sections, and the values that crashed the hand-written converter (an int too
large for a float, a key that is no string) and are now a :class:`ConfigError`.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import pytest

from pathgls.config import (
    ModelsConfig,
    PathGLSConfig,
    RunConfig,
    config_from_dict,
    config_to_dict,
)
from pathgls.config.convert import from_dict
from pathgls.config.scoring import FUSABLE_MODULES
from pathgls.errors import ConfigError

RUN_KEYS = (
    "subjects, attack, seed, mpp, hare, keep_grounding_maps, subject_failure_limit, executor, "
    "workers, address, verify, ray_health_s, ray_connect_s, references"
)
SECTIONS = (
    "run, models, tiling, stream, encoder, bag, grounding, logic, stability, fusion, gate, "
    "subject, view, stain, hare, report"
)


def message(data: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        config_from_dict(data)
    return str(info.value)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        # unknown keys and sections, with the nearest key or the section that has it
        (
            {"run": {"sed": 1}},
            f"unknown key run.sed (known keys of [run]: {RUN_KEYS}); did you mean run.seed?",
        ),
        (
            {"run": {"zz": 1, "seed": "x", "aa": 2}},
            f"unknown keys run.aa, run.zz (known keys of [run]: {RUN_KEYS})",
        ),
        (
            {"seed": 1},
            f"unknown section [seed] (known sections: {SECTIONS}); seed is a key of [run], [view]",
        ),
        ({"logc": {}}, f"unknown section [logc] (known sections: {SECTIONS}); did you mean logic?"),
        # wrong types, each kind of annotation
        ({"logic": {"top_k": "3"}}, "logic.top_k must be int, got '3'"),
        ({"logic": {"top_k": 3.0}}, "logic.top_k must be int, got 3.0"),
        ({"logic": {"top_k": True}}, "logic.top_k must be int, got True"),
        ({"subject": {"timeout_s": True}}, "subject.timeout_s must be float, got True"),
        ({"run": {"mpp": "0.5"}}, "run.mpp must be float, got '0.5'"),
        ({"run": {"hare": 1}}, "run.hare must be bool, got 1"),
        ({"run": {"attack": b"x"}}, "run.attack must be str, got b'x'"),
        ({"run": {"executor": "spark"}}, "run.executor must be one of 'local', 'ray', got 'spark'"),
        ({"grounding": {"templates": "x {}"}}, "grounding.templates must be an array, got 'x {}'"),
        (
            {"grounding": {"templates": {"a {}"}}},
            "grounding.templates must be an array, got {'a {}'}",
        ),
        ({"run": {"subjects": ["a", 3]}}, "run.subjects[1] must be str, got 3"),
        ({"fusion": {"weights": 3}}, "fusion.weights must be a table, got 3"),
        (
            {"fusion": {"weights": {"logic": "high"}}},
            "fusion.weights.logic must be float, got 'high'",
        ),
        ({"fusion": {"weights": {1: 0.5}}}, "fusion.weights keys must be strings, got 1"),
        ({"logic": 3}, "logic must be a table, got 3"),
        ({"logic": {"weights": [0.5]}}, "logic.weights must be a table, got [0.5]"),
        ({"logic": {"weights": {"side": "x"}}}, "logic.weights.side must be float, got 'x'"),
        ({"run": RunConfig()}, f"run must be a table, got {RunConfig()!r}"),
        (
            {"hare": {"type_weights": {"ihc_marker": None}}},
            "hare.type_weights.ihc_marker must be float, got None",
        ),
        # the sections' own checks, named section.key, or [section] when they name no key
        ({"logic": {"top_k": 0}}, "logic.top_k must be a number in [1, 1000000], got 0"),
        ({"run": {"mpp": float("nan")}}, "run.mpp must be a number in (0, 1000], got nan"),
        ({"logic": {"weights": {"side": 2}}}, "logic.weights.side must be in [0, 1], got 2.0"),
        ({"gate": {"review": 0.9}}, "gate.deploy threshold 0.75 is below the review threshold 0.9"),
        (
            {"fusion": {"weights": {"logc": 1}}},
            "fusion.weights: unknown module 'logc' (did you mean 'logic'?); known: "
            + ", ".join(FUSABLE_MODULES),
        ),
    ],
)
def test_messages_are_the_old_ones(data: dict[str, Any], expected: str) -> None:
    assert message(data) == expected


def test_the_first_wrong_key_in_the_data_is_blamed() -> None:
    # keys in the order given, whatever the order of the fields
    assert message({"run": {"seed": "x", "attack": 1}}) == "run.seed must be int, got 'x'"
    assert message({"run": {"attack": 1, "seed": "x"}}) == "run.attack must be str, got 1"
    # sections too, a section's own check included
    both = {"logic": {"top_k": 0}, "run": {"seed": "x"}}
    assert message(both) == "logic.top_k must be a number in [1, 1000000], got 0"
    assert message(dict(reversed(both.items()))) == "run.seed must be int, got 'x'"
    # unknown keys of a table before its wrong values; array items in order
    assert message({"view": {"k": "x", "kk": 1}}).startswith("unknown key view.kk ")
    assert message({"run": {"subjects": ["a", 1, 2.0]}}) == "run.subjects[1] must be str, got 1"
    # a mapping's key before its value
    assert message({"fusion": {"weights": {"logic": "x", 2: "y"}}}) == (
        "fusion.weights.logic must be float, got 'x'"
    )


def test_values_the_old_converter_crashed_on_are_config_errors() -> None:
    huge = 2**1100  # float(huge) overflows: the old converter raised OverflowError
    assert message({"run": {"mpp": huge}}) == f"run.mpp must be float, got {huge!r}"
    assert message({"fusion": {"weights": {"logic": -huge}}}) == (
        f"fusion.weights.logic must be float, got {-huge!r}"
    )
    # an int field's range check took math.isfinite of it: OverflowError
    assert message({"logic": {"top_k": huge}}) == (
        f"logic.top_k must be a number in [1, 1000000], got {huge!r}"
    )
    # a key that is no string: sorting or difflib on it raised TypeError
    assert message({"models": {1: 2}}) == (
        "unknown key models.1 (known keys of [models]: extractor, nli, embedder)"
    )
    assert message({"models": {1: 2, "a": 3}}) == (
        "unknown keys models.1, models.a (known keys of [models]: extractor, nli, embedder)"
    )
    assert message({1: {}}).startswith("unknown section [1] (known sections: run, ")


def test_values_are_typed_as_annotated() -> None:
    c = config_from_dict(
        {
            "run": MappingProxyType({"mpp": 1, "subjects": ("a", " b ")}),
            "fusion": {"weights": {"logic": 2}},
            "logic": {"weights": {"side": 0}},
        }
    )
    assert c.run.mpp == 1.0 and type(c.run.mpp) is float
    assert c.run.subjects == ("a", "b")  # RunConfig's own normalisation still runs
    assert dict(c.fusion.weights) == {"logic": 2.0}
    assert type(c.fusion.weights["logic"]) is float
    assert c.logic.weights.side == 0.0 and type(c.logic.weights.side) is float
    assert c.models == ModelsConfig()
    assert config_from_dict({}) == PathGLSConfig()
    assert config_from_dict(config_to_dict(c)) == c
    # the defaults are not shared between trees
    assert config_from_dict({}).fusion.weights is not config_from_dict({}).fusion.weights


def test_pydantic_is_imported_only_when_a_config_is_read() -> None:
    code = (
        "import sys, pathgls, pathgls.config\n"
        "before = sorted(m for m in sys.modules if m.startswith('pydantic'))\n"
        "pathgls.config.load_config()\n"
        "print(before, 'pydantic_core' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[]", "True"]
    help_ = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "pathgls", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "pydantic" not in help_.stderr


@dataclass(frozen=True)
class Ratio:
    num: int = 1
    den: int = 1

    def __post_init__(self) -> None:
        if self.num / self.den > 10:  # ZeroDivisionError for den = 0: no ConfigError of its own
            raise ConfigError(f"num must be at most 10 × den, got {self.num}")


@dataclass(frozen=True)
class Outer:
    ratio: Ratio = field(default_factory=Ratio)
    names: tuple[str, ...] = ()


def test_any_config_dataclass_is_checked_the_same_way() -> None:
    assert from_dict(Outer, {"ratio": {"num": 3}, "names": ["a"]}) == Outer(Ratio(3), ("a",))
    with pytest.raises(ConfigError) as info:
        from_dict(Outer, {"ratio": {"num": 30}})
    assert str(info.value) == "ratio.num must be at most 10 × den, got 30"
    # a check that crashes is a ConfigError naming its table, with the crash as its cause
    with pytest.raises(ConfigError) as info:
        from_dict(Outer, {"ratio": {"den": 0}}, "x")
    assert str(info.value) == "[x.ratio] the values cannot be checked: division by zero"
    assert isinstance(info.value.__cause__.__cause__, ZeroDivisionError)


def test_annotations_outside_the_config_types_are_refused() -> None:
    @dataclass(frozen=True)
    class Odd:
        either: int | str = 0

    with pytest.raises(TypeError, match=r"only X \| None unions"):
        from_dict(Odd, {})
