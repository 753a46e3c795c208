"""What the proxy-chain envelope (policyd.core.chain) adds to the relay, per line, in process.

Three line kinds, each N times, the relay alone (``policyd proxy -- AGENT``: the line as the
agent or client wrote it) against the chain (``policyd proxy --chain``: the same line as the
conductor delivers it): the agent's ``session/update`` of 1 KiB (the bulk of a session), the
agent's ``session/request_permission`` up to its consult (policy not timed) and the client's
``session/prompt``. Rounds alternate relay and chain so machine noise hits both alike;
reported: the median microseconds per line and the same-run ratio chain / relay.

Run: ``python benchmarks/bench_chain.py`` (~10 s).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable

from _common import machine  # benchmarks/_common.py (sys.path[0] is this folder)

from policyd.core.chain import Chain
from policyd.core.relay import Relay

N = 5_000
ROUNDS = 7
ENVELOPE = "_proxy/successor"


def _line(msg: dict[str, object]) -> bytes:
    return json.dumps(msg).encode() + b"\n"


UPDATE = {"method": "session/update", "params": {"sessionId": "s1", "update": {
    "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x" * 880}}}}
PERMISSION = {"method": "session/request_permission", "params": {
    "sessionId": "s1", "toolCall": {"toolCallId": "t1", "kind": "execute", "rawInput": {"command": "npm test"}},
    "options": [{"optionId": "a", "name": "Allow", "kind": "allow_once"},
                {"optionId": "r", "name": "Reject", "kind": "reject_once"}]}}
PROMPT = {"method": "session/prompt", "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "go"}]}}


def _opened() -> tuple[Relay, Chain]:
    relay, chained = Relay(), Relay()
    chain = Chain(chained)
    relay.from_client(_line({"jsonrpc": "2.0", "id": 0, "method": "session/new", "params": {"cwd": "/w"}}))
    relay.from_agent(_line({"jsonrpc": "2.0", "id": 0, "result": {"sessionId": "s1"}}))
    [wrapped] = chain.from_conductor(_line({"jsonrpc": "2.0", "id": 0, "method": "session/new",
                                            "params": {"cwd": "/w"}}))
    chain.from_conductor(_line({"jsonrpc": "2.0", "id": json.loads(wrapped.data)["id"],  # type: ignore[attr-defined]
                                "result": {"sessionId": "s1"}}))
    return relay, chain


def _time(feed: Callable[[int], object]) -> float:
    t0 = time.perf_counter()
    for i in range(N):
        feed(i)
    return (time.perf_counter() - t0) / N * 1e6


def main() -> None:
    print(machine())
    print(f"{'line':<28}{'relay us':>10}{'chain us':>10}{'ratio':>8}")
    cases = [("agent session/update 1KiB", UPDATE, "agent"), ("agent request_permission", PERMISSION, "agent"),
             ("client session/prompt", PROMPT, "client")]
    for name, msg, side in cases:
        relay_us, chain_us, ratios = [], [], []
        for _ in range(ROUNDS):
            relay, chain = _opened()
            if side == "agent":
                plain = [_line({"jsonrpc": "2.0", "id": i, **msg}) for i in range(N)]
                wrapped = [_line({"jsonrpc": "2.0", "id": i, "method": ENVELOPE, "params": msg}) for i in range(N)]
                if msg is UPDATE:
                    plain = [_line({"jsonrpc": "2.0", **msg})] * N
                    wrapped = [_line({"jsonrpc": "2.0", "method": ENVELOPE, "params": msg})] * N
                r = _time(lambda i, r=relay, p=plain: r.from_agent(p[i]))  # type: ignore[misc]
            else:
                plain = [_line({"jsonrpc": "2.0", "id": i + 1, **msg}) for i in range(N)]
                wrapped = plain
                r = _time(lambda i, r=relay, p=plain: r.from_client(p[i]))  # type: ignore[misc]
            c = _time(lambda i, c=chain, w=wrapped: c.from_conductor(w[i]))  # type: ignore[misc]
            relay_us.append(r)
            chain_us.append(c)
            ratios.append(c / r)
        print(f"{name:<28}{statistics.median(relay_us):>10.1f}{statistics.median(chain_us):>10.1f}"
              f"{statistics.median(ratios):>8.2f}")


if __name__ == "__main__":
    main()
