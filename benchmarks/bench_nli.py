"""NLI benchmark: the batched ``hf`` backend against a per-pair loop, same model and tokenizer.

A full-size DeBERTa-v3-base-architecture NLI classifier (12 layers, hidden 768, vocabulary
128100; *random weights* — speed only, its probabilities mean nothing) scores premise /
hypothesis pairs of real report sentences: the references of the HARE expert-scored dev set
(``../shared/data/expert_scores/hare_expert_dev.tsv``), split into sentences, paired within
each report as the Logic module pairs them. Its tokenizer is a Unigram model trained offline
on the same reports (DeBERTa-v3's SentencePiece model cannot be fetched here).

* per pair: one forward per pair, no padding (the obvious loop);
* batched: ``HFNLIScorer.contradiction`` — dedup, length-sorted batches, dynamic padding.

Targets (issue): identical probabilities (max abs difference < 1e-5), batched ≥ 4× faster on CPU.

Both paths run the same fp32 model, so the speed-up is bounded by FLOPs: a forward of DeBERTa-v3
projects its 512 relative-position embeddings through every layer's query and key projections
(~14.5 GFLOP, whatever the input), which the per-pair loop pays for every pair and a batch pays
once, while the ~0.17 GFLOP per token of the linear layers is the same in both. The CPU is
shared on development machines: the load average is printed, and ``--threads 1`` gives a
figure that other processes disturb less.

Usage: python benchmarks/bench_nli.py [--pairs 200] [--batch-size 32] [--repeats 1] [--threads N]
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import re
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TSV = ROOT.parent / "shared" / "data" / "expert_scores" / "hare_expert_dev.tsv"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(])")


def load_reports(path: Path) -> tuple[dict[str, str], list[str]]:
    """Reference report per case, and every report text (references and candidates)."""
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    references = {r["case_id"]: r["reference"] for r in rows}
    texts = list(references.values()) + [r["candidate"] for r in rows]
    return references, texts


def sentence_pairs(references: dict[str, str], n: int, *, seed: int = 0) -> list[tuple[str, str]]:
    """``n`` distinct ordered (premise, hypothesis) pairs of sentences of the same report."""
    pairs = []
    for text in references.values():
        sentences = [s for s in _SENTENCE_END.split(text.strip()) if len(s.split()) >= 3]
        pairs += [(a, b) for a in sentences for b in sentences if a != b]
    pairs = sorted(set(pairs))
    random.Random(seed).shuffle(pairs)
    return pairs[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=200)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=1, help="alternating rounds of each measurement")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = ap.parse_args()

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    from pathgls.nli import build_nli
    from pathgls.testing import save_random_nli_classifier

    references, texts = load_reports(TSV)
    pairs = sentence_pairs(references, args.pairs)
    premises, hypotheses = [p for p, _ in pairs], [h for _, h in pairs]

    work = Path(tempfile.mkdtemp(prefix="pathgls-bench-nli-"))
    t0 = time.perf_counter()
    model_dir = save_random_nli_classifier(
        work / "nli-random", size="deberta-v3-base", corpus=texts
    )
    scorer = build_nli(f"hf:{model_dir}")
    scorer.batch_size = args.batch_size
    model, tokenizer = scorer.model, scorer.tokenizer
    n_params = sum(p.numel() for p in model.parameters())
    print(
        f"model: DeBERTa-v3-base architecture, RANDOM WEIGHTS (speed only, probabilities "
        f"mean nothing), {n_params / 1e6:.0f}M parameters, {scorer.precision} on "
        f"{scorer.device}; torch {torch.__version__}, {torch.get_num_threads()} threads; "
        f"built in {time.perf_counter() - t0:.0f} s"
    )
    lengths = np.array([len(x) for x in tokenizer(premises, hypotheses)["input_ids"]])
    words = sum(len(p.split()) + len(h.split()) for p, h in pairs)
    print(
        f"pairs: {len(pairs)} distinct sentence pairs from {len(references)} reports of "
        f"{TSV.name}; tokens per pair mean {lengths.mean():.0f}, min {lengths.min()}, "
        f"max {lengths.max()} ({lengths.sum() / words:.2f} tokens per word); "
        f"batch size {args.batch_size}"
    )
    contra = scorer.label_index["contradiction"]

    def per_pair() -> np.ndarray:
        out = np.empty(len(pairs))
        with torch.no_grad():
            for i, (p, h) in enumerate(pairs):
                enc = tokenizer(p, h, truncation=True, max_length=512, return_tensors="pt")
                out[i] = torch.softmax(model(**enc).logits.double(), dim=-1)[0, contra].item()
        return out

    def batched() -> np.ndarray:
        return scorer.contradiction(premises, hypotheses)

    scorer.contradiction(premises[:4], hypotheses[:4])  # warm-up
    loop_times, batch_times = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        reference = per_pair()
        loop_times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        result = batched()
        batch_times.append(time.perf_counter() - t0)
    loop_t, batch_t = min(loop_times), min(batch_times)
    print(f"load average (1 min) after the runs: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    diff = float(np.max(np.abs(result - reference)))
    speedup = loop_t / batch_t
    print(f"per-pair loop: {len(pairs) / loop_t:7.2f} pairs/s ({loop_t:.1f} s)")
    print(f"batched:       {len(pairs) / batch_t:7.2f} pairs/s ({batch_t:.1f} s)")
    print(f"speed-up: {speedup:.2f}x (target >= 4x)")
    print(f"max |P_batched - P_loop| (contradiction): {diff:.2e} (target < 1e-5)")
    print(f"targets met: {'yes' if speedup >= 4 and diff < 1e-5 else 'NO'}")


if __name__ == "__main__":
    main()
