"""Logging without importing ``logging`` at start-up (it costs several milliseconds).

Until the program (or ``PYSANDBOXES_DEBUG=1``) imports and configures ``logging``, no
handler exists and a record would go nowhere: these helpers then do nothing.
Loggers: ``Pysandboxes`` says what was refused and why (INFO); ``pysandboxes.*`` give the
details (DEBUG).
"""

from __future__ import annotations

import os
import sys

USER_LOGGER = "Pysandboxes"


_SET_UP: list[bool] = []


def setup_from_environment() -> None:
    """``PYSANDBOXES_DEBUG=1``: show the sandbox's own DEBUG and INFO records on stderr (once
    per process: ``python-sb`` at its start, partial mode when a sandbox first opens; the
    partial child's records come to these loggers too)."""
    if os.environ.get("PYSANDBOXES_DEBUG", "") not in ("", "0") and not _SET_UP:
        _SET_UP.append(True)
        import logging

        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        for name in ("pysandboxes", USER_LOGGER):
            logger = logging.getLogger(name)
            logger.setLevel(logging.DEBUG)
            logger.addHandler(handler)


def debug(name: str, message: str, *args: object) -> None:
    logging = sys.modules.get("logging")
    if logging is not None:
        logging.getLogger(name).debug(message, *args)  # type: ignore[attr-defined]


def debug_enabled(name: str) -> bool:
    logging = sys.modules.get("logging")
    return logging is not None and logging.getLogger(name).isEnabledFor(10)  # type: ignore[attr-defined]


def info(name: str, message: str, *args: object) -> None:
    logging = sys.modules.get("logging")
    if logging is not None:
        logging.getLogger(name).info(message, *args)  # type: ignore[attr-defined]
