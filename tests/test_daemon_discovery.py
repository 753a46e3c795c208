"""How a proxy picks between the daemon and its embedded engine (policyd.cli.run.daemon_path)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from policyd.cli.run import daemon_path
from policyd.settings import Settings


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    (tmp_path / "policyd").mkdir()
    return tmp_path / "policyd" / "policyd.sock"


def _settings(**kw: object) -> Settings:
    return Settings(search_path=[], **kw)  # type: ignore[arg-type]


def test_auto_uses_a_live_default_daemon(runtime: Path) -> None:
    """auto: a daemon answering on the default socket is consulted."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(runtime))
        server.listen(1)
        assert runtime == daemon_path(_settings())


def test_auto_honours_the_proxys_own_policy(runtime: Path) -> None:
    """auto: a proxy given its own --policy / --decision-log embeds the engine."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(runtime))
        server.listen(1)
        assert daemon_path(_settings(), own_policy=True) is None


def test_auto_treats_a_stale_socket_as_no_daemon(runtime: Path) -> None:
    """auto: a socket file left by a daemon that died is not a daemon (engine embedded)."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(runtime))
    server.close()
    assert runtime.exists()
    assert daemon_path(_settings()) is None


def test_require_and_explicit_socket_always_consult(runtime: Path, tmp_path: Path) -> None:
    """require / an explicit socket: the daemon, even when nothing answers (fail closed)."""
    assert runtime == daemon_path(_settings(daemon="require"), own_policy=True)
    assert tmp_path / "x.sock" == daemon_path(_settings(daemon_socket=str(tmp_path / "x.sock")))
    assert daemon_path(_settings(daemon="off")) is None
