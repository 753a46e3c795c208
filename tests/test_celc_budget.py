"""Evaluation budgets: a decision that runs past its budget answers ask with a reason (a
deny that already matched stands); the daemon keeps answering other peers meanwhile."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from policyd.core import cel
from policyd.core.decide import decide
from policyd.core.facts import Facts
from policyd.core.model import Decision
from policyd.core.policy import build_set, example_query
from tests.test_daemon import Daemon, decide_params, result, write_policy
from tests.test_daemon import daemons as daemons  # the fixture

#: three nested comprehensions over every path: 2048**3 steps when given 2048 paths.
COSTLY = 'tool.paths.all(a, tool.paths.all(b, tool.paths.all(c, a + b + c != "")))'
HEADER = '[policy]\nname = "t"\ndefault = "allow"\n'


def policy(*rules: tuple[str, str, str]) -> str:
    return HEADER + "".join(
        f"\n[[rule]]\nid = '{rid}'\nwhen = '{when}'\ndecision = '{decision}'\nreason = 'r'\n"
        for rid, when, decision in rules
    )


def many_paths(n: int = 2048) -> dict[str, Any]:
    return {"kind": "read", "paths": [f"/workspace/project/f{i}" for i in range(n)]}


def test_decision_past_its_time_budget_asks_with_a_reason() -> None:
    ps = build_set([("/p/a.toml", policy(("slow", COSTLY, "allow")))], check_examples=False)
    verdict = decide(ps, Facts(example_query(many_paths())), budget_s=0.05, clock=time.perf_counter)
    assert Decision.ASK == verdict.decision
    assert "evaluation time budget exceeded" in verdict.reason and "slow" in verdict.reason


def test_step_budget_applies_without_a_clock() -> None:
    ps = build_set([("/p/a.toml", policy(("slow", COSTLY, "allow")))], check_examples=False)
    verdict = decide(ps, Facts(example_query(many_paths(200))))  # 8 million steps > 2 million
    assert Decision.ASK == verdict.decision
    assert "comprehension steps" in verdict.reason


def test_budget_is_not_absorbed_by_or_or_exists() -> None:
    """`true || slow` short-circuits, but `slow || true` must not turn the stall into true."""
    program = cel.compile_expr(f"({COSTLY}) || true")
    act = Facts(example_query(many_paths(200))).activation()
    try:
        program.evaluate(act, cel.Budget(max_steps=10_000))
    except cel.BudgetExceeded:
        pass
    else:
        raise AssertionError("budget exhaustion was absorbed")


def test_a_deny_that_matched_stands_when_a_later_rule_runs_out() -> None:
    ps = build_set([("/p/a.toml", policy(("deny-first", "true", "deny"), ("slow", COSTLY, "deny")))],
                   check_examples=False)
    verdict = decide(ps, Facts(example_query(many_paths())), budget_s=0.05, clock=time.perf_counter)
    assert Decision.DENY == verdict.decision


def test_daemon_keeps_answering_others_while_a_decision_runs_out(tmp_path: Path, daemons: Any) -> None:
    text = policy(("slow", COSTLY, "allow"), ("edits", 'tool.kind == "edit"', "allow"))
    d: Daemon = daemons(tmp_path, write_policy(tmp_path / "p.toml", text)).start()
    slow_params = decide_params("slow", kind="read", locations=[{"path": f"/work/project/f{i}"} for i in range(2048)])
    slow: dict[str, Any] = {}
    t = threading.Thread(target=lambda: slow.update(result(d.socket, "v1/decide", slow_params)))
    t.start()
    fast = [result(d.socket, "v1/decide", decide_params(f"e{i}", kind="edit")) for i in range(20)]
    t.join(timeout=60)
    assert all("allow" == r["decision"] for r in fast)
    assert "ask" == slow["decision"]
    assert "budget exceeded" in slow["fields"]["reason"]


def test_daemon_moves_a_small_request_whose_rules_run_long_off_its_loop(tmp_path: Path, daemons: Any) -> None:
    """A small request is judged on the daemon's event loop with a short budget; when its
    rules run past it, it is judged again on a worker thread with the whole budget (the
    answer is the full evaluation's, not the short budget's ask) while others are answered."""
    text = policy(("slowish", COSTLY, "allow"))  # 22 paths: ~11,000 steps, ~10 ms here: > 5 ms, < 100 ms
    d: Daemon = daemons(tmp_path, write_policy(tmp_path / "p.toml", text)).start()
    params = decide_params("s", kind="read", locations=[{"path": f"/w/{i}"} for i in range(22)])
    assert len(json.dumps(params)) < 4096  # judged on the loop first
    decided = result(d.socket, "v1/decide", params)
    assert "allow" == decided["decision"], decided["fields"]
