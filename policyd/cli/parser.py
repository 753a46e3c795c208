"""The command line's grammar (argparse): :func:`build_parser`, one subparser per command.

Imported by :func:`policyd.cli.main` after ``policyd proxy`` has spawned its agent
(argparse and ``re`` cost ~15 ms)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from policyd import __version__
from policyd.cli import author


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """argparse's formatter, as wide as ``shutil.get_terminal_size()`` would make it
    (``$COLUMNS``, else the terminal on stdout, else 80 columns) without importing shutil:
    argparse builds a formatter per ``add_argument``, and shutil (with zlib, bz2, lzma) costs
    ~6 ms on the way to the proxy's spawn."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position, _columns() - 2 if width is None else width)


def _columns() -> int:
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def _policy_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--policy", action="append", metavar="PATH", help="policy file or directory (repeatable)")
    p.add_argument("--config", metavar="FILE", help="config TOML (default: XDG / /etc/policyd)")
    p.add_argument("--log-level", choices=["debug", "info", "warning", "error"])
    p.add_argument("--log-format", choices=["auto", "json", "console"],
                   help="stderr log lines: JSON, or for a person (auto: for a person on a terminal)")


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


def _proxy(proxy: argparse.ArgumentParser) -> None:
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
    proxy.add_argument("--gateway", choices=["off", "auto", "required"], dest="gateway_mode",
                       help="serve the agent's model API and hold its key (docs/gateway.md; default off)")
    proxy.add_argument("--sandbox", dest="sandbox_mode", choices=["off", "auto", "required"],
                       help="confine the agent in an OS sandbox built from the policy's [sandbox] (docs/sandbox.md); "
                            "required: do not start it when the sandbox cannot be set up; default off")
    proxy.add_argument("--sandbox-engine", dest="sandbox_engine", choices=["auto", "bwrap", "landlock"],
                       help="the sandbox's engine: bubblewrap, Landlock, or auto (bwrap when it can run, else "
                            "Landlock); default auto")
    proxy.add_argument("--sandbox-root", dest="sandbox_roots", action="append", metavar="DIR",
                       help="a writable root of the sandbox beside the current directory (repeatable)")
    proxy.add_argument("--chain", action="store_true",
                       help="run as a component of an ACP proxy chain: no agent command; a conductor spawns "
                            "policyd and the agent and routes between them (docs/reference.md)")
    proxy.add_argument("agent", nargs=argparse.REMAINDER, help="-- then the agent command line")


def _serve(serve: argparse.ArgumentParser) -> None:
    _policy_args(serve)
    _engine_args(serve)
    serve.add_argument("--socket", metavar="PATH", help="socket path (default $XDG_RUNTIME_DIR/policyd/policyd.sock)")
    serve.add_argument("--group", metavar="NAME", help="members of this group may query (socket mode 0660)")


def _check(ch: argparse.ArgumentParser) -> None:
    _policy_args(ch)
    ch.add_argument("--json", action="store_true", help="the result as one JSON object on stdout")
    ch.add_argument("--strict", action="store_true",
                    help="exit 1 on a warning too (an allow rule wider than its examples, a set without the "
                         "baseline or [modes]): a CI gate")


def _status(st: argparse.ArgumentParser) -> None:
    _daemon_arg(st)
    st.add_argument("--json", action="store_true", help="the daemon's and proxies' state as one JSON object")


def sandbox_flag(p: argparse.ArgumentParser) -> None:
    """``--sandbox`` of eval, test, explain: decide as a sandboxed session."""
    p.add_argument("--sandbox", dest="decide_sandboxed", action="store_true",
                    help="decide as in a sandboxed session (session.sandboxed)")


def _eval(ev: argparse.ArgumentParser) -> None:
    _policy_args(ev)
    sandbox_flag(ev)
    ev.add_argument("file", nargs="?", default="-")


def _remembered(rem: argparse.ArgumentParser) -> None:
    rem.add_argument("--store", dest="store_path", metavar="FILE")
    rem.add_argument("--config", metavar="FILE")
    rem_sub = rem.add_subparsers(dest="action", required=True)
    store_after = argparse.ArgumentParser(add_help=False, formatter_class=HelpFormatter)
    store_after.add_argument("--store", dest="store_path", metavar="FILE", default=argparse.SUPPRESS)
    lst = rem_sub.add_parser("list", help="list entries", parents=[store_after], formatter_class=HelpFormatter)
    lst.add_argument("--json", action="store_true", help="one JSON object per line")
    lst.add_argument("--scope", choices=["workspace", "global"])
    lst.add_argument("--match", metavar="TEXT", help="only entries whose key or title contains TEXT")
    lst.add_argument("--all", action="store_true", help="include expired entries")
    fg = rem_sub.add_parser("forget", help="delete entries (running proxies stop using them at once)",
                            parents=[store_after], formatter_class=HelpFormatter)
    fg.add_argument("ids", nargs="*", type=int, metavar="ID")
    fg.add_argument("--all", action="store_true", help="every entry")
    fg.add_argument("--match", metavar="TEXT", help="entries whose key or title contains TEXT")


