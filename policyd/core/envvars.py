"""Environment assignments a policy may let pass (pure).

``A=b cmd``, ``export A=b``, ``env A=b cmd`` and variables a command assigns (``printf -v``,
``read``) change what programs do when the name is one they read to find code, options,
pagers, editors, home or config directories. :func:`assignment_allowed` says which are
plain: an allow-listed name with a literal value, or a name matching none of the patterns
of :data:`ENV_EFFECT`, with a literal value. Anything else is the ``env`` effect.
"""

from __future__ import annotations

import re

#: Environment assignments that change nothing a program runs (names with literal values).
ENV_ALLOW: frozenset[str] = frozenset({
    "CI", "NODE_ENV", "RUST_BACKTRACE", "RUST_LOG", "DEBUG", "VERBOSE", "LANG", "LC_ALL",
    "LC_CTYPE", "LANGUAGE", "TZ", "TERM", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "COLUMNS",
    "LINES", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED", "PYTHONIOENCODING",
    "PYTHONWARNINGS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "GIT_PAGER_IN_USE", "GOOS", "GOARCH",
    "CGO_ENABLED", "CARGO_TERM_COLOR", "NPM_CONFIG_LOGLEVEL", "HUSKY", "TF_IN_AUTOMATION",
    "DOTNET_CLI_TELEMETRY_OPTOUT", "JEST_WORKER_ID", "TEST", "RAILS_ENV", "APP_ENV",
})
#: Allow-listed names whose value itself can name code: the value must match in full.
#: PYTHONWARNINGS: a ``module.Category`` field makes Python import ``module``.
ENV_ALLOW_VALUES: dict[str, re.Pattern[str]] = {"PYTHONWARNINGS": re.compile(r"[^.]*")}
#: Environment names (regular expressions) that change what programs run, load or where
#: they write: assigning one is the ``env`` effect. Any name not here and not matching is
#: a plain variable (``FOO=1 git status``).
ENV_EFFECT = re.compile(
    r"(HOME|PATH|.*_PATH|.*PATH|CDPATH|SHELL|ENV|BASH_ENV|BASH_.*|PS[0-9]|PROMPT_COMMAND|IFS|"
    r"SHELLOPTS|BASHOPTS|GLOBIGNORE|TMPDIR|TEMP|TMP|XDG_.*|LD_.*|DYLD_.*|GIT_.*|SSH_.*|"
    r"GNUPG.*|GPG_.*|LESS.*|PAGER|.*_PAGER|EDITOR|VISUAL|.*_EDITOR|BROWSER|.*OPTS|.*OPTIONS|"
    r".*FLAGS|.*_ARGS|.*ADDOPTS|.*PLUGINS?|PYTHON.*|PIP_.*|UV_.*|VIRTUAL_ENV|CONDA_.*|"
    r"NODE_.*|NPM_.*|YARN_.*|PNPM_.*|BUN_.*|DENO_.*|PERL.*|RUBY.*|GEM_.*|BUNDLE_.*|JAVA_.*|"
    r"_JAVA_.*|JDK_.*|MAVEN_.*|GRADLE_.*|CARGO_.*|RUSTC.*|RUSTUP_.*|RUSTDOC.*|GO.*|CC|CXX|CPP|"
    r"LD|AR|AS|NM|RANLIB|MAKE.*|MFLAGS|CMAKE_.*|PKG_CONFIG.*|CURL_.*|WGETRC|.*_PROXY|"
    r"DOCKER_.*|KUBECONFIG|AWS_.*|GOOGLE_.*|AZURE_.*|HISTFILE|INPUTRC|TERMINFO.*|LOCPATH|"
    r"NLSPATH|GCONV_PATH|MALLOC_.*|OPENSSL_.*|SSL_.*|REQUESTS_CA_BUNDLE|NETRC|.*_CONFIG|"
    r".*RC|.*_HOOK|.*_COMMAND|.*_CMD|.*_EXEC|.*_PROGRAM|.*_BIN|.*_DIR|.*_FILE|.*_HOME)",
    re.I,
)


def assignment_allowed(name: str, value: str) -> bool:
    """An assignment that changes nothing a program runs: an allow-listed name with a literal
    value, or a plain name matching no :data:`ENV_EFFECT` pattern, with a literal value."""
    literal = "$" not in value and "`" not in value
    if name in ENV_ALLOW:
        shape = ENV_ALLOW_VALUES.get(name)
        return literal and (shape is None or shape.fullmatch(value) is not None)
    return literal and bool(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name)) and not ENV_EFFECT.fullmatch(name)
