"""The ``[sandbox]`` table (policyd.core.sandbox): validation, combining across files so no
file loosens another, the view plan, session roots; and the settings that start it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, policyd_env
from hypothesis import given
from hypothesis import strategies as st

from policyd.core import sandbox as core
from policyd.core.policy import PolicyError, build_set

BASE = '[policy]\nname = "{name}"\n'


def _set(*tables: str) -> core.SandboxConfig:
    sources = [(f"/p/{i}.toml", BASE.format(name=f"f{i}") + "[sandbox]\n" + t) for i, t in enumerate(tables)]
    return build_set(sources).sandbox


@pytest.mark.parametrize(("table", "message"), [
    ('hide = "~/.ssh"', "sandbox.hide must be a list of non-empty strings"),
    ('writable = ["/"]', "sandbox.writable: '/': the whole file system cannot be named"),
    ('writable = ["../up"]', "'..' components are not allowed"),
    ('readonly = ["~bob/.bashrc"]', "only ~ and ~/... name a home"),
    ('network = ["example.com"]', "expected host:port"),
    ('network = ["example.com:99999"]', "port '99999' must be 1-65535 or *"),
    ('network = ["*:443"]', "a bare * host only as '*:*'"),
    ('network = ["exa mple.com:443"]', "must be a name, *.name"),
    ('env = ["GITHUB-TOKEN"]', "sandbox.env: 'GITHUB-TOKEN': a variable name or glob"),
    ('hidden = ["~/.ssh"]', "unknown key sandbox.hidden"),
])
def test_bad_table_is_a_load_error_naming_file_and_key(table: str, message: str) -> None:
    """Each problem is a load error with the file, the table's line and the key."""
    with pytest.raises(PolicyError) as err:
        build_set([("/etc/policyd/x.toml", BASE.format(name="x") + "\n[sandbox]\n" + table + "\n")])
    text = str(err.value)
    assert "/etc/policyd/x.toml:4:" in text
    assert message in text


def test_hide_readonly_and_network_deny_are_unions() -> None:
    """Hidden paths, read-only targets and denied hosts add up across files."""
    got = _set('hide = ["~/.ssh"]\nreadonly = ["~/.bashrc"]\nnetwork_deny = ["a.example:*"]',
               'hide = ["~/.aws"]\nreadonly = [".git/hooks"]\nnetwork_deny = ["b.example:443"]')
    assert ("~/.ssh", "~/.aws") == got.hide
    assert ("~/.bashrc", ".git/hooks") == got.readonly
    assert ("a.example:*", "b.example:443") == got.network_deny


def test_writable_network_and_env_must_pass_every_declaring_file() -> None:
    """A grant of one file stands only where every other file that declares the key grants
    it too (a directory covers what is below it, a glob what it matches)."""
    got = _set('writable = ["~/cache", "/opt/data"]\nnetwork = ["*.example.com:443", "127.0.0.1:8080"]\n'
               'env = ["LC_*", "PATH", "GITHUB_TOKEN"]',
               'writable = ["~/cache/pip", "/srv"]\nnetwork = ["api.example.com:443", "evil.test:443"]\n'
               'env = ["LC_ALL", "PATH"]')
    assert ("~/cache/pip",) == got.writable
    assert ("api.example.com:443",) == got.network
    assert ("PATH", "LC_ALL") == tuple(sorted(got.env, reverse=True))


def test_undeclared_keys_grant_nothing_but_the_default_environment() -> None:
    """No file declares writable or network: nothing extra; no file declares env: the
    short default list, never the whole environment."""
    got = _set('hide = ["~/.ssh"]')
    assert () == got.writable and () == got.network
    assert core.DEFAULT_ENV == got.env
    assert "GITHUB_TOKEN" not in core.filter_env({"GITHUB_TOKEN": "x", "PATH": "/bin"}, got.env)


def test_a_file_without_a_table_does_not_narrow() -> None:
    """Only files that declare a key take part in its combination."""
    got = build_set([("/p/a.toml", BASE.format(name="a")),
                     ("/p/b.toml", BASE.format(name="b") + '[sandbox]\nnetwork = ["api.example.com:443"]\n')]).sandbox
    assert ("api.example.com:443",) == got.network


