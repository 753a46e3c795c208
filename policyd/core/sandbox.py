"""The ``[sandbox]`` table of policy files: parsing, validation, combining, and the plan of
the agent's operating-system view derived from it (pure; :mod:`policyd.sandbox` does the I/O).

Rules this module owns:

- Keys (every one optional, each a list of strings; any other key is a load error naming
  the file and key):

  ``hide``          paths or globs the agent can neither read nor list (``~`` allowed; a
                    relative pattern such as ``**/.env`` is inside every session root)
  ``writable``      paths made writable beside the session roots, ``/tmp`` and the agent's
                    own state directories
  ``readonly``      persistence targets kept read-only inside whatever is writable
                    (``~/.bashrc``; relative: inside every root, ``.git/hooks``)
  ``network``       ``host:port`` patterns the agent may reach (``*.example.com:443``,
                    ``127.0.0.1:8080``, ``*:*``); the egress proxy enforces them
  ``network_deny``  ``host:port`` patterns never reachable, whatever ``network`` says
  ``env``           variable names or globs (``LC_*``) passed to the agent

- Combining across files, so that no file loosens another: ``hide``, ``readonly`` and
  ``network_deny`` are unions; ``writable``, ``network`` and ``env`` grant only what every
  file that declares the key grants (an entry of one file passes when it is covered by an
  entry of each other declaring file). A key no file declares grants nothing, except ``env``,
  which then is :data:`DEFAULT_ENV`.
- Paths are absolute, ``~``/``~/...``, or relative to each session root; ``..`` components
  are refused (a pattern must not climb out of a root).
"""

from __future__ import annotations

import functools  # (re imports it: no cost on the way to a spawn)
import re
from collections.abc import Iterable, Mapping, Sequence

from policyd.core import paths

#: ``typing.TYPE_CHECKING`` without importing typing (~4 ms before a sandboxed spawn). This
#: module is on the way to a sandboxed spawn (``policyd.sandbox``): it imports neither
#: ``dataclasses`` (~9 ms with ``inspect``, then ~1 ms per class built) nor ``typing``
#: (tests/test_sandbox_core.py pins the spawn's imports).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: The keys of a ``[sandbox]`` table.
KEYS = ("hide", "writable", "readonly", "network", "network_deny", "env")
#: Entries per key per file (a policy is text written by people; more is a mistake).
MAX_ENTRIES = 1024
#: Variables passed when no file declares ``env``: what a shell and the agents need, no secret.
DEFAULT_ENV = ("PATH", "HOME", "LANG", "LANGUAGE", "LC_*", "TERM", "USER", "LOGNAME", "SHELL", "TZ", "TMPDIR",
               "NO_COLOR")
#: ``sandbox`` setting values: off (decisions only), auto (sandbox when possible), required.
MODES = ("off", "auto", "required")
#: The agent's own state directories (writable inside), by a word of its command line:
#: ``$NAME`` entries are the directory that variable names in policyd's environment.
AGENT_STATE: Mapping[str, tuple[str, ...]] = {
    "claude": ("~/.claude", "~/.claude.json", "$CLAUDE_CONFIG_DIR"),
    "gemini": ("~/.gemini",),
    "codex": ("~/.codex", "$CODEX_HOME"),
    "npx": ("~/.npm",),
    "npm": ("~/.npm",),
}

_ENV_NAME = re.compile(r"^[A-Za-z_*?][A-Za-z0-9_*?]*$")
_HOST = re.compile(r"^(\*|(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*"
                   r"|\d{1,3}(\.\d{1,3}){3}|\[[0-9A-Fa-f:.]+\])$")