def _demo(demo: argparse.ArgumentParser) -> None:
    demo.add_argument("--policy", action="append", metavar="PATH")
    demo.add_argument("--decision-log", metavar="FILE", help="keep the proxy's decision log (appended)")
    demo.add_argument("--answer", choices=["reject", "allow", "allow-always"], default="reject",
                      help="how the demo's human answers forwarded requests (default reject)")
    demo.add_argument("--script", metavar="FILE", help="the demo agent's tool calls (JSON list)")
    demo.add_argument("--shadow-policy", action="append", metavar="PATH", help="passed to the proxy")
    demo.add_argument("--workspace", metavar="DIR", help="the session cwd (default: a new temporary directory)")


def _summary(sm: argparse.ArgumentParser) -> None:
    sm.add_argument("logs", nargs="+", metavar="LOG", help="decision logs (--decision-log files; - for stdin)")
    sm.add_argument("--json", action="store_true", help="the counts as one JSON object")
    sm.add_argument("--title", default="policyd decisions", help="the Markdown heading")


def _completion(cp: argparse.ArgumentParser) -> None:
    cp.add_argument("shell", choices=["bash", "zsh", "tcsh"], help="the shell to complete in")


def _init(it: argparse.ArgumentParser) -> None:
    it.add_argument("directory", nargs="?", metavar="DIR", help="where to write (default .policyd)")
    it.add_argument("--force", action="store_true", help="overwrite files that exist")


def _bundle(b: argparse.ArgumentParser) -> None:
    from policyd.cli import bundle

    bundle.add_arguments(b)


def _with_policy_args(fill: Callable[[argparse.ArgumentParser, author.PolicyArgs], None],
                      ) -> Callable[[argparse.ArgumentParser], None]:
    return lambda parser: fill(parser, _policy_args)


#: Each command: (its help line, what adds its arguments), in the order ``--help`` lists them.
_COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
    "proxy": ("run an ACP agent behind policyd: policyd proxy [options] -- AGENT...", _proxy),
    "serve": ("run the policy daemon on a Unix socket (systemd service)", _serve),
    "check": ("load, compile and run the examples of a policy set", _check),
    "eval": ("decide JSON lines of permission requests (FILE or - for stdin)", _eval),
    "status": ("policy in force, load time and last reload error of the daemon and proxies", _status),
    "reload": ("ask the running daemon to reload its policy", _daemon_arg),
    "remembered": ("list or forget remembered allow_always / reject_always choices", _remembered),
    **{name: (help_text, _with_policy_args(fill)) for name, (help_text, fill) in author.PARSERS.items()},
    "init": ("write a starter policy directory: the shipped policies, team.toml, a README", _init),
    "summary": ("a run's decisions by decision and rule, as Markdown (CI: >> $GITHUB_STEP_SUMMARY)", _summary),
    "demo": ("drive a scripted agent through the proxy and the shipped policies", _demo),
    "bundle": ("build, sign or verify a signed policy bundle (fleet rollout: docs/bundles.md)", _bundle),
    "completion": ("print a shell completion script (bash, zsh, tcsh) generated from this command line",
                   _completion),
}


#: An example per command, shown at the end of ``policyd COMMAND --help``.
EXAMPLES: dict[str, str] = {
    "proxy": "policyd proxy --headless --decision-log decisions.jsonl -- npx -y @agentclientprotocol/claude-agent-acp",
    "serve": "policyd serve --policy /etc/policyd/policies.d   (usually started by systemd/policyd.socket)",
    "check": "policyd check --policy .policyd/ --strict",
    "eval": "echo '{\"toolCall\": {\"kind\": \"read\", \"locations\": [{\"path\": \"/etc/hosts\"}]}}' | policyd eval -",
    "status": "policyd status --json",
    "reload": "policyd reload",
    "remembered": "policyd remembered list --scope workspace; policyd remembered forget 12",
    "explain": "policyd explain --command 'git push origin main' --cwd ~/src/app",
    "test": "policyd test --policy .policyd/ cases.jsonl -v",
    "replay": "policyd replay decisions.jsonl --policy draft/ --fail-on allow-widening",
    "suggest": "policyd suggest decisions.jsonl --min-count 2 > suggested.toml",
    "init": "policyd init .policyd && policyd check --policy .policyd",
    "summary": "policyd summary decisions.jsonl >> \"$GITHUB_STEP_SUMMARY\"",
    "demo": "policyd demo --decision-log demo.jsonl --answer allow",
    "bundle": "policyd bundle build policies/ -o org.bundle && policyd bundle sign org.bundle --key org.pem",
    "completion": "policyd completion bash > ~/.local/share/bash-completion/completions/policyd   (mkdir -p first)",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line. ``command``: build only that subcommand (every ``add_argument``
    costs, ~20 ms for them all, and ``policyd proxy`` spawns its agent only once its own
    command line is parsed); None or an unknown name: all of them (``--help``, errors)."""
    parser = argparse.ArgumentParser(prog="policyd", description="Answer ACP permission requests from CEL policy.",
                                     formatter_class=HelpFormatter)
    parser.add_argument("--version", action="version", version=f"policyd {__version__}")
    # every command in the usage line, also when only one was built
    sub = parser.add_subparsers(dest="command", required=True, metavar="{" + ",".join(_COMMANDS) + "}")
    only = command in _COMMANDS
    for name, (help_text, fill) in _COMMANDS.items():
        if not only or name == command:
            fill(sub.add_parser(name, help=help_text, description=help_text[:1].upper() + help_text[1:] + ".",
                                epilog=f"example:\n  {EXAMPLES[name]}" if name in EXAMPLES else None,
                                formatter_class=HelpFormatter))
    return parser