@pytest.mark.parametrize(("entry", "pattern", "covered"), [
    ("api.example.com:443", "*.example.com:443", True),
    ("example.com:443", "*.example.com:443", False),
    ("api.example.com:80", "*.example.com:443", False),
    ("api.example.com:80", "api.example.com:*", True),
    ("anything:1", "*:*", True),
    ("*.example.com:443", "*.example.com:443", True),  # a wildcard entry covers itself
    ("*.api.example.com:443", "*.example.com:443", True),
    ("*.example.com:443", "*.api.example.com:443", False),
    ("*.example.com:443", "example.com:443", False),
    ("*.xexample.com:443", "*.example.com:443", False),
    ("*:443", "*.example.com:443", False),
])
def test_host_patterns(entry: str, pattern: str, covered: bool) -> None:
    assert covered == core.host_covers(entry, pattern)


def test_a_wildcard_network_entry_of_one_file_is_kept() -> None:
    """``*.example.com:443`` declared by one file is the set's (it was dropped: a wildcard
    entry did not cover itself, so the egress refused what the policy allows)."""
    got = build_set([("/p/a.toml", BASE.format(name="a")),
                     ("/p/b.toml", BASE.format(name="b") + '[sandbox]\nnetwork = ["*.example.com:443"]\n')]).sandbox
    assert ("*.example.com:443",) == got.network
    narrowed = build_set([("/p/a.toml", BASE.format(name="a") + '[sandbox]\nnetwork = ["*.example.com:443"]\n'),
                          ("/p/b.toml", BASE.format(name="b") + '[sandbox]\nnetwork = ["*.api.example.com:443"]\n')])
    assert ("*.api.example.com:443",) == narrowed.sandbox.network  # every file must grant it


def test_network_deny_names_hosts_and_resolved_addresses() -> None:
    """A name that resolves to a denied address is denied (the metadata service)."""
    deny = ("169.254.169.254:*", "[fd00:ec2::254]:*")
    assert "169.254.169.254:*" == core.denied_by(deny, "metadata.internal", ["169.254.169.254"], 80)
    assert "[fd00:ec2::254]:*" == core.denied_by(deny, "x", ["fd00:ec2::254"], 443)
    assert "" == core.denied_by(deny, "api.example.com", ["93.184.216.34"], 443)


def test_loopback_endpoints_are_forwarded() -> None:
    assert (("127.0.0.1", 8080), ("::1", 9000), ("127.0.0.1", 7000)) == core.loopback_endpoints(
        ["127.0.0.1:8080", "[::1]:9000", "localhost:7000", "api.example.com:443", "127.0.0.1:*"])


def test_plan_expands_home_and_roots() -> None:
    """``~`` is the home; relative entries are inside every root."""
    config = core.SandboxConfig(hide=("~/.ssh", "**/.env"), readonly=(".git/hooks",), writable=("~/cache",))
    plan = core.plan_view(config, ["/w/a", "/w/b"], "/home/u", ["/home/u/.codex"])
    assert ("/home/u/.ssh", "/w/a/**/.env", "/w/b/**/.env") == plan.hide
    assert ("/w/a/.git/hooks", "/w/b/.git/hooks") == plan.readonly
    assert ("/home/u/cache", "/home/u/.codex") == plan.writable


def test_agent_state_by_command_line() -> None:
    """Each agent's own state directories; never / or the home itself."""
    env = {"CODEX_HOME": "/home/u/.codex-alt", "CLAUDE_CONFIG_DIR": "/home/u"}
    assert ("/home/u/.codex", "/home/u/.codex-alt") == core.agent_state(["codex-acp"], env, "/home/u")
    assert ("/home/u/.claude", "/home/u/.claude.json") == core.agent_state(
        ["node", "/x/claude-agent-acp/dist/index.js"], env, "/home/u")
    assert () == core.agent_state(["python3", "agent.py"], env, "/home/u")


def test_session_roots_outside_the_view() -> None:
    """session/new & co. ask for cwd and additionalDirectories; those outside the writable
    roots are named in the refusal with the fix."""
    params = {"cwd": "/w/a/../a/sub", "additionalDirectories": ["/w/b", "/other"]}
    asked = core.session_roots("session/new", params)
    assert ["/w/a/sub", "/w/b", "/other"] == asked
    assert None is core.session_roots("session/prompt", params)
    outside = core.outside_view(asked or [], ["/w/a", "/w/b"])
    assert ["/other"] == outside
    assert "--sandbox-root" in core.refusal(outside, ["/w/a"])


