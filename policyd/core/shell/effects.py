"""What each command does, from the catalogue (pure): effects, reads, writes, execs.

:func:`judge` parses one :class:`SimpleCommand`'s arguments the way its catalogue entry says
the tool parses them (short clusters, attached values, ``--opt=value``, GNU long-option
abbreviations, ``--``, subcommands) and collects the effects of the entry, of each option and
of each operand slot. **A program, subcommand or option the catalogue does not know gives
effect ``unknown``** with a reason. Paths are returned as raw words with their kind
(literal, glob pattern, expansion); resolving them against the command's directory is the
facts layer's job.

Handlers (``handler`` in an entry) judge what data cannot say: wrappers and shells whose
nested command the walk lists itself, ``find`` expressions, ``git -c``, ``make VAR=$(...)``,
sed/awk/jq script languages, ``test -v``, ``chmod -x`` modes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from policyd.core.inline import CODE_LANGUAGES, judge_code
from policyd.core.shell.catalogue import Catalogue, Operand, Option, Program, slots_for, takes
from policyd.core.shell.model import EXPANSION, FILTER, LITERAL, PATTERN, SimpleCommand, record
from policyd.core.shell.scripts import judge_script
from policyd.core.shell.wrappers import unwraps

#: Directories whose programs are the catalogue's (``/usr/bin/rm`` is rm; ``./ls`` is not).
SYSTEM_DIRS: frozenset[str] = frozenset({
    "/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin",
})
#: Wrappers that never end on their own (a headless agent would wait forever).
ENDLESS: frozenset[str] = frozenset({"watch", "yes"})
#: A word and its kind (model.LITERAL / PATTERN / EXPANSION).
Word = tuple[str, int]

#: Build targets that install (GNU coding standards: install, install-strip, uninstall;
#: CMake's install/strip, install/local; Gradle's publishToMavenLocal).
_INSTALL_TARGET = re.compile(r"(un)?install([-/_:.].*)?|.*[-_:]install|publishToMavenLocal", re.I)
#: git subcommands whose pathspec operands lose uncommitted work (or untracked files).
_GIT_DISCARDS = frozenset({"checkout", "restore", "rm", "clean"})
_GLOB_CHARS = re.compile(r"[*?\[]")
#: The characters of a file named on purpose (``scripts/gen_v2.py``, ``build/app-1.0+x.jar``).
_PLAIN_PATH = re.compile(r"[\w.,/+@%:=-]+")
#: A program word that is no literal path: an expansion, a substitution, a glob, braces, quoting.
_NOT_LITERAL = re.compile(r"[$`*?\[{}\\'\"]")
_RISKY_VALUE_ROLES = frozenset({"exec", "shell", "unknown", "chdir", "url", "env", "git-config"})
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CHMOD_MODE = re.compile(r"[-+=][rwxXstugo,+=-]*")
_NUMERIC = re.compile(r"-[0-9]+")
#: git -c keys that only change presentation or identity (anything else: unknown).
_GIT_SAFE_CONFIG = re.compile(
    r"(color\..*|core\.quotepath|core\.autocrlf|core\.safecrlf|user\.(name|email)|advice\..*|"
    r"init\.defaultbranch|log\.(date|decorate|abbrevcommit)|diff\.(renames|algorithm|"
    r"colormoved|mnemonicprefix|noprefix)|pager\.[a-z-]+=(false|0)|column\.ui|"
    r"commit\.gpgsign=false|tag\.gpgsign=false|gc\.auto=0|safe\.directory)",
    re.I,
)


@record
class Judgement:
    """The catalogue's verdict on one command.

    ``entry``: the deciding entry (``"git status"``; ``""`` when the program is unknown);
    ``effects``: effect names (SCHEMA.md); ``reads``/``writes``/``deletes``/``chdirs``:
    raw words with their kind (``deletes`` are also in ``writes``); ``execs``: programs or
    code it runs (listed as their own commands when a wrapper/shell handler unwraps them);
    ``risky_options``: some option of the entry has an effect or runs/points elsewhere
    (a word that may turn into an option is then unknown); ``creates``: the writes that
    only create a new file or directory (also in ``writes``);
    ``urls``; ``variables``: variables it assigns (``printf -v``, ``read``); ``reasons``:
    why something is ``unknown``; ``stdin_role``: the role operands arriving on stdin take
    (behind xargs), ``""`` when none; ``stdout``: the entry's output kind; ``links``: the
    targets of the symbolic links it makes (not accessed now; ``ln`` without ``-s`` makes hard
    links, whose targets are ``writes``: the file is writable through the new name);
    ``follows``: it follows symbolic links below its directory reads and writes (``grep -R``,
    ``cp -rL``, ``find -L``, ``zip -r``): what they lead to is read or written too.
    ``runs``: the files of code it runs, named on purpose (``python FILE``, ``bash FILE``,
    ``source FILE``, ``java -jar FILE``, a workspace binary ``./build/app``): literal words, effect
    ``run``; whether each is the project's code (inside the roots, not written by the same
    call) is the facts layer's check (``Facts.run_refusals``). ``placeholders``: what ``{}``
    stands for in find's ``-exec`` commands (its start points, narrowed by ``-name``).
    """

    entry: str
    effects: frozenset[str]
    reads: tuple[Word, ...] = ()
    writes: tuple[Word, ...] = ()
    deletes: tuple[Word, ...] = ()
    chdirs: tuple[Word, ...] = ()
    execs: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()
    variables: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    stdin_role: str = ""
    stdout: str = "text"
    creates: tuple[Word, ...] = ()
    risky_options: bool = False
    links: tuple[Word, ...] = ()
    follows: bool = False
    #: it reads a device that never ends (/dev/zero, /dev/urandom) as an operand
    reads_endless: bool = False
    #: a ``bound`` option caps what it reads (``head -c 1M``): an endless input ends
    bounded: bool = False
    runs: tuple[Word, ...] = ()
    placeholders: tuple[Word, ...] = ()
    #: runs the program searches for (``PATH``) unless they are a regular file as written
    #: (``bash NAME``): the facts layer makes the command unknown when one is not
    must_exist: tuple[Word, ...] = ()
    #: with ``follows``: it also writes through the links (a dangling one too: ``truncate``
    #: creates its target), so every link below counts, not only those that lead somewhere
    follows_writes: bool = False
    #: it imports modules from its working directory first: ``"code"`` for proven inline code
    #: (``python -c``, stdin code: an entry there named like a standard library module is
    #: code its proof does not cover), ``"module"`` for ``python -m MODULE`` (such an entry is
    #: the project's code, as under pytest); for both, one that links out runs code from
    #: anywhere, and one the same call writes is not the project's (``Facts.code_refusals``;
    #: the I/O layer looks: ``realpaths.links_below(..., importable_only=True)``)
    imports_cwd: str = ""
    #: git checkout/restore pathspecs of the work tree, as literal paths: one that is a
    #: directory throws away the uncommitted work below it (the facts layer looks:
    #: ``CommandFacts.pathspecs``); ``.``, magic, globs and ``dir/`` are ``delete`` already
    pathspecs: tuple[Word, ...] = ()
    #: it writes files its input names (archive members, a patch's paths: an entry's
    #: ``writes_into``, ``tar -x``) below its write directories: the facts layer reads the
    #: names (``Facts.member_writes``) and scans those directories for links
    members: bool = False
    #: it reads every file below its directory reads, hidden ones too (an option's
    #: ``recursive``): the facts layer lists the secret-named files there (``Facts.paths``)
    recursive: bool = False
    #: the archives a ``members`` command reads the names from (an option's ``archive``:
    #: tar's ``-f``), resolved where the command starts (``CommandFacts.archives``)
    archives: tuple[Word, ...] = ()
    #: the worktree a ``git worktree remove``/``move`` names, as written: git tries it as the
    #: last path component(s) of a registered worktree before it tries it as a path (the
    #: facts layer reads the registered ones: ``Facts.worktree_unknowns``)
    worktrees: tuple[str, ...] = ()
    #: proven inline code reads files (``open('x')``): one that is a device or kernel file
    #: through a link (``x -> /dev/zero``) never ends; the facts check the real paths
    code_reads: bool = False
    #: every word is a plain string to it, options included (catalogue ``strings`` on the whole
    #: chain: echo, basename): an unquoted expansion may split into any words harmlessly
    strings: bool = False
    #: names (globs) of the project's files it runs or loads as code: ``*`` for a build or
    #: test command (every file of the project), the entry's ``code_files`` (``.pylintrc``);
    #: one the same call writes before it is not the project's code (``Facts.run_refusals``)
    code_files: tuple[str, ...] = ()
    #: directories Python imports modules from first besides ``imports_cwd``: a script's own
    #: directory (``python scripts/gen.py`` imports ``scripts/json.py``); an entry there
    #: linking out of the roots, or written by the same call, is not the project's code
    #: (``Facts._links_out``, ``Facts.code_refusals``)
    module_dirs: tuple[Word, ...] = ()
    #: programs a package runner (``npx tsc``) must find installed in the project
    #: (``node_modules/.bin/NAME`` where it runs or above, inside the roots): else it fetches
    #: the registry package of that name, which is not the catalogue's program (``package``)
    installed: tuple[str, ...] = ()
    #: (config file names, keys): configs it reads where it runs whose keys name code it
    #: loads (mypy.ini ``plugins``): the facts read them for paths outside the roots
    configs: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    #: read operands (also in ``reads``) whose final symbolic link the program does not
    #: follow (an operand ``follows = false``: ``du``, ``stat``; an option ``dereferences =
    #: false``: ``ls -d``), each naming the link itself: no trailing ``/`` or ``/.``, no
    #: ``..``, no brace (:func:`_names_the_link`). The facts layer judges such a path's real
    #: path as its directory's joined with its last name (``Facts.real_paths``)
    unfollowed: tuple[Word, ...] = ()
    #: it rewrites files of the work tree no argument names (catalogue ``updates_worktree``)
    updates_worktree: bool = False


@dataclass(slots=True)
class _Acc:
    effects: set[str] = field(default_factory=set)
    reads: list[Word] = field(default_factory=list)
    writes: list[Word] = field(default_factory=list)
    deletes: list[Word] = field(default_factory=list)
    creates: list[Word] = field(default_factory=list)
    chdirs: list[Word] = field(default_factory=list)
    execs: list[str] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)
    variables: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    options: list[str] = field(default_factory=list)
    all_names: list[str] = field(default_factory=list)
    values: list[tuple[str, Word]] = field(default_factory=list)  # (option's first name, value)
    operands: int = 0
    links: list[Word] = field(default_factory=list)
    filters: list[Word] = field(default_factory=list)
    remote: list[Word] = field(default_factory=list)
    follows: bool = False
    keeps: bool = False
    reads_endless: bool = False
    bounded: bool = False
    imports_cwd: str = ""
    code_reads: bool = False
    module_dirs: list[Word] = field(default_factory=list)
    installed: list[str] = field(default_factory=list)
    seconds: float = 0.0  # the durations it waits (role duration), summed
    runs: list[Word] = field(default_factory=list)
    must_exist: list[Word] = field(default_factory=list)  # runs that are searched for when missing
    pathspecs: list[Word] = field(default_factory=list)  # git checkout/restore work-tree paths
    members: bool = False  # writes files its input names (archive members)
    recursive: bool = False  # reads every file below its directory operands
    archives: list[Word] = field(default_factory=list)  # values of an option marked `archive`
    worktrees: list[str] = field(default_factory=list)  # git worktree remove/move operands
    placeholders: list[Word] = field(default_factory=list)
    wide_placeholders: bool = False  # some find -exec's {} is anything find reads
    #: inline code given to an option (``python -c``): (language, text, the option's effects)
    code: list[tuple[str, Word, frozenset[str]]] = field(default_factory=list)
    #: the ``dereferences`` values of the options given (``Option.dereferences``)
    derefs: set[bool] = field(default_factory=set)
    unfollowed: list[Word] = field(default_factory=list)

    def unknown(self, why: str) -> None:
        self.effects.add("unknown")
        if len(self.reasons) < 8:
            self.reasons.append(why)


def judge(cmd: SimpleCommand, catalogue: Catalogue) -> Judgement:
    """The effects of ``cmd`` per ``catalogue``; never raises."""
    name = cmd.name.lower()
    entry = catalogue.get(name)
    if entry is None:
        head = cmd.argv[0] if cmd.argv else ""
        if ("/" in head and head.rsplit("/", 1)[0] not in SYSTEM_DIRS and not _NOT_LITERAL.search(head)
                and _runnable((head, LITERAL))):
            # a workspace binary (./build/app, bin/tool): project code, checked like a script
            return Judgement("", frozenset({"run"}), runs=((head, LITERAL),))
        return Judgement("", frozenset({"unknown"}), reasons=(f"{name!r} is not in the catalogue",))
    kinds = tuple(cmd.arg_kinds) + (LITERAL,) * (len(cmd.args) - len(cmd.arg_kinds))
    words = list(zip(cmd.args, kinds, strict=True))
    acc = _Acc(set(entry.effects))
    if "exec" in acc.effects and unwraps(name, _first_operand(cmd)):
        acc.effects.discard("exec")  # what it runs is listed and judged as its own command
    if name in ENDLESS:
        acc.unknown(f"{name} runs its command again and again until interrupted")
    if cmd.argv and ("$" in cmd.argv[0] or "`" in cmd.argv[0]):
        acc.unknown("the program name is computed at run time")
    by_path = bool(cmd.argv) and "/" in cmd.argv[0] and cmd.argv[0].rsplit("/", 1)[0] not in SYSTEM_DIRS
    project_tool = by_path and bool(
        (entry.effects | {e for sub in entry.subcommands.values() for e in sub.effects}) & {"build", "test"})
    if entry.handler == "find":
        chain = [entry]
        _find(entry, words, acc)
    elif entry.handler == "python" and any(w == "-m" or w.startswith("-m") for w, _ in words):
        chain = _python_module(entry, words, acc, catalogue, cmd)
    elif entry.handler == "dd":
        chain = [entry]
        _dd(entry, words, acc)
    else:
        if entry.handler == "tar" and words and not words[0][0].startswith("-"):
            words = _tar_keys(entry, words, acc)
        if entry.script_language in CODE_LANGUAGES and cmd.stdin_text is not None:
            words = _stdin_code(entry, words, cmd.stdin_text)
        chain = _parse(entry, words, acc, cmd)
    runner = "build" in acc.effects or "test" in acc.effects  # the catalogue's, not proven inline code's
    if acc.code:
        _inline(acc, cmd)
    if entry.handler == "python":
        # sys.path[0] of python FILE: the script's directory (python -m MODULE and proven
        # -c/stdin code import from the working directory: imports_cwd)
        acc.module_dirs.extend((w.rsplit("/", 1)[0] or "/" if "/" in w else ".", k) for w, k in acc.runs)
    if by_path and not acc.reasons:
        if project_tool or ({"build", "test"} & acc.effects and "exec" not in acc.effects):
            # a project's own build wrapper (./gradlew, ./mvnw) or environment's interpreter running
            # its tests (.venv/bin/python -m pytest): it runs the project's code, so it must lie where
            # the project does (the file is a read path, and a run when named plainly: checked as one)
            acc.reads.append((cmd.argv[0], LITERAL))
            if not _NOT_LITERAL.search(cmd.argv[0]) and _runnable((cmd.argv[0], LITERAL)):
                acc.runs.append((cmd.argv[0], LITERAL))
        elif not _NOT_LITERAL.search(cmd.argv[0]) and _runnable((cmd.argv[0], LITERAL)):
            # a workspace binary named like a catalogue program (./ls, .venv/bin/python x.py): the
            # file runs (project code, checked like a script); the entry still judges its arguments
            acc.effects.add("run")
            acc.runs.append((cmd.argv[0], LITERAL))
        else:
            acc.unknown(f"runs the file {cmd.argv[0]!r}, not the catalogue's {name!r}")
    if (entry.handler == "git" and len(chain) > 1 and chain[1].names[0] == "clean"
            and {"-n", "--dry-run"} & set(acc.all_names)):
        acc.effects.discard("delete")  # only lists what it would remove
    if entry.handler == "git" and len(chain) > 1 and chain[1].names[0] == "config":
        _git_config(words, acc)
    if (acc.filters or acc.remote or acc.links or entry.response_files or cmd.wrapper in LOCAL_FIRST_RUNNERS
            or (len(chain) > 1 and any(p.response_files for p in chain))):
        _indirect(entry, chain, words, acc, cmd)
    if entry.handler == "seq":
        _seq(words, acc)
    if entry.handler == "sed" or entry.script_language == "perl":
        _backup(acc)
    if entry.handler == "test" and any(w in ("-v", "-R") for w, _ in words):
        acc.unknown("test -v/-R evaluates a variable name (its subscript runs code)")
    if entry.handler == "wrapper" and not acc.execs and entry.names[0] == "env":
        acc.effects.add("env-read")  # env without a command prints the environment
    if not words:
        acc.effects |= entry.bare_effects  # `set`, `export`: print every variable
    last = chain[-1]
    if "unknown" in acc.effects and not acc.reasons:  # an entry's own unknown effect: say so
        acc.reasons.append(f"{' '.join(p.names[0] for p in chain)}: the catalogue marks what it does as unknown")
    if (last.writes_into  # the input names the files: anything under here
            and not any(o is not None and o.lists_only for o in map(last.option_index.get, acc.all_names))):
        acc.members = True
        if not acc.writes:
            acc.effects.add("write")
            acc.writes.append((last.writes_into, LITERAL))
    if (entry.stdin == "shell" and len(chain) == 1 and not acc.operands and not acc.execs and not acc.code
            and not {"--version", "--help", "-V", "-h", "-v", "-m"} & set(acc.all_names)):
        acc.effects.add("exec")  # reads code from stdin
        acc.execs.append(cmd.name)
    if entry.handler == "shell" and "-c" not in acc.options and (not acc.runs or "-s" in acc.options):
        acc.effects.add("exec")  # runs its stdin (bash -s, bash alone): code we do not see
        acc.execs.append(cmd.name)
    if acc.runs and (cmd.stdin_args or cmd.wrapper.startswith("find")):
        # a script operand behind find -exec or xargs: chosen at run time, not on purpose
        acc.effects.discard("run")
        acc.effects.add("exec")
        acc.execs.extend(w for w, _ in acc.runs)
        acc.runs.clear()
        acc.must_exist.clear()
    stdin_role = ""
    if cmd.stdin_args:
        stdin_role = _absorbing_role(last)
    strings, code_files, configs = _chain_traits(chain, runner)
    return Judgement(
        " ".join(p.names[0] for p in chain),
        frozenset(acc.effects),
        tuple(acc.reads),
        tuple(acc.writes),
        tuple(acc.deletes),
        tuple(acc.chdirs),
        tuple(acc.execs),
        tuple(acc.urls),
        tuple(acc.variables),
        tuple(acc.reasons),
        stdin_role,
        last.stdout if last.stdout != "text" else entry.stdout,
        tuple(acc.creates),
        any(_risky(p) for p in chain),
        tuple(acc.links),
        (acc.follows or entry.follows_links or (len(chain) > 1 and any(p.follows_links for p in chain)))
        and not acc.keeps,
        acc.reads_endless,
        acc.bounded,
        tuple(acc.runs),
        tuple(acc.reads) if acc.wide_placeholders else tuple(acc.placeholders),
        tuple(acc.must_exist),
        imports_cwd=acc.imports_cwd,
        code_reads=acc.code_reads,
        strings=strings,
        code_files=code_files,
        module_dirs=tuple(dict.fromkeys(acc.module_dirs)) if acc.module_dirs else (),
        installed=tuple(acc.installed),
        configs=configs,
        pathspecs=tuple(acc.pathspecs),
        members=acc.members and "write" in acc.effects,
        recursive=acc.recursive,
        archives=tuple(acc.archives),
        worktrees=tuple(acc.worktrees),
        unfollowed=tuple(acc.unfollowed),
        updates_worktree=last.updates_worktree,
    )


def _chain_traits(chain: list[Program], runner: bool) -> tuple[
        bool, tuple[str, ...], tuple[tuple[str, ...], tuple[str, ...]]]:
    """(``Judgement.strings``: :func:`_strings_only`; ``code_files``: ``*`` for a build or test
    ``runner``, else every entry's globs once; ``configs``: the first entry with config keys,
    its config names and keys) in one pass over the chain."""
    strings = True
    globs: dict[str, None] = {}
    configs: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    for p in chain:
        if not p.strings:
            strings = False
        if p.code_files and not runner:
            globs.update(dict.fromkeys(p.code_files))
        if p.config_keys and not configs[1]:
            configs = (p.code_files, p.config_keys)
    return strings, ("*",) if runner else tuple(globs), configs


#: git config sections whose values name no credential: getting one key of these reads nothing secret.
_GIT_CONFIG_PLAIN = frozenset({"user", "core", "init", "pull", "push", "merge", "rebase", "commit",
                               "color", "diff", "log", "gc", "advice", "safe", "fetch", "tag",
                               "status", "format", "branch"})
_GIT_CONFIG_LISTS = frozenset({"-l", "--list", "--get-regexp", "--get-urlmatch"})


def _git_config(words: list[Word], acc: _Acc) -> None:
    """``git config`` prints values of the repository's config file, where CI checkouts keep
    their token (``http.*.extraheader``, remote URLs): listing it, or getting a key outside the
    plain sections, reads ``.git/config`` (``~/.gitconfig`` with ``--global``)."""
    if {"--system", "-f", "--file", "--blob"} & set(acc.all_names):
        return
    rest = [(w, k) for w, k in words[[w for w, _ in words].index("config") + 1 :] if not w.startswith("-")]
    listing = bool(_GIT_CONFIG_LISTS & set(acc.all_names)) or (rest[:1] and rest[0][0] == "list")
    key = rest[1] if rest[:1] and rest[0][0] in ("get", "set", "unset") and len(rest) > 1 else (
        rest[0] if rest else None)
    plain = key is not None and key[1] == LITERAL and key[0].split(".", 1)[0].lower() in _GIT_CONFIG_PLAIN
    if listing or (key is not None and not plain):
        acc.effects.add("read")
        acc.reads.append(("~/.gitconfig" if "--global" in acc.all_names else ".git/config", LITERAL))


def _tar_keys(entry: Program, words: list[Word], acc: _Acc) -> list[Word]:
    """tar's traditional first argument, option letters without a dash (``tar xzf a.tgz -C
    d``): each letter is that short option, and a letter taking a value takes the next word
    after the keys, in order (tar(1) "Traditional usage"). Returned as dashed options."""
    keys, kind = words[0]
    if kind != LITERAL:
        acc.unknown("tar's first argument (option letters) is computed at run time")
        return words
    out: list[Word] = []
    rest = words[1:]
    used = 0
    for letter in keys:
        out.append(("-" + letter, LITERAL))
        option = entry.option_index.get("-" + letter)
        if option is not None and option.arity == 1 and used < len(rest):
            out.append(rest[used])
            used += 1
    return out + rest[used:]


def _first_operand(cmd: SimpleCommand) -> str:
    return next((a for a in cmd.args if not a.startswith("-")), "")


def _python_module(entry: Program, words: list[Word], acc: _Acc, catalogue: Catalogue,
                   cmd: SimpleCommand) -> list[Program]:
    """``python [opts] -m MODULE args``: the interpreter's options, then MODULE's own entry
    (a catalogue program named like the module: ``pytest``, ``json.tool``) judges args."""
    i = 0
    while i < len(words):
        a = words[i][0]
        if a == "-m" or (a.startswith("-m") and len(a) > 2):
            module, j = (a[2:], i + 1) if len(a) > 2 else (
                (words[i + 1][0], i + 2) if i + 1 < len(words) else ("", i + 1))
            mod = catalogue.get(module) if module and (len(a) > 2 or words[i + 1][1] == LITERAL) else None
            if mod is None:
                acc.unknown(f"python module {module!r} is not in the catalogue")
                return [entry]
            acc.effects |= mod.effects
            acc.all_names.append("-m")
            acc.imports_cwd = acc.imports_cwd or "module"  # sys.path[0] is the working directory
            return [entry, *_parse(mod, words[j:], acc, cmd)]
        got = _option(entry, [entry], words, i, acc) if a.startswith("-") else None
        if got is None:
            acc.unknown(f"python argument {a!r} before -m")
            return [entry]
        for opt, value in got[0]:
            _check_value(opt, value, acc)  # `python -W error::mod.X -m pytest`
            acc.effects |= opt.effects
        i = got[1]
    return [entry]


def _check_value(opt: Option, value: Word | None, acc: _Acc) -> None:
    """An option's value that is not one the catalogue knows (``values``) or not of the
    form it knows (``pattern``, a literal word matched as a whole): unknown."""
    if opt.values and (value is None or value[0] not in opt.values):
        acc.unknown(f"{opt.names[0]} {value[0] if value else ''!r} is not a value the catalogue knows")
    if opt.pattern and (value is None or value[1] != LITERAL or not re.fullmatch(opt.pattern, value[0])):
        acc.unknown(f"{opt.names[0]} {value[0] if value else ''!r} is not a value of the form the catalogue knows")


def _absorbing_role(p: Program) -> str:
    """The role of words xargs appends: the absorbing slot's (its ``last_is`` for the last)."""
    for s in p.operands:
        if s.count in ("*", "+"):
            return s.last_is or s.role
    return "unknown"


