"""A proxy whose agent exits while the policy is still loading exits too.

The load runs on a thread and hands its result to the event loop
(``call_soon_threadsafe``); when it finished just as the loop was stopping, that callback was
queued on a loop that never ran again, the load's future stayed unset, and the proxy waited
for it forever after the agent had gone (seen in ~1 of 20 runs of ``bench_startup``).
"""

from __future__ import annotations

import asyncio
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

from policyd.cli.run import _EmbeddedStart
from policyd.settings import Settings

INITIALIZE = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}\n'


def test_a_load_finished_on_a_stopped_loop_counts_as_loaded() -> None:
    embedded = _EmbeddedStart(Settings(search_path=[]), ["agent"], None, None)  # type: ignore[arg-type]
    loop = asyncio.new_event_loop()

    async def start() -> None:
        embedded.start()

    loop.run_until_complete(start())  # the load thread runs; the loop never runs again
    assert embedded._thread is not None
    embedded._thread.join(timeout=60)
    loop.close()  # _finish was queued on it and is dropped
    assert not embedded.future.done()
    found: list[object] = []
    waiter = threading.Thread(target=lambda: found.append(embedded.settle()), daemon=True)
    waiter.start()
    waiter.join(timeout=30)
    assert not waiter.is_alive(), "settle() waits forever for a load that already finished"
    assert found == [None] and embedded.engine is None


def test_proxies_whose_agent_exits_during_the_load_all_exit(tmp_path: Path) -> None:
    """The same path through real processes: an agent that exits right after answering
    initialize, the client closing at once, many times (the race window is narrow: the
    test above is the one that fails without the fix; this one guards the whole exit)."""
    policyd = Path(sys.executable).with_name("policyd")
    agent = [sys.executable, "-c", "import runpy; runpy.run_module('policyd.demo_agent', run_name='__main__')"]
    env = {**os.environ, "POLICYD_SEARCH_PATH": "[]", "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "XDG_RUNTIME_DIR": str(tmp_path / "run"), "XDG_STATE_HOME": str(tmp_path / "state")}
    (tmp_path / "run").mkdir(mode=0o700)
    for _ in range(12):
        proc = subprocess.Popen([str(policyd), "proxy", "--", *agent], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, bufsize=0)
        assert proc.stdin is not None and proc.stdout is not None
        os.write(proc.stdin.fileno(), INITIALIZE)
        ready, _, _ = select.select([proc.stdout.fileno()], [], [], 60)
        assert ready, "no initialize answer"
        os.read(proc.stdout.fileno(), 65536)
        proc.stdin.close()
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        hung = proc.poll() is None
        if hung:
            proc.kill()
        proc.wait()
        proc.stdout.close()
        assert not hung, "the proxy did not exit after its agent did"