def test_shipped_baseline_hides_what_credentials_files_names() -> None:
    """The shipped baseline's [sandbox]: keys and tokens hidden, persistence read-only, the
    environment without tokens."""
    config = build_set([("baseline.toml", (ROOT / "policies" / "baseline.toml").read_text())]).sandbox
    for path in ("~/.ssh", "~/.aws", "~/.config/gcloud", "~/.netrc", "~/.docker/config.json", "**/.env"):
        assert path in config.hide
    for path in ("~/.bashrc", "~/.profile", "~/.gitconfig", "~/.config/git", ".git/hooks", ".git/config"):
        assert path in config.readonly
    env = core.filter_env({"PATH": "/bin", "GITHUB_TOKEN": "t", "AWS_SECRET_ACCESS_KEY": "a", "NPM_TOKEN": "n",
                           "LC_ALL": "C"}, config.env)
    assert {"PATH", "LC_ALL"} == set(env)


# ----------------------------------------------------------------------------- CLI


def test_eval_sandbox_decides_as_a_sandboxed_session(tmp_path: Path) -> None:
    """``policyd eval --sandbox``: ``python -c`` inside the roots is allowed sandboxed only;
    a push stays not allowed either way."""
    def decide(command: str, *flags: str) -> str:
        line = json.dumps({"sessionId": "s", "toolCall": {"toolCallId": "t", "kind": "execute",
                                                          "rawInput": {"command": command}},
                           "options": [{"optionId": "a", "name": "Allow", "kind": "allow_once"}]})
        item = json.dumps({"request": json.loads(line), "cwd": str(tmp_path)})
        done = subprocess.run([sys.executable, "-m", "policyd", "eval", *flags], input=item, capture_output=True,
                              text=True, env=policyd_env(tmp_path), timeout=120, check=True)
        return str(json.loads(done.stdout)["decision"])

    code = "python -c 'import os; print(os.getcwd())'"  # code the inline analyzer does not prove
    assert "ask" == decide(code)
    assert "allow" == decide(code, "--sandbox")
    assert "allow" != decide("git push origin main", "--sandbox")


def test_config_file_sandbox_setting_is_honoured_before_the_early_spawn(tmp_path: Path) -> None:
    """``sandbox = "required"`` in the config file (not on the command line): the agent is
    not spawned early, outside the sandbox; it starts sandboxed (its environment is the
    allow-list, GITHUB_TOKEN is not in it)."""
    config = tmp_path / "config.toml"
    config.write_text('sandbox = "required"\n')
    out = tmp_path / "env.txt"
    env = policyd_env(tmp_path, {"POLICYD_CONFIG": str(config), "GITHUB_TOKEN": "ghp_x"})
    done = subprocess.run([sys.executable, "-m", "policyd", "proxy", "--headless", "--", "sh", "-c",
                           f"env > {out}"], env=env, cwd=tmp_path, input="", capture_output=True, text=True,
                          timeout=120, check=False)
    assert "sandbox.started" in done.stderr, done.stderr[-2000:]
    assert "GITHUB_TOKEN" not in out.read_text()


def test_may_sandbox_is_conservative(tmp_path: Path) -> None:
    """Before parsing anything, any hint of the sandbox delays the agent's start."""
    from policyd.sandbox_early import may_sandbox

    assert may_sandbox(["proxy", "--sandbox", "auto", "--", "a"], {})
    assert may_sandbox(["proxy", "--sandbox-root", "/x", "--", "a"], {})
    assert may_sandbox(["proxy", "--", "a"], {"POLICYD_SANDBOX": "required"})
    assert not may_sandbox(["proxy", "--", "a", "--sandbox"], {"POLICYD_SANDBOX": "off", "HOME": str(tmp_path)})
    config = tmp_path / "c.toml"
    config.write_text("# sandbox later\n")
    assert may_sandbox(["proxy", "--config", str(config), "--", "a"], {})
    assert may_sandbox(["proxy", "--", "a"], {"POLICYD_CONFIG": str(config)})