# --------------------------------------------------------------------------- options


def _parse(entry: Program, words: list[Word], acc: _Acc, cmd: SimpleCommand) -> list[Program]:
    chain = [entry]
    cur = entry
    operands: list[Word] = []
    replaced: list[str] = []
    operands_as = ""
    targets: list[tuple[str, Word]] = []
    done = cur.syntax == "none"
    i = 0
    n = len(words)
    if entry.handler == "chmod":
        words = [(w, k) if not _CHMOD_MODE.fullmatch(w) or w == "-" else ("\0mode" + w, k)
                 for w, k in words]
    while i < n:
        a, k = words[i]
        if a.startswith("\0mode"):
            operands.append((a[5:], k))
            i += 1
            continue
        if not done and a == "--":
            done = True
            i += 1
            continue
        if done or a == "-" or not a.startswith("-") or (cur.syntax == "none"):
            if not done and cur.syntax != "none":
                _may_be_option(cur, chain, a, k, acc)
            unlisted = cur.unlisted_subcommand
            if cur.subcommands and not operands and k == LITERAL:
                sub = cur.subcommands.get(a.lower())
                if sub is None and unlisted not in ("", "operand"):
                    # yarn lint is yarn run lint: the word is that subcommand's first operand
                    cur = _enter(cur.subcommands[unlisted.lower()], chain, acc)
                    done = cur.syntax == "none"
                    continue
                if sub is None and unlisted != "operand":
                    acc.unknown(f"subcommand {a!r} of {' '.join(p.names[0] for p in chain)} "
                                "is not in the catalogue")
                    return chain
                if sub is not None:
                    cur = _enter(sub, chain, acc)
                    done = cur.syntax == "none"
                    i += 1
                    continue
            elif cur.subcommands and not operands:
                acc.unknown(f"the subcommand of {cur.names[0]} is computed at run time")
                return chain
            operands.append((a, k))
            if cur.syntax == "posix" or _slot_stops_options(cur, len(operands), replaced):
                done = True
            i += 1
            continue
        got = _option(cur, chain, words, i, acc)
        if got is None:
            i += 1
            continue
        opts, after = got
        apart = after > i + 1  # the last option's value is the next word (not -xV, --x=V)
        i = after
        for n_opt, (opt, value) in enumerate(opts, 1):
            if apart and n_opt == len(opts) and value is not None and value[1] == PATTERN:
                _several_words(opt.names[0], value, acc)
            acc.options.append(opt.names[0])
            acc.all_names.extend(opt.names)
            if value is not None:
                acc.values.append((opt.names[0], value))
            _check_value(opt, value, acc)
            lang = cur.script_language or chain[0].script_language
            if opt.value == "script" and lang in CODE_LANGUAGES and value is not None:
                acc.code.append((lang, value, opt.effects))  # judged with every option known
                value = None
            else:
                acc.effects |= opt.effects
            if opt.replaces:
                replaced.append(opt.replaces)
            if opt.operands_as:
                operands_as = opt.operands_as
            acc.follows = acc.follows or opt.follows_links
            acc.keeps = acc.keeps or opt.keeps_links
            if opt.dereferences is not None:
                acc.derefs.add(opt.dereferences)
            acc.members = acc.members or opt.members
            acc.recursive = acc.recursive or opt.recursive
            if opt.archive and value is not None:
                acc.archives.append(value)
            if opt.remote and value is not None and _remote_shaped(value):
                acc.remote.append(value)
            if value is not None and opt.value != "arg":
                _role(opt.value, value, cur, chain, acc)
                if opt.operands_as and opt.value in ("write", "create"):
                    targets.append((opt.value, value))
    if (cur.subcommands and cur.bare and not operands  # `yarn` alone is `yarn install`
            and not {"--version", "-v", "--help", "-h"} & set(acc.all_names)):
        cur = _enter(cur.subcommands[cur.bare.lower()], chain, acc)
    acc.operands += len(operands)
    _operands(cur, chain, operands, replaced, operands_as, acc)
    for role, directory in targets:  # cp -t DIR SRC...: each source lands in DIR/NAME
        for w in operands:
            _into(directory, w, role, cur, chain, acc)
    return chain


