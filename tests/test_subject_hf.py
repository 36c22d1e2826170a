"""The ``hf:<repo-or-dir>`` subject on a tiny random LLaVA written at test time, and a real tile."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image
from transformers import BertConfig

import pathgls.subjects.hf  # noqa: F401  (registers the hf scheme)
from pathgls.errors import ConfigError, ModelNotFoundError
from pathgls.subjects.base import SUBJECTS, Subject, SubjectConfig, SubjectError
from pathgls.subjects.hf import HFSubject, build_messages, downscale
from pathgls.testing import save_random_token_classifier, save_random_vlm

TILE = "tissue-level0-4302-10273-4814-10785.png"
PROMPT = "Write the microscopic description of this H&E image."
MAX_TOKENS = 8
# Token ids of the tiny VLM's tokenizer: <s> is 1; <image> is the last id.
BOS_ID = 1


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    """One intra-op thread: a 32-wide model gains nothing from more, and on a busy machine
    their synchronisation makes each decoding step ten times slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def vlm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_random_vlm(tmp_path_factory.mktemp("vlm") / "tiny-llava")


@pytest.fixture(scope="module")
def subject(vlm_dir: Path) -> HFSubject:
    built = SUBJECTS.build(f"hf:{vlm_dir}", SubjectConfig(max_tokens=MAX_TOKENS, device="cpu"))
    assert isinstance(built, HFSubject)
    return built


@pytest.fixture(scope="module")
def tile(tiles_dir: Path) -> np.ndarray:
    return np.asarray(Image.open(tiles_dir / TILE).convert("RGB"))


class ProcessorSpy:
    """Wraps a processor and records every ``processor(...)`` call and what it returned."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[tuple[dict[str, Any], Any]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __call__(self, **kwargs: Any) -> Any:
        out = self.inner(**kwargs)
        self.calls.append((kwargs, out))
        return out


@pytest.fixture
def spy(subject: HFSubject, monkeypatch: pytest.MonkeyPatch) -> ProcessorSpy:
    recorder = ProcessorSpy(subject.processor)
    monkeypatch.setattr(subject, "processor", recorder)
    return recorder


def reference_report(directory: Path, images: list[np.ndarray], prompt: str) -> str:
    """Greedy report through transformers' own chat-template tokenisation (independent path)."""
    from transformers import AutoModelForImageTextToText, AutoProcessor

    processor = AutoProcessor.from_pretrained(directory, local_files_only=True)
    model = AutoModelForImageTextToText.from_pretrained(directory, local_files_only=True).eval()
    content: list[dict[str, Any]] = [{"type": "image", "image": Image.fromarray(a)} for a in images]
    content.append({"type": "text", "text": prompt})
    inputs = processor.apply_chat_template(
        [{"role": "user", "content": content}],
        add_generation_prompt=True,
        tokenize=True,
        return_dict=True,
        return_tensors="pt",
    )
    with torch.inference_mode():
        out = model.generate(**inputs, max_new_tokens=MAX_TOKENS, do_sample=False)
    new = out[0, inputs["input_ids"].shape[1] :]
    return processor.decode(new, skip_special_tokens=True).strip()


def test_registered_and_attributes(subject: HFSubject, vlm_dir: Path) -> None:
    assert "hf" in SUBJECTS and SUBJECTS.get("hf").argument == "<model>"
    assert isinstance(subject, Subject)
    assert subject.name == f"hf:{vlm_dir}"
    assert subject.model_id == str(vlm_dir)
    assert subject.revision is None
    assert subject.learned is True
    assert subject.random_weights is True
    assert (subject.device, subject.precision) == ("cpu", "fp32")
    assert next(subject.model.parameters()).dtype == torch.float32
    assert not subject.model.training


def test_greedy_report_on_a_real_tile(subject: HFSubject, vlm_dir: Path, tile: np.ndarray) -> None:
    text = subject.generate([tile], PROMPT)
    assert isinstance(text, str) and text
    assert text == text.strip()
    assert PROMPT not in text and "<|assistant|>" not in text  # only the new tokens
    assert text == reference_report(vlm_dir, [tile], PROMPT)
    assert subject.generate([tile], PROMPT) == text  # greedy: the same call, the same text
    assert subject.generate([tile], PROMPT, seed=7) == text  # the seed plays no part