class _Value:
    """A frozen value, as ``@dataclass(frozen=True, slots=True)`` makes one (without
    importing dataclasses: see the imports): the fields are ``__slots__``, set once by
    ``__init__``, compared, hashed and shown in the order of ``_FIELDS`` (``__init__``'s);
    assigning raises AttributeError."""

    __slots__ = ()
    _FIELDS: tuple[str, ...] = ()

    def _set(self, **values: object) -> None:
        for name in self._FIELDS:
            object.__setattr__(self, name, values[name])

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self._FIELDS)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Value) or other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._FIELDS)
        return f"{type(self).__name__}({shown})"

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r} of a frozen {type(self).__name__}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r} of a frozen {type(self).__name__}")

    def __reduce__(self) -> tuple[object, ...]:  # (copy and pickle: __init__ takes the fields in order)
        return self.__class__, self._values()


class SandboxTable(_Value):
    """One file's ``[sandbox]``; a key the file does not declare is None."""

    __slots__ = ("env", "file", "hide", "network", "network_deny", "readonly", "writable")
    _FIELDS = ("file", "hide", "writable", "readonly", "network", "network_deny", "env")
    file: str
    hide: tuple[str, ...] | None
    writable: tuple[str, ...] | None
    readonly: tuple[str, ...] | None
    network: tuple[str, ...] | None
    network_deny: tuple[str, ...] | None
    env: tuple[str, ...] | None

    def __init__(self, file: str, hide: tuple[str, ...] | None = None, writable: tuple[str, ...] | None = None,
                 readonly: tuple[str, ...] | None = None, network: tuple[str, ...] | None = None,
                 network_deny: tuple[str, ...] | None = None, env: tuple[str, ...] | None = None) -> None:
        self._set(file=file, hide=hide, writable=writable, readonly=readonly, network=network,
                  network_deny=network_deny, env=env)


class SandboxConfig(_Value):
    """The combined ``[sandbox]`` of a policy set (see the module doc for how); ``files``:
    the files that declared a ``[sandbox]`` table, in load order."""

    __slots__ = ("env", "files", "hide", "network", "network_deny", "readonly", "writable")
    _FIELDS = ("hide", "writable", "readonly", "network", "network_deny", "env", "files")
    hide: tuple[str, ...]
    writable: tuple[str, ...]
    readonly: tuple[str, ...]
    network: tuple[str, ...]
    network_deny: tuple[str, ...]
    env: tuple[str, ...]
    files: tuple[str, ...]

    def __init__(self, hide: tuple[str, ...] = (), writable: tuple[str, ...] = (), readonly: tuple[str, ...] = (),
                 network: tuple[str, ...] = (), network_deny: tuple[str, ...] = (),
                 env: tuple[str, ...] = DEFAULT_ENV, files: tuple[str, ...] = ()) -> None:
        self._set(hide=hide, writable=writable, readonly=readonly, network=network, network_deny=network_deny,
                  env=env, files=files)

    def replace(self, **changes: tuple[str, ...]) -> SandboxConfig:
        """A copy with ``changes`` (as ``dataclasses.replace``)."""
        unknown = set(changes) - set(self._FIELDS)
        if unknown:
            raise TypeError(f"SandboxConfig has no field {sorted(unknown)[0]!r}")
        values: dict[str, tuple[str, ...]] = {name: getattr(self, name) for name in self._FIELDS}
        return SandboxConfig(**{**values, **changes})

    @property
    def network_unrestricted(self) -> bool:
        """Every host and port is reachable (``*:*`` passed every declaring file) and none denied."""
        return "*:*" in self.network and not self.network_deny


# --------------------------------------------------------------------------- parsing


def _check_path(entry: str) -> str:
    if "\0" in entry:
        return "a NUL byte"
    if entry.startswith("~") and not (entry == "~" or entry.startswith("~/")):
        return "only ~ and ~/... name a home (not ~user)"
    if ".." in entry.split("/"):
        return "'..' components are not allowed"
    if entry.rstrip("/") == "":
        return "the whole file system cannot be named"
    return ""


