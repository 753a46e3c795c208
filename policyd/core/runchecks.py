"""What a shell command runs, checked against the filesystem: the part of
:class:`policyd.core.facts.Facts` that decides whether a file a command runs on purpose is
the project's code (``run``) or not (``exec``), and why the analysis cannot know what a call
runs (``tool.unknown``): links out of the roots below a directory a command follows, a
``#!`` line, a workspace ``PATH``, a venv's ``pyvenv.cfg``, a git directory in the workspace,
a linter config naming code outside the roots, a package runner's program not installed,
a read that never ends.

:class:`RunChecks` is a mixin of ``Facts`` (one object per decision): its properties read the
facts ``Facts`` computes (declared below for the type checker) and the lookups the I/O shell
passes in (``realpath``, ``file_kind``, ...: see ``Facts``); without a lookup (pure contexts,
policy examples) what it would look at is unknown or not looked at, as each method says.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from policyd.core import paths
from policyd.core.envvars import SHELL_BUILTINS, path_entries
from policyd.core.factbase import GLOB_CHARS as _GLOB_CHARS
from policyd.core.factbase import WRITE_REDIRECTS, once
from policyd.core.factbase import unique as _unique
from policyd.core.inline.model import unending
from policyd.core.inline.python import importable
from policyd.core.shell.effects import SYSTEM_DIRS
from policyd.core.shell.model import LITERAL
from policyd.core.shell.resolve import UNKNOWN_PATH, CommandFacts

if TYPE_CHECKING:
    from policyd.core import shell
    from policyd.core.facts import (
        FileKind,
        Importables,
        Interpreter,
        LinksBelow,
        ReadConfig,
        RealPath,
        SmallText,
        Worktrees,
    )
    from policyd.core.model import PermissionQuery

#: A path-like word in a config value: absolute, home-relative or climbing out.
_CONFIG_PATH = re.compile(r"""(?:^|[\s"',=\[:(])((?:/|~|\.\./)[^\s"',\]\[)]*)""")
#: Other names a program told to run a file may open in its place when the file is missing
#: or a directory (node: NAME.js, NAME.json, NAME.node, NAME/index.js; python DIR runs
#: DIR/__main__.py): each must lead inside the roots too.
RUN_CANDIDATES: tuple[str, ...] = (".js", ".json", ".node", ".mjs", ".cjs", "/index.js", "/index.json",
                                   "/index.node", "/index.mjs", "/index.cjs", "/package.json", "/__main__.py")


class RunChecks:
    """The run and unknown checks of :class:`policyd.core.facts.Facts` (a mixin: see the
    module doc)."""

    if TYPE_CHECKING:  # what Facts provides
        query: PermissionQuery
        _realpath: RealPath | None
        _file_kind: FileKind | None
        _importables: Importables | None
        _interpreter: Interpreter | None
        _links_below: LinksBelow | None
        _read_config: ReadConfig | None
        _small_text: SmallText | None
        _worktrees: Worktrees | None

        @property
        def analysis(self) -> shell.ShellAnalysis | None: ...
        @property
        def shell_facts(self) -> tuple[CommandFacts, ...]: ...
        @property
        def _concerns(self) -> frozenset[str]: ...
        @property
        def _all_cwds(self) -> tuple[str, ...]: ...
        @property
        def write_paths(self) -> tuple[str, ...]: ...
        @property
        def real_write_paths(self) -> tuple[str, ...]: ...
        @property
        def redirect_targets(self) -> tuple[tuple[str, str, bool, tuple[str, ...]], ...]: ...
        @property
        def assignments(self) -> tuple[tuple[str, str], ...]: ...
        def _resolve_in(self, word: str, kind: int, cwds: Iterable[str]) -> list[str]: ...

    @once
    def run_refusals(self) -> tuple[tuple[str, ...], ...]:
        """Per command, why a file it runs on purpose (:attr:`runs`: ``python FILE``,
        ``bash FILE``, ``./build/app``, a name found through a workspace ``PATH``) is not the
        project's code: it lies outside the session roots (its real path too, and every name
        the program may open in its place: see :data:`RUN_CANDIDATES`), under ``.git``, or
        the same call writes, moves, links or fetches it (``echo ... > p.sh && bash p.sh``;
        a write of an unknown path, or a download to a name the command line does not give,
        counts). Such a command is ``exec`` instead of ``run``
        (code the analysis does not vouch for, as before issue 32: the sandboxed rule may
        still allow an interpreter's), and the reasons are listed in its ``execs``; what
        :attr:`run_unknowns` finds refuses it too, and so does what :attr:`code_refusals`
        finds (proven inline code that imports the project's files is not proven). Empty
        tuples: each run is project code (effect ``run``)."""
        return tuple((*r, *u, *c, *b) for r, u, c, b in zip(self._run_checks[0], self.run_unknowns,
                                                             self.code_refusals, self.code_file_refusals,
                                                             strict=True))

    @once
    def code_file_refusals(self) -> tuple[tuple[str, ...], ...]:
        """Per command, why the project files it runs or loads as code (``Judgement.code_files``:
        every file for a build or test command — make, npm test, pytest, cargo, go test; the
        config a linter reads plugins and hooks from, ``.pylintrc``) are not the project's code:
        another command of the same call (before it, in a loop around it or beside it in the
        background; not one reading its output) writes one inside the session roots, or writes
        a path the command line does not name (a download): ``printf ... >
        Makefile && make``, ``echo ... > conftest.py && pytest``, ``npm pkg set scripts.test=...
        && npm test`` are the ``run`` refusal of ``echo ... > p.sh && bash p.sh`` for a runner
        of the whole project. Writes of build and test commands themselves (``cmake -B build``
        then ``cmake --build build``), creations (``mkdir -p build``) and deletions do not count."""
        a = self.analysis
        cfs = self.shell_facts
        if a is None or "code_files" not in self._concerns:
            return tuple(() for _ in cfs)
        roots = list(self.query.session.roots)
        before: list[list[str]] = [[] for _ in cfs]  # writes of command j, in order
        for j, cf in enumerate(cfs):
            jd = cf.judgement
            if {"build", "test"} & jd.effects:
                continue
            gone = set(cf.deletes) | set(cf.creates)
            before[j].extend(w for w in cf.writes if w not in gone)
            if {"write", "network"} <= jd.effects and not cf.writes:
                before[j].append(UNKNOWN_PATH)  # a download whose file the command line does not name
        loose: list[str] = []  # redirects of a compound statement: order not known
        for r, (op, raw, _, targets) in zip(a.redirects, self.redirect_targets, strict=True):
            if not raw or op.lstrip("0123456789") not in WRITE_REDIRECTS:
                continue
            if 0 <= r.command < len(before):
                if not {"build", "test"} & cfs[r.command].judgement.effects:  # `make > log`: its output
                    before[r.command].extend(targets)
            else:
                loose.extend(targets)
        out: list[tuple[str, ...]] = []
        for i, (c, cf) in enumerate(zip(a.commands, cfs, strict=True)):
            globs = cf.judgement.code_files
            why = ""
            if not globs:
                out.append(())
                continue
            # its output's readers (`make | tee log`) write what it prints; any other command may
            # run before it, in a loop around it (`for i in 1 2; do make; echo .. > Makefile;
            # done`) or beside it (`make & echo .. > scripts/gen.sh`)
            downstream = {i}
            for j, d in enumerate(a.commands):
                if d.stdin_from in downstream:
                    downstream.add(j)
            for w in [*(w for j, ws in enumerate(before) if j not in downstream for w in ws), *loose]:
                name = w.rsplit("/", 1)[-1]
                if w == UNKNOWN_PATH or (any(paths.within(w, r) for r in roots)
                                         and any(fnmatch.fnmatchcase(name, g) for g in globs)):
                    why = f"{c.name}: runs the project's files as code, and the same command writes {w}"
                    break
            out.append((why,) if why else ())
        return tuple(out)

    @property
    def code_refusals(self) -> tuple[tuple[str, ...], ...]:
        """Per command, why inline code its analyzer proved (``python -c``, ``python3 -``:
        ``Judgement.imports_cwd``) is not proven after all: Python imports from the working
        directory first, and the standard library imports modules lazily (``json`` imports
        ``re``, ``"x".encode("idna")`` imports ``stringprep``, a traceback imports
        ``linecache``), so an entry there named like one (``json.py``, ``re/``, a ``.so``:
        ``inline.python.importable``) is the project's code run by the snippet, which the proof
        does not cover; so is one the same call may create (a write path of such a name in the
        directory, of the directory or one above it, or of an unknown path). Such a command keeps the
        option's effect ``exec``, as an unproven snippet does (never ``run``: the snippet did
        not name that file). ``python -m MODULE`` imports from there too: an entry the same
        call may create refuses it as well (``echo … > json.py && python3 -m json.tool f``),
        one already there is the project's code (as under pytest)."""
        return self._code_checks[0]

    @once
    def _code_checks(self) -> tuple[tuple[tuple[str, ...], ...], tuple[tuple[str, ...], ...]]:
        """(:attr:`code_refusals`, why each command is unknown: a directory too big to list)."""
        a = self.analysis
        if a is None or "imports" not in self._concerns:
            empty = tuple(() for _ in self.shell_facts)
            return empty, empty
        written = [*self.write_paths, *self.real_write_paths]
        if any({"write", "network"} <= cf.judgement.effects and not cf.writes for cf in self.shell_facts):
            written.append(UNKNOWN_PATH)  # a download whose file the command line does not name
        refusals: list[tuple[str, ...]] = []
        unknown: list[tuple[str, ...]] = []
        for c, cf in zip(a.commands, self.shell_facts, strict=True):
            why: list[str] = []
            odd: list[str] = []
            proven = list(cf.cwds) if cf.judgement.imports_cwd else []
            for d in [*proven, *(self._module_dirs(cf) if cf.judgement.module_dirs else ())]:
                if not d.startswith("/") or d == UNKNOWN_PATH:
                    continue  # unknown already (_imports_out)
                if _GLOB_CHARS.search(d):
                    odd.append(f"{c.name}: imports modules from {d}, a directory a pattern names")
                    continue
                for w in written:
                    first = w[len(d.rstrip("/")) + 1:].split("/")[0] if paths.within(w, d) and w != d else ""
                    if w == UNKNOWN_PATH or paths.within(d, w) or importable(first) or _GLOB_CHARS.search(first):
                        why.append(f"{c.name}: imports from {d}, where the same command writes {w}")
                        break
                if self._importables is None or cf.judgement.imports_cwd != "code" or d not in proven:
                    continue  # python -m X, python FILE: the project's modules are its code
                found = self._importables(d)
                if found is None:
                    odd.append(f"{c.name}: imports modules from {d}, too big to list")
                    continue
                why.extend(f"{c.name}: imports {p}, the project's code, which the snippet's proof does not cover"
                           for p in found)
            refusals.append(tuple(_unique(why)))
            unknown.append(tuple(_unique(odd)))
        return tuple(refusals), tuple(unknown)

    @once
    def run_unknowns(self) -> tuple[tuple[str, ...], ...]:
        """Per command, why what it runs is not known (these make the call unknown): the file
        is a directory or no regular file (``python3 tool``, ``node app``: the program runs
        what it holds, ``__main__.pyc``, package.json's ``main``), a name the program
        searches for elsewhere is no regular file as written (``bash zcat``: bash searches
        ``PATH``; ``node app`` missing, app.js a directory), or a program under a workspace
        ``PATH`` is no workspace file (:meth:`path_lookups`). Without a file-kind lookup
        (pure contexts) a searched name and a program under a workspace ``PATH`` are unknown,
        and what a named file is is not looked at (as links below are not scanned)."""
        return tuple((*u, *(f"{c.name}: {w}" for w in pw)) for u, c, (_, pw) in zip(
            self._run_checks[1], self.analysis.commands if self.analysis else (), self.path_lookups, strict=True))

    @once
    def _run_checks(self) -> tuple[tuple[tuple[str, ...], ...], tuple[tuple[str, ...], ...]]:
        a = self.analysis
        runs = self.runs
        if a is None or not any(runs):
            empty = tuple(() for _ in self.shell_facts)
            return empty, empty
        roots = list(self.query.session.roots)
        real_roots = ([*roots, *(self._realpath(r) for r in self.query.session.raw_roots)]
                      if self._realpath is not None else roots)
        written = [*self.write_paths, *self.real_write_paths]
        if any({"write", "network"} <= cf.judgement.effects and not cf.writes for cf in self.shell_facts):
            written.append(UNKNOWN_PATH)  # a download whose file the command line does not name (wget URL, curl -O)
        out: list[tuple[str, ...]] = []
        unknown: list[tuple[str, ...]] = []
        for c, cf, ran, (found, _) in zip(a.commands, self.shell_facts, runs, self.path_lookups, strict=True):
            why: list[str] = []
            odd: list[str] = []
            for p in ran:
                if why:
                    break
                if p == UNKNOWN_PATH or not any(paths.within(p, r) and p != r for r in roots):
                    why.append(f"{c.name}: runs {p}, outside the session roots")
                    continue
                odd.extend(self._run_kind(c.name, p, p in cf.must_exist))
                if p in found or (c.argv and p in self._resolve_in(c.argv[0], LITERAL, cf.cwds[:1])):
                    odd.extend(self._interpreter_unknown(c.name, p, roots, real_roots))  # the kernel runs it
                reals = [p, *(p + s for s in RUN_CANDIDATES)]
                if self._realpath is not None:
                    reals = [self._realpath(x) for x in reals]
                away = next((r for r in reals if not any(paths.within(r, root) for root in real_roots)), None)
                if away is not None:
                    why.append(f"{c.name}: runs {p}, which leads to {away}, outside the session roots")
                elif any("/.git/" in x + "/" for x in (p, reals[0])):
                    why.append(f"{c.name}: runs {p}, inside a .git directory")
                elif any(w == UNKNOWN_PATH or paths.within(x, w) for w in written for x in (p, reals[0])):
                    why.append(f"{c.name}: runs {p}, which the same command writes")
            out.append(tuple(why))
            unknown.append(tuple(_unique(odd)))
        return tuple(out), tuple(unknown)

    def _interpreter_unknown(self, name: str, p: str, roots: list[str], real_roots: list[str],
                             depth: int = 0) -> list[str]:
        """Why the program the kernel runs for the workspace file ``p`` (run as the command
        itself: ``./tool``) is not known: its ``#!`` line (or ELF loader) names a program that
        is neither the system's (``/usr/bin/python3``, ``/usr/bin/env NAME``) nor a file inside
        the roots whose real path is inside them or the system's (and whose own interpreter
        passes: Linux runs a script as another script's interpreter, four deep); ``env -S`` (a
        command line); an argument of more than option characters; or the head cannot be read."""
        if self._interpreter is None or (self._file_kind is not None and self._file_kind(p) != "file"):
            return []
        if depth > 4:
            return [f"{name}: runs {p} through more than four interpreter lines"]
        line = self._interpreter(p)
        if line == "":
            return []
        parts = line.split(None, 1) if line else []
        prog, arg = (parts[0], parts[1] if len(parts) > 1 else "") if parts else ("", "")
        why = ""
        if not prog.startswith("/"):
            why = "cannot be read" if line is None else "is no absolute path"
        elif prog.rsplit("/", 1)[-1] == "env" and prog.rsplit("/", 1)[0] in SYSTEM_DIRS:
            if not re.fullmatch(r"[\w.+-]+", arg):
                why = f"runs {arg!r} through env (a name looked up in PATH, or a command line: -S)"
        elif not re.fullmatch(r"(-[\w=.-]*)?", arg):
            why = f"gives it {arg!r}"
        else:
            real = self._realpath(prog) if self._realpath is not None else prog
            system = prog.rsplit("/", 1)[0] in SYSTEM_DIRS or prog.startswith(("/lib/", "/lib64/", "/usr/lib/"))
            inside = any(paths.within(prog, r) and prog != r for r in roots)
            if not (system or inside) or not (
                    any(paths.within(real, r) for r in real_roots) or real.rsplit("/", 1)[0] in SYSTEM_DIRS
                    or real.startswith(("/lib/", "/lib64/", "/usr/lib/", "/usr/local/lib/"))):
                why = "is not the system's program nor a file inside the session roots"
            elif inside and not system:
                return self._interpreter_unknown(name, prog, roots, real_roots, depth + 1)
        return [f"{name}: runs {p}, whose interpreter line {line!r} {why}"] if why else []

    def _run_kind(self, name: str, p: str, searched: bool) -> list[str]:
        """Why running ``p`` is unknown by what it is: a directory or no regular file (the
        program runs something it holds), missing where the program then searches
        (``searched``: ``bash NAME``), or a name the program may open in its place
        (:data:`RUN_CANDIDATES`) that is a directory or no regular file."""
        if self._file_kind is None:
            return [f"{name}: runs {p}: whether it is a file is not known here, and {name} searches for it"
                    ] if searched else []
        kind = self._file_kind(p)
        if kind == "file":
            return []
        if kind == "linked":
            return [f"{name}: runs {p}, a file with more than one hard link: its content is also that of "
                    "a name anywhere on the file system (ln /tmp/x.py hl.py)"]
        if kind != "missing":
            return [f"{name}: runs {p}, which is {'a directory' if kind == 'dir' else 'no regular file'}: "
                    f"{name} runs what it holds or leads to"]
        if searched:
            return [f"{name}: runs {p}, which is no file here: {name} then searches PATH for it"]
        odd = next((x for x in (p + s for s in RUN_CANDIDATES) if self._file_kind(x) not in ("missing", "file")), None)
        return [f"{name}: runs {p}, missing, and {odd} it may open instead is no regular file"] if odd else []

    @once
    def runs(self) -> tuple[tuple[str, ...], ...]:
        """Per command, the files of code it runs on purpose (``CommandFacts.runs``) and the
        workspace file its name resolves to through a ``PATH`` the text sets
        (:meth:`path_dirs`): ``export PATH="$PWD/node_modules/.bin:$PATH" && jest`` runs
        ``node_modules/.bin/jest`` when that is a file (builtins and names with ``/`` are not
        looked up; see :meth:`path_lookups` for a name that is no workspace file)."""
        return tuple(_unique([*cf.runs, *e]) for cf, (e, _) in zip(self.shell_facts, self.path_lookups, strict=True))

    @once
    def path_lookups(self) -> tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]:
        """Per command in the scope of a ``PATH`` assignment of workspace directories, the
        workspace files its name may be (``runs``) and why it is unknown. A name that is an
        existing file in one of those directories runs it (the first one found); any other
        program is unknown: it is a program outside the workspace that may run others by name
        (tar runs gzip, make runs cc, npm runs node), and those names reach the workspace's
        directories first (``bin/gzip -> /tmp/evil.sh``). Without a file-kind lookup (pure
        contexts: policy examples) every such program is unknown."""
        a = self.analysis
        none: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
        if a is None or not any(name == "PATH" for name, _ in a.assignments):
            return tuple(none for _ in self.shell_facts)
        extra: list[list[str]] = [[] for _ in self.shell_facts]
        why: list[list[str]] = [[] for _ in self.shell_facts]
        scopes = a.assignment_scopes
        for i, (name, value) in enumerate(a.assignments):
            dirs = self.path_dirs(value) if name == "PATH" else None
            if not dirs:
                continue
            lo, hi = scopes[i] if i < len(scopes) else (0, -1)
            for k in range(lo, len(extra) if hi < 0 else min(hi, len(extra))):
                c = a.commands[k]
                head = c.argv[0] if c.argv else ""
                if not head or "/" in head or c.name.lower() in SHELL_BUILTINS:
                    continue
                found = [f"{d}/{c.name}" for d in dirs]
                if self._file_kind is None:
                    why[k].append(f"may be a file of the workspace directories PATH names ({', '.join(dirs)}) "
                                  "or a program from elsewhere: not known here")
                    continue
                kinds = [self._file_kind(f) for f in found]
                first = next((f for f, kd in zip(found, kinds, strict=True) if kd != "missing"), None)
                if first is not None and self._file_kind(first) == "file":
                    extra[k].append(first)
                elif first is not None:
                    why[k].append(f"runs {first} through PATH, which is no regular file")
                else:
                    why[k].append(f"is no file of the workspace directories PATH names ({', '.join(dirs)}): "
                                  "a program from elsewhere, which may run others by name from them")
        return tuple((_unique(e), _unique(w)) for e, w in zip(extra, why, strict=True))

    def path_dirs(self, value: str) -> tuple[str, ...] | None:
        """The directories a ``PATH`` assignment of ``value`` adds, resolved (``$PWD`` in every
        directory a command of the text may run in), when each lies inside the session roots
        (its real path too) and not under ``.git``; None otherwise (the assignment is then
        judged as any other: ``envvars.assignment_effects``)."""
        entries = path_entries(value)
        if entries is None or (any(e.startswith("$PWD/") for e in entries)
                               and any(name == "PWD" for name, _ in self.assignments)):
            return None  # `PWD=/tmp; export PATH=$PWD/bin:$PATH`: $PWD is no longer where it runs
        roots = list(self.query.session.roots)
        real_roots = ([*roots, *(self._realpath(r) for r in self.query.session.raw_roots)]
                      if self._realpath is not None else roots)
        dirs: list[str] = []
        for e in entries:
            if e.startswith("$PWD/"):
                dirs.extend(paths.resolve(e[5:], d, self.query.home) for d in self._all_cwds)
            else:
                dirs.append(paths.resolve(e, "/", self.query.home))
        for d in dirs:
            real = self._realpath(d) if self._realpath is not None else d
            if (not any(paths.within(d, r) for r in roots) or not any(paths.within(real, r) for r in real_roots)
                    or "/.git/" in d + "/" or "/.git/" in real + "/"):
                return None
        return _unique(dirs)

    def _links_out(self) -> list[str]:
        """Why a command that follows symbolic links below its directories is unknown: a link
        there leads out of the session roots, or the tree is too big to scan."""
        if self._links_below is None or not {"follows", "imports"} & self._concerns:
            return []
        roots = [*self.query.session.roots, *(self._realpath(r) for r in self.query.session.raw_roots
                                               if self._realpath is not None)]
        out: list[str] = []
        for c, cf in zip(self.analysis.commands if self.analysis else (), self.shell_facts, strict=True):
            if cf.judgement.imports_cwd:
                out.extend(self._imports_out(c.name, cf.cwds, roots))
            if cf.judgement.module_dirs:
                out.extend(self._imports_out(c.name, self._module_dirs(cf), roots))
            if not cf.judgement.follows:
                continue
            for p in _unique([*cf.reads, *cf.writes]) or cf.cwds:  # `rg -L x`: where it runs
                if not p.startswith("/") or p == UNKNOWN_PATH or _GLOB_CHARS.search(p):
                    continue
                away = self._leads_out(p, p not in cf.writes and not cf.judgement.follows_writes, False, roots)
                if away is None:
                    out.append(f"{c.name}: follows symbolic links below {p}, too big to scan")
                elif away:
                    out.append(f"{c.name}: follows symbolic links below {p}: one leads to {away}, "
                               "outside the session roots")
        return out

    def _leads_out(self, d: str, readable_only: bool, importable_only: bool, roots: Iterable[str]) -> str | None:
        """Where the first symbolic link below ``d`` that leaves ``roots`` leads (``links_below``'s
        filters); "" when none does; None when the tree is too big to scan."""
        assert self._links_below is not None
        targets = self._links_below(d, readable_only, importable_only)
        if targets is None:
            return None
        roots = list(roots)
        return next((t for t in targets if not any(paths.within(t, r) for r in roots)), "")

    def _venv_unknowns(self) -> list[str]:
        """Why running a virtualenv's file (``source .venv/bin/activate``, ``.venv/bin/python
        x.py``) is unknown: its ``pyvenv.cfg`` ``home`` names where Python takes its standard
        library from, and that lies where the agent writes (the roots, ``/tmp``): the venv's
        interpreter then runs ``encodings/__init__.py`` from there before any script (rt4-33).
        A ``pyvenv.cfg`` that cannot be read is unknown too. Without ``small_text`` and
        ``file_kind`` (pure contexts) nothing is read."""
        if self._small_text is None or self._file_kind is None or self.analysis is None or not any(self.runs):
            return []
        roots = [*self.query.session.roots, "/tmp", "/var/tmp"]
        out: list[str] = []
        for c, ran in zip(self.analysis.commands, self.runs, strict=True):
            for r in ran:
                cfg = posixpath.dirname(posixpath.dirname(r)) + "/pyvenv.cfg"
                if not r.startswith("/") or r == UNKNOWN_PATH or self._file_kind(cfg) != "file":
                    continue
                text = self._small_text(cfg)
                homes = [] if text is None else [v.strip() for k, _, v in (line.partition("=") for line in
                                                                            text.splitlines())
                                                  if k.strip().lower() == "home"]
                if text is None:
                    out.append(f"{c.name}: runs {r}, whose {cfg} cannot be read")
                for home in homes:
                    real = self._realpath(home) if self._realpath is not None and home.startswith("/") else home
                    if not home.startswith("/") or any(paths.within(x, root) for x in (home, real) for root in roots):
                        out.append(f"{c.name}: runs {r}, whose {cfg} takes Python from {home}, "
                                   "where the agent writes")
        return out

    def _worktree_unknowns(self) -> list[str]:
        """Why ``git worktree remove/move NAME`` is unknown: git takes NAME as the last path
        component(s) of a registered worktree before it takes it as a path, and one so named
        lies outside the session roots (``remove --force otherwt`` deletes ``../otherwt``);
        or the worktrees cannot be read (always, without ``worktrees``: pure contexts)."""
        a = self.analysis
        if a is None or "worktrees" not in self._concerns:
            return []
        out: list[str] = []
        for c, cf in zip(a.commands, self.shell_facts, strict=True):
            for name in cf.judgement.worktrees:
                parts = [p for p in name.split("/") if p]
                for d in cf.cwds:
                    found = self._worktrees(d) if self._worktrees is not None and d.startswith("/") else None
                    if not found:  # no repository found: what git would do is not known either
                        out.append(f"{c.name}: names worktree {name!r}, whose registered worktrees cannot be read")
                        continue
                    away = [w for w in found if parts and w.split("/")[-len(parts):] == parts
                            and not any(paths.within(w, r) for r in self.query.session.roots)]
                    if away:
                        out.append(f"{c.name}: {name!r} names the worktree {away[0]}, outside the session roots")
        return out

    def _foreign_git_dirs(self) -> list[str]:
        """Why a git command is unknown: it runs in (or below) a workspace directory git
        takes for a git directory (``HEAD``, ``objects/``, ``refs/``: git-rev-parse(1),
        discovery checks ``DIR/.git`` then ``DIR`` itself at each level up), or one the same
        call makes so (writes ``DIR/HEAD``, ``DIR/config``, ``DIR/objects/...``). Its
        ``config`` and ``info/attributes`` are then the workspace's data, and git runs what
        they name (``diff.external``, a ``textconv``, ``core.fsmonitor``): ``git -C evil log -p``.
        Without a file-kind lookup only the same call's writes are looked at."""
        a = self.analysis
        if a is None or "git" not in self._concerns:
            return []
        written = [w for w in (*self.write_paths, *self.real_write_paths) if w.startswith("/")]
        roots = self.query.session.roots
        out: list[str] = []
        for c, cf in zip(a.commands, self.shell_facts, strict=True):
            if cf.judgement.entry.split(" ", 1)[0] != "git":
                continue
            for d in cf.cwds:
                if not d.startswith("/") or d == UNKNOWN_PATH:
                    continue
                why = self._git_dir_at(d, written, roots)
                if why:
                    out.append(f"{c.name}: runs in {d}, {why}")
        return list(_unique(out))

    def _git_dir_at(self, d: str, written: list[str], roots: Iterable[str]) -> str:
        """Why git run in ``d`` would use a workspace directory as its git directory ("" when
        it would not): ``d`` and each directory above it inside a root, up to the first that
        holds ``.git``."""
        roots = [r for r in roots if paths.within(d, r)]
        level = d
        while roots:
            if self._file_kind is not None and self._file_kind(level + "/.git") != "missing":
                return ""
            if any(w in (f"{level}/HEAD", f"{level}/config", f"{level}/commondir", f"{level}/packed-refs")
                   or any(paths.within(w, f"{level}/{n}") for n in ("objects", "refs", "hooks", "info"))
                   for w in written):
                return f"where the same call writes the files of a git directory ({level}): its config runs programs"
            if self._file_kind is not None and (self._file_kind(level + "/HEAD") == "file"
                                                and self._file_kind(level + "/objects") == "dir"
                                                and self._file_kind(level + "/refs") == "dir"):
                return f"below {level}, a git directory in the workspace: its config runs programs"
            if any(level == r for r in roots) or "/" not in level.rstrip("/"):
                return ""
            level = level.rsplit("/", 1)[0] or "/"
        return ""

    def _code_reads_unending(self) -> list[str]:
        """Why a read never ends: a file proven inline code reads is, through links, a device
        or kernel file (``open('z')`` with ``z -> /dev/zero`` never ends); a file any command
        reads (an operand or a ``<`` redirect) is not such a file as written but is one through
        links (``cat z`` with ``z -> /dev/zero``: the literal device names are judged by the
        endless check); a file read is no regular file nor directory (a FIFO whose writer
        never comes: ``mkfifo p`` by an earlier call), or is a FIFO ``mkfifo`` makes in the
        same call (``mkfifo p && cat p``)."""
        a = self.analysis
        if a is None:
            return []
        fifos = ({p for cf in self.shell_facts if cf.judgement.entry == "mkfifo" for p in cf.writes}
                 if "mkfifo" in self._concerns else set())
        if self._realpath is None and self._file_kind is None and not fifos:
            return []
        out: list[str] = []
        redirected = [(-1 if r.command < 0 else r.command, t) for r, (op, raw, _, targets) in
                      zip(a.redirects, self.redirect_targets, strict=True)
                      if raw and op.lstrip("0123456789") in ("<", "<>") for t in targets] if a.redirects else []
        for i, (c, cf) in enumerate(zip(a.commands, self.shell_facts, strict=True)):
            for p in [*cf.reads, *(t for k, t in redirected if k == i)] if redirected else cf.reads:
                if not p.startswith("/") or p == UNKNOWN_PATH or _GLOB_CHARS.search(p):
                    continue
                if p in fifos:
                    out.append(f"{c.name}: reads {p}, a FIFO the same command makes (it may never be written)")
                    continue
                real = self._realpath(p) if self._realpath is not None else p
                if unending(real) and (cf.judgement.code_reads or not unending(p)):
                    out.append(f"{c.name}: reads {p}, a device or kernel file ({real})")
                elif (not unending(p) and self._file_kind is not None
                      and (cf.judgement.code_reads or cf.judgement.entry) and self._file_kind(p) == "other"):
                    out.append(f"{c.name}: reads {p}, no regular file (a FIFO may never be written)")
        for k, p in redirected:  # a compound statement's input (`while read l; do ...; done < p`)
            if k >= 0 or not p.startswith("/") or p == UNKNOWN_PATH or _GLOB_CHARS.search(p) or unending(p):
                continue
            real = self._realpath(p) if self._realpath is not None else p
            if p in fifos:
                out.append(f"reads {p}, a FIFO the same command makes (it may never be written)")
            elif unending(real):
                out.append(f"reads {p}, a device or kernel file ({real})")
            elif self._file_kind is not None and self._file_kind(p) == "other":
                out.append(f"reads {p}, no regular file (a FIFO may never be written)")
        return list(_unique(out))

    def _configs_out(self) -> list[str]:
        """Why a tool that loads code its config names (``Judgement.configs``: mypy.ini's
        ``plugins``, .pylintrc's ``init-hook``/``load-plugins``, flake8's local-plugin
        ``paths``) is unknown: a value of one of those keys, in a config where it runs, names a
        path outside the session roots (``plugins = /tmp/mp.py``, ``~/x``, ``../../x``), or the
        config cannot be read whole."""
        if self._read_config is None or "configs" not in self._concerns:
            return []
        out: list[str] = []
        roots = list(self.query.session.roots)
        for c, cf in zip(self.analysis.commands if self.analysis else (), self.shell_facts, strict=True):
            names, keys = cf.judgement.configs
            if not keys:
                continue
            key_line = re.compile(r"\s*[\"']?(" + "|".join(re.escape(k) for k in keys) + r")[\"']?\s*[=:]", re.I)
            for d in cf.cwds:
                if not d.startswith("/") or d == UNKNOWN_PATH:
                    continue
                for name in names:
                    path = f"{d.rstrip('/')}/{name}"
                    text = self._read_config(path)
                    if text is None:
                        out.append(f"{c.name}: its config {path} cannot be read whole")
                        continue
                    for value in _config_values(text, key_line):
                        for m in _CONFIG_PATH.finditer(value):
                            target = paths.resolve(m.group(1), d, self.query.home)
                            if not any(paths.within(target, r) for r in roots):
                                out.append(f"{c.name}: its config {path} names {m.group(1)}, outside the "
                                           "session roots, as code it loads")
        return list(_unique(out))

    def _not_installed(self) -> list[str]:
        """Why a package runner's program is unknown: it is not installed in the project
        (``node_modules/.bin/NAME`` in a directory it runs in or one above it, inside the
        roots: where npm exec looks first), so the runner fetches the registry package of that
        name, which is not the catalogue's program (``npx tsc`` without typescript fetches the
        npm package ``tsc``: another author's code). Without a file-kind lookup: unknown."""
        commands = self.analysis.commands if self.analysis else ()
        if "installed" not in self._concerns:
            return []  # the common case: no package runner (the real roots cost a lookup each)
        out: list[str] = []
        roots = list(self.query.session.roots)
        real_roots = ([*roots, *(self._realpath(r) for r in self.query.session.raw_roots)]
                      if self._realpath is not None else roots)
        kind = self._file_kind
        for c, cf in zip(commands, self.shell_facts, strict=True):
            for name in cf.judgement.installed:
                found = False
                for d in cf.cwds:
                    while kind is not None and not found and any(paths.within(d, r) for r in roots):
                        binary = f"{d.rstrip('/')}/node_modules/.bin/{name}"
                        real = self._realpath(binary) if self._realpath is not None else binary
                        found = kind(binary) in ("file", "linked") and any(paths.within(real, r) for r in real_roots)
                        if d in roots or d == "/":
                            break
                        d = d.rsplit("/", 1)[0] or "/"
                if not found:
                    out.append(f"{c.wrapper} {name}: not installed in the project (node_modules/.bin/{name}): "
                               f"it fetches the registry package {name!r}, which is not the catalogue's program")
        return out

    def _module_dirs(self, cf: CommandFacts) -> list[str]:
        """``Judgement.module_dirs`` resolved where the command runs."""
        return list(_unique(r for w, k in cf.judgement.module_dirs for r in self._resolve_in(w, k, cf.cwds)))

    def _imports_out(self, name: str, cwds: Iterable[str], roots: Iterable[str]) -> list[str]:
        """Why ``python -c`` code is unknown: an entry its working directory holds that Python
        would import (``json.py``, ``json/``) links out of the session roots."""
        assert self._links_below is not None
        out: list[str] = []
        roots = list(roots)
        for d in cwds:
            if not d.startswith("/") or d == UNKNOWN_PATH:
                out.append(f"{name}: imports modules from a directory known only at run time")
                continue
            away = self._leads_out(d, False, True, roots)  # dangling too: the call may create the target
            if away is None:
                out.append(f"{name}: imports modules from {d}, too big to scan")
            elif away:
                out.append(f"{name}: imports modules from {d}, where one leads to {away}, "
                           "outside the session roots")
        return out


def _config_values(text: str, key_line: re.Pattern[str]) -> list[str]:
    """The values of the keys ``key_line`` matches in an ini or TOML config, with their
    continuation lines (indented lines after an ini key; a TOML array up to its ``]``)."""
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not key_line.match(line):
            continue
        value = [line.split("=", 1)[-1] if "=" in line else line.split(":", 1)[-1]]
        while i < len(lines) and (lines[i][:1] in (" ", "\t") or ("[" in value[0] and "]" not in "".join(value))):
            value.append(lines[i])
            i += 1
        out.append("\n".join(value))
    return out
