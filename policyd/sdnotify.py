"""systemd service notifications and socket activation, without extra dependencies.

- :func:`notify` writes ``READY=1``, ``RELOADING=1``, ``MONOTONIC_USEC=…``, ``STOPPING=1``,
  ``STATUS=…`` datagrams to ``$NOTIFY_SOCKET`` (sd_notify(3); an ``@`` prefix names an
  abstract socket). Without ``$NOTIFY_SOCKET`` it does nothing.
- :func:`listen_fds` returns the sockets passed by socket activation (sd_listen_fds(3):
  ``$LISTEN_PID`` must be this process, ``$LISTEN_FDS`` counts descriptors from fd 3); it
  unsets the variables so children do not inherit them.
"""

from __future__ import annotations

import os
import socket
import time

SD_LISTEN_FDS_START = 3


def notify(*lines: str) -> bool:
    """Send ``lines`` (``KEY=VALUE``) as one notification; True when a socket was there."""
    path = os.environ.get("NOTIFY_SOCKET")
    if not path:
        return False
    address = "\0" + path[1:] if path.startswith("@") else path
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
        try:
            sock.connect(address)
            sock.sendall("\n".join(lines).encode())
        except OSError:
            return False
    return True


def monotonic_usec() -> str:
    """``MONOTONIC_USEC=…`` for a ``RELOADING=1`` notification (CLOCK_MONOTONIC in µs)."""
    return f"MONOTONIC_USEC={time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000}"


def listen_fds() -> list[socket.socket]:
    """Sockets handed over by systemd socket activation (empty when not activated)."""
    try:
        pid = int(os.environ.get("LISTEN_PID", "0"))
        count = int(os.environ.get("LISTEN_FDS", "0"))
    except ValueError:
        return []
    if pid != os.getpid() or count <= 0:
        return []
    for name in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"):
        os.environ.pop(name, None)
    socks = []
    for fd in range(SD_LISTEN_FDS_START, SD_LISTEN_FDS_START + count):
        os.set_inheritable(fd, False)
        socks.append(socket.socket(fileno=fd))
    return socks
