"""The daemon's parse worker (policyd/treeworker.py): ``policyd serve`` parses CEL in a child
process, so cel-python never loads into the daemon; the trees it gets back are the very
trees an in-process parse gives, errors are reported as before, and a worker that fails
means an in-process parse, never a different policy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from policyd import loader, treeworker
from policyd.core import cel
from policyd.core.policy import PolicyError

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "policies"

#: Loads the policy at argv[1] as ``policyd serve`` does (PARSE_IN_CHILD), prints JSON facts.
PROBE = """
import json, sys
from policyd import loader, logs
from policyd.core.policy import PolicyError
logs.configure()  # JSON lines on stderr
loader.PARSE_IN_CHILD = True
try:
    out = {"rules": sorted(r.id for r in loader.load([sys.argv[1]], []).policy.rules)}
except PolicyError as exc:
    out = {"errors": [str(e) for e in exc.errors]}
out["celpy"] = sorted(m for m in sys.modules if m == "celpy" or m.startswith("celpy."))
print(json.dumps(out))
"""


def probe(policy: Path, cache: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The probe's facts and its ``policy.parsed_in_worker`` log events."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    done = subprocess.run([sys.executable, "-c", PROBE, str(policy)], env=env, capture_output=True, text=True,
                          check=True, timeout=120)
    events = []
    for line in done.stderr.splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if isinstance(e, dict) and e.get("event") == "policy.parsed_in_worker":
            events.append(e)
    return json.loads(done.stdout), events


def shipped_sources() -> list[tuple[str, str]]:
    return [(str(p), p.read_text()) for p in sorted(SHIPPED.glob("*.toml"))]


def forget_parses() -> None:
    """This process as if it had parsed, compiled and checked no CEL yet."""
    cel.compile_expr.cache_clear()
    cel._CHECKED.clear()
    cel.release_trees()


def in_process_trees(sources: list[tuple[str, str]]) -> dict[str, Any]:
    """Every tree an in-process build of ``sources`` parses (nothing cached), decoded."""
    forget_parses()
    loader.build_set(sources, check_examples=False)
    trees = cel.parsed_trees()
    cel.release_trees()
    return {k: json.loads(v) if isinstance(v, str) else v for k, v in trees.items()}


def test_worker_trees_and_errors_are_the_in_process_ones() -> None:
    """Every CEL text of the shipped set (rules, mode rules) comes back from the worker with
    exactly the tree cel-python gives in this process; a text that does not parse comes
    back with exactly the error (message, line, column) it raises here."""
    want = in_process_trees(shipped_sources())
    bad = ["tool.kind == && true", "", "(" * 50 + "1" + ")" * 50, "tool.paths.exists(p, p.startsWith('/'"]
    parsed = treeworker.parse_in_child([*want, *bad])
    assert len(want) >= 15
    assert want == {k: json.loads(v) for k, v in parsed.trees.items()}
    errors = {}
    for text in bad:
        with pytest.raises(cel.CelCompileError) as exc:
            cel.parse(text)
        errors[text] = (exc.value.message, exc.value.line, exc.value.column)
    assert errors == parsed.errors


def test_daemon_load_parses_in_the_worker_and_never_imports_cel_python(tmp_path: Path) -> None:
    """A first load (empty cache) parses in the worker: the same rules load, cel-python is
    not imported, the trees are cached; the next load reads the cache (no worker)."""
    plain = subprocess.run(
        [sys.executable, "-c", "import sys; from policyd import loader; "
         "print(len(loader.load([sys.argv[1]], []).policy.rules))", str(SHIPPED)],
        env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "other")}, capture_output=True, text=True, check=True)
    first, events = probe(SHIPPED, tmp_path / "cache")
    assert [] == first["celpy"]
    assert int(plain.stdout) == len(first["rules"]) > 10
    assert 1 == len(events) and events[0]["asked"] == events[0]["trees"] >= len(first["rules"])
    (cache,) = (tmp_path / "cache" / "policyd" / "parsed").glob("*.json")
    second, events = probe(SHIPPED, tmp_path / "cache")
    assert (first, []) == (second, events)
    # A partial cache (a proxy that had compiled some rules before saves only the rest):
    # the worker parses exactly what is missing, and the cache is complete again.
    trees = json.loads(cache.read_text())
    dropped = sorted(trees)[:3]
    cache.write_text(json.dumps({k: v for k, v in trees.items() if k not in dropped}))
    third, events = probe(SHIPPED, tmp_path / "cache")
    assert first == third
    assert [(3, 3)] == [(e["asked"], e["trees"]) for e in events]
    assert trees == json.loads(cache.read_text())


def test_rule_that_does_not_parse_reports_cel_python_error_as_in_process(tmp_path: Path) -> None:
    """The worker cannot parse a broken rule: the load reports exactly the error an
    in-process load reports (cel-python's message and position), parsing it in-process."""
    bad = tmp_path / "bad.toml"
    bad.write_text('[policy]\nname = "b"\n\n[[rule]]\nid = "ok"\nkinds = ["read"]\nwhen = \'true\'\n'
                   'decision = "allow"\nreason = "r"\n\n[[rule]]\nid = "broken"\nkinds = ["read"]\n'
                   'when = \'tool.kind == && true\'\ndecision = "deny"\nreason = "r"\n')
    with pytest.raises(PolicyError) as in_process:
        loader.build_set([(str(bad), bad.read_text())])
    out, events = probe(bad, tmp_path / "cache")
    assert [str(e) for e in in_process.value.errors] == out["errors"]
    assert "broken" in out["errors"][0]
    assert [] == out["celpy"]  # the error came from the worker
    assert [(2, 1, 1)] == [(e["asked"], e["trees"], e["errors"]) for e in events]


def test_failed_worker_means_an_in_process_parse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that exits non-zero, prints garbage or prints the wrong shape gives no trees
    (the caller parses itself); the set then loads in-process, the same rules."""
    sources = shipped_sources()
    for boot in ("raise SystemExit(3)", "print('not json')", "print('{\"trees\": [1], \"errors\": {}}')",
                 "print('{\"trees\": {\"x\": 1}, \"errors\": {\"y\": [1, 2, 3]}}')", "import time; time.sleep(9)"):
        monkeypatch.setattr(treeworker, "_BOOT", boot)
        monkeypatch.setattr(treeworker, "TIMEOUT_S", 3.0)
        assert treeworker.Parsed() == treeworker.parse_in_child(["true", "1 +"])
    forget_parses()
    monkeypatch.setattr(loader, "PARSE_IN_CHILD", True)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    loaded = loader.build_checked(sources)
    assert [r.id for r in loaded.rules] == [r.id for r in loader.build_set(sources).rules]


def build_both(sources: list[tuple[str, str]], monkeypatch: pytest.MonkeyPatch, cache: Path) -> list[str]:
    """What a build of ``sources`` gives with the parse worker and without (rule ids, or the
    error messages), each from empty parse caches."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    out = []
    for on in (True, False):
        forget_parses()
        monkeypatch.setattr(loader, "PARSE_IN_CHILD", on)
        try:
            out.append(" ".join(r.id for r in loader.build_checked(sources).rules))
        except PolicyError as exc:
            out.append("\n".join(str(e) for e in exc.errors))
        for f in (cache / "policyd" / "parsed").glob("*.json"):
            f.unlink()
    return out


def rule(rule_id: str, when: str) -> str:
    return (f'\n[[rule]]\nid = "{rule_id}"\nkinds = ["read"]\nwhen = {json.dumps(when)}\n'
            'decision = "deny"\nreason = "r"\n')


@pytest.mark.parametrize("when", [
    "", "  ", "'\\U00110000' == ''", "'\\U80000000' == ''", "1" * 5000 + " > 0",
    "!" * 199 + "false", "!" * 220 + "false",
    " || ".join(f"tool.title == 't{i}'" for i in range(600)), "tool" + ".a" * 250 + " == 1",
    "1 +", "tool.kind == 'read' && tool.nmae == 'x'", "tool.kind == 'réad'",
])
def test_odd_rules_load_or_fail_alike_with_and_without_the_worker(
        when: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Empty texts, undecodable escapes, huge literals, chains far deeper than the parser
    nests, syntax and schema errors: the same rules or the same errors either way, never
    an exception other than PolicyError (one once escaped the deferred build and killed the
    daemon's watch). An empty ``when`` is an error (it once dropped the rule silently)."""
    sources = [("/etc/p.toml", '[policy]\nname = "p"\n' + rule("ok", "true") + rule("odd", when))]
    with_worker, without = build_both(sources, monkeypatch, tmp_path)
    assert with_worker == without
    assert "odd" in without  # a load error naming the rule, or the rule loaded
    if not when.strip():
        assert "rule 'odd'" in without


def test_text_compiled_before_but_not_checked_is_deferred_not_leaked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A text the compile cache holds (a [modes] rule compiled it, or the check cache was
    cleared) is parsed again for the facts check: with the worker that parse is deferred
    like any other, and the set loads (it once escaped as ParseDeferred)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(loader, "PARSE_IN_CHILD", True)
    text = "tool.kind == 'read' && tool.title.startsWith('x')"
    cel.compile_expr(text)
    cel.release_trees()
    cel._CHECKED.clear()
    loaded = loader.build_checked([("/etc/q.toml", '[policy]\nname = "q"\n' + rule("late", text))])
    assert ["late"] == [r.id for r in loaded.rules]


def test_worker_does_not_import_from_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``python -m policyd serve`` puts its working directory first on sys.path: a package
    named ``policyd`` (or ``celpy``) planted there after start does not run in the worker."""
    marker = tmp_path / "ran"
    for name in ("policyd", "celpy", "lark"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f"open({str(marker)!r}, 'a').write({name!r})\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    parsed = treeworker.parse_in_child(["tool.kind == 'read'"])
    assert ["tool.kind == 'read'"] == list(parsed.trees)
    assert not marker.exists()


def test_worker_of_other_code_sends_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker whose policyd is not the daemon's (upgraded in place while the daemon runs)
    exits without trees: the daemon parses itself rather than compile another code's trees."""
    from policyd import celcache

    assert treeworker.parse_in_child(["true"]).trees  # the same code: trees come back
    monkeypatch.setattr(celcache, "_FINGERPRINT", "the daemon's code before an upgrade")
    assert treeworker.Parsed() == treeworker.parse_in_child(["true"])
