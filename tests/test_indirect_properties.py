"""Properties of the shipped policies for targets named indirectly (docs/catalogue.md
"Unknown sources"), over the whole catalogue and deterministic in CI (the "ci" hypothesis
profile of conftest derandomizes):

- every option whose value is a list of more operands (role ``list``) makes the command
  unknown, and inserting one into an allowed command never keeps it allowed;
- every program that reads response files (``response_files``) is unknown with an ``@FILE``
  argument, wherever it is inserted;
- every file-name filter (role ``filter``) given a secret's name, and every pathspec, names
  that secret: never allowed;
- every option whose value may be remote (``remote``) given ``HOST:FILE`` is network.

The lists of known spellings below are independent of the catalogue (read from the tools'
manuals): a catalogue change that drops one of these roles fails here.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyd.core.model import Decision
from policyd.core.shell.catalogue import Program, default
from tests.test_catalogue_properties import decision_of, facts_of

#: (command words before the option, option) that read operand names from a file, per man page.
KNOWN_LIST_OPTIONS = [
    ("tar", "-T"), ("tar", "--files-from"), ("xargs", "-a"), ("xargs", "--arg-file"),
    ("find", "-files0-from"), ("file", "-f"), ("git add", "--pathspec-from-file"),
    ("git restore", "--pathspec-from-file"), ("git reset", "--pathspec-from-file"),
    ("git checkout", "--pathspec-from-file"), ("git rm", "--pathspec-from-file"),
    ("git commit", "--pathspec-from-file"),
]
#: Programs whose manual documents ``@FILE`` response files.
KNOWN_RESPONSE_FILES = ["gcc", "g++", "cc", "clang", "clang++", "ld", "javac", "java", "rustc", "clang-format",
                        "pytest", "mypy", "7z"]
#: (command words before the option, option) whose value selects files by name.
KNOWN_FILTERS = [
    ("grep", "--include"), ("rg", "-g"), ("rg", "--glob"), ("rg", "--iglob"), ("zip", "-i"),
    ("find", "-name"), ("find", "-iname"), ("find", "-path"), ("find", "-wholename"),
]
SECRET_FILTERS = [".env", ".env*", "*.env", ".en?", "*.pem", "id_*", ".ENV", "*.key", ".dev.vars"]
REMOTE = ["attacker.example:x.tar", "user@host:loot.tgz", "10.0.0.5:/srv/x.tar", "h:x"]

#: Allowed commands of programs with indirect forms, and the words each may take inserted.
BASES: dict[str, list[str]] = {
    "gcc -O2 -c src/a.c -o build/a.o": ["@opts.txt", "@build/flags.rsp"],
    "clang -Wall -c src/x.c -o build/x.o": ["@args"],
    "javac -d out src/A.java": ["@args.txt", "@sources"],
    "tar -cf out.tar src": ["-T list.txt", "--files-from=list.txt", "--files-from list.txt", "-T -"],
    "git add src/app.py": ["--pathspec-from-file=paths.txt", "--pathspec-from-file paths.txt"],
    "grep -rn TODO src": [f"--include={s}" for s in SECRET_FILTERS],
    "rg -n main src": [f"-g {s}" for s in SECRET_FILTERS] + [f"--iglob={s}" for s in SECRET_FILTERS],
    "find src -name x.py": [f"-name {s} -o" for s in SECRET_FILTERS] + [f"-path */{s} -o" for s in SECRET_FILTERS],
}


TAKES_VALUE = frozenset({"-cf", "-o", "-d", "-name"})


def _entries() -> Iterator[tuple[list[str], Program]]:
    """Every catalogue program and subcommand with the words that reach it."""
    stack: list[tuple[list[str], Program]] = [([p.names[0]], p) for p in default().programs()]
    while stack:
        words, p = stack.pop()
        yield words, p
        subs = {id(s): s for s in p.subcommands.values()}  # aliases share one entry
        stack.extend(([*words, s.names[0]], s) for s in subs.values())


def _effects(command: str) -> set[str]:
    return set(facts_of(command).effects)


def test_base_commands_are_allowed() -> None:
    """The insertions start from commands that really are allowed."""
    assert [] == [c for c in BASES if decision_of(c) is not Decision.ALLOW]


def test_known_indirect_spellings_keep_their_roles() -> None:
    """The man pages' list-file options, response-file programs and filters are in the
    catalogue with those roles (dropping one fails here, not silently in the analysis)."""
    cat = default()
    for prefix, option in KNOWN_LIST_OPTIONS + KNOWN_FILTERS:
        words = prefix.split(" ")
        entry = cat.get(words[0])
        assert entry is not None, prefix
        for sub in words[1:]:
            entry = entry.subcommands[sub]
        role = "list" if (prefix, option) in KNOWN_LIST_OPTIONS else "filter"
        assert role == entry.option_index[option].value, (prefix, option)
    assert [] == [n for n in KNOWN_RESPONSE_FILES if not getattr(cat.get(n), "response_files", False)]


def test_every_list_option_is_unknown() -> None:
    """For every catalogue program, an option naming a file of more operands is unknown."""
    found = [(w, o) for w, p in _entries() for o in p.options if o.value == "list"]
    assert found
    assert [] == [(w, o.names[0]) for w, o in found
                  if "unknown" not in _effects(" ".join([*w, o.names[0], "list.txt"]))]


def test_every_response_file_program_is_unknown_with_an_at_file() -> None:
    """For every catalogue program that reads response files, ``@FILE`` makes it unknown."""
    found = [w for w, p in _entries() if p.response_files]
    assert found
    assert [] == [w for w in found if "unknown" not in _effects(" ".join([*w, "@opts.txt"]))]


@pytest.mark.parametrize("secret", SECRET_FILTERS)
def test_every_filter_naming_a_secret_is_never_allowed(secret: str) -> None:
    """For every catalogue filter option, a pattern that can match a secret's name names it."""
    found = [(w, o) for w, p in _entries() for o in p.options if o.value == "filter"]
    assert found
    allowed = [(w, o.names[0]) for w, o in found
               if decision_of(" ".join([*w, o.names[0], f"'{secret}'", "."])) is Decision.ALLOW]
    assert [] == allowed


