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

import dataclasses
import itertools
import re
import shlex
import threading
from collections.abc import Callable, Sequence

import tree_sitter_bash
from tree_sitter import Language, Node, Parser, Query, QueryCursor, Tree

from policyd.core.shell.model import (
    EXPANSION,
    LITERAL,
    MAX_COMMANDS,
    MAX_DEPTH,
    MAX_ERRORS,
    MAX_INPUT_CHARS,
    MAX_TEXT_CHARS,
    MAX_WRAPPERS,
    PATTERN,
    Redirect,
    ShellAnalysis,
    SimpleCommand,
)
from policyd.core.shell.options import _PROC_SUBST, _SHELLS
from policyd.core.shell.words import (
    _EXPANSIONS,
    _PATTERN,
    ANY,
    DIGITS,
    ONE,
    _ansi_c,
    _dec,
    _norm_name,
    _Word,
    _word,
)
from policyd.core.shell.wrappers import _analyse_argv, _h_shell

# Non-ASCII bytes -> letters (bash treats them as word characters too), and so are vertical
# tab, form feed and carriage return: blanks to tree-sitter-bash (its extras are /\s/), word
# characters to bash (only space and tab separate words), so `echo a \r# ; rm -rf ~` is one
# echo word then `rm`, not an echo and a comment.
_ASCII_IMAGE = (bytes(range(11)) + b"VFR" + bytes(range(14, 128))
                + bytes(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"[i % 52] for i in range(128)))
_WORD_NOT_BLANK = re.compile(rb"[\x0b\x0c\r]")
_HARD_MAX_DEPTH = 16  # caller-supplied max_depth is clamped to this (bounded recursion)

_LANGUAGE = Language(tree_sitter_bash.language())
_PARSERS = threading.local()  # a tree-sitter Parser is not thread-safe: one per thread


def _parser() -> Parser:
    parser: Parser | None = getattr(_PARSERS, "parser", None)
    if parser is None:
        parser = _PARSERS.parser = Parser(_LANGUAGE)
        # A redirect with no command (`<a | b | c`): the one shape whose grouping was seen to
        # change with a final newline.
        _PARSERS.bare_redirect = QueryCursor(Query(_LANGUAGE, "(redirected_statement !body) @r"))
    return parser


def _image(src: bytes) -> bytes:
    """What tree-sitter-bash is given for ``src``: the same bytes, unless some are non-ASCII
    or a vertical tab, form feed or carriage return (see :data:`_ASCII_IMAGE`)."""
    return src if src.isascii() and _WORD_NOT_BLANK.search(src) is None else src.translate(_ASCII_IMAGE)


def _parse(image: bytes) -> Tree:
    """The tree-sitter tree of ``image`` (the ASCII image of the command text).

    tree-sitter-bash spends ~100 µs more at the end of input after a pipeline of three or
    more commands (``a | b | c``: 105 µs, ``a | b | c\\n``: 10 µs; every version from 0.23
    to 0.25.1): its GLR stacks are resolved only at the end. bash runs ``TEXT`` and
    ``TEXT\\n`` alike except where the text ends in a backslash (a line continuation) or
    inside a here-document (the body then ends with the newline), so a text with two or more
    ``|``, no ``<<`` and no final backslash is parsed with a newline appended; that tree is
    used only if it has no error and no redirect without a command, else the text is parsed
    as it is. (A carriage return never reaches here: the image spells it as a letter. Before
    it did, tree-sitter-bash read ``\\<CR>`` before ``-n`` as an error at the end of input but
    as a line continuation once a newline ended the text.)
    ``tests/test_shell_parse.py`` checks the two trees equal over the test corpora and
    generated texts (only the root's end differs).
    """
    parser = _parser()
    if image.count(b"|") >= 2 and b"<<" not in image and not image.rstrip().endswith(b"\\"):
        tree = parser.parse(image + b"\n")
        root = tree.root_node
        if not root.has_error and not _PARSERS.bare_redirect.captures(root):
            return tree
    return parser.parse(image)


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
    "string", "concatenation", "translated_string", "array",
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
                           "pipeline", "command_substitution", "file_redirect", "list",
                           "program"})
_STDIN_ARGS = frozenset({"xargs", "parallel"})  # wrappers that append stdin words as operands


#: The scope of an assignment that reaches every command of the text.
EVERY_COMMAND = (0, -1)


def _kind(w: _Word) -> int:
    return EXPANSION if w.exp else (PATTERN if w.dyn else LITERAL)
#: Every node kind the walk understands. Another kind (a newer grammar) is reported in
#: ``unknown``: a node type not listed here cannot carry a substitution past the analysis.
_KNOWN_KINDS = frozenset({
    "ansi_c_string", "arithmetic_expansion", "array", "binary_expression", "brace_expression",
    "c_style_for_statement", "case_item", "case_statement", "command", "command_name",
    "command_substitution", "comment", "compound_statement", "concatenation",
    "declaration_command", "do_group", "elif_clause", "else_clause", "expansion",
    "extglob_pattern", "file_descriptor", "file_redirect", "for_statement", "heredoc_body",
    "heredoc_content", "heredoc_end", "heredoc_redirect", "heredoc_start",
    "herestring_redirect", "if_statement", "list", "negated_command", "number",
    "parenthesized_expression", "pipeline", "postfix_expression", "process_substitution",
    "program", "raw_string", "redirected_statement", "regex", "simple_expansion",
    "special_variable_name", "string", "string_content", "subscript", "subshell",
    "ternary_expression", "test_command", "test_operator", "translated_string",
    "unary_expression", "unset_command", "variable_assignment", "variable_assignments",
    "variable_name", "while_statement", "word", "ERROR", "function_definition",
})
#: Arithmetic evaluation runs code hidden in variable *data* (``x='a[$(cmd)]'; $((x))``):
#: these contexts are unknown as soon as they name a variable.
_ARITH_CONTEXTS = frozenset({"arithmetic_expansion", "c_style_for_statement"})
_ARITH_TEST_OPS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_VAR_TESTS = frozenset({"-v", "-R"})  # test a variable by name: its subscript is evaluated
_MAX_ARITH_SCAN = 256  # nodes examined in one arithmetic context
MAX_BRACE_WORDS = 10_000  # a {a..b} sequence longer than this is a denial of service
#: Loop conditions that fail once their input or arguments are used up (a bounded loop).
_BOUNDED_CONDITIONS = frozenset({"read", "getopts"})
#: read options that may let it succeed without consuming input (-t timeout, -n/-N count).
_READ_NO_CONSUME = re.compile(r"[tnN]")
#: A loop body that may restart what the condition consumes: ``exec`` (``exec < f`` reopens
#: the input), ``OPTIND`` (getopts starts again).
_REWINDS = re.compile(r"\bexec\b|\bOPTIND\b")
_BRACE_GROUP = re.compile(r"\{([^{}\s]*)\}")
#: A brace sequence expression (bash "Brace Expansion"): ``x..y`` or ``x..y..incr``, integers or letters.
BRACE_RANGE = re.compile(r"(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?")


