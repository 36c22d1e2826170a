"""The rule vocabularies' data files (``pathgls/resources/vocab``) and their loader.

``tests/data/vocab_golden.json`` holds the tables and compiled patterns as they were in code
before they moved to data files (captured on main at 8f0315a, issue #35 item 5): the values built
from the files must equal them, so the move changes no score. A deliberate vocabulary change
rewrites the golden file (``python tests/test_vocab_files.py``) and shows up in its diff.
"""

from __future__ import annotations

import configparser
import json
import re
import sys
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from pathgls.errors import LexiconError
from pathgls.text.lexicon import load_lexicon
from pathgls.text.vocab_files import SCHEMAS, bound, load_table, parse_table

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "data" / "vocab_golden.json"

#: module → its tables that were written in code before the move (or are built from them).
TABLES = {
    "pathgls.text.case.polarity": (
        "DENIED_BEFORE",
        "_PRE_NEG",
        "_POST_NEG",
        "_POST_POS",
        "_HEDGE_BEFORE",
        "_HEDGE_AFTER",
        "_GROSS",
        "_FILLER",
        "_ONE_MODIFIER_STOP",
    ),
    "pathgls.text.case.vocab": (
        "INVASION_PATTERNS",
        "STRUCTURE_PATTERNS",
        "FINDING_PATTERNS",
        "CONFINED",
        "_CONFINED_ORGAN",
        "TUMOUR_WORDS",
        "TUMOUR_MENTION",
        "BACKGROUND_WORDS",
        "OTHER_POPULATIONS",
        "OTHER_LESION",
        "NUMBER_WORDS",
        "UNIT_WORDS",
        "TENS_WORDS",
        "MULTIPLE_TUMOURS",
    ),
    "pathgls.text.case.read_markers": ("_POS", "_NEG", "_EQUIVOCAL"),
    "pathgls.text.case.read_site": ("_CANON", "ADJACENT", "SITES"),
    "pathgls.text.case.build": ("_ORGANS", "_ORGAN_RX", "_TYPE_ORGAN", "_FAMILY_ORGAN"),
    "pathgls.text.case.subjects": ("_MARGIN_SYNONYMS",),
    "pathgls.text.case.read_tumour": ("_SYSTEMS", "_RCC_SUBTYPES"),
    "pathgls.logic.checks.staging": (
        "SIZE_LIMITS",
        "EXTENT_RULES_OUT",
        "EXTENT_REQUIRES",
        "NODE_COUNTS",
        "_DISTANT",
        "_REGIONAL_PERITONEUM",
    ),
}


def _encode(v: Any) -> Any:
    """A JSON form that keeps what matching depends on: pattern text and flags, order, types."""
    if isinstance(v, re.Pattern):
        return {"pattern": v.pattern, "flags": int(v.flags)}
    if isinstance(v, dict | MappingProxyType):
        return {"items": [[k, _encode(x)] for k, x in v.items()]}
    if isinstance(v, set | frozenset):
        return {"set": sorted(sorted(x) if isinstance(x, frozenset) else _encode(x) for x in v)}
    if isinstance(v, tuple | list):
        return [_encode(x) for x in v]
    return v


def _current() -> dict[str, Any]:
    import importlib

    from pathgls.text.case.vocab import vocabulary

    out = {}
    for module, names in TABLES.items():
        mod = importlib.import_module(module)
        for name in names:
            out[f"{module}.{name}"] = _encode(getattr(mod, name))
    v = vocabulary()
    for f in ("invasion", "structures", "findings", "confined"):
        out[f"vocabulary().{f}"] = _encode(getattr(v, f))
    # through JSON, as the golden file was: tuples and lists compare alike, 1 and 1.0 do not
    return json.loads(json.dumps(out))


def test_tables_built_from_the_files_equal_the_ones_that_were_in_code() -> None:
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    current = _current()
    assert sorted(current) == sorted(golden)
    differ = [k for k in golden if current[k] != golden[k]]
    assert not differ, f"changed since the move to data files: {differ}"
    # the file's rows are the pattern's alternatives: one fewer is a different pattern
    cues = load_table("polarity_cues").values("cue", list="pre_negation")
    frame = "(?<![A-Za-z])(?:{})(?![A-Za-z])"
    pre_neg = golden["pathgls.text.case.polarity._PRE_NEG"]["pattern"]
    assert len(cues) == 26 and frame.format("|".join(cues)) == pre_neg
    assert frame.format("|".join(cues[:-1])) != pre_neg
    breast = golden["pathgls.logic.checks.staging.SIZE_LIMITS"]["items"][0]
    assert breast[0] == "breast" and breast[1]["items"][0] == ["T1mi", [None, 0.1]]


def test_every_shipped_file_loads_and_is_declared() -> None:
    folder = resources.files("pathgls").joinpath("resources", "vocab")
    shipped = {p.name.removesuffix(".tsv") for p in folder.iterdir() if p.name.endswith(".tsv")}
    assert shipped == set(SCHEMAS)
    for name in sorted(shipped):
        table = load_table(name)
        assert table.rows and all(len(r) == len(table.columns) for r in table.rows)
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    assert "resources/vocab/*" in cfg["options.package_data"]["pathgls"].split()


