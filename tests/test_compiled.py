"""The compiled build (setup.py: ``POLICYD_COMPILE=1 pip install .``, mypyc) decides exactly
as the pure-Python package: it is built for real into a temporary directory (~2 minutes),
and a process that imports it reports, per case of the shared public and red-team files
and this project's variants, the decision, its rule matches and errors and every ``tool.*``
fact; the analysis of 3,000 generated shell texts; the real path of 600 generated paths
through links, loops and missing names. Each must equal what this process
(pure Python) computes.

A difference here is a mypyc departure from Python semantics (one was seen while building
this: compiled, ``policyd.core.facts``'s cached properties stopped caching; it is not
compiled), so the compiled module list in setup.py must keep this test green.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from policyd.core import cases as case_lib
from policyd.core.decide import decide
from policyd.core.facts import Facts
from policyd.core.policy import build_set
from policyd.core.shell import analyze
from policyd.realpaths import Resolver

#: The build (mypyc, 1 to 2 minutes on an idle 2-core machine) runs in the first test's fixture:
#: pytest-timeout's 300 s default is too short on a loaded machine (seen: >300 s at load 8).
pytestmark = pytest.mark.timeout(1500)

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "cases"
CASE_FILES = (SHARED / "public.jsonl", SHARED / "redteam-public.jsonl", ROOT / "tests" / "cases" / "variants.jsonl")
SEED = 20261203
#: Shell words the generated texts are mostly made of: words, quotes, expansions, operators,
#: redirects, wrappers and nested shells (what the walker and the catalogue branch on).
WORDS = ("git", "status", "push", "--force", "-C", "src", "rm", "-rf", "~/x", "/tmp/a b", "'q w'", '"$HOME/y"',
         "$(cat f)", "`id`", "*.py", "{a,b}", "&&", "||", ";", "|", ">", ">>", "2>&1", "<", "<<<", "x=1", "sudo",
         "env", "-S", "bash", "-c", "'rm -rf /'", "xargs", "find", ".", "-exec", "{}", "\\;", "cd", "..", "echo",
         "$'\\x41'", "curl", "http://h/p", "sh", "tee", "-a", "python3", "-m", "pip", "install")
#: Rarer: most texts built with these do not parse (they still must be judged alike).
SYNTAX = ("(", ")", "{", "}", "for", "f", "in", "do", "done", "\n", "#c")


def _compiled_modules() -> list[str]:
    """setup.py's COMPILED paths as module names."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "COMPILED" for t in node.targets):
            paths = ast.literal_eval(node.value)
            return [p.removesuffix(".py").replace("/", ".") for p in paths]
    raise AssertionError("setup.py defines no COMPILED")


def shell_texts(n: int = 3000) -> list[str]:
    rng = random.Random(SEED)
    return [" ".join(rng.choice(SYNTAX if rng.random() < 0.05 else WORDS) for _ in range(rng.randint(1, 12)))
            for _ in range(n)]


#: Components of the generated paths resolved under the test's tree (see :func:`make_tree`).
COMPONENTS = ("a", "b", "c", "d", "loop1", "abs", "f", "..", ".", "x", "new", "")


def make_tree(root: Path) -> None:
    """A directory, links to it (absolute, relative, through ``..``), a dangling link, a loop
    and a link out of the tree: what ``Resolver`` branches on."""
    (root / "a").mkdir()
    (root / "a" / "f").write_text("")
    (root / "b").symlink_to(root / "a")
    (root / "c").symlink_to("x/../a")
    (root / "x").mkdir()
    (root / "d").symlink_to("nowhere")
    (root / "loop1").symlink_to("loop2")
    (root / "loop2").symlink_to("loop1")
    (root / "abs").symlink_to("/etc")


def tree_paths(root: str, n: int = 600) -> list[str]:
    rng = random.Random(SEED)
    return [root + "/" + "/".join(rng.choice(COMPONENTS) for _ in range(rng.randint(1, 5))) for _ in range(n)]


