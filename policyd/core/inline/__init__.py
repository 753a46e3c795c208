"""Inline code one-liners (pure): prove that ``python -c``, ``node -e`` or ``perl -pi -e`` code
only prints, computes and reads named files; anything else is not proven.

The catalogue names the language of a program's code option (``script_language = "python"``
on the ``python`` entry, whose ``-c`` value has the role ``script``); :func:`judge_code`
dispatches to one small analyzer per language:

- :mod:`.python` — the standard library's ``ast`` and an allow-list of nodes, names,
  modules and attributes;
- :mod:`.javascript` — tree-sitter-javascript and the same kind of allow-list;
- :mod:`.perl` — a reader of ``s///`` and ``tr///`` statements (the only perl proven).

A proven snippet's :class:`Code` lists the files it reads (literal paths, resolved like any
other operand) and its effects; an unproven one keeps the effects the catalogue gives the
option (``exec``: code nobody decided). **Never a guess**: a construct an analyzer does not
know is not proven.
"""

from __future__ import annotations

from policyd.core.inline.javascript import judge_javascript
from policyd.core.inline.model import Code
from policyd.core.inline.perl import judge_perl
from policyd.core.inline.python import judge_python

#: ``script_language`` values whose text is code judged here (the others: shell/scripts.py).
CODE_LANGUAGES: frozenset[str] = frozenset({"python", "javascript", "perl"})

__all__ = ["CODE_LANGUAGES", "Code", "judge_code"]


def judge_code(lang: str, text: str, options: frozenset[str] = frozenset()) -> Code:
    """What ``text`` in ``lang`` does; ``options``: every option name given to the program
    (perl's substitutions are proven only with ``-i``). Never raises."""
    if lang == "python":
        return judge_python(text)
    if lang == "javascript":
        return judge_javascript(text)
    if lang == "perl":
        return judge_perl(text, options)
    return Code(False, why=f"no analyzer for {lang!r} code")