def test_structures_named_by_the_rules_are_extent_keys() -> None:
    extent = set(load_table("slot_synonyms").values("key", slot="extent"))
    assert set(load_table("confined_structures").values("structure")) <= extent
    assert set(load_table("stage_extent").values("structure")) <= extent
    concepts = {t.concept for t in load_lexicon().terms if t.type == "pathological_diagnosis"}
    assert set(load_table("rcc_subtypes").values("concept")) <= concepts
    confined = set(load_table("organ_words").values("organ", list="confined"))
    assert set(load_table("confined_structures").values("organ")) == confined


def test_loaded_once_and_read_only() -> None:
    a, b = load_table("polarity_cues"), load_table("polarity_cues")
    assert a is b
    assert isinstance(a.rows, tuple) and isinstance(a.rows[0], tuple)
    mapping = load_table("margin_synonyms").mapping("name", "margin")
    with pytest.raises(TypeError):
        mapping["vein"] = "other"  # type: ignore[index]
    with pytest.raises(AttributeError):
        a.rows = ()  # type: ignore[misc]


def test_helpers_keep_file_order_and_filter() -> None:
    text = "# c\nslot\tkey\tpattern\nextent\tb\tx\nfinding\ta\ty\nextent\ta\tz\nextent\tb\tw\n"
    t = parse_table(text, name="slot_synonyms")
    assert t.values("pattern", slot="extent") == ("x", "z", "w")
    assert dict(t.groups("key", "pattern", slot="extent")) == {"b": ("x", "w"), "a": ("z",)}
    assert list(t.alternations("key", "pattern", slot="extent").items()) == [
        ("b", "x|w"),
        ("a", "z"),
    ]
    assert t.alternation("pattern", slot="extent") == "x|z|w"
    assert t.pairs("key", "pattern", slot="finding") == (("a", "y"),)
    assert t.rows_by("key", "slot", "pattern")["a"] == (("finding", "y"), ("extent", "z"))
    with pytest.raises(LexiconError, match="'b' is given twice"):
        t.mapping("key", "pattern", slot="extent")
    with pytest.raises(LexiconError, match="no column 'nope'"):
        t.values("nope")
    assert bound("-", int) is None and bound("4", int) == 4 and bound("0.5", float) == 0.5


HEAD = "# what the file holds\nlist\tcue\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (HEAD + "pre_negation\tno\textra\n", r"polarity_cues\.tsv:3: 3 cells, expected 2"),
        (HEAD + "pre_negation\n", r"polarity_cues\.tsv:3: 1 cells, expected 2"),
        (HEAD + "pre_negation\tno\n\npre_negation\tno\n", r":5: duplicate key .*first on line 3"),
        (HEAD + "pre_negation\t(?:no\n", r":3: 'cue' '\(\?:no' is not a valid regex"),
        (HEAD + "pre_negation\t\n", r":3: empty 'cue'"),
        (HEAD + "pre_negation\tno \n", r":3: 'cue' 'no ' has spaces around it"),
        (HEAD + "pre_negtion\tno\n", r":3: 'list' 'pre_negtion' is not one of "),
        ("list\tcues\npre_negation\tno\n", r"polarity_cues\.tsv:1: header 'list\|cues'"),
        (HEAD, r"polarity_cues\.tsv: no header and rows"),
    ],
)
def test_malformed_file_is_a_clear_error_naming_file_and_line(text: str, message: str) -> None:
    with pytest.raises(LexiconError, match=message):
        parse_table(text, name="polarity_cues")


def test_numbers_and_unknown_files() -> None:
    head = "organ\tcategory\tmin\tmax\n"
    t = parse_table(head + "colon\tN1\t1\t-\n", name="stage_nodes")
    assert t.rows == (("colon", "N1", "1", "-"),)
    with pytest.raises(
        LexiconError, match=r"stage_nodes\.tsv:2: 'max' '3\.5' is not int or - \(no bound\)"
    ):
        parse_table(head + "colon\tN1\t1\t3.5\n", name="stage_nodes")
    with pytest.raises(LexiconError, match=r"x\.tsv:2: 'min' 'one' is not int"):
        parse_table(head + "colon\tN1\tone\t3\n", name="stage_nodes", source="x.tsv")
    with pytest.raises(LexiconError, match=r"stage_nodes\.tsv:2: 'min' '-' is not int$"):
        parse_table(head + "colon\tN1\t-\t3\n", name="stage_nodes")
    with pytest.raises(LexiconError, match="no schema for vocabulary file 'nope'"):
        parse_table(head, name="nope")
    with pytest.raises(LexiconError, match="no schema"):
        load_table("nope")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    GOLDEN.write_text(
        json.dumps(_current(), indent=1, sort_keys=True, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
