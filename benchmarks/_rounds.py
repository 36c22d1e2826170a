"""Alternating A/B timing rounds for the benchmarks: no best-of-N, the load beside each figure.

Every round runs each contender once, in an order that rotates from round to round (so none
always runs first, or always after the same neighbour); a figure is the median over rounds with
the range, and a ratio is taken within each round (two contenders timed minutes apart at
another load are never divided). ``os.getloadavg()`` is recorded at the start of every run.

Not a pathgls module and not imported by the tests.
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field


@dataclass
class Series:
    """One contender's runs: seconds, patches (or items) per run, and the load at each start."""

    label: str
    seconds: list[float] = field(default_factory=list)
    rates: list[float] = field(default_factory=list)  # items/s (in-call when the run says)
    loads: list[float] = field(default_factory=list)
    rss_mb: list[float] = field(default_factory=list)  # peak RSS of a child process


def spread(values: Sequence[float], fmt: str = "{:.1f}") -> str:
    """``median [min–max]`` of ``values``."""
    if not values:
        return "—"
    med = statistics.median(values)
    return f"{fmt.format(med)} [{fmt.format(min(values))}–{fmt.format(max(values))}]"


def run_rounds(
    contenders: dict[str, Callable[[], tuple[float, float | None]]],
    *,
    rounds: int,
    n_items: int,
) -> dict[str, Series]:
    """Run every contender once per round, rotating the order.

    Each callable returns ``(seconds, in-call items/s or None)``; None means the rate is
    ``n_items / seconds``.
    """
    series = {k: Series(k) for k in contenders}
    names = list(contenders)
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            load = os.getloadavg()[0]
            seconds, rate = contenders[name]()
            s = series[name]
            s.seconds.append(seconds)
            s.rates.append(rate if rate is not None else n_items / seconds)
            s.loads.append(load)
            print(
                f"  round {r + 1}: {name}: {seconds:.1f} s, {s.rates[-1]:.2f}/s (load {load:.2f})",
                flush=True,
            )
    return series


def timed_call(fn: Callable[[], object]) -> tuple[float, None]:
    """Seconds of one in-process call (the rate is then items / seconds)."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0, None


def timed_process(
    cmd: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    cpu: list[float] | None = None,
    timeout: float | None = None,
) -> tuple[float, str, float]:
    """Wall seconds of a whole child process (start-up included), its output and its peak RSS
    in MB (the largest of the child and the children it waited for).

    ``cwd``: where the child runs. ``python -m pkg`` imports ``pkg`` from its working directory
    before ``PYTHONPATH``: a command meant to run another checkout's code must run elsewhere
    than in this one. ``cpu``: a list the child's CPU seconds (user + system, its waited-for
    children included: a pool's workers) are appended to — on a loaded machine the work done,
    where the wall measures the share of the cores the command got. ``timeout``: seconds after
    which the command and its children (its own process group) are killed.

    Raises:
        RuntimeError: the child failed or ran past ``timeout`` (its output's tail in the message).
    """
    # a child's peak RSS starts from its parent's at fork (Linux keeps the pre-exec high-water
    # mark), and a benchmark's parent holds a model: a small launcher process forks the command
    # and reports the command's own peak
    t0 = time.perf_counter()
    with subprocess.Popen(
        [sys.executable, "-c", _LAUNCHER, *cmd],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=cwd,
        start_new_session=timeout is not None,  # a group to kill on timeout
    ) as proc:
        try:
            stdout, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired as e:
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, _ = proc.communicate()
            what = " ".join(cmd[:4])
            raise RuntimeError(f"{what} … ran past {timeout} s: {stdout[-800:]}") from e
    wall = time.perf_counter() - t0
    out, _, tail = stdout.rpartition("\n@@maxrss_kb ")
    rss, _, cpu_s = tail.strip().partition(" ")
    if proc.returncode or not rss.isdigit():
        what = " ".join(cmd[:4])
        raise RuntimeError(f"{what} … failed ({proc.returncode}): {stdout[-800:]}")
    if cpu is not None:
        cpu.append(float(cpu_s))
    return wall, out, int(rss) / 1024


_LAUNCHER = """
import os, subprocess, sys
p = subprocess.Popen(sys.argv[1:])
_, status, usage = os.wait4(p.pid, 0)
sys.stdout.flush()
print("\\n@@maxrss_kb", usage.ru_maxrss, usage.ru_utime + usage.ru_stime, flush=True)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def ratios(a: Series, b: Series) -> list[float]:
    """``a / b`` rate ratios within each round."""
    return [x / y for x, y in zip(a.rates, b.rates, strict=True) if y > 0]


def load_note() -> str:
    """The 1/5/15-min load averages and the cores, for a headline."""
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} / {five:.2f} / {fifteen:.2f} on {os.cpu_count()} cores"
