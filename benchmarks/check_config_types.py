"""Differential check of the config layer: today's ``from_dict`` against an older converter.

Generates random config trees — the shipped defaults, the example of docs/configuration.md and
a few non-default trees, each mutated: wrong types, out-of-range and huge numbers, NaN, strings
for numbers, unknown and misspelt keys, keys that are no strings, nested junk — and loads each
with both. They must agree: equal configs, or ConfigErrors with identical messages. Where the
older converter crashed (an exception other than ConfigError), today's must raise ConfigError;
such cases are counted, any other difference is printed and fails the check (exit 1).

The older converter is read from git (``--against``, default: the commit before pydantic-core
took over, #35 item 3), with its ``in_range``, and run over today's section dataclasses.

    python benchmarks/check_config_types.py [--cases 20000] [--seed 0] [--against REV]
"""

from __future__ import annotations

import argparse
import collections
import copy
import dataclasses
import importlib.util
import random
import re
import subprocess
import sys
import tempfile
import tomllib
import typing
from pathlib import Path
from typing import Any

import pathgls.config as C
import pathgls.config.run as run_sections
import pathgls.config.scoring as scoring_sections
import pathgls.config.slide as slide_sections
from pathgls.config.convert import _field_types
from pathgls.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
SECTION_MODULES = (run_sections, scoring_sections, slide_sections)
HUGE = 2**1100  # float() of it overflows
JUNK: list[Any] = [
    *("1", "", " ", "x", "auto", "area", "{}", "a|b", b"x"),
    *(1, 0, -1, 1.0, 0.0, -0.0, -0.5, 0.5, 2.5, 3.0, 0.1, 0.9999, 1.0000001, True, False, None),
    *(2**63, 2**64, 2**70, -(2**70), HUGE, -HUGE, 10**20, 1e308, 1e-308, 1e6, 1e6 + 1),
    *(float("nan"), float("inf"), -float("inf"), 65536, 65537, 4096, 16, 15, 100, 255, 256),
    *([], {}, [1, "a"], ["a"], ("a", "b"), {"a": 1}, {"grounding": 0.5}, [[[[1]]]]),
    *({"a": {"b": [{}]}}, {1: 2}, [None], {1}, frozenset()),
]