def test_sandbox_values_are_frozen_compared_and_replaced_by_field() -> None:
    """SandboxConfig, SandboxTable and ViewPlan behave as the frozen dataclasses they were
    (no dataclasses import before a sandboxed spawn): equal and hashed by their fields,
    assignment refused, ``replace`` makes a changed copy and names an unknown field."""
    import copy
    import pickle

    a = core.SandboxConfig(hide=("~/.ssh",), files=("/p/a.toml",))
    assert a == core.SandboxConfig(hide=("~/.ssh",), files=("/p/a.toml",)) and hash(a) == hash(copy.copy(a))
    assert a != core.SandboxConfig(hide=("~/.ssh",)) and a != core.SandboxTable("/p/a.toml", hide=("~/.ssh",))
    assert core.DEFAULT_ENV == a.env and "SandboxConfig(hide=('~/.ssh',), writable=()" in repr(a)
    with pytest.raises(AttributeError):
        a.hide = ()  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del a.files  # type: ignore[misc]
    assert core.SandboxConfig(hide=("~/.ssh",)) == a.replace(files=()) and ("/p/a.toml",) == a.files
    with pytest.raises(TypeError, match="no field 'hidden'"):
        a.replace(hidden=())
    assert pickle.loads(pickle.dumps(a)) == a
    table = core.SandboxTable("/p/b.toml", env=("PATH",))
    assert (None, ("PATH",)) == (table.hide, table.env) and table == core.SandboxTable("/p/b.toml", env=("PATH",))
    assert core.ViewPlan(("/r",), (), (), ()) == core.plan_view(core.SandboxConfig(env=()), ["/r"], "/h", [])


def test_a_loaded_set_with_another_sandbox_table_is_refused() -> None:
    """The view is built from the [sandbox] tables read before the spawn; when the set the
    proxy then loads in full has other tables (a file changed between), the proxy is told
    why (it stops the agent: the view must be the policy's)."""
    from policyd.sandbox import Plan, check_loaded

    built = core.SandboxConfig(hide=("~/.ssh",), files=("/p/a.toml",))
    box = Plan([], {}, (), config=built)
    assert "" == check_loaded(box, core.SandboxConfig(hide=("~/.ssh",), files=("/p/a.toml",)))
    assert "another [sandbox]" in check_loaded(box, core.SandboxConfig(hide=("~/.ssh", "~/.aws")))


@pytest.mark.parametrize(("argv", "env", "config", "expected"), [
    (["proxy", "--sandbox", "required"], {"POLICYD_SANDBOX": "auto"}, 'sandbox = "off"', "required"),
    (["proxy"], {"POLICYD_SANDBOX": "auto"}, 'sandbox = "off"', "auto"),
    (["proxy"], {}, 'sandbox = "required"', "required"),
    (["proxy", "--sandbox=auto"], {}, "", "auto"),
])
def test_early_settings_follow_the_settings_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       argv: list[str], env: dict[str, str], config: str,
                                                       expected: str) -> None:
    """Flag > environment > config file > default, as policyd.settings; and what the early
    read returns is what the loaded settings say (same_as)."""
    from policyd.sandbox_early import read
    from policyd.settings import load_settings

    path = tmp_path / "config.toml"
    path.write_text(config + '\nsandbox_roots = ["/srv/file"]\n')
    environ = {"HOME": str(tmp_path), "POLICYD_CONFIG": str(path), "POLICYD_SEARCH_PATH": "[]", **env}
    early = read([*argv, "--", "agent"], environ)
    assert early is not None
    assert expected == early.sandbox
    assert ["/srv/file"] == early.sandbox_roots and [] == early.search_path
    for name in [k for k in os.environ if k.upper().startswith(("POLICYD_", "XDG_CONFIG"))]:
        monkeypatch.delenv(name)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    settings = load_settings({"sandbox": expected if "--sandbox" in " ".join(argv) else None})
    assert early.same_as(settings)


@pytest.mark.parametrize(("argv", "env"), [
    (["proxy", "--sandbox-r", "/x"], {}),  # an abbreviation argparse accepts
    (["proxy", "--sandbox", "maybe"], {}),
    (["proxy"], {"policyd_sandbox": "required"}),  # the settings read any case
    (["proxy"], {"POLICYD_SANDBOX_ROOTS": "/not-json"}),
])
def test_early_settings_give_up_when_unsure(tmp_path: Path, argv: list[str], env: dict[str, str]) -> None:
    """Anything not read exactly as the settings would: no early read (the agent then starts
    after the settings)."""
    from policyd.sandbox_early import read

    assert None is read([*argv, "--", "agent"], {"HOME": str(tmp_path), **env})