def _enter(sub: Program, chain: list[Program], acc: _Acc) -> Program:
    """Descend into subcommand ``sub``: its effects join, except the ``exec`` of one whose
    operands the walk lists as their own command (``pnpm exec vitest``: vitest decides)."""
    chain.append(sub)
    effects = sub.effects
    if "exec" in effects and sub.handler == "wrapper" and unwraps(chain[0].names[0], sub.names[0]):
        effects = effects - {"exec"}
    acc.effects |= effects
    return sub


def _into(directory: Word, src: Word, role: str, p: Program, chain: list[Program],
          acc: _Acc) -> None:
    name = src[0].rstrip("/").rsplit("/", 1)[-1]
    if name and name not in (".", ".."):
        kind = EXPANSION if EXPANSION in (directory[1], src[1]) else max(directory[1], src[1])
        _role(role, (directory[0].rstrip("/") + "/" + name, kind), p, chain, acc)


def _may_be_option(p: Program, chain: list[Program], a: str, k: int, acc: _Acc) -> None:
    """A word that may expand to an option (``$FLAGS``, a glob matching ``-rf``) is an
    unknown option unless no option of the entry can do harm. For an expansion (which may
    also split into several words) that means a program of strings (:func:`_strings_only`:
    ``basename $(pwd)``, ``dirname "$f"``)."""
    if k == EXPANSION and a[:1] in ("$", "`") and not _strings_only(chain):
        acc.unknown(f"{a!r} may expand to an option")
    elif k == PATTERN and a[:1] in ("*", "?", "[") and _risky(p):
        acc.unknown(f"glob {a!r} may match a file named like an option")
    elif k == PATTERN and _brace_option(a) and not _strings_only(chain):
        acc.unknown(f"brace expansion {a!r} makes an option")


