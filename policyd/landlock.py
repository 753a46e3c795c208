"""The Landlock engine of the agent's sandbox: where bubblewrap cannot run (no user
namespaces), the same plan (:func:`policyd.core.sandbox.plan_view`) as a Landlock ruleset
the agent's first process applies to itself before it ``exec``s the agent.

Source: the kernel's ``Documentation/userspace-api/landlock.rst`` and
``include/uapi/linux/landlock.h`` (syscalls 444-446 on every architecture; ABI 1 = Linux
5.13 files, 2 = 5.19 ``REFER``, 3 = 6.2 ``TRUNCATE``, 4 = 6.7 TCP bind/connect, 5 = 6.10
``IOCTL_DEV``, 6 = 6.12 scopes: abstract Unix sockets and signals).

Rules this module owns (docs/sandbox.md, "The Landlock engine"):

- Landlock is an allow-list and a rule on a directory covers everything below it; nothing
  can be carved out of a grant. So a right that must not reach an excluded path (``hide``
  for reading; ``hide`` and ``readonly`` for writing and removing) is granted on each
  *sibling* of the excluded path, from ``/`` (or the writable base) down to it, never on its
  ancestors (:func:`carve`). Siblings are the entries that exist at spawn: a file created
  later directly in such an ancestor directory (a root holding ``.git/hooks``, a home
  holding ``.ssh``) gets only what the ancestor itself has.
- Listing (``READ_DIR``) is granted everywhere: hidden *names* can be listed, their
  contents not read.
- A right granted on an ancestor of an excluded path reaches the excluded path too, so an
  ancestor gets only what harms none of the paths below it (:func:`_ancestor_rights`):
  creating entries when only files are below, nothing when a directory is (a root's
  ``.git/hooks``). So the top of a root holding a hidden or read-only path is fixed: its
  existing files can be edited in place, its existing directories are writable, but no
  file can be created, removed or renamed directly in it (nor in ``.git``: git cannot
  write its index there). Landlock cannot do better: an exception inside a grant needs a
  mount namespace (the bwrap engine).
- ``/dev``: read only ``null``, ``zero``, ``full``, ``random``, ``urandom``; write only
  ``null``, ``zero``, ``full`` (no terminal, no pty: nothing to inject keystrokes into).
- Network (ABI >= 4): TCP ``connect`` only to the egress proxy's port and the loopback
  ports ``network`` names; TCP ``bind`` nowhere. By **port**, not by address.
- ABI >= 6: no signal to a process outside the sandbox, no connection to an abstract Unix
  socket made outside it.
- UDP and other non-TCP IP sockets: closed by a seccomp filter the agent's first process
  installs (:mod:`policyd.landlock_init`), since Landlock's network rules are TCP only.

Why our own ctypes binding (three syscalls and three structures): the PyPI packages compared
(2026-12) are ``landlock`` 1.0.0.dev5 (a pre-release, file rules only: no TCP rules, no
scopes), ``landlockpy`` 0.2.0 and ``py-landlock`` 0.1.1 (months old, few users); the
kernel's interface is stable and versioned by its ABI number, which we probe.
"""

from __future__ import annotations

import ctypes
import os
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from policyd.core import paths as core_paths
from policyd.core import sandbox as core

# --------------------------------------------------------------------------- the kernel's interface

SYS_CREATE_RULESET = 444
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
CREATE_RULESET_VERSION = 1 << 0
RULE_PATH_BENEATH = 1
RULE_NET_PORT = 2

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

#: The file-system rights each ABI handles (a ruleset handles all it knows: what is not
#: granted is denied).
FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1, 5: (1 << 16) - 1}
#: Rights a rule on a non-directory may carry (the kernel refuses others with EINVAL).
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
#: Lowest ABI with TCP rules (Linux 6.7), and with scopes (Linux 6.12).
NET_ABI = 4
SCOPE_ABI = 6