def _plain_file(word: str) -> str:
    """A file word as compared by :meth:`_Walker.same_file`: ``./f`` and ``f//`` are ``f``."""
    while word.startswith("./"):
        word = word[2:].lstrip("/")
    return word.rstrip("/") or word


def _brace_group_size(group: str) -> int:
    """Words one ``{...}`` group expands to: a range's length or a list's items (1 if neither)."""
    m = BRACE_RANGE.fullmatch(group)
    if m is None:
        return group.count(",") + 1
    a, b, step = m.group(1), m.group(2), m.group(3)
    if a.lstrip("-").isdigit() != b.lstrip("-").isdigit():
        return 1  # {1..z} is no sequence: bash leaves it as it is
    lo, hi = (int(a), int(b)) if a.lstrip("-").isdigit() else (ord(a), ord(b))
    return abs(hi - lo) // max(1, abs(int(step or 1))) + 1


_HIDDEN_CHECKS = frozenset({"function_definition", "subscript", "compound_statement",
                            "test_command"})


class _State:
    """Accumulates results across the top-level text and nested shell strings."""

    __slots__ = ("assignments", "commands", "dynamic", "env_reads", "errors", "full", "ifs",
                 "locals", "max_depth", "paths", "redirects", "scopes", "text_left", "unknown")

    def __init__(self, max_depth: int) -> None:
        self.commands: list[SimpleCommand] = []
        self.redirects: list[Redirect] = []
        self.assignments: list[tuple[str, str]] = []
        self.scopes: list[tuple[int, int]] = []  # per assignment: the commands it reaches
        self.env_reads: dict[str, None] = {}  # names expanded that the text did not assign
        self.locals: set[str] = set()  # names the text assigned before (shell variables)
        self.errors: list[str] = []
        self.paths: dict[str, None] = {}
        self.dynamic = False
        self.full = False
        self.max_depth = max_depth
        self.text_left = MAX_TEXT_CHARS
        self.unknown: dict[str, None] = {}
        #: the text may change IFS (it names it anywhere): a number splits too (IFS=1)
        self.ifs = False

    def cannot_know(self, why: str) -> None:
        if len(self.unknown) < MAX_ERRORS:
            self.unknown[why] = None

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
        commands = self.commands
        if self.ifs:  # IFS changed: a number or a loop's literal value splits like any value
            commands = [c if DIGITS not in c.splits else dataclasses.replace(
                c, splits=tuple(ANY if s == DIGITS else s for s in c.splits)) for c in commands]
        return ShellAnalysis(
            commands=tuple(commands),
            redirects=tuple(self.redirects),
            assignments=tuple(self.assignments),
            parse_ok=not self.errors,
            dynamic=self.dynamic,
            errors=tuple(self.errors),
            path_args=tuple(self.paths),
            unknown=tuple(self.unknown),
            assignment_scopes=tuple(self.scopes),
            env_reads=tuple(self.env_reads),
        )

    def assign(self, name: str, value: str, local: bool = False) -> None:
        """An assignment reaching every command (a bare ``A=b``, ``export``, ``declare``:
        a name already in the environment is exported by it); :meth:`_Walker.command` and
        :meth:`_Walker.emit` narrow the scope of ``A=b cmd`` and ``env A=b cmd``. ``local``:
        later ``$NAME`` expansions read this value, not the environment's (a top-level
        statement of the text itself; not ``A=b cmd``, a subshell, a nested shell)."""
        self.assignments.append((name, value))
        self.scopes.append(EVERY_COMMAND)
        if "IFS" in name or "IFS" in value:
            self.ifs = True
        if local:
            self.locals.add(name.split("[", 1)[0])


def _analyze_text(st: _State, text: str, depth: int, label: str) -> None:
    if depth > st.max_depth:
        st.error(f"nesting deeper than MAX_DEPTH={st.max_depth} at {label!r}")
        return
    src = text.encode("utf-8", "surrogatepass")
    if "IFS" in text:
        st.ifs = True
    # tree-sitter-bash's scanner calls ctype isalpha() etc. on the raw code point: non-ASCII
    # input reads outside the ctype table (a segfault for large code points). Parse an
    # ASCII image with the same byte offsets (_ASCII_IMAGE); words are read from the real bytes.
    image = _image(src)
    tree = _parse(image)
    root = tree.root_node
    if _ESCAPED_BLANK.search(image):
        at = _skipped_escape(root, image)
        if at >= 0:
            st.error(f"an escaped blank at byte {at} of {label or 'the command'!r} that tree-sitter-bash"
                     " skips and bash reads as part of a word")
    if b'$"' in image and _has_locale_string(root):
        # tree-sitter-bash reads $".." as a `$` token (which may take the text before it:
        # `-r$"f"`) and a string; bash, the string translated. Rare in commands: refused.
        st.error(f"a $\"..\" locale string in {label or 'the command'!r}: read as bash does not")
    if _DOLLAR_BLANK.search(image) and _expansion_over_blank(root, image):
        # tree-sitter-bash reads `$`, blanks, then a name as one expansion (`>$<NL>rm -rf ~`
        # took the next line's command into a redirect target); to bash the `$` is literal
        st.error(f"a '$' before a blank in {label or 'the command'!r}: read as bash does not")
    walker = _Walker(st, src, depth, label)
    if root.has_error:
        walker.check_errors(root)
    walker.run(root)


