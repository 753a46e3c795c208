"""Policy paths policyd cannot read, or that others could write (issue 9 items 15, 16, 17),
through real CLI subprocesses. Permission tests run policyd as ``nobody`` when the suite runs
as root (root reads everything), in a directory that user owns (``shared_tmp``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import NOBODY, ProxyProcess, policyd_env, unprivileged

pytestmark = pytest.mark.timeout(90)

POLICY = ('[policy]\nname = "t"\ndefault = "ask"\n\n[[rule]]\nid = "edits"\nkinds = ["edit"]\n'
          'when = \'true\'\ndecision = "allow"\nreason = "edits"\n')


def _own(path: Path) -> None:
    """Give ``path`` (recursively) to the unprivileged user the subprocesses run as."""
    if os.geteuid() == 0:
        for p in [path, *path.rglob("*")]:
            os.lchown(p, NOBODY, NOBODY)


def _env(base: Path, **extra: str) -> dict[str, str]:
    env = policyd_env(base, {"HOME": str(base), "XDG_CACHE_HOME": str(base / "cache"), **extra})
    _own(base)
    return env


def _policyd(base: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*unprivileged(), sys.executable, "-m", "policyd", *args], env=_env(base, **extra),
                          cwd=base, capture_output=True, text=True, timeout=60)


def _unreadable_dir(base: Path) -> Path:
    pdir = base / "policies"
    pdir.mkdir()
    (pdir / "p.toml").write_text(POLICY)
    _own(base)
    pdir.chmod(0)
    return pdir


@pytest.mark.parametrize("source", ["--policy", "search path"])
@pytest.mark.parametrize("command", ["check", "proxy"])
def test_unreadable_policy_directory_is_a_clear_usage_error(shared_tmp: Path, source: str, command: str) -> None:
    pdir = _unreadable_dir(shared_tmp)
    args = ["--policy", str(pdir)] if source == "--policy" else []
    extra = {} if source == "--policy" else {"POLICYD_SEARCH_PATH": f'["{pdir}"]'}
    tail = ["--", "/bin/true"] if command == "proxy" else []  # an agent any user may run
    proc = _policyd(shared_tmp, command, *args, *tail, **extra)
    assert 2 == proc.returncode, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"{pdir}: cannot read policy directory" in proc.stderr and "Permission denied" in proc.stderr


def test_unreadable_policy_file_is_exit_2_for_check(shared_tmp: Path) -> None:
    path = shared_tmp / "p.toml"
    path.write_text(POLICY)
    _own(shared_tmp)
    path.chmod(0)
    proc = _policyd(shared_tmp, "check", "--policy", str(path))
    assert 2 == proc.returncode, proc.stderr
    assert f"{path}: cannot read: Permission denied" in proc.stderr


@pytest.mark.parametrize(("mode", "words"), [(0o666, "writable by others"), (0o664, "writable by its group")])
def test_check_and_proxy_warn_about_a_policy_serve_refuses(tmp_path: Path, mode: int, words: str) -> None:
    """One rule (loader.insecure) for every command: serve refuses, check and proxy warn."""
    path = tmp_path / "p.toml"
    path.write_text(POLICY)
    path.chmod(mode)
    env = policyd_env(tmp_path)
    check = subprocess.run([sys.executable, "-m", "policyd", "check", "--policy", str(path)], env=env,
                           capture_output=True, text=True, timeout=60)
    assert 0 == check.returncode, check.stderr
    assert f"warning: {path}: policy {words}" in check.stderr
    proxy = subprocess.run([sys.executable, "-m", "policyd", "proxy", "--policy", str(path), "--no-watch", "--",
                            sys.executable, "-c", "pass"], env=env, capture_output=True, text=True, timeout=60,
                           stdin=subprocess.DEVNULL)
    assert 0 == proxy.returncode, proxy.stderr
    assert '"event": "policy.insecure"' in proxy.stderr and words in proxy.stderr
    serve = subprocess.run([sys.executable, "-m", "policyd", "serve", "--policy", str(path), "--socket",
                            str(tmp_path / "s.sock")], env=env, capture_output=True, text=True, timeout=60)
    assert 2 == serve.returncode and words in serve.stderr


def test_watched_directory_becoming_unreadable_backs_off(shared_tmp: Path) -> None:
    """A running proxy whose policy directory turns unreadable keeps the set in force and
    retries its watch with back-off: a handful of warnings, not ~50 a second. The directory
    turns unreadable only once the watch is proven live (a saved change was reloaded by it):
    a sleep instead failed once on loaded cores (the load itself not finished yet)."""
    pdir = shared_tmp / "policies"
    pdir.mkdir()
    (pdir / "p.toml").write_text(POLICY)
    env = _env(shared_tmp)
    argv = [*unprivileged(), sys.executable, "-m", "policyd", "proxy", "--policy", str(pdir), "--no-remember",
            "--rehash", "3600", "--", "sleep", "120"]
    proxy = ProxyProcess(argv, env, shared_tmp)
    try:
        def seen(event: str, **fields: str) -> bool:
            return any(e["event"] == event and all(e.get(k) == v for k, v in fields.items())
                       for e in proxy.stderr_events())

        deadline = time.monotonic() + 60
        while not seen("policy.loaded"):
            assert time.monotonic() < deadline, proxy.stderr_text()
            time.sleep(0.05)
        n = 0
        while not seen("policy.reloaded", reason="watch"):  # saved again until the watch reloads it
            assert time.monotonic() < deadline, proxy.stderr_text()
            n += 1
            (pdir / "p.toml").write_text(POLICY + f"# saved {n}\n")
            wait = time.monotonic() + 5  # the watch may not be live yet; a save settles within ~1 s
            while time.monotonic() < wait and not seen("policy.reloaded", reason="watch"):
                time.sleep(0.1)
        pdir.chmod(0)
        time.sleep(4)
        events = proxy.stderr_events()
        watch = [e for e in events if e["event"] in ("policy.watch_failed", "policy.watch_restarted")]
        failed = [e for e in events if e["event"] == "policy.reload_failed"]
        assert watch, "the watch never noticed the unreadable directory"
        assert len(watch) <= 8, f"{len(watch)} watch warnings in 4 s"
        assert len(failed) <= 4, f"{len(failed)} reload failures logged in 4 s"
    finally:
        pdir.chmod(0o755)
        proxy.stop()
