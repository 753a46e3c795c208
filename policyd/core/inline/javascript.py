"""JavaScript one-liners (pure): ``node -e CODE`` / ``node -p CODE``, parsed with
tree-sitter-javascript (a grammar, not patterns).

Proven: expression statements and ``const``/``let``/``var`` declarations of plain names (none
a global's: :data:`NODE_GLOBALS`) built from literals, arrays, objects, operators, template
literals, names the snippet declared, the globals in :data:`GLOBALS` through their listed
members only, methods in :data:`METHODS` on values, and
``require('fs').readFileSync(LITERAL[, 'utf8'])`` (a read of that path, not under /dev, /proc
or /sys).

Refused (not proven): any other global (``global``, ``globalThis``, ``eval``, ``Function``,
``module``), ``process`` beyond its listed members (``process.env``, ``process.binding``,
``process.mainModule``), ``require`` of anything else (``child_process``), ``import()``,
``new``, assignments, tagged templates, regular expression literals (where tree-sitter and V8
could split ``/`` differently), a computed subscript, the properties in :data:`REFUSED`
(``constructor`` leads to ``Function``), ``\\u`` escapes in names, statements other than the
above, functions (arrow functions: recursion never ends), more than :data:`MAX_JOINS`
operations joining held values (``a + a``, ``[a, a]``, ``a.join(a)``: :meth:`_Check.joins`),
``require`` of anything but ``fs``
(``require('./x.json')`` may load ``x.json.js`` or a directory's ``main``: a link out runs
code from anywhere).
"""

from __future__ import annotations

import functools
import re

from tree_sitter import Language, Node, Parser

from policyd.core.inline.model import MAX_CODE_CHARS, Code, unending, unproven


@functools.cache
def _language() -> Language:
    """The grammar, loaded on the first ``node -e`` judged (~20 ms: not at every start-up)."""
    import tree_sitter_javascript

    return Language(tree_sitter_javascript.language())

