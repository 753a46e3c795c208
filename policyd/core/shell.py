"""Static analysis of shell command text for permission policies (pure: no I/O).

:func:`analyze` parses a command string with tree-sitter-bash and lists *every* simple
command it can run, however it is spelled: pipelines, ``&&``/``||``/``;`` lists, subshells,
groups, ``$( )``/backticks (also inside double quotes, assignments, redirect targets and
unquoted heredoc bodies), process substitution, compound statements, function bodies;
commands behind wrappers (``sudo``, ``env``, ``xargs``, ``find -exec``, ``timeout``...,
listed with the wrapper, same depth); and commands inside shell strings, parsed again one
level deeper (``bash -c STR``, ``eval``, ``su -c``, ``ssh host CMD``, ``watch CMD``,
``parallel``, ``env -S``, ``flock -c``, ``trap``, ``git -c core.pager=..``/``alias.x=!..``,
``git rebase --exec``, ``ssh -o ProxyCommand=``, ``rsync -e``, heredocs, here-strings and
``echo STR |`` fed to a shell, ``bash -c "$(cat <<EOF ..)"``).

Words are reduced to the literal string the shell would pass (quotes removed, escapes and
``$'..'`` decoded, concatenations joined); a word that depends on an expansion keeps the
source text of that expansion and is marked dynamic. ``~`` is kept as written (it is not
dynamic: paths are resolved elsewhere). Interpreter code (``python -c``) is not parsed.

The module never raises on any input string: every failure is reported as
``parse_ok=False`` with a human-readable reason in ``errors``. Each thread gets its own
tree-sitter parser, so :func:`analyze` may run on a reload thread and the main thread at once.
"""

from __future__ import annotations

import re
import shlex
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

#: Nesting of shell-in-shell strings (bash -c, eval, ssh, heredoc to sh) before giving up.
MAX_DEPTH: int = 4
#: Commands listed at most; exceeding sets parse_ok False (bounded work for CEL).
MAX_COMMANDS: int = 2000
#: Longest text analysed (bounds tree-sitter parse time to ~0.2 s); longer: parse_ok False.
MAX_INPUT_CHARS: int = 256 * 1024
#: Longest wrapper chain unwrapped (sudo env nice ...): each level copies the remaining words.
MAX_WRAPPERS: int = 32
#: Total chars of command texts + args kept: nested $(..) repeat inner text in every level.
MAX_TEXT_CHARS: int = 4 * 1024 * 1024
#: Error messages kept (one is enough to make parse_ok False).
MAX_ERRORS: int = 20

# Non-ASCII bytes -> letters (bash treats them as word characters too).
_ASCII_IMAGE = bytes(range(128)) + bytes(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"[i % 52] for i in range(128)
)
_HARD_MAX_DEPTH = 16  # caller-supplied max_depth is clamped to this (bounded recursion)

_LANGUAGE = Language(tree_sitter_bash.language())
_PARSERS = threading.local()  # a tree-sitter Parser is not thread-safe: one per thread


def _parser() -> Parser:
    parser: Parser | None = getattr(_PARSERS, "parser", None)
    if parser is None:
        parser = _PARSERS.parser = Parser(_LANGUAGE)
    return parser


# --------------------------------------------------------------------------- public types


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One simple command (a program run with arguments).

    ``name`` is the normalised program name (basename, quotes/backslashes removed, case
    kept); ``argv`` is ``(name as written, unquoted) + args``; ``flags`` holds every option
    name (short flags split, long ones without dashes or ``=value``) plus known aliases;
    ``subcommand`` is the first positional after the program's global options for programs
    with subcommands (``aws``: service and operation joined by a space), else ``""``;
    ``positionals`` are the non-option arguments (option values the tables know skipped;
    the subcommand included); ``wrapper`` names what produced the command (``""`` at top
    level, ``"sudo"``, ``"find -exec"`` for an unwrapped argv; ``"bash -c"``, ``"eval"``,
    ``"bash <<"``, ``"| sh"``... for every top-level command of a shell string); ``depth``
    counts shell-string levels; ``dynamic`` is True when the name or an argument depends on an
    expansion, glob or brace expansion.
    """

    name: str
    args: tuple[str, ...]
    argv: tuple[str, ...]
    text: str
    flags: frozenset[str]
    subcommand: str
    positionals: tuple[str, ...]
    wrapper: str
    depth: int
    dynamic: bool


@dataclass(frozen=True, slots=True)
class Redirect:
    """A redirection: ``op`` as written with its fd (``">"``, ``"2>"``, ``"&>"``, ``">&"``,
    ``"<<"``, ``"<<<"``...), the unquoted ``target`` word (``""`` for heredocs; the content
    for here-strings; the fd number for ``2>&1``) and whether the target is dynamic."""

    op: str
    target: str
    dynamic: bool


@dataclass(frozen=True, slots=True)
class ShellAnalysis:
    """Everything :func:`analyze` found in one command string.

    ``commands``: every simple command in source order (wrappers and their inner commands
    both listed). ``assignments``: ``(NAME, value)`` pairs from ``A=b cmd``, ``export A=b``,
    ``A=b`` and ``env A=b cmd``. ``parse_ok`` is False on syntax errors, nesting deeper than
    ``max_depth``, more than :data:`MAX_COMMANDS` commands or over-long input; ``errors``
    says why. ``dynamic``: something (a command, argument, assignment, redirect, loop list)
    depends on an expansion. ``path_args``: raw path operands of file commands and redirect
    targets (unresolved: ``"~/.ssh/id_rsa"``, ``"../x"``, ``"$HOME/x"``, ``"*"``).
    """

    commands: tuple[SimpleCommand, ...]
    redirects: tuple[Redirect, ...]
    assignments: tuple[tuple[str, str], ...]
    parse_ok: bool
    dynamic: bool
    errors: tuple[str, ...]
    path_args: tuple[str, ...]


# --------------------------------------------------------------------------- word text

_EXPANSIONS = frozenset(
    {
        "simple_expansion",
        "expansion",
        "command_substitution",
        "process_substitution",
        "arithmetic_expansion",
        "brace_expression",
    }
)
_ESCAPED_CHAR = re.compile(r"\\(.)", re.S)
_DQ_ESCAPE = re.compile(r'\\([$`"\\\n])')
_ANSI_ESCAPE = re.compile(
    r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|c.|.)", re.S
)
_ANSI_SIMPLE = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}
# An unquoted glob (* ? [..]) or brace expansion ({a,b} / {1..3}); quoted/escaped chars are
# replaced by NUL in the text this runs on.
_PATTERN = re.compile(r"[*?]|\[[^\]]*\]|\{[^{}]*(?:,|\.\.)[^{}]*\}")


def _dec(b: bytes) -> str:
    try:
        return b.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return b.decode("utf-8", "replace")


def _unescape_unquoted(raw: str) -> str:
    if "\\" not in raw:
        return raw
    return _ESCAPED_CHAR.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), raw)


def _dq_unescape(raw: str) -> str:
    if "\\" not in raw:
        return raw
    return _DQ_ESCAPE.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), raw)


def _ansi_char(m: re.Match[str]) -> str:
    e = m.group(1)
    c = e[0]
    if c in _ANSI_SIMPLE and len(e) == 1:
        return _ANSI_SIMPLE[c]
    if c in "xuU" and len(e) > 1:
        code = int(e[1:], 16)
        return chr(code) if code <= 0x10FFFF else "\ufffd"
    if c in "01234567":
        return chr(int(e, 8) & 0xFF)
    if c == "c" and len(e) == 2:
        return chr(ord(e[1]) & 0x1F)
    return "\\" + e


def _ansi_c(raw: str) -> str:
    return _ANSI_ESCAPE.sub(_ansi_char, raw) if "\\" in raw else raw


class _Word:
    """A word's unquoted value, whether it is dynamic / holds an expansion, its byte span."""

    __slots__ = ("dyn", "end", "exp", "start", "value")

    def __init__(self, value: str, dyn: bool, start: int, end: int, exp: bool = False) -> None:
        self.value = value
        self.dyn = dyn
        self.start = start
        self.end = end
        self.exp = exp  # contains an expansion node (may hide a command substitution)


def _collect(node: Node, src: bytes, out: list[str], pat: list[str]) -> bool:
    """Append ``node``'s unquoted value to ``out`` (glob-relevant text to ``pat``).

    Returns True when the node contains an expansion.
    """
    t = node.type
    if t == "word" or t == "number":
        raw = _dec(src[node.start_byte : node.end_byte])
        out.append(_unescape_unquoted(raw))
        pat.append(_ESCAPED_CHAR.sub("\0", raw) if "\\" in raw else raw)
        return False
    if t == "raw_string":
        raw = _dec(src[node.start_byte : node.end_byte])
        out.append(raw[1:-1] if len(raw) >= 2 and raw.endswith("'") else raw[1:])
        pat.append("\0")
        return False
    if t == "ansi_c_string":
        raw = _dec(src[node.start_byte : node.end_byte])
        out.append(_ansi_c(raw[2:-1] if len(raw) >= 3 and raw.endswith("'") else raw[2:]))
        pat.append("\0")
        return False
    if t == "string" or t == "translated_string":
        s, e = node.start_byte, node.end_byte
        pos = s + (2 if src[s : s + 1] == b"$" else 1)
        inner_end = e - 1 if e - 1 >= pos and src[e - 1 : e] == b'"' else e
        dyn = False
        for ch in node.named_children:
            if ch.type in _EXPANSIONS:
                out.append(_dq_unescape(_dec(src[pos : ch.start_byte])))
                out.append(_dec(src[ch.start_byte : ch.end_byte]))
                pos = ch.end_byte
                dyn = True
        if pos < inner_end:
            out.append(_dq_unescape(_dec(src[pos:inner_end])))
        pat.append("\0")
        return dyn
    if t == "concatenation":
        pos = node.start_byte
        dyn = False
        for ch in node.children:
            if ch.start_byte > pos:
                gap = _dec(src[pos : ch.start_byte])
                out.append(_unescape_unquoted(gap))
                pat.append(gap)
            if ch.is_named:
                dyn = _collect(ch, src, out, pat) or dyn
            else:
                raw = _dec(src[ch.start_byte : ch.end_byte])
                out.append(_unescape_unquoted(raw))
                pat.append(raw)
            pos = max(pos, ch.end_byte)
        if node.end_byte > pos:
            gap = _dec(src[pos : node.end_byte])
            out.append(_unescape_unquoted(gap))
            pat.append(gap)
        return dyn
    out.append(_dec(src[node.start_byte : node.end_byte]))
    pat.append("\0")
    return True  # an expansion, or a node kind this reader does not know: not a literal


def _word(node: Node, src: bytes) -> _Word:
    """The unquoted value of a word-like node and whether it is dynamic."""
    start, end = node.start_byte, node.end_byte
    t = node.type
    if t == "word":
        raw = _dec(src[start:end])
        if "\\" not in raw:
            return _Word(raw, _PATTERN.search(raw) is not None, start, end)
    elif t == "string":
        seg = src[start:end]
        if len(seg) >= 2 and seg[-1:] == b'"' and b"$" not in seg and b"`" not in seg:
            return _Word(_dq_unescape(_dec(seg[1:-1])), False, start, end)
    elif t == "raw_string":
        seg = src[start:end]
        if len(seg) >= 2 and seg[-1:] == b"'":
            return _Word(_dec(seg[1:-1]), False, start, end)
    elif t == "simple_expansion" or t == "expansion":
        return _Word(_dec(src[start:end]), True, start, end, True)
    out: list[str] = []
    pat: list[str] = []
    exp = _collect(node, src, out, pat)
    dyn = exp or _PATTERN.search("".join(pat)) is not None
    return _Word("".join(out), dyn, start, end, exp)


def _norm_name(value: str, dyn: bool) -> str:
    """``/usr/bin/rm`` -> ``rm``; ``\\rm`` -> ``rm``; case kept; ``$(..)`` names kept whole."""
    if dyn and ("(" in value or "`" in value or ")" in value):
        return value
    s = value.lstrip("\\\"'")
    b = s.rstrip("/")
    base = b.rsplit("/", 1)[-1] if b else s
    return base or value


# --------------------------------------------------------------------------- option tables


