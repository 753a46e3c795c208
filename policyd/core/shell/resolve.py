"""From an analysis and the catalogue to resolved per-command facts (pure).

Rules this module owns:

- **Directories follow each ``cd`` in order.** A top-level ``cd D &&`` moves every later
  command to D; any other ``cd`` (after ``;``, in a subshell, a pipeline, a wrapper, behind
  ``||``) adds D to the directories later commands may run in (both are then checked). A
  ``cd`` whose target depends on an expansion (or ``cd -``) points at :data:`UNKNOWN_DIR`.
  ``-C DIR``-style options (role ``chdir``) move only their own command (and, for a
  wrapper such as ``env -C``, what it wraps).
- **Unknown means unknown.** A path word holding an expansion or substitution is
  :data:`UNKNOWN_PATH` (within no root) unless its value is certain: ``$HOME`` (when
  nothing assigns HOME) or ``$(cmd)`` whose entry says its output is a ``token``. A glob
  keeps its text *and* adds every :data:`SENSITIVE_NAMES` entry it may match
  (case-insensitively: ``.en?`` is also ``.env``); a glob component that may match ``..``
  is unknown. Operands arriving on stdin (``xargs``) are the words an ``echo`` feeding it
  prints, the paths a ``stdout = "paths"`` command lists (under its own read paths), or
  unknown.
- Work is bounded: at most :data:`MAX_CD_DIRS` directories per command and
  :data:`MAX_GLOB_CANDIDATES` glob candidates per word.
"""

from __future__ import annotations

import posixpath
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace

from policyd.core import brackets, paths
from policyd.core.shell.catalogue import Catalogue
from policyd.core.shell.effects import SYSTEM_DIRS, Judgement, Word, judge
from policyd.core.shell.model import EXPANSION, FILTER, LITERAL, PATTERN, ShellAnalysis, SimpleCommand, record
from policyd.core.shell.walk import BRACE_RANGE, analyze
from policyd.core.shell.words import ANY

#: Where relative paths point after a ``cd`` known only at run time: outside every root.
UNKNOWN_DIR = "/(unknown directory)"
#: A path whose value is known only at run time: within no root.
UNKNOWN_PATH = paths.UNKNOWN
#: Directories one command may run in, at most (beyond: the unknown directory is added).
MAX_CD_DIRS = 8
#: Alternatives a brace expansion in a path word is expanded into (beyond: left as is).
MAX_BRACE_ALTERNATIVES = 32
#: Concrete names a glob is also checked as (per word).
MAX_GLOB_CANDIDATES = 64
#: Names a glob is matched against so that deny globs see what it may expand to.
SENSITIVE_NAMES: tuple[str, ...] = (
    ".env", ".env.local", ".env.production", ".envrc", ".dev.vars", ".git", "config", "hooks",
    "pre-commit", "info", "modules", ".gitmodules", ".gitconfig", ".git-credentials", ".ssh",
    "id_rsa", "id_ecdsa", "id_ed25519", "id_dsa", ".my.cnf", "authorized_keys", "known_hosts", ".gnupg", ".aws",
    "credentials", ".azure", ".kube", ".docker", ".netrc", ".pgpass", ".npmrc", ".pypirc",
    ".bashrc", ".bash_profile", ".profile", ".zshrc", ".zprofile", ".zshenv", ".bash_login",
    ".config", ".local", "bin", "autostart", "systemd", "fish", ".vscode", ".claude", ".cursor",
    ".gemini", ".codex", ".idea", ".zed", ".mcp.json", ".github", "workflows", "CLAUDE.md",
    "AGENTS.md", "GEMINI.md", "settings.json", "tasks.json", ".husky", "shadow", "sudoers",
    "passwd", "environ", "proc", "self", "etc", "home", "root", "tmp", "dev", "tcp", "udp",
    ".pre-commit-config.yaml",
)
_BRACE = re.compile(r"\{([^{}]*)\}")
_GLOB = re.compile(r"[*?\[]")
_SUBST = re.compile(r"\$\(([^()`]*)\)|`([^`]*)`")
_DEVICES = ("/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr")
#: An argument that keeps a ``token`` command's output a token: no ``/``, ``..`` or blank (a
#: value, a file name), and a ``date`` format only of conversions and word characters: the
#: format's other characters are printed as they are (``date +/../../x`` names a path,
#: ``date '+1 -o x'`` is three words), ``%n``/``%t`` print blanks, ``%z`` a leading ``-``.
_TOKEN_ARG = re.compile(r"(?!.*\.\.)(\+(?!-)(?:%[-_0^#]?[A-Za-mo-su-y]|%%|[A-Za-z0-9_:.,-])*|[^+/\s][^/\s]*)")


