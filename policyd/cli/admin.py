"""``policyd check | status | reload | remembered``."""

from __future__ import annotations

import argparse
import datetime
import json
import socket
import sys
import time
from pathlib import Path
from typing import Any

from policyd import loader, status
from policyd.cli.common import USAGE_ERROR, insecure_warnings
from policyd.core.policy import PolicyError
from policyd.settings import Settings


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.datetime.fromtimestamp(ts, tz=datetime.UTC).isoformat(timespec="seconds")


def check(settings: Settings) -> int:
    """0 when the set loads; 1 with every error of the policy text; 2 (usage error) when a
    policy path cannot be read. Warns about files ``policyd serve`` would refuse."""
    for warning in insecure_warnings(settings):
        print(warning, file=sys.stderr)
    try:
        loaded = loader.load(settings.policy, settings.search_path, examples="always")
    except PolicyError as exc:
        for err in exc.errors:
            print(f"error: {err}", file=sys.stderr)
        print(f"policy set rejected: {len(exc.errors)} error(s)", file=sys.stderr)
        return USAGE_ERROR if isinstance(exc, loader.PolicyUnreadable) else 1
    p = loaded.policy
    for f in p.files:
        print(f"ok {f.path}: {len(f.rules)} rules, default {f.default.value}")
    print(f"policy set {p.short_hash}: {len(p.files)} files, {len(p.rules)} rules, default {p.default.value}")
    return 0


def call_daemon(path: Path, method: str, params: Any, timeout_s: float = 5.0) -> Any:
    """One blocking JSON-RPC call to ``policyd serve``; raises OSError or RuntimeError."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout_s)
        sock.connect(str(path))
        sock.sendall(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode() + b"\n")
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            buf += chunk
    reply = json.loads(buf)
    if "error" in reply:
        raise RuntimeError(reply["error"].get("message", "daemon error"))
    return reply["result"]


def show_status(settings: Settings) -> int:
    from policyd.cli.run import daemon_path
    from policyd.server import default_socket_path

    shown = False
    path = daemon_path(settings) or default_socket_path()
    if path.exists():
        try:
            st = call_daemon(path, "v1/status", {})
        except (OSError, RuntimeError, ValueError) as exc:
            print(f"daemon at {path}: unreachable ({exc})")
        else:
            shown = True
            loaded = _when(st.get("loadedAt"))
            print(f"daemon pid {st['pid']} at {path}: policy {st['policyHash'][:12]} loaded {loaded},"
                  f" {len(st['files'])} files, {st.get('reloads', 0)} reloads; counters {st['counters']}")
            _print_files_and_error(st["files"], st.get("lastError"), st.get("lastErrorAt"))
    for e in status.read_all():
        shown = True
        print(f"proxy pid {e['pid']}: policy {e['policy_hash'][:12]} loaded {_when(e['loaded_at'])},"
              f" {len(e['files'])} files, {e.get('reloads', 0)} reloads; agent: {' '.join(e['agent'])}")
        _print_files_and_error(e["files"], e.get("last_error"), e.get("last_error_at"))
    if not shown:
        print(f"no running policyd (daemon socket {path}; proxy status files in {status.runtime_dir()})")
    return 0


def _print_files_and_error(files: list[dict[str, Any]], error: list[str] | None, error_at: float | None) -> None:
    for f in files:
        print(f"  {f['path']}: {f['rules']} rules")
    if error:
        print(f"  last reload failed at {_when(error_at)} (the policy above stays in force):")
        for line in error:
            print(f"    {line}")


def reload(settings: Settings) -> int:
    from policyd.cli.run import daemon_path
    from policyd.server import default_socket_path

    path = daemon_path(settings) or default_socket_path()
    try:
        result = call_daemon(path, "v1/reload", {})
    except (OSError, RuntimeError, ValueError) as exc:
        print(f"policyd reload: daemon at {path}: {exc}", file=sys.stderr)
        return 1
    print(f"reload requested; policy in force {result['policyHash'][:12]} (see policyd status)")
    return 0


def remembered(settings: Settings, args: argparse.Namespace) -> int:
    from policyd.store import Store, StoreError, default_path

    path = settings.store_path or default_path()
    try:
        store = Store(path)
        if args.action == "list":
            entries = store.entries(scope=args.scope, match=args.match, now=None if args.all else time.time())
            for e in entries:
                if args.json:
                    print(json.dumps(e.as_dict()))
                    continue
                where = e.scope if e.scope == "global" else f"{e.scope} {e.scope_value}"
                expires = "never" if e.expires_at is None else _when(e.expires_at)
                print(f"{e.id:>6}  {e.decision:<5}  {e.key}  [{where}]  created {_when(e.created_at)},"
                      f" expires {expires}  (chose {e.origin_option!r} for {e.example_title!r})")
            if not args.json:
                print(f"{len(entries)} entries in {path}", file=sys.stderr)
            return 0
        if not (args.ids or args.all or args.match):
            print("policyd remembered forget: give entry IDs, --match TEXT or --all", file=sys.stderr)
            return USAGE_ERROR
        count = store.forget(ids=args.ids, match=args.match, everything=args.all)
        print(f"forgot {count} {'entry' if count == 1 else 'entries'}")
        return 0
    except StoreError as exc:
        print(f"policyd: {exc}", file=sys.stderr)
        return 1
