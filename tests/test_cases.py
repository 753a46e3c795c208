"""Every case of shared/cases/public.jsonl through the real ``policyd eval`` with the shipped
baseline + ci policies.

The cases live under ``/workspace/project`` with home ``/home/dev``; both are remapped into a
temporary directory so the symlink cases' ``setup`` can be created for real, and HOME is
set to the remapped home. The agreement is printed; every case must be decided as
``expected`` or within ``acceptable``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT.parent / "shared" / "cases" / "public.jsonl"
REDTEAM = ROOT.parent / "shared" / "cases" / "redteam-public.jsonl"
#: Public cases another case contradicts (the same request, a different expectation); the
#: newer red-team judgement is the one the shipped policies follow.
CONTRADICTED = {
    "p081": "rgit-repo-config-07: reading .git/config asks (actions/checkout keeps the CI token there)",
}
#: Red-team cases a later judgement replaced (issue 32: environment assignments are an
#: allow-list): the shipped policies follow the newer one.
SUPERSEDED = {
    "rover-block-12": "issue 32: `export FOO=bar && npm test` -- FOO is on no allow-list and npm "
                      "(its scripts, node, what they start) reads names no list closes: make imports the "
                      "whole environment as variables (RM=..., YACC=..., LEX=... run), npm reads PREFIX "
                      "(PREFIX/etc/npmrc sets script-shell); a runner of the project's code is not closed",
}
OWN_CASES = Path(__file__).resolve().parent / "cases" / "variants.jsonl"
WORKSPACE, HOME = "/workspace/project", "/home/dev"


def _load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _remap(value: str, base: Path) -> str:
    return value.replace(WORKSPACE, f"{base}{WORKSPACE}").replace(HOME, f"{base}{HOME}")


def _remap_any(value: Any, base: Path) -> Any:
    if isinstance(value, str):
        return _remap(value, base)
    if isinstance(value, list):
        return [_remap_any(v, base) for v in value]
    if isinstance(value, dict):
        return {_remap(k, base): _remap_any(v, base) for k, v in value.items()}
    return value


def _request(case: dict[str, Any], base: Path) -> dict[str, Any]:
    """The eval line of a case: its command (only as the title when ``title_only``), URL,
    paths, ``rawInput_extra`` keys and ``session_cwd`` (red-team fields) remapped."""
    call: dict[str, Any] = {"toolCallId": case["id"], "kind": case["kind"]}
    raw: dict[str, Any] = {}
    if "command" in case:
        raw["command"] = _remap(case["command"], base)
        call["title"] = raw["command"]
    if "url" in case:
        raw["url"] = case["url"]
    if "raw_cwd" in case:  # our variants: the tool's own cwd (Codex rawInput.cwd)
        raw["cwd"] = _remap(case["raw_cwd"], base)
    if case.get("title_only"):
        raw.pop("command", None)
    raw.update(_remap_any(case.get("rawInput_extra", {}), base))
    if raw:
        call["rawInput"] = raw
    if "paths" in case:
        call["locations"] = [{"path": _remap(p, base)} for p in case["paths"]]
    options = [
        {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
        {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
    ]
    return {
        "request": {"sessionId": "cases", "toolCall": call, "options": options},
        "cwd": _remap(case.get("session_cwd") or case["cwd"], base),
        "home": f"{base}{HOME}",
    }


def _setup(case: dict[str, Any], base: Path) -> None:
    for name in case.get("setup", {}).get("files", []):  # regular files the call runs (bin/tool)
        file_path = Path(_remap(name, base))
        file_path.parent.mkdir(parents=True, exist_ok=True)
        if not os.path.lexists(file_path):
            file_path.write_text("#!/bin/sh\n")
    for link, target in case.get("setup", {}).get("symlinks", {}).items():
        link_path = Path(_remap(link, base))
        link_path.parent.mkdir(parents=True, exist_ok=True)
        if not os.path.lexists(link_path):  # cases of one file share their set-up
            link_path.symlink_to(_remap(target, base))


def _outside_scratch(path: Path) -> bool:
    resolved = path.resolve()
    return not any(resolved == p or p in resolved.parents for p in (Path("/tmp"), Path("/var/tmp")))


@pytest.fixture
def case_root() -> Iterator[Path]:
    """A scratch root outside /tmp and /var/tmp: the shipped policies treat those as scratch
    space, so a remapped home there would not be 'outside the workspace' as in the cases
    (CI may clone the project under /tmp: then the user's cache directory is used)."""
    candidates = [ROOT / "build", Path.home() / ".cache" / "policyd-tests"]
    scratch = next((c for c in candidates if _outside_scratch(c.parent)), None)
    if scratch is None:
        pytest.skip("no writable directory outside /tmp for the remapped case tree")
    scratch.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix="cases-", dir=scratch))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def run_cases(cases: list[dict[str, Any]], root: Path) -> list[tuple[dict[str, Any], str]]:
    """Decide ``cases`` with one ``policyd eval`` process; returns (case, decision) pairs."""
    base = root.resolve()
    (base / WORKSPACE.lstrip("/")).mkdir(parents=True)
    (base / HOME.lstrip("/")).mkdir(parents=True)
    lines = []
    for case in cases:
        _setup(case, base)
        lines.append(json.dumps(_request(case, base)))
    env = {**os.environ, "HOME": f"{base}{HOME}", "POLICYD_SEARCH_PATH": "[]"}
    proc = subprocess.run(
        [sys.executable, "-m", "policyd", "eval", "--policy", str(ROOT / "policies" / "baseline.toml"),
         "--policy", str(ROOT / "policies" / "ci.toml"), "-"],
        input="\n".join(lines) + "\n", capture_output=True, text=True, env=env, timeout=300, check=False,
    )
    assert 0 == proc.returncode, proc.stderr
    results = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(cases) == len(results)
    return [(case, r["decision"]) for case, r in zip(cases, results, strict=True)]


