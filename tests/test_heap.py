"""policyd.heap: a long-lived process freezes what a loaded set keeps alive, and a reload
frees what the old set left (run in a child process: the test run's own collector stays as it is)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = r"""
import asyncio, gc, json, sys
from pathlib import Path
from policyd import heap
from policyd.core.policy import build_set
from policyd.engine import Engine
from policyd.reload import Reloader

path = Path(sys.argv[1]) / "p.toml"
def text(i):
    return (f'[policy]\nname = "v{i}"\ndefault = "ask"\n[[rule]]\nid = "r{i}"\nkinds = ["read"]\n'
            f"when = 'tool.title.contains(\"marker {i}\")'\ndecision = \"deny\"\nreason = \"r{i}\"\n")
path.write_text(text(0))
engine = Engine(build_set([(str(path), text(0))]))
if sys.argv[2] == "settle":
    heap.settle()
settled = {"threshold": gc.get_threshold()[0], "frozen": gc.get_freeze_count()}
reloader = Reloader(engine, lambda: ([str(path)], [], None), rehash_s=3600, watch=False)
class Cycle:
    pass
async def main():
    for i in range(1, 12):
        path.write_text(text(i))
        # garbage in a cycle made before the reload, as an old set's compiled parts can be
        a, b = Cycle(), Cycle()
        a.other, b.other = b, a
        del a, b
        gc.freeze() if sys.argv[2] == "settle" else None  # as if it had lived since the load
        assert await reloader.reload("test", force=True, quick=True)
    return engine.policy.rules[0].id
last = asyncio.run(main())
frozen = gc.get_freeze_count()
gc.unfreeze()
print(json.dumps({**settled, "after": frozen, "leaked": gc.collect(), "last": last}))
"""


def run(tmp_path: Path, mode: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path), mode], capture_output=True, text=True,
                         timeout=120, check=True)
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_a_settled_process_freezes_its_heap_and_collects_young_objects_less_often(tmp_path: Path) -> None:
    plain, settled = run(tmp_path, "none"), run(tmp_path, "settle")
    assert plain["frozen"] == 0 and plain["threshold"] == 700
    assert isinstance(settled["frozen"], int) and settled["frozen"] > 10_000  # the set, catalogue, parsers
    assert settled["threshold"] == 10_000


def test_a_reload_collects_the_cycles_frozen_before_it(tmp_path: Path) -> None:
    """Garbage cycles frozen before a reload (never collected while frozen) are freed by it:
    after eleven reloads nothing frozen is garbage; the last set is in force."""
    result = run(tmp_path, "settle")
    assert result["last"] == "r11"
    assert isinstance(result["after"], int) and result["after"] > 10_000  # frozen again after the last reload
    assert result["leaked"] == 0
