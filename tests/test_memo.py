"""The catalogue's memo of analysed command texts (``policyd.core.shell.memo``): a command
seen before is not parsed again, and the memo never changes a fact or a decision."""

from __future__ import annotations

import threading

from policyd.core.facts import Facts
from policyd.core.model import PermissionOption, PermissionQuery, SessionInfo
from policyd.core.shell import catalogue as shell_catalogue
from policyd.core.shell.memo import MAX_TEXT_CHARS, Memo

OPTIONS = (PermissionOption("a", "Allow", "allow_once"),)


def facts(command: str, cwd: str = "/w/p", home: str = "/home/u",
          catalogue: shell_catalogue.Catalogue | None = None) -> Facts:
    call = {"toolCallId": "t", "kind": "execute", "title": command, "rawInput": {"command": command}}
    return Facts(PermissionQuery(session=SessionInfo("s", cwd), tool_call=call, options=OPTIONS, home=home,
                                 now_s=0.0), catalogue=catalogue or shell_catalogue.default())


def test_a_repeated_command_is_analysed_once_and_gives_the_same_facts() -> None:
    cat = shell_catalogue.Catalogue(base=shell_catalogue.default())
    first = facts("cat src/a.py && rm -rf build", catalogue=cat)
    act1 = first.activation()
    misses = cat.memo.misses
    again = facts("cat src/a.py && rm -rf build", catalogue=cat)
    assert again.activation() == act1
    assert again.analysis is first.analysis  # shared, not rebuilt
    assert cat.memo.misses == misses and cat.memo.hits >= 2


def test_the_directory_and_home_are_part_of_the_key() -> None:
    cat = shell_catalogue.Catalogue(base=shell_catalogue.default())
    assert facts("rm -rf build ~/x", "/w/one", catalogue=cat).write_paths == ("/w/one/build", "/home/u/x")
    assert facts("rm -rf build ~/x", "/w/two", catalogue=cat).write_paths == ("/w/two/build", "/home/u/x")
    assert facts("rm -rf build ~/x", "/w/two", "/root", catalogue=cat).write_paths == ("/w/two/build", "/root/x")


def test_adding_programs_forgets_what_was_judged_without_them() -> None:
    cat = shell_catalogue.Catalogue(base=shell_catalogue.default())
    assert "unknown" in facts("frobnicate --all", catalogue=cat).effects
    programs, problems = shell_catalogue.parse(
        'schema = 1\n[[program]]\nnames = ["frobnicate"]\nsummary = "x"\nsource = "test"\n'
        'effects = ["read"]\nsyntax = "gnu"\n[[program.options]]\nnames = ["--all"]\n', "t.catalogue.toml")
    assert not problems, problems
    cat.add(programs)
    assert "unknown" not in facts("frobnicate --all", catalogue=cat).effects


def test_the_memo_is_bounded_by_characters_and_skips_long_texts() -> None:
    memo = Memo(budget_chars=100)
    for i in range(50):
        memo.get_or_compute(f"k{i}", 10, lambda i=i: i)
    assert len(memo) == 10  # 10 x 10 characters
    assert memo.get_or_compute("k49", 10, lambda: -1) == 49  # the newest are kept
    assert memo.get_or_compute("k0", 10, lambda: -1) == -1  # the oldest went first
    calls = []
    for _ in range(2):
        memo.get_or_compute("long", MAX_TEXT_CHARS + 1, lambda: calls.append(1))
    assert len(calls) == 2 and "long" not in memo._entries


def test_disabled_computes_every_time() -> None:
    memo = Memo()
    memo.enabled = False
    calls: list[int] = []
    for _ in range(3):
        memo.get_or_compute("k", 1, lambda: calls.append(1))
    assert len(calls) == 3 and len(memo) == 0


def test_threads_share_one_memo_safely() -> None:
    memo = Memo(budget_chars=64)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(2000):
                key = f"{(i * 7 + n) % 97}"
                assert memo.get_or_compute(key, 4, lambda key=key: key * 2) == key * 2
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(memo) <= 16
