"""The command catalogue: TOML text -> checked, indexed program entries (pure: no I/O).

The format is documented in ``policyd/catalogue/SCHEMA.md``. :func:`parse` checks one file's
text against that schema and returns its entries plus every problem found (a file with
problems contributes nothing: all or nothing per file). :class:`Catalogue` indexes entries by
lower-case name; a later entry with a name replaces an earlier one (user overrides).

Errors: :func:`parse` never raises on any text; :func:`load` raises :class:`CatalogueError`
with every problem when any file has one.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from policyd.core.inline import CODE_LANGUAGES
from policyd.core.shell.memo import Memo

SCHEMA_VERSION = 1
_H = TypeVar("_H")

EFFECTS: frozenset[str] = frozenset({
    "read", "write", "delete", "exec", "run", "build", "test", "network", "env-read", "privilege",
    "process", "persist", "install", "endless", "unknown",
})
ROLES: frozenset[str] = frozenset({
    "read", "write", "delete", "exec", "shell", "script", "chdir", "url", "arg", "env",
    "unknown", "git-config", "var", "link", "create", "package", "list", "filter", "filter-regex",
    "target", "size", "bound", "duration", "run", "variable",
})
SYNTAXES: frozenset[str] = frozenset({"gnu", "exact", "posix", "single-dash", "none"})
HANDLERS: frozenset[str] = frozenset({
    "wrapper", "shell", "find", "git", "make", "sed", "awk", "jq", "test", "cd", "printf",
    "chmod", "python", "dd", "seq", "tar", "ln",
})
#: Registries a ``registry`` field may name.
REGISTRIES: frozenset[str] = frozenset({"npm"})
STDOUT_KINDS: frozenset[str] = frozenset({"text", "token", "paths"})
COUNTS: frozenset[object] = frozenset({1, "?", "*", "+"})
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\*?")

_PROGRAM_KEYS = frozenset({
    "names", "summary", "source", "syntax", "handler", "effects", "operands", "options",
    "subcommand", "stdout", "stdin", "script_language", "env", "writes_into",
    "response_files", "registry", "follows_links", "bare", "unlisted_subcommand", "examples",
    "env_plain", "env_closed", "bare_effects", "strings", "variables", "code_files", "package",
    "config_keys", "updates_worktree",
})
_EXAMPLE_KEYS = frozenset({"command", "effects"})
_OPTION_KEYS = frozenset({"names", "arity", "value", "effects", "replaces", "operands_as",
                          "repeat", "summary", "values", "lists_only", "remote", "forces_local",
                          "follows_links", "keeps_links", "pattern", "members", "recursive", "archive",
                          "dereferences"})
_OPERAND_KEYS = frozenset({"role", "count", "effects", "default", "last_is", "files", "lookup", "follows"})
#: Where a program looks for a ``run`` operand besides the path as written (SCHEMA.md ``lookup``).
LOOKUPS: frozenset[str] = frozenset({"path", "path-first", "candidates"})


#: A checked cache's distinct option tables, what each built into (None: not yet), and the
#: values interned while building its entries (see :func:`from_checked`).
_Shared = tuple[list[Any], list["Option | None"], dict[object, Any]]


class CatalogueError(ValueError):
    """A catalogue file does not follow the schema; ``problems`` lists every one."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("; ".join(problems[:5]) + (" ..." if len(problems) > 5 else ""))
        self.problems = tuple(problems)


