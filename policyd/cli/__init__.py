"""Command line: ``policyd proxy | serve | check | eval | status | reload | remembered | init | summary | demo``,
the policy author's ``explain | test | replay | suggest`` (``policyd.cli.author``) and
``bundle build | sign | verify | push | pull`` (``policyd.cli.bundle``, its own exit codes).

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
from collections.abc import Mapping, Sequence

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
    if _gateway_wanted(argv, os.environ):  # the agent's environment is known only once the gateway is set up
        return None
    from policyd.sandbox_early import may_sandbox

    if may_sandbox(argv, os.environ):  # the sandbox's settings first: without pydantic, or later
        return _spawn_sandboxed_first(argv, argv[cut + 1:])
    for word in argv[1:cut]:
        if (len(word) > 2 and "--help".startswith(word)) or (word[:1] == "-" and word[1:2] != "-" and "h" in word):
            return None
    if cut + 1 >= len(argv):
        return None
    from policyd.spawn import hold_signals, spawn

    hold_signals()  # a stop signal while policyd imports reaches the agent, never orphans it

    return spawn(argv[cut + 1 :], first=True)  # no thread yet: fork and exec (policyd.child)


def _gateway_wanted(argv: list[str], environ: Mapping[str, str]) -> bool:
    """Could the model gateway be on for ``policyd ARGV`` (policyd.gatewaysetup)? Then the
    agent starts once the settings are read (its environment depends on them): a
    ``--gateway`` option, ``POLICYD_GATEWAY``, or a config file that mentions ``gateway``.
    True when unsure (only slower); a config file that turns it on is then never missed."""
    words = argv[: argv.index("--")] if "--" in argv else argv
    if any(w.startswith("--gateway") for w in words) or environ.get("POLICYD_GATEWAY"):
        return True
    config = next((w.split("=", 1)[1] for w in words if w.startswith("--config=")), "")
    config = config or next((words[i + 1] for i, w in enumerate(words[:-1]) if w == "--config"), "")
    xdg = environ.get("XDG_CONFIG_HOME") or os.path.join(environ.get("HOME", "/"), ".config")
    candidates = [config or environ.get("POLICYD_CONFIG", "")] if config or environ.get("POLICYD_CONFIG") else [
        os.path.join(xdg, "policyd", "config.toml"), "/etc/policyd/config.toml"]
    for path in candidates:
        try:
            with open(path, "rb") as f:
                return b"gateway" in f.read(1 << 20)
        except FileNotFoundError:
            continue
        except OSError:
            return True
    return False


def _spawn_sandboxed_first(argv: list[str], agent: list[str]) -> Spawned | None:
    """The early spawn when the sandbox may be on: its settings read without pydantic
    (:mod:`policyd.sandbox_early`), the agent started in the sandbox (``off``: as usual).
    None when they cannot be read so, or the sandbox cannot be set up: the proxy's own
    start-up then does it (and reports)."""
    from policyd.sandbox_early import read

    early = read(argv, os.environ)
    if early is None or not agent:
        return None
    from policyd.spawn import hold_signals, spawn

    hold_signals()  # a stop signal while policyd imports reaches the agent, never orphans it
    if early.sandbox == "off":
        return spawn(agent, first=True)
    from policyd import sandbox

    started, box, _problem = sandbox.start(early, agent, fallback=False, first=True)
    if started is None or box is None:
        return None
    box.early = early
    box.notes["spawn"] = "early (before policyd's own start-up)"
    started.sandbox = box
    return started


def _stop(spawned: Spawned, grace_s: float) -> None:
    """Stop an agent that must not run on, and its sandbox's egress."""
    spawned.stop(grace_s)
    if spawned.sandbox is not None:
        spawned.sandbox.close()


def _refuse_start(problem: str, spawned: Spawned | None, code: int = USAGE_ERROR) -> int:
    """``policyd proxy`` cannot start: say why on stderr and to the client (as the error of
    its open request: policyd.startfail), stop an agent started early, exit ``code``."""
    from policyd.startfail import tell_client

    lines = problem.splitlines() or [problem]
    for line in lines:
        print(f"policyd: {line}", file=sys.stderr)
    tell_client("policyd: " + "; ".join(lines), lines, spawned)
    if spawned is not None:
        _stop(spawned, STOP_GRACE_S)
    return code


