"""The suite's hypothesis settings are reproducible (issue 9 item 14): CI draws the same
examples every run, and no test overrides that."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import hypothesis
from conftest import HYPOTHESIS_PROFILES, hypothesis_profile

TESTS = Path(__file__).resolve().parent
#: Settings that decide reproducibility; only the profiles in conftest may set them.
PROFILE_ONLY = {"derandomize", "database", "seed"}


def test_profile_choice_follows_the_ci_variable() -> None:
    assert "ci" == hypothesis_profile({"CI": "true"})
    assert "ci" == hypothesis_profile({"CI": "1"})
    assert "dev" == hypothesis_profile({})
    assert "dev" == hypothesis_profile({"CI": "false"})
    assert "dev" == hypothesis_profile({"CI": "true", "HYPOTHESIS_PROFILE": "dev"})
    assert HYPOTHESIS_PROFILES["ci"]["derandomize"] is True
    assert HYPOTHESIS_PROFILES["ci"]["database"] is None
    assert HYPOTHESIS_PROFILES["dev"]["database"] is None
    assert "hunt" == hypothesis_profile({"CI": "true", "HYPOTHESIS_PROFILE": "hunt"})
    assert HYPOTHESIS_PROFILES["hunt"]["max_examples"] == 1000  # random: never the CI profile
    assert not HYPOTHESIS_PROFILES["hunt"].get("derandomize", False)


def test_loaded_profile_is_in_force_here() -> None:
    expected = HYPOTHESIS_PROFILES[hypothesis_profile(os.environ)]
    assert expected.get("derandomize", False) == hypothesis.settings.default.derandomize
    assert hypothesis.settings.default.database is None


def test_ci_runs_draw_the_same_examples(tmp_path: Path) -> None:
    """Two CI runs of a property record identical examples (a real pytest subprocess)."""
    (tmp_path / "conftest.py").write_text((TESTS / "conftest.py").read_text())
    (tmp_path / "test_draws.py").write_text(
        "import os\n"
        "from hypothesis import given, settings, strategies as st\n"
        "@settings(max_examples=30)\n"
        "@given(st.text())\n"
        "def test_draw(s):\n"
        "    with open(os.environ['DRAWS'], 'a') as f:\n"
        "        f.write(repr(s) + '\\n')\n"
    )
    runs = []
    for i in range(2):
        out = tmp_path / f"draws{i}.txt"
        env = {**os.environ, "CI": "true", "DRAWS": str(out)}
        env.pop("HYPOTHESIS_PROFILE", None)
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert 0 == proc.returncode, proc.stdout + proc.stderr
        runs.append(out.read_text())
    assert runs[0] == runs[1]
    assert not (tmp_path / ".hypothesis" / "examples").exists()


def _settings_keywords(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("settings", "register_profile", "load_profile", "seed"):
                found += [f"{name}({k.arg})" for k in node.keywords if k.arg in PROFILE_ONLY]
                if name in ("load_profile", "seed"):
                    found.append(name)
    return found


def test_no_hypothesis_test_overrides_the_profile() -> None:
    """Every hypothesis test inherits derandomize/database from the profile: none sets them
    (or a seed) itself, and only conftest loads a profile."""
    offenders = {}
    for path in sorted(TESTS.glob("test_*.py")):
        found = _settings_keywords(ast.parse(path.read_text()))
        if found:
            offenders[path.name] = found
    assert {} == offenders
    uses = [p.name for p in TESTS.glob("test_*.py") if "from hypothesis import" in p.read_text()]
    assert len(uses) >= 4  # the scan covered the property tests