#: Globals a snippet may use, each only through these members (``""``: called itself).
GLOBALS: dict[str, frozenset[str]] = {
    "console": frozenset({"log", "error", "info", "warn", "debug", "dir", "table"}),
    # versions and platform; not env, binding, mainModule, dlopen, kill, chdir...
    "process": frozenset({"version", "versions", "platform", "arch", "argv", "pid", "exit",
                          "exitCode", "cwd", "uptime", "release"}),
    "JSON": frozenset({"parse", "stringify"}),
    "Object": frozenset({"keys", "values", "entries", "fromEntries"}),
    "Math": frozenset({"max", "min", "abs", "floor", "ceil", "round", "sqrt", "pow", "PI",
                       "random", "trunc", "sign", "log", "log2", "log10"}),
    "Number": frozenset({"", "isInteger", "parseInt", "parseFloat", "isNaN", "MAX_SAFE_INTEGER"}),
    "Array": frozenset({"isArray"}),
    "String": frozenset({""}), "Boolean": frozenset({""}), "parseInt": frozenset({""}),
    "parseFloat": frozenset({""}), "isNaN": frozenset({""}),
}
#: Names of node's global object (``Object.getOwnPropertyNames(globalThis)`` in node 20 under
#: ``-e``, where every built-in module is a global too) and of the CommonJS module scope: a
#: snippet may not declare any of them (the analysis is not scope-aware: a declaration
#: anywhere must not leave the global reachable elsewhere).
NODE_GLOBALS: frozenset[str] = frozenset({
    "AbortController", "AbortSignal", "AggregateError", "Array", "ArrayBuffer", "Atomics",
    "BigInt", "BigInt64Array", "BigUint64Array", "Blob", "Boolean", "BroadcastChannel",
    "Buffer", "ByteLengthQueuingStrategy", "CompressionStream", "CountQueuingStrategy",
    "Crypto", "CryptoKey", "CustomEvent", "DOMException", "DataView", "Date",
    "DecompressionStream", "Error", "EvalError", "Event", "EventTarget", "File",
    "FinalizationRegistry", "Float32Array", "Float64Array", "FormData", "Function", "Headers",
    "Infinity", "Int16Array", "Int32Array", "Int8Array", "Intl", "JSON", "Map", "Math",
    "MessageChannel", "MessageEvent", "MessagePort", "NaN", "Number", "Object", "Performance",
    "PerformanceEntry", "PerformanceMark", "PerformanceMeasure", "PerformanceObserver",
    "PerformanceObserverEntryList", "PerformanceResourceTiming", "Promise", "Proxy",
    "RangeError", "ReadableByteStreamController", "ReadableStream", "ReadableStreamBYOBReader",
    "ReadableStreamBYOBRequest", "ReadableStreamDefaultController",
    "ReadableStreamDefaultReader", "ReferenceError", "Reflect", "RegExp", "Request", "Response",
    "Set", "SharedArrayBuffer", "String", "SubtleCrypto", "Symbol", "SyntaxError",
    "TextDecoder", "TextDecoderStream", "TextEncoder", "TextEncoderStream", "TransformStream",
    "TransformStreamDefaultController", "TypeError", "URIError", "URL", "URLSearchParams",
    "Uint16Array", "Uint32Array", "Uint8Array", "Uint8ClampedArray", "WeakMap", "WeakRef",
    "WeakSet", "WebAssembly", "WritableStream", "WritableStreamDefaultController",
    "WritableStreamDefaultWriter", "__dirname", "__filename", "assert", "async_hooks", "atob",
    "btoa", "buffer", "child_process", "clearImmediate", "clearInterval", "clearTimeout",
    "cluster", "console", "constants", "crypto", "decodeURI", "decodeURIComponent", "dgram",
    "diagnostics_channel", "dns", "domain", "encodeURI", "encodeURIComponent", "escape", "eval",
    "events", "exports", "fetch", "fs", "global", "globalThis", "http", "http2", "https",
    "inspector", "isFinite", "isNaN", "module", "net", "os", "parseFloat", "parseInt", "path",
    "perf_hooks", "performance", "process", "punycode", "querystring", "queueMicrotask",
    "readline", "repl", "require", "setImmediate", "setInterval", "setTimeout", "stream",
    "string_decoder", "structuredClone", "sys", "timers", "tls", "trace_events", "tty",
    "undefined", "unescape", "url", "util", "v8", "vm", "wasi", "worker_threads", "zlib",
})
#: Values that are names: ``undefined`` and friends.
CONSTANTS = frozenset({"undefined", "NaN", "Infinity"})
#: Methods a snippet may call on a value (strings, arrays, numbers, data): they compute.
METHODS: frozenset[str] = frozenset({
    "map", "filter", "forEach", "reduce", "join", "split", "slice", "includes", "indexOf",
    "keys", "values", "entries", "trim", "trimStart", "trimEnd", "toUpperCase", "toLowerCase",
    "startsWith", "endsWith", "replace", "replaceAll", "toFixed",
    "toString", "find", "findIndex", "some", "every", "sort", "reverse", "flat",
    "flatMap", "charAt", "substring", "at", "push", "pop", "shift", "unshift", "lastIndexOf",
    "localeCompare", "toLocaleString", "hasOwnProperty", "get", "has",
})
#: Properties refused on any value: they reach constructors (``Function``), prototypes,
#: callers, or run or bind functions.
REFUSED: frozenset[str] = frozenset({
    "constructor", "prototype", "caller", "callee", "arguments", "call", "apply", "bind",
    "mainModule", "binding", "dlopen", "env", "require", "module", "exports", "eval",
    "Function", "global", "globalThis", "process", "valueOf", "toJSON", "then",
})
#: Modules ``require`` may load: the file system, for readFileSync of a literal path only.
_FS = frozenset({"fs", "node:fs"})
_READERS = frozenset({"readFileSync", "existsSync"})
_ENCODINGS = frozenset({"utf8", "utf-8", "ascii", "latin1"})
#: Node types allowed anywhere (their children are checked on their own).
_PLAIN = frozenset({
    "program", "expression_statement", "parenthesized_expression", "binary_expression",
    "unary_expression", "ternary_expression", "sequence_expression", "array", "object",
    "pair", "spread_element", "number", "true", "false", "null", "comment", "hash_bang_line",
    "arguments", "optional_chain", "string_fragment", "escape_sequence", "template_substitution",
    "formal_parameters", "empty_statement", "lexical_declaration", "variable_declaration",
    "variable_declarator", "member_expression", "subscript_expression",
    "call_expression", "identifier", "property_identifier", "shorthand_property_identifier",
    "string", "template_string",
})
#: Most operations joining two values the snippet holds (``const b = a + a``: each may double).
MAX_JOINS = 4
#: Most operations repeating a held value by another (``a.replaceAll('x', a)``: each may square).
MAX_SQUARES = 1
_SAFE_KEY = re.compile(r"[A-Za-z0-9_ .$-]*")


class _Refused(Exception):
    """The snippet holds something not on the allow-lists."""


def judge_javascript(text: str) -> Code:
    """What the JavaScript ``text`` does: proven with its reads, or why not. Never raises."""
    if len(text) > MAX_CODE_CHARS:
        return unproven(f"javascript code longer than {MAX_CODE_CHARS} characters")
    src = text.encode("utf-8", "surrogatepass")
    tree = Parser(_language()).parse(src)
    if tree.root_node.has_error:
        return unproven("javascript code does not parse")
    check = _Check(src)
    try:
        check.walk(tree.root_node)
    except _Refused as e:
        return unproven(f"javascript code: {e}")
    return Code(True, frozenset({"read"} if check.reads else set()), tuple(check.reads))