def test_sandboxed_agent_is_spawned_early(tmp_path: Path) -> None:
    """``--sandbox required`` on the command line: the agent starts in the sandbox before
    policyd's own start-up (the early spawn), not after the settings."""
    done = subprocess.run([sys.executable, "-m", "policyd", "proxy", "--headless", "--sandbox", "required", "--",
                           "true"], env=policyd_env(tmp_path), cwd=tmp_path, input="", capture_output=True,
                          text=True, timeout=120, check=False)
    started = [json.loads(line) for line in done.stderr.splitlines() if '"sandbox.started"' in line]
    assert started, done.stderr[-2000:]
    assert started[0]["spawn"].startswith("early")


def test_unsandboxed_early_spawn_imports_nothing_more(tmp_path: Path) -> None:
    """Checking whether the sandbox may be on costs the plain early spawn no import of note
    (policyd.sandbox_early imports os only): neither typing, dataclasses, re nor the
    sandbox's own modules are loaded before the agent starts."""
    probe = ("import sys\nbefore = set(sys.modules)\nimport policyd.cli\n"
             "s = policyd.cli._spawn_agent_first(['proxy', '--', 'true'])\n"
             "print(' '.join(sorted(set(sys.modules) - before)))\ns.stop(1.0)")
    env = policyd_env(tmp_path, {"HOME": str(tmp_path)})
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60,
                          check=True)
    loaded = set(done.stdout.split())
    assert "policyd.sandbox_early" in loaded
    assert set() == loaded & {"typing", "dataclasses", "re", "policyd.sandbox", "policyd.core.sandbox", "tomllib"}


#: Modules the early sandboxed spawn must not import before the agent starts (each costs
#: milliseconds there: dataclasses and inspect ~9, pathlib with urllib and ipaddress ~7,
#: tomllib with typing and datetime ~7, asyncio ~20; the egress proper ~100).
NOT_BEFORE_THE_SANDBOXED_SPAWN = frozenset({
    "dataclasses", "inspect", "typing", "pathlib", "urllib.parse", "ipaddress", "tomllib", "datetime", "asyncio",
    "subprocess", "threading", "socket", "signal", "selectors", "shutil", "tempfile", "argparse", "policyd.egress",
    "policyd.settings", "policyd.landlock", "pydantic", "structlog"})


def test_sandboxed_early_spawn_imports_only_what_builds_the_sandbox(tmp_path: Path) -> None:
    """``policyd proxy --sandbox required -- AGENT`` spawns the agent in the sandbox before
    policyd's own start-up: what it imports up to then (the early settings, the policy's
    ``[sandbox]``, the view, bwrap's command line, the egress's bridge) includes none of
    :data:`NOT_BEFORE_THE_SANDBOXED_SPAWN`. Without ``site`` (``-S``): an editable install's
    path hook imports pathlib first and would hide it. Checked by the modules a real process
    imported, not by a clock."""
    probe = ("import sys\nbefore = set(sys.modules)\nimport policyd.cli\n"
             "s = policyd.cli._spawn_agent_first(['proxy', '--sandbox', 'required', '--', 'true'])\n"
             "print(' '.join(sorted(set(sys.modules) - before)))\n"
             "print(s is not None and s.sandbox is not None and s.sandbox.notes['spawn'])\n"
             "s.stop(1.0)\ns.sandbox.close()")
    env = policyd_env(tmp_path, {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)})
    done = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    loaded, spawned = done.stdout.splitlines()[-2:]
    assert spawned.startswith("early")  # the sandboxed agent was spawned on this path
    assert {"policyd.sandbox", "policyd.core.sandbox", "policyd.egress_bridge"} <= set(loaded.split())
    assert [] == sorted(set(loaded.split()) & NOT_BEFORE_THE_SANDBOXED_SPAWN)


