"""Policy files -> PolicySet (all or nothing) and decisions (pure core)."""

from __future__ import annotations

from pathlib import Path

import pytest

from policyd.core.decide import decide
from policyd.core.facts import Facts
from policyd.core.model import Decision
from policyd.core.policy import PolicyError, PolicySet, build_set, example_query

HEADER = '[policy]\nname = "t"\ndefault = "ask"\n'


def rule(rid: str, when: str, decision: str = "deny", extra: str = "") -> str:
    return f"\n[[rule]]\nid = {rid!r}\nwhen = '{when}'\ndecision = {decision!r}\nreason = 'r-{rid}'\n{extra}"


def load(*texts: str) -> PolicySet:
    return build_set([(f"/p/{i}.toml", t) for i, t in enumerate(texts)])


def errors_of(*texts: str) -> list[str]:
    with pytest.raises(PolicyError) as info:
        load(*texts)
    return [str(e) for e in info.value.errors]


def decide_on(policy: PolicySet, **example: object) -> Decision:
    return decide(policy, Facts(example_query(example))).decision


def test_invalid_toml_names_file_and_line() -> None:
    """A TOML syntax error rejects the set with file:line."""
    (err,) = errors_of(HEADER + "\n[[rule]\nid = 'x'\n")
    assert err.startswith("/p/0.toml:5:") and "invalid TOML" in err


def test_duplicate_toml_keys_are_errors() -> None:
    """tomllib rejects a key defined twice."""
    (err,) = errors_of(HEADER + rule("a", "true") + "decision = 'allow'\n")
    assert "invalid TOML" in err


def test_duplicate_rule_ids_across_files() -> None:
    """Rule ids are unique across the whole set; the error names both places."""
    (err,) = errors_of(HEADER + rule("same", "true"), HEADER + rule("same", "false"))
    assert "/p/1.toml:5: rule 'same': duplicate rule id (first defined at /p/0.toml:5)" == err


def test_cel_syntax_error_names_rule_and_line() -> None:
    """A CEL syntax error gives file:line of the when key, the rule id and the CEL message."""
    (err,) = errors_of(HEADER + rule("broken", 'tool.kind == '))
    assert err.startswith("/p/0.toml:7: rule 'broken': CEL syntax error")


def test_non_bool_rule_rejected_at_load() -> None:
    """A rule whose when yields a non-bool value is rejected."""
    (err,) = errors_of(HEADER + rule("num", "1 + 1"))
    assert "must yield a bool, got int" in err


def test_unknown_keys_and_bad_values() -> None:
    """Typos in keys, unknown kinds and decisions are errors, all reported together."""
    errs = errors_of(HEADER + rule("a", "true", "maybe") + rule("b", "true", extra="kinds = ['exec']\n")
                     + rule("c", "true", extra="decison = 'deny'\n"))
    assert 3 == len(errs)
    assert "decision must be one of" in errs[0]
    assert "unknown kinds ['exec']" in errs[1]
    assert "unknown key 'decison'" in errs[2]


def test_failing_examples_reject_the_set() -> None:
    """Inline examples are checked at load: a wrong match and a wrong not_match both fail."""
    extra = "examples.match = [{ kind = 'read' }]\nexamples.not_match = [{ kind = 'edit' }]\n"
    errs = errors_of(HEADER + rule("ex", 'tool.kind == "edit"', extra=extra))
    assert 2 == len(errs)
    assert "should match but does not" in errs[0] and "should not match but does" in errs[1]


def test_example_raw_input_that_is_not_a_table_is_a_load_error() -> None:
    """``raw_input = 1`` in an example names the rule (it escaped as TypeError)."""
    for value in ("1", "[1]", '"x"'):
        errs = errors_of(HEADER + rule("ex", "true", extra=f"examples.match = [{{ raw_input = {value} }}]\n"))
        assert 1 == len(errs) and "rule 'ex'" in errs[0] and "'raw_input' must be a table" in errs[0]


