"""The agent's operating-system sandbox (``policyd proxy --sandbox auto|required``): probing,
the bubblewrap command line built from the policy's ``[sandbox]``, and the sandboxed spawn.

What the agent and everything it starts see (docs/sandbox.md):

- the whole file system read-only (``--ro-bind / /``), a private ``/tmp`` (tmpfs, also
  ``TMPDIR``), a fresh ``/dev`` and ``/proc`` (its own PID namespace);
- writable: the roots (policyd's working directory and ``--sandbox-root``), the agent's
  own state directories (:data:`policyd.core.sandbox.AGENT_STATE`) and ``writable``;
- ``readonly`` targets bound read-only over whatever is writable; ``hide`` paths replaced
  by an empty read-only directory or ``/dev/null``; the home stays visible (read-only)
  also when it lies under ``/tmp``;
- no network of its own (``--unshare-all``): every connection goes through policyd's egress
  (:mod:`policyd.egress`, run here on its own thread: :class:`EgressThread`; its socket and
  sandbox_init's registration are :mod:`policyd.egress_bridge`'s, ready before the agent
  is spawned, the egress proper adopts them later: :meth:`Plan.start_egress`), which decides
  it by ``network``, ``network_deny`` and the rules; the loopback endpoints ``network``
  names are reachable at the same address inside. Only when every file that declares
  ``network`` grants ``*:*`` does the agent get the host's network (``--share-net``, no
  egress);
- only the variables ``env`` names (the model API key too when named: see docs).

The view is fixed when the agent starts: a ``session/new`` (``load``, ``resume``, ``fork``)
whose ``cwd`` or ``additionalDirectories`` lie outside the writable roots is refused with a
JSON-RPC error naming the fix (:func:`refuse_session`), never run read-only in silence.

Setting up: ``bwrap`` must be on ``PATH`` and able to create user namespaces. Failure is
found by bwrap's ``--json-status-fd`` (no ``child-pid`` line: the agent never ran) and
explained by :func:`diagnose` (the package to install, the sysctl or AppArmor setting).
Where bwrap cannot run, the engine ``auto`` (``sandbox_engine``) starts the same plan under
Landlock instead (:mod:`policyd.landlock`; :func:`start` chooses).
"""

from __future__ import annotations

import contextlib
import os
import sys

from policyd.core import paths as core_paths
from policyd.core import sandbox as core

#: ``typing.TYPE_CHECKING`` without importing typing (~4 ms on the way to a sandboxed
#: spawn: see policyd.cli); type checkers read the name alike. This module is on that way
#: too: no ``dataclasses`` (~9 ms), ``pathlib`` (~7 ms with urllib and ipaddress) nor
#: anything of the egress before the spawn (tests/test_sandbox_core.py pins the imports).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any, Protocol

    from policyd.egress_bridge import Bridge
    from policyd.spawn import Spawned

    class Settings(Protocol):
        """What the sandbox reads of the settings (:class:`policyd.settings.Settings`, or
        :class:`policyd.sandbox_early.EarlySettings` before they are loaded)."""

        @property
        def sandbox(self) -> str: ...
        @property
        def sandbox_roots(self) -> list[str]: ...
        @property
        def sandbox_engine(self) -> str: ...
        @property
        def policy(self) -> list[str]: ...
        @property
        def search_path(self) -> list[str]: ...
        @property
        def home(self) -> str: ...

#: Exit code when ``--sandbox required`` cannot set up the sandbox (a usage error: the agent never ran).
SANDBOX_UNAVAILABLE = 2
#: Directories a ``**`` hide pattern does not descend into (dependencies, history: huge, not the project's).
WALK_SKIP = frozenset({"node_modules", ".git", ".venv", "venv", "__pycache__", "target", ".tox", ".mypy_cache"})
#: Directory entries a hide pattern's walk looks at, per root (bounded start-up cost).
MAX_WALK = 20000
#: Depth of that walk below a root.
MAX_WALK_DEPTH = 12
#: Seconds to wait for bwrap to report the sandbox set up (or failed).
SETUP_TIMEOUT_S = 30.0

FIX_BWRAP = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)"
FIX_USERNS = ("allow unprivileged user namespaces: sysctl -w user.max_user_namespaces=15000 "
              "(0 turns them off)")
FIX_APPARMOR = ("allow unprivileged user namespaces under AppArmor: sysctl -w "
                "kernel.apparmor_restrict_unprivileged_userns=0, or an AppArmor profile granting "
                "'userns' to /usr/bin/bwrap (Ubuntu 24.04: /etc/apparmor.d/bwrap-userns-restrict)")
FIX_CLONE = "allow unprivileged user namespaces: sysctl -w kernel.unprivileged_userns_clone=1"


class Unavailable(RuntimeError):
    """The sandbox cannot be set up here; the message says what is missing and the fix."""


