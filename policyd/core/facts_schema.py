"""The facts schema: every CEL variable and field a rule may use, as data.

Derived from :mod:`policyd.core.facts` (``Facts.activation``, ``tool_field``,
``_command_map``) and the README's "CEL variables" table; the static checker
(:mod:`policyd.core.celc.check`) refuses a rule naming anything else.

Format: a record is a ``dict`` of field -> type; a list is a one-element ``list`` holding the
element type; scalars are ``"string"``, ``"int"``, ``"bool"``, ``"timestamp"``; ``"map"`` is
an open map (any keys: ``tool.raw_input`` as the agent sent it).
"""

from __future__ import annotations

from typing import Any

COMMAND: dict[str, Any] = {
    "name": "string",
    "args": ["string"],
    "argv": ["string"],
    "flags": ["string"],
    "subcommand": "string",
    "global_args": ["string"],
    "positionals": ["string"],
    "paths": ["string"],
    "expansions": ["string"],
    "wrapper": "string",
    "depth": "int",
    "dynamic": "bool",
    "text": "string",
}

FACTS_SCHEMA: dict[str, Any] = {
    "tool": {
        "id": "string",
        "kind": "string",
        "sent_kind": "string",
        "title": "string",
        "name": "string",
        "status": "string",
        "raw_input": "map",
        "paths": ["string"],
        "real_paths": ["string"],
        "write_paths": ["string"],
        "command": "string",
        "commands": [COMMAND],
        "redirects": [{"op": "string", "target": "string", "dynamic": "bool"}],
        "assignments": [{"name": "string", "value": "string"}],
        "shell": {"parse_ok": "bool", "dynamic": "bool", "from_title": "bool", "errors": ["string"]},
        "url": "string",
        "url_parts": {
            "valid": "bool",
            "scheme": "string",
            "host": "string",
            "port": "int",
            "path": "string",
            "query": "string",
            "ip": "string",
            "loopback": "bool",
            "private": "bool",
            "link_local": "bool",
        },
    },
    "session": {"id": "string", "cwd": "string", "roots": ["string"], "real_roots": ["string"], "sandboxed": "bool"},
    "agent": {"name": "string", "version": "string"},
    "client": {"name": "string", "version": "string"},
    "options": ["string"],
    "now": "timestamp",
}