@record
class CommandFacts:
    """One command's catalogue verdict with its paths resolved.

    ``cwds``: directories it may run in; ``reads``/``writes``/``deletes``/``creates``:
    absolute, normalised paths (a directory means everything under it); ``discards``: the
    directories whose work a git delete effect without an operand throws away (also in
    ``writes``); ``unknown``: why something about it is unknown; ``runs``: the files of code
    it runs on purpose (``Judgement.runs`` resolved; also in ``reads``); ``must_exist``: those
    of them the program searches for elsewhere unless they are a regular file (``bash NAME``).
    """

    judgement: Judgement
    cwds: tuple[str, ...]
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    deletes: tuple[str, ...]
    chdirs: tuple[str, ...]
    unknown: tuple[str, ...]
    creates: tuple[str, ...] = ()
    discards: tuple[str, ...] = ()
    runs: tuple[str, ...] = ()
    #: runs that must be a regular file as resolved (else the program searches ``PATH``)
    must_exist: tuple[str, ...] = ()
    #: git checkout/restore work-tree pathspecs (``Judgement.pathspecs``) resolved: a
    #: directory among them is a discard (the facts layer looks)
    pathspecs: tuple[str, ...] = ()
    #: ``Judgement.archives`` resolved where the command starts (before its chdir options);
    #: ``archived``: the same words as resolved with its other paths (to tell them apart)
    archives: tuple[str, ...] = ()
    archived: tuple[str, ...] = ()
    #: ``Judgement.unfollowed`` resolved (also in ``reads``), less any path another of its
    #: words names too (``ls -d x x/``): the reads whose final link it does not follow
    unfollowed: tuple[str, ...] = ()


def analyse_text(text: str, catalogue: Catalogue, cwd: str,
                 home: str) -> tuple[ShellAnalysis, tuple[CommandFacts, ...]]:
    """``analyze(text)`` and its :func:`analyse_commands` facts, kept in ``catalogue.memo``
    (both are pure: the same text, directory and home give the same, immutable, result)."""
    memo = catalogue.memo
    analysis = memo.get_or_compute(text, len(text), lambda: analyze(text))
    facts = memo.get_or_compute((text, cwd, home), len(text) + len(cwd) + len(home),
                                lambda: analyse_commands(analysis, catalogue, cwd, home))
    return analysis, facts