def _several_words(name: str, value: Word, acc: _Acc) -> None:
    """An unquoted glob or brace expansion given as an option's value in a word of its own
    makes any number of words (``head -n {5,KEY} f``, ``find . -name *`` over a file named
    ``-delete``, ``awk -v n=*``): the words after the first are operands, options or the
    program. Attached (``--include=*.py``, ``-n{1,2}``) every word keeps the option's name."""
    acc.unknown(f"the value {value[0]!r} of {name} is an unquoted glob or brace expansion: "
                "bash may make several words of it (operands, options); quote it")


def _brace_option(a: str) -> bool:
    """A brace expansion at the start of a word with an alternative that starts with ``-``
    (``{-v,x}``, ``{--output=F,HEAD}``, ``{-1..3}``, ``{1..-1}``): it makes an option."""
    return a[:1] == "{" and ("{-" in a or ",-" in a or "..-" in a)


def _strings_only(chain: list[Program]) -> bool:
    """Whether whatever words an expansion becomes can only be strings to this program: its
    entry says so (catalogue ``strings``: ``basename``, ``dirname``, ``echo``, ``expr``),
    not derived from the options listed (a builtin's options that are not listed, or listed
    without their meaning — ``hash -p``, ``history -w``, ``set -k`` — are no strings)."""
    return all(p.strings for p in chain)


def _risky(p: Program) -> bool:
    """Whether some option of ``p`` has an effect or a risky value (per program, kept: a
    command judged scans the options of its whole chain, git's or grep's hundred)."""
    known = _RISKY.get(id(p))
    if known is not None and known[0] is p:
        return known[1]
    risky = any(o.effects or o.value in _RISKY_VALUE_ROLES for o in p.options)
    if len(_RISKY) >= 4096:  # a catalogue rebuilt many times over: start again
        _RISKY.clear()
    _RISKY[id(p)] = (p, risky)  # the program itself is kept, so its id is not reused
    return risky


_RISKY: dict[int, tuple[Program, bool]] = {}


def _slot_stops_options(p: Program, count: int, replaced: list[str]) -> bool:
    """Options end where an exec/shell operand starts (``nice -n 5 cmd -x``)."""
    slots = [s for s in p.operands if s.role not in replaced] or list(p.operands)
    for pos, s in enumerate(slots, 1):
        if s.count in ("*", "+") or pos >= count:
            return s.role in ("exec", "shell")
    return False