def test_the_image_and_the_prompt_change_the_report(subject: HFSubject, tile: np.ndarray) -> None:
    base = subject.generate([tile], PROMPT)
    assert subject.generate([tile[::-1, ::-1].copy()], PROMPT) != base
    assert subject.generate([tile], "List the diagnoses.") != base


def test_processor_inputs(subject: HFSubject, spy: ProcessorSpy, tile: np.ndarray) -> None:
    subject.generate([tile], PROMPT)
    (kwargs, out), *_ = spy.calls
    ids = out["input_ids"][0]
    # The template writes <s> itself: exactly one BOS, first; 16 image tokens (4×4 patches).
    assert ids[0].item() == BOS_ID and (ids == BOS_ID).sum().item() == 1
    assert (ids == spy.inner.image_token_id).sum().item() == 16
    assert kwargs["text"].endswith("<|assistant|>\n") and PROMPT in kwargs["text"]
    assert [im.size for im in kwargs["images"][0]] == [(512, 512)]  # under the limit: as is


def test_system_prompt_and_two_images(
    subject: HFSubject, spy: ProcessorSpy, tile: np.ndarray
) -> None:
    second = tile[:256, :384].copy()
    system = "You are a careful pathologist."
    text = subject.generate([tile, second], PROMPT, system=system)
    assert isinstance(text, str) and text
    (kwargs, out), *_ = spy.calls
    rendered = kwargs["text"]
    assert rendered.startswith(f"<s><|system|>\n{system}</s>\n<|user|>\n<image>\n<image>\n")
    assert [im.size for im in kwargs["images"][0]] == [(512, 512), (384, 256)]
    assert tuple(out["pixel_values"].shape) == (2, 3, 32, 32)
    assert (out["input_ids"][0] == spy.inner.image_token_id).sum().item() == 32
    assert text != subject.generate([tile], PROMPT)


def test_oversized_image_is_downscaled(
    vlm_dir: Path, tile: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    wide = np.concatenate([tile, tile, tile], axis=1)  # 512 × 1536
    small = SUBJECTS.build(f"hf:{vlm_dir}", SubjectConfig(max_tokens=2, max_image_side=256))
    spy = ProcessorSpy(small.processor)
    monkeypatch.setattr(small, "processor", spy)
    small.generate([wide, tile[:100, :50].copy()], PROMPT)
    (kwargs, _), *_ = spy.calls
    assert [im.size for im in kwargs["images"][0]] == [(256, 85), (50, 100)]


def test_downscale() -> None:
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (300, 1000, 3), dtype=np.uint8)
    assert downscale(image, max_side=500).size == (500, 150)
    assert downscale(image, max_side=1000).size == (1000, 300)
    np.testing.assert_array_equal(np.asarray(downscale(image, max_side=1000)), image)
    assert downscale(image[:, :1], max_side=32).size == (1, 32)


def test_build_messages() -> None:
    assert build_messages(1, "p", None) == [
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "p"}]}
    ]
    system, user = build_messages(2, "p", "s")
    assert system == {"role": "system", "content": [{"type": "text", "text": "s"}]}
    assert [part["type"] for part in user["content"]] == ["image", "image", "text"]


def test_sampling_is_seeded(
    subject: HFSubject, tile: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    greedy = subject.generate([tile], PROMPT)
    monkeypatch.setattr(subject, "config", SubjectConfig(temperature=1.5, max_tokens=MAX_TOKENS))
    state = torch.get_rng_state()
    texts = [subject.generate([tile], PROMPT, seed=s) for s in (0, 1, 2, 0)]
    assert torch.equal(torch.get_rng_state(), state)  # the caller's RNG is untouched
    assert texts[0] == texts[3]
    assert len(set(texts)) == 3
    assert greedy not in texts


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match="pathgls models pull hf:"):
        SUBJECTS.build(f"hf:{tmp_path / 'no-such-model'}", SubjectConfig())


def test_missing_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATHGLS_MODELS_DIR", str(tmp_path))
    with pytest.raises(ModelNotFoundError, match="pathgls models pull hf:pathgls-test/absent-vlm"):
        SUBJECTS.build("hf:pathgls-test/absent-vlm", SubjectConfig())