def _check_network(entry: str) -> str:
    host, sep, port = entry.rpartition(":")
    if not sep or not host:
        return "expected host:port (e.g. api.example.com:443, *.example.com:443, 127.0.0.1:8080, *:*)"
    if port != "*" and not (port.isdigit() and 0 < int(port) < 65536):
        return f"port {port!r} must be 1-65535 or *"
    if not _HOST.match(host):
        return f"host {host!r} must be a name, *.name, an IPv4 address, [IPv6] or *"
    if host == "*" and port != "*":
        return "a bare * host only as '*:*' (the whole network, without the egress proxy)"
    return ""


def _check_env(entry: str) -> str:
    return "" if _ENV_NAME.match(entry) else "a variable name or glob of letters, digits, _, * and ?"


_CHECKS = {"hide": _check_path, "writable": _check_path, "readonly": _check_path,
           "network": _check_network, "network_deny": _check_network, "env": _check_env}


def parse_table(raw: object, file: str) -> tuple[SandboxTable | None, list[str]]:
    """``[sandbox]`` of ``file`` -> a SandboxTable and error messages (each naming the key,
    as ``sandbox.KEY``; the caller adds the file and line)."""
    if not isinstance(raw, dict):
        return None, ["[sandbox] must be a table"]
    errors = [f"unknown key sandbox.{k} (expected {', '.join(KEYS)})" for k in raw if k not in KEYS]
    values: dict[str, tuple[str, ...]] = {}
    for key in KEYS:
        if key not in raw:
            continue
        items = raw[key]
        if not isinstance(items, list) or not all(isinstance(i, str) and i for i in items):
            errors.append(f"sandbox.{key} must be a list of non-empty strings")
            continue
        if len(items) > MAX_ENTRIES:
            errors.append(f"sandbox.{key} has {len(items)} entries; at most {MAX_ENTRIES}")
            continue
        for item in items:
            why = _CHECKS[key](item)
            if why:
                errors.append(f"sandbox.{key}: {item!r}: {why}")
        values[key] = tuple(dict.fromkeys(items))
    if errors:
        return None, errors
    return SandboxTable(file, **values), []


# --------------------------------------------------------------------------- combining


def path_covers(entry: str, pattern: str) -> bool:
    """Does ``pattern`` (a path or glob of the table) grant ``entry``? Equal, ``entry`` within
    the directory ``pattern``, or matched by it as a glob."""
    return entry == pattern or paths.within(entry, pattern) or paths.glob(entry, pattern)


def host_covers(entry: str, pattern: str) -> bool:
    """Does ``pattern`` (``host:port``) grant ``entry``? Host and port each equal, or matched
    by ``*`` / ``*.suffix`` (``*.example.com`` is any name below example.com, not itself)."""
    e_host, _, e_port = entry.rpartition(":")
    p_host, _, p_port = pattern.rpartition(":")
    if p_port != "*" and p_port != e_port:
        return False
    e_host, p_host = e_host.lower(), p_host.lower()
    if e_host.startswith("*"):  # a wildcard entry: every name it grants must be granted
        if p_host == "*":
            return True
        if e_host == "*" or not (e_host.startswith("*.") and p_host.startswith("*.")):
            return False
        return e_host[2:] == p_host[2:] or e_host.endswith(p_host[1:])
    return host_matches(e_host, p_host)


def host_matches(host: str, pattern: str) -> bool:
    """``pattern`` (``*``, ``*.suffix`` or a name) matches the host name or address ``host``."""
    if pattern == "*":
        return True
    if pattern.startswith("*."):
        return host.endswith(pattern[1:]) and host != pattern[2:] and not host.startswith("*")
    return host == pattern


def env_covers(entry: str, pattern: str) -> bool:
    """Does the ``env`` pattern (a name or an ``fnmatch`` glob, case-sensitive) match ``entry``?"""
    if not _is_glob(pattern):
        return entry == pattern  # (what fnmatchcase gives a pattern without * ? [, without compiling it)
    import fnmatch

    return fnmatch.fnmatchcase(entry, pattern)