def _redirect_words(r: Node, src: bytes) -> list[list[Node]]:
    """The words of redirect ``r`` as bash splits them (nodes glued into one word grouped):
    for a file redirect the first is its target; for a heredoc none is (the delimiter is
    apart); every other is an argument of the command, which tree-sitter-bash hangs here."""
    if r.type == "file_redirect":
        nodes = r.children_by_field_name("destination")
    elif r.type == "heredoc_redirect":
        start = next((k for k in r.named_children if k.type == "heredoc_start"), None)
        line_end = src.find(b"\n", start.end_byte if start is not None else r.start_byte)
        if line_end < 0:
            line_end = len(src)
        # on the operator's line only: tree-sitter-bash also takes some bodies as words
        nodes = [k for k in r.named_children if k.start_byte < line_end and (
            k.type in _WORDISH or k.type in _EXPANSIONS or k.type == "command_substitution")]
        return [[], *_groups(nodes, src)]
    else:
        return []
    return _groups(nodes, src)


def _groups(nodes: list[Node], src: bytes) -> list[list[Node]]:
    out: list[list[Node]] = []
    for n in nodes:
        if out and _glued(src, out[-1][-1].end_byte, n.start_byte):
            out[-1].append(n)
        else:
            out.append([n])
    return out


def _group_word(group: list[Node], src: bytes) -> _Word:
    """The one bash word of a group of glued nodes (see :func:`_groups`)."""
    w = _word(group[0], src)
    for n in group[1:]:
        w = _joined(w, _word(n, src))
    return w


def _glued(src: bytes, end: int, start: int) -> bool:
    """Whether the word ending at ``end`` and the one starting at ``start`` are one bash word:
    nothing between them, or only line continuations (bash removes ``\\<NL>`` before it
    splits words: ``.en\\<NL>v`` is ``.env``)."""
    return end == start or (end < start and not src[end:start].replace(b"\\\n", b""))


def _wordish(n: Node) -> bool:
    """A child of a command that is (part of) a word: not a redirect or an assignment."""
    return n.type not in _REDIRECTS and n.type != "variable_assignment"


def _joined(first: _Word, then: _Word) -> _Word:
    """One bash word of two nodes with nothing between them: tree-sitter-bash ends a word at
    a quoted part followed by an escape (``'.en'\\v`` is two arguments there, ``.env`` to bash)."""
    return _Word(first.value + then.value, first.dyn or then.dyn, first.start, then.end, first.exp or then.exp,
                 max(first.split, then.split))


#: A backslash before a space or tab: inside a word both parsers read an escaped blank, but
#: where a word would start tree-sitter-bash skips the pair as it skips a line continuation
#: (its grammar's extras), while bash starts a word with that blank (`echo a \\ # ; rm -rf ~`
#: runs rm: the `#` is inside a word, not a comment).
_ESCAPED_BLANK = re.compile(rb"\\[ \t]")


_DOLLAR_BLANK = re.compile(rb"\$[ \t\n]")
#: echo -e's octal escape (bash's echo builtin): a 0, then up to three octal digits.
_ECHO_OCTAL = re.compile(r"\\0([0-7]{0,3})")


def _locale_dollar(n: Node) -> bool:
    """An anonymous ``$`` token right before a string (``$"..."``), as tree-sitter-bash
    spells a locale string, possibly with the text before it in the token."""
    if n.is_named or n.type != "$":
        return False
    after = n.next_sibling
    while after is not None and after.type == "concatenation" and after.child_count:
        after = after.children[0]
    return after is not None and after.start_byte == n.end_byte and after.type == "string"


def _has_locale_string(root: Node) -> bool:
    stack = [root]
    while stack:
        n = stack.pop()
        if _locale_dollar(n):
            return True
        stack.extend(n.children)
    return False


def _expansion_over_blank(root: Node, image: bytes) -> bool:
    """Whether some ``$name`` expansion node spans a blank or a line break."""
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type == "simple_expansion":
            text = image[n.start_byte : n.end_byte]
            if b" " in text or b"\t" in text or b"\n" in text:
                return True
            continue
        stack.extend(n.children)
    return False


def _skipped_escape(root: Node, image: bytes) -> int:
    """Offset of the first backslash tree-sitter-bash left outside every token, or -1 (a
    line continuation, backslash and newline, is skipped by both parsers alike). A
    here-document body counts as one token: bash reads no words there."""
    end = 0
    stack = [root]
    while stack:
        n = stack.pop()
        if n.child_count and n.type != "heredoc_body":
            stack.extend(reversed(n.children))
            continue
        if n.start_byte > end and (at := _escape_in(image, end, n.start_byte)) >= 0:
            return at
        end = max(end, n.end_byte)
    return _escape_in(image, end, len(image))


def _escape_in(image: bytes, start: int, end: int) -> int:
    """Offset of the first backslash in ``image[start:end]`` not before a newline, or -1."""
    i = image.find(b"\\", start, end)
    while i >= 0:
        if image[i + 1 : i + 2] != b"\n":
            return i
        i = image.find(b"\\", i + 2, end)
    return -1


