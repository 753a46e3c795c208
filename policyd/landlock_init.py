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
5. with ``--tcp-only`` (the network is restricted: Landlock's rules cover TCP only), a
   seccomp filter (:func:`tcp_only_filter`): ``socket(AF_INET/AF_INET6)`` only for TCP
   (``SOCK_STREAM``, protocol 0 or ``IPPROTO_TCP``; else ``EACCES``: no UDP, no SCTP, no
   ICMP datagram socket), no ``io_uring`` (``ENOSYS``: it can open sockets without the
   ``socket`` system call), the x32 system calls refused, another architecture killed;
6. writes ``restricted`` to the status descriptor (policyd reads it to know the sandbox is
   set up; end of file without it: it is not, and the agent never ran), closes it on ``exec``;
7. ``exec``s the agent (searching ``PATH``), which inherits stdin/stdout/stderr.

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


#: (audit architecture, socket, io_uring_setup, io_uring_enter, io_uring_register) by machine.
SYSCALLS = {"x86_64": (0xC000003E, 41, 425, 426, 427), "aarch64": (0xC00000B7, 198, 425, 426, 427)}
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
RET_ALLOW, RET_KILL_PROCESS, RET_ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
EACCES, ENOSYS = 13, 38
X32_BIT = 0x40000000


def tcp_only_filter(machine: str) -> list[tuple[int, int, int, int]]:
    """The seccomp program ``[(code, jt, jf, k)]`` (classic BPF over ``struct seccomp_data``:
    ``nr`` at 0, ``arch`` at 4, ``args[i]`` at 16 + 8i, low word first on these
    little-endian machines); raises KeyError for a machine not in :data:`SYSCALLS`."""
    arch, socket_nr, *uring = SYSCALLS[machine]
    ld, jeq, jge, and_k, ret = 0x20, 0x15, 0x35, 0x54, 0x06
    prog: list[tuple[int, int, int, int]] = []
    labels: dict[str, int] = {}
    fixups: list[tuple[int, str, str]] = []

    def op(code: int, k: int, jt: str = "", jf: str = "") -> None:
        if jt or jf:
            fixups.append((len(prog), jt, jf))
        prog.append((code, 0, 0, k))

    op(ld, 4)
    op(jeq, arch, "", "kill")
    op(ld, 0)
    op(jge, X32_BIT, "enosys", "")
    for nr in uring:
        op(jeq, nr, "enosys", "")
    op(jeq, socket_nr, "", "allow")
    op(ld, 16)  # domain
    op(jeq, 2, "inet", "")  # AF_INET
    op(jeq, 10, "inet", "allow")  # AF_INET6
    labels["inet"] = len(prog)
    op(ld, 24)  # type, less SOCK_NONBLOCK and SOCK_CLOEXEC
    op(and_k, ~(0o4000 | 0o2000000) & 0xFFFFFFFF)
    op(jeq, 1, "", "eacces")  # SOCK_STREAM
    op(ld, 32)  # protocol
    op(jeq, 0, "allow", "")
    op(jeq, 6, "allow", "eacces")  # IPPROTO_TCP
    for name, value in (("allow", RET_ALLOW), ("eacces", RET_ERRNO | EACCES), ("enosys", RET_ERRNO | ENOSYS),
                        ("kill", RET_KILL_PROCESS)):
        labels[name] = len(prog)
        op(ret, value)
    for at, jt, jf in fixups:
        code, _, _, k = prog[at]
        prog[at] = (code, labels[jt] - at - 1 if jt else 0, labels[jf] - at - 1 if jf else 0, k)
    return prog


def _install(libc: ctypes.CDLL, program: list[tuple[int, int, int, int]]) -> int:
    class Filter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                    ("k", ctypes.c_uint32)]

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Filter))]

    filters = (Filter * len(program))(*[Filter(*ins) for ins in program])
    prog = Program(len(program), filters)
    return int(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0))


def _has_capabilities() -> bool:
    """Does this process hold any capability (``CapEff`` or ``CapPrm`` of /proc/self/status)?"""
    with open("/proc/self/status") as f:
        held = {k: v.strip() for k, _, v in (line.partition(":") for line in f)}
    return any(int(held.get(k, "0"), 16) for k in ("CapEff", "CapPrm"))


def main(argv: list[str]) -> None:
    options = {"--ruleset-fd": -1, "--status-fd": -1, "--parent": 0}
    tcp_only = False
    i = 0
    while i < len(argv) and argv[i] != "--":
        if argv[i] == "--tcp-only":
            tcp_only, i = True, i + 1
            continue
        if argv[i] not in options or i + 1 >= len(argv) or not argv[i + 1].isdigit():
            _fail(f"bad option {argv[i]!r} (usage: --ruleset-fd N --status-fd M [--parent PID] [--tcp-only] "
                  "-- AGENT ARGV...)")
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
    if tcp_only:
        machine = os.uname().machine
        if machine not in SYSCALLS:
            _fail(f"no seccomp filter for {machine} (UDP could not be closed): not starting the agent")
        if _install(libc, tcp_only_filter(machine)) != 0:
            _fail(f"prctl(PR_SET_SECCOMP): {os.strerror(ctypes.get_errno())}")
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
