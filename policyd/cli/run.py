"""``policyd proxy`` and ``policyd serve``."""

from __future__ import annotations

import asyncio
import concurrent.futures
import secrets
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policyd import heap, logs, status, telemetry
from policyd.core.relay import Consult, Relay, RememberChoice, Resolution

if TYPE_CHECKING:
    from policyd.core.policy import PolicySet
    from policyd.gateway import Gateway
    from policyd.reload import Reloader
    from policyd.settings import Settings
    from policyd.spawn import Spawned

#: Exit code for usage errors (policyd.cli.common.USAGE_ERROR, which imports the engine).
USAGE_ERROR = 2


def daemon_path(settings: Settings, own_policy: bool = False) -> Path | None:
    """The daemon this proxy consults, or None to embed the engine.

    ``daemon = off``: embedded. ``require``, or an explicit ``daemon_socket``: that daemon
    (default socket when not given), failing closed when it is unreachable. ``auto``: the
    default socket when a daemon answers there — unless this proxy was given its own
    ``--policy`` or ``--decision-log`` (``own_policy``), which it then honours embedded; a
    socket left by a daemon that died is not a daemon, and one of another user (see
    :func:`policyd.daemon_client.untrusted`) is not consulted (``daemon.untrusted``, once).
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
    from policyd.daemon_client import peer_untrusted, untrusted

    why = untrusted(default)
    if why:
        logs.get().warning("daemon.untrusted", socket=str(default), reason=why, effect="not consulted: engine embedded")
        return None
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(0.5)
        probe.connect(str(default))
        why = peer_untrusted(probe, default)
    except OSError as exc:
        logs.get().warning("daemon.stale_socket", socket=str(default), error=str(exc), effect="engine embedded")
        return None
    finally:
        probe.close()
    if why:
        logs.get().warning("daemon.untrusted", socket=str(default), reason=why, effect="not consulted: engine embedded")
        return None
    return default


def _local_session_policy(settings: Settings) -> Callable[[], PolicySet | None]:
    """With a daemon deciding consults, this proxy still applies ``[modes]`` and ``[answers]``
    itself: from the policy files it can read, else from the shipped policies (never none);
    :class:`policyd.daemon_client.SessionPolicyWatch` adds the daemon's own tables, kept in
    step with the daemon's reloads."""
    from policyd import loader
    from policyd.cli.common import load_policy
    from policyd.core.policy import PolicyError, build_set

    try:
        policy = load_policy(settings).policy
    except PolicyError as exc:
        logs.get().warning("policy.local_load_failed", errors=[str(e) for e in exc.errors][:5],
                           effect="shipped [modes] and [answers] apply")
        policy = build_set(loader.embedded_sources())
    return lambda: policy


def proxy(
    settings: Settings, agent: list[str], cli_policy: list[str] | None, config: str | None,
    spawned: Spawned | None = None, gateway: Gateway | None = None, chain: bool = False,
) -> int:
    """``policyd proxy``: in front of ``agent`` (spawned), or with ``chain`` as a component
    of an ACP proxy chain (policyd.chainproxy: the conductor spawns the agent)."""
    from policyd.proxy import run_proxy

    if agent and agent[0] == "--":
        agent = agent[1:]
    if chain and settings.sandbox == "required":
        print("policyd proxy --chain: sandbox = required, but in a proxy chain the conductor spawns the agent: "
              "policyd cannot confine it", file=sys.stderr)
        return USAGE_ERROR
    if not agent and not chain:
        print("policyd proxy: missing agent command: policyd proxy [options] -- AGENT [ARGS...]", file=sys.stderr)
        return USAGE_ERROR
    relay = Relay(
        headless=settings.headless,
        headless_fallback=settings.headless_fallback,
        home=settings.home,
        pass_always_to_agent=settings.pass_always_to_agent,
        id_prefix=f"policyd-{secrets.token_hex(6)}",
        switch_timeout_s=settings.mode_switch_timeout_s,
    )
    box = spawned.sandbox if spawned is not None else None
    if box is not None:
        relay.sandboxed = True  # session.sandboxed
        logs.get().info("sandbox.started", **box.notes)
    elif settings.sandbox != "off":
        logs.get().warning("sandbox.unavailable", mode=settings.sandbox, effect="the agent runs without a sandbox")
    runner = run_proxy
    if chain:
        from policyd.chainproxy import run_chain

        runner = run_chain  # run_proxy's signature; no agent, no spawn
    socket_path = daemon_path(settings, own_policy=bool(cli_policy) or settings.decision_log is not None)
    try:
        if socket_path is not None:
            from policyd.daemon_client import DaemonClient, SessionPolicyWatch

            local = _local_session_policy(settings)()
            assert local is not None
            if box is not None:
                from policyd.sandbox import Unavailable, check_loaded

                why = check_loaded(box, local.sandbox)
                try:
                    if not why:
                        box.start_egress()  # it adopts the listeners sandbox_init registered
                except Unavailable as exc:
                    why = str(exc)
                if why:
                    print(f"policyd: {why}", file=sys.stderr)
                    spawned.stop(settings.kill_grace_s)  # type: ignore[union-attr]
                    box.close()
                    return USAGE_ERROR
                if box.egress is not None:  # connections: decided by the policy files this proxy reads
                    box.egress.set_decider(_local_egress_decider(settings, local))
            watch = SessionPolicyWatch(socket_path, settings.daemon_timeout_s, local)
            relay.policy = watch.current
            _give_budget(gateway, relay)
            client = DaemonClient(socket_path, settings.daemon_timeout_s)
            logs.get().info("daemon.consulted", socket=str(socket_path), timeout_s=settings.daemon_timeout_s)
            try:
                return runner(agent, relay, client.decide, settings.kill_grace_s, None,
                              on_remember=client.remember, local_decision_log=False, spawned=spawned,
                              background=watch.run)
            finally:
                if box is not None:
                    box.close()
        embedded = _EmbeddedStart(settings, agent, cli_policy, config)
        embedded.box = box
        # [modes], [answers]: the set in force, reloads included (the proxy relays no agent
        # line before the load has finished, so a session answer is never ungoverned)
        relay.policy = lambda: embedded.engine.policy if embedded.engine is not None else None
        _give_budget(gateway, relay)
        try:
            code = runner(agent, relay, embedded.decide, settings.kill_grace_s, None,
                          on_remember=embedded.remember, startup=embedded.start, spawned=spawned)
        finally:
            status.remove()
            if box is not None:
                box.close()
        if embedded.started and embedded.settle() is not None:  # waits for a load still running
            return embedded.report()
        return code
    finally:
        logs.close()


