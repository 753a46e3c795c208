"""``policyd init [DIR] [--force]``: a starter policy directory (default ``.policyd``).

It holds the shipped policies (``baseline.toml``, ``ci.toml``, ``session.toml``, copied from
the package byte for byte, so the same files reached again through a search path load once),
a ``team.toml`` for your own rules, and a README saying how to use and change them. Existing
files are never overwritten without ``--force`` (exit 2 naming them).
"""

from __future__ import annotations

import sys
from pathlib import Path

from policyd.cli.common import USAGE_ERROR
from policyd.loader import embedded_sources

DEFAULT_DIR = ".policyd"

TEAM = '''\
# Your own rules. They combine with the shipped files deny > ask > allow: a deny or ask here
# always wins; an allow here only decides what no deny or ask of any file matched.
# Try a rule:   policyd explain --policy {dir} --command 'make test'
# Check it:     policyd check --policy {dir}     (runs every rule's examples)
[policy]
name = "team"
description = "Our own additions to the shipped baseline"
default = "ask"

# A deny is the safe first rule to write: nothing can loosen it.
[[rule]]
id = "team-no-prod-config"
description = "Production configuration is changed by people, not by agents"
kinds = ["edit", "delete", "move"]
when = 'tool.paths.exists(p, glob(p, "**/deploy/prod/**"))'
decision = "deny"
reason = "production configuration is off limits to agents"
examples.match = [{{ kind = "edit", paths = ["/workspace/project/deploy/prod/values.yaml"] }}]
examples.not_match = [{{ kind = "edit", paths = ["/workspace/project/deploy/staging/values.yaml"] }}]
'''

README = '''\
# Policy for agents behind policyd

- `baseline.toml`: the organisation-safe baseline (credentials, persistence, destructive
  commands, exfiltration). Keep it: without it `policyd check` warns.
- `ci.toml`: allows for headless CI (workspace reads, edits, builds, tests).
- `session.toml`: the `[modes]` table that keeps Claude and Codex in modes where they ask.
- `team.toml`: your rules.

Use: `policyd proxy --policy {dir} -- AGENT...`; check: `policyd check --policy {dir}`;
why a request was decided: `policyd explain --policy {dir} --command 'SHELL TEXT'`.
The shipped files are copies of policyd's own: when you upgrade policyd, compare them with
`policyd init --force NEWDIR`.
'''


def run(directory: str | None, force: bool) -> int:
    """Write the starter files; 0, or 2 when a file exists (without ``force``) or cannot be
    written."""
    target = Path(directory or DEFAULT_DIR)
    files = {Path(name).name: text for name, text in embedded_sources()}
    files["team.toml"] = TEAM.format(dir=target)
    files["README.md"] = README.format(dir=target)
    existing = sorted(name for name in files if (target / name).exists())
    if existing and not force:
        print(f"policyd init: {target} already holds {', '.join(existing)} (--force overwrites)", file=sys.stderr)
        return USAGE_ERROR
    try:
        target.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (target / name).write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"policyd init: {exc.filename}: {exc.strerror}", file=sys.stderr)
        return USAGE_ERROR
    print(f"wrote {', '.join(sorted(files))} to {target}/")
    print(f"next: policyd check --policy {target}   then   policyd proxy --policy {target} -- AGENT...")
    return 0
