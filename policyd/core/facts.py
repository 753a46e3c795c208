"""Facts a policy sees: a merged ACP ToolCall plus session context -> CEL variables.

Rules this module owns:

- The same action yields the same facts whatever agent sent it (shapes in
  ``shared/acp/agent-shapes.md``): a shell command is taken from ``rawInput.command`` (a
  string, or an argv list with ``bash -lc X`` unwrapped), else ``rawInput.cmd``, else (for
  kind ``execute``) the title, flagged ``tool.shell.from_title``. A tool call that carries a
  shell command is kind ``execute`` whatever kind it claims (``tool.sent_kind`` keeps the
  claim): a mixed command labelled ``read`` must not dodge execute rules.
- Paths come from ``locations[].path``, diff ``content[].path``, path-like ``rawInput``
  fields (:data:`PATH_KEYS`), the operands of file commands and redirect targets in a shell
  command; each is resolved against the command's cwd (``rawInput.cwd`` when absolute, else
  the session cwd) with ``~``/``$HOME`` expanded, and normalised.
- Facts are computed once per query and lazily: :meth:`Facts.activation` builds only the
  ``tool.*`` fields a policy set references. Symlink resolution (``tool.real_paths``)
  needs the filesystem, so the I/O shell passes a ``realpath`` function in.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from policyd.core import cel, paths, shell, urls
from policyd.core.model import TOOL_KINDS, PermissionQuery

#: rawInput keys holding one path (Claude, Codex, Gemini, TS SDK, common MCP file tools).
PATH_KEYS: tuple[str, ...] = (
    "path",
    "file_path",
    "filePath",
    "notebook_path",
    "absolute_path",
    "source",
    "destination",
    "target",
    "old_path",
    "new_path",
    "from",
    "to",
    "dir",
    "directory",
    "dir_path",
)
#: rawInput keys holding a list of paths.
PATH_LIST_KEYS: tuple[str, ...] = ("paths", "file_paths", "files")
#: rawInput keys holding a URL.
URL_KEYS: tuple[str, ...] = ("url", "uri", "href")

#: Commands whose operands are written (created, changed or removed). ``sed`` only with -i;
#: ``dd`` only its ``of=``.
WRITE_COMMANDS: frozenset[str] = frozenset(
    {"rm", "rmdir", "unlink", "mv", "cp", "ln", "install", "rsync", "tee", "touch", "mkdir", "chmod",
     "chown", "chgrp", "truncate", "shred", "dd", "sed", "patch"}
)
#: ACP kinds whose paths are written.
WRITE_KINDS: frozenset[str] = frozenset({"edit", "delete", "move"})
#: Redirect operators that write their target.
WRITE_REDIRECTS: frozenset[str] = frozenset({">", ">>", ">|", "&>", "&>>", ">&"})

_VAR_EXPANSION = re.compile(r"\$(?:\{|[A-Za-z_@*#?$!0-9-])")
_GLOB_CHARS = re.compile(r"[*?\[]")

#: Every ``tool.*`` field; the lazily computed ones are built only when referenced.
TOOL_FIELDS: tuple[str, ...] = (
    "id",
    "kind",
    "sent_kind",
    "title",
    "name",
    "status",
    "raw_input",
    "paths",
    "real_paths",
    "write_paths",
    "command",
    "commands",
    "redirects",
    "assignments",
    "shell",
    "url",
    "url_parts",
)

RealPath = Callable[[str], str]

#: Directories from ``cd`` kept per command (each relative path is resolved against each).
MAX_CD_DIRS = 8
#: Where relative paths point after a ``cd`` to a directory known only at run time: outside
#: every root, so no allow rule can take it for the workspace.
UNKNOWN_DIR = "/(unknown directory)"
#: Alternatives a brace expansion in a path operand is expanded into (beyond: left as is).
MAX_BRACE_ALTERNATIVES = 32
#: Commands whose first operand is a script or pattern, not a file (unless -e/-f give it).
PATTERN_FIRST: frozenset[str] = frozenset({"sed", "grep", "egrep", "fgrep", "rg", "ag", "ack", "awk", "gawk", "mawk"})
_PATTERN_FLAGS = ("-e", "-f", "--regexp", "--file", "--expression")
#: Commands whose arguments are text to print, never files.
PURE_OUTPUT: frozenset[str] = frozenset({"echo", "printf"})
#: Options that name a directory to run in (like ``cd``): ``env -C``, ``make -C``, ``git -C``, ``tar -C``.
CHDIR_OPTIONS: frozenset[str] = frozenset({"-C", "--chdir", "--directory"})
#: ``--opt=value`` options whose value is written.
OUTPUT_OPTIONS = ("--output=", "--out=", "-o=", "--basetemp=", "--log-file=", "--junitxml=")
_BRACE = re.compile(r"\{([^{}]*,[^{}]*)\}")


class Facts:
    """Facts of one :class:`PermissionQuery`, each computed at most once.

    ``realpath`` maps an absolute path to its symlink-resolved form (the shell passes
    ``os.path.realpath``); without it ``tool.real_paths`` equals ``tool.paths``.
    """

    def __init__(self, query: PermissionQuery, realpath: RealPath | None = None) -> None:
        self.query = query
        self._realpath = realpath
        self.call: Mapping[str, Any] = query.tool_call
        raw = self.call.get("rawInput")
        self.raw_input: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        #: What had to be cut to fit the evaluation limits (see ``cel.bound``).
        self.cut: list[str] = []

    # ------------------------------------------------------------------ simple fields

    @functools.cached_property
    def sent_kind(self) -> str:
        kind = self.call.get("kind")
        return kind if isinstance(kind, str) and kind in TOOL_KINDS else "other"

    @functools.cached_property
    def kind(self) -> str:
        if self.command_source in ("raw_input", "argv"):
            return "execute"
        return self.sent_kind

    @property
    def title(self) -> str:
        title = self.call.get("title")
        return title if isinstance(title, str) else ""

    @property
    def name(self) -> str:
        name = self.call.get("name")
        if isinstance(name, str):
            return name
        meta = self.call.get("_meta")
        if isinstance(meta, Mapping):
            claude = meta.get("claudeCode")
            if isinstance(claude, Mapping) and isinstance(claude.get("toolName"), str):
                return str(claude["toolName"])
        return ""

    @functools.cached_property
    def cwd(self) -> str:
        """The directory relative paths of this call resolve against."""
        raw_cwd = self.raw_input.get("cwd")
        session_cwd = self.query.session.cwd
        if isinstance(raw_cwd, str) and raw_cwd:
            return paths.resolve(raw_cwd, session_cwd or "/", self.query.home)
        return session_cwd or "/"

    def resolve(self, path: str) -> str:
        return paths.resolve(path, self.cwd, self.query.home)

    @functools.cached_property
    def cd_dirs(self) -> tuple[str, ...]:
        """Directories a shell command ``cd``s/``pushd``es into (each chained on the ones before)."""
        a = self.analysis
        if a is None:
            return ()
        dirs: list[str] = []
        for c in a.commands:
            targets = _chdir_targets(c)
            if not targets:
                continue
            if c.dynamic and _base(c.name) in ("cd", "pushd"):
                dirs.append(UNKNOWN_DIR)  # where relative paths then point is not known
                continue
            for target in targets:
                bases = [self.cwd, *dirs]
                dirs.extend(r for b in bases for r in _resolve_braces(target, b, self.query.home))
            if len(dirs) > MAX_CD_DIRS:
                break
        return _unique(dirs[:MAX_CD_DIRS])

    def resolve_all(self, path: str) -> list[str]:
        """Every place ``path`` may name: against the cwd and, when relative, against each
        directory the command ``cd``s into (we do not track which command runs where, so a
        policy sees them all: stricter for deny rules and for "all within" allow rules)."""
        found = _resolve_braces(path, self.cwd, self.query.home)
        if not self.cd_dirs or path.startswith(("/", "~", "$HOME", "${HOME}")):
            return found
        return [*found, *(r for d in self.cd_dirs for r in _resolve_braces(path, d, self.query.home))]

    # ------------------------------------------------------------------ command

    @functools.cached_property
    def _command_and_source(self) -> tuple[str, str]:
        raw = self.raw_input.get("command")
        if isinstance(raw, str) and raw.strip():
            return raw, "raw_input"
        if isinstance(raw, list) and raw and all(isinstance(a, str) for a in raw):
            return shell.split_argv_command(raw), "argv"
        cmd = self.raw_input.get("cmd")
        if isinstance(cmd, str) and cmd.strip():
            return cmd, "raw_input"
        if self.sent_kind == "execute" and self.title:
            return self.title, "title"
        return "", ""

    @property
    def command(self) -> str:
        return self._command_and_source[0]

    @property
    def command_source(self) -> str:
        """``raw_input``, ``argv``, ``title`` or ``""`` when there is no command."""
        return self._command_and_source[1]

    @functools.cached_property
    def analysis(self) -> shell.ShellAnalysis | None:
        return shell.analyze(self.command) if self.command else None

    # ------------------------------------------------------------------ paths

    @functools.cached_property
    def paths(self) -> tuple[str, ...]:
        found: list[str] = []
        for loc in self._dicts(self.call.get("locations")):
            _add_path(found, loc.get("path"))
        for item in self._dicts(self.call.get("content")):
            if item.get("type") == "diff":
                _add_path(found, item.get("path"))
        for key in PATH_KEYS:
            _add_path(found, self.raw_input.get(key))
        for key in PATH_LIST_KEYS:
            value = self.raw_input.get(key)
            if isinstance(value, list):
                for v in self._bounded(value, f"rawInput.{key}"):
                    _add_path(found, v)
        if isinstance(self.raw_input.get("cwd"), str) and self.raw_input.get("cwd"):
            found.append(self.cwd)  # the tool runs there: it must pass the same checks
        if self.analysis is not None:
            found.extend(self.analysis.path_args)
            for c in self.analysis.commands:
                found.extend(a for a in _operands(c) if _path_like(a))
        return _unique(r for p in found for r in self.resolve_all(p))

    @functools.cached_property
    def write_paths(self) -> tuple[str, ...]:
        """Paths this call writes: all paths for edit/delete/move; for a shell command, the
        operands of :data:`WRITE_COMMANDS` and the targets of output redirects."""
        if self.kind in WRITE_KINDS:
            return self.paths
        a = self.analysis
        if a is None:
            return ()
        found = [r.target for r in a.redirects if r.target and r.op.lstrip("0123456789") in WRITE_REDIRECTS]
        for c in a.commands:
            name = _base(c.name)
            if name == "dd":
                found.extend(arg[3:] for arg in c.args if arg.startswith("of="))
            elif name in WRITE_COMMANDS and (name != "sed" or "i" in c.flags):
                found.extend(_operands(c))
            found.extend(a.split("=", 1)[1] for a in c.args if a.startswith(OUTPUT_OPTIONS))
        return _unique(r for p in found for r in self.resolve_all(p))

    def command_paths(self, c: shell.SimpleCommand) -> list[str]:
        """A command's operands (non-flag arguments; ``dd``'s ``if=``/``of=``) resolved."""
        return [r for a in _operands(c) for r in self.resolve_all(a)]

    def _bounded(self, value: list[Any], what: str) -> list[Any]:
        if len(value) > cel.MAX_LIST_ITEMS:
            self.cut.append(f"{what}: {len(value)} items (limit {cel.MAX_LIST_ITEMS})")
        return value[: cel.MAX_LIST_ITEMS]

    def _dicts(self, value: object) -> list[Mapping[str, Any]]:
        if not isinstance(value, list):
            return []
        return [v for v in self._bounded(value, "a tool-call list") if isinstance(v, Mapping)]

    @functools.cached_property
    def real_paths(self) -> tuple[str, ...]:
        if self._realpath is None:
            return self.paths
        return _unique(self._realpath(p) for p in self.paths)

    # ------------------------------------------------------------------ url

    @functools.cached_property
    def url(self) -> str:
        for key in URL_KEYS:
            value = self.raw_input.get(key)
            if isinstance(value, str) and value:
                return value
        if self.sent_kind == "fetch" and "://" in self.title:
            return self.title.split()[0] if self.title.split() else ""
        return ""

    # ------------------------------------------------------------------ CEL

    def tool_field(self, name: str) -> Any:
        """The plain-Python value of ``tool.<name>``; raises KeyError for unknown names."""
        a = self.analysis
        match name:
            case "id":
                return str(self.call.get("toolCallId", ""))
            case "kind":
                return self.kind
            case "sent_kind":
                return self.sent_kind
            case "title":
                return self.title
            case "name":
                return self.name
            case "status":
                status = self.call.get("status")
                return status if isinstance(status, str) else ""
            case "raw_input":
                return self.raw_input
            case "paths":
                return list(self.paths)
            case "real_paths":
                return list(self.real_paths)
            case "write_paths":
                return list(self.write_paths)
            case "command":
                return self.command
            case "commands":
                return [_command_map(c, self.command_paths(c)) for c in a.commands] if a else []
            case "redirects":
                if not a:
                    return []
                return [
                    {"op": r.op, "target": t, "dynamic": r.dynamic}
                    for r in a.redirects
                    for t in (self.resolve_all(r.target) if r.target else [""])
                ]
            case "assignments":
                return [{"name": k, "value": v} for k, v in a.assignments] if a else []
            case "shell":
                return {
                    "parse_ok": a.parse_ok if a else True,
                    "dynamic": a.dynamic if a else False,
                    "from_title": self.command_source == "title",
                    "errors": list(a.errors) if a else [],
                }
            case "url":
                return self.url
            case "url_parts":
                return urls.parse(self.url).as_dict()
        raise KeyError(name)

    def activation(self, needs: Iterable[str] | None = None) -> dict[str, Any]:
        """CEL variables ``tool``, ``session``, ``agent``, ``client``, ``options``, ``now``.

        ``needs`` names the ``tool.*`` fields to build (None: all of them).
        """
        q = self.query
        wanted = TOOL_FIELDS if needs is None else tuple(f for f in TOOL_FIELDS if f in set(needs))
        tool = {name: self.tool_field(name) for name in wanted}
        roots = list(q.session.roots)
        real_roots = _unique(self._realpath(r) for r in roots) if self._realpath else tuple(roots)
        plain = {
            "tool": tool,
            "session": {
                "id": q.session.session_id,
                "cwd": q.session.cwd,
                "roots": roots,
                "real_roots": list(real_roots),
            },
            "agent": {"name": q.agent.name, "version": q.agent.version},
            "client": {"name": q.client.name, "version": q.client.version},
            "options": [o.kind for o in q.options],
        }
        act = {k: cel.bound(v, cut=self.cut) for k, v in plain.items()}
        act["now"] = cel.timestamp(q.now_s)
        return act


def _base(name: str) -> str:
    return name.lower()


def _operands(c: shell.SimpleCommand) -> list[str]:
    """The arguments that may name files: non-flag arguments (all after ``--``) and the
    values of ``--opt=value`` options that look like paths; not the script or pattern of
    sed/grep/awk (unless ``-e``/``-f`` give it), not a git ``-m`` message, nothing of
    echo/printf; for dd the values of ``if=``/``of=``; for a path-less ``find``, ``.``."""
    name = _base(c.name)
    if name == "dd":
        return [a.split("=", 1)[1] for a in c.args if a.startswith(("if=", "of=")) and "=" in a]
    if name in PURE_OUTPUT:
        return []
    out: list[str] = []
    rest = skip_next = False
    for a in c.args:
        if skip_next:
            skip_next = False
        elif rest or not a.startswith("-") or a == "-":
            out.append(a)
        elif a == "--":
            rest = True
        elif name == "git" and a in ("-m", "--message"):
            skip_next = True
        elif "=" in a and a.startswith("-"):
            value = a.split("=", 1)[1]
            if _path_like(value):
                out.append(value)
    if name in PATTERN_FIRST and out and not any(a.startswith(_PATTERN_FLAGS) for a in c.args):
        out = out[1:]
    if name == "find" and (not c.args or c.args[0].startswith(("-", "(", "!"))):
        out.insert(0, ".")
    return out


def _chdir_targets(c: shell.SimpleCommand) -> list[str]:
    """Directories a command runs in: ``cd``/``pushd`` DIR (no DIR: ``~``) and the value of
    ``-C DIR``, ``--chdir[=]DIR``, ``--directory[=]DIR``."""
    name = _base(c.name)
    if name in ("cd", "pushd"):
        operands = [a for a in c.args if not a.startswith("-") or a == "-"]
        target = operands[0] if operands else "~"
        return [] if target == "-" else [target]
    found: list[str] = []
    for i, a in enumerate(c.args):
        if a in CHDIR_OPTIONS and i + 1 < len(c.args):
            found.append(c.args[i + 1])
        elif a.startswith(("--chdir=", "--directory=")):
            found.append(a.split("=", 1)[1])
    return found


def _resolve_braces(path: str, cwd: str, home: str) -> list[str]:
    """``resolve`` after a brace expansion ``{a,b}`` (each alternative; bounded)."""
    words = [path]
    for _ in range(4):
        expanded: list[str] = []
        for w in words:
            m = _BRACE.search(w)
            if m is None:
                expanded.append(w)
                continue
            expanded.extend(w[: m.start()] + alt + w[m.end() :] for alt in m.group(1).split(","))
        if expanded == words or len(expanded) > MAX_BRACE_ALTERNATIVES:
            break
        words = expanded
    return [paths.resolve(w, cwd, home) for w in words]


def _path_like(arg: str) -> bool:
    return bool(arg) and "://" not in arg and ("/" in arg or arg.startswith((".", "~", "$HOME")))


def _expansions(c: shell.SimpleCommand) -> list[str]:
    """Kinds of expansion in a command's words: ``var``, ``command``, ``glob``."""
    if not c.dynamic:
        return []
    kinds: list[str] = []
    words = c.argv
    if any(_VAR_EXPANSION.search(w.replace("$(", "")) for w in words):
        kinds.append("var")
    if any("$(" in w or "`" in w or "<(" in w or ">(" in w for w in words):
        kinds.append("command")
    if any(_GLOB_CHARS.search(w) for w in words):
        kinds.append("glob")
    return kinds


def _global_args(c: shell.SimpleCommand) -> list[str]:
    """Arguments between the program and its subcommand (``git -C d -c k=v push`` -> 4)."""
    if not c.subcommand:
        return []
    first = c.subcommand.split(" ", 1)[0]
    return list(c.args[: c.args.index(first)]) if first in c.args else []


def _command_map(c: shell.SimpleCommand, paths_: list[str]) -> dict[str, Any]:
    return {
        "global_args": _global_args(c),
        "paths": paths_,
        "expansions": _expansions(c),
        "name": c.name.lower(),
        "args": list(c.args),
        "argv": list(c.argv),
        "text": c.text,
        "flags": sorted(c.flags),
        "subcommand": c.subcommand,
        "positionals": list(c.positionals),
        "wrapper": c.wrapper,
        "depth": c.depth,
        "dynamic": c.dynamic,
    }





def _add_path(found: list[str], value: object) -> None:
    if isinstance(value, str) and value:
        found.append(value)


def _unique(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(i for i in items if i))
