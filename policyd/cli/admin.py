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
from policyd.core.attack import attack
from policyd.core.policy import PolicyError
from policyd.settings import Settings


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.datetime.fromtimestamp(ts, tz=datetime.UTC).isoformat(timespec="seconds")


def check(settings: Settings, as_json: bool = False, strict: bool = False) -> int:
    """0 when the set loads; 1 with every error of the policy text; 2 (usage error) when a
    policy path cannot be read. Warns about files ``policyd serve`` would refuse, a set without
    the baseline or ``[modes]``, every allow rule wider than its examples
    (:mod:`policyd.core.attack`), and a ``.policyd`` directory here that is not loaded.
    ``strict``: a warning exits 1 too. ``as_json``: one object on stdout (``ok``, ``files``,
    ``rules``, ``policyHash``, ``policyBundle``, ``warnings``, ``wider_than_examples``, ``errors``)."""
    from policyd import bundle

    try:
        settings = bundle.apply(settings)
    except PolicyError as exc:
        for err in exc.errors:
            print(f"error: {err}", file=sys.stderr)
        return 1
    for warning in insecure_warnings(settings):
        print(warning, file=sys.stderr)
    try:
        loaded = loader.load(settings.policy, settings.search_path, examples="always")
    except PolicyError as exc:
        code = USAGE_ERROR if isinstance(exc, loader.PolicyUnreadable) else 1
        if as_json:
            print(json.dumps({"ok": False, "errors": [str(e) for e in exc.errors], "exit": code}))
            return code
        for err in exc.errors:
            print(f"error: {err}", file=sys.stderr)
        print(f"policy set rejected: {len(exc.errors)} error(s)", file=sys.stderr)
        return code
    p = loaded.policy
    gaps = loader.gaps(p)
    here = Path(".policyd")
    if not settings.policy and here.is_dir() and not any(Path(f.path).parent.resolve() == here.resolve()
                                                         for f in p.files):
        gaps.append(f"{here.resolve()} is not loaded: policyd reads it only when told (--policy .policyd)")
    found = attack(p)
    failing = 1 if strict and (gaps or found) else 0
    if as_json:
        print(json.dumps({"ok": True, "policyHash": p.short_hash, "policyBundle": bundle.provenance(p),
                          "rules": len(p.rules), "default": p.default.value,
                          "warnings": gaps,
                          "wider_than_examples": [{"rule": f.rule_id, "at": f.at, "mechanism": f.mechanism,
                                                   "example": f.example, "mutant": f.mutant,
                                                   "allowedBy": list(f.allowed_by)} for f in found],
                          "files": [{"path": str(f.path), "rules": len(f.rules), "default": f.default.value,
                                     "layer": loader.layer(f.path, settings.policy, settings.search_path),
                                     "sha256": f.sha256} for f in p.files]}))
        return failing
    for f in p.files:
        where = loader.layer(f.path, settings.policy, settings.search_path)
        print(f"ok {f.path} [{where}] sha256:{f.sha256[:12]}: {len(f.rules)} rules, default {f.default.value}")
    print(f"policy set {p.short_hash}: {len(p.files)} files, {len(p.rules)} rules, default {p.default.value}")
    if (origin := bundle.provenance(p)) is not None:
        print(f"policy bundle: revision {origin['revision']} {origin['digest']} from {origin['source']}")
    for gap in gaps:
        print(f"warning: {gap}", file=sys.stderr)
    for finding in found:
        print(f"warning: {finding}", file=sys.stderr)
    if found:
        print(f"{len(found)} mutant(s) of allow rules' examples are allowed: narrow those rules (docs/authoring.md"
              "#safe-allow-rules)", file=sys.stderr)
    if failing:
        print("--strict: failing on the warnings above", file=sys.stderr)
    return failing


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


#: ``policyd status`` exit code when no daemon answers (systemctl's "not running"); the
#: running proxies are still listed.
NO_DAEMON = 3


def _sandbox_words(sandbox: Any) -> str:
    """``; sandbox: landlock (ABI 7)`` for a status file's ``sandbox`` (nothing without one)."""
    if not isinstance(sandbox, dict) or "engine" not in sandbox:
        return ""
    return f"; sandbox: {sandbox['engine']}" + (f" (ABI {sandbox['abi']})" if "abi" in sandbox else "")


def show_status(settings: Settings, as_json: bool = False) -> int:
    """The daemon's and every running proxy's policy. 0 when a daemon answered; 1 when its
    socket exists but it did not answer; :data:`NO_DAEMON` when there is no daemon."""
    from policyd.cli.run import daemon_path
    from policyd.server import default_socket_path

    path = daemon_path(settings) or default_socket_path()
    daemon: dict[str, Any] | None = None
    error: str | None = None
    if path.exists():
        try:
            daemon = call_daemon(path, "v1/status", {})
        except (OSError, RuntimeError, ValueError) as exc:
            error = str(exc)
    proxies_error: str | None = None
    try:
        proxies = list(status.read_all())
    except status.UntrustedStatusDir as exc:
        proxies, proxies_error = [], f"status files not read: {exc}"
    code = 0 if daemon is not None else (1 if error is not None else NO_DAEMON)
    if as_json:
        print(json.dumps({"socket": str(path), "daemon": daemon, "daemonError": error, "proxies": proxies,
                          "proxiesError": proxies_error}, default=str))
        return code
    if error is not None:
        print(f"daemon at {path}: unreachable ({error})")
    if daemon is not None:
        loaded = _when(daemon.get("loadedAt"))
        print(f"daemon pid {daemon['pid']} at {path}: policy {daemon['policyHash'][:12]} loaded {loaded},"
              f" {len(daemon['files'])} files, {daemon.get('reloads', 0)} reloads; counters {daemon['counters']}")
        _print_bundle(daemon.get("policyBundle"))
        _print_files_and_error(daemon["files"], daemon.get("lastError"), daemon.get("lastErrorAt"))
    elif error is None:
        print(f"no daemon answers at {path}")
    for e in proxies:
        print(f"proxy pid {e['pid']}: policy {e['policy_hash'][:12]} loaded {_when(e['loaded_at'])},"
              f" {len(e['files'])} files, {e.get('reloads', 0)} reloads; agent: {' '.join(e['agent'])}"
              + _sandbox_words(e.get("sandbox")))
        _print_bundle(e.get("policy_bundle"))
        _print_files_and_error(e["files"], e.get("last_error"), e.get("last_error_at"))
    if proxies_error is not None:
        print(proxies_error)
    elif not proxies:
        print(f"no running proxies (status files in {status.runtime_dir()})")
    return code


def _print_bundle(origin: Any) -> None:
    if isinstance(origin, dict):
        print(f"  policy bundle: revision {origin.get('revision')} {origin.get('digest')} from {origin.get('source')}")


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
