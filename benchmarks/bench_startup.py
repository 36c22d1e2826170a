"""Start-up time of the ``pathgls`` command line, against a bare Python in the same run.

Each command runs ``--repeats`` times in a fresh process (``python -m pathgls ...``); the table
shows the median wall time, the time above a bare ``python -c pass`` (the interpreter's own
start-up) and the heavy libraries the command imported (they should appear only where the
command needs them: ``--version``, every ``--help``, ``list`` and every input error import none
of torch, transformers, spaCy, open_clip, Ray, scipy). ``import torch`` is timed too, as the
cost that lazy imports avoid.

The second table is the input errors: a missing file, a binary report, an unknown subject or
encoder, a model never pulled (an empty models directory and Hugging Face cache), a folder
holding several runs. Each must exit 2 with its message, and is reported with its time and
imports; the goal is under 1.5 s on a quiet machine. The load average is printed before and
after, since other work on the machine lengthens every figure.

    python benchmarks/bench_startup.py [--repeats 7] [--only-errors]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = (
    "torch",
    "transformers",
    "spacy",
    "medspacy",
    "open_clip",
    "ray",
    "scipy",
    "skimage",
    "pandas",
    "matplotlib",
)
COMMANDS = (
    ("--version",),
    ("--help",),
    *((sub, "--help") for sub in ("demo", "benchmark", "logic", "ground", "meta", "calibrate")),
    ("data", "list"),
    ("list",),
)
#: Goal for an input error on a quiet machine (seconds).
GOAL_S = 1.5


def failure_cases(work: Path) -> list[tuple[str, tuple[str, ...]]]:
    """(what, argv) of one input error of each kind, with their files made under ``work``.

    Every file is made here (a fresh clone has no ``../shared``): a 64 px PNG, a folder of
    notes without a slide, replay files that match no item or hold empty reports.
    """
    from PIL import Image

    png = work / "roi.png"
    Image.new("RGB", (64, 64), (200, 120, 160)).save(png)
    slides = work / "slides"
    slides.mkdir()
    (slides / "roi.png").symlink_to(png)
    notes = work / "notes"
    notes.mkdir()
    (notes / "readme.txt").write_text("no slide here\n")
    for run in ("a", "b"):
        (work / "runs" / run / "scorecards").mkdir(parents=True)
    other = work / "other.jsonl"
    other.write_text('{"item_id": "elsewhere", "condition": "original", "report": "Benign."}\n')
    empty = work / "empty.jsonl"
    empty.write_text('{"item_id": "roi", "condition": "original", "report": "  "}\n')
    blank = work / "blank.md"
    blank.write_text("\n \n")
    report = ROOT / "examples" / "report.md"
    no_item, no_text = f"replay:{other}", f"replay:{empty}"
    return [
        ("missing report", ("logic", str(work / "none.md"))),
        ("binary report (PNG)", ("logic", str(png))),
        ("unknown subject", ("benchmark", str(slides), "--subject", "nosuch")),
        ("unknown encoder", ("benchmark", str(slides), "--subject", "captioner", "--encoder", "x")),
        ("encoder not pulled", ("ground", "--report", str(report), "--image", str(png))),
        ("NLI model not pulled", ("logic", str(report), "--nli", "hf")),
        ("missing local model", ("benchmark", str(slides), "--subject", f"hf:{work / 'no'}")),
        ("missing slide folder", ("benchmark", str(work / "none"), "--subject", "captioner")),
        ("folder of runs", ("gate", str(work / "runs"))),
        ("same column twice", ("hare", "--refs", str(report), "--cands", str(report))),
        # the inputs of the model-loading commands, checked before any model is built
        ("evaluate: a .md as the slide", ("evaluate", str(report), "--subject", "captioner")),
        (
            "evaluate: replay matching no item",
            ("evaluate", str(png), "--subject", no_item),
        ),
        (
            "evaluate: replay of empty reports",
            ("evaluate", str(png), "--subject", no_text),
        ),
        ("benchmark: folder without slides", ("benchmark", str(notes), "--subject", "captioner")),
        (
            "benchmark: replay matching no item",
            ("benchmark", str(slides), "--subject", no_item),
        ),
        ("ground: empty report", ("ground", "--report", str(blank), "--image", str(png))),
        ("ground: a .md as the slide", ("ground", "--report", str(report), "--slide", str(report))),
        ("extract: a .md as the slide", ("extract", str(report), "--out", str(work / "bags"))),
    ]


def timed(argv: list[str], repeats: int, *, env: dict[str, str], cwd: Path, code: int = 0) -> float:
    """Median wall seconds of ``argv`` over ``repeats`` fresh processes (exit status checked)."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        if proc.returncode != code:
            raise SystemExit(f"{' '.join(argv)}: exit {proc.returncode}\n{proc.stderr}")
    return statistics.median(times)


def heavy_imports(args: tuple[str, ...], *, env: dict[str, str], cwd: Path) -> list[str]:
    """The heavy top-level packages ``pathgls ARGS`` imports (from ``-X importtime``)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "pathgls", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    names = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
    return [h for h in HEAVY if h in names]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--only-errors", action="store_true", help="time the input errors only (not start-up)"
    )
    args = parser.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        work = Path(tmp)
        env = dict(
            os.environ,
            PYTHONPATH=str(ROOT),
            PATHGLS_MODELS_DIR=str(work / "models"),
            HF_HUB_CACHE=str(work / "hf-cache"),
            HF_HUB_OFFLINE="1",
        )
        load = os.getloadavg()[0]
        base = timed([py, "-c", "pass"], args.repeats, env=env, cwd=ROOT)
        torch = timed([py, "-c", "import torch"], max(3, args.repeats // 2), env=env, cwd=ROOT)
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {load:.1f} (1 min)")
        print(f"{'command':<34} {'median s':>9} {'above python':>13}  heavy imports")
        print(f"{'python -c pass (baseline)':<34} {base:9.3f} {0:13.3f}")
        print(f"{'python -c import torch':<34} {torch:9.3f} {torch - base:13.3f}  torch")
        for cmd in () if args.only_errors else COMMANDS:
            t = timed([py, "-m", "pathgls", *cmd], args.repeats, env=env, cwd=ROOT)
            heavy = ", ".join(heavy_imports(cmd, env=env, cwd=ROOT)) or "none"
            print(f"{'pathgls ' + ' '.join(cmd):<34} {t:9.3f} {t - base:13.3f}  {heavy}")
        print(f"\ninput errors (exit 2; goal < {GOAL_S} s on a quiet machine)")
        print(f"{'error':<34} {'median s':>9} {'above python':>13}  heavy imports")
        worst = 0.0
        for what, cmd in failure_cases(work):
            t = timed([py, "-m", "pathgls", *cmd], args.repeats, env=env, cwd=work, code=2)
            worst = max(worst, t)
            heavy = ", ".join(heavy_imports(cmd, env=env, cwd=work)) or "none"
            print(f"{what:<34} {t:9.3f} {t - base:13.3f}  {heavy}")
        print(f"\nslowest input error {worst:.3f} s; load {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
