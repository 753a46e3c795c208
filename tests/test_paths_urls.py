"""Path and URL facts (pure core)."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from policyd.core import paths, urls

CWD = "/workspace/project"
HOME = "/home/dev"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("src/a.py", "/workspace/project/src/a.py"),
        ("./src//a.py", "/workspace/project/src/a.py"),
        ("../other/x", "/workspace/other/x"),
        ("/workspace/project/../../etc/cron.d/job", "/etc/cron.d/job"),
        ("~", "/home/dev"),
        ("~/.ssh/id_rsa", "/home/dev/.ssh/id_rsa"),
        ("$HOME/.aws/credentials", "/home/dev/.aws/credentials"),
        ("${HOME}", "/home/dev"),
        ("//etc//passwd", "/etc/passwd"),
        ("/tmp/../etc", "/etc"),
        (".", "/workspace/project"),
        ("~dev/Documents", "/home/dev/Documents"),
        ("~root", "/root"),
        ("~+", "/workspace/project"),  # bash: $PWD
        ("~+/../x", "/workspace/x"),
        ("~-", "/(unknown path)"),  # $OLDPWD: not known
        ("~-/.ssh", "/(unknown path)"),
        ("~2/x", "/(unknown path)"),  # the directory stack
        ("~+1", "/(unknown path)"),
        ("~-x", "/home/-x"),  # a user name
        ("", ""),
    ],
)
def test_resolve(raw: str, expected: str) -> None:
    """Relative paths join the cwd; ~ and $HOME expand (bash's tilde prefixes, the
    directory stack unknown); .. and // fold."""
    assert expected == paths.resolve(raw, CWD, HOME)


@pytest.mark.parametrize(
    ("path", "directory", "expected"),
    [
        ("/a/b", "/a/b", True),
        ("/a/b/c", "/a/b", True),
        ("/a/b2", "/a/b", False),
        ("/a/B/c", "/a/b", False),
        ("/a", "/a/b", False),
        ("/x", "/", True),
        ("/a/b/c", "/a/b/", True),
        ("/a/b", "", False),
    ],
)
def test_within_is_component_wise_and_case_exact(path: str, directory: str, expected: bool) -> None:
    """within() compares whole components; /a/b2 is not within /a/b."""
    assert expected == paths.within(path, directory)


@pytest.mark.parametrize(
    ("path", "pattern", "expected"),
    [
        ("/w/.env", "**/.env", True),
        ("/w/.env", ".env", True),
        ("/w/a/b/.env", "**/.env", True),
        ("/w/.env.example", "**/.env", False),
        ("/w/.env.production", "**/.env.*", True),
        ("/home/u/.ssh/config", "**/.ssh/**", True),
        ("/home/u/.ssh", "**/.ssh/**", True),
        ("/home/u/.sshx/config", "**/.ssh/**", False),
        ("/w/src/a.py", "/w/*.py", False),
        ("/w/src/a.py", "/w/**/*.py", True),
        ("/w/a.py", "/w/**/*.py", True),
        ("/w/a.py", "/w/?.py", True),
        ("/w/ab.py", "/w/[ab].py", False),
        ("/w/b.py", "/w/[ab].py", True),
        ("/w/c.py", "/w/[!ab].py", True),
        ("/w/b.py", "/w/[a-c].py", True),
        ("/w/-.py", "/w/[a-].py", True),
        ("/w/b.py", "/w/[z-a].py", False),  # a reversed range matches nothing (fnmatch)
        ("/w/b.py", "/w/[!z-a].py", True),
        ("/w/b.py", "/w/[b-a-c].py", False),
        ("/w/].py", "/w/[]a].py", True),
    ],
)
def test_glob(path: str, pattern: str, expected: bool) -> None:
    """* stays in one component, ** spans components, relative patterns match anywhere."""
    assert expected == paths.glob(path, pattern)