def _aliases(dsl: str) -> dict[str, tuple[str, ...]]:
    """``"r R recursive|D>delete force"``: groups of equivalent names; ``a>b c`` one-way."""
    out: dict[str, set[str]] = {}
    for group in dsl.split("|"):
        if ">" in group:
            left, right = group.split(">", 1)
            for name in left.split():
                out.setdefault(name, set()).update(right.split())
            continue
        names = group.split()
        for name in names:
            out.setdefault(name, set()).update(n for n in names if n != name)
    return {k: tuple(sorted(v)) for k, v in out.items()}


@dataclass(frozen=True, slots=True)
class _Spec:
    """How a program's options are spelled (enough to skip option values)."""

    val_short: str = ""  # short options taking a value (attached or the next argument)
    opt_short: str = ""  # short options whose value can only be attached (sed -i.bak)
    num_short: str = ""  # short options taking the next argument only if numeric (make -j 4)
    val_long: frozenset[str] = frozenset()
    aliases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    known_long: frozenset[str] = frozenset()  # long names, for GNU unique-prefix abbreviations
    single_dash_long: bool = False  # -name style long options (find, terraform, go)
    stop: bool = False  # options end at the first positional (POSIX / docker run IMAGE)


def _mk(
    vs: str = "",
    vl: str = "",
    al: str = "",
    opt: str = "",
    ns: str = "",
    sd: bool = False,
    stop: bool = False,
) -> _Spec:
    """A spec from compact strings: ``vs``/``opt``/``ns`` short letters taking a value (always,
    attached only, numeric only), ``vl`` long names taking a value, ``al`` alias groups."""
    aliases = _aliases(al)
    vlong = frozenset(vl.split())
    longs = {n for n in aliases if len(n) > 1} | set(vlong)
    for targets in aliases.values():
        longs.update(n for n in targets if len(n) > 1)
    return _Spec(vs, opt, ns, vlong, aliases, frozenset(longs), sd, stop)


def _merge(a: _Spec, b: _Spec) -> _Spec:
    aliases = {k: tuple(sorted(set(a.aliases.get(k, ())) | set(b.aliases.get(k, ())))) for k in
               set(a.aliases) | set(b.aliases)}
    return _Spec(
        a.val_short + b.val_short,
        a.opt_short + b.opt_short,
        a.num_short + b.num_short,
        a.val_long | b.val_long,
        aliases,
        a.known_long | b.known_long,
        a.single_dash_long or b.single_dash_long,
        a.stop or b.stop,
    )


_DEFAULT = _Spec()

_RM = _mk(al="r R recursive|f force|i interactive|I|d dir|v verbose|one-file-system|"
          "no-preserve-root|preserve-root")
_CP = _mk(vs="tS", vl="target-directory suffix backup reflink sparse preserve",
          al="r R recursive|f force|i interactive|n no-clobber|a archive|l link|"
             "s symbolic-link|u update|v verbose|L dereference|P no-dereference|"
             "x one-file-system|b backup|T no-target-directory|t target-directory|p")
_MV = _mk(vs="tS", vl="target-directory suffix backup",
          al="r R recursive|f force|i interactive|n no-clobber|u update|v verbose|b backup|"
             "T no-target-directory|t target-directory")
_CHOWN = _mk(vl="reference from",
             al="R r recursive|f silent quiet|v verbose|c changes|h no-dereference|H|L|P")
_CHMOD = _mk(vl="reference", al="R recursive|f silent quiet|v verbose|c changes")
_LN = _mk(vs="tS", vl="target-directory suffix",
          al="s symbolic|f force|r relative|n no-dereference|i interactive|v verbose|"
             "b backup|T no-target-directory|t target-directory|L logical|P physical")
_TAR = _mk(vs="fCbTXgKNVIHF", vl="file directory files-from exclude-from exclude "
           "use-compress-program to-command blocking-factor format listed-incremental newer "
           "label transform xform owner group mode mtime index-file info-script rsh-command "
           "starting-file suffix",
           al="c create|x extract get|t list|f file|C directory|z gzip gunzip|j bzip2|"
              "J xz|v verbose|r append|u update|A catenate concatenate|k keep-old-files|"
              "p preserve-permissions|P absolute-names|O to-stdout|h dereference|"
              "T files-from|X exclude-from|d diff compare|I use-compress-program|W verify|"
              "a auto-compress|U unlink-first|delete")
_SED = _mk(vs="efl", opt="i", vl="expression file line-length",
           al="i in-place|n quiet silent|E r regexp-extended|e expression|f file|"
              "s separate|z null-data|u unbuffered|debug|sandbox|posix")
_AWK = _mk(vs="fvF", vl="file assign field-separator", al="f file|v assign|F field-separator")
_GREP = _mk(vs="efmABCdD", vl="regexp file max-count after-context before-context context "
            "include exclude exclude-from exclude-dir label color colour binary-files "
            "devices directories",
            al="r recursive|R dereference-recursive|i ignore-case|n line-number|"
               "l files-with-matches|L files-without-match|v invert-match|E extended-regexp|"
               "F fixed-strings|P perl-regexp|e regexp|f file|c count|o only-matching|"
               "q quiet silent|s no-messages|w word-regexp|x line-regexp|h no-filename|"
               "H with-filename|a text|z null-data|Z null")
_RG = _mk(vs="efgtTmABCMjrdE", vl="regexp file glob iglob type type-not max-count "
          "after-context before-context context max-columns threads replace max-depth "
          "encoding pre pre-glob type-add sort sortr color colors path-separator ignore-file "
          "max-filesize engine",
          al="e regexp|f file|g glob|i ignore-case|n line-number|l files-with-matches|"
             "v invert-match|F fixed-strings|P pcre2|z search-zip|u unrestricted|"
             "uu|hidden|L follow|S smart-case|s case-sensitive|w word-regexp|x line-regexp|"
             "c count|o only-matching|q quiet|a text|files|r replace")
_HEAD = _mk(vs="nc", vl="lines bytes pid sleep-interval max-unchanged-stats",
            al="n lines|c bytes|q quiet silent|v verbose|f follow|F|z zero-terminated")
_CURL = _mk(vs="dFTKoxXHAeEuUbcrmwyYzQtCPi", vl="data data-binary data-ascii data-raw "
            "data-urlencode form form-string upload-file config output proxy request header "
            "user-agent referer cacert capath cert key user proxy-user cookie cookie-jar range "
            "max-time write-out speed-limit speed-time time-cond quote telnet-option "
            "continue-at ftp-port interface json url output-dir connect-timeout retry "
            "resolve connect-to",
            al="d data|F form|T upload-file|K config|o output|O remote-name|L location|"
               "k insecure|s silent|S show-error|f fail|X request|H header|x proxy|u user|"
               "I head|i include|v verbose|G get|b cookie|c cookie-jar")
_WGET = _mk(vs="OoaiPeUtTwQlAR", vl="output-document output-file append-output input-file "
            "directory-prefix execute user-agent tries timeout wait quota level accept reject "
            "post-data post-file body-data body-file method header user password "
            "load-cookies save-cookies",
            al="O output-document|i input-file|P directory-prefix|q quiet|r recursive|"
               "m mirror|c continue|N timestamping|k convert-links|np no-parent")
_SHRED = _mk(vs="ns", vl="iterations size random-source",
             al="f force|n iterations|s size|u remove|v verbose|x exact|z zero")
_INSTALL = _mk(vs="gmotS", vl="group mode owner target-directory suffix",
               al="d directory|D|t target-directory|m mode|o owner|g group|s strip|v verbose|"
                  "b backup|C compare|p preserve-timestamps")
_RSYNC = _mk(vs="efMTB", vl="rsh exclude include filter files-from exclude-from include-from "
             "rsync-path password-file log-file backup-dir temp-dir partial-dir compare-dest "
             "copy-dest link-dest chmod chown usermap groupmap timeout contimeout port "
             "bwlimit max-size min-size out-format log-file-format info debug sockopts "
             "block-size checksum-choice compress-choice compress-level skip-compress suffix "
             "modify-window iconv max-delete protocol outbuf remote-option stop-after stop-at "
             "write-batch read-batch only-write-batch address",
             al="r recursive|a archive|v verbose|z compress|n dry-run|u update|l links|"
                "L copy-links|p perms|t times|g group|o owner|D|H hard-links|x one-file-system|"
                "e rsh|q quiet|P|c checksum|R relative|delete|delete-before|delete-during|"
                "delete-after|delete-excluded|remove-source-files|force")
_DD = _mk()
_TOUCH = _mk(vs="dtr", vl="date reference time",
             al="a|c no-create|m|h no-dereference|d date|r reference|t")
_TRUNCATE = _mk(vs="sr", vl="size reference",
                al="c no-create|o io-blocks|s size|r reference")
_MKDIR = _mk(vs="m", vl="mode context", al="p parents|v verbose|m mode")
_RMDIR = _mk(al="p parents|v verbose|ignore-fail-on-non-empty")
_TEE = _mk(vl="output-error", al="a append|i ignore-interrupts|p")
_SORT = _mk(vs="ktoST", vl="key field-separator output buffer-size temporary-directory "
            "files0-from parallel sort random-source compress-program batch-size",
            al="o output|r reverse|n numeric-sort|u unique|k key|t field-separator|"
               "f ignore-case|h human-numeric-sort|V version-sort|c check|m merge|s stable")
_CUT = _mk(vs="bcdf", vl="bytes characters delimiter fields output-delimiter",
           al="b bytes|c characters|d delimiter|f fields|s only-delimited")
_BASE64 = _mk(vs="w", vl="wrap", al="d decode|i ignore-garbage|w wrap")
_XXD = _mk(vs="cgloOsn", vl="cols groupsize len offset seek name",
           al="r revert|p ps postscript plain|i include|u|b bits|e")
_STRINGS = _mk(vs="ntTeo", vl="bytes radix target encoding", al="a all|n bytes|t radix")
_DIFF = _mk(vs="CUFIxXSL", vl="context unified ifdef exclude exclude-from starting-file "
            "label from-file to-file line-format",
            al="u unified|r recursive|q brief|N new-file|a text|w ignore-all-space|"
               "b ignore-space-change|i ignore-case|y side-by-side")
_CAT = _mk(al="A show-all|b number-nonblank|e|E show-ends|n number|s squeeze-blank|t|"
              "T show-tabs|u|v show-nonprinting")
_LESS = _mk(vs="bhjkopPTxyz#", vl="log-file LOG-FILE tag tag-file pattern prompt "
            "shift tabs window max-back-scroll max-forw-scroll buffers lesskey-file")
_SCP = _mk(vs="cFiJloPSDX", al="r|p|q|C|v|3|4|6|B|O|T|A")
_FIND = _mk(sd=True)
_SSH = _mk(vs="BbcDEeFIiJLlmOoPpQRSWw", al="4|6|A|a|C|f|G|g|K|k|M|N|n|q|s|T|t|V|v|X|x|Y|y")

