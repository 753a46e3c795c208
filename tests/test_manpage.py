"""The man page is generated from the command line (argparse-manpage), so it cannot drift:
``docs/policyd.1`` must be what the parser renders today. Regenerate with ``./dev man``
(``python tests/test_manpage.py > docs/policyd.1``). ``systemd/install-system.sh`` installs
it as ``/usr/local/share/man/man1/policyd.1``; ``policyd completion bash|zsh|tcsh`` prints
the shell completion (shtab), generated from the same parser."""

# Assertions read `assert expected == actual` (the project's test style).

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAN = ROOT / "docs" / "policyd.1"
#: The page's date (``.TH``): fixed, so a regeneration changes the page only when the parser did.
DATE = "2026-12"


def render() -> str:
    """The page; argparse wraps usage lines to ``COLUMNS``: fixed at 80 while rendering, so the
    page does not depend on the terminal it is rendered in."""
    import os

    from argparse_manpage.manpage import Manpage

    from policyd import __version__
    from policyd.cli.parser import build_parser

    data = {"prog": "policyd", "version": __version__, "manual_title": "policyd manual",
            "description": "answer coding agents' ACP permission requests from CEL policy",
            "date": DATE}
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "80"
    try:
        return str(Manpage(build_parser(), _data=data))
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def test_the_committed_man_page_is_the_parser_rendered() -> None:
    assert render() == MAN.read_text(), "docs/policyd.1 is stale: run ./dev man"


def test_the_man_page_documents_every_command_and_option() -> None:
    """What the man page is for: each subcommand and, e.g., the sandbox and gateway options."""
    from policyd.cli.parser import _COMMANDS

    text = MAN.read_text()
    for name in _COMMANDS:
        assert f"'policyd {name}'" in text, name
    for option in (r"\-\-sandbox", r"\-\-gateway", r"\-\-headless\-fallback", r"\-\-decision\-log"):
        assert option in text


def test_completion_scripts_complete_the_subcommands_and_load_in_bash() -> None:
    """``policyd completion bash`` is a script bash sources, offering the subcommands and
    ``proxy``'s options; zsh and tcsh scripts are produced too."""
    out = subprocess.run([sys.executable, "-m", "policyd", "completion", "bash"], capture_output=True, text=True,
                         check=True).stdout
    probe = (out + '\nCOMP_WORDS=(policyd pro); COMP_CWORD=1; COMP_LINE="policyd pro"; COMP_POINT=11\n'
             "_shtab_policyd; echo \"${COMPREPLY[@]}\"\n"
             'COMP_WORDS=(policyd proxy --sand); COMP_CWORD=2; COMP_LINE="policyd proxy --sand"; COMP_POINT=20\n'
             "_shtab_policyd; echo \"${COMPREPLY[@]}\"\n")
    shown = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True).stdout.splitlines()
    assert "proxy" in shown[0].split()
    assert {"--sandbox", "--sandbox-root"} <= set(shown[1].split())
    for shell in ("zsh", "tcsh"):
        script = subprocess.run([sys.executable, "-m", "policyd", "completion", shell], capture_output=True,
                                text=True, check=True).stdout
        assert "policyd" in script and "proxy" in script


if __name__ == "__main__":
    sys.stdout.write(render())
