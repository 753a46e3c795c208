"""A ``..`` after a component the path names itself (``outbox/../x``) is taken by the kernel
after following that component: through ``outbox -> ~/.ssh`` the path is ``~/x``, while the
lexical fold says ``<workspace>/x``. ``paths.physical`` keeps that form, the facts add it
beside the lexical one, and its real path is the physical one, so rules on real paths see
where the call really goes (found by the nofollow helper, 2026-12-05: ``echo x >
outbox/../x.txt`` was allowed as a workspace write)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from policyd.core import paths
from tests.test_cases import case_root  # noqa: F401 - a fixture: a root outside /tmp (the policies' scratch)

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(("word", "expected"), [
    ("outbox/../x", "/w/outbox/../x"),
    ("a/b/../../c", "/w/a/b/../../c"),
    ("./a/./../b", "/w/a/../b"),
    ("src/..", "/w/src/.."),
    ("/tmp/../etc", "/tmp/../etc"),
    ("~/x/../y", "/h/x/../y"),
    ("$HOME/x/../y", "/h/x/../y"),
    ("../x", None),  # goes up from the directory it runs in: the lexical fold is the walk
    ("../../x/y", None),
    ("~/../y", None),  # from the home, not a component the word names
    ("a..b/c", None),
    ("..x/y", None),
    ("x", None),
    ("~-/a/../b", None),  # the directory stack: unknown either way
])
def test_physical_keeps_a_dotdot_after_the_paths_own_component(word: str, expected: str | None) -> None:
    assert expected == paths.physical(word, "/w", "/h")


_PART = st.sampled_from(["a", "b", "..", ".", ""])


@given(st.lists(_PART, min_size=1, max_size=8), st.booleans())
def test_the_physical_form_folds_to_the_lexical_one(parts: list[str], absolute: bool) -> None:
    """The physical form only keeps what the fold removes: folded, it is the lexical path."""
    word = ("/" if absolute else "") + "/".join(parts)
    walked = paths.physical(word, "/w/d", "/h")
    if walked is not None:
        assert paths.resolve(walked, "/", "") == paths.resolve(word, "/w/d", "/h")
        assert ".." in walked.split("/")


def decide(ws: Path, home: Path, calls: list[dict[str, object]]) -> list[str]:
    lines = [json.dumps({"request": {"sessionId": "s", "toolCall": {"toolCallId": f"t{i}", **call}, "options": [
        {"optionId": "a", "name": "Allow", "kind": "allow_once"},
        {"optionId": "r", "name": "Reject", "kind": "reject_once"}]}, "cwd": str(ws), "home": str(home)})
        for i, call in enumerate(calls)]
    env = {**os.environ, "HOME": str(home), "POLICYD_SEARCH_PATH": "[]", "POLICYD_DAEMON": "off"}
    env.pop("POLICYD_CONFIG", None)
    policy = [a for name in ("baseline.toml", "ci.toml") for a in ("--policy", str(ROOT / "policies" / name))]
    proc = subprocess.run([sys.executable, "-m", "policyd", "eval", *policy, "-"], input="\n".join(lines) + "\n",
                          capture_output=True, text=True, env=env, cwd=ws, timeout=120, check=False)
    out = [json.loads(line)["decision"] for line in proc.stdout.splitlines() if line.strip()]
    assert len(out) == len(calls), proc.stderr[-2000:]
    return out


def test_a_dotdot_after_a_link_is_judged_where_the_kernel_goes(case_root: Path) -> None:  # noqa: F811
    home, ws = case_root / "home", case_root / "ws"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("key\n")
    (home / ".netrc").write_text("machine example.com password x\n")
    (home / "notes.txt").write_text("private\n")
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "a.txt").write_text("a\n")
    (ws / "outbox").symlink_to(home / ".ssh")

    def run(command: str) -> dict[str, object]:
        return {"kind": "execute", "title": command, "rawInput": {"command": command}}

    escaping = [
        run("echo x > outbox/../x.txt"),  # writes ~/x.txt
        run("cp src/a.txt outbox/../y.txt"),
        run("cat outbox/../notes.txt"),  # reads ~/notes.txt, outside the roots
        run("cat outbox/../.netrc"),
        run("cat outbox/../.n*"),
        run("rm -rf outbox/../.cache"),
        {"kind": "edit", "title": "edit", "locations": [{"path": str(ws / "outbox" / ".." / "notes.txt")}]},
        {"kind": "read", "title": "read", "locations": [{"path": str(ws / "outbox" / ".." / ".netrc")}]},
    ]
    inside = [run("cat src/../src/a.txt"), run("echo x > src/../z.txt"), run("cat ./src/./../src/a.txt")]
    out = decide(ws, home, escaping + inside)
    for call, decision in zip(escaping, out[: len(escaping)], strict=True):
        assert decision in ("ask", "deny"), (call, decision)
    for call, decision in zip(inside, out[len(escaping):], strict=True):
        assert decision == "allow", (call, decision)
