"""Partially written policy sets are never enforced (issue 9 item 4): a real watcher
(``Reloader`` with watchfiles) over real files, a writer thread pausing 50-200 ms between
chunks and between files, and decisions sampled continuously on the event loop meanwhile.

The directory holds an allow-everything file and a file denying ``rm``; the writer rewrites
the deny file in place chunk by chunk (every prefix parses, but only the whole file denies),
or moves the deny rule to another file (for a moment no file denies). Any reload that
enforced an intermediate set would answer ``rm`` with allow.
"""

from __future__ import annotations

import asyncio
import os
import random
import threading
import time
from pathlib import Path

import pytest

from policyd import loader
from policyd.core.model import Decision, PermissionOption, PermissionQuery, SessionInfo
from policyd.engine import Engine
from policyd.reload import SETTLE_S, Reloader

pytestmark = pytest.mark.timeout(60)

HEADER = '[policy]\nname = "{name}"\ndefault = "ask"\n\n'
ALLOW = ('[[rule]]\nid = "allow-commands"\nkinds = ["execute"]\nwhen = \'true\'\ndecision = "allow"\n'
         'reason = "commands are fine"\n\n')
FILLER = ('[[rule]]\nid = "ask-fetch-{n}"\nkinds = ["fetch"]\nwhen = \'true\'\ndecision = "ask"\n'
          'reason = "filler {n}"\n\n')
DENY = ('[[rule]]\nid = "deny-rm"\nkinds = ["execute"]\nwhen = \'tool.command.startsWith("rm")\'\n'
        'decision = "deny"\nreason = "no rm"\n\n')
OPTIONS = (PermissionOption("a", "Allow", "allow_once"), PermissionOption("r", "Reject", "reject_once"))
RM = PermissionQuery(SessionInfo("s", "/w"), {"toolCallId": "t", "kind": "execute", "title": "rm -rf build",
                                              "rawInput": {"command": "rm -rf build"}}, OPTIONS, home="/home/u")


def _slow_write(path: Path, chunks: list[str], rng: random.Random) -> None:
    with open(path, "w", encoding="utf-8") as f:  # truncates first, as an in-place save does
        for chunk in chunks:
            f.write(chunk)
            f.flush()
            time.sleep(rng.uniform(0.05, 0.2))


def rewrite_in_place(pdir: Path, rng: random.Random) -> None:
    """The deny file re-saved chunk by chunk, its deny rule last."""
    _slow_write(pdir / "b-deny.toml", [HEADER.format(name="deny"), FILLER.format(n=1), FILLER.format(n=2), DENY],
                rng)


def move_between_files(pdir: Path, rng: random.Random) -> None:
    """The deny rule moved from one file to another: first removed, then written elsewhere."""
    _slow_write(pdir / "b-deny.toml", [HEADER.format(name="deny"), FILLER.format(n=1)], rng)
    time.sleep(rng.uniform(0.05, 0.2))
    _slow_write(pdir / "c-deny.toml", [HEADER.format(name="deny2"), FILLER.format(n=3), DENY], rng)


def rename_during_in_place(pdir: Path, rng: random.Random) -> None:
    """While the deny file is re-saved chunk by chunk, another file is renamed into place (a
    change that alone would load after the short quiet period): the set still waits for the
    in-place writer to settle (issue 33 item 17)."""
    path = pdir / "b-deny.toml"
    with open(path, "w", encoding="utf-8") as f:
        for n, chunk in enumerate([HEADER.format(name="deny"), FILLER.format(n=1), FILLER.format(n=2), DENY]):
            f.write(chunk)
            f.flush()
            time.sleep(rng.uniform(0.05, 0.2))
            if n == 1:
                tmp = pdir / "d-other.toml.tmp"
                tmp.write_text(HEADER.format(name="other") + FILLER.format(n=9))
                os.replace(tmp, pdir / "d-other.toml")
                time.sleep(rng.uniform(0.05, 0.2))


@pytest.mark.parametrize("writer", [rewrite_in_place, move_between_files, rename_during_in_place])
@pytest.mark.parametrize("seed", [1, 2])
def test_slow_writer_never_gets_a_partial_set_enforced(tmp_path: Path, writer: object, seed: int) -> None:
    pdir = tmp_path / "policies"
    pdir.mkdir()
    (pdir / "a-allow.toml").write_text(HEADER.format(name="allow") + ALLOW)
    (pdir / "b-deny.toml").write_text(HEADER.format(name="deny") + DENY)
    engine = Engine(loader.load([str(pdir)], []).policy)
    assert Decision.DENY is engine.decide(RM).decision

    async def run() -> tuple[list[Decision], str, str]:
        reloader = Reloader(engine, lambda: ([str(pdir)], [], None), rehash_s=3600)
        task = asyncio.create_task(reloader.run())
        await asyncio.sleep(0.5)  # the watch is live
        done = threading.Event()

        def write() -> None:
            try:
                writer(pdir, random.Random(seed))  # type: ignore[operator]
            finally:
                done.set()

        thread = threading.Thread(target=write)
        thread.start()
        seen: list[Decision] = []
        while not done.is_set():
            seen.append(engine.decide(RM).decision or Decision.ASK)
            await asyncio.sleep(0.005)
        thread.join()
        final = loader.load([str(pdir)], []).policy.hash
        deadline = time.monotonic() + SETTLE_S * 4 + 5
        while engine.policy.hash != final and time.monotonic() < deadline:
            seen.append(engine.decide(RM).decision or Decision.ASK)
            await asyncio.sleep(0.005)
        reloader.stop()
        await task
        return seen, engine.policy.hash, final

    seen, in_force, final = asyncio.run(run())
    assert Decision.ALLOW not in seen, f"an intermediate set was enforced: {seen.count(Decision.ALLOW)} allows"
    assert len(seen) > 50  # sampled all along the write
    assert final == in_force  # and the settled set did come into force
    assert Decision.DENY is engine.decide(RM).decision
