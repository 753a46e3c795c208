"""Shared helpers for the process-level tests (proxy subprocess, scripted agents, policies).

Nothing here is autouse: test modules opt in by asking for a fixture or importing a helper.

- :func:`policyd_env` isolates a subprocess from the machine's policyd configuration
  (``POLICYD_SEARCH_PATH='[]'``, an empty ``POLICYD_CONFIG``, no inherited ``POLICYD_*``).
- :func:`write_policy` writes a policy TOML file.
- :func:`write_agent` writes a scripted Python agent (:data:`AGENT_SOURCE`): a list of
  ``[op, arg]`` steps; it records every byte it reads from stdin to a file.
- :class:`ProxyProcess` runs ``python -m policyd proxy`` with pipes and reader threads, so a
  test can act as the ACP client without deadlocking on large lines.
- :class:`AcpClient` is a minimal ACP client (initialize, session/new, prompts) of a proxy in
  front of ``python -m policyd.demo_agent``, answering forwarded permission requests.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hypothesis
import pytest

# The processes the tests start get SIGINT at its default action, whoever started the run: a
# run launched from a script's background job inherits SIGINT ignored, which every policyd
# and agent started here would then keep (as they should: tests/test_exit_bounds.py,
# test_a_stop_signal_ignored_at_start_stays_ignored), and tests that stop them with SIGINT
# would wait in vain. A test about an ignored signal sets it up itself.
signal.signal(signal.SIGINT, signal.default_int_handler)

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
TRANSCRIPT = FIXTURES / "ts-sdk-example-agent.transcript.jsonl"


# ----------------------------------------------------------------------------- hypothesis

#: Hypothesis profiles, loaded here before any test module builds its ``@settings``:
#: ``ci`` (chosen when ``CI`` is set, as every CI service sets it) draws the same examples on
#: every run (derandomize, no example database, no deadline), so a CI run is reproducible;
#: ``dev`` (local default) explores randomly but keeps no example database either: a failure
#: prints its seed and blob (``print_blob``) instead of being replayed silently from a stale
#: ``.hypothesis/`` in every later run; ``hunt`` is ``dev`` with ten times the examples (for
#: the tests that set no ``max_examples`` of their own).
#: ``HYPOTHESIS_PROFILE`` picks one explicitly.
HYPOTHESIS_PROFILES: dict[str, dict[str, Any]] = {
    "ci": {"derandomize": True, "database": None, "deadline": None, "print_blob": True},
    "dev": {"database": None, "deadline": None, "print_blob": True},
    # a bug hunt by hand (HYPOTHESIS_PROFILE=hunt): random, ten times the default count
    "hunt": {"database": None, "deadline": None, "print_blob": True, "max_examples": 1000},
}
for _name, _values in HYPOTHESIS_PROFILES.items():
    hypothesis.settings.register_profile(_name, **_values)


def hypothesis_profile(environ: Mapping[str, str]) -> str:
    """The profile for this environment: ``HYPOTHESIS_PROFILE``, else ``ci`` when ``CI`` is set
    to anything but an empty/false value, else ``dev``."""
    explicit = environ.get("HYPOTHESIS_PROFILE")
    if explicit:
        return explicit
    return "ci" if environ.get("CI", "").strip().lower() not in ("", "0", "false", "no") else "dev"


hypothesis.settings.load_profile(hypothesis_profile(os.environ))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: takes seconds (subprocesses, real peers); deselect with -m 'not slow'")
    config.addinivalue_line(
        "markers", "agents: the real-agent tier (Claude, Gemini CLI, Codex against fake models); runs by default")


# ----------------------------------------------------------------------------- environment


#: The settings :func:`policyd_env` pins (in ``env NAME=VALUE`` form for the acpx --agent string).
ISOLATION_VARS = ("POLICYD_SEARCH_PATH", "POLICYD_CONFIG", "POLICYD_DAEMON", "POLICYD_STORE_PATH", "XDG_RUNTIME_DIR")


def policyd_env(directory: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a policyd subprocess: ours, minus the machine's policyd state.

    No machine policy directories (``POLICYD_SEARCH_PATH='[]'``), an empty config file, no
    daemon (a running ``policyd serve`` would otherwise be consulted), a private
    remembered-choices store and runtime directory (status files) under ``directory``.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLICYD_")}
    state = directory / "policyd-state"
    state.mkdir(mode=0o700, exist_ok=True)
    config = state / "empty-config.toml"
    if not config.exists():
        config.write_text("# no settings: tests pass everything as flags\n")
    env["POLICYD_SEARCH_PATH"] = "[]"
    env["POLICYD_CONFIG"] = str(config)
    env["POLICYD_DAEMON"] = "off"
    env["POLICYD_STORE_PATH"] = str(state / "remembered.sqlite3")
    env["XDG_RUNTIME_DIR"] = str(state)
    if extra:
        env.update(extra)
    return env


# ----------------------------------------------------------------------------- policies


def isolated_env(base: Path) -> dict[str, str]:
    """Our environment minus any policyd configuration of the machine, with private runtime,
    state and config directories under ``base``; unlike :func:`policyd_env` a daemon at the
    private runtime directory's default socket is found (the daemon tests)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POLICYD_", "NOTIFY_SOCKET", "LISTEN_"))}
    for sub in ("run", "state", "config"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    (base / "run").chmod(0o700)
    config = base / "empty-config.toml"
    if not config.exists():
        config.write_text("# no settings: the tests pass everything as flags\n")
    env.update({
        "POLICYD_SEARCH_PATH": "[]",
        "POLICYD_CONFIG": str(config),
        "XDG_RUNTIME_DIR": str(base / "run"),
        "XDG_STATE_HOME": str(base / "state"),
        "XDG_CONFIG_HOME": str(base / "config"),
    })
    return env


def _toml_value(value: Any) -> str:
    # JSON strings, numbers, booleans and arrays of them are valid TOML values.
    return json.dumps(value, ensure_ascii=True)


def write_policy(
    directory: Path,
    name: str = "test",
    default: str = "ask",
    rules: Sequence[Mapping[str, Any]] = (),
) -> Path:
    """Write ``<directory>/<name>.toml``; each rule is a mapping of rule keys (id, kinds...)."""
    lines = ["[policy]", f"name = {_toml_value(name)}", f"default = {_toml_value(default)}", ""]
    for rule in rules:
        lines.append("[[rule]]")
        fields = {"when": "true", "reason": f"test rule {rule['id']}", **rule}
        lines.extend(f"{key} = {_toml_value(value)}" for key, value in fields.items())
        lines.append("")
    path = directory / f"{name}.toml"
    path.write_text("\n".join(lines))
    return path


def make_rule(rule_id: str, kinds: Sequence[str], decision: str, when: str = "true") -> dict[str, Any]:
    """One rule mapping for :func:`write_policy`."""
    return {"id": rule_id, "kinds": list(kinds), "when": when, "decision": decision}


# ----------------------------------------------------------------------------- scripted agent

#: A scripted stdio agent: ``python agent.py STEPS.json RECORD PIDFILE``. Every line it
#: reads is appended to RECORD exactly as read. Steps are ``[op, arg]``:
#: send TEXT (+ "\n") | send_hex HEX (raw bytes) | recv N | recv_eof | echo N | echo_eof |
#: respond RESULT (read a request, answer its id) | hold NAME (read a request, keep its id) |
#: reply [NAME, RESULT] | stderr TEXT | sleep S | ignore_sigterm | env PATH (dump os.environ)
#: | touch PATH | exit CODE | kill SIGNUM.
AGENT_SOURCE = r'''
import json, os, signal, sys, time

steps = json.load(open(sys.argv[1], encoding="utf-8"))
record = open(sys.argv[2], "ab", buffering=0)
with open(sys.argv[3], "w") as f:
    f.write(str(os.getpid()))
inp, out = sys.stdin.buffer, sys.stdout.buffer
held = {}


def recv():
    line = inp.readline()
    if line:
        record.write(line)
    return line


def send(data):
    out.write(data)
    out.flush()


def answer(request_id, result):
    send(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode() + b"\n")


for op, arg in steps:
    if op == "send":
        send(arg.encode("utf-8") + b"\n")
    elif op == "send_hex":
        send(bytes.fromhex(arg))
    elif op == "recv":
        for _ in range(arg):
            if not recv():
                break
    elif op == "recv_eof":
        while recv():
            pass
    elif op == "echo":
        for _ in range(arg):
            line = recv()
            if not line:
                break
            send(line)
    elif op == "echo_eof":
        while line := recv():
            send(line)
    elif op == "respond":
        answer(json.loads(recv())["id"], arg)
    elif op == "hold":
        held[arg] = json.loads(recv())["id"]
    elif op == "reply":
        answer(held[arg[0]], arg[1])
    elif op == "stderr":
        sys.stderr.write(arg)
        sys.stderr.flush()
    elif op == "sleep":
        time.sleep(arg)
    elif op == "ignore_sigterm":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    elif op == "env":
        with open(arg, "w", encoding="utf-8") as f:
            json.dump(dict(os.environ), f)
    elif op == "touch":
        open(arg, "w").close()
    elif op == "pipe_size":  # the room of the pipe this agent writes to (Linux F_GETPIPE_SZ)
        import fcntl
        size = fcntl.fcntl(1, fcntl.F_GETPIPE_SZ)
        send(json.dumps({"jsonrpc": "2.0", "method": "x/pipe", "params": {"size": size}}).encode() + b"\n")
    elif op == "exit":
        sys.exit(arg)
    elif op == "kill":
        os.kill(os.getpid(), arg)
    else:
        raise SystemExit(f"unknown step {op!r}")
sys.exit(0)
'''


def split_lines(data: bytes) -> list[bytes]:
    """Split on ``\\n`` only, keeping it (a last unterminated piece is kept too)."""
    parts = data.split(b"\n")
    lines = [p + b"\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


@dataclass
class ScriptedAgent:
    """A scripted agent written to disk; ``argv`` runs it."""

    argv: list[str]
    record: Path
    pidfile: Path

    def received(self) -> bytes:
        """Every byte the agent read from its stdin so far."""
        return self.record.read_bytes() if self.record.exists() else b""

    def received_lines(self) -> list[bytes]:
        return split_lines(self.received())

    def started(self) -> bool:
        return self.pidfile.exists()

    def kill_if_alive(self) -> None:
        """SIGKILL this agent (by its own pid) if it is still running."""
        if not self.pidfile.exists():
            return
        with contextlib.suppress(ValueError, OSError):
            pid = int(self.pidfile.read_text())
            # only if that pid is still this agent (not a reused pid)
            if str(self.argv[1]).encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                os.kill(pid, signal.SIGKILL)


_AGENTS: list[ScriptedAgent] = []


def write_agent(directory: Path, steps: Sequence[Sequence[Any]], name: str = "agent") -> ScriptedAgent:
    """Write a scripted agent running ``steps`` under ``directory``."""
    script = directory / "scripted_agent.py"
    if not script.exists():
        script.write_text(AGENT_SOURCE)
    steps_file = directory / f"{name}.steps.json"
    steps_file.write_text(json.dumps([list(s) for s in steps]))
    record = directory / f"{name}.received"
    pidfile = directory / f"{name}.pid"
    agent = ScriptedAgent([sys.executable, str(script), str(steps_file), str(record), str(pidfile)], record, pidfile)
    _AGENTS.append(agent)
    return agent


# ----------------------------------------------------------------------------- proxy process


def proxy_argv(args: Sequence[str], agent: Sequence[str]) -> list[str]:
    """``python -m policyd proxy ARGS -- AGENT...``."""
    return [sys.executable, "-m", "policyd", "proxy", *args, "--", *agent]


def jline(msg: Any, **dumps: Any) -> bytes:
    """One JSON-RPC line (newline included)."""
    return json.dumps(msg, **dumps).encode() + b"\n"


class ProxyProcess:
    """``policyd proxy`` as a subprocess; the test is its ACP client."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> None:
        self.argv = list(argv)
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
        )
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._stderr = bytearray()
        self._threads = [
            threading.Thread(target=self._pump_stdout, daemon=True),
            threading.Thread(target=self._pump_stderr, daemon=True),
        ]
        for t in self._threads:
            t.start()
        self._eof = False

    def _pump_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in iter(self.proc.stdout.readline, b""):
            self._lines.put(line)
        self._lines.put(None)

    def _pump_stderr(self) -> None:
        assert self.proc.stderr is not None
        while chunk := self.proc.stderr.read1(65536):
            self._stderr += chunk

    # -- client side
    def send(self, data: bytes) -> None:
        """Write raw bytes to policyd's stdin."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send_json(self, msg: Any, **dumps: Any) -> bytes:
        data = jline(msg, **dumps)
        self.send(data)
        return data

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.close()

    def read_line(self, timeout: float = 20.0) -> bytes:
        """The next line policyd wrote to stdout; fails on timeout or EOF."""
        if self._eof:
            raise AssertionError("policyd stdout already at EOF")
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(
                f"no line from policyd within {timeout}s; stderr:\n{self.stderr_text()[-4000:]}"
            ) from None
        if line is None:
            self._eof = True
            raise AssertionError(f"policyd stdout closed; stderr:\n{self.stderr_text()[-4000:]}")
        return line

    def read_json(self, timeout: float = 20.0) -> Any:
        return json.loads(self.read_line(timeout))

    def read_until(self, predicate: Any, timeout: float = 20.0) -> list[bytes]:
        """Lines up to and including the first whose parsed JSON satisfies ``predicate``."""
        out: list[bytes] = []
        deadline = time.monotonic() + timeout
        while True:
            line = self.read_line(max(0.1, deadline - time.monotonic()))
            out.append(line)
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if predicate(msg):
                return out

    def rest_of_stdout(self, timeout: float = 20.0) -> list[bytes]:
        """Every remaining stdout line until EOF."""
        out: list[bytes] = []
        if self._eof:
            return out
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError("policyd stdout did not reach EOF") from None
            if line is None:
                self._eof = True
                return out
            out.append(line)

    def wait(self, timeout: float = 20.0) -> int:
        """Wait for policyd to exit; returns its exit code (stderr fully read)."""
        code = self.proc.wait(timeout=timeout)
        for t in self._threads[1:]:
            t.join(timeout=5)
        return code

    def stderr_text(self) -> str:
        return bytes(self._stderr).decode("utf-8", "replace")

    def stderr_events(self) -> list[dict[str, Any]]:
        """policyd's JSON log lines on stderr (other stderr lines skipped)."""
        events = []
        for text in self.stderr_text().splitlines():
            try:
                obj = json.loads(text)
            except ValueError:
                continue
            if isinstance(obj, dict) and "event" in obj:
                events.append(obj)
        return events

    def stop(self) -> None:
        """Teardown: close stdin, give policyd a moment, then SIGKILL it (by its pid)."""
        if self.proc.poll() is None:
            self.close_stdin()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


@pytest.fixture
def start_proxy(tmp_path: Path) -> Iterator[Any]:
    """Factory: ``start_proxy(args, agent_argv, env=None)`` -> a running :class:`ProxyProcess`.

    Every proxy and scripted agent it started is stopped at teardown.
    """
    started: list[ProxyProcess] = []
    first_agent = len(_AGENTS)

    def _start(args: Sequence[str], agent: Sequence[str], env: Mapping[str, str] | None = None) -> ProxyProcess:
        proc = ProxyProcess(proxy_argv(args, agent), policyd_env(tmp_path, env), tmp_path)
        started.append(proc)
        return proc

    yield _start
    for proc in started:
        proc.stop()
    for agent in _AGENTS[first_agent:]:
        agent.kill_if_alive()
    del _AGENTS[first_agent:]


def load_transcript() -> list[tuple[str, dict[str, Any]]]:
    """The recorded TS SDK example agent run: ``(direction, message)`` in order."""
    out = []
    for text in TRANSCRIPT.read_text(encoding="utf-8").splitlines():
        if text.strip():
            item = json.loads(text)
            out.append((item["direction"], item["message"]))
    return out


def is_permission_request(msg: Any) -> bool:
    return isinstance(msg, dict) and msg.get("method") == "session/request_permission" and "id" in msg


class AcpClient:
    """The ACP client of ``policyd proxy ... -- python -m policyd.demo_agent --script FILE``.

    ``answer(request) -> optionId`` answers forwarded permission requests; every forwarded
    request and every text of the agent (``permission call_N: selected X``) is recorded.
    """

    def __init__(self, argv: Sequence[str], env: dict[str, str], cwd: Path, stderr_path: Path) -> None:
        self.stderr_path = stderr_path
        self._stderr_file = open(stderr_path, "wb")  # noqa: SIM115 - closed in kill()
        self.proc = subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._stderr_file, env=env, cwd=cwd)
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self._next_id = 0
        self.answer: Callable[[dict[str, Any]], str] = lambda _req: "reject"
        self.requests: list[dict[str, Any]] = []
        self.texts: list[str] = []

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in iter(self.proc.stdout.readline, b""):
            self._lines.put(line)
        self._lines.put(None)

    def _send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()

    def call(self, method: str, params: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
        rid = self._next_id
        self._next_id += 1
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no answer to {method} in {timeout}s; stderr:\n{self.stderr()[-3000:]}") from None
            if line is None:
                raise AssertionError(f"proxy closed stdout during {method}; stderr:\n{self.stderr()[-3000:]}")
            msg = json.loads(line)
            if "method" in msg and "id" in msg:  # a request of the agent, forwarded to us
                if msg["method"] == "session/request_permission":
                    self.requests.append(msg)
                    outcome = {"outcome": "selected", "optionId": self.answer(msg)}
                    self._send({"jsonrpc": "2.0", "id": msg["id"], "result": {"outcome": outcome}})
                else:
                    self._send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}})
            elif msg.get("method") == "session/update":
                update = msg["params"]["update"]
                if update.get("sessionUpdate") == "agent_message_chunk":
                    self.texts.append(update["content"]["text"])
            elif msg.get("id") == rid:
                assert "result" in msg, msg
                return dict(msg["result"])

    def start(self, cwd: str) -> str:
        self.call("initialize", {"protocolVersion": 1, "clientCapabilities": {},
                                 "clientInfo": {"name": "test-client", "version": "1"}})
        return str(self.call("session/new", {"cwd": cwd, "mcpServers": []})["sessionId"])

    def prompt(self, session_id: str, answer: Callable[[dict[str, Any]], str] | None = None
               ) -> tuple[list[dict[str, Any]], list[str]]:
        """One prompt: the permission requests the client saw and the agent's texts."""
        if answer is not None:
            self.answer = answer
        r0, t0 = len(self.requests), len(self.texts)
        res = self.call("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]})
        assert "end_turn" == res["stopReason"]
        return self.requests[r0:], self.texts[t0:]

    def close(self) -> int:
        assert self.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=30)
        finally:
            self.kill()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()  # this proxy only, by its own pid
            self.proc.wait(timeout=10)
        if not self._stderr_file.closed:
            self._stderr_file.close()

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def events(self, name: str | None = None) -> list[dict[str, Any]]:
        """The JSON log events policyd wrote to stderr (all, or those named ``name``)."""
        out = []
        for text in self.stderr().splitlines():
            with contextlib.suppress(ValueError):
                obj = json.loads(text)
                if isinstance(obj, dict) and "event" in obj and (name is None or obj["event"] == name):
                    out.append(obj)
        return out


# ----------------------------------------------------------------------------- permissions

#: uid/gid that tests running as root drop to, so a mode-0 file is really unreadable.
NOBODY = 65534


def unprivileged() -> list[str]:
    """argv prefix that runs a command as a user to whom mode bits apply: nothing when we are
    not root, else ``setpriv`` to ``nobody`` (permission tests would prove nothing as root)."""
    if os.geteuid() != 0:
        return []
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A temporary directory the :func:`unprivileged` user owns (``tmp_path`` is root's 0700)."""
    import shutil
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="policyd-perm-"))
    path.chmod(0o755)
    if os.geteuid() == 0:
        os.chown(path, NOBODY, NOBODY)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
