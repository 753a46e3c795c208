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

import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from policyd.core import brackets, cel, paths, shell, urls
from policyd.core.envvars import assignment_effects, read_allowed
from policyd.core.factbase import GLOB_CHARS as _GLOB_CHARS
from policyd.core.factbase import WRITE_REDIRECTS, once
from policyd.core.factbase import unique as _unique
from policyd.core.model import CONNECT_KIND, NO_CONNECTION, TOOL_KINDS, PermissionQuery
from policyd.core.runchecks import RunChecks
from policyd.core.shell import catalogue as shell_catalogue
from policyd.core.shell.effects import ENDLESS_DEVICES
from policyd.core.shell.model import EXPANSION, FILTER, LITERAL, PATTERN
from policyd.core.shell.resolve import (
    UNKNOWN_DIR,  # noqa: F401 - re-exported (facts.UNKNOWN_DIR)
    UNKNOWN_PATH,
    CommandFacts,
    _glob_candidates,
    _resolve_braces,
    analyse_text,
)

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
#: rawInput keys holding file-name filters of a search (Claude's Grep ``glob``, Gemini's
#: ``include``): a filter that can match a secret's name names it.
FILTER_KEYS: tuple[str, ...] = ("glob", "include", "includes", "file_pattern", "glob_pattern")
#: Tool names whose ``pattern`` is a file-name glob, not a regular expression.
GLOB_TOOLS: frozenset[str] = frozenset({"glob", "findfiles", "find_files", "file_search"})
#: A directory named as a whole holds the files its name promises: naming ``.git`` names its
#: ``config`` (where CI checkouts keep their token), naming ``.ssh`` names the keys in it.
NAMED_DIR_FILES: Mapping[str, str] = {
    ".git": "config", ".ssh": "id_rsa", ".gnupg": "private-keys-v1.d", ".aws": "credentials",
    ".azure": "credentials", ".kube": "config", ".docker": "config.json",
}
_NAMED_DIRS = tuple(f"/{name}" for name in NAMED_DIR_FILES)
#: rawInput keys holding a URL.
URL_KEYS: tuple[str, ...] = ("url", "uri", "href")

#: ACP kinds whose paths are written.
WRITE_KINDS: frozenset[str] = frozenset({"edit", "delete", "move"})
#: Kinds that say nothing of what the call does to the paths it names (a kind policyd does
#: not know is ``other``): they may write them (Gemini's ``save_memory`` is a ``think``
#: that rewrites ``~/.gemini/GEMINI.md``), so their paths are write paths too.
UNSURE_KINDS: frozenset[str] = frozenset({"think", "other", "switch_mode"})

_VAR_EXPANSION = re.compile(r"\$(?:\{|[A-Za-z_@*#?$!0-9-])")

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
    "real_write_paths",
    "command",
    "commands",
    "redirects",
    "assignments",
    "shell",
    "url",
    "url_parts",
    "connection",
    "effects",
    "reads",
    "writes",
    "execs",
    "unknown",
    "creates",
    "names",
    "deletes",
    "cwds",
    "discards",
)

RealPath = Callable[[str], str]
#: What a path is, links followed: ``"file"`` (a regular file), ``"linked"`` (a regular
#: file with more than one hard link), ``"dir"``, ``"missing"`` (nothing there, not even a
#: dangling link) or ``"other"`` (see ``realpaths.file_kind``).
FileKind = Callable[[str], str]
#: The interpreter line of a file run as a program (``realpaths.interpreter``): the ``#!``
#: text, an ELF file's loader, ``""`` for none, None when unreadable.
Interpreter = Callable[[str], "str | None"]
#: The text of a tool's config file (``realpaths.config_text``): "" none, None unreadable.
ReadConfig = Callable[[str], "str | None"]
#: The real paths the symbolic links below a directory lead to; None when not known (too big).
#: ``(directory, readable_only, importable_only) -> targets`` (see ``realpaths.links_below``).
LinksBelow = Callable[[str, bool, bool], "tuple[str, ...] | None"]
#: The entries of a directory Python would import from it (``json.py``, ``json/``), as
#: ``directory/NAME``; None when not known (too big). See ``realpaths.importable_entries``.
Importables = Callable[[str], "tuple[str, ...] | None"]
#: The existing paths an absolute glob expands to, as spelled; None when too many entries
#: must be looked at (see ``realpaths.glob_matches``).
GlobMatches = Callable[[str], "tuple[str, ...] | None"]
#: ``(name, special)`` of each file an archive or patch makes its reader write; None when not
#: known (see ``policyd.archives.members``).
Members = Callable[[str], "tuple[tuple[str, bool], ...] | None"]
#: The files below a directory whose names the policy set hides (``[sandbox] hide``); None
#: when the tree is too big to walk (see ``realpaths.names_below``).
SecretsBelow = Callable[[str], "tuple[str, ...] | None"]
#: The working trees of the repository a directory lies in; None when not known (see
#: ``realpaths.registered_worktrees``).
Worktrees = Callable[[str], "tuple[str, ...] | None"]
#: The text of a small regular file; None when it is missing, big or unreadable (see
#: ``realpaths.small_text``).
SmallText = Callable[[str], "str | None"]

#: Element types of the facts schema: ``string``, ``bool``, ``int``, ``timestamp``, ``map``
#: (free-form), ``list(T)``, or a nested dict of field -> type (a map with known fields).
FactType = str | Mapping[str, "FactType"]

