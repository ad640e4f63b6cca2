"""Parsers for the small value syntaxes shared by several keys.

Each parser returns the parsed value or raises ``ValueError`` with a sentence that says what
would be right.
"""

from __future__ import annotations

from .._lazy import LazyPattern

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off", "none"})


def parse_bool(value: str, key: str, *, empty: bool | None = None) -> bool:
    v = value.strip().lower()
    if v == "" and empty is not None:
        return empty
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise ValueError(f"invalid value '{value}' for {key}: use true or false")


_DURATION = LazyPattern(r"([0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)\s*(ms|s|m)?")


def parse_duration(value: str, key: str) -> float:
    """``2s``, ``1.5m``, ``500ms``, ``1_000ms`` or a bare number of seconds."""
    m = _DURATION.fullmatch(value.strip())
    if not m or "__" in m.group(1) or m.group(1).endswith("_"):
        raise ValueError(
            f"invalid duration '{value}' for {key}: write a number with ms, s or m, e.g. 2s or 500ms"
        )
    number = float(m.group(1).replace("_", ""))
    unit = m.group(2) or "s"
    seconds = number * {"ms": 0.001, "s": 1.0, "m": 60.0}[unit]
    if seconds <= 0:
        raise ValueError(f"{key} must be greater than zero, got '{value}'")
    return seconds


def parse_int(value: str, key: str, *, minimum: int = 0) -> int:
    v = value.strip().replace("_", "")
    if not _re().fullmatch(r"[0-9]+", v):
        raise ValueError(f"invalid value '{value}' for {key}: expected a whole number")
    n = int(v)
    if n < minimum:
        raise ValueError(f"{key} must be at least {minimum}, got {n}")
    return n


_DECIMAL_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9}


def parse_decimal_size(value: str, key: str) -> int:
    """``10MB``, ``512KB``, ``2GB`` or a number of bytes (decimal multiples)."""
    m = _re().fullmatch(r"([0-9][0-9_]*)\s*([A-Za-z]*)", value.strip())
    unit = m.group(2).lower() if m else None
    if not m or unit not in _DECIMAL_UNITS:
        raise ValueError(f"invalid size '{value}' for {key}: write a number with KB, MB or GB, e.g. 10MB")
    n = int(m.group(1).replace("_", "")) * _DECIMAL_UNITS[unit]
    if n <= 0:
        raise ValueError(f"{key} must be greater than zero, got '{value}'")
    return n


_BINARY_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50, "e": 1 << 60}


def parse_size(value: str, key: str) -> int:
    """``512M``, ``2G``, ``64k``, ``1GiB``, ``10MB`` or a number of bytes; K, M, G and T are
    powers of 1024 whatever follows them (a limit is a bound, not a marketing figure)."""
    m = _re().fullmatch(r"([0-9][0-9_]*)\s*([kKmMgGtT]?)(i?[bB])?", value.strip())
    if not m or "__" in m.group(1) or m.group(1).endswith("_"):
        raise ValueError(
            f"invalid size '{value}' for {key}: write a number of bytes, or with K, M, G or T "
            "(powers of 1024), e.g. 512M or 2G"
        )
    n = int(m.group(1).replace("_", "")) * _BINARY_UNITS[m.group(2).lower()]
    if n <= 0:
        raise ValueError(f"{key} must be greater than zero, got '{value}'")
    return n


def parse_qemu_memory(value: str, key: str) -> int:
    """QEMU ``-m`` syntax: a number of MiB, or a number with one of k, M, G, T, P, E."""
    m = _re().fullmatch(r"([0-9]+)([kKmMgGtTpPeE]?)", value.strip())
    if not m:
        raise ValueError(
            f"invalid memory size '{value}' for {key}: write a number of MiB or a number "
            "with one of k, M, G, T, P, E (e.g. 512M or 2G; not 2GB)"
        )
    n = int(m.group(1))
    unit = m.group(2).lower()
    size = n << 20 if unit == "" else n * _BINARY_UNITS[unit]
    if size < (64 << 20):
        raise ValueError(f"{key} must be at least 64M, got '{value}'")
    return size


def closest(word: str, choices: object, *, cutoff: float = 0.6) -> str:
    """A ``" (did you mean 'x'?)"`` suffix, or an empty string."""
    import difflib

    matches = difflib.get_close_matches(word, list(choices), n=1, cutoff=cutoff)  # type: ignore[call-overload]
    return f" (did you mean '{matches[0]}'?)" if matches else ""


def _re() -> Any:
    """``re`` on first use: importing it costs milliseconds on every start of python-sb."""
    import re

    return re