def test_repo_from_the_models_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = save_random_vlm(tmp_path / "pathgls-test--tiny-llava", seed=1)
    commit = "0123456789abcdef0123456789abcdef01234567"
    source = {"repo_id": "pathgls-test/tiny-llava", "revision": commit}
    (directory / "PATHGLS_SOURCE.json").write_text(json.dumps(source))
    monkeypatch.setenv("PATHGLS_MODELS_DIR", str(tmp_path))
    built = SUBJECTS.build("hf:pathgls-test/tiny-llava", SubjectConfig(max_tokens=2))
    assert (built.name, built.model_id, built.revision) == (
        "hf:pathgls-test/tiny-llava",
        "pathgls-test/tiny-llava",
        commit,
    )


def test_empty_argument() -> None:
    with pytest.raises(ConfigError):
        SUBJECTS.build("hf:", SubjectConfig())


def test_no_chat_template(tmp_path: Path) -> None:
    directory = save_random_vlm(tmp_path / "no-template", chat_template=False)
    with pytest.raises(SubjectError, match="no chat template"):
        SUBJECTS.build(f"hf:{directory}", SubjectConfig())


def test_not_an_image_text_model(tmp_path: Path, vlm_dir: Path) -> None:
    with pytest.raises(SubjectError, match="no image processor"):
        SUBJECTS.build(f"hf:{save_random_token_classifier(tmp_path / 'ner')}", SubjectConfig())
    no_processor = shutil.copytree(vlm_dir, tmp_path / "no-processor")
    (no_processor / "processor_config.json").unlink()
    with pytest.raises(SubjectError, match="cannot load the processor"):
        SUBJECTS.build(f"hf:{no_processor}", SubjectConfig())
    # A LLaVA processor next to a BERT config: the processor loads, the model class does not.
    mixed = shutil.copytree(vlm_dir, tmp_path / "mixed")
    BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2).to_json_file(
        mixed / "config.json"
    )
    with pytest.raises(SubjectError, match="cannot load an image-text-to-text model"):
        SUBJECTS.build(f"hf:{mixed}", SubjectConfig())


def test_template_that_refuses_a_system_prompt(
    subject: HFSubject, tile: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    template = (
        "{% if messages[0]['role'] == 'system' %}"
        "{{ raise_exception('System role not supported') }}{% endif %}"
        + subject.processor.chat_template
    )
    monkeypatch.setattr(subject.processor, "chat_template", template)
    assert subject.generate([tile], PROMPT)
    with pytest.raises(SubjectError, match="System role not supported"):
        subject.generate([tile], PROMPT, system="You are a pathologist.")


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate"), "out of memory"),
        (RuntimeError("shape mismatch"), "generation failed: RuntimeError: shape mismatch"),
    ],
)
def test_generation_errors(
    subject: HFSubject,
    tile: np.ndarray,
    monkeypatch: pytest.MonkeyPatch,
    error: Exception,
    message: str,
) -> None:
    def fail(**kwargs: Any) -> Any:
        raise error

    monkeypatch.setattr(subject.model, "generate", fail)
    with pytest.raises(SubjectError, match=message) as info:
        subject.generate([tile], PROMPT)
    assert info.value.__cause__ is error


def test_bad_images(subject: HFSubject, tile: np.ndarray) -> None:
    with pytest.raises(SubjectError, match="at least one image"):
        subject.generate([], PROMPT)
    with pytest.raises(SubjectError, match="uint8"):
        subject.generate([tile.astype(np.float32)], PROMPT)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error without CUDA")
def test_cuda_without_cuda(vlm_dir: Path) -> None:
    with pytest.raises(ConfigError, match="subject 'hf:"):
        SUBJECTS.build(f"hf:{vlm_dir}", SubjectConfig(device="cuda"))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("precision", ["fp16", "auto"])
def test_half_precision_on_gpu(vlm_dir: Path, tile: np.ndarray, precision: str) -> None:
    config = SubjectConfig(device="cuda", precision=precision, max_tokens=MAX_TOKENS)
    gpu = SUBJECTS.build(f"hf:{vlm_dir}", config)
    expected = "fp16" if precision == "fp16" or not torch.cuda.is_bf16_supported() else "bf16"
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[expected]
    assert gpu.precision == expected and gpu.device.startswith("cuda")
    assert next(gpu.model.parameters()).dtype == dtype
    text = gpu.generate([tile], PROMPT)
    assert text and gpu.generate([tile], PROMPT) == text