_WRAPPER_SPECS: dict[str, _Spec] = {
    "sudo": _mk(vs="aCcDgpRrTtUu", opt="h", vl="user group prompt close-from login-class "
                "role type other-user command-timeout chdir chroot auth-type",
                al="u user|g group|E preserve-env|H set-home|i login|s shell|n non-interactive|"
                   "k reset-timestamp|K remove-timestamp|l list|v validate|b background|"
                   "e edit|P preserve-groups|S stdin|A askpass|B bell|D chdir|R chroot|"
                   "V version|h help|N no-update"),
    "doas": _mk(vs="uC", al="n|s|L|u"),
    "env": _mk(vs="uSCP", vl="unset split-string chdir block-signal default-signal "
               "ignore-signal", al="i ignore-environment|0 null|v debug|u unset|"
                                   "S split-string|C chdir"),
    "nice": _mk(vs="n", vl="adjustment", al="n adjustment"),
    "nohup": _mk(),
    "timeout": _mk(vs="sk", vl="signal kill-after",
                   al="s signal|k kill-after|v verbose|preserve-status|foreground"),
    "time": _mk(vs="fo", vl="format output", al="p portability|v verbose|a append|f format|"
                                                "o output|q quiet"),
    "stdbuf": _mk(vs="ioe", vl="input output error", al="i input|o output|e error"),
    "command": _mk(al="p|v|V"),
    "builtin": _mk(),
    "exec": _mk(vs="a", al="c|l|a"),
    "xargs": _mk(vs="IdEanLPs", opt="iel", vl="arg-file delimiter max-args max-procs "
                 "max-chars process-slot-var",
                 al="0 null|I replace|i|d delimiter|E|e eof|a arg-file|n max-args|"
                    "L max-lines|l|P max-procs|s max-chars|t verbose|p interactive|"
                    "r no-run-if-empty|x exit|o open-tty"),
    "parallel": _mk(vs="adEIjPLnNSsCJ", opt="il", vl="jobs arg-file delimiter sshlogin "
                    "sshloginfile slf colsep joblog results res tmpdir workdir wd tag-string "
                    "timeout delay halt retries basefile bf transfer-file tf return env load "
                    "memfree nice profile max-args max-lines max-chars max-replace-args "
                    "termseq limit",
                    al="j jobs P|k keep-order|v|q quote|u ungroup|g group|X xargs|m|0 null|"
                       "r no-run-if-empty|t verbose|p interactive|n max-args|a arg-file"),
    "watch": _mk(vs="nq", opt="d", vl="interval equexit",
                 al="n interval|d differences|g chgexit|t no-title|b beep|e errexit|p precise|"
                    "c color|C no-color|x exec|w no-wrap|r no-rerun|q equexit"),
    "unbuffer": _mk(al="p"),
    "ionice": _mk(vs="cnpPu", vl="class classdata pid pgid uid",
                  al="c class|n classdata|p pid|P pgid|u uid|t ignore"),
    "setsid": _mk(al="c ctty|f fork|w wait"),
    "flock": _mk(vs="wEc", vl="timeout wait conflict-exit-code command",
                 al="s shared|x exclusive|e|u unlock|n nonblock nb|w timeout wait|o close|"
                    "c command|F no-fork|E conflict-exit-code|verbose"),
    "strace": _mk(vs="eoOpPsSuUbIXaE", al="f|ff|c|C|d|D|i|q|r|t|tt|ttt|T|v|V|w|x|xx|y|yy|k|"
                                          "o output|p attach|e|s string-limit"),
    "ltrace": _mk(vs="eoOpsuaADFlnwx", al="f|c|C|i|r|S|t|tt|ttt|T|o output|p"),
    "chrt": _mk(vs="T", vl="sched-runtime sched-deadline sched-period",
                al="a all-tasks|b batch|d deadline|f fifo|i idle|o other|r rr|R reset-on-fork|"
                   "p pid|m max|v verbose"),
    "taskset": _mk(al="a all-tasks|p pid|c cpu-list"),
    "fakeroot": _mk(vs="lsi", vl="lib faked", al="u unknown-is-real"),
    "torsocks": _mk(vs="uapP", vl="user pass address port", al="i isolate|d debug|q quiet"),
    "proxychains": _mk(vs="f", al="q"),
    "proxychains4": _mk(vs="f", al="q"),
    "nsenter": _mk(vs="tSGwr", opt="mupiUCnT", vl="target setuid setgid wd root",
                   al="a all|F no-fork|Z follow-context|preserve-credentials"),
    "unshare": _mk(vl="setgroups map-user map-group propagation", al="f fork|r map-root-user|"
                   "m mount|u uts|i ipc|n net|p pid|U user|C cgroup|T time"),
    "firejail": _mk(),
    "pkexec": _mk(vl="user", al="disable-internal-agent|keep-cwd"),
    "caffeinate": _mk(vs="tw", al="d|i|m|s|u"),
    "catchsegv": _mk(),
    "valgrind": _mk(),
    "sshpass": _mk(vs="pfdP", al="e|v"),
    "busybox": _mk(),
    "coproc": _mk(),
    "runuser": _mk(vs="ugGcsw", vl="user group supp-group command shell whitelist-environment",
                   al="l login|m p preserve-environment|P pty|c command|u user|g group"),
    "su": _mk(vs="cgGsw", vl="command session-command group supp-group shell "
              "whitelist-environment", al="l login|m p preserve-environment|f fast|P pty|"
                                          "c command|s shell"),
    "script": _mk(vs="cEIOBTm", opt="t", vl="command echo log-in log-out log-io log-timing "
                  "logging-format output-limit", al="a append|c command|e return|f flush|"
                                                   "q quiet|t timing"),
}

_FILE_SPECS: dict[str, _Spec] = {
    "rm": _RM, "rmdir": _RMDIR, "unlink": _DEFAULT, "cp": _CP, "mv": _MV, "ln": _LN,
    "chmod": _CHMOD, "chown": _CHOWN, "chgrp": _CHOWN, "tar": _TAR, "sed": _SED, "gsed": _SED,
    "awk": _AWK, "gawk": _AWK, "mawk": _AWK, "nawk": _AWK,
    "grep": _GREP, "egrep": _GREP, "fgrep": _GREP, "zgrep": _GREP, "rg": _RG, "ag": _RG,
    "head": _HEAD, "tail": _HEAD, "cat": _CAT, "tac": _DEFAULT, "nl": _DEFAULT,
    "less": _LESS, "more": _DEFAULT, "zcat": _DEFAULT, "bat": _DEFAULT, "wc": _DEFAULT,
    "curl": _CURL, "wget": _WGET, "shred": _SHRED, "install": _INSTALL, "rsync": _RSYNC,
    "dd": _DD, "touch": _TOUCH, "truncate": _TRUNCATE, "mkdir": _MKDIR, "tee": _TEE,
    "sort": _SORT, "uniq": _DEFAULT, "cut": _CUT, "base64": _BASE64, "xxd": _XXD,
    "od": _DEFAULT, "hexdump": _DEFAULT, "strings": _STRINGS, "diff": _DIFF, "cmp": _DEFAULT,
    "scp": _SCP, "sftp": _SCP, "find": _FIND, "ssh": _SSH, "source": _DEFAULT, ".": _DEFAULT,
}

# Programs with subcommands: (global-options spec, spec for every subcommand, per-subcommand
# extra specs, mode). mode: "first" (first positional), "aws" (service + operation),
# "make" (first positional that is not VAR=value).


@dataclass(frozen=True, slots=True)
class _SubProg:
    glob: _Spec
    base: _Spec
    subs: Mapping[str, _Spec]
    mode: str = "first"
    plus_toolchain: bool = False  # cargo +nightly build


_GIT_BASE = _mk()
_GIT = _SubProg(
    glob=_mk(vs="Cc", vl="git-dir work-tree namespace super-prefix config-env list-cmds "
             "attr-source",
             al="p paginate|P no-pager|bare|no-replace-objects|literal-pathspecs|"
                "glob-pathspecs|noglob-pathspecs|icase-pathspecs|no-optional-locks|h help|"
                "v version|html-path|man-path|info-path|exec-path"),
    base=_GIT_BASE,
    subs={
        "push": _mk(vs="o", vl="repo receive-pack exec push-option",
                    al="f force|d delete|u set-upstream|n dry-run|q quiet|v verbose|"
                       "4 ipv4|6 ipv6|all|mirror|tags|follow-tags|prune|force-with-lease|"
                       "force-if-includes|no-verify|atomic|porcelain"),
        "commit": _mk(vs="mFCct", opt="uS", vl="message file reuse-message reedit-message "
                      "template author date fixup squash cleanup trailer pathspec-from-file",
                      al="a all|m message|F file|n no-verify|q quiet|v verbose|s signoff|"
                         "e edit|p patch|i include|o only|C reuse-message|c reedit-message|"
                         "amend|allow-empty|no-edit|t template|z null|S gpg-sign|"
                         "u untracked-files"),
        "reset": _mk(vl="pathspec-from-file",
                     al="q quiet|p patch|N intent-to-add|hard|soft|mixed|merge|keep"),
        "clean": _mk(vs="e", vl="exclude",
                     al="f force|d|x|X|n dry-run|i interactive|q quiet|e exclude"),
        "checkout": _mk(vs="bB", vl="conflict orphan pathspec-from-file",
                        al="f force|b|B|t track|q quiet|p patch|m merge|l|detach|2 ours|"
                           "3 theirs|overlay|no-overlay"),
        "switch": _mk(vs="cC", vl="create force-create orphan conflict",
                      al="c create|C force-create|f force discard-changes|d detach|m merge|"
                         "t track|q quiet"),
        "restore": _mk(vs="s", vl="source pathspec-from-file conflict",
                       al="s source|S staged|W worktree|p patch|q quiet|2 ours|3 theirs|"
                          "m merge|overlay|no-overlay"),
        "branch": _mk(vs="u", vl="set-upstream-to sort points-at format contains "
                      "no-contains merged no-merged",
                      al="d delete|D>delete force|f force|m move|M>move force|c copy|"
                         "C>copy force|r remotes|a all|l list|v verbose|q quiet|t track|"
                         "u set-upstream-to"),
        "tag": _mk(vs="mFu", vl="message file local-user sort contains points-at format "
                   "cleanup", al="d delete|f force|a annotate|s sign|m message|F file|"
                                 "u local-user|l list|n|v verify"),
        "stash": _mk(vs="m", vl="message pathspec-from-file",
                     al="p patch|k keep-index|u include-untracked|a all|q quiet|m message|"
                        "S staged"),
        "log": _mk(vs="n", vl="max-count skip since after until before author committer "
                   "grep format output", al="n max-count|p patch|u|s no-patch|oneline|all|"
                                            "graph|stat"),
        "show": _mk(vl="format output", al="p patch|s no-patch|stat"),
        "diff": _mk(vl="output", al="no-index|cached staged|R|stat|name-only|p patch|u"),
        "rm": _mk(vl="pathspec-from-file",
                  al="r|f force|n dry-run|q quiet|cached|ignore-unmatch"),
        "add": _mk(vl="chmod pathspec-from-file",
                   al="A all|f force|u update|p patch|n dry-run|v verbose|i interactive|"
                      "N intent-to-add|e edit"),
        "fetch": _mk(vs="j", vl="depth deepen shallow-since shallow-exclude upload-pack "
                     "refmap jobs", al="f force|p prune|P prune-tags|a append|q quiet|"
                                       "v verbose|t tags|n|all|dry-run"),
        "pull": _mk(vs="j", vl="depth deepen shallow-since shallow-exclude upload-pack "
                    "jobs strategy strategy-option", al="f force|p prune|q quiet|"
                                                        "v verbose|t tags|r rebase|all|"
                                                        "ff-only|no-ff|s strategy|"
                                                        "X strategy-option"),
        "rebase": _mk(vs="xsX", vl="onto exec strategy strategy-option",
                      al="i interactive|f force-rebase|x exec|s strategy|X strategy-option|"
                         "q quiet|v verbose|abort|continue|skip|r rebase-merges|root"),
        "clone": _mk(vs="bocju", vl="branch origin config depth reference template "
                     "separate-git-dir upload-pack jobs filter server-option shallow-since "
                     "shallow-exclude",
                     al="b branch|o origin|c config|n no-checkout|q quiet|v verbose|l local|"
                        "s shared|bare|mirror|recursive recurse-submodules|u upload-pack"),
        "config": _mk(vs="f", vl="file blob type default",
                      al="global|system|local|l list|e edit|unset|unset-all|get|add"),
        "grep": _mk(vs="efABCm", vl="regexp file max-count after-context before-context "
                    "context", al="e regexp|f file|i ignore-case|n line-number|v invert-match"),
    },
)

_DOCKER_RUN = _mk(vs="eEvpuwlmhcaP", vl="env env-file volume publish name user workdir "
                  "network mount entrypoint label label-file cpus memory platform hostname "
                  "add-host device restart cap-add cap-drop security-opt ulimit log-driver "
                  "log-opt pid ipc gpus runtime dns tmpfs expose link volumes-from shm-size "
                  "stop-signal stop-timeout health-cmd cidfile cgroupns userns uts "
                  "memory-swap cpu-shares cpuset-cpus pull attach",
                  al="d detach|i interactive|t tty|rm|privileged|e env|v volume|p publish|"
                     "P publish-all|u user|w workdir|h hostname|m memory|l label|q quiet|"
                     "a attach|init", stop=True)
