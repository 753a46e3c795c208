"""The documented system install (issue 9 item 18): ``systemd/install-system.sh`` puts the
binary exactly where ``systemd/system/policyd.service``'s ExecStart expects it. The script
runs for real into a staging root (``DESTDIR``), the way the README tells root to run it."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "systemd" / "install-system.sh"
UNIT = ROOT / "systemd" / "system" / "policyd.service"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def exec_start_binary(unit: Path) -> str:
    for line in unit.read_text().splitlines():
        if line.startswith("ExecStart="):
            return shlex.split(line.removeprefix("ExecStart="))[0]
    raise AssertionError(f"{unit}: no ExecStart")


def test_install_script_puts_the_binary_where_the_unit_runs_it(tmp_path: Path) -> None:
    stage = tmp_path / "root"
    env = {**os.environ, "DESTDIR": str(stage)}
    proc = subprocess.run([str(SCRIPT)], env=env, capture_output=True, text=True, timeout=580)
    assert 0 == proc.returncode, proc.stdout + proc.stderr
    wanted = exec_start_binary(UNIT)
    assert wanted.startswith("/")
    link = stage / wanted.lstrip("/")
    assert link.is_symlink() or link.is_file(), f"{wanted} not installed under {stage}"
    target = os.readlink(link) if link.is_symlink() else wanted
    installed = stage / target.lstrip("/") if os.path.isabs(target) else link.parent / target
    assert installed.is_file() and os.access(installed, os.X_OK), installed
    # the scripts name the final interpreter, not the staging root (a package built from the
    # stage would otherwise run /stage/opt/policyd/bin/python)
    venv = Path(target).parent.parent if os.path.isabs(target) else Path(wanted).parent
    assert f"#!{venv}/bin/python" == installed.read_text().splitlines()[0]
    assert not [p for p in installed.parent.iterdir() if p.is_file() and str(stage) in p.read_text(errors="replace")]
    # the staged venv runs (its interpreter finds its packages relative to itself)
    staged_python = installed.parent / "python"
    version = subprocess.run([str(staged_python), "-m", "policyd", "--version"], capture_output=True, text=True,
                             timeout=60)
    assert 0 == version.returncode, version.stderr
    assert version.stdout.startswith("policyd ")
    assert not (stage / "usr" / "local" / "local").exists()  # Debian's --prefix trap
    # the man page and bash completion, where man and bash-completion look under /usr/local
    man = stage / "usr" / "local" / "share" / "man" / "man1" / "policyd.1"
    assert (ROOT / "docs" / "policyd.1").read_text() == man.read_text()
    completion = stage / "usr" / "local" / "share" / "bash-completion" / "completions" / "policyd"
    assert "_shtab_policyd" in completion.read_text()
