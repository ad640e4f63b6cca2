"""``expose-ro=``, ``expose-rw=`` and ``ignore=``: which paths the program may read or write."""

from __future__ import annotations

import os
import sys

from .._record import Record
from .context import Context, Rule
from .origin import BUILTIN, Origin

TYPE_CHECKING = False  # importing typing costs milliseconds at start-up
if TYPE_CHECKING:
    import re
    from typing import Any, ClassVar


class Exposure(Record):
    """A directory exposed read-only or read-write (``path`` is resolved, without a final /)."""

    __slots__ = ("origin", "path", "rule", "writable")
    path: str
    writable: bool
    rule: Rule | None  # None for the built-in exposures
    origin: Origin

    def describe(self) -> str:
        if self.rule is not None:
            return self.rule.describe()
        return f"{'expose-rw' if self.writable else 'expose-ro'}={self.path} {self.origin}"


class IgnoreRule(Record):
    __slots__ = ("absolute", "pattern", "regex", "rule")
    pattern: str  # as matched: a component glob, or an absolute glob
    absolute: bool
    rule: Rule
    regex: re.Pattern[str]


class FileVerdict:
    """The possible outcomes of a file decision (plain strings: cheap to compare and print)."""

    ALLOWED = "allowed"
    NOT_EXPOSED = "not exposed"
    IGNORED = "ignored"
    READ_ONLY = "read-only"
    PROTECTED = "protected"


class FileDecision(Record):
    __slots__ = ("exposure", "ignore", "verdict")
    _defaults: ClassVar[dict[str, Any]] = {"exposure": None, "ignore": None}
    verdict: str  # a FileVerdict value
    exposure: Exposure | None
    ignore: IgnoreRule | None

    @property
    def allowed(self) -> bool:
        return self.verdict is FileVerdict.ALLOWED


class FilePolicy(Record):
    __slots__ = ("_by_path", "exposures", "ignores", "protected")
    exposures: tuple[Exposure, ...]
    ignores: tuple[IgnoreRule, ...]
    protected: frozenset[str]  # rule files, includes (even missing ones) and the learn output

    def _post_init(self) -> None:
        object.__setattr__(self, "_by_path", {e.path: e for e in self.exposures})

    def decide(self, path: str, *, write: bool = False) -> FileDecision:
        """Decide on an absolute, already resolved path: the longest exposed prefix wins."""
        by_path: dict[str, Exposure] = self._by_path  # type: ignore[attr-defined]
        probe = path
        while True:
            exposure = by_path.get(probe)
            if exposure is not None:
                break
            parent = os.path.dirname(probe)
            if parent == probe:
                return FileDecision(FileVerdict.NOT_EXPOSED)
            probe = parent
        if self.ignores:
            hit = self._ignored(path, exposure.path)
            if hit is not None:
                return FileDecision(FileVerdict.IGNORED, exposure, hit)
        if write:
            if path in self.protected:
                return FileDecision(FileVerdict.PROTECTED, exposure)
            if not exposure.writable:
                return FileDecision(FileVerdict.READ_ONLY, exposure)
        return FileDecision(FileVerdict.ALLOWED, exposure)

    def _ignored(self, path: str, root: str) -> IgnoreRule | None:
        below = path[len(root) :].strip("/")
        components = below.split("/") if below else []
        for ignore in self.ignores:
            if ignore.absolute:
                # An absolute pattern hides what it matches and everything below it.
                probe = path
                while True:
                    if ignore.regex.match(probe):
                        return ignore
                    parent = os.path.dirname(probe)
                    if parent == probe:
                        break
                    probe = parent
            elif any(ignore.regex.match(c) for c in components):
                return ignore
        return None


#: Device files every program may use, with no rule: they hold no data of the host (reading
#: gives zeros or random bytes, writing discards, ``/dev/tty`` is the terminal the program was
#: started from). ``True``: writable too. The same files Landlock grants (``providers/landlock.py``:
#: ``_BASE_READ_FILES``, ``_WRITE_FILES``), so learning never writes ``expose-ro=/dev`` for them;
#: every other device (``/dev/kmsg``, ``/dev/mem``, block devices) still needs a rule.
HARMLESS_DEVICES = {
    "/dev/null": True,
    "/dev/tty": True,
    "/dev/zero": False,
    "/dev/urandom": False,
    "/dev/random": False,
}


