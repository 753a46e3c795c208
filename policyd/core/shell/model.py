"""Public results of the shell analysis and its limits (pure data)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar, dataclass_transform

_T = TypeVar("_T")

#: Nesting of shell-in-shell strings (bash -c, eval, ssh, heredoc to sh) before giving up.
MAX_DEPTH: int = 4
#: The work budget in commands: beyond it the analysis stops and sets parse_ok False, so the
#: shipped baseline asks with a reason (never an allow, never a stall: 1,999 chained
#: commands take milliseconds to refuse).
MAX_COMMANDS: int = 256
#: Longest text analysed (bounds tree-sitter parse time to ~0.2 s); longer: parse_ok False.
MAX_INPUT_CHARS: int = 256 * 1024
#: Longest wrapper chain unwrapped (sudo env nice ...): each level copies the remaining words.
MAX_WRAPPERS: int = 32
#: Total chars of command texts + args kept: nested $(..) repeat inner text in every level.
MAX_TEXT_CHARS: int = 4 * 1024 * 1024
#: Error messages kept (one is enough to make parse_ok False).
MAX_ERRORS: int = 20

# --------------------------------------------------------------------------- public types


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def record(cls: type[_T]) -> type[_T]:
    """The analysis's value classes: slots dataclasses, equal and hashable by their compared
    fields, immutable to the type checker (``frozen_default``, PEP 681: ``mypy --strict``
    refuses an assignment to a field; tests/test_shell_records.py checks it) but built without
    a frozen dataclass's ``object.__setattr__`` per field: 3.5 against 0.4 µs for 14 fields
    here, several objects per command, ~13 % of a 200-command chain's instructions
    (callgrind). Nothing may change one after it is built: the memo shares analyses between
    decisions."""
    return dataclass(slots=True, unsafe_hash=True)(cls)


@record
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

    Also: ``arg_kinds`` per argument (:data:`LITERAL`, :data:`PATTERN` for a glob or brace
    word, :data:`EXPANSION` for a word holding ``$``-expansions or substitutions);
    ``stdin_from`` the index (in ``ShellAnalysis.commands``) of the command whose output
    feeds this one's stdin through a pipe, -1 when none or not one command; ``stdin_args``
    True when its operands arrive on stdin (behind ``xargs``/``parallel``); ``seq``
    ``"and"`` for a top-level command followed by ``&&`` (a ``cd`` there certainly holds for
    what follows), ``"top"`` for another top-level command, ``""`` when nested (subshell,
    pipeline, substitution, loop, wrapper...); ``stdin_text`` the literal heredoc it reads.
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
    arg_kinds: tuple[int, ...] = field(default=(), compare=False)
    stdin_from: int = field(default=-1, compare=False)
    stdin_args: bool = field(default=False, compare=False)
    seq: str = field(default="", compare=False)
    #: the text its stdin reads, when a heredoc gives it literally (``<<'EOF'``, or ``<<EOF``
    #: whose body holds no ``$``, backquote or backslash); None otherwise
    stdin_text: str | None = field(default=None, compare=False)
    #: per argument, whether it holds an unquoted expansion (``$x``, ``$(..)``, backquotes):
    #: bash splits its result into words (``head -n $(cat n)`` may become ``head -n 5 KEY``)
    split_args: tuple[bool, ...] = field(default=(), compare=False)


#: ``SimpleCommand.arg_kinds`` / ``Redirect.kind`` values.
LITERAL, PATTERN, EXPANSION = 0, 1, 2
#: A word kind for a file-name *filter* (``find -name P``, ``grep --include=P``, ``rg -g P``, a git
#: pathspec): a pattern the program matches itself, in which a leading ``.`` is not special
#: (fnmatch without FNM_PERIOD), so ``*.env`` also selects ``.env``.
FILTER = 3


@record
class Redirect:
    """A redirection: ``op`` as written with its fd (``">"``, ``"2>"``, ``"&>"``, ``">&"``,
    ``"<<"``, ``"<<<"``...), the unquoted ``target`` word (``""`` for heredocs; the content
    for here-strings; the fd number for ``2>&1``) and whether the target is dynamic."""

    op: str
    target: str
    dynamic: bool
    kind: int = field(default=0, compare=False)  # LITERAL, PATTERN or EXPANSION
    #: index (in ``ShellAnalysis.commands``) of the command it belongs to; -1: a compound
    #: statement's or not known
    command: int = field(default=-1, compare=False)


@record
class ShellAnalysis:
    """Everything :func:`analyze` found in one command string.

    ``commands``: every simple command in source order (wrappers and their inner commands
    both listed). ``assignments``: ``(NAME, value)`` pairs from ``A=b cmd``, ``export A=b``,
    ``A=b`` and ``env A=b cmd``. ``parse_ok`` is False on syntax errors, nesting deeper than
    ``max_depth``, more than :data:`MAX_COMMANDS` commands or over-long input; ``errors``
    says why. ``dynamic``: something (a command, argument, assignment, redirect, loop list)
    depends on an expansion. ``path_args``: raw path operands of file commands and redirect
    targets (unresolved: ``"~/.ssh/id_rsa"``, ``"../x"``, ``"$HOME/x"``, ``"*"``).
    ``unknown``: why the analysis cannot know what runs (arithmetic evaluating variable
    data, a function definition, a syntax node it does not know...): never empty when
    something may run that no listed command shows. ``assignment_scopes``: per assignment,
    ``(first, end)`` indices of the commands it reaches (``end`` -1: every command to the
    end). ``env_reads``: names whose value an expansion takes from the environment (the
    text did not assign them before; special parameters such as ``$?`` are not names).
    """

    commands: tuple[SimpleCommand, ...]
    redirects: tuple[Redirect, ...]
    assignments: tuple[tuple[str, str], ...]
    parse_ok: bool
    dynamic: bool
    errors: tuple[str, ...]
    path_args: tuple[str, ...]
    unknown: tuple[str, ...] = field(default=(), compare=False)
    assignment_scopes: tuple[tuple[int, int], ...] = field(default=(), compare=False)
    env_reads: tuple[str, ...] = field(default=(), compare=False)