@pytest.mark.parametrize(
    ("url", "host", "loopback", "private", "link_local"),
    [
        ("https://Example.COM./a", "example.com", False, False, False),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254", False, True, True),
        ("http://2130706433/", "2130706433", True, True, False),
        ("http://0x7f.1/", "0x7f.1", True, True, False),
        ("http://0177.0.0.1/", "0177.0.0.1", True, True, False),
        ("http://[::ffff:127.0.0.1]:8080/", "::ffff:127.0.0.1", True, True, False),
        ("http://localhost:3000", "localhost", True, True, False),
        ("http://10.1.2.3/", "10.1.2.3", False, True, False),
        ("https://bücher.example/", "xn--bcher-kva.example", False, False, False),
    ],
)
def test_url_parts(url: str, host: str, loopback: bool, private: bool, link_local: bool) -> None:
    """Hosts are IDNA lower case; every IPv4 notation and mapped IPv6 is recognised."""
    parts = urls.parse(url)
    assert (host, loopback, private, link_local) == (parts.host, parts.loopback, parts.private, parts.link_local)


def test_url_invalid_never_raises() -> None:
    """A URL that does not parse is invalid, not an exception."""
    assert urls.parse("http://[::1").valid is False
    assert urls.parse("").valid is False
    assert 443 == urls.parse("https://example.com/x").port


@pytest.mark.parametrize("url", ["http://-1/", "http://0x-1/", "http://1.-2/", "http://-0x1.1/"])
def test_url_signed_number_host_is_no_address(url: str) -> None:
    """``int()`` reads a sign: a host such as ``-1`` once reached ``IPv4Address(-1)``, which
    raises. It is a name, not an address, and parsing does not raise."""
    parts = urls.parse(url)
    assert (parts.valid, parts.ip) == (True, "")


def _reference_ip(host: str) -> object:
    """What :func:`urls._ip` computed before its shortcut for names: ``ip_address``, then
    the ``inet_aton`` spellings."""
    try:
        addr = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return urls._inet_aton(host)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    return addr


_HOST_CHARS = "0123456789abcdefxX.:%_+- \t\x1cgz[]"


@given(st.one_of(
    st.text(alphabet=_HOST_CHARS, min_size=1, max_size=14),
    st.lists(st.integers(-3, 300).map(str), min_size=1, max_size=4).map(".".join),
    st.tuples(st.text(alphabet=_HOST_CHARS, min_size=1, max_size=10), st.sampled_from(["eth0", "zz", "1"]))
    .map("%".join),
))
def test_ip_shortcut_is_exact(host: str) -> None:
    """A host with a character no IPv4 spelling holds and no ``:`` is a name at once; every
    other host is read as before (the shortcut changes no answer)."""
    assert urls._ip(host) == _reference_ip(host)


_GLOB_PARTS = st.sampled_from(["a", "b", ".env", "*", "?", "**", "[ab]", "[!a]", "x.pem", "/", "-", "["])
_GLOBS = st.lists(_GLOB_PARTS, min_size=1, max_size=6).map("".join)
_PATHS = st.lists(st.sampled_from(["a", "b", ".env", "x.pem", "ab", "[", "-"]), min_size=1, max_size=5).map(
    lambda parts: "/" + "/".join(parts))


_BRACKETS = st.builds(lambda a, body, b: f"{a}[{body}]{b}", st.sampled_from(["", "*", "/w/", "**/"]),
                      st.text(alphabet="abz-!^]\\&~|[", max_size=6), st.sampled_from(["", "*", "[", "/**"]))


@given(st.one_of(_BRACKETS, st.text(alphabet="ab-z[]!^*?/\\&~|.", max_size=12)))
def test_glob_any_pattern_compiles(pattern: str) -> None:
    """Every pattern is a glob: a bracket with a reversed range (``[m-[]``), a lone ``[``, a
    ``[^]`` once reached ``re`` as an invalid regex and raised at evaluation."""
    assert paths.glob("/a/b", pattern) in (True, False)
    assert paths.glob_any("/a/b", (pattern, "**/x")) == paths.glob("/a/b", pattern)


@given(_PATHS, st.lists(_GLOBS, max_size=8))
def test_glob_any_is_any_glob(path: str, patterns: list[str]) -> None:
    """The one-regex form of a pattern list decides exactly as the patterns one by one."""
    assert paths.glob_any(path, tuple(patterns)) == any(paths.glob(path, p) for p in patterns)