#: Fields of each element of ``tool.commands``.
COMMAND_FIELDS: Mapping[str, FactType] = {
    "name": "string", "args": "list(string)", "argv": "list(string)", "text": "string",
    "flags": "list(string)", "subcommand": "string", "global_args": "list(string)",
    "positionals": "list(string)", "paths": "list(string)", "expansions": "list(string)",
    "wrapper": "string", "depth": "int", "dynamic": "bool",
    # from the catalogue (issue 10)
    "entry": "string", "effects": "list(string)", "reads": "list(string)",
    "writes": "list(string)", "deletes": "list(string)", "creates": "list(string)",
    "execs": "list(string)", "cwds": "list(string)", "unknown": "list(string)",
}
#: The one declaration of every CEL variable and its type (a static checker of policies and
#: the README's CEL table read this; a test keeps it equal to what :meth:`Facts.activation`
#: builds).
FACTS_SCHEMA: Mapping[str, FactType] = {
    "tool": {
        "id": "string", "kind": "string", "sent_kind": "string", "title": "string",
        "name": "string", "status": "string", "raw_input": "map", "paths": "list(string)",
        "real_paths": "list(string)", "write_paths": "list(string)", "real_write_paths": "list(string)",
        "command": "string",
        "commands": {"list": COMMAND_FIELDS},
        "redirects": {"list": {"op": "string", "target": "string", "dynamic": "bool"}},
        "assignments": {"list": {"name": "string", "value": "string", "allowed": "bool"}},
        "shell": {"parse_ok": "bool", "dynamic": "bool", "from_title": "bool",
                  "errors": "list(string)", "unknown": "list(string)"},
        "url": "string",
        "url_parts": {"valid": "bool", "scheme": "string", "host": "string", "port": "int",
                      "path": "string", "query": "string", "ip": "string", "loopback": "bool",
                      "private": "bool", "link_local": "bool"},
        "connection": {"host": "string", "port": "int", "addresses": "list(string)", "loopback": "bool",
                       "private": "bool", "link_local": "bool", "via": "string", "method": "string"},
        "effects": "list(string)", "reads": "list(string)", "writes": "list(string)",
        "execs": "list(string)", "unknown": "list(string)", "creates": "list(string)",
        "names": "list(string)", "deletes": "list(string)", "cwds": "list(string)",
        "discards": "list(string)",
    },
    "session": {"id": "string", "cwd": "string", "roots": "list(string)", "real_roots": "list(string)",
                "sandboxed": "bool"},
    "agent": {"name": "string", "version": "string"},
    "client": {"name": "string", "version": "string"},
    "options": "list(string)",
    "now": "timestamp",
}


#: ``--opt=value`` options whose value is written, for a program the catalogue does not know
#: (a guess that only adds write paths: such a command is unknown anyway).
OUTPUT_OPTIONS = ("--output=", "--out=", "-o=", "--basetemp=", "--log-file=", "--junitxml=")