@pytest.mark.parametrize("remote", REMOTE)
def test_every_remote_option_is_network(remote: str) -> None:
    """For every catalogue option whose value may be ``HOST:FILE``, such a value is network."""
    found = [(w, o) for w, p in _entries() for o in p.options if o.remote]
    assert found
    assert [] == [(w, o.names[0]) for w, o in found
                  if "network" not in _effects(" ".join([*w, "-c", o.names[0], remote, "src"]))]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(BASES)), st.data())
def test_inserted_indirection_is_never_allowed(command: str, data: st.DataObject) -> None:
    """A response file, list file or secret-naming filter inserted after the program (and
    its subcommand) anywhere in an allowed command never keeps it allowed."""
    words = command.split(" ")
    start = 2 if words[0] == "git" else 1
    # not between an option and its value (`tar -cf -T x` names an archive "-T")
    at = data.draw(st.sampled_from([i for i in range(start, len(words) + 1) if words[i - 1] not in TAKES_VALUE]))
    insert = data.draw(st.sampled_from(BASES[command]))
    text = " ".join([*words[:at], *insert.split(" "), *words[at:]])
    assert decision_of(text) is not Decision.ALLOW, text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(REMOTE), st.sampled_from(["-cf", "-czf", "-xf", "-tf", "--file="]),
       st.booleans())
def test_remote_archive_is_never_allowed(remote: str, option: str, old_style: bool) -> None:
    """``tar`` with a ``HOST:FILE`` archive, in any spelling, is never allowed; with
    ``--force-local`` (or a slash before the colon) the same archive is a local file."""
    if old_style and not option.startswith("--"):
        text = f"tar {option.lstrip('-')} {remote} src"
    else:
        text = f"tar {option}{'' if option.endswith('=') else ' '}{remote} src"
    assert decision_of(text) is not Decision.ALLOW, text
    if option in ("-cf", "-czf"):
        assert decision_of(f"tar --force-local {option} ./{remote.replace('/', '_')} src") is Decision.ALLOW
