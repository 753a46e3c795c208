"""Option tables of well-known programs (what takes a value, aliases, subcommands) and the
getopt-like parser the walk uses to fill ``flags``/``subcommand``/``positionals``.

The effect of each option is not here: it is in the catalogue (``policyd/catalogue``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

# --------------------------------------------------------------------------- option tables


def _aliases(dsl: str) -> dict[str, tuple[str, ...]]:
    """``"r R recursive|D>delete force"``: groups of equivalent names; ``a>b c`` one-way."""
    out: dict[str, set[str]] = {}
    for group in dsl.split("|"):
        if ">" in group:
            left, right = group.split(">", 1)
            for name in left.split():
                out.setdefault(name, set()).update(right.split())
            continue
        names = group.split()
        for name in names:
            out.setdefault(name, set()).update(n for n in names if n != name)
    return {k: tuple(sorted(v)) for k, v in out.items()}


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


def _mk(
    vs: str = "",
    vl: str = "",
    al: str = "",
    opt: str = "",
    ns: str = "",
    sd: bool = False,
    stop: bool = False,
) -> _Spec:
    """A spec from compact strings: ``vs``/``opt``/``ns`` short letters taking a value (always,
    attached only, numeric only), ``vl`` long names taking a value, ``al`` alias groups."""
    aliases = _aliases(al)
    vlong = frozenset(vl.split())
    longs = {n for n in aliases if len(n) > 1} | set(vlong)
    for targets in aliases.values():
        longs.update(n for n in targets if len(n) > 1)
    return _Spec(vs, opt, ns, vlong, aliases, frozenset(longs), sd, stop)


def _merge(a: _Spec, b: _Spec) -> _Spec:
    aliases = {k: tuple(sorted(set(a.aliases.get(k, ())) | set(b.aliases.get(k, ())))) for k in
               set(a.aliases) | set(b.aliases)}
    return _Spec(
        a.val_short + b.val_short,
        a.opt_short + b.opt_short,
        a.num_short + b.num_short,
        a.val_long | b.val_long,
        aliases,
        a.known_long | b.known_long,
        a.single_dash_long or b.single_dash_long,
        a.stop or b.stop,
    )


_DEFAULT = _Spec()

_RM = _mk(al="r R recursive|f force|i interactive|I|d dir|v verbose|one-file-system|"
          "no-preserve-root|preserve-root")
_CP = _mk(vs="tS", vl="target-directory suffix backup reflink sparse preserve",
          al="r R recursive|f force|i interactive|n no-clobber|a archive|l link|"
             "s symbolic-link|u update|v verbose|L dereference|P no-dereference|"
             "x one-file-system|b backup|T no-target-directory|t target-directory|p")
_MV = _mk(vs="tS", vl="target-directory suffix backup",
          al="r R recursive|f force|i interactive|n no-clobber|u update|v verbose|b backup|"
             "T no-target-directory|t target-directory")
_CHOWN = _mk(vl="reference from",
             al="R r recursive|f silent quiet|v verbose|c changes|h no-dereference|H|L|P")
_CHMOD = _mk(vl="reference", al="R recursive|f silent quiet|v verbose|c changes")
_LN = _mk(vs="tS", vl="target-directory suffix",
          al="s symbolic|f force|r relative|n no-dereference|i interactive|v verbose|"
             "b backup|T no-target-directory|t target-directory|L logical|P physical")
_TAR = _mk(vs="fCbTXgKNVIHF", vl="file directory files-from exclude-from exclude "
           "use-compress-program to-command blocking-factor format listed-incremental newer "
           "label transform xform owner group mode mtime index-file info-script rsh-command "
           "starting-file suffix",
           al="c create|x extract get|t list|f file|C directory|z gzip gunzip|j bzip2|"
              "J xz|v verbose|r append|u update|A catenate concatenate|k keep-old-files|"
              "p preserve-permissions|P absolute-names|O to-stdout|h dereference|"
              "T files-from|X exclude-from|d diff compare|I use-compress-program|W verify|"
              "a auto-compress|U unlink-first|delete")
_SED = _mk(vs="efl", opt="i", vl="expression file line-length",
           al="i in-place|n quiet silent|E r regexp-extended|e expression|f file|"
              "s separate|z null-data|u unbuffered|debug|sandbox|posix")
_AWK = _mk(vs="fvF", vl="file assign field-separator", al="f file|v assign|F field-separator")
_GREP = _mk(vs="efmABCdD", vl="regexp file max-count after-context before-context context "
            "include exclude exclude-from exclude-dir label color colour binary-files "
            "devices directories",
            al="r recursive|R dereference-recursive|i ignore-case|n line-number|"
               "l files-with-matches|L files-without-match|v invert-match|E extended-regexp|"
               "F fixed-strings|P perl-regexp|e regexp|f file|c count|o only-matching|"
               "q quiet silent|s no-messages|w word-regexp|x line-regexp|h no-filename|"
               "H with-filename|a text|z null-data|Z null")
_RG = _mk(vs="efgtTmABCMjrdE", vl="regexp file glob iglob type type-not max-count "
          "after-context before-context context max-columns threads replace max-depth "
          "encoding pre pre-glob type-add sort sortr color colors path-separator ignore-file "
          "max-filesize engine",
          al="e regexp|f file|g glob|i ignore-case|n line-number|l files-with-matches|"
             "v invert-match|F fixed-strings|P pcre2|z search-zip|u unrestricted|"
             "uu|hidden|L follow|S smart-case|s case-sensitive|w word-regexp|x line-regexp|"
             "c count|o only-matching|q quiet|a text|files|r replace")
_HEAD = _mk(vs="nc", vl="lines bytes pid sleep-interval max-unchanged-stats",
            al="n lines|c bytes|q quiet silent|v verbose|f follow|F|z zero-terminated")
_CURL = _mk(vs="dFTKoxXHAeEuUbcrmwyYzQtCPi", vl="data data-binary data-ascii data-raw "
            "data-urlencode form form-string upload-file config output proxy request header "
            "user-agent referer cacert capath cert key user proxy-user cookie cookie-jar range "
            "max-time write-out speed-limit speed-time time-cond quote telnet-option "
            "continue-at ftp-port interface json url output-dir connect-timeout retry "
            "resolve connect-to",
            al="d data|F form|T upload-file|K config|o output|O remote-name|L location|"
               "k insecure|s silent|S show-error|f fail|X request|H header|x proxy|u user|"
               "I head|i include|v verbose|G get|b cookie|c cookie-jar")
_WGET = _mk(vs="OoaiPeUtTwQlAR", vl="output-document output-file append-output input-file "
            "directory-prefix execute user-agent tries timeout wait quota level accept reject "
            "post-data post-file body-data body-file method header user password "
            "load-cookies save-cookies",
            al="O output-document|i input-file|P directory-prefix|q quiet|r recursive|"
               "m mirror|c continue|N timestamping|k convert-links|np no-parent")
_SHRED = _mk(vs="ns", vl="iterations size random-source",
             al="f force|n iterations|s size|u remove|v verbose|x exact|z zero")
_INSTALL = _mk(vs="gmotS", vl="group mode owner target-directory suffix",
               al="d directory|D|t target-directory|m mode|o owner|g group|s strip|v verbose|"
                  "b backup|C compare|p preserve-timestamps")
_RSYNC = _mk(vs="efMTB", vl="rsh exclude include filter files-from exclude-from include-from "
             "rsync-path password-file log-file backup-dir temp-dir partial-dir compare-dest "
             "copy-dest link-dest chmod chown usermap groupmap timeout contimeout port "
             "bwlimit max-size min-size out-format log-file-format info debug sockopts "
             "block-size checksum-choice compress-choice compress-level skip-compress suffix "
             "modify-window iconv max-delete protocol outbuf remote-option stop-after stop-at "
             "write-batch read-batch only-write-batch address",
             al="r recursive|a archive|v verbose|z compress|n dry-run|u update|l links|"
                "L copy-links|p perms|t times|g group|o owner|D|H hard-links|x one-file-system|"
                "e rsh|q quiet|P|c checksum|R relative|delete|delete-before|delete-during|"
                "delete-after|delete-excluded|remove-source-files|force")
_DD = _mk()
_TOUCH = _mk(vs="dtr", vl="date reference time",
             al="a|c no-create|m|h no-dereference|d date|r reference|t")
_TRUNCATE = _mk(vs="sr", vl="size reference",
                al="c no-create|o io-blocks|s size|r reference")
_MKDIR = _mk(vs="m", vl="mode context", al="p parents|v verbose|m mode")
_RMDIR = _mk(al="p parents|v verbose|ignore-fail-on-non-empty")
_TEE = _mk(vl="output-error", al="a append|i ignore-interrupts|p")
_SORT = _mk(vs="ktoST", vl="key field-separator output buffer-size temporary-directory "
            "files0-from parallel sort random-source compress-program batch-size",
            al="o output|r reverse|n numeric-sort|u unique|k key|t field-separator|"
               "f ignore-case|h human-numeric-sort|V version-sort|c check|m merge|s stable")
_CUT = _mk(vs="bcdf", vl="bytes characters delimiter fields output-delimiter",
           al="b bytes|c characters|d delimiter|f fields|s only-delimited")
_BASE64 = _mk(vs="w", vl="wrap", al="d decode|i ignore-garbage|w wrap")
_XXD = _mk(vs="cgloOsn", vl="cols groupsize len offset seek name",
           al="r revert|p ps postscript plain|i include|u|b bits|e")
_STRINGS = _mk(vs="ntTeo", vl="bytes radix target encoding", al="a all|n bytes|t radix")
_DIFF = _mk(vs="CUFIxXSL", vl="context unified ifdef exclude exclude-from starting-file "
            "label from-file to-file line-format",
            al="u unified|r recursive|q brief|N new-file|a text|w ignore-all-space|"
               "b ignore-space-change|i ignore-case|y side-by-side")
_CAT = _mk(al="A show-all|b number-nonblank|e|E show-ends|n number|s squeeze-blank|t|"
              "T show-tabs|u|v show-nonprinting")
_LESS = _mk(vs="bhjkopPTxyz#", vl="log-file LOG-FILE tag tag-file pattern prompt "
            "shift tabs window max-back-scroll max-forw-scroll buffers lesskey-file")
_SCP = _mk(vs="cFiJloPSDX", al="r|p|q|C|v|3|4|6|B|O|T|A")
_FIND = _mk(sd=True)
_SSH = _mk(vs="BbcDEeFIiJLlmOoPpQRSWw", al="4|6|A|a|C|f|G|g|K|k|M|N|n|q|s|T|t|V|v|X|x|Y|y")

_WRAPPER_SPECS: dict[str, _Spec] = {
    "sudo": _mk(vs="aCcDgpRrTtUu", opt="h", vl="user group prompt close-from login-class "
                "role type other-user command-timeout chdir chroot auth-type",
                al="u user|g group|E preserve-env|H set-home|i login|s shell|n non-interactive|"
                   "k reset-timestamp|K remove-timestamp|l list|v validate|b background|"
                   "e edit|P preserve-groups|S stdin|A askpass|B bell|D chdir|R chroot|"
                   "V version|h help|N no-update"),
    "doas": _mk(vs="uC", al="n|s|L|u"),
    "env": _mk(vs="uSCP", vl="unset split-string chdir block-signal default-signal "
               "ignore-signal", al="i ignore-environment|0 null|v debug|u unset|"
                                   "S split-string|C chdir"),
    "nice": _mk(vs="n", vl="adjustment", al="n adjustment"),
    "nohup": _mk(),
    "timeout": _mk(vs="sk", vl="signal kill-after",
                   al="s signal|k kill-after|v verbose|preserve-status|foreground"),
    "time": _mk(vs="fo", vl="format output", al="p portability|v verbose|a append|f format|"
                                                "o output|q quiet"),
    "stdbuf": _mk(vs="ioe", vl="input output error", al="i input|o output|e error"),
    "command": _mk(al="p|v|V"),
    "builtin": _mk(),
    "exec": _mk(vs="a", al="c|l|a"),
    "xargs": _mk(vs="IdEanLPs", opt="iel", vl="arg-file delimiter max-args max-procs "
                 "max-chars process-slot-var",
                 al="0 null|I replace|i|d delimiter|E|e eof|a arg-file|n max-args|"
                    "L max-lines|l|P max-procs|s max-chars|t verbose|p interactive|"
                    "r no-run-if-empty|x exit|o open-tty"),
    "parallel": _mk(vs="adEIjPLnNSsCJ", opt="il", vl="jobs arg-file delimiter sshlogin "
                    "sshloginfile slf colsep joblog results res tmpdir workdir wd tag-string "
                    "timeout delay halt retries basefile bf transfer-file tf return env load "
                    "memfree nice profile max-args max-lines max-chars max-replace-args "
                    "termseq limit",
                    al="j jobs P|k keep-order|v|q quote|u ungroup|g group|X xargs|m|0 null|"
                       "r no-run-if-empty|t verbose|p interactive|n max-args|a arg-file"),
    "watch": _mk(vs="nq", opt="d", vl="interval equexit",
                 al="n interval|d differences|g chgexit|t no-title|b beep|e errexit|p precise|"
                    "c color|C no-color|x exec|w no-wrap|r no-rerun|q equexit"),
    "unbuffer": _mk(al="p"),
    "ionice": _mk(vs="cnpPu", vl="class classdata pid pgid uid",
                  al="c class|n classdata|p pid|P pgid|u uid|t ignore"),
    "setsid": _mk(al="c ctty|f fork|w wait"),
    "flock": _mk(vs="wEc", vl="timeout wait conflict-exit-code command",
                 al="s shared|x exclusive|e|u unlock|n nonblock nb|w timeout wait|o close|"
                    "c command|F no-fork|E conflict-exit-code|verbose"),
    "strace": _mk(vs="eoOpPsSuUbIXaE", al="f|ff|c|C|d|D|i|q|r|t|tt|ttt|T|v|V|w|x|xx|y|yy|k|"
                                          "o output|p attach|e|s string-limit"),
    "ltrace": _mk(vs="eoOpsuaADFlnwx", al="f|c|C|i|r|S|t|tt|ttt|T|o output|p"),
    "chrt": _mk(vs="T", vl="sched-runtime sched-deadline sched-period",
                al="a all-tasks|b batch|d deadline|f fifo|i idle|o other|r rr|R reset-on-fork|"
                   "p pid|m max|v verbose"),
    "taskset": _mk(al="a all-tasks|p pid|c cpu-list"),
    "fakeroot": _mk(vs="lsi", vl="lib faked", al="u unknown-is-real"),
    "torsocks": _mk(vs="uapP", vl="user pass address port", al="i isolate|d debug|q quiet"),
    "proxychains": _mk(vs="f", al="q"),
    "proxychains4": _mk(vs="f", al="q"),
    "nsenter": _mk(vs="tSGwr", opt="mupiUCnT", vl="target setuid setgid wd root",
                   al="a all|F no-fork|Z follow-context|preserve-credentials"),
    "unshare": _mk(vl="setgroups map-user map-group propagation", al="f fork|r map-root-user|"
                   "m mount|u uts|i ipc|n net|p pid|U user|C cgroup|T time"),
    "firejail": _mk(),
    "pkexec": _mk(vl="user", al="disable-internal-agent|keep-cwd"),
    "caffeinate": _mk(vs="tw", al="d|i|m|s|u"),
    "catchsegv": _mk(),
    "valgrind": _mk(),
    "sshpass": _mk(vs="pfdP", al="e|v"),
    "busybox": _mk(),
    "coproc": _mk(),
    "runuser": _mk(vs="ugGcsw", vl="user group supp-group command shell whitelist-environment",
                   al="l login|m p preserve-environment|P pty|c command|u user|g group"),
    "su": _mk(vs="cgGsw", vl="command session-command group supp-group shell "
              "whitelist-environment", al="l login|m p preserve-environment|f fast|P pty|"
                                          "c command|s shell"),
    "script": _mk(vs="cEIOBTm", opt="t", vl="command echo log-in log-out log-io log-timing "
                  "logging-format output-limit", al="a append|c command|e return|f flush|"
                                                   "q quiet|t timing"),
}

_FILE_SPECS: dict[str, _Spec] = {
    "rm": _RM, "rmdir": _RMDIR, "unlink": _DEFAULT, "cp": _CP, "mv": _MV, "ln": _LN,
    "chmod": _CHMOD, "chown": _CHOWN, "chgrp": _CHOWN, "tar": _TAR, "sed": _SED, "gsed": _SED,
    "awk": _AWK, "gawk": _AWK, "mawk": _AWK, "nawk": _AWK,
    "grep": _GREP, "egrep": _GREP, "fgrep": _GREP, "zgrep": _GREP, "rg": _RG, "ag": _RG,
    "head": _HEAD, "tail": _HEAD, "cat": _CAT, "tac": _DEFAULT, "nl": _DEFAULT,
    "less": _LESS, "more": _DEFAULT, "zcat": _DEFAULT, "bat": _DEFAULT, "wc": _DEFAULT,
    "curl": _CURL, "wget": _WGET, "shred": _SHRED, "install": _INSTALL, "rsync": _RSYNC,
    "dd": _DD, "touch": _TOUCH, "truncate": _TRUNCATE, "mkdir": _MKDIR, "tee": _TEE,
    "sort": _SORT, "uniq": _DEFAULT, "cut": _CUT, "base64": _BASE64, "xxd": _XXD,
    "od": _DEFAULT, "hexdump": _DEFAULT, "strings": _STRINGS, "diff": _DIFF, "cmp": _DEFAULT,
    "scp": _SCP, "sftp": _SCP, "find": _FIND, "ssh": _SSH, "source": _DEFAULT, ".": _DEFAULT,
}

# Programs with subcommands: (global-options spec, spec for every subcommand, per-subcommand
# extra specs, mode). mode: "first" (first positional), "aws" (service + operation),
# "make" (first positional that is not VAR=value).


@dataclass(frozen=True, slots=True)
class _SubProg:
    glob: _Spec
    base: _Spec
    subs: Mapping[str, _Spec]
    mode: str = "first"
    plus_toolchain: bool = False  # cargo +nightly build


_GIT_BASE = _mk()
_GIT = _SubProg(
    glob=_mk(vs="Cc", vl="git-dir work-tree namespace super-prefix config-env list-cmds "
             "attr-source",
             al="p paginate|P no-pager|bare|no-replace-objects|literal-pathspecs|"
                "glob-pathspecs|noglob-pathspecs|icase-pathspecs|no-optional-locks|h help|"
                "v version|html-path|man-path|info-path|exec-path"),
    base=_GIT_BASE,
    subs={
        "push": _mk(vs="o", vl="repo receive-pack exec push-option",
                    al="f force|d delete|u set-upstream|n dry-run|q quiet|v verbose|"
                       "4 ipv4|6 ipv6|all|mirror|tags|follow-tags|prune|force-with-lease|"
                       "force-if-includes|no-verify|atomic|porcelain"),
        "commit": _mk(vs="mFCct", opt="uS", vl="message file reuse-message reedit-message "
                      "template author date fixup squash cleanup trailer pathspec-from-file",
                      al="a all|m message|F file|n no-verify|q quiet|v verbose|s signoff|"
                         "e edit|p patch|i include|o only|C reuse-message|c reedit-message|"
                         "amend|allow-empty|no-edit|t template|z null|S gpg-sign|"
                         "u untracked-files"),
        "reset": _mk(vl="pathspec-from-file",
                     al="q quiet|p patch|N intent-to-add|hard|soft|mixed|merge|keep"),
        "clean": _mk(vs="e", vl="exclude",
                     al="f force|d|x|X|n dry-run|i interactive|q quiet|e exclude"),
        "checkout": _mk(vs="bB", vl="conflict orphan pathspec-from-file",
                        al="f force|b|B|t track|q quiet|p patch|m merge|l|detach|2 ours|"
                           "3 theirs|overlay|no-overlay"),
        "switch": _mk(vs="cC", vl="create force-create orphan conflict",
                      al="c create|C force-create|f force discard-changes|d detach|m merge|"
                         "t track|q quiet"),
        "restore": _mk(vs="s", vl="source pathspec-from-file conflict",
                       al="s source|S staged|W worktree|p patch|q quiet|2 ours|3 theirs|"
                          "m merge|overlay|no-overlay"),
        "branch": _mk(vs="u", vl="set-upstream-to sort points-at format contains "
                      "no-contains merged no-merged",
                      al="d delete|D>delete force|f force|m move|M>move force|c copy|"
                         "C>copy force|r remotes|a all|l list|v verbose|q quiet|t track|"
                         "u set-upstream-to"),
        "tag": _mk(vs="mFu", vl="message file local-user sort contains points-at format "
                   "cleanup", al="d delete|f force|a annotate|s sign|m message|F file|"
                                 "u local-user|l list|n|v verify"),
        "stash": _mk(vs="m", vl="message pathspec-from-file",
                     al="p patch|k keep-index|u include-untracked|a all|q quiet|m message|"
                        "S staged"),
        "log": _mk(vs="n", vl="max-count skip since after until before author committer "
                   "grep format output", al="n max-count|p patch|u|s no-patch|oneline|all|"
                                            "graph|stat"),
        "show": _mk(vl="format output", al="p patch|s no-patch|stat"),
        "diff": _mk(vl="output", al="no-index|cached staged|R|stat|name-only|p patch|u"),
        "rm": _mk(vl="pathspec-from-file",
                  al="r|f force|n dry-run|q quiet|cached|ignore-unmatch"),
        "add": _mk(vl="chmod pathspec-from-file",
                   al="A all|f force|u update|p patch|n dry-run|v verbose|i interactive|"
                      "N intent-to-add|e edit"),
        "fetch": _mk(vs="j", vl="depth deepen shallow-since shallow-exclude upload-pack "
                     "refmap jobs", al="f force|p prune|P prune-tags|a append|q quiet|"
                                       "v verbose|t tags|n|all|dry-run"),
        "pull": _mk(vs="j", vl="depth deepen shallow-since shallow-exclude upload-pack "
                    "jobs strategy strategy-option", al="f force|p prune|q quiet|"
                                                        "v verbose|t tags|r rebase|all|"
                                                        "ff-only|no-ff|s strategy|"
                                                        "X strategy-option"),
        "rebase": _mk(vs="xsX", vl="onto exec strategy strategy-option",
                      al="i interactive|f force-rebase|x exec|s strategy|X strategy-option|"
                         "q quiet|v verbose|abort|continue|skip|r rebase-merges|root"),
        "clone": _mk(vs="bocju", vl="branch origin config depth reference template "
                     "separate-git-dir upload-pack jobs filter server-option shallow-since "
                     "shallow-exclude",
                     al="b branch|o origin|c config|n no-checkout|q quiet|v verbose|l local|"
                        "s shared|bare|mirror|recursive recurse-submodules|u upload-pack"),
        "config": _mk(vs="f", vl="file blob type default",
                      al="global|system|local|l list|e edit|unset|unset-all|get|add"),
        "grep": _mk(vs="efABCm", vl="regexp file max-count after-context before-context "
                    "context", al="e regexp|f file|i ignore-case|n line-number|v invert-match"),
    },
)

_DOCKER_RUN = _mk(vs="eEvpuwlmhcaP", vl="env env-file volume publish name user workdir "
                  "network mount entrypoint label label-file cpus memory platform hostname "
                  "add-host device restart cap-add cap-drop security-opt ulimit log-driver "
                  "log-opt pid ipc gpus runtime dns tmpfs expose link volumes-from shm-size "
                  "stop-signal stop-timeout health-cmd cidfile cgroupns userns uts "
                  "memory-swap cpu-shares cpuset-cpus pull attach",
                  al="d detach|i interactive|t tty|rm|privileged|e env|v volume|p publish|"
                     "P publish-all|u user|w workdir|h hostname|m memory|l label|q quiet|"
                     "a attach|init", stop=True)
_DOCKER = _SubProg(
    glob=_mk(vs="Hcl", vl="host context config log-level tlscacert tlscert tlskey",
             al="D debug|H host|c context|l log-level|tls|tlsverify|v version"),
    base=_mk(vl="filter format", al="f force|v volumes|a all|q quiet|l link|no-prune"),
    subs={
        "run": _DOCKER_RUN,
        "create": _DOCKER_RUN,
        "exec": _mk(vs="euw", vl="env env-file user workdir detach-keys",
                    al="d detach|i interactive|t tty|e env|u user|w workdir|privileged",
                    stop=True),
        "build": _mk(vs="tf", vl="tag file build-arg target platform network label "
                     "cache-from output progress secret ssh iidfile",
                     al="t tag|f file|q quiet|pull|no-cache"),
    },
)
_KUBE_SPEC = _mk(vs="nsfloLckp", vl="namespace server context cluster kubeconfig user token "
                 "as as-group request-timeout certificate-authority client-certificate "
                 "client-key tls-server-name filename selector output container kustomize "
                 "field-selector grace-period timeout sort-by template cascade",
                 al="n namespace|A all-namespaces|f filename|l selector|o output|c container|"
                    "R recursive|i stdin|t tty|k kustomize|all|force|wait|dry-run|"
                    "insecure-skip-tls-verify")
_HELM_SPEC = _mk(vs="nfo", vl="namespace kube-context kubeconfig registry-config "
                 "repository-config repository-cache kube-apiserver kube-token kube-as-user "
                 "values set set-string set-file set-json version repo timeout output",
                 al="n namespace|f values|o output|i install|debug|wait|atomic|force|dry-run|"
                    "A all-namespaces")
_NPM_SPEC = _mk(vs="wC", vl="prefix workspace registry userconfig globalconfig cache "
                "loglevel tag otp",
                al="g global|D save-dev|S save|E save-exact|O save-optional|P save-prod|"
                   "f force|y yes|w workspace|ws workspaces|C prefix|dry-run|ignore-scripts|"
                   "s silent|q quiet")
_PNPM_SPEC = _mk(vs="CF", vl="dir filter config reporter",
                 al="C dir|F filter|w workspace-root|r recursive|g global|D save-dev|"
                    "P save-prod|O save-optional|E save-exact|frozen-lockfile")
_YARN_SPEC = _mk(vl="cwd modules-folder cache-folder",
                 al="D dev|P peer|O optional|E exact|W ignore-workspace-root-check|g global")
_CARGO_SPEC = _mk(vs="CZpjF", vl="config color manifest-path package jobs features target "
                  "bin example test bench target-dir profile message-format root",
                  al="r release|p package|j jobs|F features|all-features|no-default-features|"
                     "workspace|all|q quiet|v verbose|V version|locked|offline|frozen|"
                     "f force|n dry-run")
_GO_SPEC = _mk(sd=True, vl="o C p modfile overlay pkgdir tags toolexec exec ldflags gcflags "
               "asmflags gccgoflags mod buildmode compiler installsuffix run bench count cpu "
               "timeout coverprofile cpuprofile memprofile blockprofile mutexprofile trace "
               "outputdir parallel list skip shuffle fuzz fuzztime covermode coverpkg "
               "benchtime")
_TF_SPEC = _mk(sd=True, vl="var var-file target state state-out backup lock-timeout "
               "parallelism out replace chdir",
               al="auto-approve|destroy|refresh-only|lock|input|json|no-color|force|"
                  "compact-warnings|recursive")
_PIP_SPEC = _mk(vs="rcetif", vl="cache-dir log proxy retries timeout exists-action "
                "trusted-host cert client-cert python requirement constraint editable target "
                "index-url extra-index-url find-links prefix root src platform "
                "python-version implementation abi upgrade-strategy progress-bar "
                "config-settings",
                al="v verbose|q quiet|V version|isolated|no-cache-dir|"
                   "disable-pip-version-check|user|break-system-packages|require-virtualenv|"
                   "U upgrade|y yes|e editable|r requirement|c constraint|t target|"
                   "i index-url|f find-links|pre|force-reinstall|I ignore-installed|no-deps")
_APT_SPEC = _mk(vs="otc", vl="option target-release config-file",
                al="y yes assume-yes|q quiet|s simulate dry-run just-print no-act|"
                   "f fix-broken|purge|no-install-recommends|reinstall|allow-downgrades|"
                   "allow-remove-essential|allow-change-held-packages|force-yes|"
                   "d download-only|m ignore-missing")
_DNF_SPEC = _mk(vs="cxR", vl="config exclude installroot releasever repo enablerepo "
                "disablerepo setopt", al="y assumeyes|q quiet|C cacheonly|b best|"
                                         "allowerasing|nogpgcheck")
_SYSTEMCTL_SPEC = _mk(vs="tpHMnos", vl="type property host machine state lines output "
                      "signal root kill-whom what job-mode preset-mode timestamp",
                      al="user|system|global|now|f force|q quiet|no-block|a all|l full|"
                         "r recursive|i ignore-inhibitors")
_AWS_SPEC = _mk(vl="region profile output endpoint-url query cli-read-timeout "
                "cli-connect-timeout ca-bundle color cli-binary-format cli-input-json "
                "exclude include acl storage-class",
                al="debug|no-verify-ssl|no-paginate|no-sign-request|no-cli-pager|version|"
                   "recursive|dryrun|force|quiet|delete")
_GCLOUD_SPEC = _mk(vl="project account configuration format verbosity "
                   "impersonate-service-account billing-project flatten filter limit "
                   "sort-by page-size zone region", al="q quiet|log-http")
_BREW_SPEC = _mk(al="f force|v verbose|d debug|q quiet|cask|formula|zap|greedy")
_MAKE_SPEC = _mk(vs="CfIoWE", ns="jl", vl="directory file makefile include-dir old-file "
                 "assume-old what-if new-file assume-new eval",
                 al="n just-print dry-run recon|k keep-going|B always-make|s silent quiet|"
                    "i ignore-errors|q question|t touch|e environment-overrides|C directory|"
                    "f file makefile|j jobs|W what-if new-file assume-new|o old-file assume-old")
_GH_SPEC = _mk(vs="R", vl="repo hostname", al="R repo")
_UV_SPEC = _mk(vs="p", vl="directory project cache-dir python config-file with "
               "with-requirements with-editable package extra group index env-file "
               "default-index index-url extra-index-url",
               al="q quiet|v verbose|n no-cache|offline|frozen|locked|no-sync|isolated")
_POETRY_SPEC = _mk(vs="CP", vl="directory project", al="n no-interaction|q quiet|v verbose")
_CONDA_SPEC = _mk(vs="np", vl="name prefix cwd", al="n name|p prefix|y yes|q quiet")


def _simple(spec: _Spec, subs: Mapping[str, _Spec] | None = None, mode: str = "first",
            plus: bool = False) -> _SubProg:
    """A subcommand program whose options are the same before and after the subcommand."""
    return _SubProg(spec, spec, {k: _merge(spec, v) for k, v in (subs or {}).items()},
                    mode, plus)


_SUBPROGS: dict[str, _SubProg] = {
    "git": _GIT,
    "docker": _DOCKER,
    "podman": _DOCKER,
    "docker-compose": _simple(_mk(vs="fp", vl="file project-name", al="f file|d detach|"
                                  "v volumes")),
    "kubectl": _simple(_KUBE_SPEC),
    "oc": _simple(_KUBE_SPEC),
    "helm": _simple(_HELM_SPEC),
    "npm": _simple(_NPM_SPEC),
    "pnpm": _simple(_PNPM_SPEC),
    "yarn": _simple(_YARN_SPEC),
    "bun": _simple(_mk(vl="cwd", al="d dev D development|g global")),
    "cargo": _simple(_CARGO_SPEC, plus=True),
    "rustup": _simple(_mk(), plus=True),
    "go": _simple(_GO_SPEC),
    "terraform": _simple(_TF_SPEC),
    "tofu": _simple(_TF_SPEC),
    "pip": _simple(_PIP_SPEC),
    "pip3": _simple(_PIP_SPEC),
    "pipx": _simple(_mk(vl="python spec index-url", al="f force")),
    "uv": _simple(_UV_SPEC),
    "poetry": _simple(_POETRY_SPEC),
    "pipenv": _simple(_mk()),
    "pdm": _simple(_mk(vs="p", vl="project", al="g global")),
    "conda": _simple(_CONDA_SPEC),
    "mamba": _simple(_CONDA_SPEC),
    "bundle": _simple(_mk(vl="gemfile")),
    "gem": _simple(_mk(vs="i", vl="install-dir version source", al="f force|y")),
    "apt": _simple(_APT_SPEC),
    "apt-get": _simple(_APT_SPEC),
    "dnf": _simple(_DNF_SPEC),
    "yum": _simple(_DNF_SPEC),
    "zypper": _simple(_mk(al="n non-interactive|y")),
    "apk": _simple(_mk(vs="X", vl="repository root", al="U update-cache|no-cache")),
    "snap": _simple(_mk()),
    "systemctl": _simple(_SYSTEMCTL_SPEC),
    "aws": _simple(_AWS_SPEC, mode="aws"),
    "gcloud": _simple(_GCLOUD_SPEC),
    "az": _simple(_mk(vs="go", vl="subscription output query resource-group name",
                      al="y yes|g resource-group|o output|n name")),
    "gsutil": _simple(_mk(vs="houp", al="m|q|r R recursive|f force")),
    "brew": _simple(_BREW_SPEC),
    "gh": _simple(_GH_SPEC),
    "make": _simple(_MAKE_SPEC, mode="make"),
    "gmake": _simple(_MAKE_SPEC, mode="make"),
    "dotnet": _simple(_mk()),
    "hg": _simple(_mk(vs="R", vl="repository cwd config", al="f force")),
    "svn": _simple(_mk()),
    "composer": _simple(_mk(vs="d", vl="working-dir")),
    "flatpak": _simple(_mk()),
    "heroku": _simple(_mk(vs="ar", vl="app remote")),
    "fly": _simple(_mk(vs="ac", vl="app config")),
    "flyctl": _simple(_mk(vs="ac", vl="app config")),
    "vercel": _simple(_mk(vl="scope token cwd", al="y yes|prod")),
    "firebase": _simple(_mk(vl="project", al="P project|f force")),
    "deno": _simple(_mk(al="A allow-all")),
    "turbo": _simple(_mk(vl="filter")),
    "nx": _simple(_mk()),
    "pulumi": _simple(_mk(vs="sC", vl="stack cwd", al="y yes|f skip-preview")),
    "ansible-galaxy": _simple(_mk()),
    "vagrant": _simple(_mk(al="f force")),
    "minikube": _simple(_mk(vs="p", vl="profile")),
    "kind": _simple(_mk(vl="name")),
}

# Names whose stdin is read as shell when they get no command string / script.
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "yash",
                     "posh", "csh", "tcsh", "rbash"})
# Programs whose operands (positionals) are all file paths.
_ALL_POS_FILES = frozenset({
    "rm", "rmdir", "unlink", "touch", "mkdir", "shred", "tee", "cat", "head", "tail",
    "less", "more", "tac", "nl", "wc", "zcat", "bat", "uniq", "cp", "mv", "ln", "install",
    "rsync", "scp", "truncate", "base64", "xxd", "od", "hexdump", "strings", "diff", "cmp",
    "sort", "cut",
})
# Option names (per program) whose value is a path.
_PATH_OPTS: dict[str, frozenset[str]] = {
    "cp": frozenset({"t", "target-directory"}),
    "mv": frozenset({"t", "target-directory"}),
    "ln": frozenset({"t", "target-directory"}),
    "install": frozenset({"t", "target-directory"}),
    "truncate": frozenset({"r", "reference"}),
    "touch": frozenset({"r", "reference"}),
    "chmod": frozenset({"reference"}),
    "chown": frozenset({"reference"}),
    "chgrp": frozenset({"reference"}),
    "shred": frozenset({"random-source"}),
    "sort": frozenset({"o", "output"}),
    "tar": frozenset({"f", "file", "C", "directory", "T", "files-from", "X", "exclude-from"}),
    "sed": frozenset({"f", "file"}),
    "gsed": frozenset({"f", "file"}),
    "awk": frozenset({"f", "file"}),
    "gawk": frozenset({"f", "file"}),
    "grep": frozenset({"f", "file"}),
    "egrep": frozenset({"f", "file"}),
    "fgrep": frozenset({"f", "file"}),
    "zgrep": frozenset({"f", "file"}),
    "rg": frozenset({"f", "file", "ignore-file"}),
    "curl": frozenset({"T", "upload-file", "K", "config", "o", "output", "c", "cookie-jar",
                       "cacert", "cert", "key"}),
    "wget": frozenset({"O", "output-document", "i", "input-file", "post-file", "body-file",
                       "load-cookies", "save-cookies"}),
    "ssh": frozenset({"i", "F"}),
    "scp": frozenset({"i", "F"}),
}
_PATTERN_FIRST = frozenset({"sed", "gsed", "awk", "gawk", "mawk", "nawk", "grep", "egrep",
                            "fgrep", "zgrep", "rg", "ag"})
_PATTERN_GIVEN = frozenset({"e", "expression", "regexp", "f", "file"})
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


