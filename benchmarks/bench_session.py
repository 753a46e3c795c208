"""Cost of governing the whole session, in process (pure relay + embedded engine, shipped
policies), medians over many rounds with same-run ratios:

1. A session start: the agent's ``session/new`` answer (Claude's recorded shape: 4 modes,
   mode and model config options, current ``auto``) through a governed relay — held, a
   ``session/set_mode`` sent, the agent's answer, the rewritten answer released — vs the
   same answer through an ungoverned relay (relayed as is); "first" with the policy's
   verdict cache empty (each mode's ``accept`` evaluated), "later" with it filled.
2. A side request: ``fs/read_text_file`` of a workspace file (each under its own id)
   decided by the engine and forwarded, vs the equivalent ``session/request_permission`` (kind read, same path).
3. The hot path: a ``session/update`` notification through a governed relay vs an
   ungoverned one (the mode and side-channel checks must not slow plain traffic).

Run: ``python benchmarks/bench_session.py`` (~15 s).
"""

from __future__ import annotations

import itertools
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from _common import machine  # benchmarks/_common.py (sys.path[0] is this folder)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from policyd import loader
from policyd.core.policy import build_set
from policyd.core.relay import Consult, Relay, SendToAgent
from policyd.engine import Engine

ROUNDS = 2000
SID = "7a5d865a-4ed7-4447-ad0b-edad6714f37e"
CWD = "/srv/work/proj"
SHIPPED = build_set(loader.embedded_sources())
ENGINE = Engine(SHIPPED)
MODES = [{"id": "default", "name": "Manual", "description": "Always ask before making changes"},
         {"id": "acceptEdits", "name": "Accept edits", "description": "Automatically accept all file edits"},
         {"id": "plan", "name": "Plan", "description": "Create a plan before making changes"},
         {"id": "auto", "name": "Auto", "description": "Claude handles permission decisions"}]
OPTIONS = [{"value": m["id"], "name": m["name"], "description": m["description"]} for m in MODES]
ANSWER = {"sessionId": SID, "modes": {"currentModeId": "auto", "availableModes": MODES},
          "configOptions": [{"id": "mode", "name": "Mode", "category": "mode", "type": "select",
                             "currentValue": "auto", "options": OPTIONS},
                            {"id": "model", "name": "Model", "category": "model", "type": "select",
                             "currentValue": "default", "options": [{"value": "default", "name": "Default"}]}]}


def enc(msg: object) -> bytes:
    return json.dumps(msg).encode() + b"\n"


INIT = enc({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
INIT_ANSWER = enc({"jsonrpc": "2.0", "id": 1, "result": {"agentInfo": {"name": "claude-agent-acp"}}})
NEW = enc({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": CWD}})
NEW_ANSWER = enc({"jsonrpc": "2.0", "id": 2, "result": ANSWER})
READ = enc({"jsonrpc": "2.0", "id": 5, "method": "fs/read_text_file",
            "params": {"sessionId": SID, "path": f"{CWD}/a.py"}})
PERMISSION = enc({"jsonrpc": "2.0", "id": 6, "method": "session/request_permission",
                  "params": {"sessionId": SID, "toolCall": {"toolCallId": "c1", "kind": "read",
                                                            "locations": [{"path": f"{CWD}/a.py"}]},
                             "options": [{"optionId": "ok", "name": "Yes", "kind": "allow_once"},
                                         {"optionId": "no", "name": "No", "kind": "reject_once"}]}})
NOTE = enc({"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": SID, "update": {"sessionUpdate": "agent_message_chunk",
                                                    "content": {"type": "text", "text": "x" * 900}}}})


def started(governed: bool) -> Relay:
    relay = Relay(policy=(lambda: SHIPPED) if governed else None, id_prefix="bench")
    relay.from_client(INIT)
    relay.from_agent(INIT_ANSWER)
    return relay


def session_start(governed: bool) -> Callable[[], None]:
    def run() -> None:
        relay = started(governed)
        relay.from_client(NEW)
        for action in relay.from_agent(NEW_ANSWER):
            if isinstance(action, SendToAgent):  # policyd's set_mode: the agent accepts it
                rid = json.loads(action.data)["id"]
                relay.from_agent(enc({"jsonrpc": "2.0", "id": rid, "result": {}}))
    return run


def cold_session_start() -> None:
    """A session start with the verdict cache empty (the first session of a policy)."""
    assert SHIPPED.modes is not None
    SHIPPED.modes._seen.clear()
    session_start(True)()


def decided(line: bytes, fresh_ids: bool = False) -> Callable[[], None]:
    """``line`` decided by the engine, repeatedly; ``fresh_ids``: each time under a new id,
    as an agent numbers its requests (a forwarded side request stays unanswered here, and an
    id the client still owes an answer under would go to it under a fresh id, re-encoded)."""
    relay = started(True)
    relay.from_client(NEW)
    for action in relay.from_agent(NEW_ANSWER):
        if isinstance(action, SendToAgent):
            relay.from_agent(enc({"jsonrpc": "2.0", "id": json.loads(action.data)["id"], "result": {}}))

    lines = itertools.cycle([line.replace(b'"id": 5,', b'"id": %d,' % (1000 + i)) for i in range(8192)]
                            if fresh_ids else [line])

    def run() -> None:
        for action in relay.from_agent(next(lines), 1.0):
            if isinstance(action, Consult) and action.query is not None:
                relay.resolve(action.key, ENGINE.decide(action.query))
    return run


def notification(governed: bool) -> Callable[[], None]:
    relay = started(governed)
    return lambda: relay.from_agent(NOTE)


def median_us(fn: Callable[[], None], rounds: int = ROUNDS) -> float:
    for _ in range(100):
        fn()
    samples = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        fn()
        samples.append((time.perf_counter_ns() - start) / 1000)
    return statistics.median(samples)


def main() -> None:
    print(machine())
    rows = [
        ("session start (session/new answer), first", cold_session_start, session_start(False), "ungoverned"),
        ("session start (session/new answer), later", session_start(True), session_start(False), "ungoverned"),
        ("fs/read_text_file decided vs permission request", decided(READ, fresh_ids=True), decided(PERMISSION),
         "permission"),
        ("session/update notification (1 KiB)", notification(True), notification(False), "ungoverned"),
    ]
    print(f"{'what':<52}{'governed µs':>14}{'baseline µs':>14}{'ratio':>8}  baseline")
    for name, governed, baseline, label in rows:
        # interleave blocks so machine noise hits both alike
        g, b = [], []
        for _ in range(5):
            g.append(median_us(governed, ROUNDS // 5))
            b.append(median_us(baseline, ROUNDS // 5))
        gm, bm = statistics.median(g), statistics.median(b)
        print(f"{name:<52}{gm:>14.1f}{bm:>14.1f}{gm / bm:>8.2f}  {label}")


if __name__ == "__main__":
    main()
