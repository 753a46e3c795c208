"""Word text: the literal string the shell would pass for a word node (quotes removed,
escapes and ``$'..'`` decoded), whether it is dynamic, and program-name normalisation."""

from __future__ import annotations

import re

from tree_sitter import Node

# --------------------------------------------------------------------------- word text

_EXPANSIONS = frozenset(
    {
        "simple_expansion",
        "expansion",
        "command_substitution",
        "process_substitution",
        "arithmetic_expansion",
        "brace_expression",
    }
)
_ESCAPED_CHAR = re.compile(r"\\(.)", re.S)
_DQ_ESCAPE = re.compile(r'\\([$`"\\\n])')
_ANSI_ESCAPE = re.compile(
    r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|c.|.)", re.S
)
_ANSI_SIMPLE = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}
# An unquoted glob (* ? [..]) or brace expansion ({a,b} / {1..3}); quoted/escaped chars are
# replaced by NUL in the text this runs on.
_PATTERN = re.compile(r"[*?]|\[[^\]]*\]|\{[^{}]*(?:,|\.\.)[^{}]*\}")


def _dec(b: bytes) -> str:
    try:
        return b.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return b.decode("utf-8", "replace")


def _unescape_unquoted(raw: str) -> str:
    if "\\" not in raw:
        return raw
    return _ESCAPED_CHAR.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), raw)


def _dq_unescape(raw: str) -> str:
    if "\\" not in raw:
        return raw
    return _DQ_ESCAPE.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), raw)


def _ansi_char(m: re.Match[str]) -> str:
    e = m.group(1)
    c = e[0]
    if c in _ANSI_SIMPLE and len(e) == 1:
        return _ANSI_SIMPLE[c]
    if c in "xuU" and len(e) > 1:
        code = int(e[1:], 16)
        return chr(code) if code <= 0x10FFFF else "\ufffd"
    if c in "01234567":
        return chr(int(e, 8) & 0xFF)
    if c == "c" and len(e) == 2:
        return chr(ord(e[1]) & 0x1F)
    return "\\" + e


def _ansi_c(raw: str) -> str:
    return _ANSI_ESCAPE.sub(_ansi_char, raw) if "\\" in raw else raw


#: ``_Word.split``: how many words bash may make of the word. ONE: one word (no expansion
#: outside quotes); DIGITS: an unquoted expansion whose value is a number (``$((..))``,
#: ``$?``, ``$#``, ``$$``, ``$!``, ``${#x}``) or a for loop's literal value: one word
#: unless the text changes ``IFS``; ANY: an unquoted expansion of a value the analysis does
#: not know (``$(..)``, backquotes, ``$x``, ``${a[@]}``) or a quoted ``"$@"``/``"${a[@]}"``:
#: any number of words, which become options, operands or, behind a wrapper, the program.
ONE, DIGITS, ANY = 0, 1, 2
#: Parameters whose value is a number: ``$?``, ``$#``, ``$$``, ``$!``; ``${#x}`` (a length).
_NUMBER_PARAM = re.compile(r"\$[?#$!]|\$\{[?#$!]\}|\$\{#[^}]*\}")


class _Word:
    """A word's unquoted value, whether it is dynamic / holds an expansion, its byte span,
    and how many words bash may make of it (``split``: ONE, DIGITS or ANY)."""

    __slots__ = ("dyn", "end", "exp", "split", "start", "value")

    def __init__(self, value: str, dyn: bool, start: int, end: int, exp: bool = False,
                 split: int = ONE) -> None:
        self.value = value
        self.dyn = dyn
        self.start = start
        self.end = end
        self.exp = exp  # contains an expansion node (may hide a command substitution)
        self.split = split


def _param_split(text: str) -> int:
    """How many words an unquoted ``$NAME``/``${...}`` makes (see ONE, DIGITS, ANY)."""
    return DIGITS if _NUMBER_PARAM.fullmatch(text) else ANY


def _unquoted_split(node: Node, src: bytes) -> int:
    """How many words the unquoted expansion (or unknown node) ``node`` makes."""
    t = node.type
    if t == "simple_expansion" or t == "expansion":
        return _param_split(_dec(src[node.start_byte : node.end_byte]))
    if t == "arithmetic_expansion":
        return DIGITS  # a number (the variables it names are refused by the walk)
    if t == "process_substitution" or t == "brace_expression":
        return ONE  # /dev/fd/N; brace expansion: literal words the walk counts
    return ANY  # $(..), backquotes, or a node kind this reader does not know


