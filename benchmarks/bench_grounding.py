"""Grounding benchmark: chunked ``max_similarity`` against one unchunked matmul, time and memory.

Synthetic slide: N patches × W = 9 HighRes windows (512 px patches, 224 px windows) × D = 512,
M = 64 text queries, built from a seeded generator; windows are unit-normalised, and half of the
queries have one planted match (a window close to the query) so the argmax has a known answer.
N·W ≈ 500,000 windows (N = 55,556) unless told otherwise; the exact numbers are printed.

* unchunked (the baseline): ``windows.reshape(N·W, D) @ normalised queries.T`` → ``(N·W, M)``,
  then max / argmax over all windows per query — one matmul, the natural implementation of the
  same reduction. For fp16 windows (bags store float16) it must first convert the whole array to
  float32: that conversion is counted in its time and memory;
* chunked: :func:`pathgls.grounding.max_similarity` (its default ``chunk_windows``) on the same
  array (float32 or float16), and on an ``h5py`` dataset ``(N, W, D)`` float16 stored like a
  bag (``chunks=(32, W, D)``, no compression) in a temporary directory — there the windows are
  never in RAM as a whole (the file was just written, so it is read from the page cache).

Throughput is windows per second, best of ``--repeats`` interleaved rounds (CPU, 2 torch threads
unless told). Peak extra memory is measured per variant in a fresh child process (this script
with a hidden ``--child`` mode): it builds its inputs without transient copies, warms the code
path up on a tiny input, resets the kernel's peak-RSS counter (``5`` → ``/proc/self/clear_refs``),
runs the operation once and reports ``VmHWM`` − ``VmRSS`` just before it. Without the reset the
peak of building the inputs would be counted too; the script says so when the kernel refuses it.

Targets (issue): peak extra memory of the chunked computation ≤ 256 MiB whatever N (checked at
N·W ≈ 125k, 500k and 2M windows, fp16, and on the HDF5 dataset and the fp32 array at 500k);
throughput ≥ 70% of the unchunked matmul (fp32 input; the fp16 comparison is printed too).

The throughput ratio is sensitive to a busy CPU: the chunked loop runs a few parallel torch ops
per chunk (copy, matmul, norm, division, max: ~6 × 62 chunks of 910 patches at N·W = 500k), and
each waits for both threads, so when other processes hold the cores every one of them can wait
for a descheduled thread, while the single matmul pays that a handful of times. The load
average is printed; ``--threads 1`` gives a figure that other processes disturb less.

Usage: python benchmarks/bench_grounding.py [--windows 500000] [--repeats 5] [--threads 2]
    [--memory-windows 125000 500000 2000000]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

W = 9  # HighRes windows per patch (224 px windows in a 512 px patch)
D = 512
M = 64
SEED = 0
BLOCK = 1024  # patches generated at a time when building the inputs
MEMORY_TARGET_MIB = 256.0
THROUGHPUT_TARGET = 0.70
VARIANTS = ("unchunked-fp32", "chunked-fp32", "unchunked-fp16", "chunked-fp16", "chunked-h5")


def n_patches(n_windows: int) -> int:
    """Whole patches giving the nearest number of windows."""
    return max(1, round(n_windows / W))


def make_queries() -> np.ndarray:
    """``(M, D)`` float32 queries (not normalised: ``max_similarity`` normalises them)."""
    return np.random.default_rng(SEED).standard_normal((M, D), dtype=np.float32)


def planted(n: int, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Flat window indices and unit vectors of the planted matches of the first M/2 queries."""
    rng = np.random.default_rng(SEED + 1)
    k = M // 2
    idx = np.linspace(0, n * W - 1, k + 2)[1:-1].astype(np.int64)
    q = queries[:k] / np.linalg.norm(queries[:k], axis=1, keepdims=True)
    noise = rng.standard_normal((k, D), dtype=np.float32) / np.sqrt(D, dtype=np.float32)
    vec = q + noise  # cosine with the query ≈ 0.7
    vec /= np.linalg.norm(vec, axis=1, keepdims=True)
    return idx, vec.astype(np.float32)


