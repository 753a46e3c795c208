"""cel-python parse trees <-> plain JSON data, so parsed rules can be cached on disk without
pickle (loading JSON cannot run code, whatever is in the cache file).

The encoding drops the single-child wrapper chains of cel-python's grammar
(``expr -> conditionalor -> ... -> primary``), which the compiler and the checker pass
through anyway: a tree decoded from data compiles to the same closures, faster.

String literals are stored decoded (token type ``DECODED_STRING``, its text the value), so
a cached tree compiles without cel-python (its escape rules ran when it was parsed).

Data shape: a token is ``[type, text, line, column]``; a node is
``{"d": rule, "c": [children], "p": [line, column]}``.
"""

from __future__ import annotations

from typing import Any

from lark import Token, Tree

#: Token type of a string literal already decoded (its text is the value).
DECODED_STRING = "DECODED_STRING"
_WRAPPERS = frozenset({"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication",
                       "unary", "member", "primary", "paren_expr"})


def to_data(t: Any) -> Any:
    """Tree or token -> JSON-able data (wrapper chains collapsed)."""
    if isinstance(t, Token):
        if t.type in ("STRING_LIT", "MLSTRING_LIT"):
            from celpy.evaluation import celstr  # cel-python's own escape rules

            return [DECODED_STRING, str(celstr(t)), t.line or 0, t.column or 0]
        return [t.type, str(t), t.line or 0, t.column or 0]
    while t.data in _WRAPPERS and len(t.children) == 1 and isinstance(t.children[0], Tree):
        t = t.children[0]
    meta = t.meta
    return {"d": str(t.data), "c": [to_data(k) for k in t.children],
            "p": [getattr(meta, "line", 0) or 0, getattr(meta, "column", 0) or 0]}


def from_data(o: Any) -> Any:
    """Data from :func:`to_data` -> a Lark tree. Raises ValueError on a malformed shape."""
    if isinstance(o, list) and len(o) == 4:
        return Token(str(o[0]), str(o[1]), line=int(o[2]), column=int(o[3]))
    if isinstance(o, dict) and isinstance(o.get("c"), list):
        t: Tree[Any] = Tree(str(o["d"]), [from_data(k) for k in o["c"]])
        t.meta.line, t.meta.column = (int(x) for x in o["p"])
        return t
    raise ValueError("not a parse tree")