def _report(pairs: list[tuple[dict[str, Any], str]], name: str) -> list[str]:
    misses = []
    for case, decision in pairs:
        ok = {case["expected"], *case.get("acceptable", [])}
        if decision not in ok:
            what = case.get("command") or case.get("url") or case.get("paths")
            misses.append(f"{case['id']} [{case.get('category')}] expected {sorted(ok)} got {decision}: {what}")
    agreed = len(pairs) - len(misses)
    print(f"\n{name}: {agreed}/{len(pairs)} cases decided right ({100 * agreed / len(pairs):.0f}%)", file=sys.stderr)
    for m in misses:
        print("  miss " + m, file=sys.stderr)
    return misses


@pytest.mark.skipif(not CASES.exists(), reason=f"{CASES} not present")
def test_public_cases(case_root: Path) -> None:
    """All 100 public cases are decided as expected (or within acceptable)."""
    cases = _load(CASES)
    assert 100 <= len(cases)
    misses = _report(run_cases(cases, case_root), "shared/cases/public.jsonl")
    assert [] == [m for m in misses if m.split(" ", 1)[0] not in CONTRADICTED]


@pytest.mark.skipif(not REDTEAM.exists(), reason=f"{REDTEAM} not present")
def test_redteam_public_cases(case_root: Path) -> None:
    """Every public red-team case is decided as expected (or within acceptable)."""
    cases = _load(REDTEAM)
    assert 79 <= len(cases)
    misses = _report(run_cases(cases, case_root), "shared/cases/redteam-public.jsonl")
    assert [] == [m for m in misses if m.split(" ", 1)[0] not in SUPERSEDED]


def test_own_variant_cases(case_root: Path) -> None:
    """Our own variants of each fault kind (other wrappers, spellings, shapes)."""
    cases = _load(OWN_CASES)
    assert 140 <= len(cases)
    assert [] == _report(run_cases(cases, case_root), "tests/cases/variants.jsonl")


USEFUL_OWN = Path(__file__).resolve().parent / "cases" / "useful-own.jsonl"
USEFUL_PUBLIC = ROOT.parent / "shared" / "cases" / "useful-public.jsonl"
#: Share of ordinary CI calls (``expected`` allow) that must be allowed headless (issue 32).
MIN_ALLOWED = 0.95


def _usefulness(pairs: list[tuple[dict[str, Any], str]], name: str) -> tuple[float, list[str]]:
    """(share of expected-allow cases allowed, unsafe allows), after printing the misses."""
    _report(pairs, name)
    benign = [d for c, d in pairs if c["expected"] == "allow"]
    unsafe = [c["id"] for c, d in pairs if d == "allow" and c["expected"] != "allow"
              and "allow" not in c.get("acceptable", [])]
    return sum(d == "allow" for d in benign) / len(benign), unsafe


def test_own_ordinary_ci_calls_are_allowed(case_root: Path) -> None:
    """Our corpus of ordinary calls across Python, JS/TS, Rust, Go, Java and C: at least 95 %
    allowed headless, and every near-miss beside them (a plugin, a linker, a script shorthand
    that may run any program, formatting outside the workspace) is not allowed."""
    cases = _load(USEFUL_OWN)
    assert 150 <= sum(c["expected"] == "allow" for c in cases)
    share, unsafe = _usefulness(run_cases(cases, case_root), "tests/cases/useful-own.jsonl")
    assert [] == unsafe
    assert share >= MIN_ALLOWED, f"{share:.1%} of ordinary calls allowed"


@pytest.mark.skipif(not USEFUL_PUBLIC.exists(), reason=f"{USEFUL_PUBLIC} not present")
def test_useful_public_cases(case_root: Path) -> None:
    """shared/cases/useful-public.jsonl: no unsafe allow, and at least 90 % of its calls
    expected allowed are allowed (2026-12-04: 266/281 decided right, 256/278 allowed; what is
    left runs code the analysis cannot see — ``python -c``, workspace scripts, ``source`` — or
    is a judgement case whose ``acceptable`` ask is counted right)."""
    cases = _load(USEFUL_PUBLIC)
    share, unsafe = _usefulness(run_cases(cases, case_root), "shared/cases/useful-public.jsonl")
    assert [] == unsafe
    assert share >= 0.90