def _every(tables: Sequence[SandboxTable], key: str, covers: Any) -> tuple[str, ...] | None:
    """Entries of ``key`` granted by every table that declares it (None: nobody declares it)."""
    declared = [getattr(t, key) for t in tables if getattr(t, key) is not None]
    if not declared:
        return None
    candidates = dict.fromkeys(e for entries in declared for e in entries)
    return tuple(e for e in candidates if all(any(covers(e, p) for p in entries) for entries in declared))


def _union(tables: Sequence[SandboxTable], key: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(e for t in tables for e in (getattr(t, key) or ())))


def combine(tables: Sequence[SandboxTable]) -> SandboxConfig:
    """The set's SandboxConfig from each file's table, in load order (module doc)."""
    env = _every(tables, "env", env_covers)
    return SandboxConfig(
        hide=_union(tables, "hide"),
        writable=_every(tables, "writable", path_covers) or (),
        readonly=_union(tables, "readonly"),
        network=_every(tables, "network", host_covers) or (),
        network_deny=_union(tables, "network_deny"),
        env=DEFAULT_ENV if env is None else env,
        files=tuple(t.file for t in tables),
    )


# --------------------------------------------------------------------------- the plan


def expand(entry: str, home: str, root: str) -> str:
    """``entry`` as an absolute pattern: ``~`` is ``home``, a relative one is inside ``root``."""
    if entry == "~" or entry.startswith("~/"):
        return paths.resolve(entry, "/", home)
    if entry.startswith("/"):
        return paths.resolve(entry, "/", "") if not _is_glob(entry) else entry
    return root.rstrip("/") + "/" + entry


def _is_glob(entry: str) -> bool:
    return "*" in entry or "?" in entry or "[" in entry


def is_glob(entry: str) -> bool:
    """Whether ``entry`` holds glob characters (``*``, ``?``, ``[``)."""
    return _is_glob(entry)


def agent_state(argv: Sequence[str], environ: Mapping[str, str], home: str) -> tuple[str, ...]:
    """The state directories of the agent started by ``argv`` (:data:`AGENT_STATE`, matched
    on the words of its command line), absolute; ``$NAME`` entries from ``environ``. A
    directory that is ``/``, the home itself or above it is dropped (never made writable)."""
    words = " ".join(argv).lower()
    found: list[str] = []
    for word, entries in AGENT_STATE.items():
        if word not in words:
            continue
        for entry in entries:
            if entry.startswith("$"):
                value = environ.get(entry[1:], "")
                if not value.startswith("/"):
                    continue
                entry = value
            resolved = paths.resolve(entry, "/", home)
            if resolved != "/" and not paths.within(home, resolved):
                found.append(resolved)
    return tuple(dict.fromkeys(found))


def loopback_endpoints(network: Iterable[str]) -> tuple[tuple[str, int], ...]:
    """The ``network`` entries that name a loopback address and one port (``127.0.0.1:8080``,
    ``[::1]:8080``, ``localhost:8080``): reachable inside the sandbox at the same address."""
    found: list[tuple[str, int]] = []
    for entry in network:
        host, _, port = entry.rpartition(":")
        host = host[1:-1] if host.startswith("[") else host
        if port.isdigit() and (host in ("::1", "localhost") or re.fullmatch(r"127(\.\d{1,3}){3}", host)):
            found.append(("127.0.0.1" if host == "localhost" else host, int(port)))
    return tuple(dict.fromkeys(found))


def denied_by(network_deny: Iterable[str], host: str, addresses: Iterable[str], port: int) -> str:
    """The ``network_deny`` entry naming ``host`` or one of its ``addresses`` on ``port``, or ""."""
    names = [host.lower(), *(f"[{a}]" if ":" in a else a for a in addresses)]
    for pattern in network_deny:
        if any(host_covers(f"{n}:{port}", pattern.lower()) for n in names):
            return pattern
    return ""


def filter_env(environ: Mapping[str, str], patterns: Iterable[str]) -> dict[str, str]:
    """The variables of ``environ`` whose names match one of ``patterns``."""
    pats = tuple(patterns)
    names = {p for p in pats if not _is_glob(p)}
    globs = tuple(p for p in pats if _is_glob(p))
    return {k: v for k, v in environ.items() if k in names or any(env_covers(k, p) for p in globs)}