class _Check:
    def __init__(self, src: bytes) -> None:
        self.src = src
        self.locals: set[str] = set()
        self.fs: set[str] = set()  # locals bound to require('fs')
        self.reads: list[str] = []

    def text(self, n: Node) -> str:
        return self.src[n.start_byte : n.end_byte].decode("utf-8", "replace")

    def walk(self, root: Node) -> None:
        nodes = _nodes(root)  # listed once: three passes read it
        for n in nodes:  # bind first: a name is a local wherever it is declared
            if n.type == "variable_declarator":
                name = n.child_by_field_name("name")
                if name is None or name.type != "identifier":
                    raise _Refused("a destructuring declaration")
                value = n.child_by_field_name("value")
                fs_itself = self.text(name) == "fs" and value is not None and self.is_require_fs(value)
                if self.text(name) in NODE_GLOBALS | set(GLOBALS) | CONSTANTS and not fs_itself:
                    raise _Refused(f"a declaration of the global {self.text(name)!r}")
                self.locals.add(self.text(name))
                if value is not None and self.is_require_fs(value):
                    self.fs.add(self.text(name))
        for n in nodes:
            self.node(n)
        grows = [g for g in map(self.joins, nodes) if g]
        if len(grows) > MAX_JOINS:
            raise _Refused(f"more than {MAX_JOINS} operations joining two values the snippet holds")
        if grows.count("square") > MAX_SQUARES:
            raise _Refused(f"more than {MAX_SQUARES} operation repeating a held value by another "
                           "(s.replace(x, a), a.join(b))")

    def joins(self, n: Node) -> str:
        """How ``n`` may grow a value the snippet holds (so that :data:`MAX_JOINS` and
        :data:`MAX_SQUARES` of them bound the growth), ``""`` when it does not. ``"join"``:
        ``a + a``; an array, object or template holding two held values (``[a, a]``: a
        shared tree that ``JSON.stringify`` or ``flat(Infinity)`` walks 2**depth times);
        ``l.push(a)``. ``"square"``: ``s.replace(x, a)``, ``a.join(b)``."""
        t = n.type
        if t == "binary_expression":
            both = all(self.holds_local(k) for k in (n.child_by_field_name("left"), n.child_by_field_name("right")))
            return "join" if both else ""
        if t in ("array", "object", "template_string"):
            parts = [k for k in n.named_children if k.type != "comment"]
            return "join" if sum(self.holds_local(k) for k in parts) >= 2 else ""
        if t == "call_expression":
            f = n.child_by_field_name("function")
            args = n.child_by_field_name("arguments")
            if f is None or f.type != "member_expression" or args is None:
                return ""
            prop = f.child_by_field_name("property")
            name = self.text(prop) if prop is not None else ""
            kids = [a for a in args.named_children if a.type != "comment"]
            if name in ("replace", "replaceAll") and len(kids) >= 2 and self.holds_local(kids[1]):
                return "square"
            if name == "join" and self.holds_local(f.child_by_field_name("object")) and any(
                    self.holds_local(a) for a in kids):
                return "square"
            if name in ("push", "unshift") and any(self.holds_local(a) for a in kids):
                return "join"
        return ""

    def holds_local(self, n: Node | None) -> bool:
        return n is not None and any(k.type in ("identifier", "shorthand_property_identifier")
                                     and self.text(k) in self.locals for k in _nodes(n))

    def node(self, n: Node) -> None:
        t = n.type
        if not n.is_named:
            return
        if t not in _PLAIN:
            raise _Refused(f"{t} is not on the list")
        if t in ("identifier", "property_identifier", "shorthand_property_identifier") and "\\" in self.text(n):
            raise _Refused("an escape in a name")
        if t == "identifier":
            self.identifier(n)
        elif t == "shorthand_property_identifier":  # {name}: the value of that name
            name = self.text(n)
            if name not in self.locals or name in self.fs:
                raise _Refused(f"the name {name!r} in an object")
        elif t == "member_expression":
            prop = n.child_by_field_name("property")
            name = self.text(prop) if prop is not None else ""
            if prop is None or prop.type != "property_identifier" or name.startswith("_") or name in REFUSED:
                raise _Refused(f"the property {name!r}")
            obj = n.child_by_field_name("object")
            if (obj is not None and obj.type == "identifier" and self.text(obj) in GLOBALS
                    and name not in GLOBALS[self.text(obj)]):
                raise _Refused(f"{self.text(obj)}.{name} is not on the list")
        elif t == "subscript_expression":
            index = n.child_by_field_name("index")
            if index is None or not (index.type == "number" or self.safe_string(index)):
                raise _Refused("a computed subscript")
        elif t == "call_expression":
            self.call(n)
        elif t == "pair":
            key = n.child_by_field_name("key")
            if key is None or key.type not in ("property_identifier", "string", "number"):
                raise _Refused("a computed object key")
        elif t == "unary_expression":
            op = n.child_by_field_name("operator")
            if op is not None and self.text(op) == "delete":
                raise _Refused("delete")

    def identifier(self, n: Node) -> None:
        name = self.text(n)
        parent = n.parent
        if name in self.locals or name in CONSTANTS:
            if name in self.fs and not self.fs_member(parent, n):
                raise _Refused("require('fs') used other than for readFileSync of a literal path")
            return
        if name == "require":
            if not (parent is not None and parent.type == "call_expression"
                    and parent.child_by_field_name("function") == n):
                raise _Refused("require used as a value")
            return
        members = GLOBALS.get(name)
        if members is None:
            raise _Refused(f"the name {name!r} is not on the list")
        if parent is not None and parent.type == "member_expression" and parent.child_by_field_name("object") == n:
            return  # its member is checked by the member_expression
        if "" in members and parent is not None and parent.type == "call_expression" \
                and parent.child_by_field_name("function") == n:
            return
        raise _Refused(f"the global {name!r} used as a value")

    def call(self, n: Node) -> None:
        f = n.child_by_field_name("function")
        args = n.child_by_field_name("arguments")
        if f is None or args is None or args.type != "arguments":
            raise _Refused("a tagged template or a call this reader does not follow")
        if f.type == "identifier" and self.text(f) == "require":
            if self.is_require_fs(n):
                if not self.fs_member(n.parent, n):
                    raise _Refused("require('fs') used other than for readFileSync of a literal path")
                return
            raise _Refused("require of a module or file (node resolves a name to many files: x.json.js, "
                           "x.json/package.json; only require('fs') is proven)")
        if f.type == "member_expression":
            obj = f.child_by_field_name("object")
            prop = f.child_by_field_name("property")
            name = self.text(prop) if prop is not None else ""
            if obj is not None and (self.is_require_fs(obj)
                                    or (obj.type == "identifier" and self.text(obj) in self.fs)):
                path = self.literal_arg(args, 0)
                rest = [a for a in args.named_children if a.type != "comment"][1:]
                if name not in _READERS or path is None or len(rest) > 1 or (
                        rest and self.literal(rest[0]) not in _ENCODINGS):
                    raise _Refused("fs used other than for readFileSync(LITERAL[, 'utf8'])")
                if unending(path):
                    raise _Refused(f"a read of {path!r}: a device or kernel file may never end")
                self.reads.append(path)
                return
            if obj is not None and obj.type == "identifier" and self.text(obj) in GLOBALS:
                return  # the member_expression checks the global's member
            if name not in METHODS:
                raise _Refused(f"the method {name!r} is not on the list")
            return
        if f.type == "identifier":
            if self.text(f) in self.locals or self.text(f) in GLOBALS:
                return  # String(x), parseInt(x)... (a local is never a function: no functions)
            raise _Refused(f"the name {self.text(f)!r} is not on the list")
        raise _Refused(f"a call of {f.type}")

    def is_require_fs(self, n: Node) -> bool:
        if n.type != "call_expression":
            return False
        f = n.child_by_field_name("function")
        args = n.child_by_field_name("arguments")
        return (f is not None and f.type == "identifier" and self.text(f) == "require"
                and args is not None and self.literal_arg(args, 0) in _FS)

    def fs_member(self, parent: Node | None, n: Node) -> bool:
        """``n`` (require('fs') or a local bound to it) is the object of a readFileSync call,
        or the value of its own declaration."""
        if parent is None:
            return False
        if parent.type == "variable_declarator":  # const fs = require('fs'): name or value
            return n in (parent.child_by_field_name("name"), parent.child_by_field_name("value"))
        if parent.type != "member_expression":
            return False
        prop = parent.child_by_field_name("property")
        call = parent.parent
        return (prop is not None and self.text(prop) in _READERS and call is not None
                and call.type == "call_expression" and call.child_by_field_name("function") == parent)

    def literal_arg(self, args: Node, i: int) -> str | None:
        kids = [a for a in args.named_children if a.type != "comment"]
        return self.literal(kids[i]) if len(kids) > i else None

    def literal(self, n: Node) -> str | None:
        """The value of a string literal without escapes, else None."""
        if n.type != "string" or any(k.type != "string_fragment" for k in n.named_children):
            return None
        return self.text(n)[1:-1]

    def safe_string(self, n: Node) -> bool:
        value = self.literal(n)
        return value is not None and bool(_SAFE_KEY.fullmatch(value)) and not value.startswith("_") \
            and value not in REFUSED


def _nodes(root: Node) -> list[Node]:
    out: list[Node] = []
    stack = [root]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(reversed(n.children))
    return out

