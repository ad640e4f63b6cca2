"""Process-wide facts shared by complete and partial mode (a module of its own: cheap)."""

from __future__ import annotations


class State:
    #: this process runs sandboxed code: ``@sandbox`` calls are direct, ``sandboxes()`` a no-op
    in_sandbox = False
    #: the sandbox's child is importing this program module (its module body runs again there)
    importing: str | None = None
