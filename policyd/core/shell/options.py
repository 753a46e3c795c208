"""The getopt-like reader the walk uses to fill ``flags``/``subcommand``/``positionals`` and
find a wrapper's command, over specs derived from the catalogue (``policyd/catalogue``): the
catalogue is the one description of options, their arity and effects; nothing here lists one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from policyd.core.shell import catalogue
from policyd.core.shell.catalogue import Option, Program

# --------------------------------------------------------------------------- specs from the catalogue


@dataclass(frozen=True, slots=True)
class _Spec:
    """How a program's options are spelled (enough to skip option values)."""

    val_short: str = ""  # short options taking a value (attached or the next argument)
    opt_short: str = ""  # short options whose value can only be attached (sed -i.bak)
    num_short: str = ""  # short options taking the next argument only if numeric (make -j 4)
    val_long: frozenset[str] = frozenset()
    aliases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    known_long: frozenset[str] = frozenset()  # long names, for GNU unique-prefix abbreviations
    single_dash_long: bool = False  # -name style long options (find, terraform, go)
    stop: bool = False  # options end at the first positional (POSIX / docker run IMAGE)
    path_values: frozenset[str] = frozenset()  # options whose value names a file (PATH_ROLES)
    #: options that change the operand slots: name -> (replaces, operands_as)
    shaping: Mapping[str, tuple[str, str]] = field(default_factory=dict)


_DEFAULT = _Spec()
#: Option value and operand roles that name a file or directory (``path_args``).
PATH_ROLES = frozenset({"read", "write", "delete", "create", "chdir", "run"})


def _spec_from(options: Sequence[Option], syntax: str) -> _Spec:
    """The getopt view of catalogue options (their arity; aliases are an option's spellings):
    the one source of what takes a value (issue 32: no second table)."""
    sd = syntax == "single-dash"
    val_short: list[str] = []
    opt_short: list[str] = []
    val_long: set[str] = set()
    longs: set[str] = set()
    aliases: dict[str, set[str]] = {}
    path_values: set[str] = set()
    shaping: dict[str, tuple[str, str]] = {}
    seen: set[str] = set()
    for o in options:
        bare: list[str] = []
        for n in o.names:
            if n in seen:
                continue  # a subcommand's own option comes first (as the effects reader looks it up)
            seen.add(n)
            if n.startswith("--"):
                b = n[2:]
            elif n.startswith("-") and (len(n) == 2 or sd):
                b = n[1:]
            else:
                continue  # -NUM, +x, gnu multi-letter single-dash spellings (-pl): flags
            bare.append(b)
            if len(b) == 1 and not sd:
                if o.arity == 1:
                    val_short.append(b)
                elif o.arity == "optional":
                    opt_short.append(b)
            else:
                longs.add(b)
                if o.arity == 1:
                    val_long.add(b)
        for b in bare:
            aliases.setdefault(b, set()).update(x for x in bare if x != b)
            if o.arity != 0 and o.value in PATH_ROLES:
                path_values.add(b)
            if o.replaces or o.operands_as:
                shaping[b] = (o.replaces, o.operands_as)
    return _Spec("".join(val_short), "".join(opt_short), "", frozenset(val_long),
                 {k: tuple(sorted(v)) for k, v in aliases.items()},
                 frozenset(longs) if syntax == "gnu" else frozenset(), sd, syntax == "posix",
                 frozenset(path_values), shaping)


_SPECS: dict[tuple[int, int], tuple[Program, Program | None, _Spec]] = {}


def spec_of(p: Program | None, parent: Program | None = None) -> _Spec:
    """The getopt spec of catalogue entry ``p`` (with ``parent``'s options too, for a
    subcommand: global options may follow it); kept per entry."""
    if p is None:
        return _DEFAULT
    key = (id(p), id(parent))
    known = _SPECS.get(key)
    if known is not None and known[0] is p and known[1] is parent:
        return known[2]
    opts = tuple(p.options) + (tuple(parent.options) if parent is not None else ())
    spec = _spec_from(opts, p.syntax)
    if len(_SPECS) >= 4096:  # catalogues rebuilt many times over: start again
        _SPECS.clear()
    _SPECS[key] = (p, parent, spec)  # the entries are kept, so their ids are not reused
    return spec


