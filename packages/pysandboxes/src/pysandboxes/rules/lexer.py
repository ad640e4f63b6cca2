"""Lexical level of a rule file: lines, comments, quotes, ``key=value`` and include lines.

The lexer only cuts text into statements; it knows no key's meaning.
"""

from __future__ import annotations

from .._record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar


# A plain key (``expose-ro``), an ``eval-*`` key with a profile suffix (``eval-call:llm``) or a
# provider key (``qemu.memory``, ``firejail.seccomp.keep``).
# Hand-written scanners instead of regular expressions: importing ``re`` costs milliseconds
# on every start of python-sb, and these few shapes are simple.
_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
_NAME_REST = _LOWER | frozenset("0123456789_-")
_SUFFIX = _NAME_REST | frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_DOTTED = _SUFFIX | frozenset(".")
_SPACE = frozenset(" \t\n\r\x0b\x0c")


def is_key(key: str) -> bool:
    """``name``, ``name:SUFFIX`` (named eval profiles) or ``provider.option``."""
    if not key or key[0] not in _LOWER:
        return False
    i = 1
    while i < len(key) and key[i] in _NAME_REST:
        i += 1
    if i == len(key):
        return True
    rest = key[i + 1 :]
    if key[i] == ":":
        return bool(rest) and all(c in _SUFFIX for c in rest)
    if key[i] == ".":
        return bool(rest) and all(c in _DOTTED for c in rest)
    return False


def _quoted_tail(text: str) -> str | None:
    """``<spaces>"PATH"`` (backslash escapes inside) -> the raw PATH, else None."""
    i = 0
    while i < len(text) and text[i] in _SPACE:
        i += 1
    if i == 0 or i >= len(text) or text[i] != '"' or len(text) < i + 2 or text[-1] != '"':
        return None
    body = text[i + 1 : -1]
    j = 0
    while j < len(body):
        if body[j] == "\\":
            if j + 1 >= len(body):
                return None  # the closing quote was escaped
            j += 2
            continue
        if body[j] == '"':
            return None
        j += 1
    return body


def _match_include(line: str) -> tuple[str, str] | None:
    for keyword in ("include-optional", "include"):
        if line.startswith(keyword):
            body = _quoted_tail(line[len(keyword) :])
            return None if body is None else (keyword, body)
    return None


def _match_include_platform(line: str) -> tuple[str, str] | None:
    rest = line[len("include-platform=") :] if line.startswith("include-platform=") else None
    if not rest:
        return None
    i = 0
    while i < len(rest) and rest[i] not in _SPACE:
        i += 1
    if i == 0:
        return None
    body = _quoted_tail(rest[i:])
    return None if body is None else (rest[:i], body)


class Statement(Record):
    """One meaningful line: a ``key=value`` rule or an include."""

    __slots__ = ("key", "kind", "line", "platform", "text", "value")
    _defaults: ClassVar[dict[str, Any]] = {"platform": ""}
    line: int
    kind: str  # "rule" | "include"
    key: str  # rule key, or "include" / "include-optional" / "include-platform"
    value: str  # rule value, or the include path as written
    text: str  # the line without its comment, as shown in messages
    platform: str  # for include-platform


class LexProblem(Record):
    __slots__ = ("line", "message")
    line: int
    message: str


def strip_comment(line: str) -> str:
    """Remove a ``#`` comment that is outside balanced quotes.

    A quote opens a quoted section only when it is closed later on the line (a lone
    apostrophe in ``env=MSG=it's`` stays literal); inside, a backslash escapes the quote.
    """
    i = 0
    n = len(line)
    while i < n:
        c = line[i]
        if c == "#":
            return line[:i]
        if c in "'\"":
            j = i + 1
            while j < n:
                if line[j] == "\\" and j + 1 < n and line[j + 1] == c:
                    j += 2
                    continue
                if line[j] == c:
                    break
                j += 1
            if j < n:  # balanced: skip over the quoted section
                i = j + 1
                continue
        i += 1
    return line


def lex(text: str) -> tuple[list[Statement], list[LexProblem]]:
    """Cut a rule file into statements; report malformed lines without stopping."""
    statements: list[Statement] = []
    problems: list[LexProblem] = []
    # Only \n, \r\n and \r end a line (str.splitlines() also cuts at form feeds, \x85,
    # \u2028..., which would shift every line number after them).
    for number, raw in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), start=1):
        if "\x00" in raw:
            problems.append(LexProblem(number, "the line holds a NUL character"))
            continue
        line = strip_comment(raw).strip()
        if not line:
            continue
        if line.startswith(("include ", "include\t", "include-optional")):
            m = _match_include(line)
            if not m:
                problems.append(
                    LexProblem(
                        number,
                        f"invalid include '{line}': write include \"PATH\" "
                        '(double quotes), or include-optional "PATH"',
                    )
                )
                continue
            path = _unescape(m[1])
            if not path:
                problems.append(LexProblem(number, 'include needs a path: include "PATH"'))
                continue
            statements.append(Statement(number, "include", m[0], path, line))
            continue
        if line.startswith("include-platform"):
            m = _match_include_platform(line)
            if not m or not _unescape(m[1]):
                problems.append(
                    LexProblem(
                        number,
                        f"invalid include-platform '{line}': write "
                        'include-platform=PLATFORM "PATH", e.g. include-platform=linux "linux.rules"',
                    )
                )
                continue
            statements.append(Statement(number, "include", "include-platform", _unescape(m[1]), line, m[0]))
            continue
        if "=" not in line:
            problems.append(
                LexProblem(number, f"invalid rule '{line}': expected key=value or include \"PATH\"")
            )
            continue
        key, value = line.split("=", 1)
        if key != key.rstrip():  # "key = value": spaces around '=' are allowed and ignored
            key = key.rstrip()
            value = value.lstrip()
        if not is_key(key):
            problems.append(LexProblem(number, f"invalid rule '{line}': '{key}' is not a key"))
            continue
        statements.append(Statement(number, "rule", key, value, line))
    return statements, problems


def _unescape(path: str) -> str:
    if "\\" not in path:
        return path
    out: list[str] = []
    i = 0
    while i < len(path):
        if path[i] == "\\" and i + 1 < len(path):
            out.append(path[i + 1])
            i += 2
        else:
            out.append(path[i])
            i += 1
    return "".join(out)