@dataclass(frozen=True, slots=True)
class Option:
    """One option: its spellings, arity (0, 1 or "optional"), value role and effects."""

    names: tuple[str, ...]
    arity: int | str = 0
    value: str = "arg"
    effects: frozenset[str] = frozenset()
    replaces: str = ""
    operands_as: str = ""
    values: frozenset[str] = frozenset()  # when given, the only values known (else unknown)
    lists_only: bool = False  # a list/test mode: the entry's ``writes_into`` does not apply
    remote: bool = False  # a value HOST:PATH names a file on another host (GNU tar -f: rsh/ssh)
    forces_local: bool = False  # turns ``remote`` values back into local files (tar --force-local)
    follows_links: bool = False  # follows symlinks below its directories (grep -R, cp -L, tar -h)
    keeps_links: bool = False  # copies symlinks as links after all (zip -y)
    #: a regular expression every value must match as a whole (a literal word), else unknown
    #: (python -W: a category without a dot, which would import its module)
    pattern: str = ""
    #: with it the command writes files its input names (archive members: ``tar -x``) below
    #: its write directories, as an entry's ``writes_into`` does
    members: bool = False
    #: with it the command reads every file below its directory operands, hidden ones too
    #: (``grep -r``, ``rg --hidden``, ``tar -c``, ``cp -r``): the facts layer lists the
    #: secret-named files there as its read paths
    recursive: bool = False
    #: its value is the archive a ``members`` command reads the names from, opened where the
    #: command starts, before any ``chdir`` option (GNU tar's ``-f`` before ``-C``)
    archive: bool = False
    #: whether, with it, the final symbolic link of each ``read`` operand is followed:
    #: ``True`` (``du -L``, ``stat -L``, ``ls -H``: it is), ``False`` (``ls -d``, ``ls -l``:
    #: it is not), None (no say). Any ``True`` given wins, whatever the order (SCHEMA.md)
    dereferences: bool | None = None


@dataclass(frozen=True, slots=True)
class Operand:
    """One operand slot: role, count (1, "?", "*", "+"), added effects, default, last role."""

    role: str
    count: int | str = 1
    effects: frozenset[str] = frozenset()
    default: str | None = None
    last_is: str = ""
    #: file-name globs (``*.py``): a written operand that is a directory stands for the matching
    #: files under it (a formatter rewrites only its language's files), not the directory
    files: tuple[str, ...] = ()
    #: a ``run`` slot: where the program looks for the file besides the path as written
    #: (``path``: a name without ``/`` missing here is searched in ``PATH``, bash FILE;
    #: ``path-first``: a name without ``/`` is searched in ``PATH`` first, source FILE;
    #: ``candidates``: other names and a directory's entry point, node FILE); "" none
    lookup: str = ""
    #: False: the program does not follow the final symbolic link of such an operand
    #: (``du``, ``stat``, ``readlink``: lstat semantics) unless an option ``dereferences``
    follows: bool = True


@dataclass(frozen=True, slots=True)
class Program:
    """A program or subcommand entry (see SCHEMA.md). ``path`` names it for messages
    (``git/stash/drop``); ``origin`` is the file it came from."""

    names: tuple[str, ...]
    path: str
    origin: str
    syntax: str = "gnu"
    handler: str = ""
    effects: frozenset[str] = frozenset()
    operands: tuple[Operand, ...] = ()
    options: tuple[Option, ...] = ()
    subcommands: Mapping[str, Program] = field(default_factory=dict)
    stdout: str = "text"
    stdin: str = ""
    script_language: str = ""
    env: frozenset[str] = frozenset()
    summary: str = ""
    #: every spelling -> its option
    option_index: Mapping[str, Option] = field(default_factory=dict)
    #: ``--long`` spellings, for GNU unambiguous-prefix abbreviations
    long_names: tuple[str, ...] = ()
    #: the files it writes are named by its input data (archive members, a patch's file
    #: names), under this directory relative to where it runs (``.``), unless a ``write``
    #: option or operand names where; "" when it has no such writes
    writes_into: str = ""
    #: a word starting with ``@`` among its arguments is a file of more arguments (GCC, javac)
    response_files: bool = False
    #: the package registry ("npm") where a package of this name is this program: a runner
    #: that fetches what is not installed (``npx``) runs it as this entry; any other name is
    #: whatever package the registry holds under it
    registry: str = ""
    #: it follows symbolic links below its directory operands whatever its options (zip -r)
    follows_links: bool = False
    #: environment names it reads harmlessly (an assignment of one is plain for it)
    env_plain: frozenset[str] = frozenset()
    #: it reads no environment name beyond ``env``, ``env_plain`` and those every program
    #: may read (``envvars.ENV_EFFECT``): another name assigned is plain for it
    env_closed: bool = False
    #: effects when it is given no argument at all (``set``, ``export``: print every variable)
    bare_effects: frozenset[str] = frozenset()
    #: with subcommands: the subcommand a command naming none is read as (``yarn`` alone
    #: installs: ``"install"``); "" when the entry's own effects and operands apply
    bare: str = ""
    #: with subcommands: what a first operand naming no subcommand is: ``"operand"`` (an
    #: operand of this entry: ``python -m unittest tests.test_x``) or a subcommand's name (the
    #: word is that subcommand's first operand: ``yarn lint`` is ``yarn run lint``); "" when
    #: it is unknown
    unlisted_subcommand: str = ""
    #: ``(command, effects)`` pairs the tests run through the analysis: the command's effects
    #: must be exactly these (SCHEMA.md ``examples``)
    examples: tuple[tuple[str, frozenset[str]], ...] = ()
    #: every option and operand is a plain string to it, whatever words an expansion becomes
    #: (``basename $(pwd)``): no option changes what it does beyond its output
    strings: bool = False
    #: the build variables a ``VAR=value`` operand (make) or ``variable`` value (cmake -D)
    #: may set as plain data: name (``NAME*``: a prefix, the longest applies; ``*``: any other
    #: name) -> the regular expression its value must match as a whole (any other name, or
    #: value, may name a program the build runs: ``exec``)
    variables: Mapping[str, str] = field(default_factory=dict)
    #: names (globs) of the files it loads as code besides what its effects say: a read-only
    #: linter's config that names plugins or hooks (``.pylintrc`` init-hook, ``mypy.ini``
    #: plugins); a build/test command runs every file of the project (SCHEMA.md)
    code_files: tuple[str, ...] = ()
    #: with ``registry``: the registry package that provides the program when it is not the
    #: program's own name (tsc is in ``typescript``; the npm package ``tsc`` is another's)
    package: str = ""
    #: keys of its ``code_files`` configs whose values name code it loads (``plugins``,
    #: ``init-hook``): a path there outside the session roots is unknown (``Facts``)
    config_keys: tuple[str, ...] = ()
    #: it rewrites files of the work tree no argument names (``git checkout REV``, ``merge``,
    #: ``revert``, ``stash pop``): the own-policy guard takes it as writing the session root
    #: it runs in (``core.decide``)
    updates_worktree: bool = False