def analyse_commands(analysis: ShellAnalysis, catalogue: Catalogue, cwd: str,
                     home: str) -> tuple[CommandFacts, ...]:
    """Per-command facts of ``analysis`` in order (see the module doc)."""
    cmds = analysis.commands
    judgements = [judge(c, catalogue) for c in cmds]
    assigned = {name for name, _ in analysis.assignments}
    res = _Resolver(catalogue, home, "HOME" in assigned)
    links = any("link" in j.effects for j in judgements)
    out: list[CommandFacts] = []
    current: list[str] = [cwd]
    found: tuple[Word, ...] = ()  # what the last find starts from: `-exec cmd {}` operands
    in_exec = ""  # the name of the last command of a find -exec chain (`-exec env rm {} +`)
    find_at = -1  # where the last find's facts are in `out`
    for i, (c, j) in enumerate(zip(cmds, judgements, strict=True)):
        if c.name.lower() == "find":
            found = j.placeholders
            in_exec = ""
            find_at = len(out)
        elif (c.wrapper.startswith("find -") or (in_exec and c.wrapper == in_exec)) and found:
            reads_it, writes_it = _opens_placeholder(j)
            j = _placeholders(j, found)  # also behind the wrappers -exec runs
            in_exec = c.name.lower()
            if (reads_it or writes_it) and 0 <= find_at < len(out):
                # `find . -name rc -exec truncate -s 0 {} +`: {} is any file below the starts,
                # a symbolic link too, and the command opens it (only a delete does not follow
                # it): the links below find's starts are scanned as for `grep -R` (Facts)
                fj = out[find_at].judgement
                out[find_at] = replace(out[find_at], judgement=replace(
                    fj, follows=True, follows_writes=fj.follows_writes or writes_it))
        else:
            in_exec = ""
        unknown = list(j.reasons)
        if ANY in c.splits and not j.strings:
            # `head -n $(cat n) f`, `git log --max-count=$x`: bash splits the value into words
            # (options, operands, behind `nice -n` the program) whatever role the word has here
            split = next((a for a, n in zip(c.args, c.splits, strict=False)
                          if n == ANY and not res.tokens_only(a)), None)
            if split is not None:
                unknown.append(f"{split!r} is not quoted: bash splits its value, unknown here, "
                               "into words (options, operands, a program); quote it")
        own = list(current)
        chdirs: list[str] = []
        if j.chdirs:
            chdirs = _bounded([r for w in j.chdirs for r in res.word(w, own)])
            own = chdirs
        reads = [r for w in j.reads for r in res.word(w, own)]
        writes = [r for w in j.writes for r in res.word(w, own)]
        deletes = [r for w in j.deletes for r in res.word(w, own)]
        creates = res.paths(j.creates, own)
        runs = res.paths(j.runs, own)
        must_exist = res.paths(j.must_exist, own)
        if c.stdin_args:
            fed, option_like, no_dash = _stdin_words(cmds, judgements, out, c, res, own)
            src = c.stdin_from
            if j.stdin_role in ("read", "write") and 0 <= src < len(judgements) and judgements[src].stdout == "paths":
                # `find . -name rc -print0 | xargs -0 truncate -s 0`: each listed file may be a
                # link anywhere below what the lister read, and the command opens it: the
                # links below are scanned as for `grep -R` (as for find -exec, red team P3)
                j = replace(j, follows=True, follows_writes=j.follows_writes or j.stdin_role == "write")
            if j.stdin_role in ("read", "write", "delete") and (no_dash or not (j.risky_options or option_like)):
                (reads if j.stdin_role == "read" else writes).extend(fed)
                if j.stdin_role == "delete":
                    deletes.extend(fed)
            elif j.stdin_role == "arg" and not j.risky_options and _plain_program(res.catalogue, j):
                pass  # plain data words of a program none of whose options has an effect (echo)
            else:
                unknown.append(f"{c.name}: operands arriving on stdin ({j.stdin_role or 'none expected'}) "
                               "may be anything, options included")
        discards: list[str] = []
        if "delete" in j.effects and not j.deletes:
            # a delete without an operand removes something where it runs; for git that is
            # the repository's work (git reset --hard, stash drop, push --force)
            if j.entry.split(" ", 1)[0] == "git":
                discards.extend(own)
                writes.extend(own)
            elif not j.effects & {"build", "test"}:  # a build tool cleans its own outputs
                writes.extend(own)
        if j.links and _links_out(j, own, writes, cwd, res):
            unknown.append("a symbolic link to a directory that holds the workspace or the home "
                           "directory (or into the home directory): recursive readers reach everything through it")
        if links and "link" not in j.effects and (reads or writes):
            unknown.append("paths used after a symlink is made in the same command cannot "
                           "be resolved before it runs")
        head = c.argv[0] if c.argv else ""
        if "/" in head and head.rsplit("/", 1)[0] not in SYSTEM_DIRS:
            # a project script (./gradlew) runs its code where it lies: that is where it runs
            own = _bounded([*own, *(posixpath.dirname(r) for r in res.word((head, LITERAL), own))])
        out.append(CommandFacts(j, tuple(own), _unique(reads), _unique(writes),
                                _unique(deletes), _unique(chdirs), tuple(unknown),
                                creates, _unique(discards), runs, must_exist, res.paths(j.pathspecs, own),
                                res.paths(j.archives, current), res.paths(j.archives, own),  # tar -f: where it starts
                                _unfollowed(j, own, reads, writes, chdirs, res)))
        moved = _cd_targets(c, j, res, current)
        if moved is not None:
            current = moved if c.seq == "and" else _bounded([*current, *moved])
        elif chdirs and _wraps(c, i, cmds):
            current = _bounded([*current, *chdirs])
    return tuple(out)