class Facts(RunChecks):
    """Facts of one :class:`PermissionQuery`, each computed at most once.

    ``realpath`` maps an absolute path to its symlink-resolved form (the shell passes
    ``os.path.realpath``); without it ``tool.real_paths`` equals ``tool.paths``.
    ``links_below`` (the shell passes ``realpaths.links_below``) lists where the symbolic links
    below a directory lead: a command that follows links below its directories (``grep -R``,
    ``cp -rL``, ``zip -r``) through one that leaves the roots is unknown; without it nothing
    is scanned (pure contexts: policy examples). ``file_kind`` (``realpaths.file_kind``) says
    whether a file a command runs is a regular file, a directory or missing (see
    :attr:`run_unknowns`); without it a file the program would search for is unknown and
    nothing else is looked at. ``importables`` (``realpaths.importable_entries``) lists what
    proven ``python -c`` code would import from its working directory (:attr:`code_refusals`);
    without it nothing is listed. ``interpreter`` (``realpaths.interpreter``) reads the ``#!``
    line of a workspace file run as a program (:meth:`_interpreter_unknown`); without it the
    line is not read. ``read_config`` (``realpaths.config_text``) reads the configs a linter
    loads code from (:meth:`_configs_out`); without it they are not read. ``glob_matches``
    (``realpaths.glob_matches``) expands a
    glob path against the file system: its matches join the paths (and write paths) it
    stands in, so their real paths are judged as a literal operand's are (``cat docs/*``
    through ``docs/key -> ~/.ssh/id_rsa``); a glob too big to expand makes the call unknown.
    Without it only the glob's sensitive-name candidates are added. ``members``
    (``archives.members``) lists what an extractor or patcher writes (:attr:`member_writes`).
    ``secrets_below`` (``Resolver.secrets_below``) lists the secret-named files below a
    directory a command reads whole (:meth:`_secrets_read`).
    """

    def __init__(self, query: PermissionQuery, realpath: RealPath | None = None,
                 catalogue: shell_catalogue.Catalogue | None = None,
                 links_below: LinksBelow | None = None, file_kind: FileKind | None = None,
                 importables: Importables | None = None, interpreter: Interpreter | None = None,
                 read_config: ReadConfig | None = None, glob_matches: GlobMatches | None = None,
                 members: Members | None = None, secrets_below: SecretsBelow | None = None,
                 worktrees: Worktrees | None = None, small_text: SmallText | None = None) -> None:
        self.query = query
        self._read_config = read_config
        self._small_text = small_text
        self._worktrees = worktrees
        self._secrets_below = secrets_below
        #: directories a recursive reader reads that are too big to walk for secrets
        self._unwalked: dict[str, None] = {}
        self._members = members
        self._glob_matches = glob_matches
        #: globs :meth:`_with_matches` could not expand within its bound
        self._unexpanded: dict[str, None] = {}
        #: matches of a shell glob whose name begins with "-": the program reads them as options
        self._optionlike: dict[str, None] = {}
        self._importables = importables
        self._interpreter = interpreter
        self._realpath = realpath
        self._file_kind = file_kind
        self._links_below = links_below
        self._catalogue = catalogue
        self.call: Mapping[str, Any] = query.tool_call
        raw = self.call.get("rawInput")
        self.raw_input: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        #: What had to be cut to fit the evaluation limits (see ``cel.bound``), and what an
        #: agent profile could not fully show (``core.profiles.CUT_KEY``).
        cut = self.call.get("_policyd_cut")
        self.cut: list[str] = [str(c) for c in cut] if isinstance(cut, list) else []

    # ------------------------------------------------------------------ simple fields

    @once
    def sent_kind(self) -> str:
        if self.query.connection is not None:  # only policyd's egress sets it
            return CONNECT_KIND
        kind = self.call.get("kind")
        return kind if isinstance(kind, str) and kind in TOOL_KINDS else "other"

    @once
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

    @once
    def cwd(self) -> str:
        """The directory relative paths of this call resolve against."""
        raw_cwd = self.raw_input.get("cwd")
        session_cwd = self.query.session.cwd
        if isinstance(raw_cwd, str) and raw_cwd:
            return paths.resolve(raw_cwd, session_cwd or "/", self.query.home)
        return paths.resolve(session_cwd, "/", "") if session_cwd else "/"

    def resolve(self, path: str) -> str:
        return paths.resolve(path, self.cwd, self.query.home)

    # ------------------------------------------------------------------ command

    @once
    def _command_and_source(self) -> tuple[str, str]:
        # every command-bearing key is analysed: an agent may run `cmd` while `command`
        # shows something harmless (the texts are joined as lines of one script)
        found: list[tuple[str, str]] = []
        for key in ("command", "cmd"):
            raw = self.raw_input.get(key)
            if isinstance(raw, str) and raw.strip():
                found.append((raw, "raw_input"))
            elif isinstance(raw, list) and raw and all(isinstance(a, str) for a in raw):
                found.append((shell.split_argv_command(raw), "argv"))
        if found:
            texts = list(dict.fromkeys(text for text, _ in found))
            return "\n".join(texts), found[0][1]
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

    @once
    def _shell(self) -> tuple[shell.ShellAnalysis | None, tuple[CommandFacts, ...]]:
        # both pure: kept by text (and directory, home) in the catalogue's memo
        if not self.command:
            return None, ()
        cat = self._catalogue if self._catalogue is not None else shell_catalogue.default()
        return analyse_text(self.command, cat, self.cwd, self.query.home)

    @once  # read by every check: kept in the instance, not a call per read
    def analysis(self) -> shell.ShellAnalysis | None:
        return self._shell[0]

    # ------------------------------------------------------------------ paths

    @once
    def shell_facts(self) -> tuple[CommandFacts, ...]:
        """Per-command catalogue facts (effects, resolved reads/writes, directories)."""
        return self._shell[1]

    @once
    def _concerns(self) -> frozenset[str]:
        """What some command of the text has that a check of the commands looks at (one pass
        over them): ``members``, ``code_files``, ``imports`` (``imports_cwd`` or
        ``module_dirs``), ``follows``, ``worktrees``, ``git``, ``configs``, ``installed``,
        ``pathspecs``, ``recursive``, ``mkfifo``. A check whose concern no command has finds
        nothing, so it is not run (most commands concern none of them)."""
        found: set[str] = set()
        for cf in self.shell_facts:
            j = cf.judgement
            if j.members:
                found.add("members")
            if j.code_files:
                found.add("code_files")
            if j.imports_cwd or j.module_dirs:
                found.add("imports")
            if j.follows:
                found.add("follows")
            if j.worktrees:
                found.add("worktrees")
            if j.entry == "git" or j.entry.startswith("git "):
                found.add("git")
            if j.configs[1]:
                found.add("configs")
            if j.installed:
                found.add("installed")
            if cf.pathspecs:
                found.add("pathspecs")
            if j.recursive:
                found.add("recursive")
            if j.entry == "mkfifo":
                found.add("mkfifo")
        return frozenset(found)

    @once
    def _all_cwds(self) -> tuple[str, ...]:
        """Every directory a command of the text may run in (for redirect targets)."""
        return _unique([self.cwd, *(d for cf in self.shell_facts for d in cf.cwds)])

    def _resolve_in(self, word: str, kind: int, cwds: Iterable[str]) -> list[str]:
        if kind == EXPANSION and not word.startswith(("$HOME/", "${HOME}/")) and word not in ("$HOME", "${HOME}"):
            return [UNKNOWN_PATH]
        bases = list(cwds)
        if word.startswith(("/", "~", "$HOME", "${HOME}")):
            bases = bases[:1]
        found = [r for b in bases for r in _resolve_braces(word, b, self.query.home)]
        if kind == FILTER:
            found.extend(g for r in found for g in _glob_candidates(r, filter_=True))
        elif kind == PATTERN or any(_GLOB_CHARS.search(r) for r in found):
            found.extend(g for r in found for g in _glob_candidates(r))
        return found

    @once
    def redirect_targets(self) -> tuple[tuple[str, str, bool, tuple[str, ...]], ...]:
        """``(op, raw target, dynamic, resolved targets)`` of every redirect."""
        a = self.analysis
        if a is None:
            return ()
        out: list[tuple[str, str, bool, tuple[str, ...]]] = []
        for r in a.redirects:
            fd_dup = r.op.endswith("&") and (r.target.isdigit() or r.target.endswith("-"))
            special = not r.target or fd_dup or r.op.startswith("<<") or r.target[:2] in ("<(", ">(")
            if special:
                out.append((r.op, "", r.dynamic, (r.target,) if r.target else ("",)))
            else:
                targets = tuple(self._resolve_in(r.target, r.kind, self._all_cwds))
                out.append((r.op, r.target, r.dynamic, targets))
        return tuple(out)

    @once
    def paths(self) -> tuple[str, ...]:
        """Every path the call names, normalised (``tool.paths``); their physical forms
        (``outbox/../x`` as the kernel walks it: ``paths.physical``) count for
        :attr:`real_paths` only."""
        return _lexical(self._paths[0])

    @once
    def _paths(self) -> tuple[tuple[str, ...], frozenset[str]]:
        """(``tool.paths``, those of them only named by operands whose final symbolic link
        the program does not follow: ``CommandFacts.unfollowed`` and the matches of such a
        glob, when no other word, command, redirect or walk names them: :attr:`real_paths`)."""
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
        found.extend(_raw_input_paths(self.raw_input, self.cut))
        if isinstance(self.raw_input.get("cwd"), str) and self.raw_input.get("cwd"):
            found.append(self.cwd)  # the tool runs there: it must pass the same checks
        resolved = [r for p in found for r in self._resolve_in(p, LITERAL, [self.cwd])]
        for pattern in self._filters():  # a search's file filter: what it selects under its paths
            for base in list(resolved) or [self.cwd]:
                resolved.extend(self._resolve_in(_under(base, pattern), FILTER, [self.cwd]))
        kept: list[str] = []  # reads whose final link is not followed
        marks: list[tuple[int, int, frozenset[str]]] = []  # where they lie in `resolved`
        if self.analysis is not None:
            for c, cf in zip(self.analysis.commands, self.shell_facts, strict=True):
                start = len(resolved)
                resolved.extend(cf.reads)
                if cf.unfollowed:
                    kept.extend(cf.unfollowed)
                    marks.append((start, len(resolved), frozenset(cf.unfollowed)))
                resolved.extend(cf.writes)
                resolved.extend(cf.chdirs)
                resolved.extend(self.command_paths(c, cf))
                resolved.extend(self._globbed_dirs(c, cf))
            for _, raw, _, targets in self.redirect_targets:
                if raw:
                    resolved.extend(t for t in targets if t.startswith("/"))
        plain = [r for i, r in enumerate(resolved)
                 if not any(a <= i < b and r in skip for a, b, skip in marks)] if marks else resolved
        resolved = self._with_matches(resolved)
        walked = self._secrets_read(resolved)
        resolved.extend(walked)
        named = [f"{p}/{NAMED_DIR_FILES[p.rsplit('/', 1)[-1]]}" for p in resolved if p.endswith(_NAMED_DIRS)]
        resolved.extend(named)
        unfollowed: frozenset[str] = frozenset()
        if kept:
            followed = {*self._with_matches(plain), *walked, *named}
            unfollowed = frozenset(p for p in self._with_matches(kept) if p not in followed)
        return _with_case_variants(_unique(resolved), self.query.session.roots), unfollowed

    def _globbed_dirs(self, c: shell.SimpleCommand, cf: CommandFacts) -> list[str]:
        """The directories bash lists to expand ``c``'s glob arguments, whatever the program
        does with the names (``echo outbox/*`` prints what is below ``outbox -> ~/.ssh``; red
        team rtnofollow): each glob's directory part, itself a pattern where it holds one
        (``out*/*`` lists every directory ``out*`` matches)."""
        out: list[str] = []
        for a, k in zip(c.args, c.arg_kinds, strict=False):
            if k == PATTERN and _GLOB_CHARS.search(a):
                for d in cf.cwds if not a.startswith(("/", "~")) else cf.cwds[:1]:
                    out.extend(posixpath.dirname(g) for g in _resolve_braces(a, d, self.query.home)
                               if g.startswith("/") and g != UNKNOWN_PATH and _GLOB_CHARS.search(g))
        return out

    def _secrets_read(self, resolved: list[str]) -> list[str]:
        """The files a recursive reader reads below a directory (``grep -r API_KEY .``, ``rg
        --hidden``, ``tar c .``, ``cp -r``; an ACP search of a directory) whose names the
        policy set hides from the sandbox (``.env``, ``id_rsa``, ``*.pem``): the command line
        names none of them, so the walk lists them as paths and the credential rule decides.
        A search's file filter (``glob: "*.py"``) keeps only the names it matches. A tree
        too big to walk is remembered for :attr:`unknown`. Without ``secrets_below`` or
        ``file_kind`` nothing is walked."""
        if self._secrets_below is None or self._file_kind is None:
            return []
        if self.kind != "search" and "recursive" not in self._concerns:
            return []
        walks: list[tuple[list[str], list[str]]] = []  # (directories, name filters)
        if self.kind == "search":
            walks.append((resolved, [g.rsplit("/", 1)[-1] for g in self._filters()]))
        for cf in self.shell_facts:
            if cf.judgement.recursive:
                # a name filter (`grep -r --include='*.py'`) keeps what it matches; a glob operand
                # (`grep -r KEY s*`) is walked in its matches
                filters = [v.rsplit("/", 1)[-1] for v, k in cf.judgement.reads if k == FILTER]
                operands = [r for r in cf.reads if r.rsplit("/", 1)[-1] not in filters]
                walks.append((self._with_matches(operands or list(cf.cwds)), filters))  # `rg --hidden K`: the cwd
        out: list[str] = []
        for dirs, filters in walks:
            for d in _unique(dirs):
                if not d.startswith("/") or d == UNKNOWN_PATH or _GLOB_CHARS.search(d) or self._file_kind(d) != "dir":
                    continue
                found = self._secrets_below(d)
                if found is None:
                    self._unwalked[d] = None
                    out.append(UNKNOWN_PATH)  # a search (no shell analysis) asks too
                    continue
                out.extend(f for f in found
                           if not filters or any(brackets.component_matches(f.rsplit("/", 1)[-1], g) for g in filters))
        return out

    def _with_matches(self, found: list[str]) -> list[str]:
        """``found`` and the existing paths each glob in it expands to (see the class doc);
        a glob that cannot be expanded within the bound is remembered for :attr:`unknown`."""
        if self._glob_matches is None:
            return found
        out = list(found)
        if not _GLOB_CHARS.search("\n".join(found)):
            return out  # the common case: no glob among them
        for p in _unique(found):
            if p.startswith("/") and p != UNKNOWN_PATH and _GLOB_CHARS.search(p):
                matches = self._glob_matches(p)
                if matches is None:
                    self._unexpanded[p] = None
                    continue
                out.extend(matches)
                if self.analysis is not None:  # a shell glob: bash hands each match to the program
                    self._optionlike.update((m, None) for m in matches if m.rsplit("/", 1)[-1].startswith("-"))
        return out

    def _filters(self) -> list[str]:
        """File-name filters of a search call (:data:`FILTER_KEYS`; a glob tool's ``pattern``)."""
        out: list[str] = []
        raw = self.raw_input
        keys = [k for k in FILTER_KEYS if k in raw]
        if "pattern" in raw and (self.name.lower() in GLOB_TOOLS
                                 or self.title.split(" ", 1)[0].lower() in GLOB_TOOLS):
            keys.append("pattern")
        for key in keys:
            value = self.raw_input.get(key)
            for v in (value if isinstance(value, list) else [value])[: cel.MAX_LIST_ITEMS]:
                if isinstance(v, str) and v and not v.startswith("!"):
                    out.extend(p for p in _split_filter(v) if p)
        return out

    @once
    def write_paths(self) -> tuple[str, ...]:
        """Paths this call writes: all paths for edit/delete/move; for a shell command, the
        catalogue's write and delete operands and output redirect targets (a directory means
        everything under it); for a program the catalogue does not know, its ``--output=``-like
        option values. A kind that says nothing of what it does (:data:`UNSURE_KINDS`) writes
        every path it names. Normalised, as :attr:`paths`."""
        return _lexical(self._write_paths)

    @once
    def _write_paths(self) -> tuple[str, ...]:
        """:attr:`write_paths` with their physical forms (for :attr:`real_write_paths`)."""
        if self.kind in WRITE_KINDS or self.kind in UNSURE_KINDS:
            return self._paths[0]
        a = self.analysis
        if a is None:
            return ()
        found: list[str] = []
        for op, raw, _, targets in self.redirect_targets:
            if raw and op.lstrip("0123456789") in WRITE_REDIRECTS:
                found.extend(t for t in targets if t.startswith("/"))
        for c, cf in zip(a.commands, self.shell_facts, strict=True):
            found.extend(cf.writes)
            if cf.judgement.entry:
                continue  # the catalogue knows what it writes
            guessed = [x.split("=", 1)[1] for x in c.args if x.startswith(OUTPUT_OPTIONS)]
            found.extend(r for p in guessed for r in self._resolve_in(p, _kind_of(c, p), cf.cwds))
        found.extend(self.member_writes[0])
        return _with_case_variants(_unique(self._with_matches(found)), self.query.session.roots)

    @once
    def member_writes(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(the files extractors and patchers write, why one is unknown). A command that
        writes the files its input names below a directory (``Judgement.members``: ``tar -x
        -C DIR``, ``unzip -d DIR``, ``git apply --directory=DIR``) writes ``DIR/NAME`` for
        each name its input (a read operand, or a written operand that is a regular file:
        tar's ``-f``) holds, read bounded by ``members``; these are its write paths, so the
        persistence, agent- and tool-config rules see them (``src/.claude/settings.json``).
        Unknown: input it cannot read (missing, too big, another format, stdin), a member
        that is a link or has an absolute or ``..`` name, a symbolic link anywhere below the
        directory (a member is written through it, wherever it leads: ``sub/l ->
        .git/hooks``). Without ``members`` and ``file_kind`` (pure contexts) nothing is read."""
        a = self.analysis
        if a is None or self._members is None or self._file_kind is None or "members" not in self._concerns:
            return (), ()
        writes: list[str] = []
        why: list[str] = []
        redirected = {t for op, raw, _, targets in self.redirect_targets
                      if raw and op.lstrip("0123456789") in WRITE_REDIRECTS for t in targets}
        for i, (c, cf) in enumerate(zip(a.commands, self.shell_facts, strict=True)):
            if not cf.judgement.members:
                continue
            # written by another command of the call (its own archive operand is tar's -f)
            made = redirected.union(w for k, other in enumerate(self.shell_facts) if k != i for w in other.writes)
            kinds = {w: self._file_kind(w) for w in cf.writes
                     if w.startswith("/") and w != UNKNOWN_PATH and w not in cf.archived}
            dirs = [w for w, k in kinds.items() if k != "file"]
            inputs = [*(r for r in cf.reads if r.startswith("/") and r != UNKNOWN_PATH),
                      *(w for w, k in kinds.items() if k == "file"), *cf.archives]
            if not inputs or len(kinds) + len(cf.archived) < len([w for w in cf.writes if w]):
                why.append(f"{c.name}: writes files named by input the command line does not show")
                continue
            for d in dirs:
                targets = self._links_below(d, False, False) if self._links_below is not None else ()
                if targets is None:
                    why.append(f"{c.name}: writes members below {d}, too big to scan for links")
                elif targets:
                    why.append(f"{c.name}: writes members below {d}, where a symbolic link (to {targets[0]}) "
                               "carries them elsewhere")
            for src in inputs:
                if src.rsplit("/", 1)[-1] == "-" or src.startswith(("/dev/", "/proc/")):
                    why.append(f"{c.name}: writes files named by its standard input")
                    continue
                if src in made or UNKNOWN_PATH in made:
                    why.append(f"{c.name}: reads {src}, which the same call may write")
                    continue
                if self._file_kind(src) == "missing":
                    continue  # fails: writes nothing
                found = self._members(src)
                if found is None:
                    why.append(f"{c.name}: cannot read the names of what {src} holds")
                    continue
                for name, special in found:
                    parts = name.split("/")
                    if special or name.startswith("/") or ".." in parts:
                        why.append(f"{c.name}: {src} holds {name!r}, a link or a name outside the directory")
                        break
                    writes.extend(paths.resolve(name, d, "") for d in dirs)
        return tuple(_unique(writes)), tuple(_unique(why))

    def command_paths(self, c: shell.SimpleCommand, cf: CommandFacts | None = None) -> list[str]:
        """The operands of a program the catalogue does not know (non-option words) resolved in
        the directories it runs in."""
        if cf is not None and cf.judgement.entry:
            return []  # the catalogue knows its operands: they are in reads/writes/chdirs
        cwds = cf.cwds if cf is not None else (self.cwd,)
        return [r for a in _operands(c) if _path_like(a) or cf is None
                for r in self._resolve_in(a, _kind_of(c, a), cwds)]

    def _bounded(self, value: list[Any], what: str) -> list[Any]:
        if len(value) > cel.MAX_LIST_ITEMS:
            self.cut.append(f"{what}: {len(value)} items (limit {cel.MAX_LIST_ITEMS})")
        return value[: cel.MAX_LIST_ITEMS]

    def _dicts(self, value: object) -> list[Mapping[str, Any]]:
        if not isinstance(value, list):
            return []
        return [v for v in self._bounded(value, "a tool-call list") if isinstance(v, Mapping)]

    @once
    def real_paths(self) -> tuple[str, ...]:
        """``paths`` with symbolic links resolved; a path only an operand names whose final
        link the program does not follow (``du -s outbox``, ``ls -d *``: lstat) keeps its
        last name: its directory's real path joined with it (``Facts._paths``)."""
        if self._realpath is None:
            return self.paths
        realpath = self._realpath
        named, unfollowed = self._paths
        if not unfollowed:
            return _unique(realpath(p) for p in named)
        return _unique(_real_link(realpath, p) if p in unfollowed else realpath(p) for p in named)

    @once
    def real_write_paths(self) -> tuple[str, ...]:
        """``write_paths`` with symlinks resolved (``hk/pre-commit`` through a link to
        ``.git/hooks``); equals ``write_paths`` without a resolver."""
        if self._realpath is None:
            return self.write_paths
        return _unique(self._realpath(p) for p in self._write_paths if p.startswith("/"))

    @once
    def unknown(self) -> tuple[str, ...]:
        """Why the analysis cannot know what this call runs (empty: it knows)."""
        a = self.analysis
        if a is None:
            return ()
        found = list(a.unknown)
        found.extend(f"{c.name}: {why}" for c, cf in zip(a.commands, self.shell_facts, strict=True)
                     for why in cf.unknown)
        found.extend(self._links_out())
        found.extend(w for ws in self.run_unknowns for w in ws)
        found.extend(self._code_reads_unending())
        found.extend(self._not_installed())
        found.extend(self._configs_out())
        found.extend(self._foreign_git_dirs())
        found.extend(self.member_writes[1])
        found.extend(self._worktree_unknowns())
        found.extend(self._venv_unknowns())
        if self._glob_matches is not None:
            _ = self.paths, self.write_paths  # they expand the globs
            found.extend(f"{p}: a pattern with more entries to look at than can be checked"
                         for p in self._unexpanded)
            # `du -ah *` beside a file named -L: bash passes "-L" and du follows every link (red
            # team rtnofollow); options are read from the words as written, before expansion
            found.extend(f"{p}: a file a pattern matches whose name begins with '-', which the program "
                         "takes for an option" for p in self._optionlike)
        if self._secrets_below is not None:
            _ = self.paths  # it walks the directories
            found.extend(f"reads every file below {d}, too big to look for secrets in" for d in self._unwalked)
        found.extend(w for ws in self._code_checks[1] for w in ws)
        if any("link" in cf.judgement.effects for cf in self.shell_facts) and any(
                raw and targets for _, raw, _, targets in self.redirect_targets):
            # `ln -s /etc q && echo x > q/passwd`: as a command's own paths after a link are
            # (shell.resolve), a redirect's target is known only once the link exists
            found.append("a redirect in a command that makes a symbolic link: its target cannot be "
                         "resolved before the link exists")
        if not a.parse_ok:
            found.extend(a.errors)
        return _unique(found)

    @once
    def assignments(self) -> tuple[tuple[str, str], ...]:
        """``(name, value)`` of every assignment, and of every variable a command assigns
        (``printf -v NAME``, ``read NAME``: value ``""``, unknown until run)."""
        a = self.analysis
        if a is None:
            return ()
        assigned = [(v, "") for cf in self.shell_facts for v in cf.judgement.variables]
        return (*a.assignments, *assigned)

    @once
    def effects(self) -> frozenset[str]:
        """Union of every command's effects; ``unknown`` when anything is unknown; ``write``
        for output redirects; ``env`` for an environment assignment not allow-listed."""
        a = self.analysis
        if a is None:
            return frozenset()
        out: set[str] = {e for cf, refused, ran in zip(self.shell_facts, self.run_refusals, self.runs, strict=True)
                         for e in _run_effects(cf.judgement.effects, refused, bool(ran))}
        if self.unknown:
            out.add("unknown")
        if any(raw and op.lstrip("0123456789") in WRITE_REDIRECTS for op, raw, _, _ in self.redirect_targets):
            out.add("write")
        if any(raw and op.lstrip("0123456789") in ("<", "<>") for op, raw, _, _ in self.redirect_targets):
            out.add("read")
        if self.assignments:
            for found in self._assignment_effects:
                out |= found
        if ((a.redirects or "read" in out) and self._endless_input):
            out.add("endless")
        if a.env_reads and not all(read_allowed(n) for n in a.env_reads):
            out.add("env-read")
        return frozenset(out)

    @once
    def _endless_input(self) -> bool:
        """Some command reads a device that never ends (an operand, or a ``<`` redirect
        of it or of a compound statement) with nothing to stop it: no ``bound`` option of
        its own (``head -c 1M``) and no bounded reader right after it in a pipe."""
        a = self.analysis
        if a is None:
            return False
        sources = {i for i, cf in enumerate(self.shell_facts) if cf.judgement.reads_endless}
        for r in a.redirects:
            if r.op.lstrip("0123456789") in ("<", "<>") and r.kind == LITERAL and r.target in ENDLESS_DEVICES:
                if r.command < 0:
                    return True
                sources.add(r.command)
        cmds, cfs = a.commands, self.shell_facts
        return any(not cfs[i].judgement.bounded
                   and not any(c.stdin_from == i and cfs[j].judgement.bounded for j, c in enumerate(cmds))
                   for i in sources if i < len(cfs))

    @once
    def _assignment_effects(self) -> tuple[frozenset[str], ...]:
        """Per assignment (:attr:`assignments`), its effects where it reaches: every
        command after ``export``/a bare ``A=b``, the command of ``A=b cmd`` and what a
        wrapper runs for ``env A=b cmd`` (``envvars.assignment_effects``)."""
        a = self.analysis
        if a is None:
            return ()
        cat = self._catalogue if self._catalogue is not None else shell_catalogue.default()
        scopes = a.assignment_scopes
        out: list[frozenset[str]] = []
        for i, (name, value) in enumerate(self.assignments):
            lo, hi = scopes[i] if i < len(scopes) else (0, -1)
            if name == "PATH" and hi >= 0 and self.path_dirs(value) is not None:
                # workspace directories for the command it prefixes: what runs is `run` or
                # unknown (path_lookups); one that outlives the text (`export PATH=...`, a bare
                # PATH=...) reaches later calls of a kept shell, whose programs no lookup sees
                out.append(frozenset())
                continue
            reached = a.commands[lo:] if hi < 0 else a.commands[lo:hi]
            programs = list({c.name.lower(): cat.get(c.name) for c in reached}.values())
            if hi < 0:  # export / a bare A=b outlive the command: a shell an agent keeps
                programs.append(None)  # runs later calls with it, programs unknown here
            out.append(assignment_effects(name, value, programs))
        return tuple(out)

    # ------------------------------------------------------------------ url

    @once
    def url(self) -> str:
        for key in URL_KEYS:
            value = self.raw_input.get(key)
            if isinstance(value, str) and value:
                return value
        if self.sent_kind == "fetch" and "://" in self.title:
            return self.title.split()[0] if self.title.split() else ""
        return ""

    @once
    def url_parts(self) -> urls.UrlParts:
        """``url`` parsed (``tool.url_parts`` and the remember key read it)."""
        return urls.parse(self.url)

    # ------------------------------------------------------------------ CEL

    @once
    def _unions(self) -> tuple[list[str], ...]:
        """Tool-level unions of the commands' reads, deletes, discards, cwds, creates and
        execs (first occurrence order, empty strings dropped), built in one pass."""
        found: tuple[dict[str, None], ...] = ({}, {}, {}, {}, {}, {})
        reads, deletes, discards, cwds, creates, execs = found
        for cf in self.shell_facts:
            reads.update(dict.fromkeys(cf.reads))
            deletes.update(dict.fromkeys(cf.deletes))
            discards.update(dict.fromkeys(cf.discards))
            cwds.update(dict.fromkeys(cf.cwds))
            creates.update(dict.fromkeys(cf.creates))
            execs.update(dict.fromkeys(cf.judgement.execs))
        for refused in self.run_refusals:
            execs.update(dict.fromkeys(refused))
        discards.update(dict.fromkeys(self._directory_pathspecs))
        for d in found:
            d.pop("", None)
        return tuple(list(d) for d in found)

    @once
    def _directory_pathspecs(self) -> tuple[str, ...]:
        """The work-tree pathspecs of git checkout/restore that are directories: the
        uncommitted work of every tracked file below them is thrown away (``git restore src``),
        as for ``.``. Without a file-kind lookup (pure contexts) none is looked at."""
        if self._file_kind is None or "pathspecs" not in self._concerns:
            return ()
        return _unique(p for cf in self.shell_facts for p in cf.pathspecs
                       if p.startswith("/") and p != UNKNOWN_PATH and self._file_kind(p) == "dir")

    def tool_field(self, name: str) -> Any:
        """The plain-Python value of ``tool.<name>``; raises KeyError for unknown names."""
        return _TOOL_GETTERS[name](self)

    def activation(self, needs: Iterable[str] | None = None) -> dict[str, Any]:
        """CEL variables ``tool``, ``session``, ``agent``, ``client``, ``options``, ``now``.

        ``needs`` names the ``tool.*`` fields to build (None: all of them).
        """
        q = self.query
        if needs is None:
            wanted: Iterable[str] = TOOL_FIELDS
        else:
            needed = needs if isinstance(needs, frozenset | set) else set(needs)
            wanted = [f for f in TOOL_FIELDS if f in needed]
        tool = {name: self.tool_field(name) for name in wanted}
        roots = list(q.session.roots)
        # the physical directories: the client's spelling resolved by the file system (a
        # symlink before a '..' is followed as chdir() would)
        real_roots = (_unique(self._realpath(r) for r in q.session.raw_roots) if self._realpath
                      else tuple(roots))
        plain = {
            "tool": tool,
            "session": {
                "id": q.session.session_id,
                "cwd": roots[0] if q.session.cwd else "",
                "roots": roots,
                "real_roots": list(real_roots),
                "sandboxed": q.session.sandboxed,
            },
            "agent": {"name": q.agent.name, "version": q.agent.version},
            "client": {"name": q.client.name, "version": q.client.version},
            "options": [o.kind for o in q.options],
        }
        if "raw_input" in tool:  # the agent's own map: copied (bounded) before the rest is cut in place
            tool["raw_input"] = cel.bound(tool["raw_input"], self.cut, depth=1)
        # every other list and dict here was built by this call (the getters make new ones:
        # tests/test_bound.py checks it), so they are bounded in place
        act = {k: cel.bound_owned(v, cut=self.cut) for k, v in plain.items()}
        act["now"] = cel.timestamp(q.now_s)
        return act


def _status(f: Facts) -> str:
    status = f.call.get("status")
    return status if isinstance(status, str) else ""


def _commands(f: Facts) -> list[dict[str, Any]]:
    a = f.analysis
    if not a:
        return []
    return [_command_map(c, f.command_paths(c, cf), cf, refused, bool(ran))
            for c, cf, refused, ran in zip(a.commands, f.shell_facts, f.run_refusals, f.runs, strict=True)]


def _shell_map(f: Facts) -> dict[str, Any]:
    a = f.analysis
    return {
        "parse_ok": a.parse_ok if a else True,
        "dynamic": a.dynamic if a else False,
        "from_title": f.command_source == "title",
        "errors": list(a.errors) if a else [],
        "unknown": list(a.unknown) if a else [],
    }


#: ``tool.<name>`` -> its plain-Python value (a table, not a chain of comparisons: one
#: lookup per field per decision).
_TOOL_GETTERS: dict[str, Callable[[Facts], Any]] = {
    "id": lambda f: str(f.call.get("toolCallId", "")),
    "kind": lambda f: f.kind,
    "sent_kind": lambda f: f.sent_kind,
    "title": lambda f: f.title,
    "name": lambda f: f.name,
    "status": _status,
    "raw_input": lambda f: f.raw_input,
    "paths": lambda f: list(f.paths),
    "real_paths": lambda f: list(f.real_paths),
    "write_paths": lambda f: list(f.write_paths),
    "real_write_paths": lambda f: list(f.real_write_paths),
    "command": lambda f: f.command,
    "commands": _commands,
    "redirects": lambda f: [{"op": op, "target": t, "dynamic": dyn}
                            for op, _, dyn, targets in f.redirect_targets for t in targets],
    "assignments": lambda f: [{"name": k, "value": v, "allowed": not effects}
                              for (k, v), effects in zip(f.assignments, f._assignment_effects, strict=True)],
    "shell": _shell_map,
    "effects": lambda f: sorted(f.effects),
    "reads": lambda f: list(f._unions[0]),
    "writes": lambda f: list(f.write_paths) if f.kind != "execute" or f.analysis else [],
    "names": lambda f: list(_unique(c.name.lower() for c in f.analysis.commands)) if f.analysis else [],
    "deletes": lambda f: list(f._unions[1]),
    "discards": lambda f: list(f._unions[2]),
    "cwds": lambda f: list(f._unions[3]),
    "creates": lambda f: list(f._unions[4]),
    "execs": lambda f: list(f._unions[5]),
    "unknown": lambda f: list(f.unknown),
    "url": lambda f: f.url,
    "url_parts": lambda f: f.url_parts.as_dict(),
    "connection": lambda f: (f.query.connection or NO_CONNECTION).as_dict(),
}


def _base(name: str) -> str:
    return name.lower()


def _operands(c: shell.SimpleCommand) -> list[str]:
    """The words of a program the catalogue does not know that may name files: non-option
    arguments (all after ``--``) and path-like values of ``--opt=value`` options."""
    out: list[str] = []
    rest = False
    for a in c.args:
        if rest or not a.startswith("-") or a == "-":
            out.append(a)
        elif a == "--":
            rest = True
        elif "=" in a:
            value = a.split("=", 1)[1]
            if _path_like(value):
                out.append(value)
    return out


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


def _command_map(c: shell.SimpleCommand, paths_: list[str], cf: CommandFacts,
                 refused: tuple[str, ...] = (), runs: bool = False) -> dict[str, Any]:
    j = cf.judgement
    return {
        "global_args": _global_args(c),
        "paths": list(_unique([*paths_, *cf.reads, *cf.writes, *cf.chdirs])),
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
        "entry": j.entry,
        "effects": sorted(_run_effects(j.effects, refused, runs) | ({"unknown"} if cf.unknown else set())),
        "reads": list(cf.reads),
        "writes": list(cf.writes),
        "deletes": list(cf.deletes),
        "creates": list(cf.creates),
        "execs": [*j.execs, *refused],
        "cwds": list(cf.cwds),
        "unknown": list(cf.unknown),
    }


def _run_effects(effects: frozenset[str], refused: tuple[str, ...], runs: bool) -> frozenset[str]:
    """A command's effects with its runs judged (``Facts.run_refusals``): a file that is not
    the project's code is ``exec`` (code the analysis does not vouch for), else ``run``."""
    if refused:
        return (effects - {"run"}) | {"exec"}
    return effects | {"run"} if runs else effects


def _kind_of(c: shell.SimpleCommand, arg: str) -> int:
    """The word kind of ``arg`` (one of ``c.args``, or a value taken from one)."""
    for a, k in zip(c.args, c.arg_kinds, strict=False):
        if a == arg or arg in a:
            return k
    return LITERAL


#: rawInput keys whose string values are text, code or commands, never paths.
TEXT_KEYS: frozenset[str] = frozenset({
    "command", "cmd", "description", "content", "new_string", "old_string", "text", "patch",
    "diff", "unified_diff", "prompt", "query", "pattern", "regex", "glob", "title", "reason",
    "explanation", "message", "body", "input", "new_source", "old_source", "code", "todos",
    "plan", "url", "uri", "href", "type", "kind", "mode", "language",
})
_MAX_RAW_STRINGS = 512


def _raw_input_paths(raw: Mapping[str, Any], cut: list[str]) -> list[str]:
    """Every path-like string anywhere in ``rawInput``: values in nested lists and maps and
    map *keys* (Codex's ``changes``), except under :data:`TEXT_KEYS`; bounded."""
    found: list[str] = []
    stack: list[tuple[object, int]] = [(raw, 0)]
    seen = 0
    while stack:
        value, depth = stack.pop()
        seen += 1
        if seen > _MAX_RAW_STRINGS:
            cut.append(f"rawInput: more than {_MAX_RAW_STRINGS} values searched for paths")
            break
        if isinstance(value, str):
            if _raw_path_like(value):
                found.append(value)
        elif isinstance(value, Mapping) and depth < 8:
            for k, v in value.items():
                if isinstance(k, str) and _raw_path_like(k):
                    found.append(k)
                if not (isinstance(k, str) and k in TEXT_KEYS):
                    stack.append((v, depth + 1))
        elif isinstance(value, list) and depth < 8:
            stack.extend((v, depth + 1) for v in value[: cel.MAX_LIST_ITEMS])
    return found


def _raw_path_like(v: str) -> bool:
    return (0 < len(v) <= 4096 and "\n" not in v and "://" not in v
            and (v.startswith(("/", "~/", "./", "../")) or ("/" in v and " " not in v.strip())
                 or v in (".", "..", "~") or (v.startswith(".") and " " not in v)))


def _real_link(realpath: RealPath, p: str) -> str:
    """The real path of the entry ``p`` names itself, a symbolic link not followed (lstat
    semantics): its directory's real path joined with its last name."""
    head, _, base = p.rpartition("/")
    if not p.startswith("/") or p == UNKNOWN_PATH or base in ("", ".", ".."):
        return realpath(p)
    return realpath(head or "/").rstrip("/") + "/" + base


def _with_case_variants(found: tuple[str, ...], roots: Iterable[str]) -> tuple[str, ...]:
    """``found`` plus, for each path, its lower-case form below its root (case-insensitive
    file systems: ``.ENV`` is ``.env``), so that deny globs match every spelling."""
    extra: list[str] = []
    root_list = list(roots)
    for p in found:
        root = next((r for r in root_list if paths.within(p, r)), "")
        low = root + p[len(root) :].lower() if root else p.lower()
        if low != p:
            extra.append(low)
    return _unique([*found, *extra]) if extra else found


def _split_filter(value: str) -> list[str]:
    """A filter value's patterns: ``*.{ts,tsx}`` and ``a,b`` lists are each one pattern."""
    if "{" in value:
        return [value]  # braces are expanded when resolved
    return [v.strip() for v in value.split(",")] if "," in value else [value]


def _under(base: str, pattern: str) -> str:
    """Where a filter selects files below ``base`` (``**/`` and ``./`` lead-ins dropped)."""
    while pattern.startswith(("**/", "./")):
        pattern = pattern[3:] if pattern.startswith("**/") else pattern[2:]
    return pattern if pattern.startswith(("/", "~")) else base.rstrip("/") + "/" + pattern


def _lexical(found: tuple[str, ...]) -> tuple[str, ...]:
    """``found`` without the physical forms ``paths.physical`` added (a ``..`` component: a
    normalised path has none)."""
    if "/.." not in "".join(found):
        return found
    return tuple(p for p in found if "/../" not in p and not p.endswith("/.."))


def _add_path(found: list[str], value: object) -> None:
    if isinstance(value, str) and value:
        found.append(value)
