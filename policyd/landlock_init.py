"""The agent's first process under the Landlock engine: restrict itself, become the agent.

``policyd proxy`` (:mod:`policyd.landlock`) builds the ruleset and runs
``python -I -S /path/to/policyd/landlock_init.py --ruleset-fd N --status-fd M [--parent PID] -- AGENT ARGV...``
with those descriptors inherited. This process:

1. starts a new session (``setsid``: no controlling terminal, so nothing inside can push
   keystrokes into the terminal policyd runs in, as bwrap's ``--new-session``);
2. asks for ``SIGKILL`` when policyd dies (``PR_SET_PDEATHSIG``, kept across ``exec``; as
   bwrap's ``--die-with-parent``) and checks policyd is still its parent;
3. when it holds capabilities (policyd runs as root), drops every one from the bounding set,
   so the agent ``exec``s with none: Landlock's ptrace restriction (no reading another
   process's ``/proc/PID/environ``) yields to ``CAP_SYS_PTRACE``, and ``CAP_NET_RAW`` would
   open raw sockets past the TCP rules;
4. sets ``PR_SET_NO_NEW_PRIVS`` (no setuid gain; Landlock requires it unprivileged) and
   ``landlock_restrict_self(N)``: from here on this process and everything it starts are
   bounded by the ruleset, which cannot be lifted;
5. writes ``restricted`` to the status descriptor (policyd reads it to know the sandbox is
   set up; end of file without it: it is not, and the agent never ran), closes it on ``exec``;
6. ``exec``s the agent (searching ``PATH``), which inherits stdin/stdout/stderr.

Exit codes of its own: :data:`USAGE` when an option is bad or the ruleset cannot be applied
(a message on stderr; the agent is not started: fail closed), 127 when the agent's program
is not found, 126 when it cannot be run. Built-in modules only (start-up path).
"""

import ctypes
import os
import signal
import sys

#: Exit code for bad options or a ruleset that cannot be applied (as sandbox_init's).
USAGE = 125
PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
PR_CAPBSET_DROP = 24
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SYS_RESTRICT_SELF = 446


def _fail(message: str, code: int = USAGE) -> None:
    os.write(2, f"policyd.landlock_init: {message}\n".encode("utf-8", "backslashreplace"))
    os._exit(code)


def _has_capabilities() -> bool:
    """Does this process hold any capability (``CapEff`` or ``CapPrm`` of /proc/self/status)?"""
    with open("/proc/self/status") as f:
        held = {k: v.strip() for k, _, v in (line.partition(":") for line in f)}
    return any(int(held.get(k, "0"), 16) for k in ("CapEff", "CapPrm"))


def main(argv: list[str]) -> None:
    options = {"--ruleset-fd": -1, "--status-fd": -1, "--parent": 0}
    i = 0
    while i < len(argv) and argv[i] != "--":
        if argv[i] not in options or i + 1 >= len(argv) or not argv[i + 1].isdigit():
            _fail(f"bad option {argv[i]!r} (usage: --ruleset-fd N --status-fd M [--parent PID] -- AGENT ARGV...)")
        options[argv[i]] = int(argv[i + 1])
        i += 2
    agent = argv[i + 1:]
    fd, status, parent = options["--ruleset-fd"], options["--status-fd"], options["--parent"]
    if fd < 0 or status < 0 or not agent:
        _fail("--ruleset-fd N, --status-fd M and an agent command after '--' are required")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    if os.getsid(0) != os.getpid():
        os.setsid()
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0 or (parent and os.getppid() != parent):
        _fail("policyd is gone (or the parent-death signal cannot be set): not starting the agent")
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)  # (EINVAL before Linux 4.3: none to clear)
    if _has_capabilities():
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last = int(f.read())
        for cap in range(last + 1):
            if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                _fail(f"prctl(PR_CAPBSET_DROP, {cap}): {os.strerror(ctypes.get_errno())}")
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        _fail(f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(ctypes.get_errno())}")
    if libc.syscall(SYS_RESTRICT_SELF, ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
        _fail(f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}")
    os.close(fd)
    os.write(status, b"restricted\n")
    os.set_inheritable(status, False)  # closed by the exec
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)
    try:
        os.execvp(agent[0], agent)
    except FileNotFoundError:
        _fail(f"{agent[0]}: command not found", 127)
    except OSError as exc:
        _fail(f"{agent[0]}: {exc.strerror or exc}", 126)


if __name__ == "__main__":
    main(sys.argv[1:])