def _unfollowed(j: Judgement, own: list[str], reads: list[str], writes: list[str], chdirs: list[str],
                res: _Resolver) -> tuple[str, ...]:
    """``CommandFacts.unfollowed``: the paths of ``j.unfollowed`` that no other word of the
    command names (a path also read through ``x/``, written or fed on stdin is followed)."""
    if not j.unfollowed:
        return ()
    rest = Counter(j.reads)
    rest.subtract(j.unfollowed)
    kept = _unique([r for w in j.unfollowed for r in res.word(w, own)])
    named = {r for w, n in rest.items() if n > 0 for r in res.word(w, own)}
    named.update(writes, chdirs)
    own_reads = {r for w in j.reads for r in res.word(w, own)}
    named.update(r for r in reads if r not in own_reads)  # fed on stdin (xargs)
    return tuple(r for r in kept if r not in named)


def _links_out(j: Judgement, cwds: list[str], writes: list[str], root: str, res: _Resolver) -> bool:
    """Whether a symbolic link ``j`` makes points at a directory holding ``root`` or the home
    directory, or into the home directory (a relative target resolves from the link's own
    directory: each written directory and each directory the command runs in is tried)."""
    home = res.home
    bases = _unique([*cwds, *(posixpath.dirname(w) for w in writes), *writes])
    for text, kind in j.links:
        if kind != LITERAL:
            return True
        for target in res.word((text, kind), bases):
            if target == UNKNOWN_PATH or paths.within(root, target) or (home and (
                    paths.within(home, target) or paths.within(target, home))):
                return True
    return False


def _opens_placeholder(j: Judgement) -> tuple[bool, bool]:
    """Whether a command find's ``-exec`` runs reads, or writes other than by deleting, the
    files ``{}`` names (either follows a symbolic link ``{}`` is); a delete by a program
    that follows links (``shred``: it overwrites first) writes through them too."""
    deleted = set() if j.follows else {w[0] for w in j.deletes}
    return (any("{}" in w[0] for w in j.reads),
            any("{}" in w[0] and w[0] not in deleted for w in j.writes))


def _placeholders(j: Judgement, starts: tuple[Word, ...]) -> Judgement:
    """``find START -exec cmd {} ;``: ``{}`` is each file find selects under START (its
    ``placeholders``); a word holding ``{}`` inside a larger word (``{}.bak``, ``{}/../x``)
    names a path relative to each of them, which is unknown."""
    def sub(words: tuple[Word, ...]) -> tuple[Word, ...]:
        out: list[Word] = []
        for w in words:
            if w[0] == "{}":
                out.extend(starts)
            elif "{}" in w[0]:
                out.append((UNKNOWN_PATH, LITERAL))
            else:
                out.append(w)
        return tuple(out)

    return replace(j, reads=sub(j.reads), writes=sub(j.writes), deletes=sub(j.deletes),
                   creates=sub(j.creates))