class Plan:
    """A sandboxed start: ``argv`` runs bwrap (which runs the agent), ``env`` its environment,
    ``pass_fds`` the descriptors it keeps (bwrap's status pipe), ``roots`` the writable roots
    (real paths) sessions must stay in; ``notes`` what the set-up decided (logged). The
    other attributes:

    - ``bridge``: the egress's socket and the registration of the sandbox's listeners (built
      before the agent starts); the egress itself (``egress``) adopts it later
      (:meth:`start_egress`);
    - ``config``: the combined ``[sandbox]`` the view was built from;
    - ``inner``: the agent's command line as bwrap runs it (after the egress bridge, when
      there is one);
    - ``early``: the settings read before policyd's own (``policyd.sandbox_early``), when
      the agent was spawned that early; the loaded settings must agree;
    - ``engine``: ``bwrap`` or ``landlock`` (:mod:`policyd.landlock`);
    - ``tmpdir``: the agent's private temporary directory (Landlock: ``TMPDIR``), removed at the end.

    (A plain class, not a dataclass: see the imports.)"""

    __slots__ = ("argv", "bridge", "config", "early", "egress", "engine", "env", "inner", "notes", "pass_fds",
                 "roots", "status_fd", "tmpdir")

    def __init__(self, argv: list[str], env: dict[str, str], roots: tuple[str, ...], status_fd: int = -1,
                 pass_fds: tuple[int, ...] = (), notes: dict[str, object] | None = None, bridge: Bridge | None = None,
                 egress: EgressThread | None = None, config: core.SandboxConfig | None = None,
                 inner: list[str] | None = None, early: Any = None, engine: str = "bwrap", tmpdir: str = "") -> None:
        self.argv, self.env, self.roots, self.status_fd, self.pass_fds = argv, env, roots, status_fd, pass_fds
        self.notes: dict[str, object] = {} if notes is None else notes
        self.bridge, self.egress = bridge, egress
        self.config = core.SandboxConfig() if config is None else config
        self.inner: list[str] = [] if inner is None else inner
        self.early, self.engine, self.tmpdir = early, engine, tmpdir

    def start_egress(self) -> EgressThread | None:
        """The egress deciding the sandbox's connections, started now if not yet (it adopts
        :attr:`bridge`: the listeners sandbox_init registered, or will); None when the
        sandbox has the host's network. Raises Unavailable when it cannot start (the agent
        then has no network at all: stop it)."""
        if self.egress is None and self.bridge is not None:
            self.egress = EgressThread(self.config, self.bridge)
        return self.egress

    def close(self) -> None:
        """Stop the egress (at the proxy's exit, or when the agent did not start), remove
        the mount points the view made on the host (:func:`remove_made`) and the private
        tmp (Landlock)."""
        if self.egress is not None:
            self.egress.close()
            self.egress = None
        if self.bridge is not None:
            self.bridge.close()
            self.bridge = None
        made = self.notes.pop("created", None)
        if isinstance(made, list):
            remove_made(made)
        if self.tmpdir:
            import shutil

            shutil.rmtree(self.tmpdir, ignore_errors=True)
            self.tmpdir = ""


class EgressThread:
    """:class:`policyd.egress.Egress` on an event loop of its own thread (the proxy's loop
    may not run yet), adopting ``bridge`` (made before the agent started: only its
    registration had to be answered then). Its decisions wait for :meth:`set_decider` (the
    engine, once loaded; the egress denies after its own decision timeout);
    ``network_deny`` is decided here, before the rules."""

    def __init__(self, config: core.SandboxConfig, bridge: Bridge) -> None:
        import asyncio
        import threading

        from policyd import egress

        self.config = config
        self.loop = asyncio.new_event_loop()
        self._decider: Any = None
        self._ready: asyncio.Event | None = None
        self._thread = threading.Thread(target=self.loop.run_forever, name="policyd-egress", daemon=True)
        self._thread.start()
        network = [n for n in config.network if n != "*:*"]

        async def adopt() -> egress.Egress:
            return egress.Egress.adopt(bridge, self._decide, network)

        started = asyncio.run_coroutine_threadsafe(adopt(), self.loop)
        try:
            self.egress = started.result(SETUP_TIMEOUT_S)
        except Exception as exc:
            self.loop.call_soon_threadsafe(self.loop.stop)
            raise Unavailable(f"the egress proxy did not start: {exc}") from exc

    def set_decider(self, decide: Any) -> None:
        """Decide connections with ``decide(query) -> Resolution`` from now on (thread-safe)."""
        self.loop.call_soon_threadsafe(self._set, decide)

    def _set(self, decide: Any) -> None:
        import asyncio

        self._decider = decide
        if self._ready is None:
            self._ready = asyncio.Event()
        self._ready.set()

    async def _decide(self, query: Any) -> Any:
        import asyncio

        from policyd.core.model import Decision
        from policyd.core.relay import Resolution

        c = query.connection
        denied = core.denied_by(self.config.network_deny, c.host, c.addresses, c.port)
        if denied:
            return Resolution(Decision.DENY, {"reason": f"[sandbox] network_deny: {denied}",
                                              "rules": [{"id": "[sandbox] network_deny", "decision": "deny"}]})
        if self._ready is None:
            self._ready = asyncio.Event()
        await self._ready.wait()
        result = self._decider(query)
        return await result if asyncio.iscoroutine(result) else result

    def close(self) -> None:
        """Stop listening and end the relayed connections (at the proxy's exit)."""
        import asyncio
        import concurrent.futures

        with contextlib.suppress(concurrent.futures.TimeoutError, RuntimeError):
            asyncio.run_coroutine_threadsafe(self.egress.close(), self.loop).result(5.0)
        self.loop.call_soon_threadsafe(self.loop.stop)