def test_what_runs_the_agent_stays_visible_under_the_private_tmp(tmp_path: Path) -> None:
    """A checkout, a Python or an agent under /tmp (replaced by the private /tmp inside) is
    bound back read-only: its directory right below /tmp."""
    from policyd.sandbox import _under_tmp

    inside = tmp_path / "pkg" / "policyd"
    inside.mkdir(parents=True)
    top = "/tmp/" + str(tmp_path).split("/")[2]
    assert [top] == _under_tmp([str(inside), str(inside / "sandbox_init.py")])
    assert [] == _under_tmp(["/usr/bin/python3", "relative/path", "/tmp"])


QUICK_DOCS = {
    "plain": '[policy]\nname = "x"\n[sandbox]\nhide = ["~/.ssh", \'C:\\\\x\', # why\n  "a\\"b\\\\c\\td",\n]  # end\n'
             'env = "PATH"\nnetwork=[]\n\n[[rule]]\nid = "r"\nwhen = """\nsession.sandboxed\n"""\n',
    "no table": '[policy]\nname = "x"\n[[rule]]\nid = "r"\nwhen = "session.sandboxed"\n',
    "last table, no newline": '[sandbox]\nreadonly = [".git/hooks"]',
}
UNSURE_DOCS = {
    "dotted key": 'sandbox.hide = ["~/.ssh"]\n',
    "inline table": 'sandbox = { hide = ["~/.ssh"] }\n',
    "sub-table too": '[sandbox]\nhide = []\n[sandbox.extra]\nx = ["a"]\n',
    "spaced header": '[ sandbox ]\nhide = ["~/.ssh"]\n',
    "multi-line string": '[sandbox]\nhide = ["""~/.ssh"""]\n',
    "unicode escape": '[sandbox]\nhide = ["~/.s\\u0073h"]\n',
    "escaped key elsewhere": '"s\\u0061ndbox" = { hide = ["~/.ssh"] }\n',
    "nested array": '[sandbox]\nhide = [["~/.ssh"]]\n',
    "two keys on a line": '[sandbox]\nhide = [] env = []\n',
    "a number": '[sandbox]\nhide = [1]\n',
}


@pytest.mark.parametrize("name", [*QUICK_DOCS, *UNSURE_DOCS])
def test_quick_sandbox_reads_what_tomllib_reads_or_gives_up(name: str) -> None:
    """The ``[sandbox]`` read before a sandboxed spawn without tomllib (``quick_sandbox``):
    a table written plainly is read exactly as tomllib reads it; any other way of writing
    it (or anything it is unsure of) gives None, and tomllib then parses the file."""
    import tomllib

    text = QUICK_DOCS.get(name) or UNSURE_DOCS[name]
    quick = core.quick_sandbox(text)
    if name in UNSURE_DOCS:
        assert quick is None
        return
    full = tomllib.loads(text)
    assert quick == ({"sandbox": full["sandbox"]} if "sandbox" in full else {})


def test_quick_sandbox_reads_the_shipped_policies() -> None:
    """The shipped policies' tables are read by the quick path, as tomllib reads them."""
    import tomllib

    for path in sorted((ROOT / "policies").glob("*.toml")):
        text = path.read_text()
        full = tomllib.loads(text)
        assert core.quick_sandbox(text) == ({"sandbox": full["sandbox"]} if "sandbox" in full else {}), path


CONFIG_DOCS = {
    "empty": "# no settings\n",
    "plain": 'sandbox = "required"  # why\nsandbox_roots = [\n  "/srv/a", \'/srv/b\',\n]\nheadless = true\n'
             'kill_grace_s = 2.5\nrehash_s = 30\nwatch = false\nlog_level = "info"\n\n[gateway]\nmode = "off"\n'
             '[[x.y]]\nz = 1979-05-27\n',
    "numbers": "a = -1\nb = +0.5\nc = 1e3\nd = 0\nsandbox = 'auto'\n",
}
CONFIG_UNSURE = {
    "a table named like a key read": 'sandbox = "auto"\n[policy]\nx = 1\n',
    "a dotted table named so": '[search_path.more]\nx = 1\n',
    "a quoted header": '["sandbox"]\nx = 1\n',
    "an escaped header": '["s\\u0061ndbox"]\nx = 1\n',
    "a dotted key": 'sandbox.mode = "auto"\n',
    "a quoted key": '"sandbox" = "auto"\n',
    "a date": 'since = 1979-05-27\n',
    "a hexadecimal number": 'n = 0x1F\n',
    "underscores in a number": 'n = 1_000\n',
    "a multi-line string": 'sandbox = """\nrequired"""\n',
    "an inline table": 'gateway = { mode = "auto" }\n',
    "an array of numbers": 'ports = [1, 2]\n',
    "a leading zero": 'n = 012\n',
}