#: An option word whose name is literal and whose attached value may expand: ``--name=$X``,
#: ``-j$(nproc)`` (a short option's letter, then the value or further letters).
_LITERAL_LONG_NAME = re.compile(r"--[A-Za-z0-9][A-Za-z0-9-]*=|-[A-Za-z0-9](?!-)")


def _lookup(chain: list[Program], name: str) -> Option | None:
    for p in reversed(chain):
        o = p.option_index.get(name)
        if o is not None:
            return o
    return None


def _option(cur: Program, chain: list[Program], words: list[Word], i: int,
            acc: _Acc) -> tuple[list[tuple[Option, Word | None]], int] | None:
    """Parse the option at ``words[i]``; None (after noting ``unknown``) when unknown."""
    a, k = words[i]
    where = " ".join(p.names[0] for p in chain)
    if k != LITERAL and not _LITERAL_LONG_NAME.match(a):
        # only ``--name=VALUE`` / ``-xVALUE`` with a literal name may carry an expansion: the
        # option is known and its value is judged by its role (a path value: an unknown path)
        acc.unknown(f"option {a!r} of {where} depends on an expansion")
        return None
    if a[1:2] != "-":
        o = _lookup(chain, a)  # a listed single-dash spelling (-1, -pl, -fsyntax-only, -std=c17)
        if o is not None:
            if o.arity == 1:
                return [(o, words[i + 1] if i + 1 < len(words) else None)], i + 2
            return [(o, None)], i + 1
    if _NUMERIC.fullmatch(a):
        o = _lookup(chain, "-NUM")
        if o is None:
            acc.unknown(f"option {a} of {where} is not in the catalogue")
            return None
        return [(o, None)], i + 1
    if a.startswith("--") or cur.syntax == "single-dash":
        name, eq, val = a.partition("=")
        o = _lookup(chain, name)
        if o is None and cur.syntax == "single-dash" and not a.startswith("--"):
            o, val = _joined(chain, a)  # -Iinclude, -DNDEBUG, -lm: a value joined to its option
            if o is not None:
                return [(o, (val, k))], i + 1
        if o is None and name.startswith("--") and cur.syntax == "gnu":
            hits = {x for p in chain for x in p.long_names if x.startswith(name)}
            if len(hits) == 1:
                o = _lookup(chain, hits.pop())
        if o is None and cur.syntax == "single-dash" and not a.startswith("--") and len(a) > 2:
            o = _lookup(chain, "-" + a)  # --name spelled -name
        if o is None and cur.syntax == "single-dash" and len(name) == 2:
            return _cluster(cur, chain, words, i, acc, where)
        if o is None:
            acc.unknown(f"option {name} of {where} is not in the catalogue")
            return None
        if eq:
            if o.arity == 0:
                acc.unknown(f"option {name} of {where} takes no value")
                return None
            return [(o, (val, k))], i + 1
        if o.arity == 1:
            if i + 1 >= len(words):
                return [(o, None)], i + 1
            return [(o, words[i + 1])], i + 2
        return [(o, None)], i + 1
    return _cluster(cur, chain, words, i, acc, where)


def _joined(chain: list[Program], a: str) -> tuple[Option | None, str]:
    """The longest listed option of arity 1 that ``a`` starts with, and the rest of ``a`` as
    its value (gcc(1): "-Idir", "-DNAME=V", "-llib"; Maven's "-DskipTests"); (None, "")."""
    for end in range(len(a) - 1, 1, -1):
        o = _lookup(chain, a[:end])
        if o is not None and o.arity == 1:
            return o, a[end:]
    return None, ""


def _cluster(cur: Program, chain: list[Program], words: list[Word], i: int, acc: _Acc,
             where: str) -> tuple[list[tuple[Option, Word | None]], int] | None:
    a, k = words[i]
    out: list[tuple[Option, Word | None]] = []
    j = 1
    while j < len(a):
        o = _lookup(chain, a[0] + a[j])
        if o is None:
            acc.unknown(f"option {a[0] + a[j]} of {where} is not in the catalogue"
                        + (f" (in {a!r})" if len(a) > 2 else ""))
            return None
        rest = a[j + 1 :]
        if o.arity == 1:
            if rest:
                out.append((o, (rest, k)))
                return out, i + 1
            if i + 1 < len(words):
                out.append((o, words[i + 1]))
                return out, i + 2
            out.append((o, None))
            return out, i + 1
        if o.arity == "optional":
            out.append((o, (rest, k) if rest else None))
            return out, i + 1
        out.append((o, None))
        j += 1
    return out, i + 1


# --------------------------------------------------------------------------- operands


def _operands(p: Program, chain: list[Program], operands: list[Word], replaced: list[str],
              operands_as: str, acc: _Acc) -> None:
    slots = slots_for(p, replaced)
    if not operands:
        for s in slots:
            if s.default is not None:
                role = operands_as if operands_as and s.count in ("*", "+") else s.role
                _role(role, (s.default, LITERAL), p, chain, acc)
        return
    left = len(operands)
    pos = 0
    source_files: tuple[str, ...] = ()  # `go run a.go b.go`: the files after the first are files too
    for s, take in zip(slots, takes(slots, left), strict=True):
        got = operands[pos : pos + take]
        pos += take
        left -= take
        if not got:
            continue
        acc.effects |= s.effects
        role = operands_as if operands_as and s.count in ("*", "+") else s.role
        if role == "package" and s.files and _named_file(got[0], s.files):
            source_files = s.files
        if source_files and role in ("package", "arg"):
            # a package operand ending in one of the slot's `files` is a local source file
            # (go run main.go), and so is each such operand after it (go(1): "a list of .go files")
            local = [w for w in got if _named_file(w, source_files)]
            for w in local:
                _role("read", w, p, chain, acc)
            got = [w for w in got if w not in local]
            if not got:
                continue
        if s.last_is and len(got) >= 2 and not operands_as:
            for w in got[:-1]:
                _role(role, w, p, chain, acc)
            _role(s.last_is, got[-1], p, chain, acc)
            for w in got[:-1]:  # DEST may be a directory: each source lands in DEST/NAME
                _into(got[-1], w, s.last_is, p, chain, acc)
        else:
            if role == "read" and (not s.follows or False in acc.derefs) and True not in acc.derefs:
                acc.unfollowed.extend(w for w in got if _names_the_link(w))
            for w in got:
                if role == "run" and s.lookup in ("path", "path-first") and "/" not in w[0]:
                    if s.lookup == "path-first" or not _runnable(w):
                        # `source NAME`: PATH is searched first, never the project's file
                        acc.effects.add("exec")
                        acc.execs.append(w[0])
                        acc.reads.append(w)
                        continue
                    acc.must_exist.append(w)  # `bash NAME`: ./NAME, else a PATH search
                for one in _files_under(s, role, w):
                    _role(role, one, p, chain, acc)
    if left > 0:
        extra = operands[pos:]
        acc.unknown(f"{' '.join(x.names[0] for x in chain)} takes no operand {extra[0][0]!r}")


def _names_the_link(w: Word) -> bool:
    """Whether a program that does not follow an operand's final symbolic link (lstat) gets
    the link itself from word ``w``: a literal path or glob whose last component is a name
    (``outbox``, ``docs/creds``, ``*``). Not a trailing ``/`` or ``/.`` (the kernel then
    follows the link whatever the program's options: ``ls -d outbox/``, ``du outbox/.``), not
    ``.``, no ``..`` anywhere (the path is normalised lexically, the kernel follows a link
    before a ``..``), no brace (``outbox{,/}`` makes a trailing ``/``), no bracket holding a
    ``/``, no expansion."""
    text, kind = w
    if kind not in (LITERAL, PATTERN) or not text or "{" in text or "$" in text or "`" in text:
        return False
    parts = text.split("/")
    if parts[-1] in ("", ".", "..") or ".." in parts:
        return False
    return "[" not in text or "/" not in text[text.index("["):]


def _named_file(w: Word, files: tuple[str, ...]) -> bool:
    """A literal word naming a file of one of the ``*.EXT`` globs (not a module path@version)."""
    return w[1] == LITERAL and "@" not in w[0] and "://" not in w[0] and any(w[0].endswith(g[1:]) for g in files)


def _files_under(s: Operand, role: str, w: Word) -> list[Word]:
    """A formatter's written operand: itself when it names one of the slot's ``files``
    (``x.py``), else the matching files under it as glob patterns (``.`` -> ``./**/*.py``)."""
    value, kind = w
    if role != "write" or not s.files or any(value.endswith(g[1:]) for g in s.files):
        return [w]
    base = value.rstrip("/") or "/"
    return [(f"{base}/**/{g}", max(kind, PATTERN)) for g in s.files]