def slots_for(p: Program, replaced: Sequence[str]) -> list[Operand]:
    """``p``'s operand slots without the first slot of each ``replaced`` role (``grep -e P``:
    the pattern slot is given by the option)."""
    slots = list(p.operands)
    for role in replaced:
        for idx, s in enumerate(slots):
            if s.role == role:
                del slots[idx]
                break
    return slots


def takes(slots: Sequence[Operand], n: int) -> list[int]:
    """How many of ``n`` operands each slot takes, in order: fixed slots (``1``, ``?``) one
    each, a ``*``/``+`` slot all but what later slots need (SCHEMA.md "count")."""
    mins = [1 if s.count in (1, "+") else 0 for s in slots]
    out: list[int] = []
    left = n
    for idx, s in enumerate(slots):
        need_after = sum(mins[idx + 1 :])
        fixed = s.count == 1 or s.count == "?"
        take = (1 if left - need_after >= 1 else 0) if fixed else max(0, left - need_after)
        out.append(take)
        left -= take
    return out


class Catalogue:
    """Entries by lower-case name; later entries replace earlier ones with the same name.

    ``base`` is a catalogue consulted for names this one does not define (a policy
    directory's additions over the shipped catalogue, without copying it). Entries may be
    *deferred*: raw tables that :func:`load` already checked (same text, same code), built
    into a :class:`Program` on first lookup (:func:`from_checked`), so start-up does not pay
    for the ~260 programs a session never runs.
    """

    __slots__ = ("_base", "_by_name", "_deferred", "_options", "memo")

    def __init__(self, programs: Iterable[Program] = (), base: Catalogue | None = None) -> None:
        self._by_name: dict[str, Program] = {}
        self._deferred: dict[str, tuple[str, str]] = {}  # name -> (origin, the table as JSON text)
        #: the deferred entries' option tables, each distinct one once (their JSON names them by
        #: index), what each built into (None: not yet), and the values interned while building
        #: deferred entries: each equal value built once for every entry
        self._options: _Shared = ([], [], {})
        self._base = base
        self.memo = Memo()
        self.add(programs)

    def add(self, programs: Iterable[Program]) -> None:
        self.memo.clear()  # kept analyses were judged without these entries
        for p in programs:
            for n in p.names:
                self._by_name[n.lower()] = p
                self._deferred.pop(n.lower(), None)

    def get(self, name: str) -> Program | None:
        """The entry for a program name (already a basename), case-insensitive."""
        key = name.lower()
        found = self._by_name.get(key)
        if found is None and self._deferred:
            found = self._build(key)
        if found is None and self._base is not None:
            return self._base.get(key)
        return found

    def _build(self, key: str) -> Program | None:
        raw = self._deferred.get(key)
        if raw is None:
            return None
        origin, text = raw
        ck = _Checker(origin, self._options)
        program = ck.program("file", json.loads(text))
        if program is None or ck.problems:  # cannot happen for checked tables; never guess
            raise CatalogueError(ck.problems or [f"{origin}: {key}: entry does not build"])
        for n in program.names:
            if self._deferred.get(n.lower()) is raw:
                del self._deferred[n.lower()]
                self._by_name[n.lower()] = program
        return program

    def names(self) -> frozenset[str]:
        own = frozenset(self._by_name) | frozenset(self._deferred)
        return own | self._base.names() if self._base is not None else own

    def programs(self) -> list[Program]:
        """Every entry once, in the order first added (the base's first, minus those this
        catalogue redefines)."""
        for key in list(self._deferred):
            self._build(key)
        own = list({id(p): p for p in self._by_name.values()}.values())
        if self._base is None:
            return own
        mine = set(self._by_name)
        kept = [p for p in self._base.programs() if not any(n.lower() in mine for n in p.names)]
        return kept + own

    def __len__(self) -> int:
        return len(self.programs())


