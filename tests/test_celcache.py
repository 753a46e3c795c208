"""Start-up caches (policyd/celcache.py): parsed rules and the checked catalogue, used only
from a directory this user owns and nobody else may write; a bad cache is ignored."""

from __future__ import annotations

import json
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

from policyd import celcache

ROOT = Path(__file__).resolve().parent.parent
PROBE = (
    "import sys; from policyd import loader; "
    f"p = loader.load([], [{str(ROOT / 'policies')!r}]); "
    "print(len(p.policy.rules), 'celpy' in sys.modules)"
)
#: Rules of the shipped policy files (each starts with a ``[[rule]]`` header).
SHIPPED_RULES = sum(line == "[[rule]]" for f in (ROOT / "policies").glob("*.toml")
                    for line in f.read_text().splitlines())


def run_probe(cache: Path) -> tuple[int, bool]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    rules, celpy = out.stdout.split()
    return int(rules), celpy == "True"


def test_second_load_uses_cached_trees_without_cel_python(tmp_path: Path) -> None:
    first = run_probe(tmp_path)
    second = run_probe(tmp_path)
    assert (SHIPPED_RULES, True) == first  # parsed: cel-python's parser imported and built
    assert (SHIPPED_RULES, False) == second  # every rule from the cache: cel-python not even imported
    assert not list((tmp_path / "policyd").glob("cel-lark-*.cache"))  # no pickle: see the next test
    assert list((tmp_path / "policyd" / "parsed").glob("*.json"))


def test_a_planted_grammar_cache_is_never_loaded(tmp_path: Path) -> None:
    """Lark's grammar cache is a pickle Lark loads before checking it: a file planted where
    policyd once kept it (``cel-lark-<versions>.cache``) must never run when rules are parsed
    (red team rttrust F8: it ran code in policyd, outside the sandbox)."""
    from policyd.celcache import dist_version

    marker = tmp_path / "ran"
    (tmp_path / "policyd").mkdir(mode=0o700)
    versions = f"{dist_version('cel-python')}-{dist_version('lark')}"
    planted = tmp_path / "policyd" / f"cel-lark-{re.sub(r'[^0-9A-Za-z.-]', '_', versions)}.cache"

    class Run:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (os.system, (f"touch {marker}",))

    planted.write_bytes(b"0\n" + pickle.dumps(Run()))
    planted.chmod(0o600)
    assert (SHIPPED_RULES, True) == run_probe(tmp_path)  # parsed: the parser was built
    assert not marker.exists()


def test_corrupt_tree_cache_is_parsed_again(tmp_path: Path) -> None:
    run_probe(tmp_path)
    for garbage in ({"d": "garbage"}, "{not json", '{"d": "x"}'):
        for f in (tmp_path / "policyd" / "parsed").glob("*.json"):
            data = json.loads(f.read_text())
            f.write_text(json.dumps({k: garbage for k in data}))
        assert (SHIPPED_RULES, True) == run_probe(tmp_path)


def test_cache_dir_writable_by_others_is_not_used(tmp_path: Path) -> None:
    d = tmp_path / "shared"
    d.mkdir(mode=0o777)
    d.chmod(0o777)
    assert celcache.secure_dir(d) is None
    celcache.save_trees("k", {"true": [1]}, d)
    assert not (d / "parsed").exists() or not list((d / "parsed").glob("*.json"))
    assert {} == celcache.load_trees("k", d)


def test_private_cache_dir_round_trip(tmp_path: Path) -> None:
    d = tmp_path / "mine"
    assert celcache.secure_dir(d) == d
    assert 0o700 == d.stat().st_mode & 0o777
    celcache.save_trees("k", {"true": ["BOOL_LIT", "true", 1, 1]}, d)
    stored = celcache.load_trees("k", d)
    assert {"true": '["BOOL_LIT","true",1,1]'} == stored  # each tree kept as JSON text
    assert ["BOOL_LIT", "true", 1, 1] == json.loads(stored["true"])


# ----------------------------------------------------------------------------- shipped catalogue


def _eager() -> dict[str, object]:
    from policyd.catalogue import shipped_files
    from policyd.core.shell import catalogue

    return {p.path: p for p in catalogue.load(shipped_files(), unique=True).programs()}


def test_cached_catalogue_builds_the_same_entries_as_parsing(tmp_path: Path) -> None:
    """The first load parses the TOML and writes the cache; the second reads the cache and
    builds each entry on first lookup — equal, field for field, to the parsed entries."""
    first = celcache.shipped_catalogue(tmp_path)
    files = list((tmp_path / "catalogue").glob("*.json"))
    assert len(files) == 1 and files[0].stat().st_mode & 0o777 == 0o600
    second = celcache.shipped_catalogue(tmp_path)
    assert second._deferred  # from the cache: nothing built yet
    git = second.get("GIT")  # case-insensitive, built on demand
    assert git is not None and git == first.get("git")
    assert {p.path: p for p in second.programs()} == _eager() == {p.path: p for p in first.programs()}
    assert not second._deferred


def test_corrupt_or_foreign_catalogue_cache_is_parsed_again(tmp_path: Path) -> None:
    celcache.shipped_catalogue(tmp_path)
    (cache,) = (tmp_path / "catalogue").glob("*.json")
    for text in ("{not json", json.dumps([["catalogue/x.toml", {"program": [{"names": 7}]}]])):
        cache.write_text(text)
        cat = celcache.shipped_catalogue(tmp_path)
        assert {p.path: p for p in cat.programs()} == _eager()
    cache.write_text(json.dumps([["catalogue/x.toml", {"program": [{"names": ["git"], "effects": ["nope"]}]}]]))
    cache.chmod(0o666)  # writable by others: never trusted, parsed again and rewritten
    assert celcache.shipped_catalogue(tmp_path).get("git") == _eager()["git"]


def test_released_parser_is_built_again_when_something_must_be_parsed(tmp_path: Path) -> None:
    """The daemon drops cel-python's parser after loading (memory); a reload that parses a
    new rule builds it again and parses as before."""
    from policyd.core import cel

    assert cel.compile_expr('tool.kind == "read"').evaluate_bool({"tool": {"kind": "read"}})
    celcache.release_memory()
    from celpy.celparser import CELParser

    assert CELParser.CEL_PARSER is None
    program = cel.compile_expr('tool.kind == "edit" && size(tool.paths) > 1')  # parsed anew
    assert not program.evaluate_bool({"tool": {"kind": "edit", "paths": ["/a"]}})
    assert CELParser.CEL_PARSER is not None