def entry(name: str) -> Program | None:
    """The shipped catalogue's entry for a program name (lower case)."""
    return catalogue.default().get(name)


# Names whose stdin is read as shell when they get no command string / script.
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "yash",
                     "posh", "csh", "tcsh", "rbash"})
_PROC_SUBST = ("<(", ">(")  # operands that are process substitutions, not paths
_CHMOD_MODE = re.compile(r"[-+=][rwxXstugo]*")
# git config keys whose value git runs through the shell (``!`` prefixed for alias/helper).
_GIT_SHELL_KEYS = re.compile(
    r"(core\.(pager|editor|sshcommand|fsmonitor)|sequence\.editor|diff\.external|pager\..+|"
    r"(filter|merge|diff)\..+\.(clean|smudge|process|driver|textconv|command)|"
    r"uploadpack\.packobjectshook)",
    re.I,
)
_GIT_BANG_KEYS = re.compile(r"(alias\..+|credential(\..+)?\.helper)", re.I)
_SSH_CMD_OPTS = re.compile(r"\s*(proxycommand|localcommand|knownhostscommand)\s*[= ]\s*(.+)",
                           re.I | re.S)


# --------------------------------------------------------------------------- option parsing

_Opts = list[tuple[str, str | None]]


def _long_name(name: str, spec: _Spec) -> str:
    if name in spec.known_long or len(name) < 2:
        return name
    hits = [k for k in spec.known_long if k.startswith(name)]
    return hits[0] if len(hits) == 1 else name


def _getopt(
    vals: Sequence[str], i: int, end: int, spec: _Spec, stop_first: bool = False
) -> tuple[_Opts, list[str], int]:
    """Parse ``vals[i:end]`` as options of ``spec``.

    Returns (options as (name, value or None), positionals, index). With ``stop_first`` it
    stops at the first positional and the index is that positional's; else it is ``end``.
    """
    opts: _Opts = []
    pos: list[str] = []
    while i < end:
        a = vals[i]
        if a == "--":
            if stop_first:
                return opts, pos, i + 1
            pos.extend(vals[i + 1 : end])
            break
        if len(a) > 1 and a[0] == "-":
            if a[1] == "-" or spec.single_dash_long:
                body = a[2:] if a[1] == "-" else a[1:]
                name, eq, value = body.partition("=")
                name = _long_name(name, spec)
                if eq:
                    opts.append((name, value))
                elif name in spec.val_long and i + 1 < end:
                    opts.append((name, vals[i + 1]))
                    i += 1
                else:
                    opts.append((name, None))
            else:
                j = 1
                while j < len(a):
                    c = a[j]
                    rest = a[j + 1 :]
                    if c in spec.val_short:
                        if rest:
                            opts.append((c, rest))
                        elif i + 1 < end:
                            opts.append((c, vals[i + 1]))
                            i += 1
                        else:
                            opts.append((c, None))
                        break
                    if c in spec.opt_short:
                        opts.append((c, rest or None))
                        break
                    if c in spec.num_short and not rest and i + 1 < end and vals[i + 1].isdigit():
                        opts.append((c, vals[i + 1]))
                        i += 1
                        break
                    opts.append((c, None))
                    j += 1
        else:
            if stop_first:
                return opts, pos, i
            pos.append(a)
            if spec.stop:
                pos.extend(vals[i + 1 : end])
                break
        i += 1
    return opts, pos, end


def _flags(opts: _Opts, spec: _Spec) -> set[str]:
    out: set[str] = set()
    for name, _ in opts:
        if not name or (len(name) == 1 and not name.isalnum()):
            continue
        out.add(name)
        out.update(spec.aliases.get(name, ()))
    return out


