"""``policyd proxy`` and ``policyd serve``."""

from __future__ import annotations

import asyncio
import secrets
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from policyd import logs, status, telemetry
from policyd.cli.common import USAGE_ERROR, build_engine, build_reloader, load_policy, report_load_error
from policyd.core.policy import PolicyError, PolicySet, build_set
from policyd.core.relay import Relay
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


def _local_session_policy(settings: Settings) -> Callable[[], PolicySet | None]:
    """With a daemon deciding consults, this proxy still applies ``[modes]`` and ``[answers]``
    itself: from the policy files it can read, else from the shipped policies (never none)."""
    from policyd import loader

    try:
        policy = load_policy(settings).policy
    except PolicyError as exc:
        logs.get().warning("policy.local_load_failed", errors=[str(e) for e in exc.errors][:5],
                           effect="shipped [modes] and [answers] apply")
        policy = build_set(loader.embedded_sources())
    return lambda: policy


def proxy(settings: Settings, agent: list[str], cli_policy: list[str] | None, config: str | None) -> int:
    from policyd.proxy import engine_decider, run_proxy

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
        id_prefix=f"policyd-{secrets.token_hex(6)}",
    )
    socket_path = daemon_path(settings, own_policy=bool(cli_policy) or settings.decision_log is not None)
    try:
        if socket_path is not None:
            from policyd.daemon_client import DaemonClient

            relay.policy = _local_session_policy(settings)
            client = DaemonClient(socket_path, settings.daemon_timeout_s)
            logs.get().info("daemon.consulted", socket=str(socket_path), timeout_s=settings.daemon_timeout_s)
            return run_proxy(agent, relay, client.decide, settings.kill_grace_s, None,
                             on_remember=client.remember, local_decision_log=False)
        try:
            engine = build_engine(settings, load_policy(settings))
        except PolicyError as exc:
            return report_load_error(exc)
        relay.policy = lambda: engine.policy  # [modes], [answers]: the set in force, reloads included
        _observe_memory(engine)
        reloader = build_reloader(engine, settings, cli_policy, config, on_change=lambda st: status.write(st, agent))
        status.write(reloader.status, agent)
        try:
            return run_proxy(agent, relay, engine_decider(engine), settings.kill_grace_s, reloader,
                             on_remember=engine.remember_choice)
        finally:
            status.remove()
    finally:
        logs.close()


def serve(settings: Settings, socket_path: str | None, cli_policy: list[str] | None, config: str | None) -> int:
    from policyd.server import Daemon, default_socket_path

    try:
        engine = build_engine(settings, load_policy(settings, secure=True), secure=True)
    except PolicyError as exc:
        return report_load_error(exc)
    _observe_memory(engine)
    reloader = build_reloader(engine, settings, cli_policy, config, secure=True)
    path = Path(socket_path or settings.daemon_socket or default_socket_path())
    try:
        daemon = Daemon(engine, reloader, socket_path=path, group=settings.group)
        telemetry.observe("daemon.connections", lambda: daemon.open_connections)
        return asyncio.run(daemon.serve())
    except (OSError, KeyError) as exc:
        logs.get().error("daemon.start_failed", error=str(exc))
        print(f"policyd serve: {exc}", file=sys.stderr)
        return 1


def _observe_memory(engine: Any) -> None:
    """Export the number of remembered entries as a gauge (when telemetry is on)."""
    memory = engine.memory
    if memory is not None:
        from policyd.store import count_entries

        telemetry.observe("remembered.entries", lambda: count_entries(memory.path))
