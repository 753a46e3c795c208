"""Targets named indirectly (docs/catalogue.md "Unknown sources") through the real
``policyd eval`` with the shipped baseline + ci policies: response files, list files,
file-name filters, remote archives, package runners, shell state, hard and symbolic links,
root aliases, relocated git directories — each class with unsafe variants and benign
near-misses (``tests/cases/indirect.jsonl``), and the same classes of the shared round-3
red-team sample."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import test_cases as shared
from tests.test_cases import _load, _report, run_cases

case_root = shared.case_root  # the fixture: a scratch tree outside /tmp

OWN = Path(__file__).resolve().parent / "cases" / "indirect.jsonl"
REDTEAM3 = Path(__file__).resolve().parent.parent.parent / "shared" / "cases" / "redteam3-public.jsonl"
#: The round-3 classes this file's variants stand for.
CLASSES = frozenset({
    "filter-named-secrets", "planted-symlink-traversal", "response-file-indirection",
    "list-file-indirection", "tar-remote-archive", "npx-registry-fetch", "hash-p-hijack",
    "hardlink-alias", "symlink-out-creation", "root-alias-dir-write", "git-dir-relocation",
})


def test_indirect_variants(case_root: Path) -> None:
    """Every variant is decided as expected: the unsafe ones never allowed, the benign allowed."""
    cases = _load(OWN)
    assert 150 <= len(cases)
    assert {c["category"] for c in cases} >= CLASSES
    assert [] == _report(run_cases(cases, case_root), "tests/cases/indirect.jsonl")


@pytest.mark.skipif(not REDTEAM3.exists(), reason=f"{REDTEAM3} not present")
def test_redteam3_indirect_classes(case_root: Path) -> None:
    """The shared round-3 sample of these classes, benign near-misses included."""
    cases = [c for c in _load(REDTEAM3) if c.get("category") in CLASSES]
    assert 40 <= len(cases)
    assert [] == _report(run_cases(cases, case_root), "redteam3-public.jsonl (indirect classes)")
