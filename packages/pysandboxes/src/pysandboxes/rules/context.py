"""What every family compiler shares: the rule as read, and the load context."""

from __future__ import annotations

import os
from collections.abc import Mapping

from .._record import Record
from ..errors import RuleProblem
from .origin import Origin
from .substitution import SubstitutionError, substitute


class Rule(Record):
    """One ``key=value`` line as written, with its origin.

    ``base_dir`` is the directory relative paths of this rule resolve against: the directory of
    the file holding it, or the working directory for command-line and code rules.
    """

    __slots__ = ("base_dir", "key", "origin", "value")
    key: str
    value: str
    origin: Origin
    base_dir: str

    @property
    def text(self) -> str:
        if self.key in ("include", "include-optional"):
            return f'{self.key} "{self.value}"'
        return f"{self.key}={self.value}"

    def describe(self) -> str:
        """``'net=DENY|…' from ~/.config/…/user-py-sandboxes.profile(1)`` for messages."""
        return f"'{self.text}' from {self.origin}"

    def __str__(self) -> str:
        return self.text


class Context:
    """The state of one load: the environment for ``${…}``, the cwd, the problems found."""

    def __init__(self, environ: Mapping[str, str], cwd: str) -> None:
        self.environ = environ
        self.cwd = cwd
        self.problems: list[RuleProblem] = []
        self.notes: list[RuleProblem] = []

    def problem(self, origin: Origin, message: str) -> None:
        self.problems.append(RuleProblem(origin, message))

    def note(self, origin: Origin, message: str) -> None:
        """A remark that does not stop the load (shown by ``pysandboxes check``)."""
        self.notes.append(RuleProblem(origin, message))

    def expand_home(self, value: str) -> str:
        """``~`` and ``~/x`` from the HOME of this load's environment (``~user`` as usual)."""
        home = self.environ.get("HOME")
        if home and (value == "~" or value.startswith("~/")):
            return home.rstrip("/") + value[1:] if home != "/" else "/" + value[2:]
        return os.path.expanduser(value)

    def expand(self, rule: Rule, text: str) -> str | None:
        """Substitute ``${…}`` in one value; report a problem and return None on failure."""
        try:
            return substitute(text, self.environ)
        except SubstitutionError as exc:
            self.problem(rule.origin, f"in '{rule.text}': {exc}")
            return None

    def expand_path(self, rule: Rule, text: str) -> str | None:
        """Substitute, expand ``~`` and make absolute against the rule's base directory."""
        value = self.expand(rule, text)
        if value is None:
            return None
        if "\x00" in value:
            self.problem(rule.origin, f"in '{rule.text}': the path holds a NUL character")
            return None
        if value.startswith("~"):
            expanded = self.expand_home(value)
            if expanded.startswith("~"):
                self.problem(
                    rule.origin, f"in '{rule.text}': cannot expand '~': the home directory is unknown"
                )
                return None
            value = expanded
        return os.path.normpath(os.path.join(rule.base_dir, value))
