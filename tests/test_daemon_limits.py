"""The daemon's memory is bounded per peer and in total (issue 9 item 10): a real
``policyd serve`` and real socket clients holding half-written lines."""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from test_daemon import Conn, Daemon, daemons, policy_text, result, write_policy  # noqa: F401 - fixture

from policyd.server import LINE_DEADLINE_S, MAX_CONNECTIONS_PER_UID, TOTAL_BUFFER_BYTES

pytestmark = pytest.mark.timeout(120)

MIB = 1024 * 1024


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _reply_or_eof(sock: socket.socket) -> dict[str, object] | None:
    """The daemon's one-line answer on ``sock``, or None when it sent nothing (yet)."""
    sock.settimeout(0.2)
    data = b""
    with contextlib.suppress(OSError):
        while b"\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    line = data.split(b"\n", 1)[0]
    return json.loads(line) if line.strip() else None


def test_200_half_line_holders_keep_rss_bounded(tmp_path: Path,
                                                daemons: Callable[..., Daemon]) -> None:  # noqa: F811
    """200 connections each sending 1 MiB of a line that never ends: the daemon refuses
    what passes its bounds with a clear error, its RSS stays within the total buffer bound,
    and once the holders are gone (or their line deadline passed) it answers again."""
    d = daemons(tmp_path, write_policy(tmp_path / "p.toml", policy_text("allow"))).start()
    before = rss_mib(d.pid)
    chunk = b'{"jsonrpc": "2.0", "id": 1, "method": "v1/status", "params": {"pad": "' + b"x" * MIB
    holders: list[socket.socket] = []
    refusals: list[str] = []
    for _ in range(200):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(str(d.socket))
        s.settimeout(5)
        with contextlib.suppress(OSError):
            s.sendall(chunk)
        holders.append(s)
    time.sleep(0.5)
    peak = rss_mib(d.pid)
    for s in holders:
        reply = _reply_or_eof(s)
        if reply is not None:
            error = reply.get("error")
            assert isinstance(error, dict), reply
            refusals.append(str(error["message"]))
    grown = peak - before
    print(f"daemon RSS {before:.0f} MiB -> {peak:.0f} MiB with 200 half-line holders; {len(refusals)} refused")
    assert grown < TOTAL_BUFFER_BYTES / MIB + 48, (before, peak)  # 200 x 1 MiB would be 200+ MiB
    assert 200 - MAX_CONNECTIONS_PER_UID <= len(refusals)
    assert any("too many connections for uid" in m for m in refusals), refusals[:3]
    assert all(m.startswith("policyd: ") for m in refusals)
    assert d.events("peer.limited")
    for s in holders:
        s.close()
    deadline = time.monotonic() + 10
    while True:  # the daemon notices the closed connections and serves again
        try:
            assert d.pid == result(d.socket, "v1/status", {})["pid"]
            break
        except (AssertionError, OSError, EOFError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_half_line_past_its_deadline_is_dropped(tmp_path: Path,
                                                daemons: Callable[..., Daemon]) -> None:  # noqa: F811
    """A line must end within LINE_DEADLINE_S of its first byte; an idle connection between
    lines is fine (a proxy keeps one open)."""
    d = daemons(tmp_path, write_policy(tmp_path / "p.toml", policy_text("allow"))).start()
    idle = Conn(d.socket, timeout=LINE_DEADLINE_S + 20)
    staller = Conn(d.socket, timeout=LINE_DEADLINE_S + 20)
    staller.send_raw(b'{"jsonrpc": "2.0", "id": 1, "method": "v1/sta')
    reply = staller.read_json()  # arrives once the deadline passed
    assert f"not completed within {LINE_DEADLINE_S:g} s" in reply["error"]["message"]
    with pytest.raises(EOFError):
        staller.read_line()
    assert "result" in idle.request("v1/status", {})  # the idle one stayed
