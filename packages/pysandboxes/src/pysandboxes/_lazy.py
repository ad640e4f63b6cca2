"""Regular expressions compiled on first use.

Compiling a pattern costs up to a millisecond here; most patterns serve only when a rule of
their family is present, and every start of ``python-sb`` would otherwise pay for all.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from typing import Any


class LazyPattern:
    __slots__ = ("_compiled", "_flags", "_source")

    def __init__(self, source: str, flags: int = 0) -> None:
        self._source = source
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None

    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            import re

            self._compiled = re.compile(self._source, self._flags)
        return self._compiled

    def __getattr__(self, name: str) -> Any:
        return getattr(self.compiled(), name)