_DOCKER = _SubProg(
    glob=_mk(vs="Hcl", vl="host context config log-level tlscacert tlscert tlskey",
             al="D debug|H host|c context|l log-level|tls|tlsverify|v version"),
    base=_mk(vl="filter format", al="f force|v volumes|a all|q quiet|l link|no-prune"),
    subs={
        "run": _DOCKER_RUN,
        "create": _DOCKER_RUN,
        "exec": _mk(vs="euw", vl="env env-file user workdir detach-keys",
                    al="d detach|i interactive|t tty|e env|u user|w workdir|privileged",
                    stop=True),
        "build": _mk(vs="tf", vl="tag file build-arg target platform network label "
                     "cache-from output progress secret ssh iidfile",
                     al="t tag|f file|q quiet|pull|no-cache"),
    },
)
_KUBE_SPEC = _mk(vs="nsfloLckp", vl="namespace server context cluster kubeconfig user token "
                 "as as-group request-timeout certificate-authority client-certificate "
                 "client-key tls-server-name filename selector output container kustomize "
                 "field-selector grace-period timeout sort-by template cascade",
                 al="n namespace|A all-namespaces|f filename|l selector|o output|c container|"
                    "R recursive|i stdin|t tty|k kustomize|all|force|wait|dry-run|"
                    "insecure-skip-tls-verify")
_HELM_SPEC = _mk(vs="nfo", vl="namespace kube-context kubeconfig registry-config "
                 "repository-config repository-cache kube-apiserver kube-token kube-as-user "
                 "values set set-string set-file set-json version repo timeout output",
                 al="n namespace|f values|o output|i install|debug|wait|atomic|force|dry-run|"
                    "A all-namespaces")
_NPM_SPEC = _mk(vs="wC", vl="prefix workspace registry userconfig globalconfig cache "
                "loglevel tag otp",
                al="g global|D save-dev|S save|E save-exact|O save-optional|P save-prod|"
                   "f force|y yes|w workspace|ws workspaces|C prefix|dry-run|ignore-scripts|"
                   "s silent|q quiet")
_PNPM_SPEC = _mk(vs="CF", vl="dir filter config reporter",
                 al="C dir|F filter|w workspace-root|r recursive|g global|D save-dev|"
                    "P save-prod|O save-optional|E save-exact|frozen-lockfile")
_YARN_SPEC = _mk(vl="cwd modules-folder cache-folder",
                 al="D dev|P peer|O optional|E exact|W ignore-workspace-root-check|g global")
_CARGO_SPEC = _mk(vs="CZpjF", vl="config color manifest-path package jobs features target "
                  "bin example test bench target-dir profile message-format root",
                  al="r release|p package|j jobs|F features|all-features|no-default-features|"
                     "workspace|all|q quiet|v verbose|V version|locked|offline|frozen|"
                     "f force|n dry-run")
_GO_SPEC = _mk(sd=True, vl="o C p modfile overlay pkgdir tags toolexec exec ldflags gcflags "
               "asmflags gccgoflags mod buildmode compiler installsuffix run bench count cpu "
               "timeout coverprofile cpuprofile memprofile blockprofile mutexprofile trace "
               "outputdir parallel list skip shuffle fuzz fuzztime covermode coverpkg "
               "benchtime")
_TF_SPEC = _mk(sd=True, vl="var var-file target state state-out backup lock-timeout "
               "parallelism out replace chdir",
               al="auto-approve|destroy|refresh-only|lock|input|json|no-color|force|"
                  "compact-warnings|recursive")
_PIP_SPEC = _mk(vs="rcetif", vl="cache-dir log proxy retries timeout exists-action "
                "trusted-host cert client-cert python requirement constraint editable target "
                "index-url extra-index-url find-links prefix root src platform "
                "python-version implementation abi upgrade-strategy progress-bar "
                "config-settings",
                al="v verbose|q quiet|V version|isolated|no-cache-dir|"
                   "disable-pip-version-check|user|break-system-packages|require-virtualenv|"
                   "U upgrade|y yes|e editable|r requirement|c constraint|t target|"
                   "i index-url|f find-links|pre|force-reinstall|I ignore-installed|no-deps")
_APT_SPEC = _mk(vs="otc", vl="option target-release config-file",
                al="y yes assume-yes|q quiet|s simulate dry-run just-print no-act|"
                   "f fix-broken|purge|no-install-recommends|reinstall|allow-downgrades|"
                   "allow-remove-essential|allow-change-held-packages|force-yes|"
                   "d download-only|m ignore-missing")
_DNF_SPEC = _mk(vs="cxR", vl="config exclude installroot releasever repo enablerepo "
                "disablerepo setopt", al="y assumeyes|q quiet|C cacheonly|b best|"
                                         "allowerasing|nogpgcheck")
_SYSTEMCTL_SPEC = _mk(vs="tpHMnos", vl="type property host machine state lines output "
                      "signal root kill-whom what job-mode preset-mode timestamp",
                      al="user|system|global|now|f force|q quiet|no-block|a all|l full|"
                         "r recursive|i ignore-inhibitors")
_AWS_SPEC = _mk(vl="region profile output endpoint-url query cli-read-timeout "
                "cli-connect-timeout ca-bundle color cli-binary-format cli-input-json "
                "exclude include acl storage-class",
                al="debug|no-verify-ssl|no-paginate|no-sign-request|no-cli-pager|version|"
                   "recursive|dryrun|force|quiet|delete")
_GCLOUD_SPEC = _mk(vl="project account configuration format verbosity "
                   "impersonate-service-account billing-project flatten filter limit "
                   "sort-by page-size zone region", al="q quiet|log-http")
_BREW_SPEC = _mk(al="f force|v verbose|d debug|q quiet|cask|formula|zap|greedy")
_MAKE_SPEC = _mk(vs="CfIoWE", ns="jl", vl="directory file makefile include-dir old-file "
                 "assume-old what-if new-file assume-new eval",
                 al="n just-print dry-run recon|k keep-going|B always-make|s silent quiet|"
                    "i ignore-errors|q question|t touch|e environment-overrides|C directory|"
                    "f file makefile|j jobs|W what-if new-file assume-new|o old-file assume-old")
_GH_SPEC = _mk(vs="R", vl="repo hostname", al="R repo")
_UV_SPEC = _mk(vs="p", vl="directory project cache-dir python config-file with "
               "with-requirements with-editable package extra group index env-file "
               "default-index index-url extra-index-url",
               al="q quiet|v verbose|n no-cache|offline|frozen|locked|no-sync|isolated")
_POETRY_SPEC = _mk(vs="CP", vl="directory project", al="n no-interaction|q quiet|v verbose")
_CONDA_SPEC = _mk(vs="np", vl="name prefix cwd", al="n name|p prefix|y yes|q quiet")


def _simple(spec: _Spec, subs: Mapping[str, _Spec] | None = None, mode: str = "first",
            plus: bool = False) -> _SubProg:
    """A subcommand program whose options are the same before and after the subcommand."""
    return _SubProg(spec, spec, {k: _merge(spec, v) for k, v in (subs or {}).items()},
                    mode, plus)


_SUBPROGS: dict[str, _SubProg] = {
    "git": _GIT,
    "docker": _DOCKER,
    "podman": _DOCKER,
    "docker-compose": _simple(_mk(vs="fp", vl="file project-name", al="f file|d detach|"
                                  "v volumes")),
    "kubectl": _simple(_KUBE_SPEC),
    "oc": _simple(_KUBE_SPEC),
    "helm": _simple(_HELM_SPEC),
    "npm": _simple(_NPM_SPEC),
    "pnpm": _simple(_PNPM_SPEC),
    "yarn": _simple(_YARN_SPEC),
    "bun": _simple(_mk(vl="cwd", al="d dev D development|g global")),
    "cargo": _simple(_CARGO_SPEC, plus=True),
    "rustup": _simple(_mk(), plus=True),
    "go": _simple(_GO_SPEC),
    "terraform": _simple(_TF_SPEC),
    "tofu": _simple(_TF_SPEC),
    "pip": _simple(_PIP_SPEC),
    "pip3": _simple(_PIP_SPEC),
    "pipx": _simple(_mk(vl="python spec index-url", al="f force")),
    "uv": _simple(_UV_SPEC),
    "poetry": _simple(_POETRY_SPEC),
    "pipenv": _simple(_mk()),
    "pdm": _simple(_mk(vs="p", vl="project", al="g global")),
    "conda": _simple(_CONDA_SPEC),
    "mamba": _simple(_CONDA_SPEC),
    "bundle": _simple(_mk(vl="gemfile")),
    "gem": _simple(_mk(vs="i", vl="install-dir version source", al="f force|y")),
    "apt": _simple(_APT_SPEC),
    "apt-get": _simple(_APT_SPEC),
    "dnf": _simple(_DNF_SPEC),
    "yum": _simple(_DNF_SPEC),
    "zypper": _simple(_mk(al="n non-interactive|y")),
    "apk": _simple(_mk(vs="X", vl="repository root", al="U update-cache|no-cache")),
    "snap": _simple(_mk()),
    "systemctl": _simple(_SYSTEMCTL_SPEC),
    "aws": _simple(_AWS_SPEC, mode="aws"),
    "gcloud": _simple(_GCLOUD_SPEC),
    "az": _simple(_mk(vs="go", vl="subscription output query resource-group name",
                      al="y yes|g resource-group|o output|n name")),
    "gsutil": _simple(_mk(vs="houp", al="m|q|r R recursive|f force")),
    "brew": _simple(_BREW_SPEC),
    "gh": _simple(_GH_SPEC),
    "make": _simple(_MAKE_SPEC, mode="make"),
    "gmake": _simple(_MAKE_SPEC, mode="make"),
    "dotnet": _simple(_mk()),
    "hg": _simple(_mk(vs="R", vl="repository cwd config", al="f force")),
    "svn": _simple(_mk()),
    "composer": _simple(_mk(vs="d", vl="working-dir")),
    "flatpak": _simple(_mk()),
    "heroku": _simple(_mk(vs="ar", vl="app remote")),
    "fly": _simple(_mk(vs="ac", vl="app config")),
    "flyctl": _simple(_mk(vs="ac", vl="app config")),
    "vercel": _simple(_mk(vl="scope token cwd", al="y yes|prod")),
    "firebase": _simple(_mk(vl="project", al="P project|f force")),
    "deno": _simple(_mk(al="A allow-all")),
    "turbo": _simple(_mk(vl="filter")),
    "nx": _simple(_mk()),
    "pulumi": _simple(_mk(vs="sC", vl="stack cwd", al="y yes|f skip-preview")),
    "ansible-galaxy": _simple(_mk()),
    "vagrant": _simple(_mk(al="f force")),
    "minikube": _simple(_mk(vs="p", vl="profile")),
    "kind": _simple(_mk(vl="name")),
}

# Names whose stdin is read as shell when they get no command string / script.
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "yash",
                     "posh", "csh", "tcsh", "rbash"})
# Programs whose operands (positionals) are all file paths.
_ALL_POS_FILES = frozenset({
    "rm", "rmdir", "unlink", "touch", "mkdir", "shred", "tee", "cat", "head", "tail",
    "less", "more", "tac", "nl", "wc", "zcat", "bat", "uniq", "cp", "mv", "ln", "install",
    "rsync", "scp", "truncate", "base64", "xxd", "od", "hexdump", "strings", "diff", "cmp",
    "sort", "cut",
})
# Option names (per program) whose value is a path.
_PATH_OPTS: dict[str, frozenset[str]] = {
    "cp": frozenset({"t", "target-directory"}),
    "mv": frozenset({"t", "target-directory"}),
    "ln": frozenset({"t", "target-directory"}),
    "install": frozenset({"t", "target-directory"}),
    "truncate": frozenset({"r", "reference"}),
    "touch": frozenset({"r", "reference"}),
    "chmod": frozenset({"reference"}),
    "chown": frozenset({"reference"}),
    "chgrp": frozenset({"reference"}),
    "shred": frozenset({"random-source"}),
    "sort": frozenset({"o", "output"}),
    "tar": frozenset({"f", "file", "C", "directory", "T", "files-from", "X", "exclude-from"}),
    "sed": frozenset({"f", "file"}),
    "gsed": frozenset({"f", "file"}),
    "awk": frozenset({"f", "file"}),
    "gawk": frozenset({"f", "file"}),
    "grep": frozenset({"f", "file"}),
    "egrep": frozenset({"f", "file"}),
    "fgrep": frozenset({"f", "file"}),
    "zgrep": frozenset({"f", "file"}),
    "rg": frozenset({"f", "file", "ignore-file"}),
    "curl": frozenset({"T", "upload-file", "K", "config", "o", "output", "c", "cookie-jar",
                       "cacert", "cert", "key"}),
    "wget": frozenset({"O", "output-document", "i", "input-file", "post-file", "body-file",
                       "load-cookies", "save-cookies"}),
    "ssh": frozenset({"i", "F"}),
    "scp": frozenset({"i", "F"}),
}
_PATTERN_FIRST = frozenset({"sed", "gsed", "awk", "gawk", "mawk", "nawk", "grep", "egrep",
                            "fgrep", "zgrep", "rg", "ag"})
