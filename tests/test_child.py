"""policyd.child.Child starts the agent as ``subprocess.Popen(argv, stdin=PIPE, stdout=PIPE,
close_fds=True, restore_signals=True)`` would: each property checked on a real process,
side by side with Popen. (Child is meant for a process with one thread, as policyd is when
it spawns its agent; between fork and exec its child makes only system calls.)"""

# Assertions read `assert expected == actual` (the project's test style).

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from policyd.child import Child

PROBE = r"""
import os, sys
line = sys.stdin.readline().strip()
print(repr((line, os.environ.get("CHILD_TEST"), os.getcwd())))
print(repr(sorted(int(n) for n in os.listdir("/proc/self/fd"))))
sys.exit(int(line) if line.isdigit() else 0)
"""


def popen(argv: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)


def run(child: Child | subprocess.Popen[bytes], line: bytes) -> tuple[list[bytes], int]:
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(line)
    child.stdin.close()
    out = child.stdout.read().splitlines()
    child.stdout.close()
    return out, child.wait(10)


def test_pipes_environment_directory_and_exit_code_as_popen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHILD_TEST", "seen")
    argv = [sys.executable, "-c", PROBE]
    mine, theirs = run(Child(argv), b"7\n"), run(popen(argv), b"7\n")
    assert theirs[0][0] == mine[0][0]
    assert f"('7', 'seen', {os.getcwd()!r})".encode() == mine[0][0]
    assert 7 == mine[1] == theirs[1]


def test_no_other_descriptor_reaches_the_child() -> None:
    """An inheritable descriptor policyd was given (a parent may pass one) is closed in the
    child (close_fds=True)."""
    r, w = os.pipe()
    os.set_inheritable(r, True)
    os.set_inheritable(w, True)
    try:
        argv = [sys.executable, "-c", PROBE]
        mine, theirs = run(Child(argv), b"x\n"), run(popen(argv), b"x\n")
        assert theirs[0][1] == mine[0][1]
        assert r not in eval(mine[0][1]) and w not in eval(mine[0][1])
    finally:
        os.close(r)
        os.close(w)


def test_a_stop_signal_ignored_when_policyd_started_stays_ignored_for_the_agent() -> None:
    """``policyd proxy ... &`` in a script starts policyd with SIGINT ignored; policyd's own
    stop handlers replace it (:func:`policyd.child.hold`), yet the agent gets SIGINT ignored,
    as Popen gives it before those handlers; SIGTERM, not ignored at start, is the default.
    (A full-suite run launched from such a script found the agent's SIGINT reset.)"""
    script = (
        "import signal, subprocess\n"
        "from policyd.child import Child, hold\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)  # as inherited\n"
        "def mask(p):\n"
        "    out = p.communicate()[0] if hasattr(p, 'communicate') else p.stdout.read()\n"
        "    return int(next(x for x in out.split(b'\\n') if x.startswith(b'SigIgn:')).split()[1], 16)\n"
        "argv = ['grep', 'SigIgn', '/proc/self/status']\n"
        "before = mask(subprocess.Popen(argv, stdout=subprocess.PIPE))\n"
        "hold(lambda *a: None)\n"
        "child = Child(argv)\n"
        "child.stdin.close()\n"
        "print(before, mask(child))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    popen_mask, child_mask = (int(x) for x in out.stdout.split())
    assert popen_mask & (1 << (signal.SIGINT - 1))
    assert popen_mask == child_mask
    assert not child_mask & (1 << (signal.SIGTERM - 1))


def test_signals_python_ignores_are_back_to_their_defaults_and_no_others_change() -> None:
    """Python ignores SIGPIPE and SIGXFSZ; the agent gets their default actions (an ignored
    signal stays ignored across exec). Read from a non-Python program's SigIgn mask."""
    def ignored(child: Child | subprocess.Popen[bytes]) -> int:
        out, _ = run(child, b"")
        return int(next(x for x in out if x.startswith(b"SigIgn:")).split()[1], 16)

    argv = ["grep", "SigIgn", "/proc/self/status"]
    assert signal.SIG_IGN == signal.getsignal(signal.SIGPIPE)  # in this (Python) process
    mine, theirs = ignored(Child(argv)), ignored(popen(argv))
    assert theirs == mine
    assert 0 == mine & (1 << (signal.SIGPIPE - 1) | 1 << (signal.SIGXFSZ - 1))


def test_signal_and_wait_with_timeout() -> None:
    child = Child([sys.executable, "-c", "import time; time.sleep(30)"])
    with pytest.raises(TimeoutError):
        child.wait(0.05)
    child.send_signal(signal.SIGTERM)
    assert -signal.SIGTERM == child.wait(10)
    assert -signal.SIGTERM == child.returncode
    child.send_signal(signal.SIGKILL)  # waited for: nothing is signalled (its pid may be reused)
    child.stdin.close()
    child.stdout.close()


def test_programs_that_cannot_start_raise_as_popen(tmp_path: Path) -> None:
    plain = tmp_path / "plain.txt"
    plain.write_text("not a program\n")
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"\x7fELF\x00garbage")
    garbage.chmod(0o755)
    before = sorted(os.listdir("/proc/self/fd"))
    for argv, error in ((["policyd-no-such-program"], FileNotFoundError), ([str(plain)], PermissionError),
                        ([str(garbage)], OSError), ([str(tmp_path)], PermissionError)):
        with pytest.raises(error) as mine:
            Child(argv)
        with pytest.raises(error) as theirs:
            popen(argv)
        assert theirs.value.errno == mine.value.errno
    assert before == sorted(os.listdir("/proc/self/fd"))  # the pipes of a failed start are closed


def test_sigchld_ignored_as_popen() -> None:
    """A parent that set SIGCHLD to SIG_IGN (inherited across exec): the kernel reaps the
    child itself and waitpid(2) has no status; wait() answers 0 as Popen does (never spins)."""
    previous = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        with pytest.raises(FileNotFoundError):
            Child(["policyd-no-such-program"])
        child = Child([sys.executable, "-c", "pass"])
        assert 0 == child.wait(10)
        theirs = popen([sys.executable, "-c", "pass"])
        assert theirs.wait(10) == child.returncode
        for c in (child, theirs):
            assert c.stdin is not None and c.stdout is not None
            c.stdin.close()
            c.stdout.close()
    finally:
        signal.signal(signal.SIGCHLD, previous)


def test_env_and_pass_fds() -> None:
    """``env`` is the child's whole environment (its ``PATH`` finds the program) and each
    of ``pass_fds`` stays open in it, at the same number; no other descriptor does (the
    sandboxed early spawn: bwrap gets its status pipe this way, without subprocess)."""
    read_fd, write_fd = os.pipe()
    other_r, other_w = os.pipe()
    try:
        script = ("import os, sys\n"
                  "print(os.environ.get('ONLY'), 'HOME' in os.environ)\n"
                  f"os.write({write_fd}, b'status')\n"
                  f"try:\n    os.write({other_w}, b'x')\nexcept OSError:\n    print('closed')\n")
        child = Child([os.path.basename(sys.executable), "-c", script],
                      env={"ONLY": "this", "PATH": os.path.dirname(sys.executable)}, pass_fds=(write_fd,))
        os.close(write_fd)
        assert child.stdout.read() == b"this False\nclosed\n"
        assert child.wait() == 0
        assert os.read(read_fd, 100) == b"status"
    finally:
        for fd in (read_fd, other_r, other_w):
            os.close(fd)
