"""Environment variables: which assignments are plain, which reads are harmless (pure).

**Assignments are an allow-list.** ``A=b cmd``, ``export A=b``, ``declare -x A=b``, ``env
A=b cmd`` (and a bare ``A=b``: a name already in the environment is exported by it) change
what a program does whenever the program, or anything it starts, reads the name; no list of
dangerous names is complete (``DEPENDENCIES_OUTPUT`` makes gcc append to a file it names,
``ZIPOPT`` adds zip options, ``TAPE`` names tar's archive, ``LUA_INIT`` is Lua code). So
:func:`assignment_effects` calls an assignment plain only when:

- the name is on :data:`ENV_ALLOW` (harmless to every program: locale, time zone, terminal,
  colour, CI markers, and language switches whose only readers are known and harmless), with
  a literal value of the expected shape (:data:`ENV_ALLOW_VALUES`); or
- the name is on the ``env_plain`` list of *every* program it reaches (the catalogue: names
  that program reads harmlessly, ``GIT_AUTHOR_NAME`` for git); or
- every program it reaches is ``env_closed`` in the catalogue (an ``export`` or a bare
  ``A=b`` also reaches the later calls of a shell an agent keeps: programs not known) (it reads no variable beyond
  its own ``env``/``env_plain`` lists and what every program reads: :data:`ENV_EFFECT`) and
  the name is on neither; or
- the name holds a lower-case letter (POSIX reserves those for applications: system programs
  read upper-case names) and is not one of the few lower-case names tools do read
  (:data:`LOWER_READ`), nor on a reached program's ``env`` list.

A name on a reached program's catalogue ``env`` list is the ``exec`` effect too (it makes
that program run or load code); anything else not plain is the ``env`` effect.

**Reads are an allow-list too.** ``$NAME`` of a name the text itself did not assign reads
the environment; :data:`ENV_READ_ALLOW` lists what is harmless to print (``HOME``,
``PWD``...). Any other name is the ``env-read`` effect (``echo $ANTHROPIC_API_KEY``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

#: Assignments plain for every program (a literal value of the right shape). Each one's
#: readers are known and none runs, loads or writes anything by it:
#: locale (``LANG``, ``LANGUAGE``, ``LC_*``: message language, collation; a value holding
#: ``/`` names a locale directory, refused by the shape), ``TZ`` (a zone name; a path form is
#: refused), ``TERM`` (a terminfo name), ``NO_COLOR``/``FORCE_COLOR``/``CLICOLOR*``/
#: ``COLUMNS``/``LINES`` (output form), ``CI`` (tells tools nobody is at the terminal),
#: ``SOURCE_DATE_EPOCH`` (a timestamp for reproducible builds); language switches read only
#: by one runtime that cannot make it run anything: Python's ``PYTHONUNBUFFERED``,
#: ``PYTHONDONTWRITEBYTECODE``, ``PYTHONHASHSEED``, ``PYTHONIOENCODING``, ``PYTHONWARNINGS``
#: (shape: no module-qualified category, which imports the module),
#: ``PYTEST_DISABLE_PLUGIN_AUTOLOAD`` (loads less); Rust's ``RUST_BACKTRACE``, ``RUST_LOG``
#: (log filters), ``CARGO_TERM_COLOR``, ``CARGO_INCREMENTAL``; Node's ``NODE_ENV`` (a mode
#: name for the project's own code); Go's ``GOOS``/``GOARCH``/``CGO_ENABLED`` (the target);
#: ``DOTNET_CLI_TELEMETRY_OPTOUT``/``DOTNET_NOLOGO``, ``TF_IN_AUTOMATION``, ``HUSKY``
#: (``0`` skips git hooks), ``NPM_CONFIG_LOGLEVEL`` (log level), ``JEST_WORKER_ID``.
#: Not here: ``DEBUG`` (a name many tools read, some as a path or a command), ``PATH``,
#: ``HOME``, ``PYTHONPATH`` (where code is loaded from), anything ``*_OPTIONS``/``*FLAGS``.
ENV_ALLOW: frozenset[str] = frozenset({
    "CI", "LANG", "LANGUAGE", "TZ", "TERM", "NO_COLOR", "FORCE_COLOR", "CLICOLOR",
    "CLICOLOR_FORCE", "COLUMNS", "LINES", "SOURCE_DATE_EPOCH",
    "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED", "PYTHONIOENCODING",
    "PYTHONWARNINGS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "RUST_BACKTRACE", "RUST_LOG",
    "CARGO_TERM_COLOR", "CARGO_INCREMENTAL", "NODE_ENV", "GOOS", "GOARCH", "CGO_ENABLED",
    "DOTNET_CLI_TELEMETRY_OPTOUT", "DOTNET_NOLOGO", "TF_IN_AUTOMATION", "HUSKY",
    "NPM_CONFIG_LOGLEVEL", "JEST_WORKER_ID",
})
_LOCALE = re.compile(r"[A-Za-z0-9_.@-]*")
_WORDLIKE = re.compile(r"[A-Za-z0-9_.,:=+-]*")
#: Allow-listed names whose value must match in full (else the name is not plain).
ENV_ALLOW_VALUES: dict[str, re.Pattern[str]] = {
    # a module-qualified category (``ignore::evil.W``) imports the module
    "PYTHONWARNINGS": re.compile(r"[^.]*"),
    "LANG": _LOCALE, "LANGUAGE": re.compile(r"[A-Za-z0-9_.@:-]*"),
    "TZ": re.compile(r"[A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*"),  # no path form (``:/x``, ``/x``)
    "TERM": re.compile(r"[A-Za-z0-9_.+-]*"),
}
_LC = re.compile(r"LC_[A-Z]+")
#: Names every program may read to run, load or write something (the dynamic loader, libc,
#: shells and the tools programs commonly start): on an ``env_closed`` program these are
#: still effects. Also the names a bare assignment changes in the shell itself.
ENV_EFFECT = re.compile(
    r"(HOME|PATH|.*_PATH|.*PATH|CDPATH|SHELL|ENV|BASH_ENV|BASH_.*|PS[0-9]|PROMPT_COMMAND|IFS|"
    r"SHELLOPTS|BASHOPTS|GLOBIGNORE|TMPDIR|TEMP|TMP|XDG_.*|LD_.*|DYLD_.*|GIT_.*|SSH_.*|"
    r"GNUPG.*|GPG_.*|LESS.*|PAGER|.*PAGER|EDITOR|VISUAL|.*_EDITOR|BROWSER|.*OPTS|.*OPTIONS|"
    r".*FLAGS|.*_ARGS|.*ADDOPTS|.*PLUGINS?|PYTHON.*|PIP_.*|UV_.*|VIRTUAL_ENV|CONDA_.*|"
    r"NODE_.*|NPM_.*|YARN_.*|PNPM_.*|BUN_.*|DENO_.*|PERL.*|RUBY.*|GEM_.*|BUNDLE_.*|JAVA_.*|"
    r"_JAVA_.*|JDK_.*|MAVEN_.*|GRADLE_.*|CARGO_.*|RUSTC.*|RUSTUP_.*|RUSTDOC.*|GO.*|CC|CXX|CPP|"
    r"LD|AR|AS|NM|RANLIB|MAKE.*|MFLAGS|CMAKE_.*|PKG_CONFIG.*|CURL_.*|WGETRC|.*_PROXY|"
    r"DOCKER_.*|KUBECONFIG|AWS_.*|GOOGLE_.*|AZURE_.*|HISTFILE|INPUTRC|TERMINFO.*|LOCPATH|"
    r"NLSPATH|GCONV_PATH|MALLOC_.*|OPENSSL_.*|SSL_.*|REQUESTS_CA_BUNDLE|NETRC|.*_CONFIG|"
    r".*RC|.*_HOOKS?|.*_COMMAND|.*_CMD|.*_EXEC|.*_PROGRAM|.*_BIN|.*_DIR|.*_FILE|.*_HOME|"
    r"DOTNET_.*|COMPLUS_.*|CORECLR_.*|LUA_.*|TAPE|ZIP.*|UNZIP.*|GZIP|BZIP.*|XZ_.*|ZSTD_.*|"
    r"DEPENDENCIES_OUTPUT|SUNPRO_DEPENDENCIES|POSIXLY_CORRECT|HOSTALIASES|RES_OPTIONS|"
    r"LOCALDOMAIN|R_.*|ERL_.*|ELIXIR_.*|OCAML.*|TCL.*|TK_.*|EMACS.*|VIM.*|MYVIMRC|GDB.*|"
    r"PROFILE.*|SHLVL|SUDO_.*|DISPLAY|XAUTHORITY|DBUS_.*|SYSTEMD_.*|OLDPWD)",
    re.I,
)
#: Lower-case names tools do read (else lower-case names are the shell's own, POSIX):
#: proxies (curl, git, pip...), npm's configuration, zsh's arrays tied to PATH and friends,
#: bash's ``histchars``/``auto_resume``.
LOWER_READ = re.compile(r"(.*_proxy|npm_config_.*|yarn_.*|path|cdpath|fpath|manpath|module_path|"
                        r"histchars|auto_resume)", re.I)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class EnvEntry(Protocol):
    """What a catalogue entry says about the environment (``catalogue.Program``)."""

    @property
    def env(self) -> frozenset[str]: ...
    @property
    def env_plain(self) -> frozenset[str]: ...
    @property
    def env_closed(self) -> bool: ...


def _literal(value: str) -> bool:
    return "$" not in value and "`" not in value


def _listed(name: str, names: frozenset[str]) -> bool:
    """``name`` is in ``names`` or under a listed ``PREFIX*``, compared case-insensitively
    (MSBuild reads ``msbuildsdkspath`` as ``MSBuildSDKsPath``)."""
    upper = name.upper()
    return any(upper.startswith(n[:-1].upper()) if n.endswith("*") else upper == n.upper() for n in names)


def assignment_allowed(name: str, value: str) -> bool:
    """Plain for every program: on :data:`ENV_ALLOW` (or ``LC_*``) with a literal value of
    the expected shape."""
    if not _literal(value):
        return False
    if _LC.fullmatch(name):
        return _LOCALE.fullmatch(value) is not None
    if name not in ENV_ALLOW:
        return False
    shape = ENV_ALLOW_VALUES.get(name, _WORDLIKE)
    return shape.fullmatch(value) is not None


def assignment_effects(name: str, value: str, programs: Sequence[EnvEntry | None]) -> frozenset[str]:
    """The effects of assigning ``name=value`` where it reaches ``programs`` (``None``: a
    program the catalogue does not know). Empty: plain; ``{"env"}``: not known to be
    harmless; ``{"env", "exec"}``: a reached program runs or loads code by it."""
    if not _IDENT.fullmatch(name):
        return frozenset({"env", "exec"})  # `a[$(id)]=1`: a subscript is evaluated
    if assignment_allowed(name, value):  # harmless to every program, in this shape
        return frozenset()
    if any(p is not None and _listed(name, p.env) for p in programs):
        return frozenset({"env", "exec"})
    if name != name.upper() and not LOWER_READ.fullmatch(name):
        return frozenset()  # a shell variable: programs read upper-case names (POSIX)
    literal = _literal(value)
    if not programs:  # only the shell itself sees it
        return frozenset() if literal and not ENV_EFFECT.fullmatch(name) else frozenset({"env"})
    for p in programs:
        if p is None or not literal:
            return frozenset({"env"})
        if _listed(name, p.env_plain):
            continue
        if p.env_closed and not ENV_EFFECT.fullmatch(name):
            continue
        return frozenset({"env"})
    return frozenset()


#: Environment names harmless to read (print, test, expand): where the user and the
#: workspace are (``HOME``, ``PWD``, ``OLDPWD``, ``USER``, ``LOGNAME``, ``HOSTNAME``,
#: ``SHELL``, ``PATH``, ``TMPDIR``), locale and terminal (``LANG``, ``LC_*``, ``TZ``,
#: ``TERM``, ``COLUMNS``, ``LINES``), ``CI``, and bash's own state (``BASH_VERSION``,
#: ``RANDOM``, ``SECONDS``, ``LINENO``, ``UID``, ``EUID``, ``PPID``, ``BASHPID``, ``SHLVL``,
#: ``OSTYPE``, ``HOSTTYPE``, ``MACHTYPE``, ``PIPESTATUS``, ``FUNCNAME``, ``IFS``...).
#: Everything else may be a secret the agent's process was started with (API keys, CI
#: tokens).
ENV_READ_ALLOW: frozenset[str] = frozenset({
    "HOME", "PWD", "OLDPWD", "USER", "LOGNAME", "HOSTNAME", "SHELL", "PATH", "TMPDIR", "LANG",
    "LANGUAGE", "TZ", "TERM", "COLUMNS", "LINES", "CI", "BASH_VERSION", "BASH_VERSINFO",
    "BASHPID", "BASH_SOURCE", "BASH_LINENO", "BASH_SUBSHELL", "BASH", "RANDOM", "SRANDOM",
    "SECONDS", "EPOCHSECONDS", "EPOCHREALTIME", "LINENO", "UID", "EUID", "PPID", "SHLVL",
    "OSTYPE", "HOSTTYPE", "MACHTYPE", "PIPESTATUS", "FUNCNAME", "IFS", "GROUPS", "REPLY",
    "OPTIND", "OPTARG",
})


_SPECIAL = re.compile(r"[0-9]+|[?#@*$!_-]")


def read_allowed(name: str) -> bool:
    """Reading ``$name`` prints nothing secret: a special parameter (``$?``, ``$1``, ``$@``),
    a name on :data:`ENV_READ_ALLOW` or ``LC_*``, or a shell variable (a name holding a
    lower-case letter, POSIX's names for applications, but not a proxy URL, which may hold
    a password). ``!NAME`` (``${!NAME}``: a name known at run time) is never allowed."""
    if _SPECIAL.fullmatch(name) or name in ENV_READ_ALLOW or _LC.fullmatch(name):
        return True
    return _IDENT.fullmatch(name) is not None and name != name.upper() and not LOWER_READ.fullmatch(name)