def _runnable(w: Word) -> bool:
    """A file of code named on purpose: a literal path, not stdin (``-``), not find's ``{}``,
    no ``..`` component (the kernel resolves it after links, the analysis before), not a
    pipe (``/dev/fd/N``, ``/dev/stdin``, ``/proc/self/fd/N``), only ordinary file-name
    characters (no blank, quote, shell operator, glob or brace: a word mangled by quoting is
    no file named on purpose). Where it lies is the facts layer's check."""
    value, kind = w
    return (kind == LITERAL and _PLAIN_PATH.fullmatch(value) is not None and value != "-"
            and not value.startswith(("-", "~")) and ".." not in value.split("/")
            and not value.startswith(("/dev/", "/proc/")))


def _role(role: str, w: Word, p: Program, chain: list[Program], acc: _Acc) -> None:
    value, kind = w
    handler = chain[0].handler
    if handler == "git" and len(chain) > 1 and chain[1].names[0] == "push" and value[:1] in ("+", ":"):
        acc.effects.add("delete")  # +REF forces, :REF deletes the remote branch
    if (handler == "git" and len(chain) > 1 and chain[1].names[0] in _GIT_DISCARDS
            and (value in (".", "./") or value.startswith(":") or kind == PATTERN or _GLOB_CHARS.search(value))
            and ("--staged" not in acc.all_names or "--worktree" in acc.all_names)
            and "--cached" not in acc.all_names):
        # git reads pathspec magic (`:/`, `:(top)`, `:(glob)**`, `:!x`) and globs itself,
        # quoted or not: the whole tree, or files no path names; their uncommitted work
        # is thrown away (clean -n only lists: judge() drops the delete)
        acc.effects.add("delete")
        return
    if (handler == "git" and len(chain) > 1 and chain[1].names[0] in ("checkout", "restore") and role == "write"
            and ("--staged" not in acc.all_names or "--worktree" in acc.all_names) and kind == LITERAL):
        if value.endswith("/"):  # a directory: every tracked file below it
            acc.effects.add("delete")
            return
        acc.pathspecs.append(w)  # a directory too? the facts layer looks
    if (handler == "git" and len(chain) > 2 and chain[1].names[0] == "worktree"
            and chain[2].names[0] in ("remove", "move") and role == "delete"):
        if kind != LITERAL:
            acc.unknown("git worktree: a worktree named by an expansion")
        acc.worktrees.append(value)
    if handler == "git" and role in ("read", "arg") and ":" in value and not value.startswith("-"):
        # REV:PATH / :PATH names a file's content in the repository: read PATH
        path = value.partition(":")[2]
        if value.startswith(":") and path[:1] in "0123" and path[1:2] == ":":
            path = path[2:]  # :N:PATH is PATH at merge stage N of the index
        # log -L START,END:PATH and -L :FUNCNAME:PATH (the name may hold a colon): the last
        # part names a file too
        for named in dict.fromkeys((path, value.rpartition(":")[2])):
            if named:
                acc.effects.add("read")
                acc.reads.append((named.lstrip("/") or ".", kind))
        return
    if role in ("read", "write", "delete", "create") and value[:1] == "+" and len(value) > 1:
        # +CMD is a command to less/more/vi and a line number to tail/pr: not a file
        acc.unknown(f"{value!r} may be a command for {chain[0].names[0]}, not a file")
        return
    if handler == "git" and role in ("read", "write", "delete") and kind == LITERAL and _GLOB_CHARS.search(value):
        w = (value, FILTER)  # a pathspec is git's own pattern, quoted or not: `*.env` is also `.env`
    if role == "read":
        acc.effects.add("read")
        acc.reads.append(w)
        if kind == LITERAL and value in ENDLESS_DEVICES:
            acc.reads_endless = True
        if handler == "make" and (value in ("-", "/dev/stdin") or value.startswith(_PIPED)):
            acc.effects.add("exec")  # a makefile from stdin or a pipe is code we do not see
            acc.execs.append(value)
    elif role == "write":
        acc.effects.add("write")
        acc.writes.append(w)
    elif role == "create":
        acc.effects.add("write")
        acc.writes.append(w)
        acc.creates.append(w)
    elif role == "delete":
        acc.effects.add("delete")
        acc.writes.append(w)
        acc.deletes.append(w)
    elif role == "run":
        acc.effects.add("read")
        acc.reads.append(w)
        if _runnable(w):
            acc.effects.add("run")
            acc.runs.append(w)
        else:  # stdin, a pipe, an expansion, a glob, find's {}: code chosen at run time
            acc.effects.add("exec")
            acc.execs.append(value)
    elif role in ("exec", "shell"):
        acc.execs.append(value)
        if not unwraps(chain[0].names[0], chain[1].names[0] if len(chain) > 1 else ""):
            acc.effects.add("exec")
    elif role == "script":
        _script(p.script_language or chain[0].script_language, value, kind, acc)
    elif role == "chdir":
        acc.chdirs.append(w)
    elif role == "url":
        acc.effects.add("network")
        acc.urls.append(value)
    elif role == "git-config":
        if kind != LITERAL or not _GIT_SAFE_CONFIG.match(value):
            acc.unknown(f"git -c {value!r} changes what git runs or where it writes")
    elif role == "var":
        if kind != LITERAL or not _IDENT.fullmatch(value):
            acc.unknown(f"variable name {value!r} is evaluated (subscripts run code)")
        acc.variables.append(value)
    elif role == "env":
        if handler == "make" and ("$" in value or "`" in value or kind != LITERAL):
            acc.effects.add("exec")  # make VAR=$(shell ...) runs code
            acc.execs.append(value)
        elif handler == "make" and "=" in value:
            _role("variable", w, p, chain, acc)  # CC=/tmp/x.sh: the program make's rules run
        elif handler == "make":
            _role("target", w, p, chain, acc)  # a make operand without '=' is a target
    elif role == "variable":
        # a build variable NAME[:TYPE]=VALUE (make's operands, cmake -D): plain only when the
        # entry lists NAME and VALUE matches its pattern; CC, CMAKE_C_COMPILER, MAKEFILES,
        # CMAKE_PROJECT_INCLUDE... name programs or files of code the build runs
        head, eq, val = value.partition("=")
        var = head.split(":", 1)[0]
        known = chain[0].variables
        prefix = max((n for n in known if n.endswith("*") and var.startswith(n[:-1])), key=len, default="*")
        pattern = known.get(var, known.get(prefix))
        if kind != LITERAL or not eq or pattern is None or not re.fullmatch(pattern, val):
            acc.effects.add("exec")
            acc.execs.append(value)
    elif role in ("size", "bound"):
        size = _size(value[1:] if role == "size" and value[:1] in "+-<>/%" and len(value) > 1 else value, kind)
        if role == "bound":
            acc.bounded = acc.bounded or (size is not None and size <= MAX_DD_BYTES)
        elif size is None:
            acc.unknown(f"size {value!r} is not a size the analysis reads")
        elif size > MAX_DD_BYTES:
            acc.effects.add("endless")  # a file this large fills the disk or stalls every reader
    elif role == "duration":
        seconds = _seconds(value, kind)
        acc.seconds += seconds if seconds is not None else float("inf")
        if acc.seconds > MAX_WAIT_SECONDS:
            acc.effects.add("endless")  # sleep infinity: a headless run waits for ever
    elif role == "target":
        if kind != LITERAL:
            acc.unknown(f"build target {value!r} is known only at run time (install?)")
        elif _INSTALL_TARGET.fullmatch(value):
            acc.effects.add("install")  # writes where the build installs, outside the roots
    elif role == "package":
        if kind == LITERAL and (value in (".", "..") or value.startswith(("./", "../", "/"))):
            acc.effects.add("read")
            acc.reads.append(w)
        else:
            acc.effects.add("network")  # fetched from a registry or a module proxy
            acc.urls.append(value)
    elif role == "link":
        if kind != LITERAL:
            acc.unknown(f"symlink target {value!r} depends on an expansion")
        acc.effects.add("link")
        acc.links.append(w)
    elif role == "list":
        acc.effects.add("read")
        acc.reads.append(w)
        acc.unknown(f"{' '.join(x.names[0] for x in chain)} takes more operands from the file "
                    f"{value!r}: they are not on the command line")
    elif role == "filter-regex":
        globs = _regex_globs(value) if kind == LITERAL else None
        if globs is None:
            acc.unknown(f"name pattern {value!r}: what it selects is not judged")
        else:
            acc.filters.extend((g, LITERAL) for g in globs)
    elif role == "filter":
        if kind == EXPANSION:
            acc.unknown(f"file-name filter {value!r} depends on an expansion")
        elif not value.startswith("!"):  # `rg -g '!x'` excludes: it names nothing to read
            acc.filters.append((value, kind))
    elif role == "unknown":
        acc.unknown(f"argument {value!r} of {' '.join(x.names[0] for x in chain)}")
    if kind == EXPANSION and role in ("script", "git-config", "env"):
        acc.unknown(f"{role} argument {value!r} depends on an expansion")


