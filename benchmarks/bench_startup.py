"""Start-up time of the ``pathgls`` command line, against a bare Python in the same run.

Each command runs ``--repeats`` times in a fresh process (``python -m pathgls ...``); the table
shows the median wall time, the time above a bare ``python -c pass`` (the interpreter's own
start-up) and the heavy libraries the command imported (they should appear only where the
command needs them: ``--version`` and every ``--help`` import none of torch, transformers, spaCy,
Ray, scipy). ``import torch`` is timed too, as the cost that lazy imports avoid.

    python benchmarks/bench_startup.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "transformers", "spacy", "medspacy", "ray", "scipy", "pandas", "matplotlib")
COMMANDS = (
    ("--version",),
    ("--help",),
    *((sub, "--help") for sub in ("demo", "benchmark", "logic", "ground", "meta", "calibrate")),
    ("data", "list"),
)


def timed(argv: list[str], repeats: int) -> float:
    """Median wall seconds of ``argv`` over ``repeats`` fresh processes."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(argv, env=env, cwd=ROOT, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def heavy_imports(args: tuple[str, ...]) -> list[str]:
    """The heavy top-level packages ``pathgls ARGS`` imports (from ``-X importtime``)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "pathgls", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    names = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
    return [h for h in HEAVY if h in names]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    py = sys.executable
    base = timed([py, "-c", "pass"], args.repeats)
    torch = timed([py, "-c", "import torch"], max(3, args.repeats // 2))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    print(f"{'command':<28} {'median s':>9} {'above python':>13}  heavy imports")
    print(f"{'python -c pass (baseline)':<28} {base:9.3f} {0:13.3f}")
    print(f"{'python -c import torch':<28} {torch:9.3f} {torch - base:13.3f}  torch")
    for cmd in COMMANDS:
        t = timed([py, "-m", "pathgls", *cmd], args.repeats)
        heavy = ", ".join(heavy_imports(cmd)) or "none"
        print(f"{'pathgls ' + ' '.join(cmd):<28} {t:9.3f} {t - base:13.3f}  {heavy}")


if __name__ == "__main__":
    main()
