"""Command line: ``policyd proxy | serve | check | eval | status | reload | remembered | summary | demo``
and the policy author's ``explain | test | replay | suggest`` (``policyd.cli.author``).

Exit codes: ``proxy`` exits with the agent's code (128+N for signal N); ``serve`` 0 after a
clean shutdown, 1 when it cannot start; ``check`` 0 when the set loads, 1 with every error
of the policy text, 2 when a policy path cannot be read; ``eval`` 0, or 1 when an input line
was invalid; ``status`` 0 when a daemon answered, 1 when it did not, 3 when there is none;
141 when stdout was closed by its reader (``| head``); 2 for usage errors (bad flags, bad
settings — one line per problem naming its flag, variable or config file — a policy set that
does not load at start).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

#: ``typing.TYPE_CHECKING`` without importing typing (~5 ms on the way to the proxy's spawn);
#: type checkers read the name alike.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from policyd.settings import Settings
    from policyd.spawn import Spawned

#: Exit code for usage errors (policyd.cli.common.USAGE_ERROR; not imported: --help stays light).
USAGE_ERROR = 2
#: Seconds an agent started before bad settings were found gets after SIGTERM (then SIGKILL).
STOP_GRACE_S = 2.0


def _spawn_agent_first(argv: list[str]) -> Spawned | None:
    """``policyd proxy [OPTIONS] -- AGENT...``: start the agent before anything else, even
    before parsing the command line (argparse costs ~20 ms), so that its own start-up runs
    while policyd's does (:mod:`policyd.spawn`). Only the plain form: the words after the
    first ``--``, with no help option before it. :func:`main` stops it again when the parsed
    command line is a usage error or names another agent. Anything else: None."""
    if argv[:1] != ["proxy"] or "--" not in argv:
        return None
    cut = argv.index("--")
    if _gateway_wanted(argv[1:cut]):  # the agent's environment is known only once the gateway is set up
        return None
    for word in argv[1:cut]:
        if (len(word) > 2 and "--help".startswith(word)) or (word[:1] == "-" and word[1:2] != "-" and "h" in word):
            return None
    if cut + 1 >= len(argv):
        return None
    from policyd.spawn import spawn

    return spawn(argv[cut + 1 :], first=True)  # no thread yet: fork and exec (policyd.child)


def _gateway_wanted(options: list[str]) -> bool:
    """The command line or ``POLICYD_GATEWAY`` may turn the gateway on (policyd.gatewaysetup):
    the agent is then spawned after the settings are read."""
    return any(w.startswith("--gateway") for w in options) or bool(os.environ.get("POLICYD_GATEWAY"))


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
        "gateway": {"mode": flag("gateway_mode")} if flag("gateway_mode") else None,
    }
    return load_settings(cli, flag("config"))


#: Exit code after stdout was closed by its reader (``policyd eval ... | head``): a shell's
#: 128 + SIGPIPE, what a program killed by the signal would give.
CLOSED_PIPE = 141


def main(argv: Sequence[str] | None = None) -> int:
    """The ``policyd`` command (exit codes: module docstring). A reader that closes stdout
    early ends the command quietly with :data:`CLOSED_PIPE`, never a traceback."""
    try:
        return _main(argv)
    except BrokenPipeError:
        # Python flushes stdout again at exit: point it at /dev/null so that flush is silent
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return CLOSED_PIPE


def _main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    spawned = _spawn_agent_first(argv)
    from policyd.cli.parser import build_parser

    try:
        args = build_parser(argv[0] if argv else None).parse_args(argv)  # --help and usage errors exit here
    except SystemExit:
        if spawned is not None:  # a usage error: the agent was not meant to run
            spawned.stop(STOP_GRACE_S)
        raise
    if args.command == "demo":
        from policyd.cli.demo import run_demo

        shadow = [a for p in args.shadow_policy or [] for a in ("--shadow-policy", os.path.realpath(p))]
        return run_demo(args.policy or [], args.decision_log, args.answer, args.script, shadow, args.workspace)
    if args.command == "summary":
        from policyd.cli import summary

        return summary.run(args.logs, args.json, args.title)
    if args.command == "proxy":
        args.agent = args.agent[1:] if args.agent[:1] == ["--"] else args.agent
        if spawned is not None and spawned.argv != args.agent:  # the command line meant another agent
            spawned.stop(STOP_GRACE_S)
            spawned = None
        if not args.agent:
            print("policyd proxy: missing agent command: policyd proxy [options] -- AGENT [ARGS...]", file=sys.stderr)
            return USAGE_ERROR
        if spawned is None and not _gateway_wanted(argv[1:]):
            from policyd.spawn import spawn

            spawned = spawn(args.agent)
        if spawned is not None:
            spawned.relay_early()  # the initialize exchange, until the proxy's relay runs (policyd.early)
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
    gateway = None
    if args.command == "proxy":
        started = _start_gateway(settings, args.agent, spawned)
        if isinstance(started, int):
            return started
        spawned, gateway = started
    if args.command in ("proxy", "serve"):
        try:
            return _run_exporting(args, settings, spawned, gateway)
        finally:
            if gateway is not None:
                gateway.stop_thread()
    from policyd.cli import author

    if args.command in author.COMMANDS:
        return author.run(args, settings)
    from policyd.cli import admin, evaluate

    match args.command:
        case "check":
            return admin.check(settings, args.json)
        case "eval":
            return evaluate.evaluate(settings, args.file)
        case "status":
            return admin.show_status(settings, args.json)
        case "reload":
            return admin.reload(settings)
        case _:
            return admin.remembered(settings, args)


def _start_gateway(settings: Settings, agent: list[str], spawned: Spawned | None) -> tuple[Spawned, Any] | int:
    """Set up the model-API gateway when ``[gateway] mode`` asks for it (policyd.gatewaysetup),
    then spawn the agent with the placeholder key (unless it runs already, without a gateway).
    Returns (the agent, the running Gateway or None), or an exit code."""
    from policyd import gatewaysetup, logs
    from policyd.spawn import spawn

    config = gatewaysetup.GatewayConfig(**settings.gateway.model_dump())
    try:
        plan = gatewaysetup.plan(config, agent, os.environ)
    except gatewaysetup.GatewayProblem as exc:
        print(f"policyd: {exc}", file=sys.stderr)
        if spawned is not None:
            spawned.stop(STOP_GRACE_S)
        return USAGE_ERROR
    if plan is None:
        if config.mode == "auto":
            logs.get().warning("gateway.skipped", reason=gatewaysetup.skip_reason(config, agent, os.environ))
        if spawned is None:
            spawned = spawn(agent)
            spawned.relay_early()
        return spawned, None
    if spawned is not None:  # spawned before the config file turned the gateway on
        spawned.stop(STOP_GRACE_S)
    from policyd.gateway import Gateway, bind_tcp

    sock = bind_tcp()
    origin = f"http://127.0.0.1:{sock.getsockname()[1]}"
    gateway = Gateway(budget=lambda: None)  # until the policy in force gives its [budget]
    gateway.add(sock, plan.route)
    env = plan.agent_env(os.environ, origin)
    gatewaysetup.forget_keys(plan)
    spawned = spawn(plan.agent_argv(agent, origin), env=env)
    spawned.relay_early()
    try:
        gateway.start_thread()
    except Exception as exc:
        print(f"policyd: the model gateway did not start: {plan.route.key.scrub(str(exc))}", file=sys.stderr)
        spawned.stop(STOP_GRACE_S)
        return USAGE_ERROR
    logs.get().info("gateway.started", listen=origin, provider=plan.route.provider, upstream=plan.route.origin,
                    key_source=plan.route.key.source, agent_key_var=plan.key_var, agent_base_url_var=plan.base_url_var)
    return spawned, gateway


def _run_exporting(args: argparse.Namespace, settings: Settings, spawned: Spawned | None, gateway: Any = None) -> int:
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
            return run.proxy(settings, args.agent, args.policy, args.config, spawned, gateway)
        return run.serve(settings, args.socket, args.policy, args.config)
    finally:
        telemetry.stop()
