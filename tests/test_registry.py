"""The one spec grammar, the one model-location grammar and the generic registry."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from pathgls.errors import ConfigError, ModelNotFoundError, UnknownNameError
from pathgls.registry import (
    ModelRef,
    Registry,
    RegistryEntry,
    is_repo_id,
    parse_model_ref,
    parse_spec,
)

PACKAGE = Path(__file__).resolve().parents[1] / "pathgls"

# --- spec grammar --------------------------------------------------------------------------


def test_parse_spec_splits_at_the_first_colon_and_trims() -> None:
    assert parse_spec("plip") == parse_spec(" plip ")
    s = parse_spec("plip")
    assert (s.text, s.kind, s.arg) == ("plip", "plip", "")
    s = parse_spec("  hf : org/model@v1 ")
    assert (s.text, s.kind, s.arg) == ("hf : org/model@v1", "hf", "org/model@v1")
    s = parse_spec("open_clip:ViT-B-32:laion2b_s34b_b79k")
    assert (s.kind, s.arg) == ("open_clip", "ViT-B-32:laion2b_s34b_b79k")
    s = parse_spec("openai:http://localhost:8000/v1#llava")
    assert (s.kind, s.arg) == ("openai", "http://localhost:8000/v1#llava")
    assert parse_spec("hf:").arg == "" and parse_spec("hf:").kind == "hf"


@pytest.mark.parametrize("bad", ["", "   ", ":x", " : org/x"])
def test_parse_spec_refuses_empty_specs_and_kinds(bad: str) -> None:
    with pytest.raises(ConfigError, match=r"empty|no kind"):
        parse_spec(bad, what="NLI backend")


def test_parse_spec_refuses_non_strings() -> None:
    with pytest.raises(ConfigError, match="must be a string"):
        parse_spec(None)  # type: ignore[arg-type]


# --- model-location grammar ----------------------------------------------------------------


def test_repo_ids_with_revisions() -> None:
    ref = parse_model_ref("vinid/plip")
    assert (ref.repo_id, ref.revision, ref.path, ref.is_local) == ("vinid/plip", None, None, False)
    ref = parse_model_ref(" MoritzLaurer/DeBERTa-v3-base-mnli-fever-anli@eb8b17b1 ")
    assert ref.repo_id == "MoritzLaurer/DeBERTa-v3-base-mnli-fever-anli"
    assert ref.revision == "eb8b17b1" and ref.repo_spec == ref.text
    assert parse_model_ref("org/name@refs/pr/1").revision == "refs/pr/1"
    assert parse_model_ref("org/name.v2@main").repo_id == "org/name.v2"
    assert is_repo_id("org/name") and not is_repo_id("org/name@main") and not is_repo_id("x")


def test_explicit_local_paths(tmp_path: Path) -> None:
    assert parse_model_ref(f"dir:{tmp_path}").path == str(tmp_path)
    assert parse_model_ref("dir: models/nli").path == "models/nli"
    assert parse_model_ref("./models/nli").path == "models/nli"
    assert parse_model_ref("../models/nli").path == "../models/nli"
    assert parse_model_ref(str(tmp_path)).path == str(tmp_path)
    home = parse_model_ref("~/models/nli")
    assert home.is_local and home.path == str(Path.home() / "models" / "nli")
    assert home.repo_id is None
    with pytest.raises(ConfigError, match="a local path, not a repo id"):
        _ = home.repo_spec


@pytest.mark.parametrize("bad", ["", "dir:", "models", "not a repo", "org/name@", "a/b/c", "@x"])
def test_malformed_model_locations_name_the_accepted_forms(bad: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_model_ref(bad, what=f"hf:{bad}")
    message = str(info.value)
    assert f"hf:{bad}" in message
    if bad not in ("", "dir:"):
        assert "<org>/<name>[@revision]" in message and "dir:<path>" in message


def test_no_guessing_from_what_exists_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from huggingface_hub import constants

    from pathgls.nli import build_nli
    from pathgls.testing import save_random_nli_classifier

    monkeypatch.chdir(tmp_path)
    save_random_nli_classifier(tmp_path / "models" / "nli")
    monkeypatch.setenv("PATHGLS_MODELS_DIR", str(tmp_path / "pulled"))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    # the folder exists, but "models/nli" is a repo id: not found, with the two local spellings
    assert parse_model_ref("models/nli") == ModelRef("models/nli", repo_id="models/nli")
    with pytest.raises(ModelNotFoundError) as info:
        build_nli("hf:models/nli")
    message = str(info.value)
    assert "pathgls models pull hf:models/nli" in message
    assert "hf:./models/nli" in message and "hf:dir:models/nli" in message
    for spelling in ("hf:./models/nli", "hf:dir:models/nli"):
        scorer = build_nli(spelling)
        assert scorer.random_weights and scorer.model_id.endswith("nli")


# --- the generic registry ------------------------------------------------------------------


def _registry() -> Registry[str]:
    reg: Registry[str] = Registry("widget", label="widget backend")

    @reg.register("plain", description="takes nothing")
    def _plain(arg: str, suffix: str = "") -> str:
        return f"plain{suffix}"

    @reg.register("echo", description="echoes its argument", argument="<text>", colour="red")
    def _echo(arg: str, suffix: str = "") -> str:
        return arg + suffix

    return reg


def test_build_calls_the_factory_with_the_argument_and_extras() -> None:
    reg = _registry()
    assert reg.build("echo:a:b", suffix="!") == "a:b!"
    assert reg.build(" plain ", "?") == "plain?"
    assert reg.build(parse_spec("echo:x")) == "x"
    assert "echo" in reg and "nope" not in reg and len(reg) == 2
    assert reg.names() == ("echo", "plain") and list(reg) == ["echo", "plain"]
    with pytest.raises(ConfigError, match="'plain' takes no argument"):
        reg.build("plain:x")


def test_unknown_names_list_the_known_ones_with_their_arguments() -> None:
    reg = _registry()
    with pytest.raises(UnknownNameError) as info:
        reg.build("ecko:x")
    assert str(info.value) == "unknown widget backend 'ecko:x'; known: echo:<text>, plain"
    with pytest.raises(UnknownNameError, match="echo:<text>, plain"):
        reg.get("ecko")
    with pytest.raises(ConfigError, match="empty"):
        reg.build("")


def test_duplicate_and_invalid_names_are_refused() -> None:
    reg = _registry()
    with pytest.raises(ConfigError, match="'echo' is registered twice"):
        reg.register("echo", description="again")(lambda arg: arg)
    for bad in ("", "a:b", "has space", "-x"):
        with pytest.raises(ConfigError, match="invalid widget backend name"):
            reg.register(bad, description="x")
    with pytest.raises(ConfigError, match="needs a description"):
        reg.register("blank", description="  ")
    with pytest.raises(ConfigError, match="invalid registry kind"):
        Registry("Bad Kind")


def test_entries_share_one_shape() -> None:
    entries = _registry().entries()
    assert [e.name for e in entries] == ["echo", "plain"]
    echo = entries[0]
    assert isinstance(echo, RegistryEntry)
    assert (echo.kind, echo.name, echo.argument, echo.description) == (
        "widget",
        "echo",
        "<text>",
        "echoes its argument",
    )
    assert echo.form == "echo:<text>" and entries[1].form == "plain"
    assert echo.meta["colour"] == "red"
    with pytest.raises(TypeError):
        echo.meta["colour"] = "blue"  # type: ignore[index]
    assert echo.to_dict() == {
        "kind": "widget",
        "name": "echo",
        "argument": "<text>",
        "description": "echoes its argument",
        "colour": "red",
    }


def test_pathgls_registries_all_use_the_shared_shape() -> None:
    from pathgls.cli.listing import all_entries, registries

    kinds = registries()
    assert set(kinds) == {
        "encoder",
        "extractor",
        "nli",
        "embedder",
        "subject",
        "delta",
        "hare-relations",
        "hare-embedder",
        "report",
        "metric",
    }
    forms = {(e.kind, e.form) for e in all_entries()}
    for expected in [
        ("encoder", "plip"),
        ("encoder", "hf:<model>"),
        ("nli", "hf:[<model>]"),
        ("nli", "rules"),
        ("extractor", "hf-ner:<model>"),
        ("extractor", "lexicon:[<dir-or-file>]"),
        ("subject", "openai:<base_url>#<model>"),
        ("subject", "captioner"),
        ("embedder", "st:<model>"),
        ("hare-relations", "graph:[all|<type,...>]"),
        ("hare-relations", "hare-re:<model>"),
        ("hare-embedder", "hf-cls:<model>"),
        ("delta", "embedding"),
        ("metric", "rougeL"),
    ]:
        assert expected in forms
    metrics = kinds["metric"].entries()
    assert metrics and all(e.meta["higher_is_better"] is True for e in metrics)


# --- one grammar in the code ---------------------------------------------------------------


def _sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "testing" not in p.parts)


def test_one_repo_id_pattern_and_no_hand_written_spec_splits() -> None:
    repo_regex = re.compile(r"\[A-Za-z0-9\]\[\\w\.-\]\*/")
    spec_split = re.compile(r"""\.partition\(\s*["']:["']\s*\)""")
    for path in _sources():
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(PACKAGE).as_posix()
        if rel != "registry.py":
            assert not repo_regex.search(text), f"{rel} has its own repo-id regex"
            assert "_REPO_ID" not in text, f"{rel} has its own repo-id regex"
        if rel not in ("registry.py", "text/sections.py"):  # a heading "Label: text" is no spec
            assert not spec_split.search(text), f"{rel} splits a spec by hand"


def _pathgls_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m.startswith("pathgls")}


def test_registry_and_hub_stay_on_their_floors() -> None:
    assert _pathgls_imports(PACKAGE / "registry.py") == {"pathgls.errors"}
    allowed = (
        "pathgls.errors",
        "pathgls.jsontext",
        "pathgls.registry",
        "pathgls.io",
        "pathgls.hub",
    )
    for path in (PACKAGE / "hub").glob("*.py"):
        for module in _pathgls_imports(path):
            assert module.startswith(allowed), f"hub/{path.name} imports {module}"
