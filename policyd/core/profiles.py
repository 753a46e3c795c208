"""Agent profiles: put what an agent says in an unusual place where the facts look for it.

Rules this module owns (shapes recorded from the real agents, ``shared/acp/real-agents.md``):
the same action yields the same facts from every agent. Each profile recognises a shape by
its content (never by agent name, which a client cannot verify) and only ADDS fields the
agent left out; it never removes or overrides what the agent sent. The relayed bytes are
never touched: profiles act on the merged tool call the facts are computed from.

==================  =====================================================  ==========================
profile             shape                                                  becomes
==================  =====================================================  ==========================
``changes-keys``    ``rawInput.changes = {"/abs/path": {...}}`` (codex-acp  ``locations`` += each key
                    0.16 edits; ``move_path`` for renames)                  and ``move_path``
``content-cwd``     kind ``execute``, no ``rawInput.cwd``, a text content   ``rawInput.cwd``
                    ``[current working directory /abs] (...)`` (Gemini)
``prompt-urls``     kind ``fetch``, no URL in ``rawInput``, URLs only in    ``rawInput.url`` (the
                    the title ``Processing URLs and instructions from       first), ``rawInput.urls``
                    prompt: "..."`` (Gemini ``web_fetch``)                  (all); several URLs: cut
==================  =====================================================  ==========================

Commands as an argv list (``["/bin/bash", "-lc", "..."]``, codex-acp 0.16) and commands only
in the title (Gemini) are read by ``core.facts`` itself. A fetch naming several URLs is
flagged in :data:`CUT_KEY` (the facts then never allow it outright: the policy's URL facts
see the first URL only).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

#: Session config options (other than ``category: "mode"``) that set the agent's own
#: approval, by id: the agents' own names for their approval setting (Gemini CLI
#: ``approvalMode`` / ``approval_mode``, Codex ``approval_policy`` / ``sandbox_mode``, the
#: Claude Agent SDK's ``permissionMode``), should they surface as ACP config options. The four
#: pinned agents expose approval only as their ``mode`` option (category ``mode``: Claude
#: ``mode``, codex-acp 2.6 ``mode``, codex-acp 0.16 ``mode``; Gemini 0.61 sends ``modes``
#: only); ``core.modeswitch.approval_options`` also finds options by their words.
APPROVAL_OPTION_IDS = frozenset({
    "approvalMode", "approval_mode", "approval-mode", "approval_policy", "approvalPolicy", "sandbox_mode",
    "sandboxMode", "permissionMode", "permission_mode", "permissions", "autoApprove", "auto_approve", "yolo",
})
#: Key of the merged tool call listing what the facts cannot fully show (read by ``Facts``).
CUT_KEY = "_policyd_cut"
#: Profile names applied to a call, for the decision log.
APPLIED_KEY = "_policyd_profiles"
#: Changes (map keys) read from one ``rawInput.changes``.
MAX_CHANGES = 256

_CWD_TEXT = re.compile(r"^\[current working directory (/[^\]]*)\]")
_PROMPT_TITLE = "Processing URLs and instructions from prompt:"
_URL = re.compile(r"""\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>`]+""")
_TRAILING = ".,;:!?)]}"


def normalise(call: dict[str, Any]) -> dict[str, Any]:
    """``call`` (a merged ToolCall, modified in place and returned) with every matching
    profile applied."""
    applied: list[str] = []
    raw = call.get("rawInput")
    raw_input: dict[str, Any] = dict(raw) if isinstance(raw, Mapping) else {}
    if _changes_keys(call, raw_input):
        applied.append("changes-keys")
    if call.get("kind") == "execute" and not raw_input.get("cwd"):
        cwd = _content_cwd(call.get("content"))
        if cwd:
            raw_input["cwd"] = cwd
            applied.append("content-cwd")
    if call.get("kind") == "fetch" and not any(isinstance(raw_input.get(k), str) for k in ("url", "uri", "href")):
        title = call.get("title")
        if isinstance(title, str) and title.startswith(_PROMPT_TITLE):
            found = list(dict.fromkeys(u.rstrip(_TRAILING) for u in _URL.findall(title)))
            if found:
                raw_input["url"] = found[0]
                raw_input["urls"] = found
                applied.append("prompt-urls")
                if len(found) > 1:
                    call[CUT_KEY] = [f"fetch prompt names {len(found)} URLs: tool.url holds the first only"]
    if applied:
        if raw_input:
            call["rawInput"] = raw_input
        call[APPLIED_KEY] = applied
    return call


def _changes_keys(call: dict[str, Any], raw_input: Mapping[str, Any]) -> bool:
    changes = raw_input.get("changes")
    if not isinstance(changes, Mapping) or not changes:
        return False
    paths: list[str] = []
    for key, change in list(changes.items())[:MAX_CHANGES]:
        if isinstance(key, str) and key:
            paths.append(key)
        if isinstance(change, Mapping) and isinstance(change.get("move_path"), str):
            paths.append(change["move_path"])
    if len(changes) > MAX_CHANGES:
        call[CUT_KEY] = [f"rawInput.changes: {len(changes)} files (limit {MAX_CHANGES})"]
    locations = call.get("locations")
    existing = [loc for loc in locations if isinstance(loc, Mapping)] if isinstance(locations, list) else []
    known = {loc.get("path") for loc in existing}
    added = [{"path": p} for p in dict.fromkeys(paths) if p not in known]
    if not added:
        return False
    call["locations"] = [*existing, *added]
    return True


def _content_cwd(content: object) -> str:
    if not isinstance(content, list):
        return ""
    for item in content[:8]:
        inner = item.get("content") if isinstance(item, Mapping) else None
        text = inner.get("text") if isinstance(inner, Mapping) else None
        if isinstance(text, str):
            m = _CWD_TEXT.match(text)
            if m:
                return m.group(1)
    return ""