# --------------------------------------------------------------------------- probing


def find_bwrap(environ: Mapping[str, str]) -> str:
    """The bwrap on ``PATH``; raises Unavailable naming the fix."""
    found = next((path for path in (os.path.join(d or ".", "bwrap") for d in environ.get("PATH", os.defpath).split(
        os.pathsep)) if os.path.isfile(path) and os.access(path, os.X_OK)), "")  # (shutil.which: ~3 ms to import)
    if not found:
        raise Unavailable(f"bubblewrap (bwrap) is not on PATH: {FIX_BWRAP}")
    return found


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return ""


def diagnose(bwrap: str, stderr: str = "") -> str:
    """Why bwrap could not set up a sandbox here, and the fix: the kernel settings that
    turn unprivileged user namespaces off, else bwrap's own message."""
    if _read("/proc/sys/user/max_user_namespaces") == "0":
        return f"user namespaces are disabled (user.max_user_namespaces = 0): {FIX_USERNS}"
    if _read("/proc/sys/kernel/unprivileged_userns_clone") == "0":
        return f"unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone = 0): {FIX_CLONE}"
    if _read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1":
        return f"AppArmor restricts unprivileged user namespaces: {FIX_APPARMOR}"
    said = stderr.strip().splitlines()[-1] if stderr.strip() else "no message"
    if "ENOSPC" in said or "max_" in said:
        return f"no user namespace can be created ({said}): {FIX_USERNS}"
    if "EPERM" in said or "Operation not permitted" in said:
        return f"creating a user namespace is not permitted ({said}): {FIX_APPARMOR}; {FIX_USERNS}"
    return (f"{bwrap} could not create the sandbox ({said}); user namespaces may be unavailable here "
            f"(a container without them, seccomp): {FIX_USERNS}; {FIX_APPARMOR}")


