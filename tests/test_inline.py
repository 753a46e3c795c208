"""Inline code one-liners (policyd/core/inline): what each analyzer proves, what it refuses,
and, with the real interpreters, the facts the refusals rest on."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from policyd.core.inline import judge_code

PROVEN = [
    ("python", "print('hello')", (), {"test"}),
    ("python", "import json; print(json.load(open('package.json'))['version'])", ("package.json",), {"test", "read"}),
    ("python", "import sys; print(sys.version)", (), {"test"}),
    ("python", "import platform; print(platform.python_version())", (), {"test"}),
    ("python", "with open('a.txt') as f:\n    print(f.read()[:10])", ("a.txt",), {"test", "read"}),
    ("python", "print(open('\\u002fetc/hosts').read())", ("/etc/hosts",), {"test", "read"}),
    ("python", "for i in range(3): print(sorted({'b': 1, 'a': 2}.items())[i % 2])", (), {"test"}),
    ("python", "print(f'{1 + 1:>4}')", (), {"test"}),
    ("javascript", "console.log(process.version)", (), set()),
    ("javascript", "console.log(process.versions.node)", (), set()),
    ("javascript", "const fs = require('fs'); console.log(JSON.parse(fs.readFileSync('p.json', 'utf8')).version)",
     ("p.json",), {"read"}),
    ("javascript", "const fs = require('fs'); console.log(fs.readFileSync('a.json', 'utf8'))", ("a.json",), {"read"}),
    ("javascript", "console.log([1, 2].join(`,${'-'}`))", (), set()),
    ("python", "out = []\nfor line in open('a'):\n    out.append(line.strip())\nprint(out)", ("a",), {"test", "read"}),
    ("python", "from json import loads; print(loads('1') * 2.5, '=' * 80)", (), {"test"}),
    ("python", "for i in range(10): print('%5d' % i, i % 2, f'{i:>4}', 'a'.center(80, '='))", (), {"test"}),
    ("python", "import math\ntry:\n    print(math.e)\nexcept Exception as e:\n    print(e)", (), {"test"}),
    ("perl", "s/foo/bar/g", (), set()),
    ("perl", "s{a}{b}g; tr/a-z/A-Z/; y/x/y/", (), set()),
    ("perl", "s#(\\w+)#$1!#", (), set()),
]

REFUSED = [
    ("python", "__import__('os').system('id')", "not on the list"),
    ("python", "().__class__.__base__.__subclasses__()", "__subclasses__"),
    ("python", "open('x', 'w')", "may write"),
    ("python", "open('x', mode='a')", "may write"),
    ("python", "open(name)", "computed"),
    ("python", "breakpoint()", "breakpoint"),
    ("python", "help()", "help"),
    ("python", "import antigravity", "antigravity"),
    ("python", "import os; print(os.environ)", "'os'"),
    ("python", "exec(bytes.fromhex('00'))", "exec"),
    ("python", "@print\ndef f(): pass", "FunctionDef"),
    ("python", "x = 1; print(f'{x.__class__}')", "__class__"),
    ("python", "import sys; print(sys.modules)", "sys.modules"),
    ("python", "import json as j; j.codecs", "json.codecs"),
    ("python", "import json; x = json", "used as a value"),
    ("python", "print('{0.__init__.__globals__}'.format(len))", "format"),
    ("python", "print((x for x in [1]).gi_frame.f_globals['__builtins__'])", "f_globals"),
    ("python", "\uff45val('1')", "eval"),  # NFKC: the fullwidth name is eval
    ("python", "o = open; o('x', 'w')", "open used as a value"),
    ("python", "while True: pass", "While"),
    ("python", "print(9**9**9)", "**"),
    ("python", "print('a' * 10**10)", "repetition"),
    ("python", "print(len(range(10000000000)))", "range"),
    ("python", "# coding: utf-7\nprint(1)", "encoding"),
    ("python", "class A: pass", "ClassDef"),
    ("python", "for x in iter(int, 1): pass", "iter"),
    ("python", "print 'x'", "parse"),
    # I1: a name bound anywhere is no builtin and no listed name (the walk is not scope-aware)
    ("python", "[0 for exec in []]; exec('1')", "binding of 'exec'"),
    ("python", "(lambda eval: 0); print(eval('1'))", "binding of 'eval'"),
    ("python", "if 0: exec = 1\nexec('1')", "binding of 'exec'"),
    ("python", "try:\n    pass\nexcept Exception as exec:\n    pass\nexec('1')", "binding of 'exec'"),
    ("python", "if 0: from json import loads as print\nprint(1)", "binding of 'print'"),
    ("python", "import json as sys", "import as 'sys'"),
    ("python", "import json as m\nif 0: import sys as m", "two modules"),
    ("python", "for getattr in []: pass", "binding of 'getattr'"),
    ("python", "open = print", "binding of 'open'"),
    ("python", "from json import loads\nloads = 1", "binding of 'loads'"),
    ("python", "loads = 1\nfrom json import loads", "binding of 'loads'"),
    # I8: work that never ends
    ("python", "[l.append(x) for l in [[0]] for x in l]", "loop over a value"),
    ("python", "f = lambda n: n and f(n-1)+f(n-1) or 1; f(80)", "Lambda"),
    ("python", "import re; re.match('(a+)+$', 'a'*60+'b')", "'re'"),
    ("python", "[x for x in range(10000) for y in range(10000)]", "multiply"),
    ("python", "print(open('/dev/zero').read())", "device"),
    ("python", "print(open('../../../dev/stdin').read())", "device"),
    ("python", "l = [0]\nfor x in range(40): l.extend(l)", "grown inside a loop"),
    ("python", "s = 'a'\nfor x in range(40): s = s + s", "assignment inside a loop"),
    ("python", "n = 10\nprint('a' * n)", "two values known only at run time"),
    ("python", "print(range(len('abc')))", "range() of counts"),
    ("python", "a='x'*1000000\nb=a+a\nc=b+b\nd=c+c\ne=d+d\nf=e+e", "joining"),
    ("python", "print('a'.center(10**9))", "width known only at run time"),
    ("python", "l = [1]\nl.extend(map(int, l))", "iterator over a value"),
    ("python", "import itertools\nl = [1]\nl.extend(itertools.chain(l))", "iterator over a value"),
    ("python", "l = [1]\nl += filter(None, l)", "iterator over a value"),
    ("python", "l = [1]\nprint(list(map(l.append, [1])))", "iterator over a value"),
    ("python", "l = [1]\nprint(sorted([2], key=l.append))", "used as a value"),
    ("python", "l = [1]\nl.extend(x for x in l)", "loop over a value"),
    ("python", "print(f'{1:>1000000000}')", "multiply"),
    ("python", "print(f'{1:{9}}')", "format spec computed"),
    ("python", "print(format(1, '>1000000000'))", "'format'"),
    ("python", "print('%1000000000d' % 1)", "multiply"),
    ("python", "print('%*d' % (9, 1))", "width taken from the arguments"),
    ("python", "d = open('f').read()\nprint(d % 1)", "may be a format string"),
    ("javascript", "const g = eval => 0; eval('1')", "arrow_function"),
    ("javascript", "[1].map(fetch => 0); fetch('x')", "arrow_function"),
    ("javascript", "const f = n => n && f(n-1)+f(n-1); f(60)", "arrow_function"),
    ("javascript", "const eval = 1", "global 'eval'"),
    ("javascript", "var child_process = 1", "global 'child_process'"),
    ("javascript", "require('fs').readFileSync('/dev/zero')", "device"),
    ("javascript", "console.log(require('./package.json').version)", "require of a module or file"),
    ("javascript", "console.log(''.padStart(1e9))", "padStart"),
    ("javascript", "require('child_process').execSync('id')", "execSync"),
    ("javascript", "process.binding('spawn_sync')", "binding"),
    ("javascript", "global.process.mainModule", "mainModule"),
    ("javascript", "console.log(`${process.env.HOME}`)", "env"),
    ("javascript", "eval('1')", "eval"),
    ("javascript", "Function('return 1')()", "call"),
    ("javascript", "import('child_process')", "import"),
    ("javascript", "''.constructor.constructor('return 1')()", "call"),
    ("javascript", "[]['constructor']", "subscript"),
    ("javascript", "const k = 'x'; [][k]", "subscript"),
    ("javascript", "String.raw`x`", "tagged"),
    ("javascript", "console.log(/a/.source)", "regex"),
    ("javascript", "x = 1", "assignment"),
    ("javascript", "new Function('x')", "new_expression"),
    ("javascript", "const f = require('fs'); f.writeFileSync('x', 'y')", "fs"),
    ("javascript", "require('fs').readFileSync(p)", "fs"),
    ("javascript", "console.log(\\u0065val)", "escape"),
    ("javascript", "const process = 1", "global"),
    ("javascript", "console.log(require('lodash'))", "require"),
    ("perl", "s/x/system('id')/e", "'e'"),
    ("perl", "s{x}{y}e", "'e'"),
    ("perl", "s/x/y/ee", "'e'"),
    ("perl", "s/(?{ system 'id' })//", "code block"),
    ("perl", "s/(??{ 'a' })//", "code block"),
    ("perl", "s/x/@{[ `id` ]}/", "array"),
    ("perl", "s/x/${\\ `id`}/", "interpolates"),
    ("perl", "s/x/$ENV{HOME}/", "interpolates"),
    ("perl", "s/x/$1[system(1)]/", "interpolates"),
    ("perl", "print 1", "statement"),
    ("perl", "s/a/b/; system('id')", "delimiter"),
    ("perl", "s/a/b", "unterminated"),
    ("perl", "s /a/b/", "delimiter"),
    ("perl", "s{a} #\n{system('id')}e;#g", "bracketed part"),
    ("perl", "tr{a} #\n{b};system('id');#", "bracketed part"),
    ("perl", "s(a) #\n(system('id'))e", "bracketed part"),
    ("perl", "s{a} {b}", "bracketed part"),
    ("perl", "s{a}\n{b}", "bracketed part"),
    ("perl", "s{a}#b#", "bracketed part"),
    ("perl", "s/a/b/ # c", "other than"),
    ("perl", "s/a/b/g#c", "'#'"),
    ("perl", "s/^(a+)+\\1$/x/", "repeats a group"),
    ("perl", "s/(.*a){25}/x/", "repeats a group"),
    ("perl", "s/^(a+)\\1*$/x/", "backreference"),
    ("perl", "s/(?<n>a+)\\k<n>+$/x/", "backreference"),
    ("perl", "s/(a)(?1)*$/x/", "recursion"),
    ("perl", "s/^(ab) +$/x/x", "'x'"),
    ("perl", "s/.*a.*b//", "more than one unbounded repetition"),
    ("perl", "s/\\*+a{2,}//", "more than one unbounded repetition"),
    # shared trees and growth by held values (each a join; more than MAX_JOINS is not proven)
    ("python", "a0 = [0]\n" + "".join(f"a{i} = [a{i - 1}, a{i - 1}]\n" for i in range(1, 40))
     + "b0 = [0]\n" + "".join(f"b{i} = [b{i - 1}, b{i - 1}]\n" for i in range(1, 40)) + "print(a39 == b39)",
     "joining two values"),
    ("python", "a = {'k': 0}\nb = {'x': a, 'y': a}\nc = {'x': b, 'y': b}\nd = (c, c)\ne = {d, d}\nf = [e, e]\nprint(f)",
     "joining two values"),
    ("python", "a = 'a' * 1000\nb = a.replace('a', a)\nprint(len(b.join(b)))", "repeating a held value"),
    ("python", "a = [0] * 1000\nb = [a for x in a]\nprint([b for x in a])", "repeating a held value"),
    ("python", "a = [0] * 10\nb = [a for x in a]\nc = [b for x in b]\nd = [c for x in c]\ne = [d for x in d]\n"
     "f = [e for x in e]\nprint(f)", "joining two values"),
    ("python", "import itertools\na = [0] * 1000\nprint(len(list(itertools.accumulate([a] * 1000))))", "accumulate"),
    ("python", "a = [0]\nb = []\nb.append(a)\nb.append(a)\nc = []\nc.append(b)\nc.append(b)\nc.append(b)\nprint(c)",
     "joining two values"),
    ("javascript", "const a0 = [0];\n" + "".join(f"const a{i} = [a{i - 1}, a{i - 1}];\n" for i in range(1, 40))
     + "console.log(a39.flat(Infinity).length)", "joining two values"),
    ("javascript", "const a = {k: 0}; const b = {x: a, y: a}; const c = {x: b, y: b}; const d = [...c, ...c];"
     " const e = `${d}${d}`; const f = [e, e]; console.log(JSON.stringify(f))", "joining two values"),
    ("javascript", "const a = ['aaaa']; const b = a.join(a); console.log(b.replaceAll('a', b).length)",
     "repeating a held value"),
    ("javascript", "const a = [0]; const b = []; b.push(a, a); const c = []; c.push(b, b); const d = []; d.push(c);"
     " d.unshift(c); const e = [d, d]; console.log(JSON.stringify(e))", "joining two values"),
]


@pytest.mark.parametrize(("lang", "text", "reads", "effects"), PROVEN, ids=[p[1][:40] for p in PROVEN])
def test_proven_snippets(lang: str, text: str, reads: tuple[str, ...], effects: set[str]) -> None:
    """A snippet on the allow-lists is proven, with exactly the files it reads."""
    code = judge_code(lang, text, frozenset({"-i", "-p"}))
    assert (True, reads, effects) == (code.proven, code.reads, set(code.effects)), code.why


@pytest.mark.parametrize(("lang", "text", "why"), REFUSED, ids=[r[1][:40] for r in REFUSED])
def test_refused_snippets(lang: str, text: str, why: str) -> None:
    """Anything off the lists is not proven, and the reason names it."""
    code = judge_code(lang, text, frozenset({"-i", "-p"}))
    assert not code.proven
    assert why in code.why


def test_perl_without_in_place_is_not_proven() -> None:
    """perl substitutions are an edit only with -i (the reason: the magic open below)."""
    assert not judge_code("perl", "s/a/b/", frozenset({"-p"})).proven
    assert judge_code("perl", "s/a/b/", frozenset({"-p", "-i"})).proven


def test_unknown_language_is_not_proven() -> None:
    """A language no analyzer reads is never proven."""
    assert not judge_code("ruby", "puts 1").proven


def test_long_snippet_is_not_proven() -> None:
    """A snippet beyond the size limit is not parsed (bounded work)."""
    assert not judge_code("python", "print(1)\n" * 5000).proven


# --------------------------------------------------------------------------- the real interpreters

needs_perl = pytest.mark.skipif(shutil.which("perl") is None, reason="perl is not installed")


@needs_perl
def test_perl_in_place_opens_operands_raw(tmp_path: Path) -> None:
    """With -i a file named '|cmd' is a file, not a command (why -pi -e 's///' is proven)."""
    (tmp_path / "a.c").write_text("foo\n")
    (tmp_path / "|touch PWNED;.c").write_text("foo\n")
    subprocess.run("perl -pi -e 's/foo/bar/' *.c", shell=True, cwd=tmp_path, timeout=60, check=False,
                   capture_output=True)
    assert "bar\n" == (tmp_path / "a.c").read_text()
    assert not (tmp_path / "PWNED").exists()


@needs_perl
def test_perl_without_in_place_runs_pipe_names(tmp_path: Path) -> None:
    """Without -i, -p opens a '|cmd' operand as a pipe and runs cmd (why it stays exec)."""
    (tmp_path / "|touch PWNED;.c").write_text("")
    subprocess.run("perl -pe 's/foo/bar/' *.c", shell=True, cwd=tmp_path, timeout=60, check=False,
                   capture_output=True)
    assert (tmp_path / "PWNED").exists()


def test_python_imports_from_the_working_directory(tmp_path: Path) -> None:
    """``python3 -c 'import json'`` runs ./json.py: proven snippets carry the effect test."""
    (tmp_path / "json.py").write_text("open('RAN', 'w').close()\n")
    subprocess.run(["python3", "-c", "import json"], cwd=tmp_path, timeout=60, check=False, capture_output=True)
    assert (tmp_path / "RAN").exists()
    assert "test" in judge_code("python", "import json").effects


def test_stdlib_names_cover_the_running_interpreter() -> None:
    """The module names whose entries in the working directory count (python -c imports
    from there first) hold every standard library name of this interpreter."""
    import sys

    from policyd.core.inline.stdlib import STDLIB_MODULES

    assert set(sys.stdlib_module_names) <= STDLIB_MODULES
