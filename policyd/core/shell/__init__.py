"""Shell command analysis for permission policies (pure: no I/O).

Layout (each a file to read in one sitting):

- :mod:`.walk` — the generic tree-sitter-bash walk: every simple command, redirect and
  assignment, nested shell strings, and what the analysis cannot know;
- :mod:`.words` — a word node's literal value and whether it is dynamic;
- :mod:`.wrappers` — wrappers whose inner command is listed on its own (sudo, env, xargs…);
- :mod:`.options` — option tables used for the ``flags``/``subcommand`` fields;
- :mod:`.catalogue` — the command catalogue (TOML data, ``policyd/catalogue``) and its check;
- :mod:`.effects` — each command's effects, reads, writes and execs from the catalogue;
- :mod:`.scripts` — sed/awk/jq/yq programs given as arguments;
- :mod:`.resolve` — paths resolved per command (cd order, globs, stdin operands);
- :mod:`.model` — the result types and limits.
"""

from policyd.core.shell.model import (
    MAX_COMMANDS,
    MAX_DEPTH,
    MAX_INPUT_CHARS,
    MAX_TEXT_CHARS,
    MAX_WRAPPERS,
    Redirect,
    ShellAnalysis,
    SimpleCommand,
)
from policyd.core.shell.walk import analyze, split_argv_command

__all__ = [
    "MAX_COMMANDS",
    "MAX_DEPTH",
    "MAX_INPUT_CHARS",
    "MAX_TEXT_CHARS",
    "MAX_WRAPPERS",
    "Redirect",
    "ShellAnalysis",
    "SimpleCommand",
    "analyze",
    "split_argv_command",
]
