"""A small ACP proxy-chain conductor for the tests, written from the proxy-chains RFD
(https://agentclientprotocol.com/rfds/proxy-chains) and the reference conductor's routing
(``agent-client-protocol-conductor``, rust-sdk ``conductor.rs``): that crate cannot be
installed here (crates.io is out of reach, and no npm or PyPI package ships its binary).

``python chain_conductor.py --dialect crate|rfd --trace FILE -- PROXY... -- AGENT...``

It presents itself to its client (stdio) as an ACP agent and spawns one proxy and the
agent. Routing, as the reference does it:

- the client's ``initialize`` goes to the proxy as ``_proxy/initialize`` (``proxy/initialize``
  for ``rfd``), its answer back to the client;
- the proxy's ``_proxy/successor`` (``proxy/successor``) request or notification is
  unwrapped (``params.method``, ``params.params``) and sent to the agent; the agent's answer
  is the answer to the envelope request;
- the agent's requests and notifications reach the proxy wrapped in the envelope; the
  proxy's plain answer goes back to the agent under the agent's id;
- the proxy's other (plain) messages go to the client, and the client's to the proxy.

Every request sent on gets the conductor's own id (each connection has its own id space).
``--trace`` writes every line the conductor received, as ``{"from": side, "message": ...}``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import queue
import subprocess
import sys
import threading
from typing import IO, Any

METHODS = {"crate": ("_proxy/initialize", "_proxy/successor"), "rfd": ("proxy/initialize", "proxy/successor")}


class Conductor:
    def __init__(self, proxy: list[str], agent: list[str], dialect: str, trace: IO[str] | None) -> None:
        self.init_method, self.envelope = METHODS[dialect]
        self.trace = trace
        self.proxy = subprocess.Popen(proxy, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.agent = subprocess.Popen(agent, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.inbox: queue.Queue[tuple[str, dict[str, Any] | None]] = queue.Queue()
        self.ids = itertools.count(1)
        # (side the request was sent to, our id) -> (side that asked, its id, wrap the answer?)
        self.pending: dict[tuple[str, Any], tuple[str, Any]] = {}
        for side, stream in (("client", sys.stdin.buffer), ("proxy", self.proxy.stdout), ("agent", self.agent.stdout)):
            threading.Thread(target=self._read, args=(side, stream), daemon=True).start()

    def _read(self, side: str, stream: IO[bytes] | None) -> None:
        assert stream is not None
        for line in iter(stream.readline, b""):
            if line.strip():
                self.inbox.put((side, json.loads(line)))
        self.inbox.put((side, None))

    def send(self, side: str, msg: dict[str, Any]) -> None:
        data = json.dumps({"jsonrpc": "2.0", **msg}).encode() + b"\n"
        stream = {"client": sys.stdout.buffer, "proxy": self.proxy.stdin, "agent": self.agent.stdin}[side]
        assert stream is not None
        stream.write(data)
        stream.flush()

    def request(self, to: str, method: str, params: Any, asker: str, asker_id: Any) -> None:
        rid = next(self.ids)
        self.pending[(to, rid)] = (asker, asker_id)
        self.send(to, {"id": rid, "method": method, **({"params": params} if params is not None else {})})

    def run(self) -> int:
        while True:
            side, msg = self.inbox.get()
            if msg is None:  # a component or the client closed: the chain ends
                break
            if self.trace is not None:
                self.trace.write(json.dumps({"from": side, "message": msg}) + "\n")
                self.trace.flush()
            getattr(self, f"from_{side}")(msg)
        for proc in (self.proxy, self.agent):
            assert proc.stdin is not None
            proc.stdin.close()
        for proc in (self.proxy, self.agent):
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        return self.proxy.returncode or 0

    def answer(self, side: str, msg: dict[str, Any]) -> None:
        asker, asker_id = self.pending.pop((side, msg["id"]))
        body = {k: v for k, v in msg.items() if k in ("result", "error")}
        self.send(asker, {"id": asker_id, **body})

    def from_client(self, msg: dict[str, Any]) -> None:
        if "method" not in msg:
            self.answer("client", msg)
        elif "id" not in msg:
            self.send("proxy", msg)
        else:
            method = self.init_method if msg["method"] == "initialize" else msg["method"]
            self.request("proxy", method, msg.get("params"), "client", msg["id"])

    def from_proxy(self, msg: dict[str, Any]) -> None:
        method = msg.get("method")
        if method is None:
            self.answer("proxy", msg)
        elif method == self.envelope:
            inner = msg["params"]
            if "id" in msg:
                self.request("agent", inner["method"], inner.get("params"), "proxy", msg["id"])
            else:
                self.send("agent", {"method": inner["method"], **({"params": inner["params"]} if "params" in inner
                                                                   else {})})
        elif "id" in msg:
            self.request("client", method, msg.get("params"), "proxy", msg["id"])
        else:
            self.send("client", msg)

    def from_agent(self, msg: dict[str, Any]) -> None:
        if "method" not in msg:
            self.answer("agent", msg)
            return
        envelope = {"method": msg["method"], **({"params": msg["params"]} if "params" in msg else {})}
        if "id" in msg:
            self.request("proxy", self.envelope, envelope, "agent", msg["id"])
        else:
            self.send("proxy", {"method": self.envelope, "params": envelope})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dialect", choices=sorted(METHODS), default="crate")
    parser.add_argument("--trace")
    parser.add_argument("rest", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    cut = rest.index("--")
    trace = open(args.trace, "a", encoding="utf-8") if args.trace else None  # noqa: SIM115 - the process's life
    return Conductor(rest[:cut], rest[cut + 1:], args.dialect, trace).run()


if __name__ == "__main__":
    sys.exit(main())
