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
    """Tree or token -> JSON-able data (wrapper chains collapsed). Iterative: a tree of any
    depth converts the same whatever the caller's stack (depth is limited afterwards, on
    this data: ``policyd.core.cel.MAX_TREE_DEPTH``)."""
    root: list[Any] = []
    stack: list[tuple[Any, list[Any]]] = [(t, root)]
    while stack:
        node, out = stack.pop()
        if isinstance(node, Token):
            out.append(_token_data(node))
            continue
        while node.data in _WRAPPERS and len(node.children) == 1 and isinstance(node.children[0], Tree):
            node = node.children[0]
        meta = node.meta
        children: list[Any] = []
        out.append({"d": str(node.data), "c": children,
                    "p": [getattr(meta, "line", 0) or 0, getattr(meta, "column", 0) or 0]})
        stack.extend((k, children) for k in reversed(node.children))
    return root[0]


def _token_data(t: Token) -> list[Any]:
    if t.type in ("STRING_LIT", "MLSTRING_LIT"):
        from celpy.evaluation import celstr  # cel-python's own escape rules

        return [DECODED_STRING, str(celstr(t)), t.line or 0, t.column or 0]
    return [t.type, str(t), t.line or 0, t.column or 0]


def from_data(o: Any) -> Any:
    """Data from :func:`to_data` -> a Lark tree. Raises ValueError on a malformed shape."""
    if isinstance(o, list) and len(o) == 4:
        return Token(str(o[0]), str(o[1]), line=int(o[2]), column=int(o[3]))
    if isinstance(o, dict) and isinstance(o.get("c"), list):
        t: Tree[Any] = Tree(str(o["d"]), [from_data(k) for k in o["c"]])
        t.meta.line, t.meta.column = (int(x) for x in o["p"])
        return t
    raise ValueError("not a parse tree")