def outside_view(dirs: Iterable[str], writable_roots: Sequence[str]) -> list[str]:
    """The directories of ``dirs`` (absolute, normalised) not within a writable root."""
    return [d for d in dirs if not any(paths.within(d, r) for r in writable_roots)]


#: Persistence targets of a git directory that, when missing, are kept from being created as
#: a read-only file with this content (git reads them as files); any other missing one
#: (``hooks``, ``info``, ``.git`` itself) as an empty read-only directory (``policyd.sandbox``).
#: ``commondir`` redirects where git reads config and hooks from: an empty one would make git
#: fail, so it is made saying ``.`` (the git directory itself, what its absence means).
#: In an agent's state directory (writable: :func:`agent_state`), the agent's own settings,
#: which can name hooks and commands its next session on the host runs, are kept likewise
#: (``settings.json`` as an empty JSON object, ``config.toml`` empty).
MISSING_AS_FILE: dict[str, bytes] = {"config": b"", "config.worktree": b"", "commondir": b".\n",
                                     "settings.json": b"{}\n", "config.toml": b""}

#: JSON-RPC error code of a session refused because its roots are outside the sandbox's view
#: (-32602: invalid params, as the client's request asks for what cannot be given).
SESSION_OUTSIDE_VIEW = -32602


def session_roots(method: str, params: object) -> list[str] | None:
    """The roots a client request asks the agent to work in (``cwd`` and
    ``additionalDirectories`` of ``session/new``, ``session/load``, ``session/resume``,
    ``session/fork``), normalised; None for any other request or without a cwd."""
    if method not in ("session/new", "session/load", "session/resume", "session/fork"):
        return None
    if not isinstance(params, Mapping):
        return None
    found: list[str] = []
    cwd = params.get("cwd")
    if isinstance(cwd, str) and cwd:
        found.append(cwd)
    extra = params.get("additionalDirectories")
    if isinstance(extra, list):
        found.extend(d for d in extra if isinstance(d, str) and d)
    return [paths.resolve(d, "/", "") for d in found] if found else None


def refusal(outside: Sequence[str], writable_roots: Sequence[str]) -> str:
    """The error message of a session refused for ``outside`` roots."""
    return (f"policyd sandbox: {', '.join(outside)} is outside the agent's writable view "
            f"({', '.join(writable_roots)}), which is fixed when the agent starts; start policyd in that "
            "directory or add it with --sandbox-root DIR (setting sandbox_roots)")


class ViewPlan(_Value):
    """The filesystem view, before globs are expanded and existence is known (the I/O
    layer does both): writable roots, writable extras and state, read-only persistence
    targets, hidden patterns (absolute)."""

    __slots__ = ("env", "hide", "readonly", "roots", "writable")
    _FIELDS = ("roots", "writable", "readonly", "hide", "env")
    roots: tuple[str, ...]
    writable: tuple[str, ...]
    readonly: tuple[str, ...]
    hide: tuple[str, ...]
    env: tuple[str, ...]

    def __init__(self, roots: tuple[str, ...], writable: tuple[str, ...], readonly: tuple[str, ...],
                 hide: tuple[str, ...], env: tuple[str, ...] = ()) -> None:
        self._set(roots=roots, writable=writable, readonly=readonly, hide=hide, env=env)


def plan_view(config: SandboxConfig, roots: Sequence[str], home: str, state: Sequence[str]) -> ViewPlan:
    """Expand ``config``'s paths for ``roots`` (normalised, absolute) and ``home``: relative
    entries once per root, ``~`` entries once."""

    def each(entries: Iterable[str]) -> tuple[str, ...]:
        out: list[str] = []
        for e in entries:
            if e.startswith(("/", "~")):
                out.append(expand(e, home, "/"))
            else:
                out.extend(expand(e, home, r) for r in roots)
        return tuple(dict.fromkeys(out))

    return ViewPlan(roots=tuple(dict.fromkeys(roots)), writable=tuple(dict.fromkeys([*each(config.writable), *state])),
                    readonly=each(config.readonly), hide=each(config.hide), env=config.env)


