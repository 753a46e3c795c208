"""The daemon's parse worker: CEL parsed in a child process, so cel-python never loads into
the daemon.

``policyd serve`` runs for weeks; cel-python's modules, its Lark parser (~5 MB) and the heap
a parse leaves behind stay in a process that parsed once (a first start of a 1,000-rule set
ended ~10 MB above a start from the tree cache, issue 12). So the daemon builds a set with
parsing deferred (:func:`policyd.core.cel.deferred_parsing`): every CEL text with no cached
tree is collected, :func:`parse_in_child` has this module parse them in a child (the same
interpreter and ``sys.path`` but for the working directory, isolated mode) with cel-python
exactly as the daemon would, and the daemon preloads the trees and syntax errors that come
back and builds again: compiling, checking and the inline examples stay in the daemon (a
tree is compiled the same wherever it came from: :func:`policyd.core.cel.parse`). The
trees are data (JSON cannot run code) from this very code; a tree that does not decode is
parsed again in the daemon, and a worker that fails in any way (a crash, a time-out,
output that is not the protocol) means the daemon parses itself: never a different policy,
only more memory.

Protocol: stdin ``{"sources": [CEL text, ...], "fingerprint": the daemon's
:func:`policyd.celcache.code_fingerprint`}``; stdout ``{"trees": {text: tree JSON
text}, "errors": {text: [message, line, column]}}`` (trees as :mod:`policyd.core.celc.trees`
data in compact JSON text, as the on-disk cache keeps them; errors as
:class:`policyd.core.cel.CelCompileError` has them); exit 0 (3, nothing written, when the
worker's code is not the daemon's). Run as ``python -I -c ...`` by
:func:`parse_in_child`, never by hand.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

#: Seconds the daemon waits for the worker before parsing in-process instead.
TIMEOUT_S = 120.0

_BOOT = "import json, sys; sys.path[:] = json.loads(sys.argv[1]); from policyd.treeworker import main; main()"


@dataclass
class Parsed:
    """What the worker sent back: ``trees`` (text -> tree JSON text) and ``errors`` (text ->
    (message, line, column)); both empty when it failed."""

    trees: dict[str, str] = field(default_factory=dict)
    errors: dict[str, tuple[str, int, int]] = field(default_factory=dict)


def main() -> None:
    """The worker's side: parse every text read from stdin, write trees and errors. Exits 3,
    writing nothing, when this code is not the daemon's (policyd upgraded in place while
    the daemon runs: its trees would be another code's)."""
    from policyd import celcache
    from policyd.core import cel

    request = json.load(sys.stdin)
    if request["fingerprint"] != celcache.code_fingerprint():
        sys.exit(3)
    errors: dict[str, list[object]] = {}
    for source in request["sources"]:
        try:
            cel.parse(str(source))
        except cel.CelCompileError as exc:
            errors[str(source)] = [exc.message, exc.line, exc.column]
        except Exception:  # neither tree nor error: the daemon parses this text itself
            continue
    trees = {k: v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))
             for k, v in cel.parsed_trees().items()}
    json.dump({"trees": trees, "errors": errors}, sys.stdout, separators=(",", ":"))


def _child_path() -> list[str]:
    """The worker's ``sys.path``: this process's, with the directory policyd was imported
    from first and the working directory left out (``python -m policyd serve`` puts it
    first; what appears there after start must not run in the worker)."""
    import policyd

    home = os.path.dirname(os.path.dirname(os.path.abspath(policyd.__file__ or "")))
    cwd = os.getcwd()
    return [home, *(p for p in sys.path if p and os.path.abspath(p) not in (cwd, home))]


def parse_in_child(sources: Sequence[str]) -> Parsed:
    """The parse trees and syntax errors of the CEL texts ``sources``, parsed by a child
    process running :func:`main`. Empty when the worker fails in any way (the caller then
    parses in-process); never raises but for KeyboardInterrupt."""
    import subprocess  # ~13 ms of imports: only a daemon's load of new rules pays it

    from policyd import celcache

    data = json.dumps({"sources": list(sources), "fingerprint": celcache.code_fingerprint()})
    try:
        done = subprocess.run([sys.executable, "-I", "-c", _BOOT, json.dumps(_child_path())], input=data.encode(),
                              capture_output=True, timeout=TIMEOUT_S, check=False)
        if done.returncode != 0:
            return Parsed()
        reply = json.loads(done.stdout)
        trees, errors = reply["trees"], reply["errors"]
        if not isinstance(trees, dict) or not isinstance(errors, dict):
            return Parsed()
        return Parsed(
            {k: v for k, v in trees.items() if isinstance(k, str) and isinstance(v, str)},
            {k: (v[0], v[1], v[2]) for k, v in errors.items()
             if isinstance(k, str) and isinstance(v, list) and len(v) == 3 and isinstance(v[0], str)
             and all(isinstance(n, int) and not isinstance(n, bool) for n in v[1:])},
        )
    except (OSError, ValueError, KeyError, TypeError, subprocess.SubprocessError):
        return Parsed()
