"""Static check of a CEL parse tree against the facts schema and the function table.

Finds, before any evaluation: an unknown variable (``tol``), an unknown field of a record
(``tool.commandz``, ``c.nmae`` for ``c`` in ``tool.commands``), an unknown function or
method (``startswith``) and a call with the wrong number of arguments — each with its line,
column and the closest valid name. Types are followed loosely: through records, lists,
comprehension variables and the results of known functions; anything dynamic
(``tool.raw_input``, an index into an open map, a ``?:`` of two types) is not checked further.

The schema is data (:func:`normalise` accepts both spellings in use): a dict is a record of
field -> type; a list is ``["T"]`` or ``"list(T)"`` or ``{"list": T}``; ``"map"`` is an open
map; other strings are scalars. ``schema=None`` checks functions only.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lark import Token, Tree

from policyd.core.celc.functions import FUNCTIONS, MACROS

ANY = "any"

#: Result types of functions (for checking what is selected from them); others: ANY.
RETURNS: dict[str, Any] = {
    "size": "int", "contains": "bool", "startsWith": "bool", "endsWith": "bool", "matches": "bool",
    "lowerAscii": "string", "glob": "bool", "within": "bool", "basename": "string", "dirname": "string",
    "duration": "duration", "timestamp": "timestamp", "int": "int", "double": "double", "string": "string",
}


@dataclass(frozen=True, slots=True)
class CheckError:
    """One problem: ``message`` at 1-based ``line``/``column`` of the expression (0: unknown)."""

    message: str
    line: int
    column: int


def _pos(t: Tree[Any] | Token) -> tuple[int, int]:
    if isinstance(t, Token):
        return t.line or 0, t.column or 0
    return getattr(t.meta, "line", 0) or 0, getattr(t.meta, "column", 0) or 0


def closest(name: str, candidates: list[str]) -> str:
    """The closest valid name (case-insensitive match first), or ``""``."""
    for c in candidates:
        if c.lower() == name.lower():
            return c
    found = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    return found[0] if found else ""


def _hint(name: str, candidates: list[str]) -> str:
    best = closest(name, candidates)
    return f"; did you mean {best!r}?" if best else ""


_LITERAL_TYPES = {"STRING_LIT": "string", "MLSTRING_LIT": "string", "DECODED_STRING": "string", "INT_LIT": "int",
                  "BOOL_LIT": "bool"}
_WRAPPERS = frozenset({"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication",
                       "unary", "member", "primary", "paren_expr"})


class Checker:
    def __init__(self, schema: Mapping[str, Any] | None) -> None:
        self.schema = schema
        self.errors: list[CheckError] = []

    def error(self, at: Tree[Any] | Token, message: str) -> Any:
        self.errors.append(CheckError(message, *_pos(at)))
        return ANY

    def visit(self, t: Any, scope: Mapping[str, Any]) -> Any:
        """Check ``t`` and return its (loose) type."""
        if not isinstance(t, Tree):
            return ANY
        rule = t.data
        kids: list[Any] = list(t.children)
        if rule in _WRAPPERS and len(kids) == 1:
            return self.visit(kids[0], scope)
        if rule == "ident":
            return self.ident(kids[0], scope)
        if rule == "member_dot":
            return self.select(self.visit(kids[0], scope), kids[1], t)
        if rule == "member_dot_arg":
            return self.call(kids[1], kids[0], list(kids[2].children) if len(kids) > 2 else [], scope)
        if rule == "ident_arg":
            return self.call(kids[0], None, list(kids[1].children) if len(kids) > 1 else [], scope)
        if rule == "member_index":
            base = self.visit(kids[0], scope)
            self.visit(kids[1], scope)
            return base[0] if isinstance(base, list) else ANY
        if rule == "literal":
            tok = kids[0]
            return _LITERAL_TYPES.get(tok.type, ANY)
        for k in kids:
            self.visit(k, scope)
        if rule in ("conditionalor", "conditionaland", "relation"):
            return "bool"
        return ANY

    def ident(self, tok: Token, scope: Mapping[str, Any]) -> Any:
        name = str(tok)
        if name in scope:
            return scope[name]
        if self.schema is None:
            return ANY
        if name in self.schema:
            return self.schema[name]
        return self.error(tok, f"unknown variable {name!r}{_hint(name, [*self.schema, *scope])}")

    def select(self, base: Any, field_tok: Token, at: Tree[Any]) -> Any:
        field = str(field_tok)
        if isinstance(base, dict):
            if field in base:
                return base[field]
            return self.error(field_tok, f"unknown field {field!r}{_hint(field, list(base))}")
        if isinstance(base, list) or base in ("string", "int", "bool", "timestamp", "duration", "double"):
            kind = "a list" if isinstance(base, list) else f"a {base}"
            return self.error(field_tok, f"{kind} has no field {field!r}")
        return ANY

    def call(self, name_tok: Token, recv: Any, args: list[Any], scope: Mapping[str, Any]) -> Any:
        name = str(name_tok)
        count = len(args) + (recv is not None)
        if name in MACROS:
            arities, _style = MACROS[name]
            if count not in arities:
                want = " or ".join(str(a - (recv is not None)) for a in sorted(arities))
                return self.error(name_tok, f"{name}() takes {want} argument(s), got {len(args)}")
            if name == "has":
                self.visit(args[0], scope)
                return "bool"
            base = self.visit(recv, scope)
            elem = base[0] if isinstance(base, list) else ("string" if isinstance(base, dict) else ANY)
            var = _ident_name(args[0])
            if var is None:
                return self.error(name_tok, f"{name}()'s first argument must be a variable name")
            inner = {**scope, var: elem}
            for a in args[1:]:
                self.visit(a, inner)
            return [ANY] if name in ("map", "filter") else "bool"
        if recv is not None:
            self.visit(recv, scope)
        for a in args:
            self.visit(a, scope)
        fn = FUNCTIONS.get(name)
        if fn is None:
            return self.error(name_tok, f"unknown function {name!r}{_hint(name, [*FUNCTIONS, *MACROS])}")
        if count not in fn.arities:
            want = " or ".join(str(a - (recv is not None)) for a in sorted(fn.arities))
            return self.error(name_tok, f"{name}() takes {want} argument(s), got {len(args)}")
        return RETURNS.get(name, ANY)


def _ident_name(t: Any) -> str | None:
    while isinstance(t, Tree) and t.data in _WRAPPERS and len(t.children) == 1:
        t = t.children[0]
    if isinstance(t, Tree) and t.data == "ident":
        return str(t.children[0])
    return None


def normalise(t: Any) -> Any:
    """A schema type in either spelling -> records as dicts, lists as one-element lists."""
    if isinstance(t, str):
        return [normalise(t[5:-1])] if t.startswith("list(") and t.endswith(")") else t
    if isinstance(t, list | tuple):
        return [normalise(t[0])] if t else [ANY]
    if isinstance(t, Mapping):
        if set(t) == {"list"}:
            return [normalise(t["list"])]
        return {k: normalise(v) for k, v in t.items()}
    return ANY


_NORMALISED: dict[int, tuple[Any, Any]] = {}


def check(tree: Tree[Any], schema: Mapping[str, Any] | None) -> list[CheckError]:
    """Every problem found in ``tree`` (cel-python's parse tree), in source order."""
    if schema is not None:
        known = _NORMALISED.get(id(schema))
        if known is None or known[0] is not schema:
            known = _NORMALISED[id(schema)] = (schema, normalise(schema))
        schema = known[1]
    c = Checker(schema)
    c.visit(tree, {})
    return sorted(c.errors, key=lambda e: (e.line, e.column))
