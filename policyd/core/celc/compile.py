"""cel-python's parse tree (Lark) -> nested Python closures over native values.

A compiled node is ``Node = Callable[[act, slots], value]``: ``act`` maps top-level names
(``tool``, ``session``, ...) to native values (see :mod:`policyd.core.celc.values`);
``slots`` holds the :class:`~policyd.core.celc.values.Budget` at index 0 and then one slot
per comprehension variable, resolved at compile time (no activation object per element).
Errors travel as ``CelError`` exceptions and are absorbed only where CEL absorbs them:
``&&``, ``||`` (commutatively: ``error && false`` is ``false``), ``exists`` and ``all``
(an element deciding the answer wins over an error elsewhere); ``?:``, ``exists_one``,
``map``, ``filter``, functions and operators propagate them.

Anything outside the supported language raises :class:`Unsupported` at compile time, with
the line and column (1-based, within the expression) of the construct.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from lark import Token, Tree

from policyd.core import paths
from policyd.core.celc import functions as fns
from policyd.core.celc import values as v
from policyd.core.celc.trees import DECODED_STRING
from policyd.core.celc.values import CelError

Node = Callable[[Mapping[str, Any], list[Any]], Any]
Scope = Mapping[str, int]


class Unsupported(ValueError):
    """The expression uses something this compiler does not implement (or gets wrong)."""

    def __init__(self, message: str, line: int = 0, column: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


def _pos(t: Tree[Any] | Token) -> tuple[int, int]:
    if isinstance(t, Token):
        return t.line or 0, t.column or 0
    meta = t.meta
    return getattr(meta, "line", 0) or 0, getattr(meta, "column", 0) or 0


class Compiler:
    """Compiles one expression; ``slots`` counts the comprehension variables it binds."""

    def __init__(self) -> None:
        self.slots = 1  # slot 0: the Budget

    def fail(self, what: str, at: Tree[Any] | Token) -> Unsupported:
        line, col = _pos(at)
        return Unsupported(f"{what} is not supported by policyd's CEL evaluator", line, col)

    # ------------------------------------------------------------------ dispatch

    def node(self, t: Tree[Any], scope: Scope) -> Node:
        kids = t.children
        rule = t.data
        if rule in ("expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "member",
                    "primary", "paren_expr") and len(kids) == 1:
            return self.node(kids[0], scope)
        method = getattr(self, f"c_{rule}", None)
        if method is None:
            raise self.fail(f"'{rule}'", t)
        node: Node = method(t, scope)
        return node

    def c_expr(self, t: Tree[Any], scope: Scope) -> Node:
        cond, yes, no = (self.node(k, scope) for k in t.children)

        def ternary(a: Mapping[str, Any], s: list[Any]) -> Any:
            c = cond(a, s)
            if c is True:
                return yes(a, s)
            if c is False:
                return no(a, s)
            raise v.no_overload("_?_:_", c)

        return ternary

    def c_conditionalor(self, t: Tree[Any], scope: Scope) -> Node:
        left, right = (self.node(k, scope) for k in t.children)

        def or_(a: Mapping[str, Any], s: list[Any]) -> Any:
            try:
                x = left(a, s)
            except CelError as exc:
                x = exc
            if x is True:
                return True
            try:
                y = right(a, s)
            except CelError as exc:
                y = exc
            if y is True:
                return True
            return _logic_rest(x, y, False, "_||_")

        return or_

    def c_conditionaland(self, t: Tree[Any], scope: Scope) -> Node:
        left, right = (self.node(k, scope) for k in t.children)

        def and_(a: Mapping[str, Any], s: list[Any]) -> Any:
            try:
                x = left(a, s)
            except CelError as exc:
                x = exc
            if x is False:
                return False
            try:
                y = right(a, s)
            except CelError as exc:
                y = exc
            if y is False:
                return False
            return _logic_rest(x, y, True, "_&&_")

        return and_

    def c_relation(self, t: Tree[Any], scope: Scope) -> Node:
        op_tree, right_tree = t.children
        op = op_tree.data
        left = self.node(op_tree.children[0], scope)
        lit = _literal_value(right_tree)
        if op in ("relation_eq", "relation_ne") and type(lit) is str:
            return _eq_str(left, lit, op == "relation_ne")
        if op == "relation_in" and _literal_str_list(right_tree) is not None:
            return _in_str_set(left, frozenset(_literal_str_list(right_tree) or ()))
        right = self.node(right_tree, scope)
        if op == "relation_eq":
            return lambda a, s: v.equals(left(a, s), right(a, s))
        if op == "relation_ne":
            return lambda a, s: not v.equals(left(a, s), right(a, s))
        if op == "relation_in":
            return lambda a, s: v.contains_item(right(a, s), left(a, s))
        cel_op = {"relation_lt": "_<_", "relation_le": "_<=_", "relation_gt": "_>_", "relation_ge": "_>=_"}[op]
        return lambda a, s: v.compare(cel_op, left(a, s), right(a, s))

    def c_addition(self, t: Tree[Any], scope: Scope) -> Node:
        return self._binary(t, scope, {"addition_add": v.add, "addition_sub": v.sub})

    def c_multiplication(self, t: Tree[Any], scope: Scope) -> Node:
        return self._binary(t, scope, {"multiplication_mul": v.mul, "multiplication_div": v.div,
                                       "multiplication_mod": v.mod})

    def _binary(self, t: Tree[Any], scope: Scope, ops: Mapping[str, Callable[[Any, Any], Any]]) -> Node:
        op_tree, right_tree = t.children
        fn = ops[op_tree.data]
        left = self.node(op_tree.children[0], scope)
        right = self.node(right_tree, scope)
        return lambda a, s: fn(left(a, s), right(a, s))

    def c_unary(self, t: Tree[Any], scope: Scope) -> Node:
        if len(t.children) == 1:
            return self.node(t.children[0], scope)
        op, operand_tree = t.children
        operand = self.node(operand_tree, scope)
        if op.data == "unary_neg":
            return lambda a, s: v.neg(operand(a, s))

        def not_(a: Mapping[str, Any], s: list[Any]) -> Any:
            x = operand(a, s)
            if x is True:
                return False
            if x is False:
                return True
            raise v.no_overload("!_", x)

        return not_

    # ------------------------------------------------------------------ members

    def c_member_dot(self, t: Tree[Any], scope: Scope) -> Node:
        obj_tree, name_tok = t.children
        name = str(name_tok)
        base = _unwrap(obj_tree)
        if base is not None and base.data == "ident" and str(base.children[0]) not in _TYPE_NAMES:
            return _select_from_name(str(base.children[0]), scope.get(str(base.children[0])), name)
        obj = self.node(obj_tree, scope)

        def select(a: Mapping[str, Any], s: list[Any]) -> Any:
            m = obj(a, s)
            if type(m) is dict:
                try:
                    return m[name]
                except KeyError:
                    raise CelError(f"no such key: {name!r}") from None
            raise CelError(f"no such field {name!r} on {v.type_name(m)}")

        return select

    def c_member_index(self, t: Tree[Any], scope: Scope) -> Node:
        obj_tree, index_tree = t.children
        obj = self.node(obj_tree, scope)
        index = self.node(index_tree, scope)

        def at(a: Mapping[str, Any], s: list[Any]) -> Any:
            c = obj(a, s)
            i = index(a, s)
            if isinstance(c, list | tuple):
                if type(i) is float and i.is_integer():  # the spec accepts 0.0 as an index
                    i = int(i)
                if type(i) is not int:
                    raise v.no_overload("_[_]", c, i)
                if 0 <= i < len(c):
                    return c[i]
                raise CelError(f"index out of range: {i}")  # negative too (the spec; not a wrap)
            if type(c) is dict:
                return v.map_get(c, i)
            raise v.no_overload("_[_]", c, i)

        return at

    def c_member_dot_arg(self, t: Tree[Any], scope: Scope) -> Node:
        recv_tree, name_tok, *rest = t.children
        name = str(name_tok)
        args = list(rest[0].children) if rest else []
        if name in ("exists", "all", "exists_one", "filter", "map"):
            return self._comprehension(name, recv_tree, args, scope, name_tok)
        fn = fns.FUNCTIONS.get(name)
        if fn is None or "method" not in fn.styles:
            raise self.fail(f"method '{name}'", name_tok)
        if len(args) + 1 not in fn.arities:
            raise self.fail(f"'{name}' with {len(args)} argument(s)", name_tok)
        recv = self.node(recv_tree, scope)
        if name == "matches" and len(args) == 1:
            pattern = _literal_value(args[0])
            if type(pattern) is str:
                return self._literal_regex(recv, pattern, args[0])
        return _call(fn, [recv, *(self.node(x, scope) for x in args)])

    def c_ident_arg(self, t: Tree[Any], scope: Scope) -> Node:
        name_tok, *rest = t.children
        name = str(name_tok)
        args = list(rest[0].children) if rest else []
        if name == "has":
            return self._has(args, name_tok, scope)
        fn = fns.FUNCTIONS.get(name)
        if fn is None or "global" not in fn.styles:
            raise self.fail(f"function '{name}'", name_tok)
        if len(args) not in fn.arities:
            raise self.fail(f"'{name}' with {len(args)} argument(s)", name_tok)
        if name == "matches":
            pattern = _literal_value(args[1])
            if type(pattern) is str:
                return self._literal_regex(self.node(args[0], scope), pattern, args[1])
        if name == "glob":
            pattern = _literal_value(args[1])
            patterns = (pattern,) if type(pattern) is str else _literal_str_list(args[1])
            if patterns is not None:
                path = self.node(args[0], scope)
                try:
                    return _literal_glob(path, tuple(patterns))
                except ValueError as exc:  # an unknown [:class:] (policyd.core.brackets)
                    raise Unsupported(f"glob pattern: {exc}", *_pos(args[1])) from None
        return _call(fn, [self.node(x, scope) for x in args])

    def _literal_regex(self, text: Node, pattern: str, at: Tree[Any]) -> Node:
        try:
            rx = fns.regex(pattern)
        except CelError as exc:
            line, col = _pos(at)
            raise Unsupported(str(exc), line, col) from None

        search = fns.search

        def match(a: Mapping[str, Any], s: list[Any]) -> Any:
            x = text(a, s)
            if type(x) is not str:
                raise v.no_overload("matches", x, pattern)
            return search(rx, x)

        return match

    def _has(self, args: list[Any], at: Any, scope: Scope) -> Node:
        inner = _unwrap(args[0]) if len(args) == 1 else None
        if inner is None or inner.data != "member_dot":
            raise Unsupported("has() takes one field selection, like has(tool.raw_input.x)", *_pos(at))
        obj = self.node(inner.children[0], scope)
        field = str(inner.children[1])

        def has(a: Mapping[str, Any], s: list[Any]) -> Any:
            m = obj(a, s)
            if type(m) is dict:
                return field in m
            raise v.no_overload("has", m)

        return has

    def _comprehension(self, name: str, recv_tree: Tree[Any], args: list[Any], scope: Scope, at: Any) -> Node:
        arities = {"map": (2, 3)}.get(name, (2,))
        if len(args) not in arities:
            raise Unsupported(f"{name}() takes {' or '.join(map(str, arities))} arguments", *_pos(at))
        var_tree = _unwrap(args[0])
        if var_tree is None or var_tree.data != "ident":
            raise Unsupported(f"{name}()'s first argument must be a variable name", *_pos(at))
        slot = self.slots
        self.slots += 1
        inner = {**scope, str(var_tree.children[0]): slot}
        rng = self.node(recv_tree, scope)
        body = [self.node(x, inner) for x in args[1:]]
        return _COMPREHENSIONS[name](rng, slot, *body)

    # ------------------------------------------------------------------ primaries

    def c_ident(self, t: Tree[Any], scope: Scope) -> Node:
        name = str(t.children[0])
        slot = scope.get(name)
        if slot is not None:
            return lambda a, s: s[slot]
        if name in _TYPE_NAMES:
            raise self.fail(f"the type value '{name}'", t)

        def var(a: Mapping[str, Any], s: list[Any]) -> Any:
            try:
                return a[name]
            except KeyError:
                raise CelError(f"undeclared reference to {name!r}") from None

        return var

    def c_literal(self, t: Tree[Any], scope: Scope) -> Node:
        value = _literal_value(t, strict=True)
        if value is _NOT_LITERAL:
            raise self.fail(f"literal {t.children[0]}", t)
        return lambda a, s: value

    def c_list_lit(self, t: Tree[Any], scope: Scope) -> Node:
        items = [self.node(x, scope) for x in (t.children[0].children if t.children else [])]
        constant = _literal_str_list(t)
        if constant is not None:  # built once: CEL values are immutable and nothing here mutates a list
            return lambda a, s: constant
        return lambda a, s: [item(a, s) for item in items]

    def c_map_lit(self, t: Tree[Any], scope: Scope) -> Node:
        flat = [self.node(x, scope) for x in (t.children[0].children if t.children else [])]
        pairs = list(zip(flat[0::2], flat[1::2], strict=True))

        def build(a: Mapping[str, Any], s: list[Any]) -> Any:
            out: dict[Any, Any] = {}
            kinds: set[type] = set()
            for kf, vf in pairs:
                key = kf(a, s)
                if type(key) not in (str, int, bool):
                    raise CelError(f"unsupported map key type {v.type_name(key)}")
                if key in out:
                    raise CelError(f"Duplicate key {key!r}")
                kinds.add(type(key))
                out[key] = vf(a, s)
            if bool in kinds and int in kinds:
                raise CelError("a map literal mixing bool and int keys is not supported")
            return out

        return build


# ---------------------------------------------------------------------- helpers


def _logic_rest(x: Any, y: Any, unit: bool, op: str) -> Any:
    """The end of ``&&`` (unit True) / ``||`` (unit False) once neither side decided it."""
    if x is unit and y is unit:
        return unit
    if isinstance(x, CelError):
        raise x
    if isinstance(y, CelError):
        raise y
    raise v.no_overload(op, x, y)


def _select_from_name(var: str, slot: int | None, name: str) -> Node:
    """``var.name`` in one closure (the commonest node: ``tool.paths``, ``c.name``): ``var``
    a comprehension variable (``slot``) or a top-level one; the same errors as an ident
    node followed by a select node."""
    if slot is not None:
        def select_slot(a: Mapping[str, Any], s: list[Any]) -> Any:
            m = s[slot]
            if type(m) is dict:
                try:
                    return m[name]
                except KeyError:
                    raise CelError(f"no such key: {name!r}") from None
            raise CelError(f"no such field {name!r} on {v.type_name(m)}")

        return select_slot

    def select_var(a: Mapping[str, Any], s: list[Any]) -> Any:
        try:
            m = a[var]
        except KeyError:
            raise CelError(f"undeclared reference to {var!r}") from None
        if type(m) is dict:
            try:
                return m[name]
            except KeyError:
                raise CelError(f"no such key: {name!r}") from None
        raise CelError(f"no such field {name!r} on {v.type_name(m)}")

    return select_var


def _unwrap(t: Any) -> Tree[Any] | None:
    """The single meaningful node under the expr/conditionalor/... chain, else None."""
    while isinstance(t, Tree) and t.data in ("expr", "conditionalor", "conditionaland", "relation", "addition",
                                             "multiplication", "unary", "member", "primary") and len(t.children) == 1:
        t = t.children[0]
    return t if isinstance(t, Tree) else None


_NOT_LITERAL: Any = object()
_TYPE_NAMES = frozenset({"bool", "int", "uint", "double", "string", "bytes", "list", "map", "null_type", "type"})


def _literal_value(t: Any, strict: bool = False) -> Any:
    """The value of a literal node (through the wrapper chain), else _NOT_LITERAL. With
    ``strict``, unsupported literals (uint, bytes, out-of-range int) raise Unsupported."""
    node = _unwrap(t) if t.data != "literal" else t
    if node is None or node.data != "literal":
        return _NOT_LITERAL
    tok: Any = node.children[0]
    kind, text = tok.type, str(tok)
    if kind == "INT_LIT":
        neg = text.startswith("-")
        body = text[1:] if neg else text
        n = int(body[2:], 16) if body[:2].lower() == "0x" else int(body, 10)
        n = -n if neg else n
        if not v.INT_MIN <= n <= v.INT_MAX:
            if strict:
                raise Unsupported(f"integer literal {text} is outside int64 (CEL's int)", *_pos(tok))
            return _NOT_LITERAL
        return n
    if kind == "FLOAT_LIT":
        return float(text)
    if kind == DECODED_STRING:
        return text
    if kind in ("STRING_LIT", "MLSTRING_LIT"):
        from celpy.evaluation import celstr  # cel-python's own escape rules

        return str(celstr(tok))
    if kind == "BOOL_LIT":
        return text == "true"
    if kind == "NULL_LIT":
        return None
    if strict:
        what = kind.replace("_LIT", "").lower()
        raise Unsupported(f"{what} literal {text} is not supported by policyd's CEL evaluator", *_pos(tok))
    return _NOT_LITERAL


def _literal_str_list(t: Any) -> list[str] | None:
    node = _unwrap(t)
    if node is None or node.data != "list_lit" or not node.children:
        return None
    items = [_literal_value(x) for x in node.children[0].children]
    return items if all(type(x) is str for x in items) else None


def _literal_glob(path: Node, patterns: tuple[str, ...]) -> Node:
    """``glob(p, "pat")`` / ``glob(p, ["a", "b", ...])`` with literal patterns: one regex,
    built at compile time (a policy's secret globs are dozens of patterns)."""
    rx = paths.glob_any_regex(patterns) if patterns else None

    def glob(a: Mapping[str, Any], s: list[Any]) -> Any:
        p = fns._str(path(a, s), "glob")
        return rx is not None and rx.match(p) is not None

    return glob


def _eq_str(left: Node, lit: str, negate: bool) -> Node:
    def eq(a: Mapping[str, Any], s: list[Any]) -> Any:
        return (type(x := left(a, s)) is str and x == lit) is not negate

    return eq


def _in_str_set(left: Node, items: frozenset[str]) -> Node:
    def in_(a: Mapping[str, Any], s: list[Any]) -> Any:
        return type(x := left(a, s)) is str and x in items

    return in_


def _call(fn: fns.Fn, args: list[Node]) -> Node:
    impl = fn.impl

    def wrap(exc: Exception) -> CelError:
        return CelError(f"{fn.name}(): {exc}")

    if len(args) == 1:
        (x,) = args

        def call1(a: Mapping[str, Any], s: list[Any]) -> Any:
            arg = x(a, s)
            try:
                return impl(arg)
            except (TypeError, ValueError, OverflowError, RecursionError) as exc:
                raise wrap(exc) from None

        return call1
    if len(args) == 2:
        x, y = args

        def call2(a: Mapping[str, Any], s: list[Any]) -> Any:
            p, q = x(a, s), y(a, s)
            try:
                return impl(p, q)
            except (TypeError, ValueError, OverflowError, RecursionError) as exc:
                raise wrap(exc) from None

        return call2

    def calln(a: Mapping[str, Any], s: list[Any]) -> Any:
        vals = [f(a, s) for f in args]
        try:
            return impl(*vals)
        except (TypeError, ValueError, OverflowError, RecursionError) as exc:
            raise wrap(exc) from None

    return calln


def _items(c: Any, name: str) -> Any:
    if isinstance(c, list | tuple):
        return c
    if type(c) is dict:
        return list(c)
    raise v.no_overload(name, c)


def _exists(rng: Node, slot: int, pred: Node) -> Node:
    def exists(a: Mapping[str, Any], s: list[Any]) -> Any:
        budget = s[0]
        err: CelError | None = None
        for item in _items(rng(a, s), "exists"):
            budget.left -= 1
            if budget.left <= 0:
                budget.refill()
            s[slot] = item
            try:
                r = pred(a, s)
            except CelError as exc:
                err = exc
                continue
            if r is True:
                return True
            if r is not False:
                err = v.no_overload("exists", r)
        if err is not None:
            raise err
        return False

    return exists


def _all(rng: Node, slot: int, pred: Node) -> Node:
    def all_(a: Mapping[str, Any], s: list[Any]) -> Any:
        budget = s[0]
        err: CelError | None = None
        for item in _items(rng(a, s), "all"):
            budget.left -= 1
            if budget.left <= 0:
                budget.refill()
            s[slot] = item
            try:
                r = pred(a, s)
            except CelError as exc:
                err = exc
                continue
            if r is False:
                return False
            if r is not True:
                err = v.no_overload("all", r)
        if err is not None:
            raise err
        return True

    return all_


def _predicate(r: Any, name: str) -> bool:
    if r is True or r is False:
        return r
    raise v.no_overload(name, r)


def _exists_one(rng: Node, slot: int, pred: Node) -> Node:
    def exists_one(a: Mapping[str, Any], s: list[Any]) -> Any:
        budget = s[0]
        count = 0
        for item in _items(rng(a, s), "exists_one"):
            budget.left -= 1
            if budget.left <= 0:
                budget.refill()
            s[slot] = item
            count += _predicate(pred(a, s), "exists_one")
        return count == 1

    return exists_one


def _filter(rng: Node, slot: int, pred: Node) -> Node:
    def filter_(a: Mapping[str, Any], s: list[Any]) -> Any:
        budget = s[0]
        out = []
        for item in _items(rng(a, s), "filter"):
            budget.left -= 1
            if budget.left <= 0:
                budget.refill()
            s[slot] = item
            if _predicate(pred(a, s), "filter"):
                out.append(item)
        return out

    return filter_


def _map(rng: Node, slot: int, first: Node, second: Node | None = None) -> Node:
    pred, expr = (first, second) if second is not None else (None, first)

    def map_(a: Mapping[str, Any], s: list[Any]) -> Any:
        budget = s[0]
        out = []
        for item in _items(rng(a, s), "map"):
            budget.left -= 1
            if budget.left <= 0:
                budget.refill()
            s[slot] = item
            if pred is None or _predicate(pred(a, s), "map"):
                out.append(expr(a, s))
        return out

    return map_


_COMPREHENSIONS: dict[str, Callable[..., Node]] = {
    "exists": _exists,
    "all": _all,
    "exists_one": _exists_one,
    "filter": _filter,
    "map": _map,
}
