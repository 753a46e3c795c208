"""Telling the client why ``policyd proxy`` cannot start, before its relay runs.

A client (acpx, Zed) hides policyd's stderr: when the settings do not validate, ``--sandbox
required`` cannot set up, the model gateway or telemetry cannot start, all it would see is
"agent disconnected". So the reason is also the JSON-RPC error (-32603, ``data.errors``) of
the client's request that is still open: its ``initialize`` when the early relay
(:mod:`policyd.early`) passed it to an agent that has not answered, or the first request
the client wrote and nobody read yet — waited for at most :data:`WAIT_S` when there is
none (stdin a terminal or at its end: not waited for). A failing policy load, once the relay
runs, is told the same way by the relay itself (:meth:`policyd.core.relay.Relay.fail_start`).
"""

from __future__ import annotations

import contextlib
import os
import select
import time
from typing import TYPE_CHECKING, Any

from policyd.core import jsonline

if TYPE_CHECKING:
    from policyd.spawn import Spawned

#: Seconds to wait for the client's first request when none is open.
WAIT_S = 3.0
#: The JSON-RPC error code (internal error), as the relay's.
INTERNAL_ERROR = -32603


def _request_ids(data: bytes) -> list[Any]:
    """Ids of the requests in the complete lines of ``data``."""
    ids: list[Any] = []
    *complete, _rest = data.split(b"\n")
    for line in complete:
        with contextlib.suppress(ValueError, RecursionError):
            msg = jsonline.parse(line)
            if isinstance(msg, dict) and isinstance(msg.get("method"), str) and "id" in msg:
                ids.append(msg["id"])
    return ids


def _open_requests(spawned: Spawned | None) -> tuple[list[Any], bytes, bool]:
    """(ids of the client's open requests, the client's bytes not relayed, stdin at its end)."""
    early = spawned.early if spawned is not None else None
    if early is None:
        return [], b"", False
    handover = early.stop()
    spawned.early = None  # type: ignore[union-attr]  # (early is not None: spawned is not None)
    relayed = [line for side, line in handover.relayed if side == "client"]
    answered = any(side == "agent" for side, _ in handover.relayed)
    ids = _request_ids(relayed[0]) if relayed and not answered else []
    return ids, handover.client, handover.client_eof


def tell_client(message: str, errors: list[str], spawned: Spawned | None, wait_s: float = WAIT_S) -> None:
    """Answer the client's open request (or its next, see the module doc) with ``message``."""
    ids, buffered, eof = _open_requests(spawned)
    ids += _request_ids(buffered)
    deadline = time.monotonic() + wait_s
    with contextlib.suppress(OSError):
        waiting = not ids and not eof and not os.isatty(0)
        while waiting and (left := deadline - time.monotonic()) > 0:
            if not select.select([0], [], [], left)[0]:
                break
            chunk = os.read(0, 65536)
            buffered += chunk
            ids += _request_ids(buffered)
            waiting = bool(chunk) and not ids
        error = {"code": INTERNAL_ERROR, "message": message, "data": {"errors": errors}}
        for rid in ids:
            os.write(1, jsonline.response(rid, error=error))
