"""Command line: ``policyd proxy | serve | check | eval | status | reload | remembered | demo``
and the policy author's ``explain | test | replay | suggest`` (``policyd.cli.author``).

Exit codes: ``proxy`` exits with the agent's code (128+N for signal N); ``serve`` 0 after a
clean shutdown, 1 when it cannot start; ``check`` 0 when the set loads, 1 with every error
of the policy text, 2 when a policy path cannot be read; ``eval`` 0, or 1 when an input line
was invalid; 2 for usage errors (bad flags, bad settings — one line per problem naming its
flag, variable or config file — a policy set that does not load at start).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policyd import __version__
from policyd.cli import author

if TYPE_CHECKING:
    from policyd.settings import Settings
    from policyd.spawn import Spawned

#: Exit code for usage errors (policyd.cli.common.USAGE_ERROR; not imported: --help stays light).
USAGE_ERROR = 2
#: Seconds an agent started before bad settings were found gets after SIGTERM (then SIGKILL).
STOP_GRACE_S = 2.0


def _policy_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--policy", action="append", metavar="PATH", help="policy file or directory (repeatable)")
    p.add_argument("--config", metavar="FILE", help="config TOML (default: XDG / /etc/policyd)")
    p.add_argument("--log-level", choices=["debug", "info", "warning", "error"])


def _engine_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--decision-log", metavar="FILE", help="append decision log JSON lines here")
    p.add_argument("--store", dest="store_path", metavar="FILE", help="remembered-choices SQLite file")
    p.add_argument("--no-remember", action="store_true", help="neither use nor store remembered choices")
    p.add_argument("--remember-expiry", metavar="DURATION", help="lifetime of new choices: 30d, 12h, never")
    p.add_argument("--no-watch", action="store_true", help="do not watch policy files (SIGHUP still reloads)")
    p.add_argument("--force-polling", action="store_true", help="poll policy files instead of inotify")
    p.add_argument("--rehash", type=float, dest="rehash_s", metavar="SECONDS", help="periodic re-hash interval")
    p.add_argument("--log-redact", action="store_true", default=None,
                   help="replace tool-call content (file bodies, edits) in decision records by a length + hash")
    p.add_argument("--shadow-policy", action="append", metavar="PATH",
                   help="draft policy evaluated beside the one in force; differences logged, answers unchanged")


def _daemon_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--daemon", dest="daemon_socket", metavar="SOCKET", help="the policyd serve socket")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="policyd", description="Answer ACP permission requests from CEL policy.")
    parser.add_argument("--version", action="version", version=f"policyd {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    proxy = sub.add_parser("proxy", help="run an ACP agent behind policyd: policyd proxy [options] -- AGENT...")
    _policy_args(proxy)
    _engine_args(proxy)
    proxy.add_argument("--headless", action="store_true", default=None, help="no human to ask: ask -> fallback")
    proxy.add_argument("--headless-fallback", choices=["deny", "cancel"], help="answer for ask when headless")
    proxy.add_argument("--kill-grace", type=float, dest="kill_grace_s", metavar="SECONDS")
    proxy.add_argument("--pass-always-to-agent", action="store_true", default=None,
                       help="relay the client's *_always answers unchanged (default: as *_once)")
    _daemon_arg(proxy)
    proxy.add_argument("--require-daemon", action="store_const", const="require", dest="daemon_mode",
                       help="consult the daemon; when it is unreachable, fail closed")
    proxy.add_argument("--no-daemon", action="store_const", const="off", dest="daemon_mode",
                       help="always embed the engine, even when a daemon runs")
    proxy.add_argument("--daemon-timeout", type=float, dest="daemon_timeout_s", metavar="SECONDS")
    proxy.add_argument("--mode-switch-timeout", type=float, dest="mode_switch_timeout_s", metavar="SECONDS",
                       help="seconds the agent has to confirm policyd's own mode switch (default 30)")
    proxy.add_argument("agent", nargs=argparse.REMAINDER, help="-- then the agent command line")

    serve = sub.add_parser("serve", help="run the policy daemon on a Unix socket (systemd service)")
    _policy_args(serve)
    _engine_args(serve)
    serve.add_argument("--socket", metavar="PATH", help="socket path (default $XDG_RUNTIME_DIR/policyd/policyd.sock)")
    serve.add_argument("--group", metavar="NAME", help="members of this group may query (socket mode 0660)")

    check = sub.add_parser("check", help="load, compile and run the examples of a policy set")
    _policy_args(check)

    ev = sub.add_parser("eval", help="decide JSON lines of permission requests (FILE or - for stdin)")
    _policy_args(ev)
    ev.add_argument("file", nargs="?", default="-")

    st = sub.add_parser("status", help="policy in force, load time and last reload error of the daemon and proxies")
    _daemon_arg(st)
    rl = sub.add_parser("reload", help="ask the running daemon to reload its policy")
    _daemon_arg(rl)

    rem = sub.add_parser("remembered", help="list or forget remembered allow_always / reject_always choices")
    rem.add_argument("--store", dest="store_path", metavar="FILE")
    rem.add_argument("--config", metavar="FILE")
    rem_sub = rem.add_subparsers(dest="action", required=True)
    store_after = argparse.ArgumentParser(add_help=False)
    store_after.add_argument("--store", dest="store_path", metavar="FILE", default=argparse.SUPPRESS)
    lst = rem_sub.add_parser("list", help="list entries", parents=[store_after])
    lst.add_argument("--json", action="store_true", help="one JSON object per line")
    lst.add_argument("--scope", choices=["workspace", "global"])
    lst.add_argument("--match", metavar="TEXT", help="only entries whose key or title contains TEXT")
    lst.add_argument("--all", action="store_true", help="include expired entries")
    fg = rem_sub.add_parser("forget", help="delete entries (running proxies stop using them at once)",
                            parents=[store_after])
    fg.add_argument("ids", nargs="*", type=int, metavar="ID")
    fg.add_argument("--all", action="store_true", help="every entry")
    fg.add_argument("--match", metavar="TEXT", help="entries whose key or title contains TEXT")

    author.add_parsers(sub, _policy_args)

    demo = sub.add_parser("demo", help="drive a scripted agent through the proxy and the shipped policies")
    demo.add_argument("--policy", action="append", metavar="PATH")
    demo.add_argument("--decision-log", metavar="FILE", help="keep the proxy's decision log (appended)")
    demo.add_argument("--answer", choices=["reject", "allow", "allow-always"], default="reject",
                      help="how the demo's human answers forwarded requests (default reject)")
    demo.add_argument("--script", metavar="FILE", help="the demo agent's tool calls (JSON list)")
    demo.add_argument("--shadow-policy", action="append", metavar="PATH", help="passed to the proxy")
    demo.add_argument("--workspace", metavar="DIR", help="the session cwd (default: a new temporary directory)")
    return parser


def _settings(args: argparse.Namespace) -> Settings:
    from policyd.settings import load_settings
    def flag(name: str) -> Any:
        return getattr(args, name, None)

    cli: dict[str, Any] = {
        "policy": flag("policy"),
        "log_level": flag("log_level"),
        "headless": flag("headless"),
        "headless_fallback": flag("headless_fallback"),
        "decision_log": flag("decision_log"),
        "kill_grace_s": flag("kill_grace_s"),
        "watch": False if flag("no_watch") else None,
        "force_polling": True if flag("force_polling") else None,
        "rehash_s": flag("rehash_s"),
        "store_path": flag("store_path"),
        "remember": False if flag("no_remember") else None,
        "remember_expiry": flag("remember_expiry"),
        "pass_always_to_agent": flag("pass_always_to_agent"),
        "daemon": flag("daemon_mode"),
        "daemon_socket": flag("daemon_socket"),
        "daemon_timeout_s": flag("daemon_timeout_s"),
        "mode_switch_timeout_s": flag("mode_switch_timeout_s"),
        "group": flag("group"),
        "log_redact": flag("log_redact"),
        "shadow_policy": flag("shadow_policy"),
    }
    return load_settings(cli, flag("config"))


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)  # --help and usage errors exit here, before heavy imports
    if args.command == "demo":
        from policyd.cli.demo import run_demo

        shadow = [a for p in args.shadow_policy or [] for a in ("--shadow-policy", str(Path(p).resolve()))]
        return run_demo(args.policy or [], args.decision_log, args.answer, args.script, shadow, args.workspace)
    spawned = None
    if args.command == "proxy":
        # the agent starts now, before policyd's own imports and settings (policyd.spawn)
        args.agent = args.agent[1:] if args.agent[:1] == ["--"] else args.agent
        if not args.agent:
            print("policyd proxy: missing agent command: policyd proxy [options] -- AGENT [ARGS...]", file=sys.stderr)
            return USAGE_ERROR
        from policyd.spawn import spawn

        spawned = spawn(args.agent)
    from policyd import logs
    from policyd.settings import SettingsProblem

    try:
        settings = _settings(args)
        decision_log = settings.decision_log if args.command in ("proxy", "serve") else None
        logs.configure(settings.log_level, decision_log)
    except (SettingsProblem, FileNotFoundError, OSError) as exc:
        for line in str(exc).splitlines():
            print(f"policyd: {line}", file=sys.stderr)
        if spawned is not None:
            spawned.stop(STOP_GRACE_S)
        return USAGE_ERROR
    if args.command in ("proxy", "serve"):
        return _run_exporting(args, settings, spawned)
    if args.command in author.COMMANDS:
        return author.run(args, settings)
    from policyd.cli import admin, evaluate

    match args.command:
        case "check":
            return admin.check(settings)
        case "eval":
            return evaluate.evaluate(settings, args.file)
        case "status":
            return admin.show_status(settings)
        case "reload":
            return admin.reload(settings)
        case _:
            return admin.remembered(settings, args)


def _run_exporting(args: argparse.Namespace, settings: Settings, spawned: Spawned | None) -> int:
    """``proxy`` / ``serve`` with OTLP export when configured (``policyd.telemetry``; the
    OpenTelemetry SDK is imported only then). ``spawned``: the proxy's agent, already started."""
    from policyd import telemetry
    from policyd.cli import run

    try:
        telemetry.start(telemetry.TelemetryConfig(**settings.telemetry.model_dump()), args.command)
    except telemetry.TelemetryUnavailable as exc:
        print(f"policyd: [telemetry]: {exc}", file=sys.stderr)
        if spawned is not None:
            spawned.stop(settings.kill_grace_s)
        return USAGE_ERROR
    try:
        if args.command == "proxy":
            return run.proxy(settings, args.agent, args.policy, args.config, spawned)
        return run.serve(settings, args.socket, args.policy, args.config)
    finally:
        telemetry.stop()