#: A line that may declare the top-level ``sandbox`` table (a header, a dotted or quoted key).
_MENTION = re.compile(r"""^[ \t]*(?:\[+[ \t]*["']?sandbox\b|["']?sandbox["']?[ \t]*[.=])""", re.MULTILINE)
_HEADER = re.compile(r"^[ \t]*\[", re.MULTILINE)
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_BASIC = re.compile(r'"((?:[^"\\\n]|\\["\\nt])*)"')  # only the escapes \" \\ \n \t
_LITERAL = re.compile(r"'([^'\n]*)'")
_GAP = re.compile(r"(?:[ \t\r\n]|#[^\n]*)*")  # spaces, line ends, comments
_BLANKS = re.compile(r"[ \t]*")
_ESCAPES = {'\\"': '"', "\\\\": "\\", "\\n": "\n", "\\t": "\t"}


def quick_sandbox(text: str) -> dict[str, Any] | None:
    """``{"sandbox": table}`` of a policy document (``{}`` when it has none) read without a
    TOML parser when the table is written plainly: one ``[sandbox]`` header line, under it
    only ``key = [strings]`` or ``key = "string"`` (basic strings with the escapes ``\\"``,
    ``\\\\``, ``\\n``, ``\\t``, or literal strings) and comments. None when unsure (another
    way to write the table, a dotted ``sandbox.`` key anywhere, a ``\\u`` escape): the caller
    parses the document with tomllib. Before a sandboxed agent is spawned, importing
    tomllib (typing, datetime) and parsing every policy file would cost ~20-40 ms; the full
    load parses them anyway and the proxy compares the two ``[sandbox]`` (fail closed)."""
    found = list(_MENTION.finditer(text))
    if not found:
        return {} if "\\u" not in text and "\\U" not in text else None
    if len(found) != 1 or "\\u" in text or "\\U" in text:
        return None
    start = found[0].start()
    end_of_line = text.find("\n", start)
    end_of_line = len(text) if end_of_line < 0 else end_of_line
    if text[start:end_of_line].split("#", 1)[0].strip() != "[sandbox]":
        return None
    following = _HEADER.search(text, end_of_line)
    table = _plain_table(text[end_of_line:following.start() if following else len(text)])
    return None if table is None else {"sandbox": table}


def _plain_string(body: str, i: int) -> tuple[str, int] | None:
    m = _BASIC.match(body, i)
    if m:
        return re.sub(r'\\["\\nt]', lambda e: _ESCAPES[e.group()], m.group(1)), m.end()
    m = _LITERAL.match(body, i)
    return (m.group(1), m.end()) if m else None