def build_windows(n: int, dtype: type, queries: np.ndarray) -> np.ndarray:
    """``(N, W, D)`` unit windows in ``dtype``, filled block by block (no whole-size temporary).

    Gaussian directions from a seeded torch generator (numpy's is ~4× slower here), normalised
    in float32 one block at a time, then converted into the output in place.
    """
    import torch

    out = np.empty((n, W, D), dtype=dtype)
    flat = torch.from_numpy(out.reshape(n * W, D))
    gen = torch.Generator().manual_seed(SEED + 2)
    idx, vec = planted(n, queries)
    block = torch.empty((BLOCK * W, D), dtype=torch.float32)
    for start in range(0, n, BLOCK):
        a, b = start * W, min(start + BLOCK, n) * W
        part = block[: b - a]
        torch.randn(part.shape, generator=gen, out=part)
        part.div_(torch.linalg.vector_norm(part, dim=1, keepdim=True))
        sel = (idx >= a) & (idx < b)
        part[torch.from_numpy(idx[sel] - a)] = torch.from_numpy(vec[sel])
        flat[a:b].copy_(part)
    return out


def unchunked(queries: np.ndarray, windows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Baseline: one ``(N·W, D) @ (D, M)`` matmul, max / argmax per query (flat window index)."""
    import torch

    q = torch.from_numpy(queries)
    q = q / q.norm(dim=1, keepdim=True)
    v = torch.from_numpy(windows.reshape(-1, windows.shape[-1]))
    if v.dtype != torch.float32:
        v = v.float()  # the whole array in float32: counted in the baseline's time and memory
    sims = v @ q.T  # (N·W, M)
    best, arg = sims.max(dim=0)
    return best.numpy(), arg.numpy()


def chunked(queries: np.ndarray, windows: object) -> tuple[np.ndarray, np.ndarray]:
    """``max_similarity`` (default chunking); argmax as flat window index patch·W + window."""
    from pathgls.grounding.similarity import max_similarity

    r = max_similarity(queries=queries, windows=windows)
    return r.max_similarity, r.best_patch * r.n_windows + r.best_window


def write_h5(path: Path, windows: np.ndarray) -> None:
    """The fp16 windows as an HDF5 dataset chunked like a bag, written block by block."""
    import h5py

    n = windows.shape[0]
    with h5py.File(path, "w") as f:
        ds = f.create_dataset("windows", shape=windows.shape, dtype=np.float16, chunks=(32, W, D))
        for start in range(0, n, 8 * BLOCK):
            ds[start : start + 8 * BLOCK] = windows[start : start + 8 * BLOCK]


def _status_mib() -> dict[str, float]:
    text = Path("/proc/self/status").read_text()
    return {
        k: int(re.search(rf"^{k}:\s+(\d+) kB", text, re.M).group(1)) / 1024
        for k in ("VmHWM", "VmRSS")
    }


def _reset_peak() -> bool:
    """Reset VmHWM to the current RSS; True when the kernel did it."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    s = _status_mib()
    return s["VmHWM"] <= s["VmRSS"] + 1.0


def _child(variant: str, n_windows: int, h5_path: str | None, threads: int) -> None:
    """One measurement in this (fresh) process; prints a JSON line."""
    import torch

    torch.set_num_threads(threads)
    queries = make_queries()
    dtype = np.float32 if variant.endswith("fp32") else np.float16
    if variant == "chunked-h5":
        import h5py

        f = h5py.File(h5_path, "r")
        windows = f["windows"]  # read chunk by chunk: nothing of it is in RAM before the op
        n = int(windows.shape[0])
    else:
        n = n_patches(n_windows)
        windows = build_windows(n, dtype, queries)
    op = unchunked if variant.startswith("unchunked") else chunked
    tiny = build_windows(64, dtype, queries)
    op(queries, tiny)  # warm-up: library code paths and thread pools, not the data
    del tiny
    before = _status_mib()["VmRSS"]
    reset = _reset_peak()
    t0 = time.perf_counter()
    result = op(queries, windows)
    seconds = time.perf_counter() - t0
    hwm = _status_mib()["VmHWM"]
    del result
    out = {
        "variant": variant,
        "n_patches": n,
        "n_windows": n * W,
        "rss_before_mib": before,
        "hwm_mib": hwm,
        "extra_mib": hwm - before,
        "seconds": seconds,
        "reset_ok": reset,
    }
    print(json.dumps(out))


def run_child(variant: str, n_windows: int, h5_path: Path | None, threads: int) -> dict:
    cmd = [sys.executable, __file__, "--child", variant, "--windows", str(n_windows)]
    cmd += ["--threads", str(threads)]
    if h5_path is not None:
        cmd += ["--h5", str(h5_path)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _default_chunk() -> int:
    """``max_similarity``'s default ``chunk_windows`` (what the benchmark measures)."""
    import inspect

    from pathgls.grounding.similarity import max_similarity

    return int(inspect.signature(max_similarity).parameters["chunk_windows"].default)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--windows", type=int, default=500_000, help="N·W of the timed slide")
    ap.add_argument("--repeats", type=int, default=5, help="interleaved rounds of each timing")
    ap.add_argument("--threads", type=int, default=2, help="torch threads")
    ap.add_argument(
        "--memory-windows",
        type=int,
        nargs="+",
        default=[125_000, 500_000, 2_000_000],
        help="N·W values for the chunked fp16 memory runs",
    )
    ap.add_argument("--child", choices=VARIANTS, help=argparse.SUPPRESS)
    ap.add_argument("--h5", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args.child, args.windows, args.h5, args.threads)
        return
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pathgls-bench-grounding-") as tmp:
        bench(args, Path(tmp) / "bag.h5")
    print(f"total time: {time.perf_counter() - t_start:.0f} s")


def bench(args: argparse.Namespace, h5_path: Path) -> None:
    """Agreement, throughput and memory at ``args.windows``; prints the figures and targets."""
    import h5py
    import torch

    torch.set_num_threads(args.threads)
    n = n_patches(args.windows)
    nw = n * W
    t0 = time.perf_counter()
    queries = make_queries()
    win32 = build_windows(n, np.float32, queries)
    win16 = build_windows(n, np.float16, queries)
    write_h5(h5_path, win16)
    print(
        f"slide: N = {n} patches × W = {W} windows = {nw} windows, D = {D}, M = {M} queries "
        f"({M // 2} with a planted match); fp32 array {win32.nbytes / 2**20:.0f} MiB, fp16 "
        f"{win16.nbytes / 2**20:.0f} MiB, HDF5 {h5_path.stat().st_size / 2**20:.0f} MiB "
        f"(chunks (32, {W}, {D})); built in {time.perf_counter() - t0:.0f} s"
    )
    print(
        f"torch {torch.__version__}, h5py {h5py.__version__}, {torch.get_num_threads()} threads, "
        f"CPU; chunk_windows = {_default_chunk()} (default) → {_default_chunk() // W} patches "
        "per chunk"
    )

    # --- agreement -----------------------------------------------------------------------
    idx, _ = planted(n, queries)
    with h5py.File(h5_path, "r") as f:
        results = {
            "unchunked-fp32": unchunked(queries, win32),
            "chunked-fp32": chunked(queries, win32),
            "unchunked-fp16": unchunked(queries, win16),
            "chunked-fp16": chunked(queries, win16),
            "chunked-h5": chunked(queries, f["windows"]),
        }
    print("\nagreement with the unchunked matmul on the same input:")
    agree = True
    for name, base in (
        ("chunked-fp32", "unchunked-fp32"),
        ("chunked-fp16", "unchunked-fp16"),
        ("chunked-h5", "unchunked-fp16"),
    ):
        (v, a), (bv, ba) = results[name], results[base]
        diff = float(np.max(np.abs(v - bv)))
        same = int(np.sum(a == ba))
        found = int(np.sum(a[: M // 2] == idx))
        agree &= same == M and diff < 1e-4
        print(
            f"  {name:13s} vs {base}: max |Δ max| = {diff:.2e}; identical argmax (flat window "
            f"index) {same}/{M}; planted matches found {found}/{M // 2}"
        )

    # --- throughput ------------------------------------------------------------------------
    times: dict[str, list[float]] = {k: [] for k in VARIANTS}
    with h5py.File(h5_path, "r") as f:
        inputs = {
            "unchunked-fp32": (unchunked, win32),
            "chunked-fp32": (chunked, win32),
            "unchunked-fp16": (unchunked, win16),
            "chunked-fp16": (chunked, win16),
            "chunked-h5": (chunked, f["windows"]),
        }
        for _ in range(args.repeats):
            for name in VARIANTS:
                op, x = inputs[name]
                t0 = time.perf_counter()
                op(queries, x)
                times[name].append(time.perf_counter() - t0)
    best = {k: min(v) for k, v in times.items()}
    med = {k: float(np.median(v)) for k, v in times.items()}
    print(
        f"\nthroughput, best of {args.repeats} interleaved rounds (load average after: "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs):"
    )
    for name in VARIANTS:
        note = " (fp16 → fp32 conversion of the whole array included)"
        note = note if name == "unchunked-fp16" else ""
        print(
            f"  {name:15s} {nw / best[name] / 1e6:6.2f} M windows/s (best {best[name]:.3f} s, "
            f"median {med[name]:.3f} s; all: {', '.join(f'{t:.3f}' for t in times[name])}){note}"
        )
    ratio32 = best["unchunked-fp32"] / best["chunked-fp32"]
    ratio16 = best["unchunked-fp16"] / best["chunked-fp16"]
    for label, a, c in (
        ("fp32 array", "unchunked-fp32", "chunked-fp32"),
        ("fp16 array", "unchunked-fp16", "chunked-fp16"),
        ("HDF5 vs fp16 array", "unchunked-fp16", "chunked-h5"),
    ):
        print(
            f"  chunked / unchunked, {label}: {best[a] / best[c]:.2f} (best of each; "
            f"ratio of medians {med[a] / med[c]:.2f})"
        )
    del win32, win16, results, inputs

    # --- peak extra memory -----------------------------------------------------------------
    print("\npeak extra memory (fresh process each; VmHWM during the op − VmRSS before it):")
    runs = [("unchunked-fp32", args.windows), ("chunked-fp32", args.windows)]
    runs += [("unchunked-fp16", args.windows), ("chunked-h5", args.windows)]
    runs += [("chunked-fp16", x) for x in args.memory_windows]
    runs += [("unchunked-fp16", max(args.memory_windows))]
    mem = []
    for variant, x in runs:
        r = run_child(variant, x, h5_path if variant == "chunked-h5" else None, args.threads)
        mem.append(r)
        print(
            f"  {variant:15s} N = {r['n_patches']:7d}, N·W = {r['n_windows']:8d}: extra "
            f"{r['extra_mib']:7.1f} MiB (RSS before {r['rss_before_mib']:6.0f} MiB, peak "
            f"{r['hwm_mib']:6.0f} MiB; this run "
            f"{r['n_windows'] / r['seconds'] / 1e6:.2f} M windows/s)"
        )
    if not all(r["reset_ok"] for r in mem):
        print(
            "  NOTE: this kernel did not reset VmHWM (/proc/self/clear_refs), so the figures "
            "include the peak of building the inputs (one block of "
            f"{BLOCK} patches, float32) and are upper bounds"
        )

    # --- summary ---------------------------------------------------------------------------
    chunked_mem = [r for r in mem if r["variant"].startswith("chunked")]
    worst = max(chunked_mem, key=lambda r: r["extra_mib"])
    mem_ok = worst["extra_mib"] <= MEMORY_TARGET_MIB
    print("\ntargets:")
    print(
        f"  peak extra memory, chunked, N·W from {min(r['n_windows'] for r in chunked_mem)} to "
        f"{max(r['n_windows'] for r in chunked_mem)} (fp16, fp32, HDF5): worst "
        f"{worst['extra_mib']:.1f} MiB ({worst['variant']}, N·W = {worst['n_windows']}) "
        f"(target ≤ {MEMORY_TARGET_MIB:.0f} MiB) {'MET' if mem_ok else 'NOT MET'}"
    )
    print(
        f"  throughput chunked / unchunked matmul, fp32: {ratio32:.2f} "
        f"(target ≥ {THROUGHPUT_TARGET:.2f}) {'MET' if ratio32 >= THROUGHPUT_TARGET else 'NOT MET'}"
    )
    print(
        f"  (same, fp16 input, conversion in the baseline: {ratio16:.2f} "
        f"{'MET' if ratio16 >= THROUGHPUT_TARGET else 'NOT MET'})"
    )
    print(f"  results agree (identical argmax, |Δ max| < 1e-4): {'yes' if agree else 'NO'}")


if __name__ == "__main__":
    main()
