"""Import only what a command needs: ``policyd --help`` loads neither pydantic nor the CEL
stack. (A proxy that consults the daemon loads its local policy for ``[modes]`` and
``[answers]``, so it imports the CEL stack too.) Checked by the modules a real process
imported, not by timing."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("pydantic", "pydantic_settings", "celpy", "lark", "policyd.core.cel", "policyd.core.shell", "structlog")


def imported_by(code: str, env: dict[str, str] | None = None) -> set[str]:
    probe = f"import sys\n{code}\nprint(' '.join(sorted(sys.modules)), file=sys.stderr)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60)
    return set(done.stderr.strip().splitlines()[-1].split())


def test_help_imports_nothing_heavy() -> None:
    mods = imported_by("from policyd.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass")
    assert [] == [m for m in HEAVY if m in mods]


def test_what_a_proxy_imports_before_relaying_leaves_out_the_policy_stack() -> None:
    """Between spawning the agent and relaying its answer to initialize, a proxy imports its
    settings, logging, the relay and the daemon's socket location (policyd.server); none of
    them may pull in the CEL or shell stack, which the policy load imports on its thread."""
    mods = imported_by("import policyd.settings, policyd.logs, policyd.cli.run, policyd.proxy, policyd.server,"
                       " policyd.spawn")
    heavy = ("celpy", "lark", "policyd.core.cel", "policyd.core.shell", "policyd.core.facts", "tree_sitter")
    assert [] == [m for m in heavy if m in mods]


def test_what_a_proxy_imports_before_spawning_its_agent_is_next_to_nothing() -> None:
    """``policyd proxy ... -- AGENT`` spawns the agent first: the modules up to that point
    (policyd.cli's main, policyd.spawn, policyd.child) import neither argparse nor
    subprocess nor typing (each ~5-15 ms before the agent could start)."""
    probe = ("import sys\nbefore = set(sys.modules)\nimport policyd.cli, policyd.spawn\n"
             "print(' '.join(sorted(set(sys.modules) - before)))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    added = set(done.stdout.split())
    assert "policyd.child" in added  # the probe sees what was imported
    assert set() == added - {"collections.abc", "policyd", "policyd.child", "policyd.cli", "policyd.spawn"}