def _wraps(c: SimpleCommand, i: int, cmds: Sequence[SimpleCommand]) -> bool:
    """The next command is the one ``c`` wraps (``env -C d cmd``)."""
    return i + 1 < len(cmds) and cmds[i + 1].wrapper == c.name.lower()


def _cd_targets(c: SimpleCommand, j: Judgement, res: _Resolver,
                current: list[str]) -> list[str] | None:
    if c.name.lower() not in ("cd", "pushd"):
        return None
    if not j.chdirs:
        words: list[Word] = [("~", LITERAL)]
    else:
        words = list(j.chdirs)
    found: list[str] = []
    for w, k in words:
        if w == "-" or k == EXPANSION:
            found.append(UNKNOWN_DIR)
        else:
            found.extend(r if r != UNKNOWN_PATH else UNKNOWN_DIR for r in res.word((w, k), current))
    return _bounded(found)


def _stdin_words(cmds: Sequence[SimpleCommand], judgements: Sequence[Judgement],
                 done: Sequence[CommandFacts], c: SimpleCommand, res: _Resolver,
                 cwds: list[str]) -> tuple[list[str], bool, bool]:
    """(the paths of the words arriving on ``c``'s stdin, whether one may be an option, whether
    none certainly is one)."""
    src = c.stdin_from
    if src < 0 or src >= len(done):
        return [UNKNOWN_PATH], True, False
    producer, pj = cmds[src], judgements[src]
    if producer.name.lower() == "echo" and all(k == LITERAL for k in producer.arg_kinds):
        args = [a for a in producer.args if a not in ("-n", "-e", "-E")]
        words = " ".join(args).split()
        paths_ = [r for a in words for r in res.word((a, LITERAL), cwds)]
        return paths_, any(w.startswith("-") for w in words), False
    if pj.stdout == "paths" and "unknown" not in pj.effects and not done[src].unknown:
        # the paths it lists lie under what it read, else under where it ran; a listed name
        # may start with "-", except find's: each begins with a starting point (`./-rf`), when
        # none starts with "-" and no -printf/-ls reshapes the output
        starts = [(w, k) for w, k in pj.reads if k != FILTER]  # -name filters narrow, not start
        dashed = (producer.name.lower() != "find" or not starts
                  or any(w.startswith("-") or k != LITERAL for w, k in starts)
                  or bool(_FIND_REFORMAT & set(producer.args)))
        return list(done[src].reads or done[src].cwds), False, not dashed
    return [UNKNOWN_PATH], True, False


#: find actions that print something other than the found paths (or whose programs print).
_FIND_REFORMAT = frozenset({"-printf", "-fprintf", "-ls", "-fls", "-fprint", "-fprint0", "-exec", "-execdir",
                            "-ok", "-okdir"})


def _plain_program(catalogue: Catalogue, j: Judgement) -> bool:
    """No shell, wrapper, script language or code from stdin: its arguments are only data."""
    entry = catalogue.get(j.entry.split(" ", 1)[0]) if j.entry else None
    return (entry is not None and not entry.handler and not entry.script_language
            and entry.stdin != "shell" and not j.effects & {"exec", "unknown"})