def _collect(node: Node, src: bytes, out: list[str], pat: list[str], split: list[int]) -> bool:
    """Append ``node``'s unquoted value to ``out`` (glob-relevant text to ``pat``, how many
    words each expansion makes to ``split``).

    Returns True when the node contains an expansion.
    """
    t = node.type
    if t == "word" or t == "number":
        raw = _dec(src[node.start_byte : node.end_byte])
        out.append(_unescape_unquoted(raw))
        pat.append(_ESCAPED_CHAR.sub("\0", raw) if "\\" in raw else raw)
        return False
    if t == "raw_string":
        raw = _dec(src[node.start_byte : node.end_byte])
        out.append(raw[1:-1] if len(raw) >= 2 and raw.endswith("'") else raw[1:])
        pat.append("\0")
        return False
    if t == "ansi_c_string":
        raw = _dec(src[node.start_byte : node.end_byte])
        value = _ansi_c(raw[2:-1] if len(raw) >= 3 and raw.endswith("'") else raw[2:])
        out.append(value.split("\0", 1)[0])  # bash ends the string at a NUL (\0, \x00, \c@)
        pat.append("\0")
        return False
    if t == "string" or t == "translated_string":
        s, e = node.start_byte, node.end_byte
        pos = s + (2 if src[s : s + 1] == b"$" else 1)
        inner_end = e - 1 if e - 1 >= pos and src[e - 1 : e] == b'"' else e
        dyn = False
        for ch in node.named_children:
            if ch.type in _EXPANSIONS:
                out.append(_dq_unescape(_dec(src[pos : ch.start_byte])))
                text = _dec(src[ch.start_byte : ch.end_byte])
                out.append(text)
                pos = ch.end_byte
                dyn = True
                if "@" in text and ch.type in ("simple_expansion", "expansion"):
                    split.append(ANY)  # "$@", "${a[@]}": a word per element
        if pos < inner_end:
            out.append(_dq_unescape(_dec(src[pos:inner_end])))
        pat.append("\0")
        return dyn
    if t == "concatenation":
        pos = node.start_byte
        dyn = False
        for ch in node.children:
            if ch.start_byte > pos:
                gap = _dec(src[pos : ch.start_byte])
                out.append(_unescape_unquoted(gap))
                pat.append(gap)
            if ch.is_named:
                dyn = _collect(ch, src, out, pat, split) or dyn
            else:
                raw = _dec(src[ch.start_byte : ch.end_byte])
                out.append(_unescape_unquoted(raw))
                pat.append(raw)
            pos = max(pos, ch.end_byte)
        if node.end_byte > pos:
            gap = _dec(src[pos : node.end_byte])
            out.append(_unescape_unquoted(gap))
            pat.append(gap)
        return dyn
    out.append(_dec(src[node.start_byte : node.end_byte]))
    pat.append("\0")
    split.append(_unquoted_split(node, src))
    return True  # an expansion, or a node kind this reader does not know: not a literal


def _word(node: Node, src: bytes) -> _Word:
    """The unquoted value of a word-like node and whether it is dynamic."""
    start, end = node.start_byte, node.end_byte
    t = node.type
    if t == "word":
        raw = _dec(src[start:end])
        if "\\" not in raw:
            return _Word(raw, _PATTERN.search(raw) is not None, start, end)
    elif t == "string":
        seg = src[start:end]
        if len(seg) >= 2 and seg[-1:] == b'"' and b"$" not in seg and b"`" not in seg:
            return _Word(_dq_unescape(_dec(seg[1:-1])), False, start, end)
    elif t == "raw_string":
        seg = src[start:end]
        if len(seg) >= 2 and seg[-1:] == b"'":
            return _Word(_dec(seg[1:-1]), False, start, end)
    elif t == "simple_expansion" or t == "expansion":
        text = _dec(src[start:end])
        return _Word(text, True, start, end, True, _param_split(text))
    out: list[str] = []
    pat: list[str] = []
    split: list[int] = []
    exp = _collect(node, src, out, pat, split)
    dyn = exp or _PATTERN.search("".join(pat)) is not None
    return _Word("".join(out), dyn, start, end, exp, max(split, default=ONE))


def _norm_name(value: str, dyn: bool) -> str:
    """``/usr/bin/rm`` -> ``rm``; ``\\rm`` -> ``rm``; case kept; ``$(..)`` names kept whole."""
    if dyn and ("(" in value or "`" in value or ")" in value):
        return value
    s = value.lstrip("\\\"'")
    b = s.rstrip("/")
    base = b.rsplit("/", 1)[-1] if b else s
    return base or value

