"""The exception family.

Every refusal is a :class:`SandBoxError` *and* the builtin exception the same failure would
raise without a sandbox, so ``except SandBoxError`` catches every refusal while existing
``except ValueError`` / ``except OSError`` code keeps working.
"""

from __future__ import annotations

from ._record import Record

TYPE_CHECKING = False  # importing typing costs milliseconds at start-up
if TYPE_CHECKING:
    from .rules.origin import Origin


__all__ = ["ConfigSyntaxError", "RuleProblem", "RuleSyntaxError", "SandBoxError"]


class SandBoxError(RuntimeError):
    """Root of every error raised by PySandboxes."""


class RuleProblem(Record):
    """One problem found while loading rules: where, and what is wrong."""

    __slots__ = ("message", "origin")
    origin: Origin
    message: str

    def sort_key(self) -> tuple[int, str, int, str]:
        return (*self.origin.sort_key(), self.message)

    def __str__(self) -> str:
        return f"{self.origin}: {self.message}"


class RuleSyntaxError(SandBoxError, ValueError):
    """The rule files (or the rules given on the command line or in code) are invalid.

    All the problems of one load are collected and reported together, one line each,
    sorted by file and line. Nothing runs when this is raised.
    """

    def __init__(self, problems: list[RuleProblem] | tuple[RuleProblem, ...]) -> None:
        ordered = tuple(sorted(problems, key=RuleProblem.sort_key))
        self.problems: tuple[RuleProblem, ...] = ordered
        self.errors: list[str] = [str(p) for p in ordered]
        self.message = "\n".join(self.errors)
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


#: The reference implementation's name for the same error.
ConfigSyntaxError = RuleSyntaxError