def test_one_bad_file_rejects_everything() -> None:
    """Loading is all-or-nothing: a good file next to a bad one is not loaded alone."""
    with pytest.raises(PolicyError):
        load(HEADER + rule("good", "true", "allow"), "not toml [")


def test_empty_set_is_an_error() -> None:
    """No files is not a policy."""
    with pytest.raises(PolicyError):
        build_set([])


def test_combining_deny_beats_ask_beats_allow() -> None:
    """deny > ask > allow across files; no match -> the strictest default."""
    p = load(HEADER + rule("allow-all", "true", "allow"), HEADER + rule("ask-edit", 'tool.kind == "edit"', "ask")
             + rule("deny-env", 'tool.paths.exists(p, glob(p, "**/.env"))'))
    assert Decision.ALLOW == decide_on(p, kind="read", paths=["/w/a"])
    assert Decision.ASK == decide_on(p, kind="edit", paths=["/w/a"])
    assert Decision.DENY == decide_on(p, kind="edit", paths=["/w/.env"])
    strict = load('[policy]\ndefault = "allow"\n' + rule("never", "false"), '[policy]\ndefault = "deny"\n')
    assert Decision.DENY == decide_on(strict, kind="read")


def test_kinds_prefilter() -> None:
    """A rule only applies to its kinds."""
    p = load(HEADER + rule("x", "true", "allow", extra="kinds = ['read']\n"))
    assert Decision.ALLOW == decide_on(p, kind="read")
    assert Decision.ASK == decide_on(p, kind="edit")


def test_evaluation_errors_fail_toward_safety() -> None:
    """An erroring deny rule denies, an ask rule asks, an allow rule does not match."""
    boom = 'tool.raw_input.missing == "x"'
    base = rule("allow-all", "true", "allow")
    assert Decision.DENY == decide_on(load(HEADER + base + rule("d", boom, "deny")), kind="read")
    assert Decision.ASK == decide_on(load(HEADER + base + rule("a", boom, "ask")), kind="read")
    verdict = decide(load(HEADER + rule("al", boom, "allow")), Facts(example_query({"kind": "read"})))
    assert (Decision.ASK, True) == (verdict.decision, verdict.defaulted)
    assert verdict.errors and verdict.errors[0].startswith("al: ")


def test_hash_changes_with_content() -> None:
    """The set hash names the content in force."""
    a = load(HEADER + rule("x", "true", "allow"))
    b = load(HEADER + rule("x", "false", "allow"))
    assert a.hash != b.hash and a.hash == load(HEADER + rule("x", "true", "allow")).hash


def test_over_deep_rule_rejected() -> None:
    """A rule nested deeper than cel-python can take is rejected at load, not at run time."""
    deep = "(" * 60 + "true" + ")" * 60
    (err,) = errors_of(HEADER + rule("deep", deep))
    assert "nests 60 levels" in err


@pytest.mark.parametrize(
    ("when", "example", "expected"),
    [
        ('"/a/b".within("/a")', {"kind": "read"}, True),
        ('within("/a/b2", "/a/b")', {"kind": "read"}, False),
        ('tool.paths.all(p, p.within(session.roots))', {"kind": "read", "paths": ["src/x"]}, True),
        ('tool.paths.exists(p, glob(p, ["**/.env", "**/.ssh/**"]))', {"kind": "read", "paths": ["~/.ssh/k"]}, True),
        ('basename("/a/b.txt") == "b.txt" && dirname("/a/b.txt") == "/a"', {"kind": "read"}, True),
        ('"GIT".lowerAscii() == "git"', {"kind": "read"}, True),
        ('tool.url_parts.host == "example.com"', {"kind": "fetch", "url": "https://EXAMPLE.com/x"}, True),
        ('"allow_once" in options', {"kind": "read"}, True),
        ('now > timestamp("2020-01-01T00:00:00Z")', {"kind": "read"}, False),
    ],
)
def test_cel_helpers(when: str, example: dict[str, object], expected: bool) -> None:
    """The documented helpers and variables behave as the README says."""
    p = load(HEADER + rule("h", when, "allow"))
    assert expected == (decide_on(p, **example) is Decision.ALLOW)