_PATTERN_GIVEN = frozenset({"e", "expression", "regexp", "f", "file"})
_PROC_SUBST = ("<(", ">(")  # operands that are process substitutions, not paths
_CHMOD_MODE = re.compile(r"[-+=][rwxXstugo]*")
# git config keys whose value git runs through the shell (``!`` prefixed for alias/helper).
_GIT_SHELL_KEYS = re.compile(
    r"(core\.(pager|editor|sshcommand|fsmonitor)|sequence\.editor|diff\.external|pager\..+|"
    r"(filter|merge|diff)\..+\.(clean|smudge|process|driver|textconv|command)|"
    r"uploadpack\.packobjectshook)",
    re.I,
)
_GIT_BANG_KEYS = re.compile(r"(alias\..+|credential(\..+)?\.helper)", re.I)
_SSH_CMD_OPTS = re.compile(r"\s*(proxycommand|localcommand|knownhostscommand)\s*[= ]\s*(.+)",
                           re.I | re.S)


# --------------------------------------------------------------------------- option parsing

_Opts = list[tuple[str, str | None]]


def _long_name(name: str, spec: _Spec) -> str:
    if name in spec.known_long or len(name) < 2:
        return name
    hits = [k for k in spec.known_long if k.startswith(name)]
    return hits[0] if len(hits) == 1 else name


def _getopt(
    vals: Sequence[str], i: int, end: int, spec: _Spec, stop_first: bool = False
) -> tuple[_Opts, list[str], int]:
    """Parse ``vals[i:end]`` as options of ``spec``.

    Returns (options as (name, value or None), positionals, index). With ``stop_first`` it
    stops at the first positional and the index is that positional's; else it is ``end``.
    """
    opts: _Opts = []
    pos: list[str] = []
    while i < end:
        a = vals[i]
        if a == "--":
            if stop_first:
                return opts, pos, i + 1
            pos.extend(vals[i + 1 : end])
            break
        if len(a) > 1 and a[0] == "-":
            if a[1] == "-" or spec.single_dash_long:
                body = a[2:] if a[1] == "-" else a[1:]
                name, eq, value = body.partition("=")
                name = _long_name(name, spec)
                if eq:
                    opts.append((name, value))
                elif name in spec.val_long and i + 1 < end:
                    opts.append((name, vals[i + 1]))
                    i += 1
                else:
                    opts.append((name, None))
            else:
                j = 1
                while j < len(a):
                    c = a[j]
                    rest = a[j + 1 :]
                    if c in spec.val_short:
                        if rest:
                            opts.append((c, rest))
                        elif i + 1 < end:
                            opts.append((c, vals[i + 1]))
                            i += 1
                        else:
                            opts.append((c, None))
                        break
                    if c in spec.opt_short:
                        opts.append((c, rest or None))
                        break
                    if c in spec.num_short and not rest and i + 1 < end and vals[i + 1].isdigit():
                        opts.append((c, vals[i + 1]))
                        i += 1
                        break
                    opts.append((c, None))
                    j += 1
        else:
            if stop_first:
                return opts, pos, i
            pos.append(a)
            if spec.stop:
                pos.extend(vals[i + 1 : end])
                break
        i += 1
    return opts, pos, end


def _flags(opts: _Opts, spec: _Spec) -> set[str]:
    out: set[str] = set()
    for name, _ in opts:
        if not name or (len(name) == 1 and not name.isalnum()):
            continue
        out.add(name)
        out.update(spec.aliases.get(name, ()))
    return out


# --------------------------------------------------------------------------- per-argv analysis


class _Out:
    """What one argv yields besides its SimpleCommand fields."""

    __slots__ = ("assigns", "flags", "inners", "opt_end", "paths", "positionals", "shells",
                 "stdin", "subcommand")

    def __init__(self, opt_end: int) -> None:
        self.opt_end = opt_end  # args before this index are the program's own (flags there)
        self.inners: list[tuple[int, int, str]] = []  # arg ranges of wrapped commands + label
        self.shells: list[tuple[str, str]] = []  # shell strings to parse one level deeper + label
        self.assigns: list[tuple[str, str]] = []
        self.stdin = ""  # non-empty: stdin is read as shell (the shell's name)
        self.flags: set[str] = set()
        self.positionals: list[str] = []
        self.subcommand = ""
        self.paths: list[str] = []


def _is_env_assign(v: str) -> bool:
    return "=" in v and not v.startswith(("=", "-"))


def _wrapper_out(vals: Sequence[str], spec: _Spec, label: str, skip: int = 0,
                 assign: bool = False) -> tuple[_Out, _Opts]:
    """Generic wrapper: options, ``skip`` positionals, optional NAME=val, then the command."""
    opts, _, i = _getopt(vals, 0, len(vals), spec, stop_first=True)
    out = _Out(opt_end=i)
    if assign:
        while i < len(vals) and _is_env_assign(vals[i]):
            name, _, value = vals[i].partition("=")
            out.assigns.append((name, value))
            i += 1
    i = min(len(vals), i + skip)
    out.opt_end = i
    if i < len(vals):
        out.inners.append((i, len(vals), label))
    return out, opts


def _has(opts: _Opts, *names: str) -> bool:
    return any(n in names for n, _ in opts)


def _optval(opts: _Opts, *names: str) -> str | None:
    for n, v in opts:
        if n in names and v is not None:
            return v
    return None


