"""Generation: a subject's reports under the original, stain and attack conditions."""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pytest

from pathgls.errors import UnknownNameError
from pathgls.generation import (
    SUMMARY_PROMPT,
    GeneratedReports,
    generate_conditions,
    stained_view,
)
from pathgls.stability import StabilityConfig, make_delta, run_stability, score_generation
from pathgls.subjects import SubjectCache, SubjectError, build_subject
from pathgls.subjects.views import View
from pathgls.text import build_extractor

ATTACK = "attack:false-malignant-history"
REPORT = (
    "Diagnosis: invasive ductal carcinoma, grade 2. Margins: negative. "
    "No lymphovascular invasion is identified."
)


def _he(seed: int = 0, size: int = 96) -> np.ndarray:
    """A synthetic H&E image: haematoxylin and eosin optical densities mixed at random."""
    rng = np.random.default_rng(seed)
    c = rng.gamma(2.0, 0.4, (size, size, 2))
    od = c[..., :1] * np.array([0.65, 0.70, 0.29]) + c[..., 1:] * np.array([0.07, 0.99, 0.11])
    return np.clip(255 * np.exp(-od), 0, 255).astype(np.uint8)


class Recording:
    """A subject that answers ``answers[condition]`` (default REPORT) and records each call."""

    name = "recording"
    model_id = "recording"
    revision = None
    learned = True

    def __init__(self, answers: dict[str, str | Exception] | None = None) -> None:
        self.answers = answers or {}
        self.calls: list[tuple[str, str, list[np.ndarray]]] = []

    def generate(
        self,
        images: Sequence[np.ndarray],
        prompt: str,
        *,
        seed: int = 0,
        system: str | None = None,
        item_id: str = "",
        condition: str = "original",
    ) -> str:
        self.calls.append((condition, prompt, [np.array(im) for im in images]))
        answer = self.answers.get(condition, REPORT)
        if isinstance(answer, Exception):
            raise answer
        return answer


@pytest.fixture(scope="module")
def extractor():
    return build_extractor("lexicon")


def _generate(subject, extractor, **kw) -> GeneratedReports:
    args = {"view": View(kind="roi", images=[_he()]), "item_id": "roi-1"} | kw
    return generate_conditions(subject=subject, extractor=extractor, **args)


def test_three_conditions_each_read_once_and_the_stain_sees_other_pixels(extractor) -> None:
    image = _he()
    subject = Recording({ATTACK: REPORT + " History of carcinoma."})
    gen = _generate(subject, extractor, view=View(kind="roi", images=[image]))
    assert gen.conditions == ("original", "stain", ATTACK)
    assert [c for c, _, _ in subject.calls] == ["original", "stain", ATTACK]
    assert gen.errors == {}
    assert gen.prompts == {"neutral": "neutral", "attack": "false-malignant-history"}
    assert gen.library_version == "1.0"
    assert {c: r.text for c, r in gen.reports.items()} == {
        "original": REPORT,
        "stain": REPORT,
        ATTACK: REPORT + " History of carcinoma.",
    }
    assert all(r.source == "recording" for r in gen.reports.values())
    # each condition analysed once, with the report's entities
    assert gen.original is gen.analyzed["original"]
    assert [a.text for a in gen.analyzed.values()] == [r.text for r in gen.reports.values()]
    assert "invasive ductal carcinoma" in {e.text.lower() for e in gen.original.entities}
    # original and attack see the view's pixels; the stain condition a perturbed copy of them
    seen = {c: imgs[0] for c, _, imgs in subject.calls}
    np.testing.assert_array_equal(seen["original"], image)
    np.testing.assert_array_equal(seen[ATTACK], image)
    assert seen["stain"].shape == image.shape
    assert np.abs(seen["stain"].astype(int) - image.astype(int)).mean() > 2.0
    # the stain record is the perturbation that was applied, seeded by the item id
    again = stained_view(view=View(kind="roi", images=[image]), item_id="roi-1", seed=0)
    np.testing.assert_array_equal(again.images[0], seen["stain"])
    assert gen.stain == again.record and gen.stain["transformed"] == [True]
    assert gen.stain["kinds"] == ["he"] and gen.stain_warnings == []
    # the attack prompt is not the neutral one
    prompts = {c: p for c, p, _ in subject.calls}
    assert prompts["original"] == prompts["stain"] != prompts[ATTACK]


def test_the_cache_replays_every_condition_without_asking_again(extractor, tmp_path) -> None:
    cache = SubjectCache(tmp_path / "cache")
    first = Recording({"stain": "Benign breast tissue."})
    a = _generate(first, extractor, cache=cache)
    assert len(first.calls) == 3
    second = Recording({"stain": "something else entirely"})  # same name: same cache keys
    b = _generate(second, extractor, cache=cache)
    assert second.calls == []
    assert {c: r.text for c, r in b.reports.items()} == {c: r.text for c, r in a.reports.items()}
    assert b.reports["stain"].text == "Benign breast tissue."
    # another seed is another stain factor and another generation
    _generate(second, extractor, cache=cache, seed=1)
    assert len(second.calls) == 3


