"""Scripts for the fake model servers and the conversation reading that picks the next step.

A :class:`Script` is a list of :class:`Step` (each: a text the model says, then one tool
call) and a final text. The server is stateless: for each request it finds the latest user
text carrying ``[[script:NAME]]`` and counts the tool results that follow it; that count is
the index of the step to answer (past the last step: the final text, no tool call).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

MARKER = re.compile(r"\[\[script:([A-Za-z0-9_.-]+)\]\]")


@dataclass(frozen=True)
class Step:
    """One scripted model turn: ``say`` then a call of function tool ``tool`` with the JSON
    arguments ``args``."""

    say: str
    tool: str
    args: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Script:
    steps: tuple[Step, ...]
    final: str = "Done."


def marker(name: str) -> str:
    """The text to put in a prompt to run script ``name``."""
    return f"[[script:{name}]]"


def pick(events: Iterable[tuple[str, str]], scripts: Mapping[str, Script]) -> tuple[str, int] | None:
    """``(script name, step index)`` from a conversation flattened to events.

    ``events`` are ``("text", user_text)`` and ``("result", "")`` (one per tool result) in
    conversation order. None when no user text names a known script.
    """
    name: str | None = None
    results = 0
    for kind, text in events:
        if kind == "text":
            found = [m for m in MARKER.findall(text) if m in scripts]
            if found:
                name, results = found[-1], 0
        elif kind == "result" and name is not None:
            results += 1
    return None if name is None else (name, results)


def answer_for(events: Iterable[tuple[str, str]], scripts: Mapping[str, Script]) -> tuple[str, Step | None]:
    """The text to say and the step to call (None: end the turn) for this conversation."""
    picked = pick(events, scripts)
    if picked is None:
        return "OK.", None
    name, index = picked
    script = scripts[name]
    if index < len(script.steps):
        step = script.steps[index]
        return step.say, step
    return script.final, None
