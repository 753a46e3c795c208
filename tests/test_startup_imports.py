"""Import only what a command needs: ``policyd --help`` loads neither pydantic nor the CEL
stack; a proxy that consults the daemon never imports CEL (cel-python, Lark, policyd's
compiler). Checked by the modules a real process imported, not by timing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import policyd_env

HEAVY = ("pydantic", "pydantic_settings", "celpy", "lark", "policyd.core.cel", "policyd.core.shell", "structlog")
CEL = ("celpy", "lark", "policyd.core.cel", "policyd.core.celc", "policyd.core.policy")


def imported_by(code: str, env: dict[str, str] | None = None) -> set[str]:
    probe = f"import sys\n{code}\nprint(' '.join(sorted(sys.modules)), file=sys.stderr)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60)
    return set(done.stderr.strip().splitlines()[-1].split())


def test_help_imports_nothing_heavy() -> None:
    mods = imported_by("from policyd.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass")
    assert [] == [m for m in HEAVY if m in mods]


def test_proxy_consulting_the_daemon_does_not_import_cel(tmp_path: Path) -> None:
    env = policyd_env(tmp_path)
    sock = tmp_path / "none.sock"  # nobody answers: the proxy fails closed at decision time
    agent = [sys.executable, "-c", "import sys; sys.stdin.read()"]
    code = (
        "from policyd.cli import main\n"
        f"code = main(['proxy', '--require-daemon', '--daemon', {str(sock)!r}, '--', *{agent!r}])\n"
    )
    mods = imported_by(code, {**env, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert "policyd.proxy" in mods and "policyd.daemon_client" in mods
    assert [] == [m for m in CEL if m in mods]
