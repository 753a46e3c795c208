"""The early relay: the ``initialize`` exchange, relayed while policyd itself starts.

``policyd proxy`` spawns the agent first (:mod:`policyd.spawn`) and then spends ~0.2-0.4 s
importing its settings, logging and relay. Without this module the client's ``initialize``
would wait in policyd's stdin all that time, and an agent that starts at once would answer
that much later. :class:`EarlyRelay` is a thread, started right after the spawn, that
relays exactly one exchange (see :mod:`policyd.core.prerelay` for which lines qualify):

1. it reads the client (policyd's stdin) until the first complete line; when that line is
   the ``initialize`` request it writes it to the agent, else it stops reading;
2. it then reads the agent's stdout until its first complete line; when that line answers
   the request it writes it to policyd's stdout, else it stops reading.

It writes only into descriptors that block (a non-blocking stdout belongs to whoever set it:
the answer then waits for the proxy) and only once select(2) says there is room, so
:meth:`EarlyRelay.stop` never waits for a peer that is not reading.

Everything else it read stays unrelayed, in order, for the proxy: :meth:`EarlyRelay.stop`
(called before the proxy's own pumps start) ends the thread and returns a
:class:`Handover` with the lines it relayed (for the relay to record, as if it had relayed
them itself) and the bytes it read but did not relay. Nothing is lost or reordered: each
side is read by this thread or by the proxy, never both at once, and a line is taken off
a buffer only once it was written in full. A write that fails (the peer is gone) leaves
the line to the proxy. Only the standard library is imported here (start-up path).
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
from typing import Any

from policyd.core import prerelay

#: Bytes per read (more than one line may arrive: the rest is handed over).
READ_CHUNK = 64 * 1024


class Handover:
    """What the early relay leaves the proxy. ``relayed``: ``("client", line)`` /
    ``("agent", line)`` in the order they were written; ``client``/``agent``: bytes read
    from that side and not relayed (the start of what the proxy reads from it next);
    ``client_eof``/``agent_eof``: that side's end of input was read. (A plain class: the
    dataclasses module costs ~20 ms to import, and this one is imported before that.)"""

    __slots__ = ("agent", "agent_eof", "client", "client_eof", "relayed")

    def __init__(self) -> None:
        self.relayed: list[tuple[str, bytes]] = []
        self.client = self.agent = b""
        self.client_eof = self.agent_eof = False


class EarlyRelay:
    """Relays the first ``initialize`` exchange between ``client_in``/``client_out``
    (policyd's stdin/stdout) and ``agent_in``/``agent_out`` (the agent's stdin/stdout
    pipes), all file descriptors, until :meth:`stop`."""

    def __init__(self, client_in: int, client_out: int, agent_in: int, agent_out: int) -> None:
        self._fds = (client_in, client_out, agent_in, agent_out)
        self._wake_r, self._wake_w = os.pipe()
        self._result = Handover()
        self._thread = threading.Thread(target=self._run, name="policyd-early-relay", daemon=True)

    def start(self) -> EarlyRelay:
        self._thread.start()
        return self

    def stop(self) -> Handover:
        """End the thread (it only ever waits in ``select``, or writes at most
        :data:`policyd.core.prerelay.MAX_LINE_BYTES` where there is room) and return what it left."""
        if self._thread.is_alive():
            with contextlib.suppress(OSError):
                os.write(self._wake_w, b"x")
            self._thread.join()
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)
        return self._result

    def _run(self) -> None:
        client_in, client_out, agent_in, agent_out = self._fds
        out = self._result
        client, agent = bytearray(), bytearray()
        try:
            request = self._relay_one(client_in, agent_in, client, "client", prerelay.initialize_request)
            if request is not None and _blocking(client_out):  # (a non-blocking stdout: its owner's)
                self._relay_one(agent_out, client_out, agent, "agent",
                                lambda line: prerelay.answers(line, request) or None)
        finally:  # whatever happens, every byte read is handed over
            out.client, out.agent = bytes(client), bytes(agent)

    def _relay_one(self, src: int, dst: int, buf: bytearray, side: str, accept: Any) -> Any:
        """Read ``src`` into ``buf`` up to its first complete line; write it to ``dst`` when
        ``accept(line)`` is not None. Returns that value, or None (stopped, end of input,
        a line that does not qualify or cannot be written)."""
        while True:
            try:
                ready = select.select([self._wake_r, src], [], [])[0]
            except (OSError, ValueError):
                return None
            if self._wake_r in ready:
                return None
            try:
                chunk = os.read(src, READ_CHUNK)
            except BlockingIOError:  # (a non-blocking descriptor another reader emptied)
                continue
            except OSError:  # as the proxy's own reads: the end of that side's input
                chunk = b""
            if not chunk:
                setattr(self._result, f"{side}_eof", True)
                return None
            buf += chunk
            nl = buf.find(b"\n")
            if nl < 0:
                if len(buf) > prerelay.MAX_LINE_BYTES:
                    return None
                continue
            line = bytes(buf[: nl + 1])
            accepted = accept(line)
            if accepted is None or not self._write(dst, line):
                return None
            del buf[: nl + 1]
            self._result.relayed.append((side, line))
            return accepted

    def _write(self, fd: int, line: bytes) -> bool:
        """Write ``line`` (at most PIPE_BUF bytes) once the blocking ``fd`` has room for it;
        False, with nothing written, when stopped first, or when it fails (EPIPE: the reader
        is gone; the proxy finds out itself)."""
        try:
            while True:
                ready = select.select([self._wake_r], [fd], [])
                if self._wake_r in ready[0]:
                    return False
                if ready[1]:
                    break
            written = os.write(fd, line)  # a pipe with room takes it whole (pipe(7))
            while written < len(line):  # (a blocking socket: the rest follows)
                written += os.write(fd, line[written:])
            return True
        except (OSError, ValueError):
            return False


def _blocking(fd: int) -> bool:
    try:
        return os.get_blocking(fd)
    except OSError:
        return False
