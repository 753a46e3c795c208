"""Tool-call state folded from session/update (pure core)."""

from __future__ import annotations

from policyd.core import toolcalls
from policyd.core.toolcalls import ToolCallTracker


def test_update_merges_and_replaces_lists() -> None:
    """tool_call_update merges fields; locations replace the whole list; null keeps a field."""
    t = ToolCallTracker()
    t.observe_update(
        "s",
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "c",
            "kind": "edit",
            "title": "A",
            "locations": [{"path": "/a"}, {"path": "/b"}],
        },
    )
    t.observe_update(
        "s", {"sessionUpdate": "tool_call_update", "toolCallId": "c", "title": None, "locations": [{"path": "/c"}]}
    )
    assert {"toolCallId": "c", "kind": "edit", "title": "A", "locations": [{"path": "/c"}]} == t.merged(
        "s", {"toolCallId": "c"}
    )


def test_request_fields_win_and_unseen_id_creates_entry() -> None:
    """The permission request's own fields override tracked ones; an unseen id stands alone."""
    t = ToolCallTracker()
    t.observe_update("s", {"sessionUpdate": "tool_call", "toolCallId": "c", "kind": "read", "title": "old"})
    assert "new" == t.merged("s", {"toolCallId": "c", "title": "new"})["title"]
    assert {"toolCallId": "z", "kind": "execute"} == t.merged("s", {"toolCallId": "z", "kind": "execute"})


def test_completed_calls_and_ended_sessions_are_freed() -> None:
    """Completed/failed calls and ended sessions leave no state."""
    t = ToolCallTracker()
    t.observe_update("s", {"sessionUpdate": "tool_call", "toolCallId": "c", "kind": "read"})
    t.observe_update("s", {"sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "completed"})
    assert 0 == len(t)
    t.observe_update("s", {"sessionUpdate": "tool_call", "toolCallId": "d", "kind": "read"})
    t.end_session("s")
    assert 0 == len(t)


def test_memory_is_bounded() -> None:
    """Per-session and session caps hold however many updates arrive."""
    t = ToolCallTracker()
    for s in range(toolcalls.MAX_SESSIONS + 10):
        for c in range(toolcalls.MAX_CALLS_PER_SESSION + 10):
            t.observe_update(f"s{s}", {"sessionUpdate": "tool_call", "toolCallId": f"c{c}", "kind": "read"})
    assert toolcalls.MAX_SESSIONS * toolcalls.MAX_CALLS_PER_SESSION == len(t)