#: A top-level header line's first key (``[name``, ``[[ "name"``, ...): see :func:`quick_top_level`.
_HEADER_NAME = re.compile(r"""[ \t]*\[+[ \t]*(?:"([A-Za-z0-9_-]+)"|'([A-Za-z0-9_-]+)'|([A-Za-z0-9_-]+))[ \t]*[.\]]""")
#: The other values :func:`quick_top_level` reads: booleans and plain decimal numbers.
_SCALAR = re.compile(r"true|false|[+-]?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def quick_top_level(text: str, names: Sequence[str]) -> dict[str, Any] | None:
    """The top-level keys of a TOML document (those before its first table header), read
    as :func:`quick_sandbox` reads a table, plus ``true``, ``false`` and plain decimal
    numbers; None when unsure (any other way of writing them, or a header whose first key is
    one of ``names``: that key would be a table). The rest of the document is not read:
    the caller parses the whole document later (policyd's settings, with tomllib) and
    compares. Before a sandboxed agent is spawned, importing tomllib would cost ~7 ms."""
    headers = list(_HEADER.finditer(text))
    for header in headers:
        name = _HEADER_NAME.match(text, header.start())
        if name is None or (name.group(1) or name.group(2) or name.group(3)) in names:
            return None
    return _plain_table(text[:headers[0].start()] if headers else text, scalars=True)


def _plain_table(body: str, scalars: bool = False) -> dict[str, Any] | None:
    """The keys of a table body written as :func:`quick_sandbox` reads it (``scalars``: and
    as :func:`quick_top_level` does), else None."""
    out: dict[str, Any] = {}
    i = _GAP.match(body, 0).end()  # type: ignore[union-attr]  # (matches the empty string)
    while i < len(body):
        key = _BARE_KEY.match(body, i)
        if key is None or key.group() in out:
            return None
        i = _BLANKS.match(body, key.end()).end()  # type: ignore[union-attr]
        if body[i:i + 1] != "=":
            return None
        i = _BLANKS.match(body, i + 1).end()  # type: ignore[union-attr]
        value: Any
        if body[i:i + 1] == "[":
            value, i = [], i + 1
            while True:
                i = _GAP.match(body, i).end()  # type: ignore[union-attr]
                if body[i:i + 1] == "]":
                    i += 1
                    break
                item = _plain_string(body, i)
                if item is None:
                    return None
                value.append(item[0])
                i = _GAP.match(body, item[1]).end()  # type: ignore[union-attr]
                if body[i:i + 1] == ",":
                    i += 1
                elif body[i:i + 1] == "]":
                    i += 1
                    break
                else:
                    return None
        else:
            item = _plain_string(body, i)
            scalar = _SCALAR.match(body, i) if item is None and scalars else None
            if scalar is not None:
                word = scalar.group()
                value = word == "true" if word in ("true", "false") else (
                    float(word) if any(c in word for c in ".eE") else int(word))
                i = scalar.end()
            elif item is None:
                return None
            else:
                value, i = item
        out[key.group()] = value
        i = _BLANKS.match(body, i).end()  # type: ignore[union-attr]
        if body[i:i + 1] == "#":
            i = body.find("\n", i) % (len(body) + 1)
        if i < len(body) and body[i] not in "\r\n":
            return None
        i = _GAP.match(body, i).end()  # type: ignore[union-attr]
    return out


def from_sources(sources: Sequence[tuple[str, str]]) -> tuple[SandboxConfig, list[str]]:
    """The combined ``[sandbox]`` of policy sources ``[(path, text)]`` without compiling
    their rules (the sandbox is set up before the full load finishes): the config and
    ``path: message`` errors (a file that is not TOML is an error here too; command
    catalogue files are skipped)."""
    tables: list[SandboxTable] = []
    errors: list[str] = []
    for path, text in sources:
        if path.endswith(".catalogue.toml"):
            continue
        data = quick_sandbox(text)
        if data is None:
            import tomllib

            try:
                data = tomllib.loads(text)
            except tomllib.TOMLDecodeError as exc:
                errors.append(f"{path}: invalid TOML: {exc}")
                continue
        if "sandbox" not in data:
            continue
        table, problems = parse_table(data["sandbox"], path)
        errors.extend(f"{path}: {p}" for p in problems)
        if table is not None:
            tables.append(table)
    return combine(tables), errors


@functools.lru_cache(maxsize=8)
def hidden_names(hide: tuple[str, ...]) -> str:
    """A regular expression matching the file names ``hide`` hides wherever they lie (its
    ``**/NAME`` globs, ``NAME`` free of ``/``: ``.env``, ``*.pem``, ``id_rsa``), or "" when
    it has none. The analysis looks for such names below a directory a command reads
    recursively (``Facts.paths``), so the sandbox, the credential rule and the analysis
    name one list."""
    import fnmatch  # only the daemon's decisions need it, not a sandboxed spawn

    names = [h[3:] for h in hide if h.startswith("**/") and "/" not in h[3:] and h[3:]]
    return "|".join(f"(?:{fnmatch.translate(n)})" for n in sorted(set(names)))
