"""``policyd proxy --chain``: policyd as a component of an ACP proxy chain (no agent spawned).

A conductor (``agent-client-protocol-conductor``, ``@thinkwell/conductor``, or a client that
conducts) spawns policyd and the agent; policyd's stdin and stdout are the conductor's. The
lines are translated by :class:`policyd.core.chain.Chain` around the same relay a spawned
agent gets: this module only pumps bytes (docs/reference.md, "In an ACP proxy chain").

Lifecycle: the policy loads on a thread while the conductor's ``initialize`` is relayed (the
successor's lines wait for it but for the answer to ``initialize``); a load that fails is
told to the conductor as the error of its open requests and policyd exits 2. Conductor EOF,
SIGTERM or SIGINT: policyd stops (0). SIGHUP reloads the policy (embedded engine).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import secrets
import signal
import sys
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any

from policyd import logs
from policyd.core.chain import Chain
from policyd.core.relay import Action, Relay, Resolution
from policyd.proxy import LOAD_FAILED, REMEMBER_AT_EXIT_S, Decider, Proxy, Rememberer, _chunks_from_fd, lines

if TYPE_CHECKING:
    from policyd.reload import Reloader
    from policyd.spawn import Spawned


class ChainProxy(Proxy):
    """One conductor connection: :class:`Proxy`'s decisions and reloads, the conductor's stdio."""

    def __init__(self, chain: Chain, decide: Decider, reloader: Reloader | None = None) -> None:
        super().__init__([], chain.relay, decide, 0.0, reloader)
        self.chain = chain
        self._done = asyncio.Event()
        self._told_dialect = False

    async def run(self) -> int:
        log = logs.get()
        loading = self.startup() if self.startup is not None else None
        if loading is None:
            self._loaded.set()
        await self.stdout.open()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._done.set)
        loop.add_signal_handler(signal.SIGHUP, self._sighup)
        self._start_watcher()
        log.info("chain.started", pid=os.getpid())
        pump = asyncio.create_task(self._from_conductor())
        pump.add_done_callback(self._pump_ended)
        gone = asyncio.create_task(self._on_conductor_gone())
        startup_task = asyncio.create_task(self._finish_chain_startup(loading)) if loading is not None else None
        background = asyncio.create_task(self.background()) if self.background is not None else None
        await self._done.wait()
        if self._remembering:  # a human's choice being stored is not lost at exit
            await asyncio.wait(list(self._remembering), timeout=REMEMBER_AT_EXIT_S)
        for task in (pump, gone, startup_task, background):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.remove_signal_handler(sig)
        if self._reload_task is not None:
            await asyncio.wait([self._reload_task])
        if self.reloader is not None and self._watcher is not None:
            self.reloader.stop()
            await self._watcher
        await self.stdout.close()
        log.info("chain.stopped")
        if self.startup_error is not None:
            return LOAD_FAILED
        return 70 if self._failed else 0  # 70: EX_SOFTWARE, policyd itself failed

    def _pump_ended(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            self._failed = True
            logs.get().error("relay.failed", task="chain", error=repr(task.exception()))
        self._done.set()

    async def _from_conductor(self) -> None:
        async for line in lines(_chunks_from_fd(sys.stdin.fileno())):
            if not self._loaded.is_set() and self.chain.needs_policy(line):
                await self._loaded.wait()
            await self._execute(self.chain.from_conductor(line, time.time()))
            self.relay.coverage.settle()
            if self.chain.initialized and not self._told_dialect:
                self._told_dialect = True
                logs.get().info("chain.initialized", dialect=self.chain.dialect.name)
        logs.get().info("conductor.eof")
        self._client_eof = True

    async def _on_conductor_gone(self) -> None:
        await self.stdout.closed.wait()
        logs.get().warning("conductor.stdout_closed", effect="stopping")
        await self._execute(self.chain.client_gone())
        self._done.set()

    async def _finish_chain_startup(self, loading: concurrent.futures.Future[Reloader | None]) -> None:
        try:
            self.reloader = await asyncio.shield(asyncio.wrap_future(loading))
        except Exception as exc:
            self.startup_error = exc
            await self._tell_client(exc)
            self._done.set()
            return
        self._start_watcher()
        self._loaded.set()

    # the relay's actions reach the conductor translated by the chain (once: from_conductor,
    # resolve, expire and client_gone return them translated; fail_start's answers to the
    # conductor's requests are the same either way)
    def _resolve(self, key: int, resolution: Resolution) -> list[Action]:
        return self.chain.resolve(key, resolution)

    def _expire(self, token: str) -> list[Action]:
        return self.chain.expire(token)


def run_chain(
    argv: Sequence[str],
    relay: Relay,
    decide: Decider,
    kill_grace_s: float,
    reloader: Reloader | None = None,
    on_remember: Rememberer | None = None,
    local_decision_log: bool = True,
    startup: Callable[[], concurrent.futures.Future[Reloader | None]] | None = None,
    spawned: Spawned | None = None,
    background: Callable[[], Coroutine[Any, Any, None]] | None = None,
) -> int:
    """:func:`policyd.proxy.run_proxy`'s twin for a proxy chain (``argv``, ``kill_grace_s``
    and ``spawned`` unused: the conductor owns the agent): serve one conductor on stdio until
    it closes; returns policyd's exit code (:data:`LOAD_FAILED` when ``startup`` failed)."""
    relay.known_sessions_only = True
    proxy = ChainProxy(Chain(relay, f"policyd-chain-{secrets.token_hex(6)}"), decide, reloader)
    proxy.on_remember = on_remember
    proxy.local_decision_log = local_decision_log
    proxy.startup = startup
    proxy.background = background
    if local_decision_log:  # an allow is given only once its record is written
        relay.audit = lambda log: logs.decision(log.event, log.fields)
    return asyncio.run(proxy.run())
