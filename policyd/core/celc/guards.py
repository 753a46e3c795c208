"""Command-name guards: what a rule needs of the request's command names before it can match.

Many rules start by naming programs: ``tool.names.exists(n, n in ["curl", "wget"]) && ...``,
``tool.commands.exists(c, c.name == "git" && c.subcommand == "push")``. When none of the
request's commands has one of those names, such a rule is false, and false *without an
error* (the names are strings, compared to string literals; ``false && x`` is false whatever
``x`` is, errors included), so it need not be evaluated. :func:`name_guards` finds those
conditions in a parse tree; the decision loop checks them against the activation's own
``tool.names`` / ``tool.commands[*].name`` (the bounded values the rule would read).

A guard is ``(field, names)``: ``field`` is ``"names"`` or ``"commands"``, ``names`` a set
of literal strings; a rule's guards are a tuple that must *all* meet the request's names
(each is necessary). Recognised, through parentheses:

- a top-level ``A && B``: the guards of ``A`` and of ``B``;
- a top-level ``A || B``: one guard, the union of one guard of each side, when both have one;
- ``tool.names.exists(n, P)`` / ``tool.commands.exists(c, P)`` whose ``P`` *requires* a name:
  ``n == "x"`` / ``"x" == n`` / ``n in ["x", "y"]`` (``c.name`` for commands), an ``||`` of
  such, or an ``&&`` with one such side.

Anything else gives no guard (the rule is always evaluated). Source of the semantics: the
CEL language definition, "Logical Operators" (commutative ``&&``/``||`` absorbing errors) and
"Macros" (``exists``), https://github.com/google/cel-spec/blob/master/doc/langdef.md.
"""

from __future__ import annotations

from typing import Any

from lark import Token, Tree

from policyd.core.celc.compile import _literal_str_list, _literal_value

Guard = tuple[str, frozenset[str]]

_CHAIN = frozenset({"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary",
                    "member", "primary", "paren_expr"})
_FIELDS = {"names": "", "commands": "name"}  # tool.<field> -> the element's field holding the name


def _strip(t: Any) -> Any:
    """Through single-child wrapper chains and parentheses."""
    while isinstance(t, Tree) and t.data in _CHAIN and len(t.children) == 1:
        t = t.children[0]
    return t


def name_guards(tree: Any) -> tuple[Guard, ...]:
    """The guards of a rule's parse tree (cel-python's, or decoded from the tree cache)."""
    return tuple(_guards(_strip(tree)))


def _guards(t: Any) -> list[Guard]:
    if not isinstance(t, Tree):
        return []
    if t.data == "conditionaland" and len(t.children) == 2:
        return _guards(_strip(t.children[0])) + _guards(_strip(t.children[1]))
    if t.data == "conditionalor" and len(t.children) == 2:
        left, right = _guards(_strip(t.children[0])), _guards(_strip(t.children[1]))
        if left and right and left[0][0] == right[0][0]:
            return [(left[0][0], left[0][1] | right[0][1])]
        return []
    found = _exists_guard(t)
    return [found] if found else []


def _exists_guard(t: Tree[Any]) -> Guard | None:
    """``tool.<names|commands>.exists(v, P)`` with a ``P`` that requires a name."""
    if t.data != "member_dot_arg" or len(t.children) != 3:
        return None
    recv, method, args = t.children
    if not (isinstance(method, Token) and str(method) == "exists") or not isinstance(args, Tree):
        return None
    recv = _strip(recv)
    if not (isinstance(recv, Tree) and recv.data == "member_dot" and len(recv.children) == 2):
        return None
    base, field = _strip(recv.children[0]), str(recv.children[1])
    if field not in _FIELDS or not _is_ident(base, "tool") or len(args.children) != 2:
        return None
    var = _strip(args.children[0])
    if not (isinstance(var, Tree) and var.data == "ident"):
        return None
    names = _required(_strip(args.children[1]), str(var.children[0]), _FIELDS[field])
    return (field, names) if names is not None else None


def _required(p: Any, var: str, attr: str) -> frozenset[str] | None:
    """The names one of which the element must have for ``p`` to be true, or None."""
    if not isinstance(p, Tree):
        return None
    if p.data == "conditionaland" and len(p.children) == 2:
        left = _required(_strip(p.children[0]), var, attr)
        return left if left is not None else _required(_strip(p.children[1]), var, attr)
    if p.data == "conditionalor" and len(p.children) == 2:
        either = _required(_strip(p.children[0]), var, attr)
        other = _required(_strip(p.children[1]), var, attr)
        return either | other if either is not None and other is not None else None
    if p.data != "relation" or len(p.children) != 2:
        return None
    op, right = p.children
    if not isinstance(op, Tree) or len(op.children) != 1:
        return None
    left = _strip(op.children[0])
    if op.data == "relation_eq":
        if _is_name(left, var, attr) and type(lit := _literal_value(right)) is str:
            return frozenset({lit})
        if _is_name(_strip(right), var, attr) and type(lit := _literal_value(op.children[0])) is str:
            return frozenset({lit})
        return None
    if op.data == "relation_in" and _is_name(left, var, attr):
        items = _literal_str_list(right)
        return frozenset(items) if items is not None else None
    return None


def _is_ident(t: Any, name: str) -> bool:
    return isinstance(t, Tree) and t.data == "ident" and str(t.children[0]) == name


def _is_name(t: Any, var: str, attr: str) -> bool:
    """``var`` itself (attr ""), or ``var.<attr>``."""
    if not attr:
        return _is_ident(t, var)
    return (isinstance(t, Tree) and t.data == "member_dot" and len(t.children) == 2
            and str(t.children[1]) == attr and _is_ident(_strip(t.children[0]), var))