READ = READ_FILE | EXECUTE
WRITE = WRITE_FILE | TRUNCATE
MAKE = MAKE_REG | MAKE_DIR | MAKE_SYM | MAKE_SOCK | MAKE_FIFO | REFER
REMOVE = REMOVE_FILE | REMOVE_DIR
#: Devices the agent reads, and writes (``> /dev/null`` opens with O_TRUNC).
DEV_READ = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
DEV_WRITE = ("/dev/null", "/dev/zero", "/dev/full")


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # __attribute__((packed)) in landlock.h
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPortAttr(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long


def _call(*args: object) -> int:
    result = int(_syscall(*args))
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return result


def abi() -> int:
    """The kernel's Landlock ABI version; 0 when it has none (ENOSYS: built without it;
    EOPNOTSUPP: built in but not enabled at boot, ``lsm=...landlock``)."""
    try:
        return _call(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    except OSError:
        return 0


def why_not(version: int, needs_network: bool) -> str:
    """"" when Landlock ABI ``version`` can enforce the plan, else what is missing and the fix."""
    if version < 1:
        return ("the kernel has no Landlock (Linux >= 5.13 with landlock in the lsm= boot parameter or "
                "CONFIG_LSM; check /sys/kernel/security/lsm)")
    if needs_network and version < NET_ABI:
        return (f"the kernel's Landlock ABI {version} has no TCP rules (ABI >= {NET_ABI}: Linux >= 6.7), so the "
                "network could not be bounded")
    return ""


@dataclass(frozen=True, slots=True)
class Rules:
    """A ruleset before it is made: the ABI, the rights handled, ``paths`` ``[(path, rights)]``
    (merged per path), ``ports`` where TCP connect is allowed (when ``net``), ``scoped``."""

    abi: int
    fs: int
    net: int
    scoped: int
    paths: tuple[tuple[str, int], ...]
    ports: tuple[int, ...]


def build(rules: Rules) -> int:
    """Make the ruleset: its file descriptor (inheritable: the agent's first process
    restricts itself with it). Raises OSError (the path and the syscall named)."""
    attr = _RulesetAttr(rules.fs, rules.net, rules.scoped)
    size = ctypes.sizeof(_RulesetAttr) if rules.scoped else 16 if rules.net else 8  # older ABIs: shorter struct
    fd = _call(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    try:
        for path, rights in rules.paths:
            try:
                target = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # gone since it was listed: nothing to grant
            try:
                beneath = _PathBeneathAttr(rights, target)
                _call(SYS_ADD_RULE, fd, ctypes.c_int(RULE_PATH_BENEATH), ctypes.byref(beneath), ctypes.c_uint32(0))
            except OSError as exc:
                raise OSError(exc.errno, f"landlock_add_rule({path}, {rights:#x}): {exc.strerror}") from None
            finally:
                os.close(target)
        for port in rules.ports:
            net = _NetPortAttr(NET_CONNECT_TCP, port)
            _call(SYS_ADD_RULE, fd, ctypes.c_int(RULE_NET_PORT), ctypes.byref(net), ctypes.c_uint32(0))
    except BaseException:
        os.close(fd)
        raise
    os.set_inheritable(fd, True)
    return fd


# --------------------------------------------------------------------------- the plan as rules


def _kind(path: str) -> int:
    """``stat`` mode bits of ``path`` (not following a final symlink), 0 when missing."""
    try:
        return os.lstat(path).st_mode
    except OSError:
        return 0


def _isdir(path: str) -> bool:
    return stat.S_ISDIR(_kind(path))


def _children(path: str) -> list[str]:
    try:
        return sorted(e.path for e in os.scandir(path))
    except OSError:
        return []


def carve(base: str, rights: int, excluded: Sequence[str], ancestor: Callable[[str, Sequence[str]], int],
          out: dict[str, int]) -> None:
    """Grant ``rights`` on ``base`` except below the ``excluded`` paths: on ``base`` itself
    when nothing excluded lies within it; else ``ancestor(base, excluded within)`` on it and
    the same, recursively, on each of its entries. Symlinks get no rule (their target is
    granted, or not, by its own path). Results are OR-ed into ``out``."""
    within = [e for e in excluded if core_paths.within(e, base)]
    mode = _kind(base)
    if not mode or (stat.S_ISLNK(mode) and base != "/"):
        return
    if not within:
        _grant(out, base, rights if stat.S_ISDIR(mode) else rights & FILE_RIGHTS)
        return
    if base in within or not stat.S_ISDIR(mode):
        return
    _grant(out, base, ancestor(base, within))
    for child in _children(base):
        carve(child, rights, within, ancestor, out)


def _grant(out: dict[str, int], path: str, rights: int) -> None:
    if rights:
        out[path] = out.get(path, 0) | rights


def _no_rights(_base: str, _within: Sequence[str]) -> int:
    return 0


def _ancestor_rights(_base: str, within: Sequence[str]) -> int:
    """The rights a writable directory may have when hidden or read-only paths lie below it.
    A rule on a directory covers everything below, those paths too, so only what harms none
    of them: creating entries when only *files* are below (a new entry replaces nothing);
    nothing when a *directory* is below (creating in it would plant a ``.git/hooks`` entry
    or a ``~/.ssh/authorized_keys``). Never removing or renaming (that would let an
    excluded path, or a directory on the way to one, be replaced: a ``.env`` the project
    loads, a ``.git`` with hooks), never writing (it would reach the excluded files)."""
    if any(_isdir(path) or not _kind(path) for path in within):
        return 0
    return MAKE


def _with_real(paths: Iterable[str]) -> list[str]:
    """``paths`` and, for those reached through a symlink, their real paths too (a hidden
    ``~/.ssh`` that links elsewhere is hidden there as well)."""
    out: list[str] = []
    for p in paths:
        out.append(p)
        real = os.path.realpath(p)
        if real != p:
            out.append(real)
    return list(dict.fromkeys(out))


def rules(version: int, writable: Sequence[str], readonly: Sequence[str], hidden: Sequence[str],
          ports: Sequence[int] | None) -> Rules:
    """The ruleset for Landlock ABI ``version`` (>= 1) of a view: ``writable`` bases (the
    roots, the agent's state, ``writable``, the private tmp; existing paths), ``readonly``
    and ``hidden`` paths (existing, globs expanded), ``ports`` where TCP connect is allowed
    (None: the network is not restricted)."""
    fs = FS_BY_ABI[min(version, max(FS_BY_ABI))]
    hide = _with_real(hidden)
    fixed = _with_real(readonly)
    out: dict[str, int] = {"/": READ_DIR}
    carve("/", READ, [*hide, "/dev"], _no_rights, out)
    for base in dict.fromkeys(os.path.realpath(w) for w in writable):
        carve(base, WRITE | MAKE | REMOVE, [*hide, *fixed], _ancestor_rights, out)
    for dev in DEV_READ:
        _grant(out, dev, READ_FILE if os.path.exists(dev) else 0)
    for dev in DEV_WRITE:
        _grant(out, dev, WRITE if os.path.exists(dev) else 0)
    merged = tuple((p, r & fs & (FILE_RIGHTS if not _isdir(p) else fs)) for p, r in out.items())
    net = NET_BIND_TCP | NET_CONNECT_TCP if ports is not None and version >= NET_ABI else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if version >= SCOPE_ABI else 0
    return Rules(version, fs, net, scoped, tuple((p, r) for p, r in merged if r),
                 tuple(sorted(set(ports or ()))) if net else ())


def connect_ports(proxy_port: int, loopback: Iterable[tuple[str, int]]) -> list[int]:
    """The TCP ports the agent may connect to: the egress proxy's and each loopback endpoint
    the policy names (:func:`policyd.core.sandbox.loopback_endpoints`)."""
    return sorted({proxy_port, *(port for _, port in loopback)})


def describe(r: Rules) -> Mapping[str, object]:
    """What the ruleset enforces, for the ``sandbox.started`` log line."""
    return {"abi": r.abi, "rules": len(r.paths), "tcp_connect": list(r.ports) if r.net else "unrestricted",
            "scoped": bool(r.scoped)}


# --------------------------------------------------------------------------- the sandboxed start

#: Seconds to wait for the agent's first process to report the ruleset applied.
SETUP_TIMEOUT_S = 30.0
#: What the engine does not bound (logged with ``sandbox.started``; docs/sandbox.md says why).
NOT_BOUNDED = ("connections to Unix sockets by path",
               "TCP by address (rules are by port)", "listing hidden names", "processes it leaves behind",
               "/proc of the user's other processes (their command lines; not their environment or memory)")


def _loopback_listener() -> int:
    """A listening TCP socket on the host's ``127.0.0.1`` (an ephemeral port), for the egress
    proxy: its descriptor (the bridge takes it, the egress serves it)."""
    import socket

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)
    except BaseException:
        listener.close()
        raise
    return listener.detach()


def plan(settings: Any, agent: Sequence[str], environ: Mapping[str, str], cwd: str, config: core.SandboxConfig,
         version: int, gateway_env: Mapping[str, str] | None = None, secrets: Sequence[str] = (),
         gateway_ports: Sequence[int] = ()) -> Any:
    """The Landlock start of ``agent`` (a :class:`policyd.sandbox.Plan` whose ``argv`` runs
    :mod:`policyd.landlock_init` with the ruleset's descriptor, ``pass_fds``); the egress
    listening when the network is restricted; ``gateway_ports``: the model gateway's TCP
    listeners on the host's loopback, reachable. Raises Unavailable, OSError."""
    import shutil
    import sys
    import tempfile

    from policyd import sandbox

    home = environ.get("HOME", "") or settings.home
    roots = sandbox.writable_roots(settings, cwd)
    state = core.agent_state(agent, environ, home) if home else ()
    notes: dict[str, object] = {"engine": "landlock", "roots": list(roots), "state": list(state),
                                "spawn": "after the settings"}
    view = config.replace(hide=(*config.hide, *secrets), readonly=(*config.readonly, *sandbox.policy_paths(settings)))
    wanted = core.plan_view(view, roots, home, state)
    for extra in wanted.writable:
        if extra in state and not os.path.lexists(extra) and not extra.endswith(".json"):
            sandbox._mkdirs(extra)  # the agent would create its state directory itself
    writable = [os.path.realpath(p) for pattern in wanted.writable for p in sandbox._glob(pattern)]
    readonly = [p for pattern in wanted.readonly for p in sandbox._glob(pattern)]
    made: list[str] = []
    for pattern in wanted.readonly:  # a missing target in an existing .git (or the agent's
        base = pattern.rstrip("/")     # settings in its state directory): made, then kept read-only
        git = base[:base.find("/.git/") + 5] if "/.git/" in base else ""
        if not core.is_glob(base) and (
                (git and os.path.lexists(git) and sandbox._covered(base, [*roots, *writable]))
                or sandbox._covered(base, state)):
            sandbox._missing_git_target(base, made, readonly, state)  # (its bwrap options are not ours)
    # (a root without .git gets no read-only .git made: it would fix the root's top level,
    # see the module doc; so a .git the agent creates there is its own: docs/sandbox.md)
    if made:
        notes["created"] = made  # removed at the end when still empty (Plan.close)
    hidden = [p for pattern in wanted.hide for p in sandbox._glob(pattern)]
    tmp = tempfile.mkdtemp(prefix="policyd-agent-")  # mode 0700: the agent's private TMPDIR
    env = sandbox.agent_env(environ, config)
    env["TMPDIR"] = tmp
    env.update(gateway_env or {})
    box = sandbox.Plan([], env, roots, notes=notes, inner=list(agent), config=config, engine="landlock",
                       tmpdir=tmp)
    try:
        ports: list[int] | None = None
        if config.network_unrestricted:
            notes["network"] = "unrestricted ([sandbox] network = ['*:*'] in every file that declares it; no egress)"
        else:
            from policyd.egress_bridge import Bridge

            box.bridge = Bridge(environ.get("TMPDIR") or "/tmp")  # the egress adopts it (Plan.start_egress)
            fd = _loopback_listener()
            try:
                box.bridge.register_own(fd)
            except BaseException:
                os.close(fd)
                raise
            loopback = [*core.loopback_endpoints(config.network), *(("127.0.0.1", p) for p in gateway_ports)]
            ports = connect_ports(box.bridge.proxy_port, loopback)
            env.update(box.bridge.agent_env())
            notes["network"] = {"egress": f"127.0.0.1:{box.bridge.proxy_port}", "listed": list(config.network),
                                "denied": list(config.network_deny)}
        ruleset = rules(version, [*roots, *writable, tmp], readonly, hidden, ports)
        fd = build(ruleset)
    except BaseException:
        box.close()
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    notes.update(describe(ruleset), tmp=tmp, hidden=len(hidden), readonly=len(readonly),
                 not_bounded=list(NOT_BOUNDED))
    init = os.path.join(os.path.dirname(os.path.abspath(__file__)), "landlock_init.py")
    box.argv = [sys.executable, "-I", "-S", init, "--ruleset-fd", str(fd), "--parent", str(os.getpid()),
                *(["--tcp-only"] if ports is not None else [])]
    box.pass_fds = (fd,)
    return box


def start(settings: Any, agent: Sequence[str], environ: Mapping[str, str], cwd: str, config: core.SandboxConfig,
          gateway_env: Mapping[str, str] | None = None, forwards: Sequence[tuple[str, int, str]] = (),
          secrets: Sequence[str] = (), version: int | None = None) -> tuple[Any, Any, str]:
    """Start ``agent`` under Landlock: ``(spawned, plan, "")``, or ``(None, None, why not)``
    (no Landlock, an ABI without TCP rules while the network is restricted, a ruleset that
    could not be made or applied: the agent never ran). ``forwards``: the model gateway's
    ``(host, port, unix socket)``; its TCP listener on the host's loopback at that port
    serves the agent here (no network namespace to present the Unix socket in).
    ``version``: the ABI to assume instead of probing (tests)."""
    import select

    from policyd import sandbox
    from policyd.spawn import spawn

    version = abi() if version is None else version
    problem = why_not(version, not config.network_unrestricted)
    if problem:
        return None, None, problem
    try:  # the gateway's Unix socket is for bwrap's bridge; here its TCP listener (same port) is reached
        box = plan(settings, agent, environ, cwd, config, version, gateway_env, secrets,
                   [port for _, port, _ in forwards])
    except sandbox.Unavailable as exc:
        return None, None, str(exc)
    except OSError as exc:
        return None, None, f"the Landlock ruleset could not be made: {exc.strerror or exc}"
    read_fd, write_fd = os.pipe()
    spawned = spawn([*box.argv, "--status-fd", str(write_fd), "--", *box.inner], env=box.env,
                    pass_fds=(*box.pass_fds, write_fd))
    os.close(write_fd)
    for fd in box.pass_fds:
        os.close(fd)
    said = b""
    if not spawned.error_code:
        while not said.endswith(b"\n") and select.select([read_fd], [], [], SETUP_TIMEOUT_S)[0]:
            chunk = os.read(read_fd, 64)
            if not chunk:
                break
            said += chunk
    os.close(read_fd)
    if said != b"restricted\n":
        if not spawned.error_code:
            spawned.stop(0.5)
        box.close()
        why = spawned.error or "its first process did not apply the ruleset (its message is above)"
        return None, None, f"the Landlock sandbox did not start: {why}"
    spawned.argv = list(agent)
    return spawned, box, ""
