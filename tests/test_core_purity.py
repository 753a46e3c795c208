"""policyd/core is pure: no module in it imports anything that does I/O."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parent.parent / "policyd" / "core"

#: Modules that touch files, sockets, processes, the environment, the clock or logs.
#: (``threading`` is allowed: core/cel.py holds a lock around cel-python, which is no I/O.)
FORBIDDEN = {
    "asyncio", "socket", "subprocess", "sqlite3", "os", "sys", "time", "pathlib", "io", "shutil",
    "tempfile", "glob", "logging", "structlog", "watchfiles", "signal", "select", "selectors",
    "multiprocessing", "urllib.request", "http", "requests", "random", "secrets",
    "policyd.logs", "policyd.proxy", "policyd.engine", "policyd.loader", "policyd.settings", "policyd.cli",
}


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


@pytest.mark.parametrize("path", sorted(CORE.rglob("*.py")), ids=lambda p: str(p.relative_to(CORE)))
def test_core_module_imports_no_io(path: Path) -> None:
    """Each core module imports none of the I/O modules (nor the I/O shell)."""
    bad = [n for n in _imports(path) if n in FORBIDDEN or n.split(".")[0] in FORBIDDEN - {"policyd"}]
    assert [] == bad


def test_core_has_modules() -> None:
    """The purity check walks real files (a renamed folder must not pass silently)."""
    names = {str(p.relative_to(CORE)) for p in CORE.rglob("*.py")}
    assert {"relay.py", "policy.py", "decide.py", "facts.py", "cel.py", "shell/walk.py", "shell/catalogue.py"} <= names


def test_forbidden_import_is_detected(tmp_path: Path) -> None:
    """The checker itself flags an I/O import."""
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nfrom asyncio import sleep\n")
    assert ["os", "asyncio"] == [n for n in _imports(bad) if n in FORBIDDEN]
