"""Exclusive locks on a run directory or a file: one writer at a time, a dead holder detected.

The lock is an ``fcntl`` lock on a small file that names its holder (pid, host, start time,
command). The kernel drops the lock when the holder's process ends, however it ends (a
SIGKILL too), so a lock file left by a killed run is *stale*: the next process acquires it at
once and logs that it took it over. A live holder makes :func:`acquire` refuse with
:class:`~pathgls.errors.LockedError` naming the holder, or wait for it (``wait_s``).
The lock file is never deleted (deleting it would let two processes lock two different files).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import socket
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pathgls.errors import LockedError, PathGLSError
from pathgls.io.atomic import describe_os_error
from pathgls.io.rundir import open_nofollow

log = logging.getLogger(__name__)

#: The lock file of a run directory.
RUN_LOCK = ".pathgls.lock"
#: Seconds between two tries while waiting.
_POLL_S = 0.5


@dataclass(frozen=True)
class Lock:
    """A held lock (release with :meth:`release`, or use :func:`locked`)."""

    path: Path
    fd: int
    took_over: dict[str, Any] | None  # the dead holder's record, when the lock was stale

    def release(self) -> None:
        """Clear the holder record and drop the lock."""
        with contextlib.suppress(OSError):
            os.ftruncate(self.fd, 0)
        with contextlib.suppress(OSError):
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def holder_record(command: str | None = None) -> dict[str, Any]:
    """What this process writes into a lock it holds."""
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": command or " ".join(os.path.basename(a) for a in sys.argv[:2]),
    }


def describe_holder(holder: dict[str, Any]) -> str:
    """``pid 123 on host, since <time> (<command>)`` (unknown parts left out)."""
    if not holder:
        return "another process (it wrote no details)"
    text = f"pid {holder.get('pid', '?')} on {holder.get('host', '?')}"
    if holder.get("started"):
        text += f", since {holder['started']}"
    if holder.get("command"):
        text += f" ({holder['command']})"
    return text


def _read_holder(fd: int) -> dict[str, Any]:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        raw = os.read(fd, 4096)
        data = json.loads(raw.decode("utf-8")) if raw.strip() else {}
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def acquire(
    path: str | os.PathLike[str],
    *,
    what: str,
    wait_s: float | None = 0.0,
    command: str | None = None,
    hint: str = "wait for it to finish, or use another output folder",
) -> Lock:
    """Lock ``path`` (created if absent) for this process.

    Args:
        path: The lock file.
        what: What the lock protects, for messages ("run directory /x").
        wait_s: 0: refuse at once when held; a number: wait up to that many seconds;
            None: wait as long as it takes.
        command: Recorded as the holder's command (default: the program's arguments).
        hint: What the user can do, appended to the refusal.

    Raises:
        LockedError: a live process holds it (after ``wait_s``); the message names it.
        RunDirError: the lock file is a symbolic link (its target is never touched).
        PathGLSError: the lock file cannot be created (read-only or missing folder).
    """
    p = Path(path)
    try:
        fd = open_nofollow(p, os.O_RDWR | os.O_CREAT)  # a planted link is refused, not truncated
    except OSError as e:
        raise PathGLSError(f"cannot lock {what}: {p}: {describe_os_error(e)}") from e
    deadline = None if wait_s is None else time.monotonic() + max(0.0, wait_s)
    announced = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            holder = _read_holder(fd)
            if deadline is not None and time.monotonic() >= deadline:
                os.close(fd)
                raise LockedError(
                    f"{what} is in use by {describe_holder(holder)}; {hint}", holder=holder
                ) from None
            if not announced:
                log.warning("%s is in use by %s; waiting", what, describe_holder(holder))
                announced = True
            time.sleep(_POLL_S)
        except OSError as e:
            os.close(fd)
            raise PathGLSError(f"cannot lock {what}: {p}: {describe_os_error(e)}") from e
    stale = _read_holder(fd) or None
    if stale is not None:
        log.warning("%s: took over the lock of %s, which ended", what, describe_holder(stale))
    try:
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, json.dumps(holder_record(command)).encode("utf-8"))
        os.fsync(fd)
    except OSError as e:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
        raise PathGLSError(f"cannot lock {what}: {p}: {describe_os_error(e)}") from e
    return Lock(path=p, fd=fd, took_over=stale)


@contextlib.contextmanager
def locked(
    path: str | os.PathLike[str],
    *,
    what: str,
    wait_s: float | None = 0.0,
    command: str | None = None,
    hint: str = "wait for it to finish, or use another output folder",
) -> Iterator[Lock]:
    """:func:`acquire` as a context manager (released on exit, whatever happens)."""
    lock = acquire(path, what=what, wait_s=wait_s, command=command, hint=hint)
    try:
        yield lock
    finally:
        lock.release()
