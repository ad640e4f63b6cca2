"""Tracebacks as the program would see them without the sandbox: its own frames taken out."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import TracebackType

#: frames of files under this directory are the sandbox's, never the program's
OWN_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def without_own_frames(tb: TracebackType | None) -> TracebackType | None:
    """The same traceback entries, relinked without those of the sandbox's own files."""
    kept = []
    while tb is not None:
        if not tb.tb_frame.f_code.co_filename.startswith(OWN_DIR):
            kept.append(tb)
        tb = tb.tb_next
    for entry, following in zip(kept, [*kept[1:], None][: len(kept)], strict=True):
        entry.tb_next = following
    return kept[0] if kept else None


def strip_own_frames(exc: BaseException) -> TracebackType | None:
    """Take the sandbox's frames out of ``exc`` and every exception chained to it (a refusal
    shown as the cause of another error, the members of a group); ``exc``'s traceback."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        current.__traceback__ = without_own_frames(current.__traceback__)  # the display reads this
        pending += [current.__cause__, current.__context__]
        if isinstance(current, BaseExceptionGroup):
            pending += list(current.exceptions)
    return exc.__traceback__
