"""Process-level memory tuning for long extraction runs.

Patch batches are tens of MB each and are allocated and freed thousands of times from several
reader threads. With glibc's default *dynamic* mmap threshold, freed batches stay in per-thread
heaps and resident memory creeps up with the number of patches streamed, so a 60k×60k slide
ends with a larger footprint than a 20k one although both hold the same few batches at a time.
Fixing the threshold at 1 MiB makes every large buffer an ``mmap`` that goes back to the system
when freed. Called once by the command line's entry point (library code never calls it).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter number


def limit_heap_fragmentation(threshold_bytes: int = 1 << 20) -> bool:
    """Serve allocations ≥ ``threshold_bytes`` with mmap (glibc only). Returns True when applied."""
    if not sys.platform.startswith("linux"):
        return False
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, int(threshold_bytes)))
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