class _Resolver:
    """Resolves words against directories (bounded; see the module doc)."""

    def __init__(self, catalogue: Catalogue, home: str, home_assigned: bool) -> None:
        self.catalogue = catalogue
        self.home = home
        self.home_assigned = home_assigned
        self._token_cache: dict[str, bool] = {}

    def paths(self, words: Sequence[Word], cwds: Sequence[str]) -> tuple[str, ...]:
        """The paths ``words`` name in ``cwds`` (:meth:`word`), each once; most are none."""
        if not words:
            return ()
        return _unique([r for w in words for r in self.word(w, cwds)])

    def word(self, w: Word, cwds: Sequence[str]) -> list[str]:
        text, kind = w
        if not text:
            return []
        if kind == EXPANSION:
            certain = self.certain(text)
            if certain is None:
                return [UNKNOWN_PATH]
            text = certain
        bases = cwds[:1] if text.startswith(("/", "~", "$HOME", "${HOME}")) else cwds
        out: list[str] = []
        for base in bases or ["/"]:
            for r in _resolve_braces(text, base, self.home):
                out.append(r)
                if kind == FILTER:
                    out.extend(_glob_candidates(r, filter_=True))
                elif kind == PATTERN or _GLOB.search(r):
                    out.extend(_glob_candidates(r))
        return out

    def certain(self, text: str) -> str | None:
        """The word with its certain expansions replaced, or None when one is not certain."""
        if text.startswith(("$HOME", "${HOME}")) and not self.home_assigned:
            rest = text[5:] if text.startswith("$HOME") else text[7:]
            if "$" not in rest and "`" not in rest:
                return text
        def sub(m: re.Match[str]) -> str:
            inner = m.group(1) if m.group(1) is not None else m.group(2)
            return "T" if self.token(inner) else "\0"
        replaced = _SUBST.sub(sub, text)
        if "\0" in replaced or "$" in replaced or "`" in replaced or not replaced:
            return None
        return replaced

    def tokens_only(self, text: str) -> bool:
        """Every expansion in the word ``text`` is a ``$(cmd)`` whose output is a token
        (``foo-$(date -u +%F).txt``, ``-j$(nproc)``): the words bash splits it into (``date``
        alone prints several) are plain names, none an option or a path elsewhere."""
        if not _SUBST.search(text):
            return False  # a loop's value from a glob (`for f in *; do .. $f`): file names
        replaced = _SUBST.sub(lambda m: "T" if self.token(m.group(1) if m.group(1) is not None
                                                          else m.group(2)) else "\0", text)
        return "\0" not in replaced and "$" not in replaced and "`" not in replaced

    def token(self, inner: str) -> bool:
        """``inner`` is one catalogue command whose output is a token (``date +%F``)."""
        cached = self._token_cache.get(inner)
        if cached is not None:
            return cached
        a = analyze(inner, max_depth=0)
        ok = (a.parse_ok and not a.unknown and len(a.commands) == 1
              and not a.commands[0].dynamic and not a.redirects and not a.assignments  # TZ='<-o>5'
              and all(_TOKEN_ARG.fullmatch(w) for w in a.commands[0].args))
        if ok:
            j = judge(a.commands[0], self.catalogue)
            ok = j.stdout == "token" and not (j.effects - {"read"})
        self._token_cache[inner] = ok
        return ok


def _glob_candidates(path: str, filter_: bool = False) -> list[str]:
    """Concrete paths a glob path may name that deny rules care about (see module doc). A
    ``filter_`` (a program's own name pattern: ``find -name``, ``grep --include``) matches
    names with a leading dot too, and selects names: it never walks up a ``..``, and only its
    last part is matched against the sensitive names (``*/node_modules/*`` is no ``.ssh``)."""
    parts = path.split("/")
    options: list[list[str]] = []
    globbed = False
    for i, part in enumerate(parts):
        if not _GLOB.search(part):
            options.append([part])
            continue
        globbed = True
        low = part.lower()
        dot = filter_ or low.startswith(".")  # bash: a leading "." is matched only by a literal "."
        if dot and not filter_ and (brackets.component_matches("..", part) or brackets.component_matches(".", part)):
            return [UNKNOWN_PATH]
        # a bare * as the last part is "everything here", like reading the directory: no name
        # in particular; as a directory part (.git/*/pre-commit) it is a step to one of them
        last = i == len(parts) - 1
        hits = [] if (last and not low.strip("*?")) or (filter_ and not last) else [
            n for n in SENSITIVE_NAMES if (dot or not n.startswith(".")) and brackets.component_matches(n, part)]
        options.append([part, *hits])
    if not globbed:
        return []
    combos: list[str] = [""]
    for opts in options:
        combos = [f"{c}/{o}" if c or o else o for c in combos for o in opts][:MAX_GLOB_CANDIDATES]
    return [paths.resolve(c or "/", "/", "") for c in combos if c != path]


