"""Where a rule comes from: a file and a line, the command line, the code, or a built-in."""

from __future__ import annotations

import os

from .._record import Record

TYPE_CHECKING = False  # importing typing costs milliseconds at start-up
if TYPE_CHECKING:
    from typing import Any, ClassVar


COMMAND_LINE = "command line"
CODE = "code"
BUILTIN = "built-in"


_HOME: list[str] = []


def set_display_home(home: str | None) -> None:
    """The home directory messages abbreviate to ``~`` (the host's, even once the sandboxed
    program's environment no longer holds ``HOME``)."""
    _HOME[:] = [home] if home else []


def display_path(path: str) -> str:
    """Shorten a path for messages: relative under the cwd, ``~/…`` under home, else absolute."""
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = ""
    if cwd and path.startswith(cwd + os.sep):
        return path[len(cwd) + 1 :]
    home = _HOME[0] if _HOME else os.environ.get("HOME") or ""
    if home and home != os.sep and path.startswith(home.rstrip(os.sep) + os.sep):
        return "~" + path[len(home.rstrip(os.sep)) :]
    return path


class Origin(Record):
    """The place a rule or a problem comes from.

    ``path`` is the absolute path of a rule file, or ``None`` for a rule given on the command
    line (``source=COMMAND_LINE``), in code (``source=CODE``) or built into PySandboxes
    (``source=BUILTIN``, ``label`` such as ``<python>``).
    """

    __slots__ = ("label", "line", "path", "source")
    _defaults: ClassVar[dict[str, Any]] = {"line": 0, "source": "file", "label": ""}
    path: str | None
    line: int
    source: str
    label: str

    @classmethod
    def file(cls, path: str, line: int) -> Origin:
        return cls(path, line)

    def sort_key(self) -> tuple[int, str, int]:
        # Files first in path order, then command line / code rules.
        if self.path is not None:
            return (0, self.path, self.line)
        return (1, self.source, self.line)

    @property
    def is_file(self) -> bool:
        return self.path is not None

    def __str__(self) -> str:
        if self.path is not None:
            shown = display_path(self.path)
            return f"{shown}({self.line})" if self.line else shown
        if self.label:
            return self.label
        return f"<{self.source}>"