# --------------------------------------------------------------------------- checking


class _Checker:
    def __init__(self, origin: str, shared: _Shared | None = None) -> None:
        self.origin = origin
        self.problems: list[str] = []
        #: a checked cache's distinct option tables and their built options (see from_checked)
        self._shared_raw, self._shared_built, interned = shared if shared is not None else ([], [], {})
        # equal values built once: options repeat across subcommands (git's 2,886 options
        # are 822 distinct values, npm's 1,666 are 80), and every option has effect sets
        self._interned: dict[object, Any] = interned
        # one spelling index per distinct option list (never mutated: shared between entries)
        self._indexes: dict[tuple[Option, ...], tuple[dict[str, Option], tuple[str, ...]]] = {}

    def intern(self, value: _H) -> _H:
        """``value``, or an equal value built before (values here are frozen and hashable)."""
        found: _H = self._interned.setdefault(value, value)
        return found

    def bad(self, where: str, msg: str) -> None:
        self.problems.append(f"{self.origin}: {where}: {msg}")

    def strings(self, where: str, value: object, what: str, allowed: frozenset[str] | None = None,
                required: bool = False) -> tuple[str, ...]:
        if value is None:
            if required:
                self.bad(where, f"{what} is required")
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            self.bad(where, f"{what} must be a list of non-empty strings")
            return ()
        if required and not value:
            self.bad(where, f"{what} must not be empty")
        if allowed is not None:
            for v in value:
                if v not in allowed:
                    self.bad(where, f"{what}: unknown value {v!r} (known: {', '.join(sorted(allowed))})")
        return tuple(value)

    def choice(self, where: str, value: object, what: str, allowed: frozenset[str],
               default: str) -> str:
        if value is None:
            return default
        if not isinstance(value, str) or value not in allowed:
            self.bad(where, f"{what}: {value!r} is not one of {', '.join(sorted(allowed))}")
            return default
        return value

    def keys(self, where: str, table: Mapping[str, Any], allowed: frozenset[str]) -> None:
        for k in table:
            if k not in allowed:
                self.bad(where, f"unknown key {k!r}")

    def option(self, where: str, raw: object) -> Option | None:
        if type(raw) is int and 0 <= raw < len(self._shared_raw):  # a checked cache's shared table
            built = self._shared_built[raw]
            if built is None:
                built = self._shared_built[raw] = self.option(where, self._shared_raw[raw])
            return built
        if not isinstance(raw, dict):
            self.bad(where, "an option must be a table")
            return None
        self.keys(where, raw, _OPTION_KEYS)
        names = self.strings(where, raw.get("names"), "option names", required=True)
        w = f"{where} {names[0] if names else '?'}"
        for n in names:
            if not (n.startswith(("-", "+")) and len(n) > 1):
                self.bad(w, f"option name {n!r} must start with - or +")
        arity = raw.get("arity", 0)
        if arity not in (0, 1, "optional") or isinstance(arity, bool):
            self.bad(w, f"arity {arity!r} must be 0, 1 or \"optional\"")
            arity = 0
        value = self.choice(w, raw.get("value"), "value", ROLES, "arg")
        if "value" in raw and arity == 0:
            self.bad(w, "value given for an option of arity 0")
        effects = self.strings(w, raw.get("effects"), "effects", EFFECTS)
        replaces = self.choice(w, raw.get("replaces"), "replaces", ROLES, "")
        operands_as = self.choice(w, raw.get("operands_as"), "operands_as", ROLES, "")
        if "repeat" in raw and not isinstance(raw["repeat"], bool):
            self.bad(w, "repeat must be a bool")
        lists_only = raw.get("lists_only", False)
        if not isinstance(lists_only, bool):
            self.bad(w, "lists_only must be a bool")
            lists_only = False
        values = self.strings(w, raw.get("values"), "values")
        if values and arity == 0:
            self.bad(w, "values given for an option of arity 0")
        pattern = raw.get("pattern", "")
        if not isinstance(pattern, str) or (pattern and arity == 0):
            self.bad(w, "pattern must be a string, for an option with a value")
            pattern = ""
        try:
            re.compile(pattern)
        except re.error as exc:
            self.bad(w, f"pattern {pattern!r} is no regular expression: {exc}")
            pattern = ""
        remote, forces_local, follows, keeps, members, recursive, archive = (self.flag(w, raw, k) for k in (
            "remote", "forces_local", "follows_links", "keeps_links", "members", "recursive", "archive"))
        if remote and arity == 0:
            self.bad(w, "remote given for an option of arity 0")
        dereferences = raw.get("dereferences")
        if dereferences is not None and not isinstance(dereferences, bool):
            self.bad(w, "dereferences must be a bool")
            dereferences = None
        return self.intern(Option(self.intern(names), arity, value, self.intern(frozenset(effects)), replaces,
                                  operands_as, self.intern(frozenset(values)), lists_only, remote,
                                  forces_local, follows, keeps, pattern, members, recursive, archive,
                                  dereferences))

    def flag(self, where: str, raw: Mapping[str, Any], key: str) -> bool:
        value = raw.get(key, False)
        if not isinstance(value, bool):
            self.bad(where, f"{key} must be a bool")
            return False
        return value

    def operand(self, where: str, raw: object) -> Operand | None:
        if not isinstance(raw, dict):
            self.bad(where, "an operand must be a table")
            return None
        self.keys(where, raw, _OPERAND_KEYS)
        role = self.choice(where, raw.get("role"), "role", ROLES, "unknown")
        if "role" not in raw:
            self.bad(where, "operand role is required")
        count = raw.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, (int, str)) or count not in COUNTS:
            self.bad(where, f"count {count!r} must be 1, \"?\", \"*\" or \"+\"")
            count = 1
        effects = self.strings(where, raw.get("effects"), "effects", EFFECTS)
        default = raw.get("default")
        if default is not None and not isinstance(default, str):
            self.bad(where, "default must be a string")
            default = None
        last_is = self.choice(where, raw.get("last_is"), "last_is", ROLES, "")
        files = self.strings(where, raw.get("files"), "files")
        for g in files:
            if "/" in g or not g.startswith("*.") or len(g) < 3:
                self.bad(where, f"files glob {g!r} must be *.EXT")
        lookup = self.choice(where, raw.get("lookup"), "lookup", LOOKUPS, "")
        if lookup and role != "run":
            self.bad(where, "lookup is only for a run operand")
        follows = raw.get("follows", True)
        if not isinstance(follows, bool):
            self.bad(where, "follows must be a bool")
            follows = True
        if not follows and role != "read":
            self.bad(where, "follows = false is only for a read operand")
        return self.intern(Operand(role, count, self.intern(frozenset(effects)), default, last_is,
                                   self.intern(files), lookup, follows))

    def program(self, where: str, raw: object, depth: int = 0) -> Program | None:
        if not isinstance(raw, dict):
            self.bad(where, "a program must be a table")
            return None
        self.keys(where, raw, _PROGRAM_KEYS)
        names = self.strings(where, raw.get("names"), "names", required=True)
        if not names:
            return None
        path = f"{where}/{names[0]}" if depth else names[0]
        for n in names:
            if any(c.isspace() for c in n) or (depth == 0 and "/" in n):
                self.bad(path, f"name {n!r} must be one word without '/'")
        syntax = self.choice(path, raw.get("syntax"), "syntax", SYNTAXES, "gnu")
        handler = self.choice(path, raw.get("handler"), "handler", HANDLERS, "")
        effects = self.strings(path, raw.get("effects"), "effects", EFFECTS)
        for k in ("summary", "source"):
            if k in raw and not isinstance(raw[k], str):
                self.bad(path, f"{k} must be a string")
        stdout = self.choice(path, raw.get("stdout"), "stdout", STDOUT_KINDS, "text")
        stdin = self.choice(path, raw.get("stdin"), "stdin", frozenset({"shell", "data"}), "")
        lang = self.choice(path, raw.get("script_language"), "script_language",
                           frozenset({"sed", "awk", "jq", "yq"}) | CODE_LANGUAGES, "")
        env = self.strings(path, raw.get("env"), "env")
        env_plain = self.strings(path, raw.get("env_plain"), "env_plain")
        for n in (*env, *env_plain):
            if not _ENV_NAME.fullmatch(n):
                self.bad(path, f"environment name {n!r} must be a NAME or a NAME* prefix")
        for n in set(env) & set(env_plain):
            self.bad(path, f"environment name {n!r} is in both env and env_plain")
        bare_effects = self.strings(path, raw.get("bare_effects"), "bare_effects", EFFECTS)
        env_closed = raw.get("env_closed", False)
        if not isinstance(env_closed, bool):
            self.bad(path, "env_closed must be a bool")
            env_closed = False
        writes_into = raw.get("writes_into", "")
        if not isinstance(writes_into, str) or writes_into not in ("", "."):
            self.bad(path, 'writes_into must be "." (the directory it runs in)')
            writes_into = ""
        response_files = self.flag(path, raw, "response_files")
        follows_links = self.flag(path, raw, "follows_links")
        strings = self.flag(path, raw, "strings")
        registry = self.choice(path, raw.get("registry"), "registry", REGISTRIES, "")
        bare = raw.get("bare", "")
        unlisted = raw.get("unlisted_subcommand", "")
        for key, val in (("bare", bare), ("unlisted_subcommand", unlisted)):
            if not isinstance(val, str):
                self.bad(path, f"{key} must be a string")
        examples = self._examples(path, raw.get("examples"))
        variables = self._variables(path, raw.get("variables"))
        package = raw.get("package", "")
        if not isinstance(package, str) or (package and not raw.get("registry")):
            self.bad(path, "package must be a string, with registry")
            package = ""
        code_files = self.strings(path, raw.get("code_files"), "code_files")
        config_keys = self.strings(path, raw.get("config_keys"), "config_keys")
        if config_keys and not code_files:
            self.bad(path, "config_keys needs code_files (the config files they are keys of)")
        for g in code_files:
            if "/" in g or not g:
                self.bad(path, f"code_files: {g!r} must be a file-name glob without '/'")
        operands = self._list(path, raw.get("operands"), "operands", self.operand)
        options = self._list(path, raw.get("options"), "options", self.option)
        spellings: dict[str, str] = {}
        for o in options:
            for n in o.names:
                if n in spellings:
                    self.bad(path, f"option {n} listed twice")
                spellings[n] = n
        subs: dict[str, Program] = {}
        for s in self._list(path, raw.get("subcommand"), "subcommand",
                            lambda w, r: self.program(w, r, depth + 1)):
            for n in s.names:
                if n.lower() in subs:
                    self.bad(path, f"subcommand {n!r} defined twice")
                subs[n.lower()] = s
        self._slots(path, operands)
        for key, val in (("bare", bare), ("unlisted_subcommand", unlisted)):
            names_sub = isinstance(val, str) and val and not (key == "unlisted_subcommand" and val == "operand")
            if names_sub and val.lower() not in subs:
                self.bad(path, f"{key} {val!r} names no subcommand of this entry")
        if unlisted == "operand" and not operands:
            self.bad(path, 'unlisted_subcommand "operand" needs operand slots')
        opts = self.intern(tuple(options))
        index, long_names = self._indexes.get(opts) or self._indexes.setdefault(opts, (
            {n: o for o in opts for n in o.names}, tuple(n for o in opts for n in o.names if n.startswith("--"))))
        return Program(names, path, self.origin, syntax, handler, self.intern(frozenset(effects)),
                       self.intern(tuple(operands)), opts, subs, stdout,
                       "" if stdin == "data" else stdin, lang, self.intern(frozenset(env)),
                       str(raw.get("summary", "")), index, long_names, writes_into, response_files,
                       registry, follows_links, self.intern(frozenset(env_plain)), env_closed,
                       self.intern(frozenset(bare_effects)),
                       bare if isinstance(bare, str) else "",
                       unlisted if isinstance(unlisted, str) else "", examples, strings, variables,
                       self.intern(tuple(code_files)), package, self.intern(tuple(config_keys)),
                       self.flag(path, raw, "updates_worktree"))

    def _variables(self, where: str, value: object) -> dict[str, str]:
        """``variables = [{ names = ["V", "VERBOSE"], pattern = "[0-9]?" }]``: each name (or
        ``*``, any other name) with the regular expression its value must match."""
        if value is None:
            return {}
        if not isinstance(value, list):
            self.bad(where, "variables must be a list of { names, pattern } tables")
            return {}
        out: dict[str, str] = {}
        for item in value:
            names = item.get("names") if isinstance(item, dict) else None
            pattern = item.get("pattern") if isinstance(item, dict) else None
            if (not isinstance(item, dict) or set(item) - {"names", "pattern"} or not isinstance(names, list)
                    or not names or not isinstance(pattern, str)):
                self.bad(where, "variables: each item must be { names = [NAME...], pattern = REGEX }")
                continue
            try:
                re.compile(pattern)
            except re.error as exc:
                self.bad(where, f"variables: {pattern!r} is no regular expression: {exc}")
                continue
            for name in names:
                if not isinstance(name, str) or not (name == "*" or _ENV_NAME.fullmatch(name)):
                    self.bad(where, f"variables: {name!r} must be a NAME, a NAME* prefix or *")
                elif name in out:
                    self.bad(where, f"variables: {name!r} listed twice")
                else:
                    out[name] = pattern
        return out

    def _examples(self, where: str, value: object) -> tuple[tuple[str, frozenset[str]], ...]:
        """``examples = [{ command = "nm x.o", effects = ["read"] }]``: checked shapes."""
        out: list[tuple[str, frozenset[str]]] = []
        if value is None:
            return ()
        if not isinstance(value, list):
            self.bad(where, "examples must be a list of tables")
            return ()
        for ex in value:
            if not isinstance(ex, dict) or not isinstance(ex.get("command"), str) or not ex["command"]:
                self.bad(where, "an example must be a table with a non-empty command")
                continue
            self.keys(f"{where} example {ex['command']!r}", ex, _EXAMPLE_KEYS)
            effects = self.strings(f"{where} example {ex['command']!r}", ex.get("effects", []),
                                   "effects", EFFECTS)
            out.append((ex["command"], frozenset(effects)))
        return tuple(out)

    def _list(self, where: str, value: object, what: str, one: Any) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            self.bad(where, f"{what} must be a list")
            return []
        out = []
        for item in value:
            got = one(where, item)
            if got is not None:
                out.append(got)
        return out

    def _slots(self, where: str, operands: Sequence[Operand]) -> None:
        absorbing = [o for o in operands if o.count in ("*", "+")]
        if len(absorbing) > 1:
            self.bad(where, "at most one operand slot may have count \"*\" or \"+\"")


