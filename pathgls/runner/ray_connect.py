"""Reaching a Ray cluster within a bounded time, or saying why not.

``ray.init(address="127.0.0.1:1")`` with nothing listening does not fail: Ray's GCS client
retries in 30-second rounds for minutes, prints only its own C++ warnings, and the Python
signal handlers (SIGTERM, Ctrl-C) run only between rounds. So before Ray is asked,
:func:`probe_address` checks, within ``run.ray_connect_s`` (30 s by default), that a gRPC
server answers at the address's host and port: a TCP connection, then the HTTP/2 connection
preface, to which a Ray head (its GCS, or the Ray Client server of ``ray://``) answers with a
SETTINGS frame. A refused connection fails at once; a host that does not answer, or a listener
that is not a gRPC server (it never sends the SETTINGS frame), after the deadline; each with a
:class:`~pathgls.errors.ClusterError` naming the address. The probe waits in Python socket calls,
so SIGTERM and Ctrl-C stop the command at once.

``ray.init`` itself then runs in the main thread, as before: started in a thread to bound it,
a ``ray.init`` still in Ray's C++ core when the process exited crashed it (SIGSEGV,
``std::bad_alloc``) after the run had ended cleanly. A gRPC server that is not a Ray head still
meets Ray's own retries.

``auto`` (the address Ray finds itself) and a local instance (no address) are not probed: there
is no host and port to try before Ray reads them.
"""

from __future__ import annotations

import socket
import time

from pathgls.errors import ClusterError

_SCHEMES = ("ray://", "grpc://")
#: What an HTTP/2 client sends first: the preface and an empty SETTINGS frame (RFC 9113, 3.4).
_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
_SETTINGS = 0x04  # the frame type a server's preface starts with
_FRAME_HEADER = 9


def host_port(address: str) -> tuple[str, int] | None:
    """``(host, port)`` of ``host:port`` or ``ray://host:port``; None for ``auto``, ``local``
    and anything without a port (Ray resolves those itself).

    Raises:
        ClusterError: a port that is not a number from 1 to 65535.
    """
    text = address.strip()
    for scheme in _SCHEMES:
        if text.startswith(scheme):
            text = text[len(scheme) :]
    text = text.split("/", 1)[0]
    if text in ("auto", "local", "") or ":" not in text:
        return None
    host, _, port = text.rpartition(":")
    host = host.strip("[]")  # [::1]:6379
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ClusterError(f"Ray address {address!r}: the port must be a number 1-65535")
    return host, int(port)


def probe_address(address: str, *, seconds: float) -> None:
    """Check within ``seconds`` that a gRPC server (a Ray head) answers at ``address``.

    Raises:
        ClusterError: refused, unreachable, unknown host, no answer within ``seconds``, or an
            answer that is not HTTP/2; the message names the address (and, for a deadline,
            ``run.ray_connect_s``).
    """
    target = host_port(address)
    if target is None:
        return
    deadline = time.monotonic() + seconds
    try:
        with socket.create_connection(target, timeout=seconds) as conn:
            conn.sendall(_PREFACE)
            head = b""
            while len(head) < _FRAME_HEADER:
                conn.settimeout(max(deadline - time.monotonic(), 0.001))
                chunk = conn.recv(_FRAME_HEADER - len(head))
                if not chunk:
                    break
                head += chunk
    except TimeoutError as e:
        raise ClusterError(
            f"cannot reach the Ray cluster at {address}: no answer within {seconds:g} s "
            f"(run.ray_connect_s = {seconds:g}; raise it for a slow network)"
        ) from e
    except OSError as e:
        why = e.strerror or type(e).__name__
        raise ClusterError(
            f"cannot reach the Ray cluster at {address}: {why} (is a Ray head running there? "
            "`ray start --head` prints its address)"
        ) from e
    if len(head) < _FRAME_HEADER or head[3] != _SETTINGS:
        raise ClusterError(
            f"cannot reach the Ray cluster at {address}: something listens there, but it is not "
            "a Ray head (it does not answer as a gRPC server)"
        )
