"""``${VAR}`` and ``${VAR:-default}`` substitution, applied to values only.

Substitution runs after a line is split into its key and its fields, so a variable can
fill a value but never create a key, a field separator or a new rule.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .._lazy import LazyPattern

_NAME = LazyPattern(r"[A-Za-z_][A-Za-z0-9_]*")


class SubstitutionError(ValueError):
    """A malformed reference, or an unset variable without a default."""


class Unset(SubstitutionError):
    """A variable is unset and its reference gives no default."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(
            f"${{{name}}} is not set and has no default: set {name}, or write ${{{name}:-default}}"
        )


def has_reference(text: str) -> bool:
    return "${" in text


def substitute(
    text: str,
    environ: Mapping[str, str],
    *,
    lookup: Callable[[str], str | None] | None = None,
) -> str:
    """Expand every ``${…}`` of ``text``; a substituted value is never expanded again.

    ``${NAME:-default}`` gives the default when NAME is unset or empty (as in a POSIX shell);
    the default may itself hold references. ``$NAME`` without braces is left alone.
    Raises :class:`Unset` for an unset variable without default and
    :class:`SubstitutionError` for a malformed reference.
    """
    if "${" not in text:
        return text
    get = lookup if lookup is not None else environ.get
    out, end = _expand(text, 0, get, top=True)
    assert end == len(text)
    return out


def _expand(text: str, pos: int, get: Callable[[str], str | None], *, top: bool) -> tuple[str, int]:
    """Expand from ``pos`` until the end (top level) or the ``}`` closing a default."""
    parts: list[str] = []
    n = len(text)
    i = pos
    while i < n:
        c = text[i]
        if c == "$" and i + 1 < n and text[i + 1] == "{":
            value, i = _reference(text, i, get)
            parts.append(value)
            continue
        if c == "}" and not top:
            return "".join(parts), i
        parts.append(c)
        i += 1
    if not top:
        raise SubstitutionError(f"unclosed '${{' in '{text}': close it with '}}'")
    return "".join(parts), i


def _reference(text: str, start: int, get: Callable[[str], str | None]) -> tuple[str, int]:
    """Expand the reference starting at ``text[start] == '$'``; return (value, next index)."""
    m = _NAME.match(text, start + 2)
    if not m:
        raise SubstitutionError(_malformed(text, start))
    name = m.group(0)
    i = m.end()
    if i < len(text) and text[i] == "}":
        value = get(name)
        if value is None:
            raise Unset(name)
        return value, i + 1
    if text.startswith(":-", i):
        value = get(name)
        if value:
            # The default is not used: check its syntax only (as a shell does, an unset
            # variable inside an unused default is not an error).
            _, close = _expand(text, i + 2, lambda _name: "", top=False)
            return value, close + 1
        default, close = _expand(text, i + 2, get, top=False)
        return default, close + 1
    raise SubstitutionError(_malformed(text, start))


def _malformed(text: str, start: int) -> str:
    close = text.find("}", start)
    ref = text[start : close + 1] if close >= 0 else text[start:]
    if close < 0:
        return f"unclosed '${{' in '{text}': close it with '}}'"
    return f"invalid variable reference '{ref}': use ${{NAME}} or ${{NAME:-default}}"


def split_outside_references(text: str, sep: str) -> list[str]:
    """Split ``text`` on ``sep`` except inside ``${…}`` (a default may hold the separator)."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == "$" and i + 1 < n and text[i + 1] == "{":
            depth += 1
            current.append("${")
            i += 2
            continue
        if c == "}" and depth:
            depth -= 1
        elif c == sep and not depth:
            parts.append("".join(current))
            current = []
            i += 1
            continue
        current.append(c)
        i += 1
    parts.append("".join(current))
    return parts
