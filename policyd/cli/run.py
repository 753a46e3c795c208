"""``policyd proxy`` and ``policyd serve``."""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

from policyd import logs, status
from policyd.cli.common import USAGE_ERROR, build_engine, build_reloader, load_policy, report_load_error
from policyd.core.policy import PolicyError
from policyd.core.relay import Consult, Relay, RememberChoice, Resolution
from policyd.engine import Engine
from policyd.settings import Settings


def daemon_path(settings: Settings, own_policy: bool = False) -> Path | None:
    """The daemon this proxy consults, or None to embed the engine.

    ``daemon = off``: embedded. ``require``, or an explicit ``daemon_socket``: that daemon
    (default socket when not given), failing closed when it is unreachable. ``auto``: the
    default socket when a daemon answers there — unless this proxy was given its own
    ``--policy`` or ``--decision-log`` (``own_policy``), which it then honours embedded; a
    socket left by a daemon that died is not a daemon.
    """
    from policyd.server import default_socket_path

    if settings.daemon == "off":
        return None
    if settings.daemon_socket:
        return Path(settings.daemon_socket)
    default = default_socket_path()
    if settings.daemon == "require":
        return default
    if own_policy or not default.exists():
        return None
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(0.5)
        probe.connect(str(default))
    except OSError as exc:
        logs.get().warning("daemon.stale_socket", socket=str(default), error=str(exc), effect="engine embedded")
        return None
    finally:
        probe.close()
    return default


def off_loop(engine: Engine) -> tuple[Callable[[Consult], Awaitable[Resolution]],
                                      Callable[[RememberChoice], Awaitable[str | None]]]:
    """The proxy's decider and rememberer over an embedded engine, each run on a worker
    thread: a store lookup waiting for SQLite's lock (up to its busy timeout) never stops
    the event loop, so the relay keeps relaying in both directions meanwhile."""

    async def decide(consult: Consult) -> Resolution:
        assert consult.query is not None
        return await asyncio.to_thread(engine.decide, consult.query)

    async def remember(choice: RememberChoice) -> str | None:
        return await asyncio.to_thread(engine.remember_choice, choice)

    return decide, remember


def proxy(settings: Settings, agent: list[str], cli_policy: list[str] | None, config: str | None) -> int:
    from policyd.proxy import run_proxy

    if agent and agent[0] == "--":
        agent = agent[1:]
    if not agent:
        print("policyd proxy: missing agent command: policyd proxy [options] -- AGENT [ARGS...]", file=sys.stderr)
        return USAGE_ERROR
    relay = Relay(
        headless=settings.headless,
        headless_fallback=settings.headless_fallback,
        home=settings.home,
        pass_always_to_agent=settings.pass_always_to_agent,
    )
    socket_path = daemon_path(settings, own_policy=bool(cli_policy) or settings.decision_log is not None)
    try:
        if socket_path is not None:
            from policyd.daemon_client import DaemonClient

            client = DaemonClient(socket_path, settings.daemon_timeout_s)
            logs.get().info("daemon.consulted", socket=str(socket_path), timeout_s=settings.daemon_timeout_s)
            return run_proxy(agent, relay, client.decide, settings.kill_grace_s, None,
                             on_remember=client.remember, local_decision_log=False)
        try:
            loaded = load_policy(settings)
        except PolicyError as exc:
            return report_load_error(exc)
        engine = build_engine(settings, loaded)
        reloader = build_reloader(engine, settings, cli_policy, config, on_change=lambda st: status.write(st, agent))
        status.write(reloader.status, agent)
        decide, remember = off_loop(engine)
        try:
            return run_proxy(agent, relay, decide, settings.kill_grace_s, reloader, on_remember=remember)
        finally:
            status.remove()
    finally:
        logs.close()


def serve(settings: Settings, socket_path: str | None, cli_policy: list[str] | None, config: str | None) -> int:
    from policyd.server import Daemon, default_socket_path

    try:
        loaded = load_policy(settings, secure=True)
    except PolicyError as exc:
        return report_load_error(exc)
    engine = build_engine(settings, loaded)
    reloader = build_reloader(engine, settings, cli_policy, config, secure=True)
    path = Path(socket_path or settings.daemon_socket or default_socket_path())
    try:
        daemon = Daemon(engine, reloader, socket_path=path, group=settings.group)
        return asyncio.run(daemon.serve())
    except (OSError, KeyError) as exc:
        logs.get().error("daemon.start_failed", error=str(exc))
        print(f"policyd serve: {exc}", file=sys.stderr)
        return 1