def _resolve_braces(path: str, cwd: str, home: str) -> list[str]:
    """``paths.resolve`` after bash's brace expansion (``{a,b}`` lists and ``{m..o}``,
    ``{1..9..2}`` sequences, nested; each alternative). Past :data:`MAX_BRACE_ALTERNATIVES`
    alternatives, or braces still nested after as many rounds, :data:`UNKNOWN_PATH` stands
    for the rest: a word never passes unexpanded as the literal name ``{a,...,.env}``."""
    words = [path]
    for _ in range(16):  # one group per word per round: nesting and several groups
        expanded: list[str] = []
        changed = False
        for w in words:
            found = next(((m, alts) for m in _BRACE.finditer(w) if (alts := _brace_words(m.group(1))) is not None),
                         None)
            if found is None:
                expanded.append(w)
                continue
            m, alts = found
            changed = True
            expanded.extend(w[: m.start()] + alt + w[m.end() :] for alt in alts)
            if len(expanded) > MAX_BRACE_ALTERNATIVES:
                return [*_resolved(expanded[:MAX_BRACE_ALTERNATIVES], cwd, home), UNKNOWN_PATH]
        if not changed:
            return _resolved(words, cwd, home)
        words = expanded
    return [*_resolved(words, cwd, home), UNKNOWN_PATH]


def _resolved(words: Sequence[str], cwd: str, home: str) -> list[str]:
    """Each word's ``paths.resolve``, followed by its ``paths.physical`` form where it has
    one (``outbox/../x``: the kernel goes up from where the link ``outbox`` leads, and the
    real path of that form says where; the lexical one stays for rules that match names)."""
    out: list[str] = []
    for w in words:
        out.append(lexical := paths.resolve(w, cwd, home))
        walked = paths.physical(w, cwd, home)
        if walked is not None and walked != lexical:
            out.append(walked)
    return out


def _brace_words(group: str) -> list[str] | None:
    """The words bash expands ``{group}`` to, or None when it is no expansion (``{x}``, a
    mixed ``{1..z}``). A sequence longer than :data:`MAX_BRACE_ALTERNATIVES` yields one word
    more than that (its first ones: the caller stops there)."""
    if "," in group:
        return group.split(",")
    m = BRACE_RANGE.fullmatch(group)
    if m is None:
        return None
    a, b, step = m.group(1), m.group(2), abs(int(m.group(3) or 1)) or 1
    numeric = a.lstrip("-").isdigit()
    if numeric != b.lstrip("-").isdigit():
        return None
    lo, hi = (int(a), int(b)) if numeric else (ord(a), ord(b))
    span = range(lo, hi + 1, step) if lo <= hi else range(lo, hi - 1, -step)
    items = span[: MAX_BRACE_ALTERNATIVES + 1]
    if not numeric:
        return [chr(i) for i in items]
    # bash pads to the wider end when either is written with a leading zero ({01..10})
    width = max(len(a), len(b)) if any(len(x.lstrip("-")) > 1 and x.lstrip("-")[0] == "0" for x in (a, b)) else 0
    return [f"{i:0{width}d}" for i in items]


def _bounded(dirs: Iterable[str]) -> list[str]:
    out = list(dict.fromkeys(dirs))
    if len(out) > MAX_CD_DIRS:
        out = [*out[: MAX_CD_DIRS - 1], UNKNOWN_DIR]
    return out


def _unique(items: Sequence[str]) -> tuple[str, ...]:
    """``items`` in first-seen order, without repeats or empty strings."""
    if not items:
        return ()
    found = dict.fromkeys(items)
    found.pop("", None)
    return tuple(found)


def is_device(path: str) -> bool:
    return path in _DEVICES