def older_converter(rev: str) -> Any:
    """``pathgls/config/convert.py`` at ``rev``, imported as a module of its own."""
    text = subprocess.run(
        ["git", "show", f"{rev}:pathgls/config/convert.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "older_convert.py"
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("older_convert", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def seeds() -> list[dict[str, Any]]:
    doc = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    examples = [tomllib.loads(t) for t in re.findall(r"```toml\n(.*?)```", doc, re.S)]
    return [
        C.config_to_dict(C.PathGLSConfig()),
        {},
        *examples,
        {
            "fusion": {"weights": {"logic": 1, "report": 0.5}},
            "gate": {"required": ["grounding|report"], "floors": {"logic": 0.2}},
        },
        {"hare": {"type_weights": {"ihc_marker": 2, "anatomical_site": 0}, "alpha": 1}},
        {
            "grounding": {"templates": ["a {}", "b {}."], "visual_types": ["grade"]},
            "logic": {"top_k": 3, "weights": {"side": 0.5}},
        },
        {
            "run": {"executor": "ray", "workers": 4, "address": "auto", "mpp": 0.5},
            "stain": {"max_batch": 8, "precision": "float64"},
        },
    ]


class Mutator:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.defaults = C.config_to_dict(C.PathGLSConfig())

    def junk(self, depth: int = 0) -> Any:
        rng = self.rng
        if depth < 3 and rng.random() < 0.1:
            if rng.random() < 0.5:
                return [self.junk(depth + 1) for _ in range(rng.randint(0, 3))]
            keys = ["a", "b", "logic", "seed", 1]
            return {rng.choice(keys): self.junk(depth + 1) for _ in range(rng.randint(0, 3))}
        return copy.deepcopy(rng.choice(JUNK))

    def typo(self, name: str) -> str:
        rng = self.rng
        ops = [
            lambda s: s[1:] or "x",
            lambda s: s[:-1] or "x",
            lambda s: s + "s",
            lambda s: s.upper(),
            lambda s: s.replace("_", "-"),
            lambda s: s[::-1],
            lambda s: "zz" + s,
            lambda s: "".join(rng.sample(s, len(s))),
        ]
        return str(rng.choice(ops)(name))

    def number_near(self, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return self.junk()
        factor = self.rng.choice([0, -1, 0.5, 2, 10, 1000, 1e6, 1e12, -1e-9, 1 + 1e-9])
        try:
            out = value * factor if value else factor
            return int(out) if isinstance(value, int) and self.rng.random() < 0.6 else out
        except (OverflowError, ValueError):
            return value

    def mutate(self, tree: dict[Any, Any]) -> None:
        rng = self.rng
        sections = list(_field_types(C.PathGLSConfig))
        r = rng.random()
        if r < 0.05:  # an unknown section, often a key of some section
            name = rng.choice([self.typo(rng.choice(sections)), "seed", "weights", "name", "zzz"])
            tree[name] = self.junk()
            return
        if r < 0.1:
            tree[rng.choice(sections)] = self.junk()
            return
        section = rng.choice(sections)
        table = tree.get(section)
        if not isinstance(table, dict):
            table = tree[section] = {}
        fields = _field_types(_field_types(C.PathGLSConfig)[section])
        r = rng.random()
        if r < 0.12:
            table[self.typo(rng.choice(list(fields)))] = self.junk()
            return
        if r < 0.16 and table:
            table.pop(rng.choice(list(table)))
            return
        key = rng.choice(list(fields))
        tp = fields[key]
        base = table.get(key, self.defaults[section].get(key))
        if dataclasses.is_dataclass(tp):  # logic.weights
            sub = table.get(key) if isinstance(table.get(key), dict) else {}
            name = rng.choice([*_field_types(tp), "zz", self.typo("side")])
            sub[name] = self.number_near(0.5) if rng.random() < 0.6 else self.junk()
            table[key] = sub if rng.random() < 0.95 else self.junk()
        elif typing.get_origin(tp) is tuple:
            items = list(base) if isinstance(base, list | tuple) else []
            r = rng.random()
            if r < 0.3 and items:
                items[rng.randrange(len(items))] = self.junk()
            elif r < 0.5:
                names = ["grounding", "logic", "report", "hare", "a {}", "{}{}", "x", "", " "]
                items.append(rng.choice([*names, "grounding|report"]))
            elif r < 0.6:
                items = []
            table[key] = items if r < 0.6 else tuple(items) if r < 0.7 else self.junk()
        elif "Mapping" in repr(tp):
            mapping = dict(base) if isinstance(base, dict) else {}
            r = rng.random()
            if r < 0.4:
                names = ["grounding", "logic", "stability", "report", "hare", "grounidng", ""]
                name = rng.choice([*names, "ihc_marker", "zz", 1])
                mapping[name] = self.number_near(0.5) if rng.random() < 0.5 else self.junk()
            table[key] = mapping if r < 0.4 else {} if r < 0.5 else self.junk()
        else:
            table[key] = self.number_near(base) if rng.random() < 0.5 else self.junk()


def outcome(load: Any, data: dict[Any, Any]) -> tuple[str, str]:
    try:
        return ("ok", repr(load(data)))
    except ConfigError as e:
        return ("ConfigError", str(e))
    except Exception as e:  # the older converter's crashes are what is counted
        return (type(e).__name__, str(e))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--against", default="d4d5da3")
    args = parser.parse_args()
    older = older_converter(args.against)
    today_in_range = run_sections.in_range

    def load_older(data: dict[Any, Any]) -> Any:
        for m in SECTION_MODULES:  # the sections' range checks as they were too
            m.in_range = older.in_range
        try:
            notes = set(C.NOTE_TABLES)
            return older.from_dict(
                C.PathGLSConfig, {k: v for k, v in data.items() if k not in notes}
            )
        finally:
            for m in SECTION_MODULES:
                m.in_range = today_in_range

    rng = random.Random(args.seed)
    mutator, trees = Mutator(rng), seeds()
    counts: collections.Counter[str] = collections.Counter()
    differences = 0
    for _ in range(args.cases):
        tree = copy.deepcopy(rng.choice(trees))
        for _ in range(rng.choice([0, 1, 1, 1, 2, 3, 5])):
            mutator.mutate(tree)
        if rng.random() < 0.05:
            tree["calibration"] = {"n_rows": 1}
        was, now = outcome(load_older, tree), outcome(C.config_from_dict, tree)
        counts[f"older: {was[0]}"] += 1
        if was == now:
            counts["identical"] += 1
        elif was[0] not in ("ok", "ConfigError") and now[0] == "ConfigError":
            counts["older crashed, now ConfigError"] += 1
        else:
            differences += 1
            if differences <= 10:
                print(f"DIFFERENT {tree!r:.300}\n  older: {was!r:.300}\n  now:   {now!r:.300}")
    counts["different"] = differences
    for name, n in sorted(counts.items()):
        print(f"{name}: {n}")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
