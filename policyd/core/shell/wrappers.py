"""Per-argv analysis: wrappers (sudo, env, xargs, find -exec, timeout...) whose inner
command is listed as its own command, shell strings (bash -c, eval, ssh CMD...) parsed one
level deeper, and the flags/subcommand/positionals/paths of other programs."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from policyd.core.shell.catalogue import Program, slots_for, takes
from policyd.core.shell.options import (
    _CHMOD_MODE,
    _DEFAULT,
    _GIT_BANG_KEYS,
    _GIT_SHELL_KEYS,
    _PROC_SUBST,
    _SHELLS,
    _SSH_CMD_OPTS,
    PATH_ROLES,
    _flags,
    _getopt,
    _Opts,
    _Spec,
    entry,
    spec_of,
)

# --------------------------------------------------------------------------- per-argv analysis


class _Out:
    """What one argv yields besides its SimpleCommand fields."""

    __slots__ = ("assigns", "flags", "inners", "opt_end", "paths", "positionals", "shells",
                 "stdin", "subcommand")

    def __init__(self, opt_end: int) -> None:
        self.opt_end = opt_end  # args before this index are the program's own (flags there)
        self.inners: list[tuple[int, int, str]] = []  # arg ranges of wrapped commands + label
        self.shells: list[tuple[str, str]] = []  # shell strings to parse one level deeper + label
        self.assigns: list[tuple[str, str]] = []
        self.stdin = ""  # non-empty: stdin is read as shell (the shell's name)
        self.flags: set[str] = set()
        self.positionals: list[str] = []
        self.subcommand = ""
        self.paths: list[str] = []


def _spec(name: str) -> _Spec:
    """The getopt spec of the shipped catalogue's entry for ``name`` (no entry: no options)."""
    return spec_of(entry(name))


def _is_env_assign(v: str) -> bool:
    return "=" in v and not v.startswith(("=", "-"))


def _wrapper_out(vals: Sequence[str], spec: _Spec, label: str, skip: int = 0,
                 assign: bool = False) -> tuple[_Out, _Opts]:
    """Generic wrapper: options, ``skip`` positionals, optional NAME=val, then the command."""
    opts, _, i = _getopt(vals, 0, len(vals), spec, stop_first=True)
    out = _Out(opt_end=i)
    if assign:
        while i < len(vals) and _is_env_assign(vals[i]):
            name, _, value = vals[i].partition("=")
            out.assigns.append((name, value))
            i += 1
    i = min(len(vals), i + skip)
    out.opt_end = i
    if i < len(vals):
        out.inners.append((i, len(vals), label))
    return out, opts


def _has(opts: _Opts, *names: str) -> bool:
    return any(n in names for n, _ in opts)


def _optval(opts: _Opts, *names: str) -> str | None:
    for n, v in opts:
        if n in names and v is not None:
            return v
    return None