def test_input_beyond_limits_never_allows() -> None:
    """A request cut to fit the evaluation limits (a list longer than MAX_LIST_ITEMS, a huge
    string) is never allowed: the rules did not see all of it."""
    from policyd.core import cel

    p = load(HEADER + rule("in-roots", "tool.paths.all(p, p.within(session.roots))", "allow"))
    few = [f"/workspace/project/f{i}" for i in range(10)]
    many = [f"/workspace/project/f{i}" for i in range(cel.MAX_LIST_ITEMS)] + ["/home/user/.ssh/id_rsa"]
    assert Decision.ALLOW == decide_on(p, kind="read", paths=few)
    verdict = decide(p, Facts(example_query({"kind": "read", "paths": many})))
    assert Decision.ASK == verdict.decision
    assert any("exceeds evaluation limits" in e for e in verdict.errors)
    no_rm = load(HEADER + rule("no-rm", '!tool.command.contains("rm -rf")', "allow"))
    hidden = "echo " + "x" * cel.MAX_STRING_CHARS + "; rm -rf ~"
    assert Decision.ALLOW == decide_on(no_rm, kind="execute", command="echo hi")
    assert Decision.ASK == decide_on(no_rm, kind="execute", command=hidden)


def test_examples_run_once_per_content_and_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """loader.build_checked runs inline examples for content it has not validated, skips them
    for content validated before (same text, same code), and never caches a failing set."""
    from policyd import loader
    from policyd.core import policy as core_policy

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    calls: list[str] = []
    real = core_policy._check_examples

    def counting(rule: object, examples: object, catalogue: object = None) -> list[object]:
        calls.append(getattr(rule, "id", ""))
        return real(rule, examples, catalogue)  # type: ignore[arg-type]

    monkeypatch.setattr(core_policy, "_check_examples", counting)
    example = "examples.match = [{ kind = 'read' }]\n"
    good = [("/p/a.toml", HEADER + rule("ex", 'tool.kind == "read"', "allow", extra=example))]
    loader.build_checked(good)
    assert ["ex"] == calls
    loader.build_checked(good)
    assert ["ex"] == calls  # validated before: not run again
    bad = [("/p/a.toml", HEADER + rule("ex", 'tool.kind == "edit"', "allow", extra=example))]
    for _ in range(2):
        with pytest.raises(PolicyError):
            loader.build_checked(bad)
    assert ["ex", "ex", "ex"] == calls  # a failing set is checked every time


def test_has_macro_yields_a_usable_bool() -> None:
    """`has(tool.raw_input.description)` (a plain bool in cel-python) is a valid rule."""
    p = load(HEADER + rule("desc", "has(tool.raw_input.description)", "allow"))
    assert Decision.ALLOW == decide_on(p, kind="execute", raw_input={"command": "ls", "description": "list"})
    assert Decision.ASK == decide_on(p, kind="execute", raw_input={"command": "ls"})


def test_rules_by_kind_are_computed_per_set_never_shared_by_a_copy() -> None:
    """``PolicySet.for_kind`` caches per set; a copy made with ``dataclasses.replace`` (as the
    benchmarks' cel-python reference set is) computes its own."""
    import dataclasses

    from policyd.core.policy import build_set

    text = ('[policy]\nname = "k"\ndefault = "ask"\n\n[[rule]]\nid = "r"\nkinds = ["read"]\n'
            "when = 'size(tool.paths) > 0'"
            '\ndecision = "deny"\nreason = "x"\n')
    ps = build_set([("k.toml", text)], check_examples=False)
    assert ([r.id for r in ps.for_kind("read")[0]], ps.for_kind("read")[1]) == (["r"], frozenset({"paths"}))
    assert ps.for_kind("edit") == ((), frozenset())
    copy = dataclasses.replace(ps, rules=())
    assert copy.for_kind("read") == ((), frozenset())
    assert [r.id for r in ps.for_kind("read")[0]] == ["r"]
