"""Command line: ``policyd proxy | check | eval | demo``.

Exit codes: ``proxy`` exits with the agent's code (128+N for signal N); ``check`` 0 when the
set loads, 1 with every error otherwise; ``eval`` 0, or 1 when an input line was invalid;
2 for usage errors (bad flags, bad settings, a policy set that does not load at start).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from policyd import __version__, loader, logs
from policyd.core.decide import choose_outcome
from policyd.core.model import PeerInfo, PermissionOption, PermissionQuery, SessionInfo
from policyd.core.policy import PolicyError
from policyd.core.toolcalls import ToolCallTracker
from policyd.settings import Settings, find_config, load_settings

USAGE_ERROR = 2


def _policy_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--policy", action="append", metavar="PATH", help="policy file or directory (repeatable)")
    p.add_argument("--config", metavar="FILE", help="config TOML (default: XDG / /etc/policyd)")
    p.add_argument("--log-level", choices=["debug", "info", "warning", "error"])


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="policyd", description="Answer ACP permission requests from CEL policy.")
    parser.add_argument("--version", action="version", version=f"policyd {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    proxy = sub.add_parser("proxy", help="run an ACP agent behind policyd: policyd proxy [options] -- AGENT...")
    _policy_args(proxy)
    proxy.add_argument("--headless", action="store_true", default=None, help="no human to ask: ask -> fallback")
    proxy.add_argument("--headless-fallback", choices=["deny", "cancel"], help="answer for ask when headless")
    proxy.add_argument("--decision-log", metavar="FILE", help="append decision log JSON lines here")
    proxy.add_argument("--kill-grace", type=float, dest="kill_grace_s", metavar="SECONDS")
    proxy.add_argument("--store", dest="store_path", metavar="FILE", help="remembered-choices SQLite file")
    proxy.add_argument("--no-remember", action="store_true", help="neither use nor store remembered choices")
    proxy.add_argument("--remember-expiry", metavar="DURATION", help="lifetime of new choices: 30d, 12h, never")
    proxy.add_argument("--pass-always-to-agent", action="store_true", default=None,
                       help="relay the client's *_always answers unchanged (default: as *_once)")
    proxy.add_argument("--no-watch", action="store_true", help="do not watch policy files (SIGHUP still reloads)")
    proxy.add_argument("--force-polling", action="store_true", help="poll policy files instead of inotify")
    proxy.add_argument("--rehash", type=float, dest="rehash_s", metavar="SECONDS", help="periodic re-hash interval")
    proxy.add_argument("agent", nargs=argparse.REMAINDER, help="-- then the agent command line")

    check = sub.add_parser("check", help="load, compile and run the examples of a policy set")
    _policy_args(check)

    ev = sub.add_parser("eval", help="decide JSON lines of permission requests (FILE or - for stdin)")
    _policy_args(ev)
    ev.add_argument("file", nargs="?", default="-")

    sub.add_parser("status", help="show the policy in force in every running policyd proxy")

    rem = sub.add_parser("remembered", help="list or forget remembered allow_always / reject_always choices")
    rem.add_argument("--store", dest="store_path", metavar="FILE")
    rem.add_argument("--config", metavar="FILE")
    rem_sub = rem.add_subparsers(dest="action", required=True)
    lst = rem_sub.add_parser("list", help="list entries")
    lst.add_argument("--json", action="store_true", help="one JSON object per line")
    lst.add_argument("--scope", choices=["workspace", "global"])
    lst.add_argument("--match", metavar="TEXT", help="only entries whose key or title contains TEXT")
    lst.add_argument("--all", action="store_true", help="include expired entries")
    fg = rem_sub.add_parser("forget", help="delete entries (running proxies stop using them at once)")
    fg.add_argument("ids", nargs="*", type=int, metavar="ID")
    fg.add_argument("--all", action="store_true", help="every entry")
    fg.add_argument("--match", metavar="TEXT", help="entries whose key or title contains TEXT")

    demo = sub.add_parser("demo", help="drive a scripted agent through the proxy and the shipped policies")
    demo.add_argument("--policy", action="append", metavar="PATH")
    return parser


def _settings(args: argparse.Namespace) -> Settings:
    cli: dict[str, Any] = {
        "policy": getattr(args, "policy", None),
        "log_level": getattr(args, "log_level", None),
        "headless": getattr(args, "headless", None),
        "headless_fallback": getattr(args, "headless_fallback", None),
        "decision_log": getattr(args, "decision_log", None),
        "kill_grace_s": getattr(args, "kill_grace_s", None),
        "watch": False if getattr(args, "no_watch", False) else None,
        "force_polling": True if getattr(args, "force_polling", False) else None,
        "rehash_s": getattr(args, "rehash_s", None),
        "store_path": getattr(args, "store_path", None),
        "remember": False if getattr(args, "no_remember", False) else None,
        "remember_expiry": getattr(args, "remember_expiry", None),
        "pass_always_to_agent": getattr(args, "pass_always_to_agent", None),
    }
    return load_settings(cli, getattr(args, "config", None))


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "demo":
            from policyd.cli.demo import run_demo

            return run_demo(args.policy or [])
        settings = _settings(args)
        logs.configure(settings.log_level, getattr(settings, "decision_log", None) if args.command == "proxy" else None)
    except (ValidationError, FileNotFoundError, OSError) as exc:
        print(f"policyd: {exc}", file=sys.stderr)
        return USAGE_ERROR
    if args.command == "check":
        return _check(settings)
    if args.command == "status":
        return _status()
    if args.command == "remembered":
        return _remembered(settings, args)
    if args.command == "eval":
        return _eval(settings, args.file)
    return _proxy(settings, args.agent, getattr(args, "config", None))


def _load(settings: Settings) -> loader.Loaded:
    loaded = loader.load(settings.policy, settings.search_path)
    log = logs.get()
    files = [{"path": f.path, "rules": len(f.rules)} for f in loaded.policy.files]
    log.info("policy.loaded", hash=loaded.policy.short_hash, files=files, embedded=loaded.embedded)
    return loaded


def _check(settings: Settings) -> int:
    try:
        loaded = loader.load(settings.policy, settings.search_path)
    except PolicyError as exc:
        for err in exc.errors:
            print(f"error: {err}", file=sys.stderr)
        print(f"policy set rejected: {len(exc.errors)} error(s)", file=sys.stderr)
        return 1
    p = loaded.policy
    for f in p.files:
        print(f"ok {f.path}: {len(f.rules)} rules, default {f.default.value}")
    print(f"policy set {p.short_hash}: {len(p.files)} files, {len(p.rules)} rules, default {p.default.value}")
    return 0


def _proxy(settings: Settings, agent: list[str], args_config: str | None) -> int:
    from policyd import status
    from policyd.core.relay import Relay
    from policyd.engine import Engine
    from policyd.memory import Memory
    from policyd.proxy import engine_decider, run_proxy
    from policyd.reload import Reloader
    from policyd.store import default_path as default_store_path

    if agent and agent[0] == "--":
        agent = agent[1:]
    if not agent:
        print("policyd proxy: missing agent command: policyd proxy [options] -- AGENT [ARGS...]", file=sys.stderr)
        return USAGE_ERROR
    try:
        loaded = _load(settings)
    except PolicyError as exc:
        logs.get().error("policy.load_failed", errors=[str(e) for e in exc.errors])
        for err in exc.errors:
            print(f"policyd: {err}", file=sys.stderr)
        return USAGE_ERROR
    relay = Relay(
        headless=settings.headless,
        headless_fallback=settings.headless_fallback,
        home=settings.home,
        pass_always_to_agent=settings.pass_always_to_agent,
    )
    memory = None
    if settings.remember:
        memory = Memory(settings.store_path or default_store_path(), settings.remember_expiry_s)
    engine = Engine(loaded.policy, memory)
    cli_policy, config = list(settings.policy), args_config

    def paths() -> tuple[list[str], list[str], str | None]:
        """Re-read settings (config file and environment may have changed)."""
        try:
            fresh = load_settings({"policy": cli_policy or None}, config)
        except Exception:  # a broken config keeps the paths in force
            fresh = settings
        found = find_config_quiet(config)
        return list(fresh.policy), list(fresh.search_path), str(found) if found else None

    reloader = Reloader(
        engine,
        paths,
        rehash_s=settings.rehash_s,
        force_polling=settings.force_polling,
        on_change=lambda st: status.write(st, agent),
    )
    status.write(reloader.status, agent)
    try:
        return run_proxy(
            agent,
            relay,
            engine_decider(engine),
            settings.kill_grace_s,
            reloader if settings.watch else None,
            on_remember=engine.remember_choice,
        )
    finally:
        status.remove()
        logs.close()


def _remembered(settings: Settings, args: argparse.Namespace) -> int:
    from policyd.store import Store, StoreError, default_path

    path = settings.store_path or default_path()
    try:
        store = Store(path)
        if args.action == "list":
            now = None if args.all else time.time()
            entries = store.entries(scope=args.scope, match=args.match, now=now)
            for e in entries:
                if args.json:
                    print(json.dumps(e.as_dict()))
                else:
                    created = datetime.datetime.fromtimestamp(e.created_at, tz=datetime.UTC).strftime("%Y-%m-%d %H:%M")
                    expires = "never" if e.expires_at is None else datetime.datetime.fromtimestamp(
                        e.expires_at, tz=datetime.UTC).strftime("%Y-%m-%d")
                    where = e.scope if e.scope == "global" else f"{e.scope} {e.scope_value}"
                    print(f"{e.id:>6}  {e.decision:<5}  {e.key}  [{where}]  created {created}, expires {expires}"
                          f"  (chose {e.origin_option!r} for {e.example_title!r})")
            if not args.json:
                print(f"{len(entries)} entries in {path}", file=sys.stderr)
            return 0
        if not (args.ids or args.all or args.match):
            print("policyd remembered forget: give entry IDs, --match TEXT or --all", file=sys.stderr)
            return USAGE_ERROR
        count = store.forget(ids=args.ids, match=args.match, everything=args.all)
        print(f"forgot {count} entries")
        return 0
    except StoreError as exc:
        print(f"policyd: {exc}", file=sys.stderr)
        return 1


def find_config_quiet(config: str | None) -> Path | None:
    try:
        return find_config(config)
    except FileNotFoundError:
        return None


def _status() -> int:
    from policyd import status

    entries = status.read_all()
    if not entries:
        print("no running policyd proxy (status files in " + str(status.runtime_dir()) + ")")
        return 0
    for e in entries:
        loaded = datetime.datetime.fromtimestamp(e["loaded_at"], tz=datetime.UTC).isoformat(timespec="seconds")
        print(f"pid {e['pid']}: policy {e['policy_hash'][:12]} loaded {loaded}, {len(e['files'])} files, "
              f"{e.get('reloads', 0)} reloads; agent: {' '.join(e['agent'])}")
        for f in e["files"]:
            print(f"  {f['path']}: {f['rules']} rules")
        if e.get("last_error"):
            when = datetime.datetime.fromtimestamp(e["last_error_at"], tz=datetime.UTC).isoformat(timespec="seconds")
            print(f"  last reload failed at {when} (the policy above stays in force):")
            for line in e["last_error"]:
                print(f"    {line}")
    return 0


# ----------------------------------------------------------------------------- eval


def _eval_query(item: Mapping[str, Any], settings: Settings) -> PermissionQuery:
    """One eval input line -> PermissionQuery. Raises ValueError naming the problem."""
    if "request" in item:
        params = item["request"]
        cwd = item.get("cwd", "")
        extra = item.get("additionalDirectories", [])
        agent = item.get("agent", "")
        client = item.get("client", "")
        updates = item.get("toolCalls", [])
        home = item.get("home", settings.home)
    else:
        params, cwd, extra, agent, client, updates, home = item, "", [], "", "", [], settings.home
    if not isinstance(params, Mapping):
        raise ValueError("request must be an object (session/request_permission params)")
    session_id = params.get("sessionId")
    if not isinstance(session_id, str) or not session_id:
        raise ValueError("sessionId must be a non-empty string")
    tool_call = params.get("toolCall")
    if not isinstance(tool_call, Mapping) or not isinstance(tool_call.get("toolCallId"), str):
        raise ValueError("toolCall must be an object with a string toolCallId")
    raw_options = params.get("options", [])
    if not isinstance(raw_options, list):
        raise ValueError("options must be a list")
    options = []
    for i, o in enumerate(raw_options):
        if not isinstance(o, Mapping) or not isinstance(o.get("optionId"), str) or not isinstance(o.get("kind"), str):
            raise ValueError(f"options[{i}] needs string optionId and kind")
        options.append(PermissionOption(o["optionId"], str(o.get("name", "")), o["kind"]))
    if not isinstance(cwd, str) or not isinstance(home, str):
        raise ValueError("cwd and home must be strings")
    if not isinstance(extra, list) or not all(isinstance(d, str) for d in extra):
        raise ValueError("additionalDirectories must be a list of strings")
    tracker = ToolCallTracker()
    if not isinstance(updates, list):
        raise ValueError("toolCalls must be a list of tool_call / tool_call_update objects")
    for u in updates:
        if isinstance(u, Mapping):
            tracker.observe_update(session_id, u.get("update", u) if isinstance(u.get("update"), Mapping) else u)
    return PermissionQuery(
        session=SessionInfo(session_id, cwd, tuple(extra)),
        tool_call=tracker.merged(session_id, tool_call),
        options=tuple(options),
        agent=PeerInfo(str(agent)),
        client=PeerInfo(str(client)),
        home=home,
        now_s=time.time(),
    )


def _eval(settings: Settings, file: str) -> int:
    from policyd.engine import Engine

    try:
        engine = Engine(_load(settings).policy)
    except PolicyError as exc:
        for err in exc.errors:
            print(f"policyd: {err}", file=sys.stderr)
        return USAGE_ERROR
    stream = sys.stdin if file == "-" else open(file, encoding="utf-8")  # noqa: SIM115
    failed = False
    out = sys.stdout
    with stream:
        for lineno, line in enumerate(stream, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                if not isinstance(item, Mapping):
                    raise ValueError("each line must be a JSON object")
                query = _eval_query(item, settings)
            except (ValueError, RecursionError) as exc:
                failed = True
                result: dict[str, Any] = {
                    "decision": "ask",
                    "outcome": None,
                    "rules": [],
                    "reason": "",
                    "error": f"line {lineno}: {exc}",
                }
                out.write(json.dumps(result) + "\n")
                continue
            verdict, _facts, _eval_us = engine.evaluate(query)
            result = {
                "decision": verdict.decision.value,
                "outcome": choose_outcome(verdict.decision, query.options),
                "rules": [m.rule_id for m in verdict.matches],
                "reason": verdict.reason,
            }
            if verdict.errors:
                result["errors"] = list(verdict.errors)
            out.write(json.dumps(result) + "\n")
    out.flush()
    return 1 if failed else 0