class _Walker:
    """Walks one parse tree (iteratively: long && chains nest deeply)."""

    __slots__ = (
        "bare_cat",
        "depth",
        "echo",
        "first_cmd",
        "has_error",
        "heredoc_floor",
        "heredocs",
        "label",
        "loops",
        "parent",
        "prev",
        "runs_output",
        "src",
        "st",
        "stdin",
        "tolerated",
        "top",
    )

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
        self.heredocs: dict[int, tuple[str, bool, str]] = {}  # heredoc_redirect id -> body, quoted, op
        self.heredoc_floor = 0  # a heredoc body starts after the previous one's end
        self.first_cmd: dict[int, int] = {}  # command node id -> index of its SimpleCommand
        self.top: dict[int, bool] = {}  # node id -> reaches the program through lists only
        self.loops: list[tuple[int, int, str, str, bool]] = []  # for bodies binding a variable

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
                    if t in ("simple_expansion", "expansion"):
                        self.env_read(node)
                    elif t in _ARITH_CONTEXTS:
                        self.arithmetic(node)
                    elif t == "brace_expression":
                        self.brace_size(node)
                elif t in _HIDDEN_CHECKS:
                    self.hidden(node, t)
                elif t == "c_style_for_statement":
                    self.arithmetic(node)
                elif t == "while_statement":
                    self.endless(node)
                elif t == "pipeline":
                    self.same_file(node)
                elif t == "for_statement":
                    var = node.child_by_field_name("variable")
                    if var is not None and self.depth == 0 and self.toplevel(node):
                        st.locals.add(self.text(var))
                    values = node.children_by_field_name("value")
                    st.dynamic = st.dynamic or any(_word(v, src).dyn for v in values)
                    self.bind_loop(node, values)
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
                if kt in ("word", "concatenation") and b"{" in src[k.start_byte : k.end_byte]:
                    self.brace_product(k)
                if kt in _LEAVES:
                    continue
                if kt not in _KNOWN_KINDS:
                    st.cannot_know(f"syntax the analysis does not know: {kt}")
                if kt in _EXPRESSIONS:
                    seg = src[k.start_byte : k.end_byte]
                    if b"$" not in seg and b"`" not in seg and b"(" not in seg:
                        continue  # cannot hold a command or an expansion
                stack.append((k, kt))

    def env_read(self, node: Node) -> None:
        """``$NAME``/``${NAME...}`` of a name the text did not assign before reads the
        environment (``${!REF}`` reads a name known only at run time: ``!REF``)."""
        indirect = named = substring = False
        kids = node.children
        if any(a.type == "@" and b.type == "P" for a, b in itertools.pairwise(kids)):
            # ${x@P} expands the value as a prompt string: with promptvars (on by default) the
            # $(...) and backquotes in it run (bash 5.2; @E @A @Q @K @a @U @u @L only quote or
            # convert: nothing of the value runs)
            self.st.cannot_know(f"prompt expansion runs the value's command substitutions: {self.text(node)[:60]!r}")
        for k in kids:
            if k.type == "!" and not named:
                indirect = True
            elif k.type in ("variable_name", "special_variable_name", "subscript") and not named:
                named = True
                if k.type == "subscript":
                    k = k.child_by_field_name("name") or k
                name = self.text(k)
                if indirect:
                    name = "!" + name
                if name not in self.st.locals:
                    self.st.env_reads[name] = None
            elif k.type == ":" and named:
                substring = True  # ${s:OFFSET:LENGTH}: both are arithmetic
            elif substring and k.is_named and k.type != "number":
                self.st.cannot_know(f"arithmetic evaluates variable data: {self.text(node)[:60]!r}")
                return

    def bind_loop(self, node: Node, values: list[Node]) -> None:
        """``for f in src/*.py; do ... "$f" ...; done``: inside the body, ``$f`` is one of the
        words of a single literal or glob value (certain unless the body assigns ``f``)."""
        var = node.child_by_field_name("variable")
        body = node.child_by_field_name("body")
        if var is None or body is None or len(values) != 1:
            return
        w = _word(values[0], self.src)
        name = self.text(var)
        if w.exp or not name or re.search(
                rf"\b{re.escape(name)}\+?=|\b(read|mapfile|readarray|declare|local|typeset|printf|let|eval|source)\b|\(\(",
                self.text(body)):
            return
        self.loops.append((body.start_byte, body.end_byte, name, w.value, w.dyn))

    def loop_value(self, node: Node, w: _Word) -> _Word:
        text = self.text(node)
        for start, end, name, value, pattern in reversed(self.loops):
            if start <= node.start_byte < end and text in (f"${name}", f"${{{name}}}", f'"${name}"',
                                                              f'"${{{name}}}"'):
                # a glob's file names may hold blanks; a literal value splits where it has some
                split = ONE if text.startswith('"') else (
                    ANY if pattern or re.search(r"[\s*?\[]", value) else DIGITS)
                return _Word(value, pattern, w.start, w.end, split=split)
        return w

    def arithmetic(self, node: Node) -> None:
        """An arithmetic context naming a variable evaluates its data as code."""
        stack = list(node.named_children)
        seen = 0
        while stack and seen < _MAX_ARITH_SCAN:
            n = stack.pop()
            seen += 1
            t = n.type
            if t in ("variable_name", "word", "simple_expansion", "expansion", "subscript",
                     "command_substitution"):
                self.st.cannot_know(f"arithmetic evaluates variable data: {self.text(node)[:60]!r}")
                return
            if t != "number":
                stack.extend(n.named_children)
        if stack:
            self.st.cannot_know("arithmetic expression too long to check")

    def brace_size(self, node: Node) -> None:
        """``{1..99999999}`` makes bash build a list of that many words (memory, time)."""
        nums = [self.text(n) for n in node.named_children if n.type == "number"]
        if len(nums) >= 2:
            try:
                size = abs(int(nums[1]) - int(nums[0]))
            except ValueError:
                size = MAX_BRACE_WORDS + 1
            if size > MAX_BRACE_WORDS:
                self.st.cannot_know(f"brace expansion of {size} words")

    def endless(self, node: Node) -> None:
        """A ``while``/``until`` loop ends only when its condition changes, which the analysis
        cannot prove in general (``while [ 1 ]``, ``while ! false``, ``until [ -f x ]`` wait
        for ever): the loop is unknown unless its condition is a recognised bounded form
        (:meth:`_ends`: ``while read``, ``while getopts``), and then also when its body writes
        the file it reads (``while read l; do echo "$l" >> f; done < f`` never reaches EOF)."""
        conds = [c for c in node.children_by_field_name("condition") if c.is_named]
        keyword = node.children[0].type if node.children else ""
        body = node.child_by_field_name("body")
        if not conds or not self._ends(conds[-1], keyword == "until"):
            text = self.text(conds[-1]) if conds else ""
            self.st.cannot_know(f"{keyword} {text[:30]!r}: a loop whose condition is not known to end "
                                "(only 'while read' and 'while getopts' are)")
            return
        if body is not None and _REWINDS.search(self.text(body)):
            # `exec < f` reopens the input read consumes; OPTIND= restarts getopts
            self.st.cannot_know(f"{keyword} loop whose body may restart what its condition consumes")
            return
        self.same_file(node)

    def _ends(self, cond: Node, negated: bool) -> bool:
        """The loop condition ``cond`` (negated: an ``until`` loop's) fails once its input or
        arguments are used up: ``read``/``getopts`` (``IFS= read -r l``), ``! read`` under
        ``until``, ``read a && test``, and the idiom ``read -r l || [ -n "$l" ]`` (at EOF read
        empties ``l``, so the second round ends)."""
        t = cond.type
        if t == "redirected_statement":
            body = cond.child_by_field_name("body")
            return body is not None and self._ends(body, negated)
        if t == "negated_command":
            return bool(cond.named_children) and self._ends(cond.named_children[0], not negated)
        if t == "command":
            name = cond.child_by_field_name("name")
            args = [self.text(a) for a in cond.children_by_field_name("argument")]
            # read -t 0 / -n 0 / -N 0 succeed without consuming anything: never at the end
            return (not negated and name is not None
                    and self.text(name).rsplit("/", 1)[-1] in _BOUNDED_CONDITIONS
                    and not any(a.startswith("-") and not a.startswith("--") and _READ_NO_CONSUME.search(a)
                                for a in args))
        if t == "list" and not negated and len(cond.named_children) == 2:
            left, right = cond.named_children
            op = next((c.type for c in cond.children if not c.is_named), "")
            if op == "&&":
                return self._ends(left, False) or self._ends(right, False)
            if op == "||":
                return self._ends(left, False) and right.type == "test_command" and self.text(right).startswith(
                    ("[ -n ", "[[ -n ", "test -n "))
        return False

    def same_file(self, node: Node) -> None:
        """A loop or pipeline that writes a file it also reads (``... done < f`` with ``>> f``
        in the body; ``cat f | tee -a f``) may never reach the file's end: it grows as it is
        read (a disk filled). Files are compared as written (``./f`` is ``f``)."""
        if node.type == "pipeline" and ">" not in (text := self.text(node)) and "tee" not in text:
            return  # writes nothing (no '>' redirect, no tee): the common pipeline
        reads: set[str] = set()
        writes: set[str] = set()
        parent = self.parent.get(node.id)
        if node.type == "pipeline":
            stages = list(node.named_children)
        else:
            stages = [node]
            if parent is not None and parent.type == "redirected_statement":
                for r in parent.children_by_field_name("redirect"):
                    self._file_words(r, reads, writes)
            if parent is not None and parent.type == "pipeline":
                for k in parent.named_children:
                    if k.id == node.id:
                        break
                    self._file_words(k, reads, set())
        for k in stages:
            self._file_words(k, reads if node.type == "pipeline" else set(), writes)
        both = sorted(reads & writes)
        if both:
            self.st.cannot_know(f"writes {both[0]!r}, which it also reads: it may never reach the end "
                                "of the file")

    def _file_words(self, node: Node, reads: set[str], writes: set[str]) -> None:
        """Literal words below ``node``: the operands of its commands and ``<`` targets as
        ``reads``; ``>``/``>>`` targets and tee's operands as ``writes`` (bounded walk)."""
        stack = [node]
        seen = 0
        while stack and seen < _MAX_ARITH_SCAN:
            n = stack.pop()
            seen += 1
            if n.type == "file_redirect":
                dest = n.child_by_field_name("destination")
                op = next((c.type for c in n.children if not c.is_named), "")
                if dest is not None and dest.type == "word":
                    word = _plain_file(self.text(dest))
                    (reads if op in ("<", "<>") else writes).add(word)
                    if op == "<>":
                        writes.add(word)
                continue
            if n.type == "command":
                name = n.child_by_field_name("name")
                tee = name is not None and self.text(name).rsplit("/", 1)[-1] == "tee"
                for arg in n.children_by_field_name("argument"):
                    if arg.type == "word" and not self.text(arg).startswith("-"):
                        (writes if tee else reads).add(_plain_file(self.text(arg)))
            stack.extend(n.named_children)

    def brace_product(self, node: Node) -> None:
        """``{a..z}{a..z}{a..z}{a..z}`` multiplies: bash builds every combination of the
        brace groups of one word (the grammar parses only numeric ranges as
        ``brace_expression``; letter ranges and ``{a,b}`` lists are plain word pieces)."""
        text = self.text(node) if node.type == "word" else "".join(
            self.text(n) if n.type in ("word", "brace_expression") else "x" for n in node.children)
        size = 1
        for group in _BRACE_GROUP.findall(text):
            size *= _brace_group_size(group)
            if size > MAX_BRACE_WORDS:
                self.st.cannot_know(f"brace expansion of more than {MAX_BRACE_WORDS} words")
                return

    def hidden(self, node: Node, t: str) -> None:
        """Constructs that run code from data or hide it: see _HIDDEN_CHECKS."""
        st = self.st
        if t == "function_definition":
            st.cannot_know("function definition (a later command may run its body, or "
                           "shadow a program)")
        elif t == "subscript":
            index = node.child_by_field_name("index")
            if index is not None and not (index.type == "number" or self.text(index) in ("@", "*")):
                st.cannot_know(f"array subscript evaluated as arithmetic: {self.text(node)[:60]!r}")
        elif t == "compound_statement":
            if self.src[node.start_byte : node.start_byte + 2] == b"((":
                self.arithmetic(node)
        elif t == "test_command":
            self.test_expression(node)

    def test_expression(self, node: Node) -> None:
        """``[[ x -eq 0 ]]`` evaluates x as arithmetic (recursively: its value's subscripts
        run); ``[ ]`` does not. ``-v``/``-R`` evaluate a subscript in either."""
        double = self.src[node.start_byte : node.start_byte + 2] == b"[["
        stack = list(node.named_children)
        seen = 0
        while stack and seen < _MAX_ARITH_SCAN:
            n = stack.pop()
            seen += 1
            if n.type in ("binary_expression", "unary_expression"):
                words = [c for c in n.named_children if c.type != "test_operator"]
                for op in (c for c in n.children if c.type == "test_operator"):
                    o = self.text(op)
                    if o in _VAR_TESTS:
                        self.st.cannot_know(f"{o} tests a variable by name: {self.text(n)[:60]!r}")
                    elif double and o in _ARITH_TEST_OPS and any(w.type != "number" for w in words):
                        self.st.cannot_know(f"{o} evaluates its operands as arithmetic: "
                                            f"{self.text(n)[:60]!r}")
            if n.type in ("binary_expression", "unary_expression", "parenthesized_expression"):
                stack.extend(n.named_children)

    def nested_backticks(self, node: Node) -> list[Node]:
        """`` `a \\`b\\`` ``: the inner escaped backticks run too; re-parse unescaped."""
        inner = self.text(node)[1:-1]
        body = re.sub(r"\\([`$\\])", r"\1", inner)
        _analyze_text(self.st, body, self.depth + 1, "`...`")
        return []

    def assignment(self, node: Node, local: bool | None = None) -> list[Node]:
        """``NAME=value``; ``local`` (default: a top-level statement of the top-level text)
        says whether later ``$NAME`` reads this value (:meth:`_State.assign`)."""
        name_node = node.child_by_field_name("name")
        value_node = node.child_by_field_name("value")
        name = self.text(name_node) if name_node is not None else ""
        if local is None:
            local = self.depth == 0 and self.toplevel(node)
        if value_node is None:
            self.st.assign(name, "", local)
            return [name_node] if name_node is not None and name_node.type == "subscript" else []
        w = _word(value_node, self.src)
        if w.dyn:
            self.st.dynamic = True
        self.st.assign(name, w.value, local)
        kids = [value_node] if w.exp or value_node.type not in _WORDISH else []
        if name_node is not None and name_node.type == "subscript":
            kids.append(name_node)
        return kids

    def declaration(self, node: Node) -> list[Node]:
        kids = node.children
        if not kids:
            return []
        keyword = self.text(kids[0])
        words: list[_Word] = [_Word(keyword, False, kids[0].start_byte, kids[0].end_byte)]
        more: list[Node] = []
        local = self.depth == 0 and self.toplevel(node)
        for ch in node.named_children:
            if ch.type == "variable_assignment":
                more.extend(self.assignment(ch, local))
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
        problem = self._gap_problem(node)
        if problem:
            self.st.error(f"{problem} at {self.label or 'top level'!r}")
        first_assignment = len(self.st.assignments)
        for ch in node.children:
            ct = ch.type
            if not ch.is_named:  # a lone `$` (or `=~`): a literal word to bash
                if _locale_dollar(ch):
                    continue  # $"..": refused in _analyze_text
                if name_node is None:
                    self.st.error(f"{self.text(ch)!r} before a command name at {self.label or 'top level'!r}")
                    continue
                w = _Word(self.text(ch), False, ch.start_byte, ch.end_byte)
                if _glued(src, words[-1].end, w.start):
                    w = _joined(words.pop(), w)
                words.append(w)
                continue
            if ct == "variable_assignment":
                more.extend(self.assignment(ch, local=False))  # `X=1 echo $X`: the environment's X
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
                raw = src[ch.start_byte : ch.end_byte]
                if b"{" in raw and ct in ("word", "concatenation"):
                    self.brace_product(ch)
                if ct == "word" and b"\\" not in raw:  # fast path of _word for a plain word
                    value = _dec(raw)
                    w = _Word(value, _PATTERN.search(value) is not None, ch.start_byte, ch.end_byte)
                    if _glued(src, words[-1].end, w.start):
                        w = _joined(words.pop(), w)
                    words.append(w)
                    args.append(ch)
                    continue
                w = _word(ch, src)
                if w.exp and self.loops:
                    w = self.loop_value(ch, w)
                if _glued(src, words[-1].end, w.start):
                    w = _joined(words.pop(), w)
                words.append(w)
                args.append(ch)
                if w.exp or ct not in _WORDISH:
                    more.append(ch)
            else:
                more.append(ch)
        if name_node is None or name_node.end_byte == name_node.start_byte:
            return more
        for group in self._redirect_args(node):
            words.append(_group_word(group, src))
            args.append(group[-1])
        last_assignment = len(self.st.assignments)
        first_command = len(self.st.commands)
        stdin, name = self.emit(words, _dec(src[node.start_byte : cut]).rstrip(), node)
        scope = (first_command, len(self.st.commands))  # `A=b cmd`: cmd and what it wraps
        for k in range(first_assignment, last_assignment):
            self.st.scopes[k] = scope
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
            if escapes and key == "echo":  # echo -e: \0NNN, up to three octal digits after the 0
                line = _ECHO_OCTAL.sub(lambda m: chr(int(m.group(1) or "0", 8) & 0xFF), line)
            self.echo[node.id] = self.echo[anchor.id] = _ansi_c(line) if escapes else line
        return more

    def _gap_problem(self, node: Node) -> str:
        """What tree-sitter-bash skipped between the children of command ``node`` that bash
        does not: a line break (``echo =~`` then a newline took the next line's command as
        arguments), or a line continuation gluing a word to a redirect or an assignment
        (``2>x\\<NL>echo rm -rf ~`` is ``2>xecho rm -rf ~`` to bash). "" when nothing."""
        src = self.src
        if src.find(b"\n", node.start_byte, node.end_byte) < 0:
            return ""  # both need a line break (a continuation is a backslash and one)
        kids = node.children
        for a, b in itertools.pairwise(kids):
            if b.start_byte <= a.end_byte:
                continue
            bare = src[a.end_byte : b.start_byte].replace(b"\\\n", b"")
            if b"\n" in bare:
                return "a command continued across a line break"
            if not bare and (not _wordish(a) or not _wordish(b)):
                return "a line continuation joining a word to a redirect or an assignment"
        return ""

    def _redirect_args(self, node: Node) -> list[list[Node]]:
        """Words tree-sitter-bash puts after a redirect's target (``rm >f -rf /``: target
        ``f``, then ``-rf``, ``/``): to bash a redirect takes one word, and the words after it
        are the command's arguments. Those of the redirects of the statement ``node`` is the
        body of, in order (their substitutions are walked with the redirect)."""
        n, parent = node, self.parent.get(node.id)
        # tree-sitter-bash also hangs `a && b >f x` on the list: the last command is b
        while parent is not None and parent.type in ("list", "pipeline"):
            last = parent.named_child(parent.named_child_count - 1)
            if last is None or last.id != n.id:
                return []
            n, parent = parent, self.parent.get(parent.id)
        if parent is None or parent.type != "redirected_statement":
            return []
        body = parent.child_by_field_name("body")
        if body is None or body.id != n.id:
            return []
        return [g for r in parent.children_by_field_name("redirect") for g in _redirect_words(r, self.src)[1:]]

    def _note_runs_output(self, node: Node) -> None:
        """Remember a ``$(..)`` (bare or alone in quotes) whose output is run as code."""
        if node.type == "string":
            kids = node.named_children
            if len(kids) != 1:
                return
            node = kids[0]
        if node.type == "command_substitution":
            self.runs_output.add(node.id)

    def context(self, node: Node) -> tuple[str, int]:
        """(``seq`` of SimpleCommand, index of the command piping into this one or -1)."""
        parent = self.parent
        n = node
        p = parent.get(n.id)
        if p is not None and p.type == "redirected_statement":
            n, p = p, parent.get(p.id)
        self.first_cmd[n.id] = len(self.st.commands)
        stdin_from = -1
        if p is not None and p.type == "pipeline":
            prev = self.prev.get(n.id)
            if prev is not None:
                stdin_from = self.first_cmd.get(prev.id, -1)
        if self.depth or self.label:
            return "", stdin_from
        seq = "top"
        if p is not None and p.type == "list" and p.named_children[0].id == n.id:
            op = n.next_sibling
            if op is not None and op.type == "&&":
                seq = "and"
        elif p is not None and p.type == "list" and not any(c.type == "||" for c in p.children):
            # the operator after a list's last command is the one after the list itself
            # (``a && cd x && c``; not ``a || cd x && c``: there c may follow a instead)
            q = parent.get(p.id)
            if q is not None and q.type == "list" and q.named_children[0].id == p.id:
                op = p.next_sibling
                if op is not None and op.type == "&&":
                    seq = "and"
        return (seq if self.toplevel(n) else ""), stdin_from

    def toplevel(self, node: Node) -> bool:
        """Whether ``node`` reaches the program through lists and redirects only (memoised:
        long ``&&`` chains nest one list per command)."""
        path: list[int] = []
        n = node
        result = False
        while True:
            known = self.top.get(n.id)
            if known is not None:
                result = known
                break
            p = self.parent.get(n.id)
            path.append(n.id)
            if p is None:
                break
            if p.type == "program":
                result = True
                break
            if p.type not in ("list", "redirected_statement"):
                break
            n = p
        for i in path:
            self.top[i] = result
        return result

    def emit(self, words: list[_Word], text: str, node: Node) -> tuple[str, str]:
        """List the command in ``words`` and everything it wraps.

        Returns (the shell reading its stdin or "", the command's normalised name).
        """
        st = self.st
        stdin = ""
        first_name = ""
        seq, stdin_from = self.context(node)
        self.first_cmd[node.id] = len(st.commands)
        # at depth > 0 the commands of the string are produced by its wrapper ("bash -c"...)
        work: list[tuple[list[_Word], str, str] | tuple[str, str]] = [(words, text, self.label)]
        unwrapped = 0
        stdin_args = False
        wrapped: list[tuple[int, int]] = []  # (assignment, first command it reaches)
        while work:
            item = work.pop()
            if len(item) == 2:
                _analyze_text(st, item[0], self.depth + 1, item[1])
                continue
            ws, wtext, label = item
            if label in _STDIN_ARGS:
                stdin_args = True  # this command and what it wraps get operands from stdin
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
                tuple([_kind(w) for w in ws[1:]]),
                stdin_from,
                stdin_args,
                seq if label == self.label else "",
                splits=tuple([w.split for w in ws[1:]]),
            )
            if not st.ifs and ("IFS" in head.value or "IFS" in "\0".join(vals)):
                st.ifs = True  # `read IFS`, `declare I''FS=1`, `printf -v IFS`
            if not st.add(cmd):
                break
            if out.assigns:  # `env A=b cmd`: reaches what the wrapper runs
                for var, v in out.assigns:
                    st.assign(var, v)
                    wrapped.append((len(st.assignments) - 1, len(st.commands)))
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
        for index, first in wrapped:  # a wrapper's assignment reaches what it runs
            st.scopes[index] = (first, len(st.commands))
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
            self.heredocs[node.id] = (body, quoted, op)
            # the body is handled (as "#heredoc") once the rest of the line has been walked
            return [k for k in node.named_children if k.type != "heredoc_body"]
        if t == "herestring_redirect":
            content = [c for c in node.named_children if c.type != "file_descriptor"]
            w = _Word("", False, 0, 0)
            if content:
                content = _groups(content, src)[-1]  # one word, though glued of several nodes
                w = _group_word(content, src)
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
        fd = node.child_by_field_name("descriptor")
        if fd is not None and not self.text(fd).isdigit():  # `-i1>f`: a word, then `>f`, to bash
            st.error(f"{self.text(fd)!r} read as a file descriptor where bash has a word")
        if dests:
            d = dests[0]
            op = _dec(src[node.start_byte : d.start_byte]).strip()
            groups = _groups(dests, src)
            w = _group_word(groups[0], src)  # one word: any after it are the command's (_redirect_args)
            dests = [g[0] for g in groups]
            owner = self.parent.get(node.id)
            of = owner.child_by_field_name("body") if owner is not None else None
            while of is not None and of.type in ("list", "pipeline") and of.named_children:
                of = of.named_children[-1]  # the command the redirect is bash's (_redirect_args)
            if len(dests) > 1 and (owner is None or owner.type != "redirected_statement" or of is None
                                   or of.type != "command"):
                st.error(f"words after the target of {op!r} where bash takes none")
        else:
            op = self.text(node).strip()
            w = _Word("", False, 0, 0)
        owner_node = self.parent.get(node.id)
        owner_index = self.first_cmd.get(owner_node.id, -1) if owner_node is not None else -1
        st.redirects.append(Redirect(op, w.value, w.dyn, _kind(w), owner_index))
        if w.dyn:
            st.dynamic = True
        fd_dup = op.endswith("&") and (w.value.isdigit() or w.value.endswith("-"))
        if w.value and not fd_dup and w.value[:2] not in _PROC_SUBST:
            st.paths[w.value] = None
        return node.named_children

    def _herestring(self, node: Node, op: str, w: _Word) -> None:
        self.st.redirects.append(Redirect(op, w.value, w.dyn, _kind(w)))
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
        line_end = src.find(b"\n", end.end_byte) if end is not None else -1
        region = _dec(src[b0 : (line_end if line_end >= 0 else len(src)) if end is not None else max(b0, b1)])
        word = "".join(c for c in delim if c not in "'\"\\")
        for line in region.split("\n"):
            if line.strip() == word and line != word and not (op == "<<-" and line.lstrip("\t") == word):
                self.st.error(f"heredoc line {line!r}: bash and this parser may end the body at "
                              f"different lines (delimiter {word!r})")
                break
        return _dec(src[b0 : max(b0, b1)]), quoted, op

    def _literal_stdin(self, redirect: Node, body: str, quoted: bool, op: str) -> None:
        """A heredoc that is the only redirect of one command and reaches it unchanged (``<<``
        with a quoted delimiter, or a body without ``$``, backquote or backslash: bash changes
        nothing in it; not ``<<-``, which strips tabs) is that command's ``stdin_text``."""
        if op != "<<" or (not quoted and any(c in body for c in "$`\\")):
            return
        owner = self.parent.get(redirect.id)
        if owner is None or owner.type != "redirected_statement":
            return
        cmd = owner.child_by_field_name("body")
        if cmd is None or cmd.type != "command" or len(owner.children_by_field_name("redirect")) != 1:
            return
        if any(k.type not in ("heredoc_start", "heredoc_body", "heredoc_end") for k in redirect.named_children):
            return  # `<<'EOF' < file` (the last stdin redirect wins), a pipeline or a command after it
        index = self.first_cmd.get(cmd.id, -1)
        commands = self.st.commands
        if 0 <= index < len(commands) and commands[index].stdin_text is None:
            commands[index] = dataclasses.replace(commands[index], stdin_text=body)

    def heredoc_done(self, redirect: Node) -> list[Node]:
        """Parse a heredoc body fed to a shell; else run the substitutions an unquoted one has."""
        body, quoted, op = self.heredocs.pop(redirect.id, ("", True, ""))
        self._literal_stdin(redirect, body, quoted, op)
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
            if _EVALUATES_VALUE.search(_ESCAPED.sub("", body)):
                self.st.cannot_know("a here-document's ${x@P} or $(( x )) evaluates a variable's value "
                                    "(its command substitutions run)")
            for m in _VAR_REF.finditer(_ESCAPED.sub("", body)):  # it expands $NAME, ${NAME}
                name = (m.group(1) or "") + (m.group(2) or m.group(3) or "")
                if name not in self.st.locals:
                    self.st.env_reads[name] = None
            for sub in _substitutions(body):
                _analyze_text(self.st, sub, self.depth + 1, "heredoc $(..)")
        return []