def _top_level_values(full: dict[str, object]) -> dict[str, object]:
    """What tomllib read at the top level, but tables and arrays of tables."""
    return {k: v for k, v in full.items() if not isinstance(v, dict) and not (
        isinstance(v, list) and v and all(isinstance(i, dict) for i in v))}


@pytest.mark.parametrize("name", [*CONFIG_DOCS, *CONFIG_UNSURE])
def test_quick_config_reads_what_tomllib_reads_or_gives_up(name: str) -> None:
    """The config file's top-level keys read before a sandboxed spawn without tomllib
    (``quick_top_level``): written plainly, exactly what tomllib reads; a header whose first
    key is one the early read wants (that key would be a table), or any other way of writing
    them: None (the early read then parses the file with tomllib)."""
    import tomllib

    keys = ("sandbox", "sandbox_roots", "sandbox_engine", "policy", "search_path")
    text = CONFIG_DOCS.get(name) or CONFIG_UNSURE[name]
    quick = core.quick_top_level(text, keys)
    if name in CONFIG_UNSURE:
        assert quick is None
        return
    assert quick == _top_level_values(tomllib.loads(text))


_CONFIG_LINES = st.sampled_from([
    'sandbox = "required"', "sandbox = 'auto'", 'sandbox = "a\\"b"', 'sandbox_roots = ["/x", "/y"]',
    "sandbox_roots = [", '  "/z",', "]", "policy = []", "search_path = ['/p']  # c", "headless = true", "n = 3",
    "f = -2.5e3", "d = 2020-01-01", "[gateway]", "[[rule]]", "[policy]", "[ sandbox.x ]", '["policy"]', "# [policy]",
    'x = """', '[sandbox]"""', "x = , ", "", "   ", "sandbox = true", 'sandbox = "\\u0061"', "= 1",
    "a.b = 1", 'k = { a = 1 }', "k = [[1]]", "k = [1]", "sandbox = ", 'sandbox = "x" "y"'])


@given(st.lists(_CONFIG_LINES, max_size=8))
def test_quick_config_never_reads_other_values_than_tomllib(lines: list[str]) -> None:
    """Whatever the document: when ``quick_top_level`` reads it, tomllib reads it too and
    gives the same top-level values (the keys it reads: all of tomllib's but tables and
    arrays of tables)."""
    import tomllib

    keys = ("sandbox", "sandbox_roots", "sandbox_engine", "policy", "search_path")
    text = "\n".join(lines) + "\n"
    quick = core.quick_top_level(text, keys)
    try:
        full = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        full = None
    if quick is None:
        return
    if full is None:  # (invalid beyond the top-level keys: the settings' load reports it, then)
        top = "\n".join(lines[:next((i for i, li in enumerate(lines) if li.lstrip().startswith("[")), len(lines))])
        full = tomllib.loads(top + "\n")
    assert quick == _top_level_values(full)
    assert not any(isinstance(full.get(k), dict) for k in keys)


def test_a_quick_read_the_full_load_disagrees_with_stops_the_agent(tmp_path: Path) -> None:
    """Fail closed on the quick ``[sandbox]`` read: a ``[sandbox]`` header inside a
    multi-line string is read by ``quick_sandbox`` as a table the document does not have;
    the agent is spawned early with that view, and once the policy is loaded in full the
    proxy finds another ``[sandbox]``, stops the agent and exits 2."""
    policy = tmp_path / "tricky.toml"
    policy.write_text('[policy]\nname = "tricky"\ndescription = """\n[sandbox]\nhide = ["~/.nothing"]\n[end]\n"""\n')
    assert core.quick_sandbox(policy.read_text()) == {"sandbox": {"hide": ["~/.nothing"]}}
    done = subprocess.run([sys.executable, "-m", "policyd", "proxy", "--headless", "--sandbox", "required",
                           "--policy", str(policy), "--", "sleep", "30"], env=policyd_env(tmp_path), cwd=tmp_path,
                          input="", capture_output=True, text=True, timeout=120, check=False)
    assert 2 == done.returncode, done.stderr[-2000:]
    assert "another [sandbox]" in done.stderr
