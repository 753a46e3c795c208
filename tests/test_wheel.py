"""Installed from a wheel, outside the checkout (issue 34, item 7): the wheel carries the
shipped policies, the catalogue and the manual, so a user with no checkout can ``policyd
init``, check what it wrote as a CI gate, and explain a decision.

The wheel is built from this tree (``pip wheel --no-deps``) and installed into a fresh venv
without its dependencies; those are taken from the test venv's site-packages through a
``.pth`` line (that directory's own ``.pth`` files, the editable install of this checkout
among them, are not processed from there, so ``policyd`` itself comes from the wheel:
asserted). No network is used.
"""

# Assertions read `assert expected == actual` (the project's test style).

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from conftest import ROOT, isolated_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The venv the wheel is installed into."""
    base = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(base / "dist"), str(ROOT)], check=True, capture_output=True, timeout=300)
    [wheel] = (base / "dist").glob("policyd-*.whl")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--no-deps", "-q", str(wheel)],
                   check=True, capture_output=True, timeout=300)
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    purelib = subprocess.run([str(venv / "bin" / "python"), "-c", where], check=True, capture_output=True,
                             text=True).stdout.strip()
    (Path(purelib) / "deps-from-test-venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


def run(venv: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(venv / "bin" / "policyd"), *args], cwd=cwd, env=isolated_env(cwd / "env"),
                          capture_output=True, text=True, timeout=120)


def test_the_installed_policyd_is_the_wheels(installed: Path, tmp_path: Path) -> None:
    where = subprocess.run([str(installed / "bin" / "python"), "-c", "import policyd; print(policyd.__file__)"],
                           cwd=tmp_path, check=True, capture_output=True, text=True).stdout
    assert where.startswith(str(installed)), where


def test_init_check_and_explain_outside_the_checkout(installed: Path, tmp_path: Path) -> None:
    """``policyd init`` writes the shipped files; ``check --strict`` of them passes (a CI gate);
    ``explain`` decides with them: ``rm -rf ~`` is denied by the shipped baseline."""
    assert 0 == run(installed, tmp_path, "init").returncode
    written = {p.name for p in (tmp_path / ".policyd").iterdir()}
    assert {"baseline.toml", "ci.toml", "session.toml", "team.toml"} <= written
    checked = run(installed, tmp_path, "check", "--strict", "--policy", ".policyd")
    assert 0 == checked.returncode, checked.stderr
    explained = run(installed, tmp_path, "explain", "--policy", ".policyd", "--command", "rm -rf ~", "--json")
    assert "deny" == json.loads(explained.stdout)["decision"], explained.stdout + explained.stderr


def test_the_wheel_installs_the_manual(installed: Path) -> None:
    assert (ROOT / "docs" / "policyd.1").read_text() == (installed / "share" / "man" / "man1" / "policyd.1").read_text()
