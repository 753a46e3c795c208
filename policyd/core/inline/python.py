"""Python one-liners (pure): ``python -c CODE`` and code on stdin, parsed with :mod:`ast`.

Proven: statements, expressions and names from the allow-lists below and nothing else —
imports of :data:`MODULES` using only their listed attributes, the builtins in
:data:`BUILTINS`, ``open(LITERAL)`` / ``open(LITERAL, "r"|"rb"|"rt")`` (a read of that path),
literals, comprehensions, ``for``/``if``/``try``/``with open(...)``, f-strings.
Refused (not proven): a binding of a builtin or listed name (:data:`RESERVED`: the walk is
not scope-aware), functions (``lambda``, ``def``: recursion), counts not literal or
multiplying past :data:`MAX_COUNT`, loops that may grow what they walk (:meth:`_Check.bounded`),
more than :data:`MAX_JOINS` operations that join held values (``a + a``, ``[a, a]``,
``a.join(a)``: :meth:`_Check.joins`),
``open`` under /dev, /proc, /sys, any name starting with ``__``, an attribute of a value that is not in
:data:`VALUE_ATTRIBUTES` (``().__class__``, ``gen.gi_frame.f_globals``), a module used as a
value, ``open`` of a computed path or for writing, ``str.format`` (its fields walk
attributes: ``"{0.__globals__}"``), ``while``, ``def``,
``class``, decorators, ``global``, ``await``/``yield``, a coding declaration (stdin code is
decoded by it: ``# coding: utf-7`` hides statements from this parse), and ``**``/``<<`` or
repetition by large constants (a one-liner that never ends).

Every proven snippet has the effect ``test``: Python looks modules up in the working
directory first for ``-c`` and stdin code, and the standard library imports some lazily
(``"x".encode("idna")`` imports ``stringprep``): a ``stringprep.py`` in the workspace would
run, which is the project's own code, as ``pytest`` runs it. Such an entry that links out of
the roots is the I/O layer's to find (:func:`importable` names the entries it looks at).
"""

from __future__ import annotations

import ast
import builtins
import re

from policyd.core.inline.model import MAX_CODE_CHARS, Code, unending, unproven
from policyd.core.inline.stdlib import STDLIB_MODULES

#: Modules a snippet may import, each with the only attributes it may use. Importing each is
#: free of side effects, and each listed attribute only computes, parses or prints.
MODULES: dict[str, frozenset[str]] = {
    # parse and print JSON (dump/dumps to a file object would need one opened for writing)
    "json": frozenset({"load", "loads", "dumps", "JSONDecodeError"}),
    # the interpreter's version and arguments; not modules, path, stdin, settrace...
    "sys": frozenset({"version", "version_info", "hexversion", "argv", "platform", "maxsize",
                      "byteorder", "implementation", "float_info", "stdout", "stderr", "exit"}),
    # version and uname fields; not architecture() (runs file(1)) nor popen/libc_ver
    "platform": frozenset({"python_version", "python_version_tuple", "python_implementation",
                           "system", "machine", "release"}),
    # arithmetic only
    "math": frozenset({"pi", "e", "tau", "inf", "nan", "sqrt", "floor", "ceil", "log", "log2",
                       "log10", "exp", "sin", "cos", "tan", "fabs", "isclose", "isnan", "isinf",
                       "gcd", "trunc", "hypot", "fsum", "copysign"}),
    # not re: a pattern can backtrack for ever ("(a+)+$"), and no bound is proven here
    # character constants (not Template or Formatter: they look attributes up by name)
    "string": frozenset({"ascii_letters", "ascii_lowercase", "ascii_uppercase", "digits",
                         "hexdigits", "octdigits", "punctuation", "printable", "whitespace"}),
    "textwrap": frozenset({"dedent", "indent", "fill", "wrap", "shorten"}),
    # containers (not namedtuple: it builds code from its arguments)
    "collections": frozenset({"Counter", "OrderedDict", "defaultdict", "deque"}),
    # finite iterators only (count, cycle and repeat never end; not accumulate: over lists it
    # builds every prefix, [a] * 1000 of a 1000-list is 4 GB)
    "itertools": frozenset({"chain", "islice", "groupby", "zip_longest",
                            "pairwise", "takewhile", "dropwhile", "compress", "starmap"}),
}