def _give_budget(gateway: Gateway | None, relay: Relay) -> None:
    """The gateway's budget is the ``[budget]`` of the policy set in force (None while it loads)."""
    if gateway is None:
        return
    from policyd.core.usage import Budget

    def budget() -> Budget | None:
        policy = relay.policy() if relay.policy is not None else None
        return None if policy is None else policy.budget

    gateway.set_budget(budget)


class _EmbeddedStart:
    """The embedded engine, loaded on a thread while the agent starts (policyd.proxy's
    ``startup``): a permission request waits for it; a failed load makes the proxy stop the
    agent, and :meth:`report` prints every error (exit 2, as before the agent ever ran)."""

    def __init__(self, settings: Settings, agent: list[str], cli_policy: list[str] | None, config: str | None) -> None:
        self.settings, self.agent, self.cli_policy, self.config = settings, agent, cli_policy, config
        self.future: concurrent.futures.Future[Reloader | None] = concurrent.futures.Future()
        self.engine: Any = None
        self.started = False  # start() runs only once the agent was spawned
        self.box: Any = None  # the agent's sandbox (policyd.sandbox.Plan): its [sandbox] must be the set's
        self._thread: threading.Thread | None = None
        self.puller: Any = None  # policyd.bundle.Puller when [bundles] is set

    def start(self) -> concurrent.futures.Future[Reloader | None]:
        """Load on a thread (parse, compile, examples: the slow part); the engine, memory
        (SQLite: one thread) and reloader are then built on the event loop's thread."""
        loop = asyncio.get_running_loop()
        self.started = True
        self._thread = threading.Thread(target=self._load, args=(loop,), name="policyd-load", daemon=True)
        self._thread.start()
        return self.future

    def settle(self) -> BaseException | None:
        """Once the proxy's event loop has stopped: the load's failure, or None. Waits for a
        load still running. A load that finished as the loop was stopping had its
        :meth:`_finish` queued on a loop that no longer runs: nothing is left to finish
        (the agent is gone), so it counts as loaded instead of leaving the future unset
        (``exception()`` would wait forever)."""
        if self._thread is not None:
            self._thread.join()
        if not self.future.done():
            self.future.set_result(None)
        return self.future.exception()

    def _load(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            if self.box is not None:
                self.box.start_egress()  # adopts the listeners sandbox_init registered (Unavailable: stop)
            from policyd import bundle
            from policyd.cli.common import load_policy, load_shadow

            self.puller = bundle.start(self.settings)
            loaded = load_policy(self.settings)
            if self.box is not None:
                from policyd.sandbox import Unavailable, check_loaded

                if why := check_loaded(self.box, loaded.policy.sandbox):
                    raise Unavailable(why)
            shadow = load_shadow(self.settings)
        except BaseException as exc:  # every failure stops the agent; report() tells which
            self.future.set_exception(exc)  # (a concurrent Future: thread-safe)
            return
        try:
            loop.call_soon_threadsafe(self._finish, loaded, shadow)
        except RuntimeError:  # the agent already exited and the loop is closed
            self.future.set_result(None)

    def _finish(self, loaded: Any, shadow: Any) -> None:
        try:
            from policyd.cli.common import build_engine, build_reloader

            engine = build_engine(self.settings, loaded, shadow=(shadow,))
            _observe_memory(engine)
            box = self.box
            sandbox = ({k: box.notes[k] for k in ("engine", "abi") if k in box.notes} if box is not None else None)
            reloader = build_reloader(engine, self.settings, self.cli_policy, self.config,
                                      on_change=lambda st: status.write(st, self.agent, sandbox))
            status.write(reloader.status, self.agent, sandbox)
            if self.puller is not None:  # a new bundle reloads at once, watched or not
                self.puller.on_installed = lambda: reloader.reload_soon("bundle")
            self.engine = engine
            if self.box is not None and self.box.egress is not None:  # connections: decided by the same engine
                from policyd.egress import engine_decider

                self.box.egress.set_decider(engine_decider(engine))
            self.future.set_result(reloader)
            heap.settle()
        except Exception as exc:
            self.future.set_exception(exc)

    async def _engine(self) -> Any:
        try:
            await asyncio.shield(asyncio.wrap_future(self.future))  # a cancelled wait leaves the load be
        except Exception:  # the proxy is stopping the agent (exit 2): never answer
            await asyncio.Event().wait()
        return self.engine

    # A decision runs where Engine.decide_on_loop says (a small request on the event loop, a
    # long one and a store lookup that would wait for SQLite's lock on a worker thread); a
    # remember on a worker thread: a held lock never stops the event loop, relaying goes on.

    async def decide(self, consult: Consult) -> Resolution:
        assert consult.query is not None
        loaded = self.future.done() and self.future.exception() is None  # no await: most decisions
        engine = self.engine if loaded and self.engine is not None else await self._engine()
        result: Resolution = await engine.decide_on_loop(consult.query, consult.size)
        return result

    async def remember(self, choice: RememberChoice) -> object:
        engine = await self._engine()
        return await asyncio.to_thread(engine.remember_choice, choice)

    def report(self) -> int:
        from policyd.cli.common import report_load_error
        from policyd.core.policy import PolicyError

        exc = self.future.exception()
        if isinstance(exc, PolicyError):
            return report_load_error(exc)
        logs.get().error("policy.load_failed", errors=[repr(exc)])
        print(f"policyd: the policy did not load: {exc!r}", file=sys.stderr)
        return USAGE_ERROR


def serve(settings: Settings, socket_path: str | None, cli_policy: list[str] | None, config: str | None) -> int:
    from policyd import loader
    from policyd.cli.common import build_engine, build_reloader, load_policy, report_load_error
    from policyd.core.policy import PolicyError
    from policyd.server import Daemon, default_socket_path

    loader.PARSE_IN_CHILD = True  # cel-python stays out of the long-running daemon
    try:
        from policyd import bundle

        puller = bundle.start(settings)
        engine = build_engine(settings, load_policy(settings, secure=True), secure=True)
    except PolicyError as exc:
        return report_load_error(exc)
    from policyd import celcache

    celcache.release_memory()  # what loading needed and serving does not
    heap.settle()
    _observe_memory(engine)
    reloader = build_reloader(engine, settings, cli_policy, config, secure=True)
    if puller is not None:  # a new bundle reloads at once, watched or not
        puller.on_installed = lambda: reloader.reload_soon("bundle")
    path = Path(socket_path or settings.daemon_socket or default_socket_path())
    try:
        daemon = Daemon(engine, reloader, socket_path=path, group=settings.group)
        telemetry.observe("daemon.connections", lambda: daemon.open_connections)
        return asyncio.run(daemon.serve())
    except (OSError, KeyError) as exc:
        logs.get().error("daemon.start_failed", error=str(exc))
        print(f"policyd serve: {exc}", file=sys.stderr)
        return 1


def _local_egress_decider(settings: Settings, policy: PolicySet | None) -> Any:
    """With a daemon deciding permission requests, the sandbox's connections are decided by
    an engine of the policy files this proxy reads (the daemon protocol has no connections)."""
    from policyd.cli.common import build_engine
    from policyd.egress import engine_decider
    from policyd.loader import Loaded

    quiet = settings.model_copy(update={"remember": False, "shadow_policy": []})
    return engine_decider(build_engine(quiet, Loaded(policy, embedded=False)) if policy is not None else None)


def _observe_memory(engine: Any) -> None:
    """Export the number of remembered entries as a gauge (when telemetry is on)."""
    memory = engine.memory
    if memory is not None:
        from policyd.store import count_entries

        telemetry.observe("remembered.entries", lambda: count_entries(memory.path))
