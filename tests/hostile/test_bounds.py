"""Hostile settings and sizes (issue 25): every bounded value refused by name, nothing that
hangs or allocates without end.

Fuzzed: every numeric setting of the config tree with extreme values (1e308, nan, 2^63, ...);
the LLM extractor's mention placement against the old quadratic one. Built: TIFFs declaring
200000² px in a few hundred kB; a Ray cluster whose head and raylet die under the driver.
"""

from __future__ import annotations

import dataclasses
import math
import re
import typing
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pathgls.config import PathGLSConfig, TilingConfig, config_from_dict, load_config
from pathgls.errors import ClusterError, ConfigError, SlideOpenError, SlideReadError
from pathgls.testing.hostile import write_sparse_tiff

FUZZ = settings(
    max_examples=300,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


def _numeric_settings() -> list[tuple[str, str, type]]:
    """``(section, field, int|float)`` of every number of the config tree."""
    out = []
    sections = typing.get_type_hints(PathGLSConfig)
    for section in dataclasses.fields(PathGLSConfig):
        cls = sections[section.name]
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            tp = hints[f.name]
            args = set(typing.get_args(tp)) or {tp}
            kind = int if int in args else float if float in args else None
            if kind is not None and bool not in args:
                out.append((section.name, f.name, kind))
    return out


NUMERIC = _numeric_settings()
EXTREMES = [
    1e308,
    -1e308,
    math.inf,
    -math.inf,
    math.nan,
    2**63 - 1,
    -(2**63),
    10**12,
    -1,
    0,
    1e-300,
]
#: Counts a user may set that high on purpose (a seed, a pixel budget).
LARGE_ON_PURPOSE = ("seed", "min_tissue_pixels", "max_level_read_pixels")


def test_every_numeric_setting_is_found() -> None:
    names = {f"{s}.{f}" for s, f, _ in NUMERIC}
    assert {"subject.timeout_s", "stream.prefetch", "tiling.patch_size", "run.workers"} <= names
    assert len(NUMERIC) > 60


def _refused_by_name_or_harmless(section: str, name: str, value: float) -> None:
    try:
        cfg = config_from_dict({section: {name: value}})
    except ConfigError as e:
        message = str(e)  # names the setting (a rule over two settings names both)
        assert (f"{section}." in message or f"[{section}]" in message) and name in message, message
        return
    got = getattr(getattr(cfg, section), name)
    # accepted: a value no run can overflow on, wait for ever with, or allocate from
    assert math.isfinite(got) and abs(got) <= 2**63, (section, name, value)
    assert abs(got) < 1e12 or name in LARGE_ON_PURPOSE, (section, name, value)


@pytest.mark.parametrize("value", EXTREMES, ids=repr)
@pytest.mark.parametrize("setting", NUMERIC, ids=lambda s: f"{s[0]}.{s[1]}")
def test_an_extreme_value_is_refused_by_name_or_is_harmless(
    setting: tuple[str, str, type], value: float
) -> None:
    _refused_by_name_or_harmless(setting[0], setting[1], value)


@FUZZ
@given(
    setting=st.sampled_from(NUMERIC),
    value=st.one_of(st.floats(), st.integers(-(2**70), 2**70)),
)
def test_any_number_is_refused_by_name_or_is_harmless(
    setting: tuple[str, str, type], value: float
) -> None:
    _refused_by_name_or_harmless(setting[0], setting[1], value)


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        ({"fusion": {"weights": {"grounding": 1e308, "logic": 1.0}}}, "weight of 'grounding'"),
        ({"subject": {"timeout_s": 1e300}}, "subject.timeout_s must be a number in (0, 86400]"),
        ({"subject": {"backoff_s": 1e300}}, "subject.backoff_s must be a number in [0, 3600]"),
        ({"stream": {"workers": 2000, "prefetch": 1000}}, "stream.workers must be a number"),
        ({"stream": {"workers": 64, "prefetch": 64}}, "MiB of patch buffers, more than stream"),
        ({"tiling": {"patch_size": 10**8}}, "tiling.patch_size must be a number in [16, 8192]"),
        ({"stream": {"batch_size": 10**12}}, "stream.batch_size must be a number in [1, 4096]"),
        ({"run": {"workers": 10**6}}, "run.workers must be a number in [1, 4096]"),
        ({"run": {"seed": -1}}, "run.seed must be a number in [0, "),
        ({"grounding": {"chunk_windows": 10**12}}, "grounding.chunk_windows must be"),
        ({"hare": {"type_weights": {"ihc_marker": math.inf}}}, "hare.type_weights maps"),
    ],
)
def test_the_issues_settings_are_refused_with_the_setting_named(
    overrides: dict, words: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(**overrides)
    assert words in str(info.value), str(info.value)


def test_huge_but_finite_weights_fuse_as_their_ratio() -> None:
    from pathgls.config import FusionConfig
    from pathgls.fusion import fuse
    from pathgls.types import ModuleScore

    modules = {m: ModuleScore(name=m, value=0.99) for m in ("grounding", "logic", "stability")}
    big = FusionConfig(weights={"grounding": 1e6, "logic": 1e6, "stability": 1e6})
    small = FusionConfig(weights={"grounding": 1.0, "logic": 1.0, "stability": 1.0})
    assert fuse(modules=modules, config=big).trust == pytest.approx(0.99)
    assert fuse(modules=modules, config=big).trust == fuse(modules=modules, config=small).trust


# -- slides that declare more than they hold --------------------------------------------------


def test_a_tiff_declaring_200000_squared_px_in_300_kb_is_refused_on_open(tmp_path: Path) -> None:
    from pathgls.tiling.slides import open_slide

    path = write_sparse_tiff(tmp_path / "huge.tif", width=200_000, height=200_000)
    assert path.stat().st_size < 400_000
    with pytest.raises(
        SlideOpenError, match=r"declares 200000×200000 px .* tiling.max_pixels_per_byte = 10000"
    ):
        open_slide(path, mpp=0.25)


def test_a_level_too_large_for_a_whole_slide_pass_is_refused_before_reading(
    tmp_path: Path,
) -> None:
    from pathgls.tiling.slides import open_slide
    from pathgls.tiling.tissue import slide_tissue_mask

    path = write_sparse_tiff(tmp_path / "huge.tif", width=200_000, height=200_000,
                             pad_bytes=5_000_000)  # fmt: skip
    reader = open_slide(path, mpp=0.25)
    try:
        for run_pass in (
            lambda: slide_tissue_mask(reader, TilingConfig(), mpp0=0.25),
            lambda: reader.thumbnail(1024),
        ):
            with pytest.raises(SlideReadError, match=r"max_level_read_pixels = 1e\+10"):
                run_pass()
        small = TilingConfig(max_level_read_pixels=1 << 20)  # the setting is the budget
        with pytest.raises(SlideReadError, match=r"max_level_read_pixels = 1\.05e"):
            slide_tissue_mask(reader, small, mpp0=0.25)
    finally:
        reader.close()


def test_a_run_fails_only_the_hostile_slide(tmp_path: Path, sample_rois: tuple[Path, ...]) -> None:
    from pathgls.runner.run import run_benchmark

    src = tmp_path / "src"
    src.mkdir()
    write_sparse_tiff(src / "huge.tif", width=200_000, height=200_000)
    (src / "roi.png").symlink_to(sample_rois[0].resolve())
    config = load_config(run={"subjects": ("captioner",), "mpp": 0.25})
    result = run_benchmark(source=src, config=config, out=tmp_path / "run", plots=False)
    assert result.counts == {"ok": 1, "partial": 0, "failed": 1}


# -- the LLM extractor places mentions in linear time, as before ------------------------------


def _old_locate(text: str, needle: str, used: set[tuple[int, int]]) -> tuple[int, int] | None:
    """The placement before issue 25 (quadratic over a whole answer): the oracle."""
    words = needle.split()
    patterns = [re.escape(needle), r"\s+".join(re.escape(w) for w in words)]

    def candidates() -> typing.Iterator[tuple[int, int]]:
        start = text.find(needle)
        while start >= 0:
            yield start, start + len(needle)
            start = text.find(needle, start + 1)
        for pattern in patterns:
            for m in re.finditer(pattern, text, flags=re.IGNORECASE):
                yield m.span()

    fallback = None
    for span in candidates():
        if span in used:
            continue
        if not any(a < span[1] and span[0] < b for a, b in used):
            return span
        fallback = fallback or span
    return fallback


TEXT = st.text(alphabet="aAbB \n", min_size=0, max_size=40)
NEEDLE = st.text(alphabet="aAbB \n", min_size=1, max_size=5).map(str.strip).filter(bool)


@FUZZ
@given(text=TEXT, needles=st.lists(NEEDLE, min_size=1, max_size=12))
def test_mentions_are_placed_as_the_old_placement_did(text: str, needles: list[str]) -> None:
    from pathgls.text.llm_extractor import _Locator

    finder = _Locator(text, needles)
    used: set[tuple[int, int]] = set()
    for needle in needles:
        want = _old_locate(text, needle, used)
        got = finder.find(needle)
        assert got == want, (text, needle, used)
        if got is not None:
            finder.take(got)
            used.add(got)


@pytest.mark.timeout(60)  # quadratic placement took minutes here (130 s for 6,000)
@pytest.mark.parametrize("kind", ["repeated", "distinct", "not-in-report"])
def test_six_thousand_mentions_are_placed(kind: str) -> None:
    import json

    from pathgls.text.llm_extractor import LLMExtractor

    n = 6000
    text = " ".join(f"Finding {i}: carcinoma in part{i}." for i in range(n))
    texts = {
        "repeated": ["carcinoma"] * n,
        "distinct": [f"part{i}" for i in range(n)],
        "not-in-report": [f"made up {i}" for i in range(n)],
    }[kind]
    reply = json.dumps({"entities": [{"text": t, "type": "morphology_finding"} for t in texts]})

    class Client:
        def complete(self, messages: object, **options: object) -> str:
            return reply

    found = LLMExtractor(client=Client()).extract(text)
    assert len(found) == (0 if kind == "not-in-report" else n)
    if kind == "distinct":
        assert [e.text for e in found] == texts


# -- a Ray cluster that dies under the driver ---------------------------------------------------


class _DeadCluster:
    """Stands in for ``ray``: nothing is ever ready, and ``nodes()`` answers as told."""

    def __init__(self, nodes: object) -> None:
        self._nodes = nodes
        self.waits = 0

    def wait(self, refs: list, *, num_returns: int, timeout: float) -> tuple[list, list]:
        self.waits += 1
        return [], refs

    def nodes(self) -> list[dict]:
        if self._nodes == "hang":
            import threading

            threading.Event().wait(3600)  # a head that never answers
        return self._nodes  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("nodes", "words"),
    [([{"Alive": False}], "has no live node"), ("hang", "stopped answering"), ([], "no live")],
)
def test_the_driver_ends_the_run_when_the_cluster_is_lost(nodes: object, words: str) -> None:
    from pathgls.runner.ray_executor import _wait_one

    ray = _DeadCluster(nodes)
    with pytest.raises(ClusterError, match=words):
        _wait_one(ray, ["ref"], health_s=1.0)
    assert ray.waits >= 2  # waited, checked, waited again, then gave up


def test_a_long_item_on_a_healthy_cluster_is_waited_for() -> None:
    from pathgls.runner.ray_executor import _wait_one

    class Slow(_DeadCluster):
        def wait(self, refs: list, *, num_returns: int, timeout: float) -> tuple[list, list]:
            self.waits += 1
            return (refs[:1], refs[1:]) if self.waits > 4 else ([], refs)

    assert _wait_one(Slow([{"Alive": True}]), ["done"], health_s=0.01) == "done"