def builtin_exposures() -> list[Exposure]:
    """What every sandboxed interpreter needs read-only: its own tree and the CA stores."""
    python = Origin(None, 0, BUILTIN, "<python>")
    ca = Origin(None, 0, BUILTIN, "<ca-certificates>")
    candidates: list[tuple[str, Origin]] = []
    for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}:
        candidates.append((p, python))
    candidates.append((os.path.dirname(os.__file__), python))
    # The sandbox's own code (an editable install lives outside the interpreter's prefixes).
    own = Origin(None, 0, BUILTIN, "<pysandboxes>")
    candidates.append((os.path.dirname(os.path.dirname(os.path.abspath(__file__))), own))
    for p in ("/etc/ssl", "/etc/pki", "/etc/ca-certificates", "/usr/share/ca-certificates", "/usr/share/pki"):
        candidates.append((p, ca))
    if sys.pycache_prefix:  # PYTHONPYCACHEPREFIX: the compiled modules kept aside (read only)
        candidates.append((sys.pycache_prefix, Origin(None, 0, BUILTIN, "<pycache>")))
    seen: dict[str, Exposure] = {}
    for p, origin in candidates:
        real = os.path.realpath(p)
        if real not in seen and os.path.isdir(real):
            seen[real] = Exposure(real, False, None, origin)
    return list(seen.values())


def compile_files(
    expose_rules: list[Rule], ignore_rules: list[Rule], protected: frozenset[str], ctx: Context
) -> FilePolicy:
    by_path: dict[str, Exposure] = {}
    for rule in expose_rules:
        writable = rule.key == "expose-rw"
        path = _expose_path(rule, ctx)
        if path is None:
            continue
        previous = by_path.get(path)
        if previous is not None and previous.rule is not None:
            if previous.writable != writable:
                ctx.problem(
                    rule.origin,
                    f"'{rule.text}' contradicts {previous.rule.describe()}: the same directory "
                    "cannot be both read-only and read-write; keep one of the two lines",
                )
            continue  # the same exposure twice is harmless
        by_path[path] = Exposure(path, writable, rule, rule.origin)
    for builtin in builtin_exposures():
        by_path.setdefault(builtin.path, builtin)

    ignores: list[IgnoreRule] = []
    for rule in ignore_rules:
        pattern = ctx.expand(rule, rule.value.strip())
        if pattern is None:
            continue
        if not pattern:
            ctx.problem(rule.origin, "ignore= needs a glob pattern, e.g. ignore=.env or ignore=*.key")
            continue
        absolute = pattern.startswith(("/", "~")) or "/" in pattern.rstrip("/")
        if absolute:
            full = ctx.expand_path(rule, rule.value.strip())
            if full is None:
                continue
            pattern = full
        else:
            pattern = pattern.rstrip("/")  # ignore=secrets/ hides the directory 'secrets'
        ignores.append(IgnoreRule(pattern, absolute, rule, _re().compile(_fnmatch().translate(pattern))))
    return FilePolicy(tuple(by_path.values()), tuple(ignores), protected)


def _expose_path(rule: Rule, ctx: Context) -> str | None:
    raw = rule.value.strip()
    if not raw:
        ctx.problem(rule.origin, f"{rule.key}= needs a directory, e.g. {rule.key}=./data")
        return None
    if "," in raw and "${" not in raw:
        ctx.problem(
            rule.origin,
            f"'{rule.text}': expected a single directory (no comma); write one {rule.key}= line each",
        )
        return None
    path = ctx.expand_path(rule, raw)
    if path is None:
        return None
    hint = ""
    if raw[:1] in "'\"":
        hint = " (quotes are part of the value: write the path without them)"
    try:
        real = os.path.realpath(path)
        is_dir = os.path.isdir(real)
        exists = is_dir or os.path.lexists(real)
    except (OSError, ValueError) as exc:
        ctx.problem(rule.origin, f"'{rule.text}': cannot use '{path}': {exc}")
        return None
    if not exists:
        ctx.problem(
            rule.origin,
            f"'{rule.text}': '{path}' does not exist{hint}; create it, or remove the rule",
        )
        return None
    if not is_dir:
        ctx.problem(
            rule.origin,
            f"'{rule.text}': '{path}' is not a directory; expose the directory that holds it",
        )
        return None
    return real


def _re() -> Any:
    """``re`` on first use: importing it costs milliseconds on every start of python-sb."""
    import re

    return re


def _fnmatch() -> Any:
    import fnmatch

    return fnmatch