#: Builtins a snippet may name: they compute, convert or print (``open`` is judged apart).
#: Not: eval, exec, compile, __import__, getattr/setattr/delattr, vars, globals, locals, dir,
#: type, object, super, breakpoint, help, input, license, memoryview, exit/quit, iter
#: (``iter(int, 1)`` never ends), format (``format(1, ">999999999")`` fills memory).
BUILTINS: frozenset[str] = frozenset({
    "print", "len", "str", "int", "float", "bool", "list", "dict", "tuple", "set", "frozenset",
    "sorted", "reversed", "enumerate", "zip", "range", "min", "max", "sum", "abs", "round",
    "any", "all", "repr", "ascii", "isinstance", "map", "filter", "chr", "ord", "hex", "oct",
    "bin", "divmod", "bytes", "bytearray", "complex", "hash", "next", "slice",
    "callable", "True", "False", "None",
    "Exception", "ValueError", "KeyError", "IndexError", "TypeError", "AttributeError",
    "OSError", "FileNotFoundError", "StopIteration", "ZeroDivisionError", "UnicodeDecodeError",
})
#: Attributes a snippet may use on a value that is no module: the methods and fields of
#: strings, bytes, numbers, lists, dicts, sets, files opened for reading, regular expression
#: matches, version tuples, exceptions. Not ``format``/``format_map`` (their fields walk
#: attributes: ``"{0.__init__.__globals__}"``), nor generator or frame fields (``gi_frame``,
#: ``f_globals``: a dictionary of the builtins, eval included).
VALUE_ATTRIBUTES: frozenset[str] = frozenset({
    # str, bytes
    "upper", "lower", "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "join",
    "replace", "startswith", "endswith", "find", "rfind", "index", "rindex", "count",
    "partition", "rpartition", "title", "capitalize", "casefold", "center", "ljust", "rjust",
    "zfill", "encode", "decode", "isdigit", "isalpha", "isalnum", "isspace", "isupper",
    "islower", "isnumeric", "isdecimal", "isidentifier", "expandtabs", "swapcase",
    "removeprefix", "removesuffix", "hex", "fromhex",
    # list, dict, set, Counter, deque
    "append", "extend", "insert", "pop", "remove", "sort", "reverse", "copy", "clear", "get",
    "keys", "values", "items", "setdefault", "update", "popitem", "fromkeys", "add", "discard",
    "union", "intersection", "difference", "symmetric_difference", "issubset", "issuperset",
    "most_common", "elements", "appendleft", "popleft",
    # numbers
    "real", "imag", "bit_length", "is_integer", "as_integer_ratio",
    # files opened for reading, sys.stdout/stderr
    "read", "readline", "readlines", "write", "flush", "name",
    # re patterns and matches
    "group", "groups", "groupdict", "start", "end", "span", "match", "search", "fullmatch",
    "findall", "finditer", "sub", "subn", "pattern",
    # sys.version_info, sys.implementation, exceptions
    "major", "minor", "micro", "releaselevel", "serial", "version", "cache_tag", "args", "msg",
    "lineno", "colno",
})
#: Names a snippet may not bind (assign, loop or comprehension target, ``except ... as``,
#: import): the language's builtins and every name the lists grant (a name imported with
#: ``from M import name`` is bound by that import only). The analysis is not
#: scope-aware, so a name bound anywhere (``[0 for exec in []]``, ``if 0: exec = 1``) must not
#: be one whose builtin or listed meaning is still reachable elsewhere.
RESERVED: frozenset[str] = frozenset(dir(builtins)) | BUILTINS | {"open"} | frozenset(MODULES)
#: Methods that grow or change a container: with one in the snippet, no loop may walk a
#: value the snippet holds (``[l.append(x) for l in [[0]] for x in l]`` never ends).
MUTATORS: frozenset[str] = frozenset({"append", "extend", "insert", "add", "update",
                                      "setdefault", "appendleft", "fromkeys"})
