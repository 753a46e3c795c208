"""The README's five-minute recipe runs as written: its shell block (minus the three install
lines, which ``./dev test`` has already done: a venv with this checkout, acpx pinned in
``tests/e2e``) through the real acpx, the real proxy and the scripted demo agent."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, policyd_env

ACPX_BIN = ROOT / "tests" / "e2e" / "node_modules" / ".bin"
MARK = "<!-- recipe: local"

pytestmark = pytest.mark.skipif(shutil.which("node") is None or not (ACPX_BIN / "acpx").exists(),
                                reason="node or the pinned acpx (tests/e2e) is missing: run ./dev test")


def recipe_lines() -> list[str]:
    """The shell block after the README's recipe mark, continuations joined."""
    text = (ROOT / "README.md").read_text()
    block = text[text.index(MARK):].split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def test_the_readme_recipe_runs_as_written(tmp_path: Path) -> None:
    """Every recipe line but the installs runs; the decision log holds the demo's decisions
    and ``policyd summary`` prints them by rule."""
    lines = recipe_lines()
    installs = [line for line in lines if line.startswith(("python3 -m venv", "pip install", "npm install"))]
    assert 3 == len(installs), lines
    ws = tmp_path / "project"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "README.md").write_text("hello\n")
    home = tmp_path / "home"
    home.mkdir()
    env = policyd_env(tmp_path, {"HOME": str(home)})
    env["PATH"] = f"{ACPX_BIN}:{Path(sys.executable).parent}:{env['PATH']}"
    script = "set -e\n" + "\n".join(line for line in lines if line not in installs)
    out = subprocess.run(["bash", "-c", script], cwd=ws, env=env, capture_output=True, text=True, timeout=180)
    assert 0 == out.returncode, out.stdout + out.stderr
    decided = [json.loads(line) for line in (ws / "decisions.jsonl").read_text().splitlines()]
    assert {"allow", "deny"} <= {d["decision"] for d in decided}
    assert "### policyd decisions\n" in out.stdout, out.stdout
    assert f"{len(decided)} decisions:" in out.stdout