def parse(text: str, origin: str = "<catalogue>") -> tuple[list[Program], list[str]]:
    """Check one catalogue file's text; returns (entries, problems). Never raises.

    A file with any problem yields no entries (all or nothing). Problems read
    ``origin: program[/subcommand]: message``.
    """
    ck = _Checker(origin)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return [], [f"{origin}: not valid TOML: {exc}"]
    except Exception as exc:
        return [], [f"{origin}: cannot read: {type(exc).__name__}: {exc}"]
    if doc.get("schema") != SCHEMA_VERSION:
        ck.bad("file", f"needs `schema = {SCHEMA_VERSION}` at the top")
    for k in doc:
        if k not in ("schema", "program"):
            ck.bad("file", f"unknown top-level key {k!r}")
    progs = ck._list("file", doc.get("program", []), "program", ck.program)
    seen: dict[str, str] = {}
    for p in progs:
        for n in p.names:
            if n.lower() in seen:
                ck.bad(p.path, f"name {n!r} already defined in this file by {seen[n.lower()]}")
            seen[n.lower()] = p.path
    return ([] if ck.problems else progs), ck.problems


def load(files: Iterable[tuple[str, str]], unique: bool = False) -> Catalogue:
    """A catalogue from ``(origin, text)`` pairs in order; raises :class:`CatalogueError`
    listing every problem. With ``unique`` a name defined in two files is a problem too
    (the shipped files), else the later file's entry wins (user overrides)."""
    problems: list[str] = []
    cat = Catalogue()
    owner: dict[str, str] = {}
    for origin, text in files:
        progs, probs = parse(text, origin)
        problems.extend(probs)
        for p in progs:
            for n in p.names:
                if unique and n.lower() in owner and owner[n.lower()] != origin:
                    problems.append(f"{origin}: {p.path}: name {n!r} also defined in "
                                    f"{owner[n.lower()]}")
                owner[n.lower()] = origin
        cat.add(progs)
    if problems:
        raise CatalogueError(problems)
    return cat


