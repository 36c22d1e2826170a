"""``ScoreCard.inputs`` is typed (:class:`~pathgls.types.CardInputs`): the schema lists its keys
with their types, and the runner writes no key it does not declare."""

from __future__ import annotations

import typing

from pathgls.config import load_config
from pathgls.runner.items import WorkItem
from pathgls.runner.pipeline import _base_inputs
from pathgls.schema import scorecard_schema
from pathgls.types import CardInputs, ScoreCard


def test_the_schema_lists_every_card_input_with_its_type() -> None:
    inputs = scorecard_schema()["properties"]["inputs"]
    assert list(inputs["properties"]) == list(typing.get_type_hints(CardInputs))
    assert "additionalProperties" not in inputs  # a newer writer's keys are kept, not refused
    props = inputs["properties"]
    assert props["subject_model_id"] == {"type": ["string", "null"]}
    assert props["kind"] == {
        "type": "string",
        "enum": ["slide", "roi"],
        "description": "slide or roi",
    }
    assert props["slide_size"] == {
        "type": "array",
        "items": {"type": "integer"},
        "minItems": 2,
        "maxItems": 2,
    }
    assert props["slide_reads"]["additionalProperties"] == {"type": "integer"}
    assert props["slide_identity"]["required"] == ["size", "mtime_ns", "header_sha256", "sha256"]


def test_the_inputs_every_card_records_are_declared() -> None:
    item = WorkItem(item_id="a", path="/data/a.svs", kind="slide", reference="ref")
    described = {"subjects": {"captioner": {"model_id": "m", "revision": "r", "learned": False}}}
    inputs = _base_inputs(item, "captioner", described, load_config())
    declared = typing.get_type_hints(CardInputs)
    assert set(inputs) <= set(declared)
    assert inputs["kind"] == "slide" and inputs["reference"] is True
    assert (inputs["subject_model_id"], inputs["subject_learned"]) == ("m", False)
    card = ScoreCard(item_id="a", inputs=inputs)
    assert ScoreCard.from_dict(card.to_dict()).inputs == inputs


def test_a_reader_keeps_inputs_it_does_not_declare_and_does_not_check_their_types() -> None:
    """The reader takes ``inputs`` as any object (as before the typed layer): another writer's
    keys survive a read, and a slide without resolution metadata (level0_mpp null) still reads."""
    card = ScoreCard(item_id="a", inputs=CardInputs(item="/data/a.svs", kind="slide"))
    d = card.to_dict()
    d["inputs"] |= {"their_key": {"nested": [1, 2.5, None]}, "level0_mpp": None}
    back = ScoreCard.from_dict(d)
    assert back.inputs["their_key"] == {"nested": [1, 2.5, None]}
    assert back.inputs["level0_mpp"] is None
    assert back.to_dict() == d