#: ``open`` modes that only read.
READ_MODES: frozenset[str] = frozenset({"r", "rb", "rt", "br", "tr"})
#: Largest integer constant a repetition, ``range``, ``bytes`` or ``bytearray`` may take: more
#: is a snippet that runs or fills memory for ever (a headless agent waits).
MAX_COUNT = 1_000_000
#: Largest result of a constant ``**`` / ``<<``.
MAX_POWER = 10**18
#: Most operations joining two values the snippet holds (``b = a + a``: each may double).
MAX_JOINS = 4
#: Most operations repeating a held value by another (``a.replace('x', a)``: each may square).
MAX_SQUARES = 1

_CODING = re.compile(r"^[ \t\f]*#.*?coding[:=]", re.M)
_STATEMENTS = (ast.Expr, ast.Assign, ast.AugAssign, ast.For, ast.If, ast.Pass, ast.Break,
               ast.Continue, ast.Import, ast.ImportFrom, ast.With, ast.Try, ast.Assert)
_EXPRESSIONS = (ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.IfExp, ast.Dict, ast.Set, ast.List,
                ast.Tuple, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
                ast.Compare, ast.Call, ast.Constant, ast.Attribute, ast.Subscript, ast.Slice,
                ast.Name, ast.Starred, ast.JoinedStr, ast.FormattedValue)
_PARTS = (ast.Module, ast.comprehension, ast.arguments, ast.arg, ast.keyword, ast.alias,
          ast.withitem, ast.ExceptHandler, ast.expr_context, ast.operator, ast.unaryop,
          ast.cmpop, ast.boolop)
_COUNTED = frozenset({"range", "bytes", "bytearray"})
#: Builtins that return an iterator walking their arguments as it is consumed
#: (``l.extend(map(int, l))`` never ends).
_LAZY = frozenset({"map", "filter", "zip", "enumerate", "reversed"})
#: Methods whose integer arguments are widths a result is padded to (counts).
_PADDING = frozenset({"center", "ljust", "rjust", "zfill", "expandtabs"})


_IMPORTABLE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\.(py|pyc|pyw)|\..*\.so|\.so)?")
#: What proven code may import, itself or through the modules it uses, from the working
#: directory (which ``-c`` and stdin code put first on ``sys.path``): standard library names
#: only (proven code imports no other module).
STDLIB: frozenset[str] = STDLIB_MODULES


def importable(name: str) -> bool:
    """A directory entry proven code may import from its ``sys.path`` directory: a package
    or module named like a standard library module (``json/``, ``json.py``, ``re.pyc``,
    ``json.cpython-311-x86_64-linux-gnu.so``, a link to any of them), or ``__pycache__``
    (its ``.pyc`` files stand in for sources)."""
    m = _IMPORTABLE.fullmatch(name)
    return name == "__pycache__" or (m is not None and m.group(1) in STDLIB)


class _Refused(Exception):
    """The snippet holds something not on the allow-lists (the message says what)."""