CheckedEntries = dict[str, Any]


def checked_entries(files: Iterable[tuple[str, str]]) -> CheckedEntries:
    """The compact form :func:`from_checked` reads, for files :func:`load` accepted:
    ``files``: ``(origin, [(names, the program table as JSON text)])`` per file (text, not
    parsed tables: ~1 MB where the parsed tables of the shipped catalogue hold ~9 MB), each
    option table in them replaced by its index in ``options``, the distinct option tables
    (the shipped catalogue's 18,912 options are 4,993 distinct tables): the first lookup of
    an entry then checks and builds only the options no earlier entry had."""
    options: list[Any] = []
    index: dict[str, int] = {}

    def share(option: Any) -> int:
        key = json.dumps(option, sort_keys=True, separators=(",", ":"))
        if key not in index:
            index[key] = len(options)
            options.append(option)
        return index[key]

    def shared(table: dict[str, Any]) -> dict[str, Any]:
        out = dict(table)
        if isinstance(table.get("options"), list):
            out["options"] = [share(o) for o in table["options"]]
        if isinstance(table.get("subcommand"), list):
            out["subcommand"] = [shared(sub) if isinstance(sub, dict) else sub for sub in table["subcommand"]]
        return out

    out: list[tuple[str, list[tuple[list[str], str]]]] = []
    for origin, text in files:
        tables = tomllib.loads(text).get("program", [])
        out.append((origin, [(list(t["names"]), json.dumps(shared(t), separators=(",", ":"))) for t in tables]))
    return {"options": options, "files": out}