def _h_sudo(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    out, opts = _wrapper_out(vals, _WRAPPER_SPECS["sudo"], "sudo", assign=True)
    if _has(opts, "e", "edit"):
        out.inners.clear()
    elif not out.inners and _has(opts, "s", "shell", "i", "login"):
        out.stdin = "sudo"
    return out, opts


def _h_doas(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    out, opts = _wrapper_out(vals, _WRAPPER_SPECS["doas"], "doas")
    if not out.inners and _has(opts, "s"):
        out.stdin = "doas"
    return out, opts


def _h_env(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    out, opts = _wrapper_out(vals, _WRAPPER_SPECS["env"], "env", assign=True)
    split = _optval(opts, "S", "split-string")
    if split is not None:
        rest = " ".join(vals[out.opt_end :])
        out.shells.append((f"{split} {rest}".strip(), "env -S"))
        out.inners.clear()
    return out, opts


def _skip_n(n: int, label: str) -> Callable[[str, Sequence[str]], tuple[_Out, _Opts]]:
    def handler(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
        out, opts = _wrapper_out(vals, _WRAPPER_SPECS[label], label, skip=n)
        if _has(opts, "p", "pid") and label in ("chrt", "taskset", "ionice"):
            out.inners.clear()
        return out, opts

    return handler


def _h_plain(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    key = name.lower()
    return _wrapper_out(vals, _WRAPPER_SPECS.get(key, _DEFAULT), key)


def _h_flock(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    spec = _WRAPPER_SPECS["flock"]
    opts, _, i = _getopt(vals, 0, len(vals), spec, stop_first=True)
    out = _Out(opt_end=min(len(vals), i + 1))
    cmd = _optval(opts, "c", "command")
    if cmd is None and i + 1 < len(vals) and vals[i + 1] in ("-c", "--command"):
        out.opt_end = i + 2
        if i + 2 < len(vals):
            cmd = vals[i + 2]
            out.opt_end = i + 3
    if cmd is not None:
        out.shells.append((cmd, "flock -c"))
    elif i + 1 < len(vals):
        out.inners.append((i + 1, len(vals), "flock"))
    return out, opts


def _h_xargs(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    return _wrapper_out(vals, _WRAPPER_SPECS["xargs"], "xargs")


_PARALLEL_SEPS = frozenset({":::", "::::", ":::+", "::::+"})


def _h_parallel(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    opts, _, i = _getopt(vals, 0, len(vals), _WRAPPER_SPECS["parallel"], stop_first=True)
    out = _Out(opt_end=i)
    k = i
    while k < len(vals) and vals[k] not in _PARALLEL_SEPS:
        k += 1
    if k == i:  # no command: every input after ::: is a command line
        for v in vals[k + 1 :]:
            if v not in _PARALLEL_SEPS:
                out.shells.append((v, "parallel"))
    elif k - i == 1:
        out.shells.append((vals[i], "parallel"))
    else:
        out.inners.append((i, k, "parallel"))
    return out, opts


def _h_watch(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    opts, _, i = _getopt(vals, 0, len(vals), _WRAPPER_SPECS["watch"], stop_first=True)
    out = _Out(opt_end=i)
    if i < len(vals):
        if _has(opts, "x", "exec"):
            out.inners.append((i, len(vals), "watch"))
        else:
            out.shells.append((" ".join(vals[i:]), "watch"))
    return out, opts


def _h_find(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    out = _Out(opt_end=len(vals))
    i = 0
    while i < len(vals):
        a = vals[i]
        if a in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(vals) and not (
                vals[j] == ";" or (vals[j] == "+" and j > i + 1 and vals[j - 1] == "{}")
            ):
                j += 1
            if j > i + 1:
                out.inners.append((i + 1, j, f"find {a}"))
            i = j + 1
            continue
        i += 1
    return out, []


def _h_ssh(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    opts, _, i = _getopt(vals, 0, len(vals), _SSH, stop_first=True)
    out = _Out(opt_end=min(len(vals), i + 1))
    for n, v in opts:
        if n == "o" and v:
            m = _SSH_CMD_OPTS.fullmatch(v)
            if m:
                out.shells.append((m.group(2), "ssh -o"))
    if i < len(vals):
        more, _, j = _getopt(vals, i + 1, len(vals), _SSH, stop_first=True)  # ssh host -t -- cmd
        opts = opts + more
        out.opt_end = j
        rest = vals[j:]
        if rest:
            out.shells.append((" ".join(rest), "ssh"))
        elif not _has(opts, "N", "W", "O"):
            out.stdin = "ssh"
    return out, opts


def _h_su(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    key = name.lower()
    spec = _WRAPPER_SPECS[key]
    opts, _, _ = _getopt(vals, 0, len(vals), spec)
    if key == "runuser" and _has(opts, "u", "user") and not _has(opts, "c", "command"):
        return _wrapper_out(vals, spec, "runuser")  # runuser -u USER [--] CMD ARGS
    out = _Out(opt_end=len(vals))
    cmd = _optval(opts, "c", "command", "session-command")
    if cmd is not None:
        out.shells.append((cmd, f"{key} -c"))
    else:
        out.stdin = key
    return out, opts


def _h_shell(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    n = len(vals)
    i = 0
    has_c = stdin = False
    opts: _Opts = []
    while i < n:
        a = vals[i]
        if a in ("--", "-"):
            i += 1
            break
        if a.startswith("--"):
            opts.append((a[2:].partition("=")[0], None))
            i += 2 if a in ("--rcfile", "--init-file") else 1
            continue
        if len(a) > 1 and a[0] in "-+":
            cluster = a[1:]
            if a[0] == "-":
                has_c = has_c or "c" in cluster
                stdin = stdin or "s" in cluster
                opts.extend((c, None) for c in cluster)
            i += 1 + cluster.count("o") + cluster.count("O")
            continue
        break
    out = _Out(opt_end=min(i, n))
    if has_c:
        if i < n:
            out.shells.append((vals[i], f"{name} -c"))
    elif i >= n or stdin:
        out.stdin = name
    return out, opts


def _h_eval(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    args = list(vals[1:] if vals[:1] == ["--"] else vals)
    out = _Out(opt_end=0)
    if args:
        out.shells.append((" ".join(args), "eval"))
    return out, []


def _h_trap(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    args = list(vals[1:] if vals[:1] == ["--"] else vals)
    out = _Out(opt_end=0)
    if len(args) >= 2 and not args[0].startswith("-"):
        out.shells.append((args[0], "trap"))
    return out, []


def _h_script(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    opts, _, _ = _getopt(vals, 0, len(vals), _WRAPPER_SPECS["script"])
    out = _Out(opt_end=len(vals))
    cmd = _optval(opts, "c", "command")
    if cmd is not None:
        out.shells.append((cmd, "script -c"))
    return out, opts


def _h_busybox(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    out = _Out(opt_end=0)
    if vals and not vals[0].startswith("-"):
        out.inners.append((0, len(vals), "busybox"))
    return out, []


_WRAPPERS: dict[str, Callable[[str, Sequence[str]], tuple[_Out, _Opts]]] = {
    "sudo": _h_sudo,
    "doas": _h_doas,
    "env": _h_env,
    "nice": _h_plain,
    "nohup": _h_plain,
    "timeout": _skip_n(1, "timeout"),
    "time": _h_plain,
    "stdbuf": _h_plain,
    "command": _h_plain,
    "builtin": _h_plain,
    "exec": _h_plain,
    "xargs": _h_xargs,
    "parallel": _h_parallel,
    "find": _h_find,
    "watch": _h_watch,
    "unbuffer": _h_plain,
    "ionice": _skip_n(0, "ionice"),
    "setsid": _h_plain,
    "flock": _h_flock,
    "strace": _h_plain,
    "ltrace": _h_plain,
    "chrt": _skip_n(1, "chrt"),
    "taskset": _skip_n(1, "taskset"),
    "fakeroot": _h_plain,
    "torsocks": _h_plain,
    "proxychains": _h_plain,
    "proxychains4": _h_plain,
    "nsenter": _h_plain,
    "unshare": _h_plain,
    "firejail": _h_plain,
    "pkexec": _h_plain,
    "caffeinate": _h_plain,
    "catchsegv": _h_plain,
    "valgrind": _h_plain,
    "sshpass": _h_plain,
    "coproc": _h_plain,
    "busybox": _h_busybox,
    "ssh": _h_ssh,
    "su": _h_su,
    "runuser": _h_su,
    "eval": _h_eval,
    "trap": _h_trap,
    "script": _h_script,
}
for _sh in _SHELLS:
    _WRAPPERS[_sh] = _h_shell

# Subcommands that run a command given as the following words: (program, subcommand).
_RUNNERS: dict[tuple[str, str], _Spec] = {
    ("uv", "run"): _UV_SPEC,
    ("poetry", "run"): _POETRY_SPEC,
    ("pipenv", "run"): _mk(),
    ("pdm", "run"): _mk(vs="p", vl="project"),
    ("conda", "run"): _CONDA_SPEC,
    ("mamba", "run"): _CONDA_SPEC,
    ("bundle", "exec"): _mk(vl="gemfile"),
    ("npm", "exec"): _mk(vs="c", vl="package call", al="y yes|c call"),
    ("npm", "x"): _mk(vs="c", vl="package call", al="y yes|c call"),
    ("pnpm", "exec"): _PNPM_SPEC,
    ("pnpm", "dlx"): _PNPM_SPEC,
    ("yarn", "exec"): _mk(),
    ("yarn", "dlx"): _mk(vs="p", vl="package"),
}
_NPX = _mk(vs="pc", vl="package call", al="y yes|q quiet|c call|p package")


def _parse_program(key: str, vals: Sequence[str], out: _Out) -> None:
    """Fill flags, subcommand and positionals of a non-wrapper program (or a runner)."""
    sp = _SUBPROGS.get(key)
    end = out.opt_end
    if key in _NPX_NAMES:
        opts, pos, i = _getopt(vals, 0, end, _NPX, stop_first=True)
        out.flags = _flags(opts, _NPX)
        call = _optval(opts, "c", "call")
        if call is not None:
            out.shells.append((call, f"{key} -c"))
        elif i < end:
            out.inners.append((i, end, key))
            out.opt_end = i
        out.positionals = list(vals[i:])
        return
    if key == "tar" and vals and _TAR_OLD_STYLE.fullmatch(vals[0]):
        vals = _tar_old_style(vals)
        end = len(vals)
    if sp is None:
        spec = _FILE_SPECS.get(key) or _WRAPPER_SPECS.get(key) or _DEFAULT
        opts, pos, _ = _getopt(vals, 0, end, spec)
        out.flags = _flags(opts, spec)
        if key == "chmod":
            out.flags = _chmod_flags(vals[:end], spec)
            opts, pos = [], [v for v in vals[:end] if v == "-" or not v.startswith("-")
                             or _CHMOD_MODE.fullmatch(v)]
            if pos[:1] and pos[0] == "--":
                pos = pos[1:]
        out.positionals = pos
        _paths(key, opts, pos, out)
        return
    i = 0
    g_opts: _Opts = []
    while True:
        more, _, i = _getopt(vals, i, end, sp.glob, stop_first=True)
        g_opts.extend(more)
        if sp.plus_toolchain and i < end and vals[i].startswith("+"):
            i += 1
            continue
        break
    flags = _flags(g_opts, sp.glob)
    positionals: list[str] = []
    sub = ""
    if sp.mode == "make":
        opts, pos, _ = _getopt(vals, 0, end, sp.base)
        out.flags = _flags(opts, sp.base)
        out.positionals = pos
        out.subcommand = next((p for p in pos if "=" not in p), "")
        return
    if i < end:
        sub = vals[i]
        positionals.append(sub)
        i += 1
        if sp.mode == "aws" and i < end:
            more, _, j = _getopt(vals, i, end, sp.base, stop_first=True)
            g_opts.extend(more)
            flags |= _flags(more, sp.base)
            if j < end:
                sub = f"{sub} {vals[j]}"
                positionals.append(vals[j])
                i = j + 1
    sub_key = sub.lower()
    runner = _RUNNERS.get((key, sub_key))
    if runner is not None:
        opts, _, j = _getopt(vals, i, end, runner, stop_first=True)
        flags |= _flags(opts, runner)
        call = _optval(opts, "c", "call") if key == "npm" else None
        if call is not None:
            out.shells.append((call, f"{key} {sub_key} -c"))
        elif j < end:
            out.inners.append((j, end, f"{key} {sub_key}"))
        out.opt_end = j
        out.flags = flags
        out.subcommand = sub
        out.positionals = positionals + list(vals[j:])
        return
    spec = sp.subs.get(sub_key, sp.base)
    opts, pos, _ = _getopt(vals, i, end, spec)
    flags |= _flags(opts, spec)
    out.flags = flags
    out.subcommand = sub
    out.positionals = positionals + pos
    if key == "git":
        _git_shells(g_opts, sub_key, opts, out)
        out.paths.extend(v for n, v in g_opts if n in ("C", "git-dir", "work-tree") and v)
        rest = vals[i:end]
        if "--" in rest:  # pathspecs
            out.paths.extend(p for p in rest[rest.index("--") + 1 :] if p)
        elif sub_key == "diff" and _has(opts, "no-index"):
            out.paths.extend(p for p in pos if p)


_TAR_OLD_STYLE = re.compile(r"[A-Za-z]+")


def _tar_old_style(vals: Sequence[str]) -> list[str]:
    """``tar xzf a.tgz dir`` -> ``tar -x -z -f a.tgz dir`` (value letters take args in order)."""
    out: list[str] = []
    rest = list(vals[1:])
    for c in vals[0]:
        out.append("-" + c)
        if c in _TAR.val_short and rest:
            out.append(rest.pop(0))
    return out + rest


def _git_shells(g_opts: _Opts, sub: str, opts: _Opts, out: _Out) -> None:
    configs = [v for n, v in g_opts if n == "c" and v]
    if sub == "clone":
        configs += [v for n, v in opts if n in ("c", "config") and v]
    for kv in configs:
        k, eq, v = kv.partition("=")
        if not eq or not v:
            continue
        if _GIT_SHELL_KEYS.fullmatch(k):
            out.shells.append((v, "git -c"))
        elif _GIT_BANG_KEYS.fullmatch(k) and v.startswith("!"):
            out.shells.append((v[1:], "git -c"))
    if sub == "rebase":
        for n, ov in opts:
            if n in ("x", "exec") and ov:
                out.shells.append((ov, "git rebase --exec"))


def _chmod_flags(vals: Sequence[str], spec: _Spec) -> set[str]:
    flagged = [v for v in vals if v.startswith("-") and v != "-" and not _CHMOD_MODE.fullmatch(v)]
    opts, _, _ = _getopt(flagged, 0, len(flagged), spec)
    return _flags(opts, spec)


def _paths(key: str, opts: _Opts, pos: list[str], out: _Out) -> None:
    """Path-like operands of file commands (raw, unresolved)."""
    found: list[str] = []
    path_opts = _PATH_OPTS.get(key, frozenset())
    for n, v in opts:
        if not v:
            continue
        if n in path_opts:
            found.append(v)
        elif key != "curl":
            continue
        elif n in ("d", "data", "data-binary", "data-ascii", "json"):
            if v.startswith("@") and v[1:] != "-":
                found.append(v[1:])
        elif n == "data-urlencode":
            head, at, tail = v.partition("@")
            if at and "=" not in head and tail != "-":
                found.append(tail)
        elif n in ("F", "form"):
            _, eq, fv = v.partition("=")
            if eq and fv[:1] in ("@", "<") and fv[1:] != "-":
                found.append(fv[1:].split(";", 1)[0])
    if key in _ALL_POS_FILES:
        found.extend(pos)
    elif key in ("chmod", "chown", "chgrp"):
        found.extend(pos if _has(opts, "reference") else pos[1:])
    elif key in _PATTERN_FIRST:
        given = any(n in _PATTERN_GIVEN for n, _ in opts) or (key == "rg" and _has(opts, "files"))
        found.extend(pos if given else pos[1:])
    elif key == "dd":
        found.extend(p[3:] for p in pos if p.startswith(("if=", "of=")) and len(p) > 3)
    elif key in ("source", "."):
        found.extend(pos[:1])
    elif key == "tar" and _has(opts, "c", "create", "r", "append", "u", "update"):
        found.extend(pos)  # files being archived
    out.paths.extend(p for p in found if p and p not in ("-", "{}") and p[:2] not in _PROC_SUBST)


def _analyse_argv(vals: Sequence[str], name: str) -> _Out:
    """Flags, positionals, paths, inner commands and shell strings of one argv."""
    key = name.lower()
    if key not in _KNOWN:  # fast path: a program the tables know nothing about
        out = _Out(len(vals))
        if any(v[:1] == "-" for v in vals):
            opts, out.positionals, _ = _getopt(vals, 0, len(vals), _DEFAULT)
            out.flags = _flags(opts, _DEFAULT)
        else:
            out.positionals = list(vals)
        return out
    handler = _WRAPPERS.get(key)
    if handler is not None:
        out, opts = handler(name, vals)
        if key == "find":
            _find_program(vals, out)
            return out
        spec = _WRAPPER_SPECS.get(key, _SSH if key == "ssh" else _DEFAULT)
        out.flags = _flags(opts, spec)
        out.positionals = [v for v in _getopt(vals, 0, out.opt_end, spec)[1]] + list(
            vals[out.opt_end :]
        )
        if key == "ssh":
            _paths(key, opts, [], out)
        return out
    out = _Out(opt_end=len(vals))
    _parse_program(key, vals, out)
    if key in ("rsync", "scp", "sftp"):
        opts, _, _ = _getopt(vals, 0, len(vals), _FILE_SPECS[key])
        for n, v in opts:
            if n in ("e", "rsh") and v:
                out.shells.append((v, f"{key} -e"))
            elif n == "o" and v:
                m = _SSH_CMD_OPTS.fullmatch(v)
                if m:
                    out.shells.append((m.group(2), f"{key} -o"))
    return out


_NPX_NAMES = frozenset({"npx", "bunx", "pnpx"})
_KNOWN = frozenset(_WRAPPERS) | frozenset(_SUBPROGS) | frozenset(_FILE_SPECS) | _NPX_NAMES


def _find_program(vals: Sequence[str], out: _Out) -> None:
    inner: set[int] = set()
    for a, b, _ in out.inners:
        inner.update(range(a - 1, b + 1))
    flags: set[str] = set()
    pos: list[str] = []
    expr = False
    for k, v in enumerate(vals):
        if k in inner:
            if k < len(vals) and vals[k] in ("-exec", "-execdir", "-ok", "-okdir"):
                flags.add(vals[k][1:])
            continue
        if len(v) > 1 and v[0] == "-":
            expr = True
            flags.add(v.lstrip("-").partition("=")[0])
        elif v in ("(", "!", ")", ","):
            expr = True
        elif not expr:
            pos.append(v)
    out.flags = flags
    out.positionals = pos
    out.paths.extend(p for p in pos if p and p != "-")


# --------------------------------------------------------------------------- the walk

_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_LEAVES = frozenset({
    "word", "number", "raw_string", "ansi_c_string", "string_content", "heredoc_content",
    "heredoc_start", "heredoc_end", "variable_name", "special_variable_name", "comment",
    "file_descriptor", "test_operator", "regex", "extglob_pattern",
})
_DYNAMIC_NODES = frozenset(_EXPANSIONS)
# Expression nodes that can only hold a command via $( ), backticks or <( ): skipped when
# their text has none of "$", "`", "(".
_EXPRESSIONS = frozenset({
    "string", "concatenation", "translated_string", "test_command", "unary_expression",
    "binary_expression", "parenthesized_expression", "postfix_expression",
    "ternary_expression", "array", "subscript",
})
# Children of a command node that are not its arguments (`time (cmd)` puts a subshell there).
_NOT_ARGS = frozenset({
    "subshell", "compound_statement", "do_group", "pipeline", "list", "redirected_statement",
    "if_statement", "while_statement", "for_statement", "c_style_for_statement",
    "case_statement", "function_definition", "command", "negated_command", "test_command",
    "comment", "declaration_command", "unset_command",
})
_WORDISH = frozenset({"word", "number", "raw_string", "ansi_c_string", "string",
                      "translated_string", "concatenation"})
# Nodes through which a heredoc/here-string reaches the stdin of the commands inside.
_STDIN_CONTAINERS = frozenset({"pipeline", "redirected_statement", "compound_statement",
                               "subshell", "list"})
_RUNS_ARG = frozenset({"eval", *_SHELLS})  # their last argument is run as code
_MAX_STDIN_SCAN = 64  # nodes examined looking for the shell that reads a heredoc
# Nodes whose children get a parent link (the lookups heredocs, here-strings and pipes need).
_TRACK_PARENT = frozenset({"redirected_statement", "heredoc_redirect", "herestring_redirect",
                           "pipeline", "command_substitution", "file_redirect"})


class _State:
    """Accumulates results across the top-level text and nested shell strings."""

    __slots__ = ("assignments", "commands", "dynamic", "errors", "full", "max_depth", "paths",
                 "redirects", "text_left")

    def __init__(self, max_depth: int) -> None:
        self.commands: list[SimpleCommand] = []
        self.redirects: list[Redirect] = []
        self.assignments: list[tuple[str, str]] = []
        self.errors: list[str] = []
        self.paths: dict[str, None] = {}
        self.dynamic = False
        self.full = False
        self.max_depth = max_depth
        self.text_left = MAX_TEXT_CHARS

    def error(self, msg: str) -> None:
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(msg)

    def add(self, cmd: SimpleCommand) -> bool:
        if self.full:
            return False
        if len(self.commands) >= MAX_COMMANDS:
            self.full = True
            self.error(f"more than MAX_COMMANDS={MAX_COMMANDS} commands")
            return False
        self.text_left -= 2 * len(cmd.text)  # args are (unquoted) parts of the text
        if self.text_left < 0:
            self.full = True
            self.error(f"more than MAX_TEXT_CHARS={MAX_TEXT_CHARS} characters of commands")
            return False
        self.commands.append(cmd)
        if cmd.dynamic:
            self.dynamic = True
        return True

    def result(self) -> ShellAnalysis:
        return ShellAnalysis(
            commands=tuple(self.commands),
            redirects=tuple(self.redirects),
            assignments=tuple(self.assignments),
            parse_ok=not self.errors,
            dynamic=self.dynamic,
            errors=tuple(self.errors),
            path_args=tuple(self.paths),
        )


def _analyze_text(st: _State, text: str, depth: int, label: str) -> None:
    if depth > st.max_depth:
        st.error(f"nesting deeper than MAX_DEPTH={st.max_depth} at {label!r}")
        return
    src = text.encode("utf-8", "surrogatepass")
    # tree-sitter-bash's scanner calls ctype isalpha() etc. on the raw code point: non-ASCII
    # input reads outside the ctype table (a segfault for large code points). Parse an
    # ASCII image with the same byte offsets; words are read from the real bytes.
    tree = _parser().parse(src if src.isascii() else src.translate(_ASCII_IMAGE))
    root = tree.root_node
    walker = _Walker(st, src, depth, label)
    if root.has_error:
        walker.check_errors(root)
    walker.run(root)


class _Walker:
    """Walks one parse tree (iteratively: long && chains nest deeply)."""

    __slots__ = ("bare_cat", "depth", "echo", "has_error", "heredoc_floor", "heredocs", "label",
                 "parent", "prev", "runs_output", "src", "st", "stdin", "tolerated")

    def __init__(self, st: _State, src: bytes, depth: int, label: str) -> None:
        self.st = st
        self.src = src
        self.depth = depth
        self.label = label
        self.stdin: dict[int, str] = {}  # command node id -> shell reading its stdin
        self.echo: dict[int, str] = {}  # command node id -> text an echo/printf prints
        self.has_error = False
        self.tolerated: set[int] = set()  # ERROR node ids known to be parser quirks
        self.bare_cat: set[int] = set()  # ids of `cat` commands without operands
        self.runs_output: set[int] = set()  # ids of $(..) whose output is run as a command
        # Node.parent / sibling lookups are O(siblings) in tree-sitter: record what is needed.
        self.parent: dict[int, Node] = {}  # for children of _TRACK_PARENT nodes
        self.prev: dict[int, Node] = {}  # previous named sibling, in pipelines (and on errors)
        self.heredocs: dict[int, tuple[str, bool]] = {}  # heredoc_redirect id -> body, quoted
        self.heredoc_floor = 0  # a heredoc body starts after the previous one's end

    def text(self, node: Node) -> str:
        return _dec(self.src[node.start_byte : node.end_byte])

    # ---------------------------------------------------------------- errors

    def check_errors(self, root: Node) -> None:
        self.has_error = True
        where = f" in {self.label!r} string at depth {self.depth}" if self.depth else ""
        stack = [root]
        while stack:
            node = stack.pop()
            if node.is_missing:
                self.st.error(f"syntax error{where}: missing {node.type!r} at byte "
                              f"{node.start_byte}")
                continue
            if node.type == "ERROR":
                if self._herestring_quirk(node):
                    self.tolerated.add(node.id)
                    continue
                snippet = self.text(node)[:40]
                self.st.error(f"syntax error{where} at byte {node.start_byte}: {snippet!r}")
                continue
            stack.extend(c for c in reversed(node.children) if c.has_error)

    def _herestring_quirk(self, node: Node) -> bool:
        """``cmd >f <<<x`` parses as ERROR('<<') + file_redirect('<' x): really valid."""
        kids = node.children
        nxt = node.next_sibling
        return (
            len(kids) == 1
            and kids[0].type == "<<"
            and nxt is not None
            and nxt.type == "file_redirect"
            and nxt.start_byte == node.end_byte
            and self.src[nxt.start_byte : nxt.start_byte + 1] == b"<"
        )

    # ---------------------------------------------------------------- traversal

    def run(self, root: Node) -> None:
        st = self.st
        src = self.src
        parent = self.parent
        handlers: dict[str, Callable[[Node], list[Node]]] = {
            "command": self.command,
            "declaration_command": self.declaration,
            "unset_command": self.declaration,
            "variable_assignment": self.assignment,
            "file_redirect": self.redirect,
            "heredoc_redirect": self.redirect,
            "herestring_redirect": self.redirect,
            "#heredoc": self.heredoc_done,
        }
        stack: list[tuple[Node, str]] = [(root, root.type)]
        while stack:
            if st.full:
                return
            node, t = stack.pop()
            handler = handlers.get(t)
            if handler is not None:
                kids = handler(node)
                if t == "heredoc_redirect":
                    stack.append((node, "#heredoc"))
            elif (
                t == "command_substitution"
                and src[node.start_byte : node.start_byte + 1] == b"`"
                and b"\\`" in src[node.start_byte : node.end_byte]
            ):
                st.dynamic = True
                kids = self.nested_backticks(node)
            else:
                if t in _DYNAMIC_NODES:
                    st.dynamic = True
                elif t == "for_statement" and not st.dynamic:
                    st.dynamic = any(_word(v, src).dyn for v in node.children_by_field_name("value"))
                kids = node.named_children
            if t in _TRACK_PARENT:
                prev: Node | None = None
                track_prev = t == "pipeline" or self.has_error
                for k in kids:
                    parent[k.id] = node
                    if track_prev and prev is not None:
                        self.prev[k.id] = prev
                    prev = k
            for k in reversed(kids):
                kt = k.type
                if kt in _LEAVES:
                    continue
                if kt in _EXPRESSIONS:
                    seg = src[k.start_byte : k.end_byte]
                    if b"$" not in seg and b"`" not in seg and b"(" not in seg:
                        continue  # cannot hold a command or an expansion
                stack.append((k, kt))

    def nested_backticks(self, node: Node) -> list[Node]:
        """`` `a \\`b\\`` ``: the inner escaped backticks run too; re-parse unescaped."""
        inner = self.text(node)[1:-1]
        body = re.sub(r"\\([`$\\])", r"\1", inner)
        _analyze_text(self.st, body, self.depth + 1, "`...`")
        return []

    def assignment(self, node: Node) -> list[Node]:
        name_node = node.child_by_field_name("name")
        value_node = node.child_by_field_name("value")
        name = self.text(name_node) if name_node is not None else ""
        if value_node is None:
            self.st.assignments.append((name, ""))
            return []
        w = _word(value_node, self.src)
        if w.dyn:
            self.st.dynamic = True
        self.st.assignments.append((name, w.value))
        return [value_node] if w.exp or value_node.type not in _WORDISH else []

    def declaration(self, node: Node) -> list[Node]:
        kids = node.children
        if not kids:
            return []
        keyword = self.text(kids[0])
        words: list[_Word] = [_Word(keyword, False, kids[0].start_byte, kids[0].end_byte)]
        more: list[Node] = []
        for ch in node.named_children:
            if ch.type == "variable_assignment":
                more.extend(self.assignment(ch))
                name_node = ch.child_by_field_name("name")
                nm = self.text(name_node) if name_node is not None else ""
                words.append(_Word(f"{nm}={self.st.assignments[-1][1]}", False,
                                   ch.start_byte, ch.end_byte))
            elif ch.type == "variable_name":
                words.append(_Word(self.text(ch), False, ch.start_byte, ch.end_byte))
            else:
                words.append(_word(ch, self.src))
                more.append(ch)
        self.emit(words, self.text(node), node)
        return more

    def command(self, node: Node) -> list[Node]:
        src = self.src
        cut = node.end_byte
        name_node: Node | None = None
        args: list[Node] = []
        more: list[Node] = []
        words: list[_Word] = []
        for ch in node.named_children:
            ct = ch.type
            if ct == "variable_assignment":
                more.extend(self.assignment(ch))
            elif ct == "command_name":
                name_node = ch
                inner = ch.named_children
                w = _word(inner[0] if inner else ch, src)
                words.append(w)
                if w.exp:
                    more.append(ch)
                    if inner:
                        self._note_runs_output(inner[0])
            elif ct in _REDIRECTS:
                more.append(ch)
                self.parent[ch.id] = node
            elif ct in _NOT_ARGS:
                more.append(ch)
            elif name_node is not None:
                if src[ch.start_byte : ch.start_byte + 1] == b"\n":
                    cut = ch.start_byte  # tree-sitter quirk: a heredoc body line taken as args
                    break
                if ct == "word":  # fast path of _word for the common plain word
                    raw = src[ch.start_byte : ch.end_byte]
                    if b"\\" not in raw:
                        value = _dec(raw)
                        words.append(_Word(value, _PATTERN.search(value) is not None,
                                           ch.start_byte, ch.end_byte))
                        args.append(ch)
                        continue
                w = _word(ch, src)
                words.append(w)
                args.append(ch)
                if w.exp or ct not in _WORDISH:
                    more.append(ch)
            else:
                more.append(ch)
        if name_node is None or name_node.end_byte == name_node.start_byte:
            return more
        stdin, name = self.emit(words, _dec(src[node.start_byte : cut]).rstrip(), node)
        key = name.lower()
        if key in _RUNS_ARG and args:
            self._note_runs_output(args[-1])
        elif key == "cat" and len(words) == 1:
            self.bare_cat.add(node.id)
        if not stdin and key not in ("echo", "printf"):
            return more
        anchor = node
        parent = self.parent.get(node.id)
        if parent is not None and parent.type == "redirected_statement":
            anchor = parent
            parent = self.parent.get(parent.id)
        if stdin:
            self.stdin[node.id] = self.stdin[anchor.id] = stdin
            if parent is not None and parent.type == "pipeline":
                prev = self.prev.get(anchor.id)
                if prev is not None and prev.id in self.echo:
                    _analyze_text(self.st, self.echo[prev.id], self.depth + 1, f"| {stdin}")
        elif len(words) > 1:
            printed = [w.value for w in words[1:]]
            escapes = key == "printf"
            while key == "echo" and printed and printed[0] in ("-n", "-e", "-E", "-ne", "-en"):
                escapes = escapes or "e" in printed[0]
                printed = printed[1:]
            line = " ".join(printed)
            self.echo[node.id] = self.echo[anchor.id] = _ansi_c(line) if escapes else line
        return more

    def _note_runs_output(self, node: Node) -> None:
        """Remember a ``$(..)`` (bare or alone in quotes) whose output is run as code."""
        if node.type == "string":
            kids = node.named_children
            if len(kids) != 1:
                return
            node = kids[0]
        if node.type == "command_substitution":
            self.runs_output.add(node.id)

    def emit(self, words: list[_Word], text: str, node: Node) -> tuple[str, str]:
        """List the command in ``words`` and everything it wraps.

        Returns (the shell reading its stdin or "", the command's normalised name).
        """
        st = self.st
        stdin = ""
        first_name = ""
        # at depth > 0 the commands of the string are produced by its wrapper ("bash -c"...)
        work: list[tuple[list[_Word], str, str] | tuple[str, str]] = [(words, text, self.label)]
        unwrapped = 0
        while work:
            item = work.pop()
            if len(item) == 2:
                _analyze_text(st, item[0], self.depth + 1, item[1])
                continue
            ws, wtext, label = item
            head = ws[0]
            name = _norm_name(head.value, head.dyn)
            if not first_name:
                first_name = name
            vals = [w.value for w in ws[1:]]
            out = _analyse_argv(vals, name)
            dyn = head.dyn
            if not dyn:
                for w in ws:
                    if w.dyn:
                        dyn = True
                        break
            cmd = SimpleCommand(
                name,
                tuple(vals),
                (head.value, *vals),
                wtext,
                frozenset(out.flags),
                out.subcommand,
                tuple(out.positionals),
                label,
                self.depth,
                dyn,
            )
            if not st.add(cmd):
                break
            if out.assigns:
                st.assignments.extend(out.assigns)
            for p in out.paths:
                st.paths[p] = None
            if out.stdin:
                stdin = out.stdin
            if out.inners or out.shells:
                unwrapped += 1
                if unwrapped > MAX_WRAPPERS:
                    st.error(f"wrapper chain longer than MAX_WRAPPERS={MAX_WRAPPERS} at {name!r}")
                    break
                pending: list[tuple[list[_Word], str, str] | tuple[str, str]] = []
                for a, b, lab in out.inners:
                    sub = ws[1 + a : 1 + b]
                    if sub:
                        stext = _dec(self.src[sub[0].start : sub[-1].end])
                        pending.append((sub, stext, lab))
                pending.extend(out.shells)
                work.extend(reversed(pending))
        return stdin, first_name

    def redirect(self, node: Node) -> list[Node]:
        st = self.st
        t = node.type
        src = self.src
        if t == "heredoc_redirect":
            body, quoted, op = self._heredoc_text(node)
            dyn = not quoted and ("$" in body or "`" in body)
            st.redirects.append(Redirect(op or "<<", "", dyn))
            if dyn:
                st.dynamic = True
            self.heredocs[node.id] = (body, quoted)
            # the body is handled (as "#heredoc") once the rest of the line has been walked
            return [k for k in node.named_children if k.type != "heredoc_body"]
        if t == "herestring_redirect":
            content = [c for c in node.named_children if c.type != "file_descriptor"]
            w = _word(content[-1], src) if content else _Word("", False, 0, 0)
            op_end = content[-1].start_byte if content else node.end_byte
            op = _dec(src[node.start_byte : op_end]).strip() or "<<<"
            self._herestring(node, op, w)
            return node.named_children
        # file_redirect
        dests = node.children_by_field_name("destination")
        if self.has_error:
            prev = self.prev.get(node.id)
            if prev is not None and prev.id in self.tolerated and dests:
                self._herestring(node, "<<<", _word(dests[0], src))
                return node.named_children
        if dests:
            d = dests[0]
            op = _dec(src[node.start_byte : d.start_byte]).strip()
            w = _word(d, src)
            if len(dests) > 1:
                w = _Word(" ".join(_word(x, src).value for x in dests), True, 0, 0)
        else:
            op = self.text(node).strip()
            w = _Word("", False, 0, 0)
        st.redirects.append(Redirect(op, w.value, w.dyn))
        if w.dyn:
            st.dynamic = True
        fd_dup = op.endswith("&") and (w.value.isdigit() or w.value.endswith("-"))
        if w.value and not fd_dup and w.value[:2] not in _PROC_SUBST:
            st.paths[w.value] = None
        return node.named_children

    def _herestring(self, node: Node, op: str, w: _Word) -> None:
        self.st.redirects.append(Redirect(op, w.value, w.dyn))
        if w.dyn:
            self.st.dynamic = True
        shell = self._owner_stdin(node)
        if shell and w.value:
            _analyze_text(self.st, w.value, self.depth + 1, f"{shell} <<<")

    def _stdin_of(self, node: Node) -> str:
        """The shell reading the stdin of ``node`` (a command, pipeline, group...), or ""."""
        stack = [node]
        seen = 0
        while stack and seen < _MAX_STDIN_SCAN:
            n = stack.pop()
            seen += 1
            shell = self.stdin.get(n.id, "")
            if shell:
                return shell
            if n.type in _STDIN_CONTAINERS:
                kids = n.named_children
                if n.type == "redirected_statement":
                    body = n.child_by_field_name("body")
                    kids = [body] if body is not None else []
                stack.extend(reversed(kids))
        return ""

    def _owner_stdin(self, redirect: Node) -> str:
        owner = self.parent.get(redirect.id)
        return self._stdin_of(owner) if owner is not None else ""

    def _cat_output_runs(self, redirect: Node) -> bool:
        """``$(cat <<EOF ... EOF)`` whose output is run as a command (name, bash -c, eval)."""
        owner = self.parent.get(redirect.id)
        if owner is None:
            return False
        cmd = owner.child_by_field_name("body") if owner.type == "redirected_statement" else owner
        if cmd is None or cmd.id not in self.bare_cat:
            return False
        sub = self.parent.get(owner.id)
        return sub is not None and sub.type == "command_substitution" and sub.id in self.runs_output

    def _heredoc_text(self, node: Node) -> tuple[str, bool, str]:
        """(body, delimiter quoted?, operator) of a heredoc, taken from the source.

        tree-sitter-bash mis-bounds some bodies (a first line starting with a backslash, tab
        stripping with <<-), so the body is the text from the line after the operator (or
        after the previous heredoc) up to the end delimiter.
        """
        start = end = body = None
        for k in node.named_children:
            if k.type == "heredoc_start":
                start = k
            elif k.type == "heredoc_end":
                end = k
            elif k.type == "heredoc_body":
                body = k
        src = self.src
        op_end = start.start_byte if start is not None else node.end_byte
        op = _dec(src[node.start_byte : op_end]).strip()
        delim = self.text(start) if start is not None else ""
        quoted = any(q in delim for q in "'\"\\")
        nl = src.find(b"\n", start.end_byte if start is not None else node.start_byte)
        b0 = max(nl + 1 if nl >= 0 else len(src), self.heredoc_floor)
        if end is not None:
            b1 = end.start_byte
            self.heredoc_floor = end.end_byte
        else:
            b1 = body.end_byte if body is not None else len(src)
        return _dec(src[b0 : max(b0, b1)]), quoted, op

    def heredoc_done(self, redirect: Node) -> list[Node]:
        """Parse a heredoc body fed to a shell; else run the substitutions an unquoted one has."""
        body, quoted = self.heredocs.pop(redirect.id, ("", True))
        shell = self._owner_stdin(redirect)
        if not shell:
            for ch in redirect.named_children:
                if ch.type == "pipeline":
                    shell = self._stdin_of(ch)
                    if shell:
                        break
        label = f"{shell} <<" if shell else ("$(cat <<)" if self._cat_output_runs(redirect) else "")
        if label:
            _analyze_text(self.st, body, self.depth + 1, label)
        elif not quoted:
            for sub in _substitutions(body):
                _analyze_text(self.st, sub, self.depth + 1, "heredoc $(..)")
        return []


def _substitutions(text: str) -> list[str]:
    """The insides of ``$(..)`` and backticks in heredoc text (naive paren matching)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
        elif text.startswith("$((", i):
            i += 3
        elif text.startswith("$(", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text[j] == "\\":
                    j += 1
                elif text[j] == "(":
                    depth += 1
                elif text[j] == ")":
                    depth -= 1
                j += 1
            out.append(text[i + 2 : j - 1 if depth == 0 else j])
            i = j
        elif c == "`":
            j = i + 1
            while j < n and text[j] != "`":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i + 1 : j])
            i = j + 1
        else:
            i += 1
    return out


# --------------------------------------------------------------------------- entry points


def analyze(text: str, max_depth: int = MAX_DEPTH) -> ShellAnalysis:
    """Analyse shell command ``text``; never raises.

    ``max_depth`` bounds nested shell strings (clamped to 0..16). Empty or blank text gives
    ``parse_ok=True`` and no commands. Any failure (syntax error, over-deep nesting, more
    than :data:`MAX_COMMANDS` commands, text over :data:`MAX_INPUT_CHARS`, or an internal
    error) gives ``parse_ok=False`` with the reason in ``errors``; whatever was found before
    the failure is still listed.
    """
    try:
        depth_cap = max(0, min(int(max_depth), _HARD_MAX_DEPTH))
    except (TypeError, ValueError, OverflowError):
        depth_cap = MAX_DEPTH
    st = _State(depth_cap)
    try:
        if not isinstance(text, str):
            st.error(f"not a string: {type(text).__name__}")
        elif len(text) > MAX_INPUT_CHARS:
            st.error(f"input longer than MAX_INPUT_CHARS={MAX_INPUT_CHARS}")
        elif text.strip():
            # bash drops NUL bytes (and a NUL ends an execve argument): analyse without them
            _analyze_text(st, text.replace("\0", ""), 0, "")
    except Exception as exc:  # the contract: never raise on any input
        st.error(f"internal error: {type(exc).__name__}: {exc}"[:200])
    return st.result()


def split_argv_command(argv: Sequence[str]) -> str:
    """Join an argv list into shell text (``shlex.join``), unwrapping a shell wrapper.

    ``["bash", "-lc", "npm test"]``, ``["sh", "-c", X]``, ``["/bin/zsh", "-c", X]`` -> the
    command string X itself (unless X is blank). Items that are not strings are converted
    with ``str``; an empty list gives ``""``. Never raises for a sequence of strings.
    """
    vals = [a if isinstance(a, str) else str(a) for a in argv]
    if not vals:
        return ""
    name = _norm_name(vals[0], False)
    if name.lower() in _SHELLS:
        out, _ = _h_shell(name, vals[1:])
        if out.shells and out.shells[0][0].strip():
            return out.shells[0][0]
    return shlex.join(vals)