def _h_sudo(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    out, opts = _wrapper_out(vals, _spec("sudo"), "sudo", assign=True)
    if _has(opts, "e", "edit"):
        out.inners.clear()
    elif not out.inners and _has(opts, "s", "shell", "i", "login"):
        out.stdin = "sudo"
    return out, opts


def _h_doas(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    out, opts = _wrapper_out(vals, _spec("doas"), "doas")
    if not out.inners and _has(opts, "s"):
        out.stdin = "doas"
    return out, opts


def _h_env(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    out, opts = _wrapper_out(vals, _spec("env"), "env", assign=True)
    split = _optval(opts, "S", "split-string")
    if split is not None:
        rest = " ".join(vals[out.opt_end :])
        out.shells.append((f"{split} {rest}".strip(), "env -S"))
        out.inners.clear()
    return out, opts


def _skip_n(n: int, label: str) -> Callable[[str, Sequence[str]], tuple[_Out, _Opts]]:
    def handler(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
        out, opts = _wrapper_out(vals, _spec(label), label, skip=n)
        if _has(opts, "p", "pid") and label in ("chrt", "taskset", "ionice"):
            out.inners.clear()
        return out, opts

    return handler


def _h_plain(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    key = name.lower()
    return _wrapper_out(vals, _spec(key), key)


def _h_command(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    """``command [-p] CMD ARGS`` runs CMD; ``command -v/-V NAME`` only describes it."""
    out, opts = _wrapper_out(vals, _spec("command"), "command")
    if _has(opts, "v", "V"):
        out.inners.clear()
    return out, opts


def _h_flock(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    spec = _spec("flock")
    opts, _, i = _getopt(vals, 0, len(vals), spec, stop_first=True)
    out = _Out(opt_end=min(len(vals), i + 1))
    cmd = _optval(opts, "c", "command")
    if cmd is None and i + 1 < len(vals) and vals[i + 1] in ("-c", "--command"):
        out.opt_end = i + 2
        if i + 2 < len(vals):
            cmd = vals[i + 2]
            out.opt_end = i + 3
    if cmd is not None:
        out.shells.append((cmd, "flock -c"))
    elif i + 1 < len(vals):
        out.inners.append((i + 1, len(vals), "flock"))
    return out, opts


def _h_xargs(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    return _wrapper_out(vals, _spec("xargs"), "xargs")


_PARALLEL_SEPS = frozenset({":::", "::::", ":::+", "::::+"})


def _h_parallel(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    opts, _, i = _getopt(vals, 0, len(vals), _spec("parallel"), stop_first=True)
    out = _Out(opt_end=i)
    k = i
    while k < len(vals) and vals[k] not in _PARALLEL_SEPS:
        k += 1
    if k == i:  # no command: every input after ::: is a command line
        for v in vals[k + 1 :]:
            if v not in _PARALLEL_SEPS:
                out.shells.append((v, "parallel"))
    elif k - i == 1:
        out.shells.append((vals[i], "parallel"))
    else:
        out.inners.append((i, k, "parallel"))
    return out, opts


def _h_watch(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    opts, _, i = _getopt(vals, 0, len(vals), _spec("watch"), stop_first=True)
    out = _Out(opt_end=i)
    if i < len(vals):
        if _has(opts, "x", "exec"):
            out.inners.append((i, len(vals), "watch"))
        else:
            out.shells.append((" ".join(vals[i:]), "watch"))
    return out, opts


def _h_find(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    out = _Out(opt_end=len(vals))
    i = 0
    while i < len(vals):
        a = vals[i]
        if a in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(vals) and not (
                vals[j] == ";" or (vals[j] == "+" and j > i + 1 and vals[j - 1] == "{}")
            ):
                j += 1
            if j > i + 1:
                out.inners.append((i + 1, j, f"find {a}"))
            i = j + 1
            continue
        i += 1
    return out, []


def _h_ssh(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    opts, _, i = _getopt(vals, 0, len(vals), _spec("ssh"), stop_first=True)
    out = _Out(opt_end=min(len(vals), i + 1))
    for n, v in opts:
        if n == "o" and v:
            m = _SSH_CMD_OPTS.fullmatch(v)
            if m:
                out.shells.append((m.group(2), "ssh -o"))
    if i < len(vals):
        more, _, j = _getopt(vals, i + 1, len(vals), _spec("ssh"), stop_first=True)  # ssh host -t -- cmd
        opts = opts + more
        out.opt_end = j
        rest = vals[j:]
        if rest:
            out.shells.append((" ".join(rest), "ssh"))
        elif not _has(opts, "N", "W", "O"):
            out.stdin = "ssh"
    return out, opts


def _h_su(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    key = name.lower()
    spec = _spec(key)
    opts, _, _ = _getopt(vals, 0, len(vals), spec)
    if key == "runuser" and _has(opts, "u", "user") and not _has(opts, "c", "command"):
        return _wrapper_out(vals, spec, "runuser")  # runuser -u USER [--] CMD ARGS
    out = _Out(opt_end=len(vals))
    cmd = _optval(opts, "c", "command", "session-command")
    if cmd is not None:
        out.shells.append((cmd, f"{key} -c"))
    else:
        out.stdin = key
    return out, opts


def _h_shell(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    n = len(vals)
    i = 0
    has_c = stdin = False
    opts: _Opts = []
    while i < n:
        a = vals[i]
        if a in ("--", "-"):
            i += 1
            break
        if a.startswith("--"):
            opts.append((a[2:].partition("=")[0], None))
            i += 2 if a in ("--rcfile", "--init-file") else 1
            continue
        if len(a) > 1 and a[0] in "-+":
            cluster = a[1:]
            if a[0] == "-":
                has_c = has_c or "c" in cluster
                stdin = stdin or "s" in cluster
                opts.extend((c, None) for c in cluster)
            i += 1 + cluster.count("o") + cluster.count("O")
            continue
        break
    out = _Out(opt_end=min(i, n))
    if has_c:
        if i < n:
            out.shells.append((vals[i], f"{name} -c"))
    elif i >= n or stdin:
        out.stdin = name
    return out, opts


def _h_eval(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    args = list(vals[1:] if vals[:1] == ["--"] else vals)
    out = _Out(opt_end=0)
    if args:
        out.shells.append((" ".join(args), "eval"))
    return out, []


def _h_trap(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    args = list(vals[1:] if vals[:1] == ["--"] else vals)
    out = _Out(opt_end=0)
    if len(args) >= 2 and not args[0].startswith("-"):
        out.shells.append((args[0], "trap"))
    return out, []


def _h_script(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    opts, _, _ = _getopt(vals, 0, len(vals), _spec("script"))
    out = _Out(opt_end=len(vals))
    cmd = _optval(opts, "c", "command")
    if cmd is not None:
        out.shells.append((cmd, "script -c"))
    return out, opts


def _h_busybox(name: str, vals: Sequence[str]) -> tuple[_Out, _Opts]:
    out = _Out(opt_end=0)
    if vals and not vals[0].startswith("-"):
        out.inners.append((0, len(vals), "busybox"))
    return out, []


_WRAPPERS: dict[str, Callable[[str, Sequence[str]], tuple[_Out, _Opts]]] = {
    "sudo": _h_sudo,
    "doas": _h_doas,
    "env": _h_env,
    "nice": _h_plain,
    "nohup": _h_plain,
    "timeout": _skip_n(1, "timeout"),
    "time": _h_plain,
    "stdbuf": _h_plain,
    "command": _h_command,
    "builtin": _h_plain,
    "exec": _h_plain,
    "xargs": _h_xargs,
    "parallel": _h_parallel,
    "find": _h_find,
    "watch": _h_watch,
    "unbuffer": _h_plain,
    "ionice": _skip_n(0, "ionice"),
    "setsid": _h_plain,
    "flock": _h_flock,
    "strace": _h_plain,
    "ltrace": _h_plain,
    "chrt": _skip_n(1, "chrt"),
    "taskset": _skip_n(1, "taskset"),
    "fakeroot": _h_plain,
    "torsocks": _h_plain,
    "proxychains": _h_plain,
    "proxychains4": _h_plain,
    "nsenter": _h_plain,
    "unshare": _h_plain,
    "firejail": _h_plain,
    "pkexec": _h_plain,
    "caffeinate": _h_plain,
    "catchsegv": _h_plain,
    "valgrind": _h_plain,
    "sshpass": _h_plain,
    "coproc": _h_plain,
    "busybox": _h_busybox,
    "ssh": _h_ssh,
    "su": _h_su,
    "runuser": _h_su,
    "eval": _h_eval,
    "trap": _h_trap,
    "script": _h_script,
}
for _sh in _SHELLS:
    _WRAPPERS[_sh] = _h_shell

# Subcommands that run a command given as the following words: (program, subcommand); their
# options are the catalogue's entry for the subcommand.
_RUNNERS: frozenset[tuple[str, str]] = frozenset({
    ("uv", "run"), ("poetry", "run"), ("pipenv", "run"), ("pdm", "run"), ("conda", "run"),
    ("mamba", "run"), ("bundle", "exec"), ("npm", "exec"), ("npm", "x"), ("pnpm", "exec"),
    ("pnpm", "dlx"), ("yarn", "exec"), ("yarn", "dlx"),
})
#: How the subcommand is found: "aws" (service and operation), "make" (the first operand that
#: is not VAR=value); else the first operand after the global options.
_SUB_MODES = {"aws": "aws", "make": "make", "gmake": "make"}
#: Programs taking a +TOOLCHAIN word before the subcommand (cargo +nightly build).
_PLUS_TOOLCHAIN = frozenset({"cargo", "rustup"})


def _parse_program(key: str, prog: Program | None, vals: Sequence[str], out: _Out) -> None:
    """Fill flags, subcommand and positionals of a non-wrapper program (or a runner), reading
    its options as its catalogue entry spells them."""
    end = out.opt_end
    if key in _NPX_NAMES:
        npx = spec_of(prog)
        opts, pos, i = _getopt(vals, 0, end, npx, stop_first=True)
        out.flags = _flags(opts, npx)
        call = _optval(opts, "c", "call")
        if call is not None:
            out.shells.append((call, f"{key} -c"))
        elif i < end:
            out.inners.append((i, end, key))
            out.opt_end = i
        out.positionals = list(vals[i:])
        return
    if key == "tar" and vals and _TAR_OLD_STYLE.fullmatch(vals[0]):
        vals = _tar_old_style(vals)
        end = len(vals)
    mode = _SUB_MODES.get(key, "first")
    if mode == "make" or prog is None or not (prog.subcommands or prog.unlisted_subcommand):
        spec = spec_of(prog)
        opts, pos, _ = _getopt(vals, 0, end, spec)
        out.flags = _flags(opts, spec)
        if key == "chmod":
            out.flags = _chmod_flags(vals[:end], spec)
            opts, pos = [], [v for v in vals[:end] if v == "-" or not v.startswith("-")
                             or _CHMOD_MODE.fullmatch(v)]
            if pos[:1] and pos[0] == "--":
                pos = pos[1:]
        out.positionals = pos
        if mode == "make":
            # the first target: not VAR=value, nor the job count of a separate `-j N`
            out.subcommand = next((p for p in pos if "=" not in p and not p.isdigit()), "")
        else:
            _paths(key, prog, opts, pos, out)
        return
    glob = spec_of(prog)
    i = 0
    g_opts: _Opts = []
    while True:
        more, _, i = _getopt(vals, i, end, glob, stop_first=True)
        g_opts.extend(more)
        if key in _PLUS_TOOLCHAIN and i < end and vals[i].startswith("+"):
            i += 1
            continue
        break
    flags = _flags(g_opts, glob)
    positionals: list[str] = []
    sub = ""
    if i < end:
        sub = vals[i]
        positionals.append(sub)
        i += 1
        if mode == "aws" and i < end:
            more, _, j = _getopt(vals, i, end, glob, stop_first=True)
            g_opts.extend(more)
            flags |= _flags(more, glob)
            if j < end:
                sub = f"{sub} {vals[j]}"
                positionals.append(vals[j])
                i = j + 1
    sub_key = sub.lower()
    sub_entry = prog.subcommands.get(sub_key.split(" ", 1)[0])
    spec = spec_of(sub_entry, prog) if sub_entry is not None else glob
    if (key, sub_key) in _RUNNERS:
        opts, _, j = _getopt(vals, i, end, spec, stop_first=True)
        flags |= _flags(opts, spec)
        call = _optval(opts, "c", "call") if key == "npm" else None
        if call is not None:
            out.shells.append((call, f"{key} {sub_key} -c"))
        elif j < end:
            out.inners.append((j, end, f"{key} {sub_key}"))
        out.opt_end = j
        out.flags = flags
        out.subcommand = sub
        out.positionals = positionals + list(vals[j:])
        return
    opts, pos, _ = _getopt(vals, i, end, spec)
    flags |= _flags(opts, spec)
    out.flags = flags
    out.subcommand = sub
    out.positionals = positionals + pos
    if key == "git":
        _git_shells(g_opts, sub_key, opts, out)
        out.paths.extend(v for n, v in g_opts if n in ("C", "git-dir", "work-tree") and v)
        rest = vals[i:end]
        if "--" in rest:  # pathspecs
            out.paths.extend(p for p in rest[rest.index("--") + 1 :] if p)
        elif sub_key == "diff" and _has(opts, "no-index"):
            out.paths.extend(p for p in pos if p)


_TAR_OLD_STYLE = re.compile(r"[A-Za-z]+")


def _tar_old_style(vals: Sequence[str]) -> list[str]:
    """``tar xzf a.tgz dir`` -> ``tar -x -z -f a.tgz dir`` (value letters take args in order)."""
    out: list[str] = []
    rest = list(vals[1:])
    for c in vals[0]:
        out.append("-" + c)
        if c in _spec("tar").val_short and rest:
            out.append(rest.pop(0))
    return out + rest


def _git_shells(g_opts: _Opts, sub: str, opts: _Opts, out: _Out) -> None:
    configs = [v for n, v in g_opts if n == "c" and v]
    if sub == "clone":
        configs += [v for n, v in opts if n in ("c", "config") and v]
    for kv in configs:
        k, eq, v = kv.partition("=")
        if not eq or not v:
            continue
        if _GIT_SHELL_KEYS.fullmatch(k):
            out.shells.append((v, "git -c"))
        elif _GIT_BANG_KEYS.fullmatch(k) and v.startswith("!"):
            out.shells.append((v[1:], "git -c"))
    if sub == "rebase":
        for n, ov in opts:
            if n in ("x", "exec") and ov:
                out.shells.append((ov, "git rebase --exec"))


def _chmod_flags(vals: Sequence[str], spec: _Spec) -> set[str]:
    flagged = [v for v in vals if v.startswith("-") and v != "-" and not _CHMOD_MODE.fullmatch(v)]
    opts, _, _ = _getopt(flagged, 0, len(flagged), spec)
    return _flags(opts, spec)


def _paths(key: str, prog: Program | None, opts: _Opts, pos: list[str], out: _Out) -> None:
    """Path operands and option values of a program (raw, unresolved): those whose catalogue
    role names a file (``read``, ``write``, ``delete``, ``create``, ``chdir``)."""
    if prog is None:
        return
    spec = spec_of(prog)
    found: list[str] = []
    replaced: list[str] = []
    operands_as = ""
    for n, v in opts:
        shape = spec.shaping.get(n)
        if shape is not None:
            if shape[0]:
                replaced.append(shape[0])
            operands_as = shape[1] or operands_as
        if v and n in spec.path_values:
            found.append(v)
        elif v and key == "curl":
            found.extend(_curl_files(n, v))
    if pos:
        at = 0
        for take, is_path in _plan(prog, tuple(replaced), operands_as, len(pos)):
            if is_path:
                found.extend(pos[at : at + take])
            at += take
    if key == "dd":
        found.extend(p[3:] for p in pos if p.startswith(("if=", "of=")) and len(p) > 3)
    out.paths.extend(p for p in found if p and p not in ("-", "{}") and p[:2] not in _PROC_SUBST)


_PLANS: dict[tuple[int, tuple[str, ...], str, int], tuple[Program, tuple[tuple[int, bool], ...]]] = {}


def _plan(prog: Program, replaced: tuple[str, ...], operands_as: str, n: int) -> tuple[tuple[int, bool], ...]:
    """For ``n`` operands of ``prog``: (how many each slot takes, whether they are paths),
    slots assigned as the effects reader assigns them (kept per program and shape)."""
    key = (id(prog), replaced, operands_as, n)
    known = _PLANS.get(key)
    if known is not None and known[0] is prog:
        return known[1]
    slots = slots_for(prog, replaced)
    plan = tuple(
        (take, (operands_as if operands_as and s.count in ("*", "+") else s.role) in PATH_ROLES
         or s.last_is in PATH_ROLES)
        for s, take in zip(slots, takes(slots, n), strict=True))
    if len(_PLANS) >= 4096:
        _PLANS.clear()
    _PLANS[key] = (prog, plan)  # the program is kept, so its id is not reused
    return plan


def _curl_files(n: str, v: str) -> list[str]:
    """Files curl reads from a data or form value (``-d @FILE``, ``-F name=@FILE``)."""
    if n in ("d", "data", "data-binary", "data-ascii", "json"):
        return [v[1:]] if v.startswith("@") and v[1:] != "-" else []
    if n == "data-urlencode":
        head, at, tail = v.partition("@")
        return [tail] if at and "=" not in head and tail != "-" else []
    if n in ("F", "form"):
        _, eq, fv = v.partition("=")
        return [fv[1:].split(";", 1)[0]] if eq and fv[:1] in ("@", "<") and fv[1:] != "-" else []
    return []


def _analyse_argv(vals: Sequence[str], name: str) -> _Out:
    """Flags, positionals, paths, inner commands and shell strings of one argv."""
    key = name.lower()
    prog = entry(key)
    plain = prog is not None and prog.syntax == "none" and not prog.subcommands  # echo: all operands
    if (prog is None or plain) and key not in _WRAPPERS and key not in _NPX_NAMES:
        # a program the catalogue knows nothing about, or one whose words are all operands
        out = _Out(len(vals))
        if any(v[:1] == "-" for v in vals):
            opts, out.positionals, _ = _getopt(vals, 0, len(vals), _DEFAULT)
            out.flags = _flags(opts, _DEFAULT)
        else:
            out.positionals = list(vals)
        return out
    handler = _WRAPPERS.get(key)
    if handler is not None:
        out, opts = handler(name, vals)
        if key == "find":
            _find_program(vals, out)
            return out
        spec = _spec(key)
        out.flags = _flags(opts, spec)
        out.positionals = [v for v in _getopt(vals, 0, out.opt_end, spec)[1]] + list(
            vals[out.opt_end :]
        )
        if key == "ssh":
            _paths(key, prog, opts, [], out)
        return out
    out = _Out(opt_end=len(vals))
    _parse_program(key, prog, vals, out)
    if key in ("rsync", "scp", "sftp"):
        opts, _, _ = _getopt(vals, 0, len(vals), _spec(key))
        for n, v in opts:
            if n in ("e", "rsh") and v:
                out.shells.append((v, f"{key} -e"))
            elif n == "o" and v:
                m = _SSH_CMD_OPTS.fullmatch(v)
                if m:
                    out.shells.append((m.group(2), f"{key} -o"))
    return out


_NPX_NAMES = frozenset({"npx", "bunx", "pnpx", "uvx"})


def _find_program(vals: Sequence[str], out: _Out) -> None:
    inner: set[int] = set()
    for a, b, _ in out.inners:
        inner.update(range(a - 1, b + 1))
    flags: set[str] = set()
    pos: list[str] = []
    expr = False
    for k, v in enumerate(vals):
        if k in inner:
            if k < len(vals) and vals[k] in ("-exec", "-execdir", "-ok", "-okdir"):
                flags.add(vals[k][1:])
            continue
        if len(v) > 1 and v[0] == "-":
            expr = True
            flags.add(v.lstrip("-").partition("=")[0])
        elif v in ("(", "!", ")", ","):
            expr = True
        elif not expr:
            pos.append(v)
    out.flags = flags
    out.positionals = pos
    out.paths.extend(p for p in pos if p and p != "-")



def unwraps(program: str, subcommand: str = "") -> bool:
    """Whether the walk lists the command ``program`` (or ``program subcommand``) runs as its
    own command (a wrapper such as ``nice``/``xargs``/``sudo``, a shell's ``-c`` string,
    ``uv run``, ``npx``): its ``exec``/``shell`` operands are then analysed, not hidden."""
    key = program.lower()
    return key in _WRAPPERS or key in _NPX_NAMES or (key, subcommand.lower()) in _RUNNERS