def from_checked(entries: CheckedEntries) -> Catalogue:
    """A catalogue of deferred entries from :func:`checked_entries` of files :func:`load`
    accepted before (the same text checked by the same code: the I/O shell's cache,
    ``policyd.celcache``). Each entry is parsed, built and checked again on first lookup
    (each distinct option once). Raises TypeError/ValueError/KeyError on a malformed shape."""
    cat = Catalogue()
    options = entries["options"]
    if not isinstance(options, list):
        raise TypeError("catalogue cache: options must be a list")
    cat._options = (options, [None] * len(options), {})
    for origin, programs in entries["files"]:
        for names, text in programs:
            if not isinstance(text, str) or not isinstance(origin, str):
                raise TypeError("catalogue cache: origin and program text must be strings")
            raw = (origin, text)
            for n in names:
                cat._by_name.pop(n.lower(), None)
                cat._deferred[n.lower()] = raw
    return cat


_DEFAULT: list[Catalogue] = []

#: Set by the I/O shell to supply the shipped catalogue from its cache (``policyd.celcache``);
#: called once, on first use, instead of parsing the shipped TOML.
shipped_loader: Callable[[], Catalogue] | None = None


def default() -> Catalogue:
    """The shipped catalogue (``policyd/catalogue/*.toml``), loaded once on first use.

    The files are package data read through ``policyd.catalogue`` (like importing a module);
    a shipped file that fails the schema check raises :class:`CatalogueError`.
    """
    if not _DEFAULT:
        if shipped_loader is not None:
            _DEFAULT.append(shipped_loader())
        else:
            from policyd.catalogue import shipped_files  # package data, read once

            _DEFAULT.append(load(shipped_files(), unique=True))
    return _DEFAULT[0]