def _settings(args: argparse.Namespace) -> Settings:
    from policyd.settings import load_settings
    def flag(name: str) -> Any:
        return getattr(args, name, None)

    cli: dict[str, Any] = {
        "policy": flag("policy"),
        "log_level": flag("log_level"),
        "log_format": flag("log_format"),
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
        "sandbox": flag("sandbox_mode"),
        "sandbox_roots": flag("sandbox_roots"),
        "sandbox_engine": flag("sandbox_engine"),
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


def _config_in_environment(argv: Sequence[str]) -> None:
    """``--config FILE`` (before the agent's ``--``) as ``POLICYD_CONFIG``, absolute, before
    anything reads the environment: the sandbox view and the own-policy guard protect the
    config in force through that one variable (``statepaths.trusted``; red team rttrust F3)."""
    words = list(argv[: argv.index("--")] if "--" in argv else argv)
    found = next((w.split("=", 1)[1] for w in words if w.startswith("--config=")), "")
    found = found or next((words[i + 1] for i, w in enumerate(words[:-1]) if w == "--config"), "")
    if found:
        os.environ["POLICYD_CONFIG"] = os.path.abspath(found)


def _main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    _config_in_environment(argv)
    spawned = _spawn_agent_first(argv)
    from policyd.cli.parser import build_parser

    try:
        args = build_parser(argv[0] if argv else None).parse_args(argv)  # --help and usage errors exit here
    except SystemExit:
        if spawned is not None:  # a usage error: the agent was not meant to run
            _stop(spawned, STOP_GRACE_S)
        raise
    if args.command == "demo":
        from policyd.cli.demo import run_demo

        shadow = [a for p in args.shadow_policy or [] for a in ("--shadow-policy", os.path.realpath(p))]
        return run_demo(args.policy or [], args.decision_log, args.answer, args.script, shadow, args.workspace)
    if args.command == "init":
        from policyd.cli import init

        return init.run(args.directory, args.force)
    if args.command == "bundle":
        from policyd.cli import bundle

        return bundle.run(args)
    if args.command == "completion":
        import shtab

        print(shtab.complete(build_parser(), args.shell), end="")
        return 0
    if args.command == "summary":
        from policyd.cli import summary

        return summary.run(args.logs, args.json, args.title)
    if args.command == "proxy":
        args.agent = args.agent[1:] if args.agent[:1] == ["--"] else args.agent
        if spawned is not None and spawned.argv != args.agent:  # the command line meant another agent
            _stop(spawned, STOP_GRACE_S)
            spawned = None
        if args.chain and (args.agent or args.sandbox_mode not in (None, "off") or args.gateway_mode not in (
                None, "off")):
            if spawned is not None:
                _stop(spawned, STOP_GRACE_S)
            print("policyd proxy --chain: the conductor spawns the agent: no agent command, --sandbox or --gateway",
                  file=sys.stderr)
            return USAGE_ERROR
        if not args.agent and not args.chain:
            print("policyd proxy: missing agent command: policyd proxy [options] -- AGENT [ARGS...]", file=sys.stderr)
            return USAGE_ERROR
        if not args.chain and spawned is None and not _sandbox_asked(args) and not _gateway_wanted(argv, os.environ):
            from policyd.spawn import hold_signals, spawn

            hold_signals()
            spawned = spawn(args.agent)
        if spawned is not None:
            spawned.relay_early()  # the initialize exchange, until the proxy's relay runs (policyd.early)
    from policyd import logs
    from policyd.settings import SettingsProblem

    try:
        settings = _settings(args)
        decision_log = settings.decision_log if args.command in ("proxy", "serve") else None
        logs.configure(settings.log_level, decision_log, settings.log_format)
    except (SettingsProblem, FileNotFoundError, OSError) as exc:
        if args.command == "proxy":
            return _refuse_start(str(exc), spawned)
        for line in str(exc).splitlines():
            print(f"policyd: {line}", file=sys.stderr)
        return USAGE_ERROR
    gateway = None
    if args.command == "proxy" and not args.chain:
        started = _start_agent(settings, args.agent, spawned)
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
            return admin.check(settings, args.json, args.strict)
        case "eval":
            return evaluate.evaluate(settings, args.file, args.decide_sandboxed)
        case "status":
            return admin.show_status(settings, args.json)
        case "reload":
            return admin.reload(settings)
        case _:
            return admin.remembered(settings, args)


def _start_agent(settings: Settings, agent: list[str], spawned: Spawned | None) -> tuple[Spawned | None, Any] | int:
    """The proxy's agent once the settings are known: the model gateway first when ``[gateway]
    mode`` asks for it (policyd.gatewaysetup: the key read, the listeners bound, the agent's
    environment with the placeholder), then the agent, sandboxed or not (:func:`_start_sandboxed`).
    Returns (the agent, the running Gateway or None), or an exit code."""
    if settings.gateway.mode == "off":
        started = _start_sandboxed(settings, agent, spawned)
        return started if isinstance(started, int) else (started, None)
    from policyd import gatewaysetup, logs

    config = gatewaysetup.GatewayConfig(**settings.gateway.model_dump())
    try:
        plan = gatewaysetup.plan(config, agent, os.environ)
    except gatewaysetup.GatewayProblem as exc:
        return _refuse_start(str(exc), spawned)
    if plan is None:
        if config.mode == "auto":
            logs.get().warning("gateway.skipped", reason=gatewaysetup.skip_reason(config, agent, os.environ))
        started = _start_sandboxed(settings, agent, spawned)
        return started if isinstance(started, int) else (started, None)
    if spawned is not None:  # started before the config file turned the gateway on
        _stop(spawned, STOP_GRACE_S)
        spawned = None
    from policyd.gateway import Gateway, bind_tcp, bind_unix, private_dir

    gateway = Gateway(budget=lambda: None)  # until the policy in force gives its [budget]
    forwards: tuple[tuple[str, int, str], ...] = ()
    try:
        tcp = bind_tcp()
        port = tcp.getsockname()[1]
        gateway.add(tcp, plan.route)
        if settings.sandbox != "off":  # the egress bridge makes it 127.0.0.1:PORT inside the sandbox
            unix_path = os.path.join(private_dir(), "gateway.sock")
            gateway.add(bind_unix(unix_path), plan.route)
            forwards = (("127.0.0.1", port, unix_path),)
    except OSError as exc:
        gateway.discard()
        return _refuse_start(f"the model gateway cannot listen: {exc}", None)
    origin = f"http://127.0.0.1:{port}"
    variables = plan.agent_vars(os.environ, origin)
    environ = plan.agent_env(os.environ, origin)
    gatewaysetup.forget_keys(plan)
    started = _start_sandboxed(settings, plan.agent_argv(agent, origin), None, environ, variables, forwards,
                               plan.secrets)
    if isinstance(started, int):
        gateway.discard()
        return started
    try:
        gateway.start_thread()
    except Exception as exc:
        return _refuse_start(f"the model gateway did not start: {plan.route.key.scrub(str(exc))}", started)
    logs.get().info("gateway.started", listen=origin, forwards=[f"{h}:{p} -> {u}" for h, p, u in forwards],
                    provider=plan.route.provider,
                    upstream=plan.route.shown, key_source=plan.route.key.source, agent_key_var=plan.key_var,
                    agent_base_url_var=plan.base_url_var)
    return started, gateway


def _sandbox_asked(args: argparse.Namespace) -> bool:
    """Could the settings turn the sandbox on (see :func:`policyd.sandbox.may_sandbox`)?
    Then the agent is started only once they are read."""
    from policyd.sandbox_early import may_sandbox

    asked = args.sandbox_mode or args.sandbox_roots or args.sandbox_engine
    return may_sandbox(["proxy", *([f"--config={args.config}"] if args.config else []),
                        *(["--sandbox"] if asked else [])], os.environ)


def _start_sandboxed(settings: Settings, agent: list[str], spawned: Spawned | None,
                     environ: dict[str, str] | None = None, gateway_env: dict[str, str] | None = None,
                     forwards: tuple[tuple[str, int, str], ...] = (), secrets: tuple[str, ...] = (),
                     ) -> Spawned | int | None:
    """The proxy's agent once the settings are known: ``spawned`` (started early) when the
    sandbox is off; else started now, in the sandbox (``policyd.sandbox.start``). An int:
    policyd's exit code (``required`` and no sandbox: the agent never ran). With the model
    gateway: ``environ`` (the key replaced), ``gateway_env`` (its variables, past the
    sandbox's allow-list), ``forwards`` (its Unix socket, for the egress bridge) and
    ``secrets`` (the key's file or credentials directory: hidden in the sandbox)."""
    box = spawned.sandbox if spawned is not None else None
    if spawned is not None and (box is None) == (settings.sandbox == "off") and (box is None or box.early.same_as(
            settings)):
        return spawned  # started early as the settings say (policyd.sandbox_early)
    if spawned is not None:  # the early read disagrees with the settings: fail closed
        return _refuse_start("the agent was started before the settings were loaded, with other sandbox settings "
                             "than they say; it was stopped (report this: policyd.sandbox_early)", spawned)
    if settings.sandbox == "off":
        from policyd.spawn import spawn

        spawned = spawn(agent, env=environ)
        spawned.relay_early()
        return spawned
    from policyd import sandbox

    started, box, problem = sandbox.start(settings, agent, environ=environ, gateway_env=gateway_env,
                                          forwards=forwards, secrets=secrets)
    if started is None:
        return _refuse_start(f"--sandbox required: the agent was not started: {problem}", None,
                             sandbox.SANDBOX_UNAVAILABLE)
    started.sandbox = box
    started.relay_early()
    return started


def _run_exporting(args: argparse.Namespace, settings: Settings, spawned: Spawned | None, gateway: Any = None) -> int:
    """``proxy`` / ``serve`` with OTLP export when configured (``policyd.telemetry``; the
    OpenTelemetry SDK is imported only then). ``spawned``: the proxy's agent, already started."""
    from policyd import telemetry
    from policyd.cli import run

    try:
        telemetry.start(telemetry.TelemetryConfig(**settings.telemetry.model_dump()), args.command)
    except telemetry.TelemetryUnavailable as exc:
        if args.command == "proxy":
            return _refuse_start(f"[telemetry]: {exc}", spawned)
        print(f"policyd: [telemetry]: {exc}", file=sys.stderr)
        return USAGE_ERROR
    try:
        if args.command == "proxy":
            if args.chain:
                return run.proxy(settings, [], args.policy, args.config, chain=True)
            return run.proxy(settings, args.agent, args.policy, args.config, spawned, gateway)
        return run.serve(settings, args.socket, args.policy, args.config)
    finally:
        telemetry.stop()
