"""Script languages passed as arguments (pure): what a sed, awk, jq or yq program can do
besides transforming text — run commands, read or write other files, print the environment.

:func:`judge_script` returns ``(effects, why_unknown)``; :func:`sed_danger` is a small reader
of GNU sed's command syntax (addresses, ``s///`` flags, ``e``/``r``/``w`` commands).
"""

from __future__ import annotations

import re

_AWK_RISK = re.compile(r"system|getline|\||>|ENVIRON|@include|@load|close|fflush|PROCINFO")
_JQ_ENV = re.compile(r"\$\s*ENV\b|\benv\b|\bstrenv\b|\benvsubst\b|\$\s*__loc__|input_filename")
_JQ_FILES = re.compile(r"\b(import|include|load|load_str|load_xml|load_props|load_base64)\b")


def judge_script(lang: str, text: str) -> tuple[frozenset[str], str]:
    """Effects of a ``lang`` program and why it is unknown (``""`` when known)."""
    if lang == "sed":
        why = sed_danger(text)
        return frozenset(), (f"sed script {why}" if why else "")
    if lang == "awk":
        if _AWK_RISK.search(text):
            return frozenset(), "awk program may run commands, write files or read the environment"
        loop = _awk_unbounded_loop(text)
        return frozenset(), (f"awk program has a loop not known to end: {loop!r}" if loop else "")
    if lang in ("jq", "yq"):
        effects = frozenset({"env-read"}) if _JQ_ENV.search(text) else frozenset()
        if _jq_endless(text):
            effects |= {"endless"}
        return effects, (f"{lang} program loads other files" if _JQ_FILES.search(text) else "")
    return frozenset(), ""


_JQ_RANGE = re.compile(r"\brange\s*\(([^()]*)\)")
_JQ_NUMBER = re.compile(r"\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+")
#: Items a jq ``range`` may produce before it counts as exhausting memory or time.
MAX_JQ_RANGE = 10_000_000


#: A jq range's arguments the analysis bounds: literal numbers, or the input's ``length``.
_JQ_RANGE_ARGS = re.compile(r"(\s|[-+;.]|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|length)*")
#: jq constructs whose end the analysis cannot prove: a user function (it may call itself,
#: ``def f: f; f``), ``until``/``while`` loops, ``recurse`` with a generator (``recurse(.+1)``;
#: plain ``recurse`` and ``..`` walk the finite input), ``infinite`` (``range(0; infinite)``).
_JQ_UNBOUNDED = re.compile(r"\bdef\s|\b(until|while)\s*\(|\brecurse\s*\(|\brecurse_down\b|\binfinite\b")


def _jq_endless(text: str) -> bool:
    """``range(1e10)`` (a literal bound above :data:`MAX_JQ_RANGE`), a range over anything
    but literal numbers and ``length``, a construct of :data:`_JQ_UNBOUNDED`, or ``repeat``
    with no ``limit``/``first`` in the program: it may never end, or fill memory."""
    for m in _JQ_RANGE.finditer(text):
        if not _JQ_RANGE_ARGS.fullmatch(m.group(1)):
            return True
        if any(float(n) > MAX_JQ_RANGE for n in _JQ_NUMBER.findall(m.group(1))):
            return True
    if re.search(r"\brange\s*\((?![^()]*\))", text) or _JQ_UNBOUNDED.search(text):
        return True  # a range whose arguments hold parentheses, or an unbounded construct
    return bool(re.search(r"\brepeat\b", text)) and not re.search(r"\b(limit|first)\s*\(", text)


#: awk's counted loop over a line's fields or a literal count: ``for (i = 1; i <= NF; i++)``.
_AWK_COUNTED = re.compile(r"for\s*\(\s*([A-Za-z_]\w*)\s*=\s*\d+\s*;\s*\1\s*<=?\s*(NF|\d+)\s*;\s*"
                          r"(\1\s*\+\+|\+\+\s*\1)\s*\)")
_AWK_LOOP = re.compile(r"\b(while|do|for|function|func)\b")


def _awk_unbounded_loop(text: str) -> str:
    """The first awk loop or function whose end is not proven (``""``: none): every
    ``while``/``do``/``for``/function except ``for (k in array)`` and the counted loop of
    :data:`_AWK_COUNTED` whose variable nothing else in the program assigns."""
    text = re.sub(r'"(\\.|[^"\\])*"', '""', text)  # words inside strings are no keywords
    for m in _AWK_LOOP.finditer(text):
        rest = text[m.start():]
        if m.group(1) == "for":
            if re.match(r"for\s*\(\s*\(?[A-Za-z_]\w*(\s*,\s*[A-Za-z_]\w*)*\)?\s+in\s+[A-Za-z_]\w*\s*\)", rest):
                continue
            counted = _AWK_COUNTED.match(rest)
            if counted:
                var = re.escape(counted.group(1))
                assigns = re.findall(rf"(?<![\w$]){var}\s*([-+*/%^]?=(?!=)|\+\+|--)|(\+\+|--)\s*{var}\b", text)
                if len(assigns) == 2:  # the header's `i = N` and `i++`
                    continue
        return rest[:40]
    return ""


