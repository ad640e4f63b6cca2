"""Lexical level of a rule file: lines, comments, quotes, ``key=value`` and include lines.

The lexer only cuts text into statements; it knows no key's meaning.
"""

from __future__ import annotations

import re

from .._lazy import LazyPattern
from .._record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar


# A plain key (``expose-ro``), an ``eval-*`` key with a profile suffix (``eval-call:llm``) or a
# provider key (``qemu.memory``, ``firejail.seccomp.keep``).
_KEY = LazyPattern(r"[a-z][a-z0-9_-]*(?::[A-Za-z0-9_-]+)?|[a-z][a-z0-9_-]*\.[A-Za-z0-9_.-]+")
_LINE_BREAK = LazyPattern(r"\r\n|\r|\n")
_INCLUDE = LazyPattern(r'(include|include-optional)\s+"((?:[^"\\]|\\.)*)"')
_INCLUDE_PLATFORM = LazyPattern(r'include-platform=(\S+)\s+"((?:[^"\\]|\\.)*)"')


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
    for number, raw in enumerate(_LINE_BREAK.split(text), start=1):
        if "\x00" in raw:
            problems.append(LexProblem(number, "the line holds a NUL character"))
            continue
        line = strip_comment(raw).strip()
        if not line:
            continue
        if line.startswith(("include ", "include\t", "include-optional")):
            m = _INCLUDE.fullmatch(line)
            if not m:
                problems.append(
                    LexProblem(
                        number,
                        f"invalid include '{line}': write include \"PATH\" "
                        '(double quotes), or include-optional "PATH"',
                    )
                )
                continue
            path = _unescape(m.group(2))
            if not path:
                problems.append(LexProblem(number, 'include needs a path: include "PATH"'))
                continue
            statements.append(Statement(number, "include", m.group(1), path, line))
            continue
        if line.startswith("include-platform"):
            m = _INCLUDE_PLATFORM.fullmatch(line)
            if not m or not _unescape(m.group(2)):
                problems.append(
                    LexProblem(
                        number,
                        f"invalid include-platform '{line}': write "
                        'include-platform=PLATFORM "PATH", e.g. include-platform=linux "linux.rules"',
                    )
                )
                continue
            statements.append(
                Statement(number, "include", "include-platform", _unescape(m.group(2)), line, m.group(1))
            )
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
        if not _KEY.fullmatch(key):
            problems.append(LexProblem(number, f"invalid rule '{line}': '{key}' is not a key"))
            continue
        statements.append(Statement(number, "rule", key, value, line))
    return statements, problems


def _unescape(path: str) -> str:
    return re.sub(r"\\(.)", r"\1", path)