# --------------------------------------------------------------------------- indirection

#: Words that name a pipe from a command (process substitution, its /dev/fd path).
_PIPED = ("<(", ">(", "/dev/fd/", "/proc/self/fd/")
_GLOB_CHARS = re.compile(r"[*?\[]")
#: Runners that run an installed package's program, else fetch the package named like the
#: command from the npm registry (npx, bunx, pnpx, npm exec): wrapper label -> registry.
LOCAL_FIRST_RUNNERS: dict[str, str] = {"npx": "npm", "bunx": "npm", "pnpx": "npm", "npm exec": "npm",
                                       "npm x": "npm"}


def _remote_shaped(w: Word) -> bool:
    """``HOST:PATH`` (``[USER@]HOST:FILE``: a colon before the first slash), GNU tar's and
    cpio's remote archive (rmt over rsh/ssh). A word that may expand is not known local."""
    value, kind = w
    if kind == EXPANSION:
        return True
    head, colon, _ = value.partition(":")
    return bool(colon) and bool(head) and "/" not in head


def _indirect(entry: Program, chain: list[Program], words: list[Word], acc: _Acc,
              cmd: SimpleCommand) -> None:
    """What the command line names only indirectly (docs/catalogue.md "Unknown sources"):
    a response file (``gcc @opts``), a remote archive (``tar -cf host:x``), a file-name filter
    (its matches are read: ``grep --include='.env*' -r .`` reads ``./.env``), hard links, and a
    package runner that fetches a package named like a catalogue program (``npx ls``)."""
    if any(p.response_files for p in chain):
        for w, k in words:
            if w.startswith("@") or (k == EXPANSION and w[:1] in ("$", "`")):
                acc.unknown(f"{w!r}: {chain[0].names[0]} reads more arguments from the file it names")
                break
    if acc.remote and not any(o is not None and o.forces_local
                              for o in (_lookup(chain, n) for n in acc.all_names)):
        acc.effects.add("network")
        for value, _ in acc.remote:
            acc.urls.append(f"rsh://{value.partition(':')[0]}")
        acc.unknown(f"{acc.remote[0][0]!r} names a file on another host (rsh/ssh)")
    if acc.filters:
        bases = [w for w in acc.reads if w[1] != FILTER] or [(".", LITERAL)]
        for f, k in acc.filters:
            for b, bk in bases:
                acc.reads.append((_under(b, f), EXPANSION if EXPANSION in (k, bk) else FILTER))
        acc.effects.add("read")
    if entry.handler == "ln" and not {"-s", "--symbolic"} & set(acc.all_names) and acc.links:
        # a hard link: the target's file is the new name's, readable and writable through it
        acc.effects.add("write")
        acc.writes.extend(acc.links)
        acc.links.clear()
    registry = LOCAL_FIRST_RUNNERS.get(cmd.wrapper)
    if registry is not None and entry.registry != registry:
        acc.unknown(f"{cmd.wrapper} runs the {registry} package {cmd.name!r} (fetched when it is not "
                    f"installed), not the catalogue's {entry.names[0]}")
    elif registry is not None and entry.package and entry.package != cmd.name:
        acc.installed.append(cmd.name)  # npx tsc: the project's typescript, else the package `tsc`


_REGEX_ONLY = re.compile(r"[()|+{}^$\\]")


def _regex_globs(pattern: str) -> list[str] | None:
    """The globs a name pattern that is a regular expression searched in names (``fd``), or a
    glob with ``-g``, can select: its reading as a glob, and the regex as a glob (``^\\.env$``
    is ``.env``, ``env`` is ``*env*``, ``.*`` is ``*``) when it is that simple. None when
    neither reading holds (``\\.(pem|key)$``): the caller makes it unknown."""
    out = [] if _REGEX_ONLY.search(pattern) else [pattern]
    core = pattern
    anchored_start = core.startswith("^")
    core = core[1:] if anchored_start else core
    anchored_end = core.endswith("$") and not core.endswith("\\$")
    core = core[:-1] if anchored_end else core
    glob: list[str] = []
    i = 0
    while i < len(core):
        c = core[i]
        if c == "\\" and i + 1 < len(core) and not core[i + 1].isalnum() and core[i + 1] not in "*?[":
            glob.append(core[i + 1])
            i += 2
        elif core.startswith((".*", ".+"), i):
            glob.append("*")
            i += 2
        elif c == ".":
            glob.append("?")
            i += 1
        elif c.isalnum() or c in "_-/ ":
            glob.append(c)
            i += 1
        else:
            return out or None
    out.append(("" if anchored_start else "*") + "".join(glob) + ("" if anchored_end else "*"))
    return out


def _under(base: str, pattern: str) -> str:
    """Where a filter ``pattern`` selects files below ``base``: ``base/pattern`` (a pattern
    with a directory part, ``find -path './x/*'``, from ``base``; an absolute one as it is)."""
    if pattern.startswith("/"):
        return pattern
    while pattern.startswith("./"):
        pattern = pattern[2:]
    return base.rstrip("/") + "/" + pattern if base not in ("", ".") else "./" + pattern


# --------------------------------------------------------------------------- find


_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_FIND_OPERATORS = frozenset({"(", ")", "!", ",", "-o", "-a", "-or", "-and", "-not"})
_FIND_BRANCHES = frozenset({"(", "!", ",", "-o", "-or", "-not"})


def _find(entry: Program, words: list[Word], acc: _Acc) -> None:
    """``find [-H -L -P] START... EXPRESSION``: starting points, then tests and actions looked
    up in the entry; ``-exec ... ;`` commands are listed by the walk. A name filter's matches
    under each start are read (they are what ``{}``, ``-delete`` and the output name). A
    ``-delete`` is narrowed to ``START/.../P`` only by ``-name P`` tests before it in an
    expression of ``-a`` alone (find evaluates left to right: ``-delete -name P`` deletes
    everything)."""
    i, n = 0, len(words)
    starts: list[Word] = []
    while i < n and words[i][0] in ("-H", "-L", "-P"):
        acc.follows = words[i][0] == "-L"  # the last of them counts
        i += 1
    while i < n and not (words[i][0].startswith("-") or words[i][0] in _FIND_OPERATORS):
        starts.append(words[i])
        i += 1
    starts = starts or [(".", LITERAL)]
    for s in starts:
        _role("read", s, entry, [entry], acc)
    plain = not any(w in _FIND_BRANCHES for w, _ in words[i:])  # no -o, !, (, ","
    names: list[Word] = []  # -name tests met so far, while narrowing still holds
    while i < n:
        a, k = words[i]
        if a in _FIND_OPERATORS:
            i += 1
            continue
        if a in _FIND_EXEC:
            j = i + 1
            while j < n and words[j][0] not in (";", "+"):
                j += 1
            acc.execs.append(" ".join(w for w, _ in words[i + 1 : j]))
            # what {} stands for: START/.../P when -name P tests before it narrow an expression
            # of -a alone (as for -delete), else every start and every name filter's matches
            if plain and names:
                acc.placeholders.extend((s[0].rstrip("/") + "/" + nm[0], PATTERN) for s in starts for nm in names)
            else:
                acc.wide_placeholders = True
            i = j + 1
            continue
        o = entry.option_index.get(a)
        if o is None or k != LITERAL:
            acc.unknown(f"find expression {a!r} is not in the catalogue")
            i += 1
            continue
        acc.effects |= o.effects
        acc.follows = acc.follows or o.follows_links  # -follow
        if "delete" in o.effects:
            for s in starts:  # -name P before it narrows what is deleted to START/.../P
                for t in ([(s[0].rstrip("/") + "/" + nm[0], PATTERN) for nm in names] if plain and names
                          else [s]):
                    acc.writes.append(t)
                    acc.deletes.append(t)
        if o.arity == 1 and i + 1 < n:
            if words[i + 1][1] == PATTERN:
                _several_words(a, words[i + 1], acc)  # `find . -name *` over a file `-delete`
            if a in ("-name", "-iname") and words[i + 1][1] == LITERAL:
                names.append(words[i + 1])
            negated = i > 0 and words[i - 1][0] in ("!", "-not")
            if o.value != "arg" and not (negated and o.value == "filter"):  # `! -name P` selects the rest
                _role(o.value, words[i + 1], entry, [entry], acc)
            i += 2
        else:
            i += 1