def test_a_replay_subject_answers_from_its_file(extractor, tmp_path) -> None:
    records = {"original": REPORT, "stain": "Fibroadenoma.", ATTACK: "Metastatic carcinoma."}
    path = tmp_path / "replay.jsonl"
    path.write_text(
        "".join(
            json.dumps({"item_id": "roi-1", "condition": c, "report": t}) + "\n"
            for c, t in records.items()
        ),
        encoding="utf-8",
    )
    gen = _generate(build_subject(f"replay:{path}"), extractor)
    assert {c: r.text for c, r in gen.reports.items()} == records
    missing = _generate(build_subject(f"replay:{path}"), extractor, item_id="other")
    assert set(missing.errors) == {"original", "stain", ATTACK}
    assert "no replay record for item 'other'" in missing.errors["original"]


def test_a_failed_original_leaves_the_others_unasked(extractor) -> None:
    subject = Recording({"original": SubjectError("endpoint timed out after 4 attempts")})
    gen = _generate(subject, extractor)
    assert [c for c, _, _ in subject.calls] == ["original"]
    assert gen.reports == {} and gen.original is None
    assert gen.analyzed == {"original": None, "stain": None, ATTACK: None}
    assert gen.errors == {
        "original": "SubjectError: endpoint timed out after 4 attempts",
        "stain": "not asked: the original report failed",
        ATTACK: "not asked: the original report failed",
    }


def test_a_failed_condition_is_recorded_and_the_score_is_missing(extractor) -> None:
    subject = Recording({"stain": SubjectError("bad gateway")})
    gen = _generate(subject, extractor, max_report_chars=len(REPORT))
    assert [c for c, _, _ in subject.calls] == ["original", "stain", ATTACK]
    assert set(gen.reports) == {"original", ATTACK}
    assert gen.errors == {"stain": "SubjectError: bad gateway"}
    delta = make_delta(StabilityConfig(delta="entity"))
    score = score_generation(generated=gen, delta=delta, config=StabilityConfig(delta="entity"))
    assert score.value is None and "no report under stain" in (score.missing_reason or "")
    assert "stain: SubjectError: bad gateway" in score.warnings
    assert score.evidence["attack"] == "false-malignant-history"
    # a report longer than max_report_chars fails that condition alone
    long = Recording({ATTACK: REPORT + " And more."})
    gen = _generate(long, extractor, max_report_chars=len(REPORT))
    assert set(gen.reports) == {"original", "stain"}
    assert "more than the" in gen.errors[ATTACK]


def test_a_patches_view_asks_per_patch_then_for_a_summary(extractor) -> None:
    view = View(kind="patches", images=[_he(i, 64) for i in range(3)])
    subject = Recording()
    gen = _generate(subject, extractor, view=view)
    conditions = [c for c, _, _ in subject.calls]
    assert conditions[:4] == [
        "original/patch0",
        "original/patch1",
        "original/patch2",
        "original/summary",
    ]
    assert len(conditions) == 12 and gen.errors == {}
    summary = next(p for c, p, _ in subject.calls if c == "original/summary")
    assert summary.startswith(SUMMARY_PROMPT.split("{k}")[0] + "3 regions")
    assert "Region 3:\n" + REPORT in summary


def test_run_stability_is_generation_then_its_score(extractor) -> None:
    cfg = StabilityConfig(delta="entity")
    delta = make_delta(cfg)
    subject = Recording({ATTACK: "Metastatic carcinoma in a lymph node."})
    run = run_stability(
        subject=subject,
        view=View(kind="roi", images=[_he()]),
        item_id="roi-1",
        extractor=extractor,
        config=cfg,
        delta=delta,
    )
    gen = _generate(Recording({ATTACK: "Metastatic carcinoma in a lymph node."}), extractor)
    score = score_generation(generated=gen, delta=delta, config=cfg)
    assert run.score is not None and run.score.value is not None
    assert run.score == score
    assert run.score.value < 1.0 and run.score.evidence["delta"] == "entity"
    assert run.prompts == gen.prompts and run.stain == gen.stain
    assert {c: r.text for c, r in run.reports.items()} == {
        c: r.text for c, r in gen.reports.items()
    }
    with pytest.raises(UnknownNameError, match="unknown attack prompt"):
        _generate(Recording(), extractor, attack="no-such-attack")


def test_an_unchanged_stain_is_a_warning_on_the_score(extractor) -> None:
    blank = np.full((64, 64, 3), 255, np.uint8)
    gen = _generate(Recording(), extractor, view=View(kind="roi", images=[blank]))
    assert gen.stain["transformed"] == [False]
    assert any("left every image unchanged" in w for w in gen.stain_warnings)
    cfg = StabilityConfig(delta="entity")
    score = score_generation(generated=gen, delta=make_delta(cfg), config=cfg)
    assert score.value == pytest.approx(1.0)
    assert all(w in score.warnings for w in gen.stain_warnings)
    assert score.evidence["stain"]["kinds"] == gen.stain["kinds"]