def judge_python(text: str) -> Code:
    """What Python ``text`` does: proven with its reads, or why not. Never raises."""
    if len(text) > MAX_CODE_CHARS:
        return unproven(f"python code longer than {MAX_CODE_CHARS} characters")
    if _CODING.search("\n".join(text.splitlines()[:2])):
        return unproven("python code declares its source encoding")
    if "\0" in text:
        return unproven("python code holds a NUL character")
    try:
        tree = ast.parse(text, mode="exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        return unproven(f"python code does not parse: {e}")
    try:
        reads = _Check(tree).run()
    except _Refused as e:
        return unproven(f"python code: {e}")
    except RecursionError:
        return unproven("python code nests too deeply")
    return Code(True, frozenset({"test", "read"} if reads else {"test"}), tuple(reads))


class _Check:
    """One walk over a parsed snippet: names bound, then every node against the lists."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.modules: dict[str, str] = {}  # local name -> module (import json as j: j -> json)
        self.locals: set[str] = set()
        self.imported: set[str] = set()  # names bound by ``from M import name``
        self.reads: list[str] = []
        self.parents: dict[int, ast.AST] = {}
        self.counts: list[int] = []  # every literal count (range sizes, repetitions)
        #: every node in ``ast.walk`` order (breadth first), listed once: each pass reads it
        self.nodes: list[ast.AST] = [tree]

    def run(self) -> list[str]:
        nodes = self.nodes
        i = 0
        while i < len(nodes):  # ast.walk's order: a node's children after the nodes before it
            node = nodes[i]
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node
                nodes.append(child)
            i += 1
        for node in nodes:
            self.bind(node)
        clash = set(self.modules) & self.locals
        if clash:
            raise _Refused(f"{sorted(clash)[0]!r} names both a module and a value")
        for node in nodes:
            self.node(node)
        self.bounded()
        return self.reads

    def bind(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name not in MODULES:
                    raise _Refused(f"import of {a.name!r} (not on the list)")
                local = a.asname or a.name
                if local != a.name and local in RESERVED:
                    raise _Refused(f"import as {local!r}, a builtin or listed name")
                if self.modules.get(local, a.name) != a.name:
                    raise _Refused(f"{local!r} names two modules")
                self.modules[local] = a.name
        elif isinstance(node, ast.ImportFrom):
            allowed = MODULES.get(node.module or "")
            if node.level or allowed is None:
                raise _Refused(f"import from {node.module!r} (not on the list)")
            for a in node.names:
                if a.name not in allowed:
                    raise _Refused(f"import of {node.module}.{a.name} (not on the list)")
                self.local(a.asname or a.name, listed=a.asname in (None, a.name))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            self.local(node.id)
        elif isinstance(node, ast.arg):
            self.local(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            self.local(node.name)

    def local(self, name: str, listed: bool = False) -> None:
        """``name`` is bound somewhere in the snippet: never a builtin nor a name the lists
        grant (``listed``: ``from json import loads`` binds its own listed name)."""
        if name in RESERVED or name in self.imported or (listed and name in self.locals):
            raise _Refused(f"a binding of {name!r}, a builtin or listed name")
        if listed:
            self.imported.add(name)
        self.locals.add(name)

    def bounded(self) -> None:
        """The snippet ends: literal counts multiply to at most :data:`MAX_COUNT`; no loop
        rebinds a name; with a container grown anywhere, no loop walks a value the snippet
        holds, and nothing a loop grows a container by is a value the snippet holds."""
        total = 1
        for n in self.counts:
            total *= max(n, 1)
            if total > MAX_COUNT:
                raise _Refused(f"counts (range, repetition) multiply to more than {MAX_COUNT}")
        mutates = False
        for node in self.nodes:
            if isinstance(node, ast.AugAssign) or (
                    isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store)) or (
                    isinstance(node, ast.Attribute) and node.attr in MUTATORS):
                mutates = True
        if mutates:
            for node in self.nodes:
                if isinstance(node, ast.Attribute) and node.attr in MUTATORS and not (
                        isinstance(self.parents.get(id(node)), ast.Call)
                        and self.parents[id(node)].func is node):  # type: ignore[attr-defined]
                    raise _Refused(f"{node.attr} used as a value (a callback growing a container)")
                if isinstance(node, ast.Call) and self.lazy(node.func) and any(
                        self.holds_local(a) for a in [*node.args, *(k.value for k in node.keywords)]):
                    raise _Refused("an iterator over a value the snippet holds, with a container grown")
        loops: list[ast.AST] = [n for n in self.nodes if isinstance(n, (ast.For, ast.comprehension))]
        for loop in loops:
            iterable = loop.iter  # type: ignore[attr-defined]
            if mutates and self.holds_local(iterable):
                raise _Refused("a loop over a value the snippet holds, with a container grown")
            if isinstance(loop, ast.For):
                for inner in (n for s in [*loop.body, *loop.orelse] for n in ast.walk(s)):
                    if isinstance(inner, (ast.Assign, ast.AugAssign)):
                        raise _Refused("an assignment inside a loop")
                    if (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute)
                            and inner.func.attr in MUTATORS
                            and any(self.holds_local(a, loop)
                                    for a in [*inner.args, *(k.value for k in inner.keywords)])):
                        raise _Refused("a container grown inside a loop by a value the snippet holds")
        comps = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
        for comp in (n for n in self.nodes if isinstance(n, comps)):
            targets = {t.id for g in comp.generators for t in ast.walk(g.target) if isinstance(t, ast.Name)}
            parts = [comp.key, comp.value] if isinstance(comp, ast.DictComp) else [comp.elt]
            for inner in (n for p in parts for n in ast.walk(p)):
                if (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute)
                        and inner.func.attr in MUTATORS
                        and any(isinstance(x, ast.Name) and x.id in self.locals and x.id not in targets
                                for a in inner.args for x in ast.walk(a))):
                    raise _Refused("a container grown inside a comprehension by a value the snippet holds")
        grows = [g for g in map(self.joins, self.nodes) if g]
        if len(grows) > MAX_JOINS:
            raise _Refused(f"more than {MAX_JOINS} operations joining two values the snippet holds")
        if grows.count("square") > MAX_SQUARES:
            raise _Refused(f"more than {MAX_SQUARES} operation repeating a held value by another "
                           "(s.replace(x, a), a.join(b), [a for _ in b])")

    def joins(self, n: ast.AST) -> str:
        """How ``n`` may grow a value the snippet holds (so that :data:`MAX_JOINS` and
        :data:`MAX_SQUARES` of them bound the growth), ``""`` when it does not. ``"join"``
        (up to the sum of its parts): ``a + a``; a display holding two held values
        (``[a, a]``: a shared tree whose ``repr`` or ``==`` walks 2**depth leaves); growing a
        container by a held value (``l.append(a)``, ``l.extend(l)``). ``"square"`` (up to
        the product): ``s.replace(x, a)``, ``a.join(b)``, a comprehension repeating a held
        value other than through a subscript (``[a for _ in b]``, not ``[d[k] for k in d]``)."""
        if isinstance(n, ast.BinOp):
            return "join" if self.holds_local(n.left) and self.holds_local(n.right) else ""
        if isinstance(n, (ast.List, ast.Tuple, ast.Set)):
            return "join" if sum(self.holds_local(e) for e in n.elts) >= 2 else ""
        if isinstance(n, ast.Dict):
            parts = [*n.values, *(k for k in n.keys if k is not None)]
            return "join" if sum(self.holds_local(e) for e in parts) >= 2 else ""
        if isinstance(n, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            own = {t.id for g in n.generators for t in ast.walk(g.target) if isinstance(t, ast.Name)}
            parts = [n.key, n.value] if isinstance(n, ast.DictComp) else [n.elt]
            whole = any(isinstance(x, ast.Name) and x.id in self.locals and x.id not in own
                        and not isinstance(self.parents.get(id(x)), ast.Subscript)
                        for p in parts for x in ast.walk(p))
            return "square" if whole else ""
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            args = [*n.args, *(k.value for k in n.keywords)]
            if n.func.attr == "replace" and len(args) >= 2 and self.holds_local(args[1]):
                return "square"
            if n.func.attr == "join" and self.holds_local(n.func.value) and any(self.holds_local(a) for a in args):
                return "square"
            if n.func.attr in MUTATORS and any(self.holds_local(a) for a in args):
                return "join"
        return ""

    def lazy(self, f: ast.expr) -> bool:
        """``f`` makes an iterator that walks its argument while it is consumed."""
        if isinstance(f, ast.Name):
            return f.id in _LAZY
        return isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) \
            and self.modules.get(f.value.id) == "itertools"

    def holds_local(self, expr: ast.AST, loop: ast.For | None = None) -> bool:
        """``expr`` names a value bound in the snippet (other than ``loop``'s own target)."""
        own = {t.id for t in ast.walk(loop.target) if isinstance(t, ast.Name)} if loop else set()
        return any(isinstance(x, ast.Name) and x.id in self.locals and x.id not in own for x in ast.walk(expr))

    def node(self, node: ast.AST) -> None:
        if not isinstance(node, _STATEMENTS + _EXPRESSIONS + _PARTS):
            raise _Refused(f"{type(node).__name__} is not on the list")
        if isinstance(node, ast.Name):
            self.name(node)
        elif isinstance(node, ast.Attribute):
            self.attribute(node)
        elif isinstance(node, ast.Call):
            self.call(node)
        elif isinstance(node, ast.BinOp):
            self.binop(node)
        elif isinstance(node, ast.FormattedValue) and node.format_spec is not None:
            self.spec(node.format_spec)
        elif isinstance(node, ast.comprehension) and node.is_async:
            raise _Refused("async comprehension")
        elif isinstance(node, ast.With):
            for item in node.items:
                if not (isinstance(item.context_expr, ast.Call) and _named(item.context_expr.func, "open")):
                    raise _Refused("with of something other than open(...)")
        elif isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            raise _Refused("import *")

    def name(self, node: ast.Name) -> None:
        n = node.id
        if n.startswith("__"):
            raise _Refused(f"name {n!r}")
        if isinstance(node.ctx, ast.Store):
            return
        parent = self.parents.get(id(node))
        if n in self.modules:
            if not (isinstance(parent, ast.Attribute) and parent.value is node):
                raise _Refused(f"module {n!r} used as a value")
            return
        if n in self.locals:
            return
        if n == "open":
            if not (isinstance(parent, ast.Call) and parent.func is node):
                raise _Refused("open used as a value")
            return
        if n not in BUILTINS:
            raise _Refused(f"name {n!r} is not on the list")

    def attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.ctx, ast.Store):
            raise _Refused(f"assignment to attribute {node.attr!r}")
        base = node.value
        if isinstance(base, ast.Name) and base.id in self.modules:
            module = self.modules[base.id]
            if node.attr not in MODULES[module]:
                raise _Refused(f"{module}.{node.attr} is not on the list")
            return
        if node.attr not in VALUE_ATTRIBUTES:
            raise _Refused(f"attribute {node.attr!r} (not on the list)")

    def call(self, node: ast.Call) -> None:
        f = node.func
        if _named(f, "open"):  # even a local named open: what it holds is not followed
            self.open_call(node)
        elif isinstance(f, ast.Name) and f.id in _COUNTED:
            self.counted(f.id, node)
        elif isinstance(f, ast.Attribute) and f.attr in _PADDING:
            for a in node.args:
                n = _literal_int(a)
                if n is None and not (isinstance(a, ast.Constant) and isinstance(a.value, str)):
                    raise _Refused(f"{f.attr}() of a width known only at run time")
                if n is not None:
                    self.counts.append(abs(n))
            if node.keywords:
                raise _Refused(f"{f.attr}() with keyword arguments")

    def spec(self, spec: ast.expr) -> None:
        """An f-string's format spec: literal, its widths counted (``{1:>999999999}``)."""
        parts = spec.values if isinstance(spec, ast.JoinedStr) else [spec]
        if not all(isinstance(p, ast.Constant) and isinstance(p.value, str) for p in parts):
            raise _Refused("a format spec computed at run time")
        self.widths("".join(p.value for p in parts))  # type: ignore[attr-defined]

    def widths(self, text: str) -> None:
        if "*" in text:
            raise _Refused("a %-format width taken from the arguments")
        self.counts.extend(int(d) for d in re.findall(r"[0-9]+", text))

    def counted(self, name: str, node: ast.Call) -> None:
        """``range``/``bytes``/``bytearray``: literal integer counts only (bytes of a string or
        list is a conversion, bounded by its input)."""
        args = [_literal_int(a) for a in node.args]
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise _Refused(f"{name}() with keyword or unpacked arguments")
        if name == "range":
            if not 1 <= len(args) <= 3 or any(a is None for a in args):
                raise _Refused("range() of counts known only at run time")
            self.counts.append(len(range(*args)))  # type: ignore[arg-type]
        elif args and args[0] is not None:
            self.counts.append(args[0])
        elif node.args and _int_valued(node.args[0]):
            raise _Refused(f"{name}() of a count known only at run time")

    def open_call(self, node: ast.Call) -> None:
        args = list(node.args)
        kw = {k.arg: k.value for k in node.keywords}
        if None in kw or any(isinstance(a, ast.Starred) for a in args):
            raise _Refused("open(*args/**kwargs)")
        if "file" in kw:
            args.insert(0, kw.pop("file"))
        if "mode" in kw and len(args) < 2:
            args.append(kw.pop("mode"))
        if not 1 <= len(args) <= 2 or set(kw) - {"encoding", "errors", "newline"}:
            raise _Refused("open() with arguments other than a path, a read mode and an encoding")
        path = args[0]
        if not (isinstance(path, ast.Constant) and isinstance(path.value, str) and path.value):
            raise _Refused("open() of a path computed at run time")
        if unending(path.value):
            raise _Refused(f"open() of {path.value!r}: a device or kernel file may never end")
        if len(args) == 2 and not (isinstance(args[1], ast.Constant) and args[1].value in READ_MODES):
            raise _Refused("open() in a mode that may write")
        for v in kw.values():
            if not (isinstance(v, ast.Constant) and isinstance(v.value, str | type(None))):
                raise _Refused("open() with a computed encoding")
        self.reads.append(path.value)

    def binop(self, node: ast.BinOp) -> None:
        if isinstance(node.op, (ast.Pow, ast.LShift)):
            left, right = node.left, node.right
            if not (_int(left) and _int(right)):
                raise _Refused("** or << of values known only at run time")
            a, b = left.value, right.value  # type: ignore[attr-defined]
            if b < 0 or b > 64 or (isinstance(node.op, ast.Pow) and abs(a) > 1 and b * abs(a).bit_length() > 60):
                raise _Refused("** or << with a huge result")
        elif isinstance(node.op, ast.Mod):
            left = node.left
            if isinstance(left, ast.Constant) and isinstance(left.value, str):
                self.widths(left.value)  # "%9d" % x: its widths are counts
            elif not (_number(left) or _literal_int(left) is not None or self.range_target(left)):
                raise _Refused("% of a value that may be a format string (widths fill memory)")
        elif isinstance(node.op, ast.Mult):
            counts = [c for c in (_literal_int(node.left), _literal_int(node.right)) if c is not None]
            if not counts and not (_number(node.left) or _number(node.right)):
                raise _Refused("* of two values known only at run time (a repetition of any size)")
            self.counts.extend(abs(c) for c in counts)


    def range_target(self, n: ast.expr) -> bool:
        """``n`` is the target of a loop over ``range(...)`` only (an int)."""
        if not isinstance(n, ast.Name):
            return False
        bound = [b for b in self.nodes if isinstance(b, ast.Name) and b.id == n.id
                 and isinstance(b.ctx, ast.Store)]
        loops = [lp for lp in self.nodes if isinstance(lp, (ast.For, ast.comprehension))
                 and isinstance(lp.target, ast.Name) and lp.target.id == n.id]
        return bool(loops) and len(bound) == len(loops) and all(
            isinstance(lp.iter, ast.Call) and _named(lp.iter.func, "range") for lp in loops)


def _named(f: ast.expr, name: str) -> bool:
    return isinstance(f, ast.Name) and f.id == name


def _int(n: ast.expr) -> bool:
    return isinstance(n, ast.Constant) and type(n.value) is int


def _literal_int(n: ast.expr) -> int | None:
    """An integer literal (``-3`` too), else None."""
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub) and _int(n.operand):
        return -n.operand.value  # type: ignore[attr-defined, no-any-return]
    return n.value if _int(n) else None  # type: ignore[attr-defined]


def _number(n: ast.expr) -> bool:
    """A float or complex literal (a product with it is a number, never a repetition)."""
    if isinstance(n, ast.UnaryOp):
        n = n.operand
    return isinstance(n, ast.Constant) and type(n.value) in (float, complex)


def _int_valued(n: ast.expr) -> bool:
    """Might be an integer at run time (anything but a literal of another type)."""
    return not (isinstance(n, (ast.Constant, ast.List, ast.Tuple, ast.JoinedStr, ast.ListComp, ast.Dict))
                and not _int(n))


def _big(n: ast.expr, limit: int) -> bool:
    """An integer constant above ``limit`` (or any ``**``/``<<``: bounded by :meth:`binop`)."""
    if isinstance(n, ast.UnaryOp):
        n = n.operand
    return (_int(n) and abs(n.value) > limit) or (  # type: ignore[attr-defined]
        isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Pow, ast.LShift)))
