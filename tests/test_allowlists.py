"""Issue 32, deny-lists turned into allow-lists, missing effects, rules scoped by kind:
sed scripts read as GNU sed reads them, environment assignments judged per program,
reading the environment (``env-read``), installing (``install``), endless sources,
destructive git by option, every kind through the baseline. Real parser, real shipped
catalogue; the sed reader is checked against the real GNU sed on this machine."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from policyd.core.shell.scripts import sed_danger
from tests.test_cases import _load, _report, case_root, run_cases

__all__ = ["case_root"]  # the fixture, used by name

SED = shutil.which("sed")

# scripts that write OUT or run `touch MARK` only when a label is read as GNU sed reads it
_SED_HIDDEN = [
    "b x; :x w {out}",
    "p;:q W {out}",
    "$!b e; :e e touch {mark}",
    "b x\t; :x\tw {out}",
    "1{{bx}}; :x w {out}",
    "{{b x}}; :x w {out}",
    "T x; :x s/a/b/w {out}",
    "t x;:x e touch {mark}",
    ":a;:b w {out}",
    "b end#c\n:end w {out}",
]


@pytest.mark.skipif(SED is None, reason="GNU sed not installed")
@pytest.mark.parametrize("script", _SED_HIDDEN)
def test_sed_labels_as_gnu_sed_reads_them(tmp_path: Path, script: str) -> None:
    """Every script here makes the real sed write a file or run a command; the reader says
    so (a label ends at a blank, ';', '}' or '#', and the next command follows)."""
    out, mark = tmp_path / "out", tmp_path / "mark"
    text = script.format(out=out, mark=mark)
    (tmp_path / "in").write_text("a\n")
    subprocess.run([str(SED), "-n", text, str(tmp_path / "in")], cwd=tmp_path, capture_output=True,
                   timeout=30, check=False)
    assert out.exists() or mark.exists(), f"the oracle did not write with {text!r}"
    assert sed_danger(text), text


@pytest.mark.parametrize("script", [":a;N;$!ba;s/\\n/ /g", ":top; /x/{s/x/y/; t top}; p", "b;p",
                                    "/start/,/end/p", "$!N;/^#/d"])
def test_sed_plain_loops_stay_plain(script: str) -> None:
    assert "" == sed_danger(script)


@pytest.mark.parametrize("script", [":a\x0bw /tmp/x", "b a\rw /tmp/x", ":é w x"])
def test_sed_label_this_reader_cannot_follow_is_unknown(script: str) -> None:
    """Characters GNU sed takes into a label (a vertical tab, a carriage return) or that
    versions read differently: the script is not read as plain."""
    assert sed_danger(script)


# ---------------------------------------------------------------- our variants, end to end

OWN = Path(__file__).resolve().parent / "cases" / "allowlists.jsonl"


def test_allowlist_variant_cases(case_root: Path) -> None:
    """Our variants of each class (unsafe and benign near-misses) through the real
    ``policyd eval`` with the shipped baseline + ci policies."""
    cases = _load(OWN)
    assert [] == _report(run_cases(cases, case_root), "tests/cases/allowlists.jsonl")