_SED_SIMPLE = frozenset("=dDgGhHlnNpPqQxzF")
_SED_LABEL = frozenset("btT:")
_SED_TEXT = frozenset("aic")
_SED_FILE = frozenset("rRwWe")  # read/write a file, or (e) run a command
_SED_LABEL_NAME = re.compile(r"[A-Za-z0-9_.-]*")


def sed_danger(script: str) -> str:
    """Why a sed script is not plain text editing (reads/writes files, runs commands, or
    cannot be read), or ``""``. A small reader of GNU sed's command syntax."""
    s = script
    i, n = 0, len(s)
    defined: set[str] = set()
    backward = consumes = False
    while i < n:
        c = s[i]
        if c in " \t\n;{}!":
            i += 1
            continue
        if c == "#":
            j = s.find("\n", i)
            i = n if j < 0 else j + 1
            continue
        # address: number, $, /re/, \cREc, first~step, addr1,addr2, +N, ~N
        while i < n and (s[i].isdigit() or s[i] in "$,~+ " or s[i] in "/\\"):
            if s[i] in "/\\":
                delim = "/" if s[i] == "/" else (s[i + 1] if i + 1 < n else "")
                i += 1 if s[i] == "/" else 2
                while i < n and s[i] != delim:
                    i += 2 if s[i] == "\\" else 1
                i += 1
                while i < n and s[i] in "IM":
                    i += 1
            else:
                i += 1
        if i >= n:
            return ""
        c = s[i]
        if c in " \t\n;{}!":
            continue
        if c in _SED_SIMPLE:
            consumes = consumes or c in "nNqQ"
            i += 1
            while i < n and s[i].isdigit():  # q5, Q5, l 70
                i += 1
            continue
        if c in _SED_LABEL:
            # GNU sed 4.9 (compile.c read_label): blanks after the command are skipped, the
            # label ends at a space, tab, newline or ';', and the next command follows
            # (`:x w FILE` is a label, then a w command). A label holding anything but
            # letters, digits, '_', '.' or '-' is not read here (sed differs by version).
            j = i + 1
            while j < n and s[j] in " \t":
                j += 1
            k = j
            while k < n and s[k] not in " \t\n;}#":
                k += 1
            if not _SED_LABEL_NAME.fullmatch(s[j:k]):
                return f"has a label this reader does not follow: {s[j:k]!r}"
            if c == ":":
                defined.add(s[j:k])
            elif c == "b" and s[j:k] in defined:
                backward = True  # a branch back to an earlier label whatever was substituted
            i = k
            continue
        if c in _SED_TEXT:
            j = s.find("\n", i)
            i = n if j < 0 else j + 1
            continue
        if c in _SED_FILE:
            return {"e": "runs a command (e)", "r": "reads a file (r)", "R": "reads a file (R)",
                    "w": "writes a file (w)", "W": "writes a file (W)"}[c]
        if c in "sy":
            if i + 1 >= n:
                return "cannot be read"
            delim = s[i + 1]
            if delim in "\\\n":
                return "cannot be read"
            j = i + 2
            parts = 0
            want = 2
            while j < n and parts < want:
                if s[j] == "\\":
                    j += 2
                    continue
                if s[j] == delim:
                    parts += 1
                j += 1
            if parts < want:
                return "cannot be read"
            i = j
            if c == "s":
                while i < n and s[i] not in ";\n}":
                    f = s[i]
                    if f in "eE":
                        return "runs the replacement as a command (s///e)"
                    if f in "wW":
                        return "writes a file (s///w)"
                    if f not in "gpiImM0123456789 \t":
                        return f"has an unknown s/// flag {f!r}"
                    i += 1
            continue
        return f"has a command sed does not document here: {c!r}"
    if backward and not consumes:
        # `:a;s/$/x/;ba` loops on one line for ever; a loop that reads on (N, n) or quits ends
        # with the input (`:a;N;$!ba;s/\n/ /g`). (A `t` loop ends when nothing is substituted:
        # whether it makes progress is not judged.)
        return "has a loop that may never end (b back to a label, and no N, n, q or Q)"
    return ""