# --------------------------------------------------------------------------- dd

#: Devices a read of never ends.
ENDLESS_DEVICES: frozenset[str] = frozenset({"/dev/zero", "/dev/urandom", "/dev/random"})
_DD_DEVICES = ENDLESS_DEVICES
#: Seconds a command may wait (``sleep``) before it counts as never ending.
MAX_WAIT_SECONDS = 3600.0
_SIZE = re.compile(r"(\d+(?:\.\d+)?)([KMGTPEZYRQ]?)(i?B?)", re.I)
_DURATION = re.compile(r"(\d+(?:\.\d*)?(?:e\+?\d+)?|\.\d+|inf(?:inity)?)([smhd]?)", re.I)


def _size(value: str, kind: int) -> int | None:
    """A GNU size (coreutils: ``10K`` = 10*1024, ``10KB`` = 10*1000, suffixes to Q); None
    when it is not one or is computed at run time."""
    m = _SIZE.fullmatch(value) if kind == LITERAL else None
    if m is None:
        return None
    unit = m.group(2).upper()
    base = 1000 if m.group(3).upper() == "B" else 1024
    return int(float(m.group(1)) * base ** ("KMGTPEZYRQ".index(unit) + 1 if unit else 0))


def _seconds(value: str, kind: int) -> float | None:
    """A ``sleep`` duration (``1.5``, ``2m``, ``1e9``, ``infinity``); None when unreadable."""
    m = _DURATION.fullmatch(value) if kind == LITERAL else None
    if m is None:
        return None
    number = float("inf") if m.group(1).lower().startswith("inf") else float(m.group(1))
    return number * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2).lower()]


#: Bytes a ``dd`` from an endless device may write before it counts as filling the disk.
MAX_DD_BYTES = 1 << 30
_DD_UNITS = {"": 1, "c": 1, "w": 2, "b": 512, "k": 1 << 10, "kb": 1000, "m": 1 << 20, "mb": 10**6,
             "g": 1 << 30, "gb": 10**9, "t": 1 << 40, "tb": 10**12, "p": 1 << 50, "pb": 10**15,
             "e": 1 << 60, "eb": 10**18}
_DD_NUMBER = re.compile(r"(\d+)([a-zA-Z]*)")


def _dd_bytes(word: Word) -> int | None:
    """``bs=``/``count=`` values (``1M``, ``4k``, ``2x512``); None when not a known size."""
    value, kind = word
    if kind != LITERAL:
        return None
    total = 1
    for part in value.split("x"):
        m = _DD_NUMBER.fullmatch(part)
        unit = _DD_UNITS.get(m.group(2).lower().replace("ib", "")) if m else None
        if m is None or unit is None:
            return None
        total *= int(m.group(1)) * unit
    return total


def _dd(entry: Program, words: list[Word], acc: _Acc) -> None:
    """``dd if=F of=G bs= count=``: ``if`` is read, ``of`` written; an endless device input
    without ``count=`` fills the disk (unknown)."""
    keys: dict[str, Word] = {}
    for w, k in words:
        key, eq, val = w.partition("=")
        if not eq or key not in ("if", "of", "bs", "ibs", "obs", "cbs", "count", "skip", "seek",
                                 "conv", "iflag", "oflag", "status"):
            acc.unknown(f"dd operand {w!r} is not in the catalogue")
            continue
        keys[key] = (val, k)
    src = keys.get("if")
    if src is not None:
        if src[0] in _DD_DEVICES and src[1] == LITERAL:
            if "count" not in keys:
                acc.unknown(f"dd from {src[0]} without count= never ends")
            else:
                block = _dd_bytes(keys.get("bs", keys.get("ibs", ("512", LITERAL))))
                count = _dd_bytes(keys["count"])
                if block is None or count is None or block * count > MAX_DD_BYTES:
                    acc.unknown(f"dd may write more than {MAX_DD_BYTES >> 30} GiB from {src[0]}")
        else:
            _role("read", src, entry, [entry], acc)
    dst = keys.get("of")
    if dst is not None:
        _role("write", dst, entry, [entry], acc)


#: Output lines a ``seq`` may print before it counts as filling the disk.
MAX_SEQ_LINES = 1_000_000


def _seq(words: list[Word], acc: _Acc) -> None:
    """``seq [FIRST [STEP]] LAST``: more than :data:`MAX_SEQ_LINES` lines is unknown."""
    nums = [w for w, _ in words if not w.startswith("-") or w[1:2].isdigit()]
    try:
        vals = [float(x) for x in nums[-3:]]
    except ValueError:
        acc.unknown("seq bounds are not numbers")
        return
    first, step, last = (1.0, 1.0, vals[-1]) if len(vals) == 1 else (
        (vals[0], 1.0, vals[1]) if len(vals) == 2 else (vals[0], vals[1], vals[2]))
    if not vals or step == 0 or abs((last - first) / step) > MAX_SEQ_LINES:
        acc.unknown(f"seq prints more than {MAX_SEQ_LINES} lines")


def _backup(acc: _Acc) -> None:
    """``sed -iSUFFIX`` / ``perl -iSUFFIX``: each written file is copied to FILE+SUFFIX (a
    write); a suffix holding ``/`` or ``*`` names where the backup is written instead (GNU
    sed and perlrun: ``*`` is the file's base name, ``/`` makes it a path: ``-i'/home/u/.bash*'``
    copies the file to ``~/.bashrc``); one computed at run time may too. Both: unknown."""
    for name, (value, kind) in acc.values:
        if name != "-i" or not value:
            continue
        if "/" in value or "*" in value or kind != LITERAL:
            acc.unknown(f"-i backup suffix {value!r} names a file elsewhere")
        else:
            acc.writes.extend((w + value, k) for w, k in list(acc.writes))


def _stdin_code(entry: Program, words: list[Word], text: str) -> list[Word]:
    """``python3 - <<'EOF'`` (code read from stdin, here a literal heredoc) is the same code
    given to the entry's script option (``-c``): the words with ``-`` (or nothing, when no
    operand is given) replaced by that option and ``text``. Unchanged when an option before
    it takes a value or is not listed (the code is then not judged: exec, as before)."""
    script = next((o.names[0] for o in entry.options if o.value == "script"), "")
    for i, (w, k) in enumerate(words):
        if k == LITERAL and w == "-":
            return [*words[:i], (script, LITERAL), (text, LITERAL), *words[i + 1 :]]
        o = entry.option_index.get(w)
        if k != LITERAL or o is None or o.arity != 0 or o.value == "script":
            return words
    return [*words, (script, LITERAL), (text, LITERAL)] if script else words


def _inline(acc: _Acc, cmd: SimpleCommand) -> None:
    """Inline code (``python -c``, ``node -e``, ``perl -e``): a snippet the language's analyzer
    proves harmless has its effects and reads; any other keeps the option's catalogue effects
    (``exec``: code nobody decided) and names the interpreter among the execs."""
    options = frozenset(acc.all_names)
    for lang, (text, kind), fallback in acc.code:
        code = judge_code(lang, text, options) if kind == LITERAL else None
        if cmd.wrapper in ("find -execdir", "find -okdir"):
            code = None  # it runs in each found file's directory (imports, reads): none the facts see
        if code is not None and code.proven:
            acc.effects |= code.effects
            acc.reads.extend((p, LITERAL) for p in code.reads)
            acc.code_reads = acc.code_reads or bool(code.reads)
            if lang == "python":
                # python -c and stdin code import from the working directory first (json.py,
                # json/, re.py for what json imports, stringprep.py for "x".encode("idna"))
                acc.imports_cwd = "code"
            continue
        acc.effects |= fallback
        if cmd.name not in acc.execs:
            acc.execs.append(cmd.name)


def _script(lang: str, text: str, kind: int, acc: _Acc) -> None:
    if kind == EXPANSION:
        acc.unknown(f"{lang or 'script'} program depends on an expansion")
    effects, why = judge_script(lang, text)
    acc.effects |= effects
    if why:
        acc.unknown(why)