def probe(environ: Mapping[str, str] | None = None) -> str:
    """Run an empty sandbox (``bwrap ... true``) and return "" when it works, else why not
    and the fix. (The proxy does not probe first: its spawn reports failure itself.)"""
    import subprocess

    env = dict(os.environ if environ is None else environ)
    try:
        bwrap = find_bwrap(env)
    except Unavailable as exc:
        return str(exc)
    argv = [bwrap, "--die-with-parent", "--unshare-all", "--ro-bind", "/", "/", "--proc", "/proc",
            "--dev", "/dev", "--", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=SETUP_TIMEOUT_S, env=env, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{bwrap} did not run: {exc}"
    return "" if done.returncode == 0 else diagnose(bwrap, done.stderr)


# --------------------------------------------------------------------------- the view


def _exists(path: str) -> bool:
    return os.path.lexists(path)


def _glob(pattern: str, limit: int = MAX_WALK) -> list[str]:
    """Existing paths matching the absolute ``pattern`` (``policyd.core.paths.glob``
    semantics), found by walking from its longest plain prefix (bounded, see
    :data:`WALK_SKIP`)."""
    return _glob_all([pattern], limit)


def _base(pattern: str) -> str:
    """The longest plain (glob-free) directory prefix of ``pattern``."""
    plain = []
    for part in pattern.split("/"):
        if core.is_glob(part):
            break
        plain.append(part)
    return "/".join(plain) or "/"


def _glob_all(patterns: Sequence[str], limit: int = MAX_WALK) -> list[str]:
    """Existing paths matching any of the absolute ``patterns``: what :func:`_glob` finds
    for each, with one walk per plain prefix (a root) for all the patterns below it, each
    entry matched once (:func:`_matcher`): the shipped baseline hides ~30 ``**`` globs in
    every root, walked once each before."""
    found: list[str] = []
    by_base: dict[str, list[str]] = {}
    for pattern in patterns:
        if not core.is_glob(pattern):
            if _exists(pattern):
                found.append(pattern)
        else:
            by_base.setdefault(_base(pattern), []).append(pattern)
    for base, group in by_base.items():
        match = _matcher(base, group)
        seen = 0
        base_depth = base.rstrip("/").count("/")
        for top, dirs, files in os.walk(base, followlinks=False):
            depth = top.rstrip("/").count("/") - base_depth
            dirs[:] = [d for d in dirs if d not in WALK_SKIP] if depth < MAX_WALK_DEPTH else []
            prefix = top if top.endswith("/") else top + "/"
            for name in [*dirs, *files]:
                if match(prefix, name):
                    found.append(prefix + name)
            seen += len(dirs) + len(files)
            if seen > limit:
                break
    return found


def _matcher(base: str, patterns: Sequence[str]) -> Callable[[str, str], bool]:
    """``match(prefix, name)``: does the walked entry ``prefix + name`` (``prefix``: ``base``
    or a directory below it, with a trailing ``/``) match one of ``patterns`` (all below
    ``base``)? A pattern ``BASE/**/NAME`` whose last part holds no ``/``, ``**`` nor bracket
    (what the shipped ``**/.env``, ``**/*.pem`` are) matches exactly the entries so named: a
    set of plain names and one regex of the others, tried on the name alone. The rest: one
    regex of them all on the whole path (``glob_any_regex``). (Matching each entry against
    ~20 whole-path alternatives cost ~2.4 us an entry: ~10 ms for 4,000 entries.)"""
    names: set[str] = set()
    name_globs: list[str] = []
    other: list[str] = []
    lead = "/**/" if base == "/" else base + "/**/"
    plain_base = base == "/" or (not base.endswith("/") and "//" not in base)
    for pattern in patterns:
        last = pattern[len(lead):]
        if not (plain_base and pattern.startswith(lead) and last) or "/" in last or "[" in last or "**" in last:
            other.append(pattern)
        elif core.is_glob(last):
            name_globs.append("/" + last)
        else:
            names.add(last)
    by_name = core_paths.glob_any_regex(tuple(name_globs)).match if name_globs else None
    by_path = core_paths.glob_any_regex(tuple(other)).match if other else None

    def match(prefix: str, name: str) -> bool:
        return (name in names or (by_name is not None and by_name("/" + name) is not None)
                or (by_path is not None and by_path(prefix + name) is not None))

    return match


def _covered(path: str, dirs: Sequence[str]) -> bool:
    return any(core_paths.within(path, d) for d in dirs)


def _real(path: str) -> str:
    return os.path.realpath(path)


def _mkdirs(path: str) -> bool:
    try:
        os.makedirs(path, exist_ok=True)
        return True
    except OSError:
        return False


def _under_tmp(paths: Sequence[str]) -> list[str]:
    """The directories right below ``/tmp`` holding ``paths`` (what runs the agent: policyd's
    package, this Python, the agent's files): kept visible, read-only, under the private /tmp."""
    found: list[str] = []
    for p in paths:
        real = _real(p) if p.startswith("/") else ""
        for path in {p, real}:
            parts = path.split("/")
            if len(parts) > 2 and parts[1] == "tmp" and parts[2] and os.path.exists("/tmp/" + parts[2]):
                found.append("/tmp/" + parts[2])
    return sorted(dict.fromkeys(found))


def view_args(config: core.SandboxConfig, roots: Sequence[str], home: str, state: Sequence[str],
              notes: dict[str, object], needed: Sequence[str] = ()) -> list[str]:
    """The bwrap options of the file-system view (order matters: later mounts win)."""
    plan = core.plan_view(config, roots, home, state)
    args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    if home and core_paths.within(home, "/tmp") and os.path.isdir(home):
        args += ["--ro-bind", home, home]  # the home stays visible (read-only) under the private /tmp
    for visible in _under_tmp(needed):
        args += ["--ro-bind", visible, visible]
    writable: list[str] = list(plan.roots)
    mounts = [(root, root) for root in plan.roots]  # (source, destination) of the writable binds
    skipped: list[str] = []
    for extra in plan.writable:
        if extra in state and not _exists(extra) and not extra.endswith(".json"):
            _mkdirs(extra)  # the agent would create its state directory itself
        found = _glob(extra)
        if not found:
            skipped.append(extra)
        for path in found:
            mounts.append((_real(path), path))
            writable.append(path)
    if skipped:
        notes["writable_missing"] = skipped
    protected = [(pattern, [path for path in _glob(pattern) if _covered(path, writable)]) for pattern in plan.readonly]
    pins = _pinned_parents([path for _, found in protected for path in found], writable)
    if pins:
        notes["pinned"] = len(pins)
    # shallower first: a bind's source is the host's directory, so a later bind above an earlier
    # one would hide it (a writable extra, a pin, a read-only path below)
    for source, path in sorted([*mounts, *((d, d) for d in pins)], key=lambda m: m[1].rstrip("/").count("/")):
        args += ["--bind", source, path]
    readonly: list[str] = []
    made: list[str] = []
    for pattern, found in protected:
        for path in found:
            args += ["--ro-bind", _real(path), path]
            readonly.append(path)
        base = pattern.rstrip("/")
        if not core.is_glob(base) and _covered(base, writable):
            args += _missing_git_target(base, made, readonly, state)
    notes["readonly"] = len(readonly)
    if made:
        notes["created"] = made  # mount points made on the host; removed at the end when still empty
    hidden = sorted(dict.fromkeys(_glob_all(plan.hide)), key=len)
    kept: list[str] = []
    for path in hidden:
        if _covered(path, kept):
            continue
        kept.append(path)
        if os.path.isdir(path) and not os.path.islink(path):
            args += ["--perms", "0000", "--tmpfs", path, "--remount-ro", path]
        else:
            args += ["--ro-bind", "/dev/null", path]
    notes["hidden"] = len(kept)
    return args


def _refuse_linked(guarded: Sequence[str], roots: Sequence[str]) -> None:
    """Raise Unavailable when a policy path (or another path policyd trusts) reaches what it
    names through a symbolic link inside a writable root: bubblewrap binds the link's
    target read-only, but the link is an entry the agent may replace (``rm .policyd; mkdir
    .policyd``: hot reload loads the agent's rules; red team rttrust). Landlock's rules hold
    there (``--sandbox-engine landlock``)."""
    for path in guarded:
        parts = os.path.abspath(path).split("/")
        for i in range(2, len(parts) + 1):
            prefix = "/".join(parts[:i])
            if os.path.islink(prefix) and any(core_paths.within(prefix, r) and prefix != r for r in roots):
                raise Unavailable(f"{path} is reached through the symbolic link {prefix} inside the writable "
                                  "root, which code the agent runs could replace: name the real directory "
                                  f"({_real(prefix)}), keep policy outside the roots, or use "
                                  "--sandbox-engine landlock")


def _pinned_parents(protected: Sequence[str], writable: Sequence[str]) -> list[str]:
    """The directories between each read-only path and the writable bind it lies in (its
    real path's parents, below that bind), each once: bound onto themselves, they are mount
    points, which the kernel refuses to rename or remove (EBUSY). Without that, code inside
    could rename a parent (``mv conf conf.old``: the read-only bind moves along) and create the
    path again, writable, for policyd to read by name (red team rttrust F1)."""
    pins: dict[str, None] = {}
    covers = [_real(w) for w in writable]
    for path in protected:
        real = _real(path)
        cover = max((c for c in covers if core_paths.within(real, c)), key=len, default="")
        if not cover:
            continue
        d = os.path.dirname(real)
        while d != cover and core_paths.within(d, cover) and d != "/":
            pins[d] = None
            d = os.path.dirname(d)
    return list(pins)


def _missing_git_target(target: str, made: list[str], readonly: list[str], state: Sequence[str] = ()) -> list[str]:
    """bwrap options keeping a persistence target of a git directory that does not exist
    (``.git/hooks``, ``.git/config``, ``.git/commondir``, ``.git/info``; or ``.git`` itself) from
    being created inside the writable area ``target`` lies in: a missing path cannot be bound
    read-only, so its first missing component becomes an empty read-only directory (a
    read-only file, when it is the target and git reads it as one: :data:`core.MISSING_AS_FILE`), made on the
    host as the mount point and listed in ``made`` (:func:`remove_made` removes it at the
    end when still empty). A ``.git`` that is a file (a worktree's or submodule's pointer to
    its git directory) is bound read-only itself: rewritten, it would lead the host's git to
    hooks the agent wrote. Only components at or below a ``.git`` are made: a target whose
    missing part lies above it (``sub/.git/hooks`` without ``sub``) is left (the agent may
    create ``sub``). The agent's own settings file in its ``state`` directory
    (``~/.claude/settings.json``) is made likewise when its directory exists."""
    if _exists(target) or _covered(target, made):
        return []
    parent, name = os.path.split(target)
    if (name in core.MISSING_AS_FILE and _covered(target, state) and not _covered(parent, made)
            and os.path.isdir(parent) and not os.path.islink(parent)):
        return _made_file(target, name, made, readonly)
    parts = target.split("/")
    if ".git" not in parts or not os.path.isdir("/".join(parts[:parts.index(".git")]) or "/"):
        return []
    for i in range(parts.index(".git") + 1, len(parts) + 1):
        prefix = "/".join(parts[:i])
        if not _exists(prefix):
            break
        if os.path.islink(prefix):
            return []  # (a symlinked git directory: the target is where it leads, bound if it exists)
        if not os.path.isdir(prefix):
            if prefix in readonly:
                return []
            readonly.append(prefix)
            return ["--ro-bind", prefix, prefix]  # a gitfile: read-only itself
    else:
        return []
    if prefix == target and parts[-1] in core.MISSING_AS_FILE:
        return _made_file(prefix, parts[-1], made, readonly)
    try:
        os.mkdir(prefix, 0o755)
    except OSError:
        return []  # (the parent is not writable here: nor is it for the agent)
    made.append(prefix)
    readonly.append(prefix)
    return ["--ro-bind", prefix, prefix]


def _made_file(path: str, name: str, made: list[str], readonly: list[str]) -> list[str]:
    """Make ``path`` with :data:`core.MISSING_AS_FILE`'s content for ``name`` and bind it read-only."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, core.MISSING_AS_FILE[name])
        finally:
            os.close(fd)
    except OSError:
        return []  # (the parent is not writable here: nor is it for the agent)
    made.append(path)
    readonly.append(path)
    return ["--ro-bind", path, path]


def remove_made(made: Sequence[str]) -> None:
    """Remove the mount points :func:`_missing_git_target` made on the host, deepest first,
    each only when still as made (empty; a file with the content it was made with):
    something written there since is left alone."""
    for path in sorted(made, key=len, reverse=True):
        with contextlib.suppress(OSError):
            if os.path.isdir(path) and not os.path.islink(path):
                os.rmdir(path)  # fails when not empty
            elif os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as f:
                    content = f.read(64)
                if content == core.MISSING_AS_FILE.get(os.path.basename(path), b""):
                    os.unlink(path)


def agent_env(environ: Mapping[str, str], config: core.SandboxConfig) -> dict[str, str]:
    """The agent's environment: the variables ``env`` names; ``TMPDIR`` is the private ``/tmp``."""
    env = core.filter_env(environ, config.env)
    if "TMPDIR" in env:
        env["TMPDIR"] = "/tmp"
    return env


def _policy_files(settings: Settings) -> list[str]:
    """The policy files the full load reads, in its order (:func:`policyd.loader.collect`:
    search-path directories' ``*.toml``, then each ``--policy`` file or directory), without
    importing the loader (it imports the CEL stack: ~100 ms before the agent could start).
    A path that cannot be read raises Unavailable; the full load then agrees or fails, and
    the proxy compares its ``[sandbox]`` with this one (:func:`check_loaded`)."""

    def toml_files(directory: str) -> list[str]:
        try:
            names = sorted(e.name for e in os.scandir(directory) if e.name.endswith(".toml") and e.is_file())
        except OSError as exc:
            raise Unavailable(f"policy directory {directory}: {exc.strerror or exc}") from None
        return [os.path.join(directory, n) for n in names]

    files: list[str] = []
    for entry in settings.search_path:
        if os.path.isdir(entry):
            files.extend(toml_files(entry))
    for entry in settings.policy:
        if os.path.isdir(entry):
            files.extend(toml_files(entry))
        elif os.path.exists(entry):
            files.append(entry)
        else:
            raise Unavailable(f"policy path {entry} does not exist")
    return files


def policy_paths(settings: Settings) -> tuple[str, ...]:
    """The policy files and directories this proxy loads, and the state policyd trusts as
    much (``statepaths.trusted``: its cache, the remembered-choices store), absolute:
    read-only in the view, so that code the agent runs cannot rewrite the rules that judge it
    (hot reload would apply the change; the engine asks for such writes too:
    ``core.decide.OWN_POLICY``)."""
    from policyd.statepaths import make_dirs, trusted

    make_dirs()
    for directory in settings.search_path:  # one the agent made first would be loaded at a reload (F2)
        if any(core_paths.within(os.path.abspath(directory), d) for d in (os.path.expanduser("~"), os.getcwd())):
            _mkdirs(directory)
    entries = (*settings.policy, *settings.search_path, *trusted())
    if sys.prefix != sys.base_prefix:  # the virtualenv policyd runs from: a .pth file, sitecustomize or
        entries += (sys.prefix,)  # pyvenv.cfg written there runs in policyd at its next start (rttrust F6)
    return tuple(dict.fromkeys(os.path.abspath(os.path.expanduser(p)) for p in entries))


def sandbox_config(settings: Settings) -> core.SandboxConfig:
    """The combined ``[sandbox]`` of the policy files this proxy loads (the shipped ones when
    none is found), read without compiling their rules; raises Unavailable for a file that
    cannot be read or a table that does not validate (the full load reports it too)."""
    sources: list[tuple[str, str]] = []
    files = _policy_files(settings)
    if not files:
        shipped = os.path.join(os.path.dirname(os.path.realpath(__file__)), "policies")
        files = sorted(os.path.join(shipped, n) for n in os.listdir(shipped) if n.endswith(".toml"))
    for path in files:
        try:
            with open(path, encoding="utf-8") as f:
                sources.append((path, f.read()))
        except (OSError, UnicodeDecodeError) as exc:
            raise Unavailable(f"policy file {path} cannot be read: {exc}") from None
    config, bad = core.from_sources(sources)
    if bad:
        raise Unavailable("the [sandbox] table does not load: " + "; ".join(bad))
    return config


def check_loaded(box: Plan, loaded: core.SandboxConfig) -> str:
    """"" when the policy set loaded in full has the ``[sandbox]`` the view was built from,
    else why not (the proxy then stops the agent: the view must be the policy's)."""
    mine = box.config.replace(files=())
    theirs = loaded.replace(files=())
    if mine == theirs:
        return ""
    return ("the policy set loaded has another [sandbox] than the one the sandbox was built from "
            f"(built from {list(box.config.files)}, loaded {list(loaded.files)})")


def writable_roots(settings: Settings, cwd: str) -> tuple[str, ...]:
    """policyd's working directory and ``sandbox_roots``, real paths; raises Unavailable for
    a root that is missing or the whole file system."""
    roots: list[str] = []
    for raw in [cwd, *settings.sandbox_roots]:
        real = _real(os.path.join(cwd, os.path.expanduser(raw)))
        if not os.path.isdir(real):
            raise Unavailable(f"sandbox root {raw!r} is not a directory")
        if real == "/":
            raise Unavailable("the sandbox cannot make / writable: start policyd in the project directory "
                              "or name it with --sandbox-root DIR")
        roots.append(real)
    return tuple(dict.fromkeys(roots))


def plan(settings: Settings, agent: Sequence[str], environ: Mapping[str, str], cwd: str,
         config: core.SandboxConfig, gateway_env: Mapping[str, str] | None = None,
         forwards: Sequence[tuple[str, int, str]] = (), secrets: Sequence[str] = ()) -> Plan:
    """The sandboxed start of ``agent``; raises Unavailable (bwrap missing, a bad root).
    ``gateway_env``: the model gateway's variables (placeholder key, base URL: no secret),
    set past the allow-list; ``forwards``: ``(host, port, unix socket)`` the egress bridge
    makes reachable inside (the gateway's listener); ``secrets``: paths hidden besides the
    policy's ``hide`` (the gateway's key file or credentials directory)."""
    bwrap = find_bwrap(environ)
    home = environ.get("HOME", "") or settings.home
    roots = writable_roots(settings, cwd)
    state = core.agent_state(agent, environ, home) if home else ()
    notes: dict[str, object] = {"engine": "bwrap", "roots": list(roots), "state": list(state),
                                "spawn": "after the settings"}
    args = [bwrap, "--die-with-parent", "--unshare-all", "--new-session"]
    needed = [os.path.dirname(os.path.abspath(__file__)), sys.executable, *(a for a in agent if a.startswith("/"))]
    guarded = policy_paths(settings)
    _refuse_linked(guarded, roots)
    view = config.replace(hide=(*config.hide, *secrets), readonly=(*config.readonly, *guarded))
    args += view_args(view, roots, home, state, notes, needed)
    env = agent_env(environ, config)
    env.update(gateway_env or {})
    box = Plan(args, env, roots, notes=notes, inner=list(agent), config=config)
    if config.network_unrestricted:
        args.append("--share-net")
        notes["network"] = "unrestricted ([sandbox] network = ['*:*'] in every file that declares it; no egress)"
    else:
        from policyd.egress_bridge import Bridge

        network = [n for n in config.network if n != "*:*"]
        try:
            loopback = [(host, port, "") for host, port in core.loopback_endpoints(network)]
            box.bridge = Bridge(environ.get("TMPDIR") or "/tmp", loopback)
            for host, port, unix_path in forwards:
                box.bridge.add_forward(host, port, unix_path)
        except (OSError, ValueError) as exc:
            box.close()
            raise Unavailable(f"the egress proxy did not start: {exc}") from exc
        args += box.bridge.bwrap_args()  # after the view: its socket directory may be under /tmp
        box.inner = box.bridge.wrap_argv(agent)
        env.update(box.bridge.agent_env())
        notes["network"] = {"egress": box.bridge.socket_path, "listed": list(config.network),
                            "denied": list(config.network_deny)}
    args += ["--chdir", cwd]
    return box


def start(settings: Settings, agent: Sequence[str], fallback: bool = True, environ: Mapping[str, str] | None = None,
          gateway_env: Mapping[str, str] | None = None, forwards: Sequence[tuple[str, int, str]] = (),
          secrets: Sequence[str] = (), first: bool = False) -> tuple[Spawned | None, Plan | None, str]:
    """Start ``agent`` as ``settings.sandbox`` says: ``(spawned, plan, problem)``. ``plan``
    is None when the agent runs without a sandbox (``auto`` that could not set one up;
    ``problem`` says why); ``spawned`` is None when it must not run (``required``: ``problem``
    names what is missing and the fix). ``fallback`` False: never start it unsandboxed
    (the early spawn: the proxy's own start-up then decides, and warns). ``environ``: the
    agent's environment before the allow-list (default policyd's); ``gateway_env``,
    ``forwards``, ``secrets``: the model gateway's, see :func:`plan`. ``first``: the early
    spawn (no other thread yet: :func:`policyd.spawn.spawn` forks without importing subprocess).

    The engine (``settings.sandbox_engine``): ``bwrap``; ``landlock``
    (:mod:`policyd.landlock`); ``auto``: bwrap when it can run, else Landlock when the
    kernel has it; ``problem`` then names why neither could."""
    environ = dict(os.environ if environ is None else environ)
    cwd = os.getcwd()
    try:
        config = sandbox_config(settings)
    except Unavailable as exc:
        return _fallback(settings, agent, str(exc), fallback, environ)
    engine = settings.sandbox_engine
    problems: list[str] = []
    if engine != "landlock":
        spawned, box, problem = _start_bwrap(settings, agent, environ, cwd, config, gateway_env, forwards, secrets,
                                             first)
        if spawned is not None:
            return spawned, box, ""
        if engine == "bwrap":
            return _fallback(settings, agent, problem, fallback, environ)
        problems.append(f"bubblewrap cannot run here: {problem}")
    from policyd import landlock

    spawned, box, problem = landlock.start(settings, agent, environ, cwd, config, gateway_env, forwards, secrets)
    if spawned is not None:
        if problems:
            box.notes["bwrap_unavailable"] = problems[0]
        return spawned, box, ""
    problems.append(f"and Landlock cannot either: {problem}" if problems else f"Landlock: {problem}")
    return _fallback(settings, agent, "; ".join(problems), fallback, environ)


def _start_bwrap(settings: Settings, agent: Sequence[str], environ: dict[str, str], cwd: str,
                 config: core.SandboxConfig, gateway_env: Mapping[str, str] | None,
                 forwards: Sequence[tuple[str, int, str]], secrets: Sequence[str], first: bool = False
                 ) -> tuple[Spawned | None, Plan | None, str]:
    """The bwrap engine's start: ``(spawned, plan, "")`` or ``(None, None, why not)``."""
    from policyd.spawn import spawn

    try:
        box = plan(settings, agent, environ, cwd, config, gateway_env, forwards, secrets)
    except Unavailable as exc:
        return None, None, str(exc)
    read_fd, write_fd = os.pipe()
    argv = [*box.argv, "--json-status-fd", str(write_fd), "--", *box.inner]
    spawned = spawn(argv, first=first, env=box.env, pass_fds=(write_fd,))
    os.close(write_fd)
    if box.bridge is not None:
        box.bridge.serve()  # sandbox_init registers its listeners, then becomes the agent
    if spawned.error_code:
        os.close(read_fd)
        box.close()
        return None, None, f"bwrap did not start: {spawned.error}"
    if not _child_started(read_fd):
        os.close(read_fd)
        spawned.stop(0.5)  # (bwrap failed before running the agent: it has exited)
        box.close()
        return None, None, probe(environ) or diagnose(box.argv[0])
    box.status_fd = read_fd  # kept open: bwrap writes the exit code there at the end (else SIGPIPE)
    spawned.argv = list(agent)
    return spawned, box, ""


def _child_started(fd: int) -> bool:
    """Read bwrap's ``--json-status-fd`` until its ``child-pid`` line (the sandbox is set up
    and the agent exec'd next) or its end (set-up failed)."""
    import select

    data = b""
    while b"child-pid" not in data:
        ready = select.select([fd], [], [], SETUP_TIMEOUT_S)[0]
        if not ready:
            return False
        chunk = os.read(fd, 4096)
        if not chunk:
            return False
        data += chunk
    return True


def _fallback(settings: Settings, agent: Sequence[str], problem: str, fallback: bool = True,
              environ: Mapping[str, str] | None = None) -> tuple[Spawned | None, Plan | None, str]:
    if settings.sandbox == "required" or not fallback:
        return None, None, problem
    from policyd.spawn import spawn

    print(f"policyd: WARNING: the agent runs WITHOUT a sandbox (--sandbox auto): {problem}", file=sys.stderr)
    return spawn(agent, env=environ), None, problem


# --------------------------------------------------------------------------- sessions


def refuse_session(line: bytes, roots: Sequence[str]) -> bytes | None:
    """The error answer to a client's ``line`` asking for a session outside the writable
    ``roots`` (``session/new`` & co., :func:`policyd.core.sandbox.session_roots`), or None
    to relay it. Directories are compared as real paths (symlinks resolved)."""
    if b'"session/' not in line:
        return None
    from policyd.core import jsonline

    try:
        msg = jsonline.parse(line)
    except ValueError:
        return None
    if not isinstance(msg, dict) or "id" not in msg or not isinstance(msg.get("method"), str):
        return None
    asked = core.session_roots(msg["method"], msg.get("params"))
    if not asked:
        return None
    outside = core.outside_view([_real(d) for d in asked], roots)
    if not outside:
        return None
    error = {"code": core.SESSION_OUTSIDE_VIEW, "message": core.refusal(outside, roots),
             "data": {"outside": outside, "writable_roots": list(roots)}}
    return jsonline.response(msg["id"], error=error)
