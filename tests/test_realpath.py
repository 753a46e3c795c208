"""``policyd.realpaths.realpath``: the kernel's resolution of an existing path (O_PATH +
/proc/self/fd) must equal ``os.path.realpath`` on every path, existing or not."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from policyd.realpaths import Resolver, _kernel_realpath, file_kind, realpath

COMPONENTS = st.sampled_from(["real", "sub", "link", "up", "loop", "dangling", "f", "missing", "..", ".", "", "fifo",
                              "dl", "fl", "hl", "ml"])


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("rp")
    (root / "real" / "sub").mkdir(parents=True)
    (root / "real" / "f").write_text("x")
    (root / "link").symlink_to(root / "real")
    (root / "real" / "up").symlink_to("..")
    (root / "real" / "sub" / "link").symlink_to("../f")
    (root / "loop").symlink_to("loop")
    (root / "dangling").symlink_to(root / "nowhere")
    (root / "real" / "dl").symlink_to("missing/deeper")  # dangling, through a missing directory
    (root / "real" / "sub" / "fl").symlink_to("../../link/sub")  # a directory, through a link
    os.mkfifo(root / "real" / "fifo")
    os.link(root / "real" / "f", root / "real" / "hl")  # a file with two names: "linked"
    (root / "real" / "ml").symlink_to("missing/..")  # os.path.realpath: real; the kernel: nothing
    return root


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(COMPONENTS, min_size=0, max_size=6), st.booleans())
def test_realpath_equals_os_path_realpath(tree: Path, parts: list[str], trailing_slash: bool) -> None:
    path = str(tree) + "/" + "/".join(parts) + ("/" if trailing_slash else "")
    assert realpath(path) == os.path.realpath(path)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=400)
@given(st.lists(st.tuples(st.lists(COMPONENTS, max_size=6), st.booleans()), min_size=1, max_size=6))
# found by random runs: ".." after a missing directory is taken lexically by os.path.realpath
# (back to where links are resolved again); "//" after a link loop has its own answer there
@example(paths=[(["sub", "..", "link"], False)])
@example(paths=[(["real", "real", "..", "up"], False)])
@example(paths=[(["loop", "", "real"], False)])
def test_one_decisions_resolver_equals_os_path_realpath(tree: Path, paths: list[tuple[list[str], bool]]) -> None:
    """The per-decision memo (directories that do not exist, paths seen before) changes no result."""
    resolve = Resolver()
    for parts, trailing_slash in paths + paths:
        path = str(tree) + "/" + "/".join(parts) + ("/" if trailing_slash else "")
        assert resolve(path) == os.path.realpath(path)
    assert resolve("/nonexistent-dir-policyd/x\udc80") == realpath("/nonexistent-dir-policyd/x\udc80")


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=400)
@given(st.lists(st.tuples(st.lists(COMPONENTS, max_size=6), st.booleans()), min_size=1, max_size=6))
# a '..' after a missing directory: os.path.realpath takes it lexically, the kernel (file_kind's
# stat) does not, so the resolution's look at real/f says nothing of missing/../f
@example(paths=[(["real", "missing", "..", "f"], False)])
@example(paths=[(["real", "ml", "f"], False)])  # the same '..' in a link's target
@example(paths=[(["real", "sub", "link"], False), (["real", "sub"], False)])
def test_one_decisions_file_kinds_equal_a_fresh_look(tree: Path, paths: list[tuple[list[str], bool]]) -> None:
    """What a path is, asked of the resolver that resolved it (which reuses the look its
    resolution took), equals :func:`file_kind`'s own look; so does a directory's real path
    asked after the paths below it."""
    resolve = Resolver()
    for parts, trailing_slash in paths + paths:
        path = str(tree) + "/" + "/".join(parts) + ("/" if trailing_slash else "")
        assert resolve(path) == os.path.realpath(path)
        assert resolve.file_kind(path) == file_kind(path), path
        parent = path.rstrip("/").rsplit("/", 1)[0]
        assert resolve(parent) == os.path.realpath(parent)


def test_kernel_resolution_is_used_for_an_existing_path(tree: Path) -> None:
    assert _kernel_realpath(str(tree / "link" / "sub" / "link")) == str(tree / "real" / "f")
    assert _kernel_realpath(str(tree / "link" / "new")) == str(tree / "real" / "new")  # a file to create
    assert _kernel_realpath(str(tree / "missing" / "deeper" / "x")) is None  # os.path.realpath decides
    assert _kernel_realpath(str(tree / "dangling" / "x")) is None
    assert _kernel_realpath("//etc") is None


def _kind_by_stat(path: str) -> str:
    """file_kind as first written: what the path leads to (stat), then the entry itself."""
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        try:
            os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return "missing"
        except (OSError, ValueError):
            return "other"
        return "other"
    except (OSError, ValueError):
        return "other"
    if stat.S_ISREG(info.st_mode):
        return "file" if info.st_nlink == 1 else "linked"
    return "dir" if stat.S_ISDIR(info.st_mode) else "other"


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=300)
@given(st.lists(COMPONENTS, min_size=0, max_size=6), st.booleans())
@example(parts=["dangling"], trailing_slash=False)
@example(parts=["loop"], trailing_slash=False)
@example(parts=["real", "dl"], trailing_slash=False)
@example(parts=["real", "f", "x"], trailing_slash=False)
def test_file_kind_looks_at_the_entry_first_with_the_same_answers(tree: Path, parts: list[str],
                                                                   trailing_slash: bool) -> None:
    """file_kind asks lstat first (one call for a missing path) and answers as stat-then-lstat
    does: links followed, a dangling link or loop ``other``, a NUL ``other``."""
    path = str(tree) + "/" + "/".join(parts) + ("/" if trailing_slash else "")
    assert file_kind(path) == _kind_by_stat(path)
    assert file_kind(path + "\0x") == _kind_by_stat(path + "\0x") == "other"