def report(tree: str) -> dict[str, Any]:
    """What the importing policyd computes: per case its verdict and facts, per generated
    text its analysis (every field, sets sorted: string hashes differ between processes),
    per generated path under ``tree`` its real path (a Resolver per 10 paths: its memo)."""
    shipped = build_set([(str(p), p.read_text()) for p in sorted((ROOT / "policies").glob("*.toml"))])
    out: dict[str, Any] = {"cases": {}, "shell": [_canonical(analyze(t)) for t in shell_texts()], "paths": []}
    paths = tree_paths(tree)
    for i in range(0, len(paths), 10):
        resolver = Resolver()
        out["paths"].extend(resolver(p) for p in paths[i : i + 10])
    for path in CASE_FILES:
        for line in path.read_text().splitlines() if path.exists() else ():
            if not line.strip():
                continue
            case = json.loads(line)
            query = case_lib.case_query(case)
            facts = Facts(query, realpath=case_lib.virtual_realpath(case_lib.symlinks(case)),
                          catalogue=shipped.catalogue)
            verdict = decide(shipped, facts)
            tool = facts.activation()["tool"]  # every field, not only those the rules need
            out["cases"][f"{path.name}:{case['id']}"] = json.dumps(
                {"decision": verdict.decision.value, "matches": [[m.rule_id, m.decision.value, m.error]
                                                                 for m in verdict.matches],
                 "errors": list(verdict.errors), "tool": tool}, sort_keys=True, default=repr)
    return out


def _canonical(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, frozenset | set):
        return sorted(_canonical(v) for v in value)
    if isinstance(value, tuple | list):
        return [_canonical(v) for v in value]
    return value


@pytest.fixture(scope="module")
def compiled_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("compiled")
    site = base / "site"
    # a copy of the sources: pip builds in the tree (setup.py then clears its build/, where
    # a stale extension was once reused), and the checkout's own build/ is left alone
    source = base / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", "build", ".venv", "node_modules", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis"))
    build = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                            "--target", str(site), str(source)], env={**os.environ, "POLICYD_COMPILE": "1"},
                           capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, build.stderr[-3000:]
    return site


def _in_compiled(site: Path, code: str) -> str:
    """Run ``code`` where ``import policyd`` finds the compiled build (not the source tree:
    the working directory is the build's own)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT / "tests")])}
    done = subprocess.run([sys.executable, "-c", code], cwd=site, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_build_loads_every_listed_module_compiled(compiled_site: Path) -> None:
    modules = _compiled_modules()
    assert len(modules) >= 10
    files = json.loads(_in_compiled(compiled_site, "import importlib, json, sys; "
                                    f"print(json.dumps([importlib.import_module(m).__file__ for m in {modules!r}]))"))
    for module, file in zip(modules, files, strict=True):
        assert file.startswith(str(compiled_site)) and file.endswith(".so"), (module, file)


def test_the_build_decides_analyses_and_resolves_as_pure_python(compiled_site: Path, tmp_path: Path) -> None:
    make_tree(tmp_path)
    code = f"import json, test_compiled; print(json.dumps(test_compiled.report({str(tmp_path)!r})))"
    theirs = json.loads(_in_compiled(compiled_site, code))
    mine = report(str(tmp_path))
    assert mine["paths"] == theirs["paths"] and len(set(mine["paths"])) > 100
    assert len(mine["cases"]) > 1000 and len(mine["shell"]) == 3000
    differ = [k for k in mine["cases"] if theirs["cases"].get(k) != mine["cases"][k]]
    if differ:
        first = differ[0]
        pytest.fail(f"{len(differ)} cases differ, first {first}: {theirs['cases'].get(first)} != "
                    f"{mine['cases'][first]}")
    assert theirs["cases"].keys() == mine["cases"].keys()
    texts = shell_texts()
    bad = [i for i, (a, b) in enumerate(zip(theirs["shell"], mine["shell"], strict=True)) if a != b]
    if bad:
        i = bad[0]
        pytest.fail(f"{len(bad)} analyses differ, first of {texts[i]!r}: {theirs['shell'][i]} != {mine['shell'][i]}")