_VAR_REF = re.compile(r"\$\{(!?)([A-Za-z_][A-Za-z0-9_]*)|\$([A-Za-z_][A-Za-z0-9_]*)")
_ESCAPED = re.compile(r"\\.", re.S)  # `\$X` is a literal dollar, `\\$X` an expansion
#: ``${x@P}`` (prompt expansion runs the value's substitutions) and ``$(( x ))`` / ``$[ x ]``
#: naming a variable (arithmetic evaluates its value as an expression: ``a[$(cmd)]`` runs)
_EVALUATES_VALUE = re.compile(r"\$\{[^}]*@P\}|\$(\(\(|\[)[^)\]]*[A-Za-z_$`]")


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
    where = vals[0].rsplit("/", 1)[0] if "/" in vals[0] else ""
    opts = list(itertools.takewhile(_PLAIN_SHELL_OPTION.fullmatch, vals[1:]))
    if (name.lower() in _SHELLS and (not where or where in _SHELL_DIRS) and len(vals) > len(opts) + 1
            and "c" in "".join(opts)):
        # only `bash -lc TEXT [ARG0 ARG...]` itself: a shell from elsewhere (/tmp/x/bash) is
        # judged as the program it is, and other options of its own (--rcfile F, -i, -s, +o)
        # stay on the line for the analysis (joined below)
        out, _ = _h_shell(name, vals[1:])
        if out.shells and out.shells[0][0].strip():
            return out.shells[0][0]
    return shlex.join(vals)


#: Directories of the shell an argv may name to be unwrapped (``/bin/bash -lc X``).
_SHELL_DIRS = frozenset({"/bin", "/usr/bin", "/usr/local/bin"})
#: The shell options an unwrapped argv may give before its text: -c with -l (login), -e, -u, -x.
_PLAIN_SHELL_OPTION = re.compile(r"-[celux]+")

