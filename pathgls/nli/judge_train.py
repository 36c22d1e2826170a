"""Training the contradiction judge: pairs from real reports → the top MiniLM layers and a head.

The loop is small because the model is: the frozen bottom layers run under ``no_grad`` once
per statement of a batch and only the top layers, the segment vector and the head get
gradients (AdamW with transformers' linear warm-up schedule, binary cross-entropy on
"contradiction"). A library trainer (``transformers.Trainer``, sentence-transformers'
``CrossEncoder``) would back-propagate through all six layers of a joined pair; this split is
what makes a retrain fit in an hour on two CPUs. Everything is seeded: the same data, seed and
steps give the same weights on the same machine.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from pathgls.nli.judge import META, WEIGHTS, base_model_dir, load_base
from pathgls.nli.judge_data import Pair
from pathgls.nli.judge_model import JudgeNet, pad_batch, sha256_of


@dataclass(frozen=True)
class TrainConfig:
    """How the judge is trained."""

    # Optimisation steps (batches).
    steps: int = 1200
    # Pairs per batch.
    batch_size: int = 32
    # Peak learning rate of the top layers (head and segment: 10×).
    lr: float = 1e-4
    # Share of the steps spent warming up linearly.
    warmup: float = 0.06
    # Seed of the data order, dropout and initial head.
    seed: int = 0
    # MiniLM layers kept frozen (the rest are trained).
    n_bottom: int = 4
    # Tokens per statement, with [CLS] and [SEP].
    max_tokens: int = 36
    # Torch threads (0: leave torch's default).
    threads: int = 0

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch_size < 2:
            raise ValueError("steps must be ≥ 1 and batch_size ≥ 2")
        if not 0 < self.lr < 1 or not 0 <= self.warmup < 1:
            raise ValueError("lr must be in (0, 1) and warmup in [0, 1)")
        if not 8 <= self.max_tokens <= 256:
            raise ValueError("max_tokens must be in [8, 256]")


@dataclass
class TrainResult:
    """A trained judge network and how training went."""

    net: JudgeNet
    tokenizer: object
    base_sha256: str
    losses: list[float] = field(default_factory=list)  # mean loss per logging window
    seconds: float = 0.0


def train_judge(
    *,
    pairs: Sequence[Pair],
    config: TrainConfig,
    base_dir: Path | None = None,
    log: Callable[[str], None] = lambda s: None,
    log_every: int = 50,
) -> TrainResult:
    """Train the judge's top layers on ``pairs`` (see the module docstring)."""
    if not pairs:
        raise ValueError("no training pairs")
    from transformers import get_linear_schedule_with_warmup

    random.seed(config.seed)
    np.random.seed(config.seed)
    torch.manual_seed(config.seed)
    if config.threads:
        torch.set_num_threads(config.threads)
    base = Path(base_dir) if base_dir is not None else base_model_dir()
    tok, bert = load_base(base)
    net = JudgeNet(bert, n_bottom=config.n_bottom)
    net.train()
    net.embeddings.eval()
    net.bottom.eval()
    top_params = [p for p in net.top.parameters()]
    head_params = [net.segment, *net.head.parameters()]
    opt = torch.optim.AdamW(
        [
            {"params": top_params, "lr": config.lr},
            {"params": head_params, "lr": config.lr * 10},
        ],
        weight_decay=0.01,
    )
    sched = get_linear_schedule_with_warmup(opt, int(config.warmup * config.steps), config.steps)
    rng = random.Random(config.seed)
    order = list(range(len(pairs)))
    rng.shuffle(order)
    cursor = 0
    loss_fn = torch.nn.BCEWithLogitsLoss()
    losses: list[float] = []
    window: list[float] = []
    start = time.perf_counter()
    for step in range(config.steps):
        if cursor + config.batch_size > len(order):
            rng.shuffle(order)
            cursor = 0
        batch = [pairs[i] for i in order[cursor : cursor + config.batch_size]]
        cursor += config.batch_size
        texts = list(dict.fromkeys([p.premise for p in batch] + [p.hypothesis for p in batch]))
        enc = tok(texts, truncation=True, max_length=config.max_tokens)
        ids, mask = pad_batch([list(x) for x in enc["input_ids"]])
        st = net.encode(ids, mask)
        where = {t: i for i, t in enumerate(texts)}
        a = torch.tensor([where[p.premise] for p in batch])
        b = torch.tensor([where[p.hypothesis] for p in batch])
        logits = net.pair_logits(st.states[a], st.mask[a], st.states[b], st.mask[b])
        y = torch.tensor([float(p.label) for p in batch])
        loss = loss_fn(logits, y)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_([*top_params, *head_params], 1.0)
        opt.step()
        sched.step()
        window.append(float(loss.detach()))
        if (step + 1) % log_every == 0 or step + 1 == config.steps:
            losses.append(float(np.mean(window)))
            window = []
            log(
                f"step {step + 1}/{config.steps}  loss {losses[-1]:.4f}  "
                f"{time.perf_counter() - start:.0f} s"
            )
    net.eval()
    return TrainResult(
        net, tok, sha256_of(base / "model.safetensors"), losses, time.perf_counter() - start
    )


def save_judge(
    result: TrainResult, directory: Path, *, config: TrainConfig, threshold: float, extra: dict
) -> Path:
    """Write ``judge.safetensors`` (float16) and ``judge.json`` into ``directory``."""
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.to(torch.float16).contiguous() for k, v in result.net.trained_state().items()}
    tmp = directory / (WEIGHTS + ".partial")
    save_file(tensors, str(tmp))
    tmp.replace(directory / WEIGHTS)
    meta = {
        "base_sha256": result.base_sha256,
        "n_bottom": config.n_bottom,
        "max_tokens": config.max_tokens,
        "threshold": threshold,
        "train": asdict(config),
        "seconds": round(result.seconds, 1),
        "losses": [round(x, 4) for x in result.losses],
        **extra,
    }
    (directory / META).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return directory / WEIGHTS
