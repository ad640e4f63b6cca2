"""``pysandboxes.load_dotenv()``: the application's ``.env``, loaded once, in the host, before
the sandbox starts.

A ``.env`` holds secrets. The sandboxed code never reads it: the host loads it into its own
environment, and the sandbox (its child, or the program under ``python-sb``) sees only the
variables the ``env=`` rules give it. So here, in a sandbox, nothing is read; in the host the
file is read with python-dotenv (the optional extra ``pysandboxes[dotenv]``), once per file.
"""

from __future__ import annotations

import _thread
import os
import sys

from ._log import debug

_LOGGER = "pysandboxes.dotenv"
_TRUE = ("1", "true", "t", "yes", "y")
_lock = _thread.allocate_lock()
#: the files loaded by this process (a second call for one of them loads nothing again)
_loaded: set[str] = set()


def load_dotenv(
    dotenv_path: str | os.PathLike[str] | None = None,
    *,
    override: bool = False,
    interpolate: bool = True,
    encoding: str | None = "utf-8",
) -> bool:
    """Load ``dotenv_path`` (default: the first ``.env`` found from the directory of the
    calling file upwards, as python-dotenv's ``load_dotenv()`` looks) into ``os.environ``,
    once, in the host; True when variables were set from it.

    In a sandbox (the child of ``sandboxes()``, or a program under ``python-sb``) it reads
    nothing and returns False: the sandbox has the variables its ``env=`` rules give it.
    ``PYTHON_DOTENV_DISABLED=1`` (python-dotenv's switch) turns it off too. Called in the host
    while a sandbox is open, it still loads, and warns: the running child keeps the
    environment it started with.
    """
    from ._state import State

    if State.in_sandbox:
        debug(_LOGGER, "load_dotenv() in the sandbox: nothing read (env= rules give the variables)")
        return False
    if os.environ.get("PYTHON_DOTENV_DISABLED", "").strip().lower() in _TRUE:
        debug(_LOGGER, "load_dotenv(): PYTHON_DOTENV_DISABLED is set, nothing read")
        return False
    if dotenv_path is None:
        start = _caller_directory()
        found = _find(start)
        if found is None:
            debug(_LOGGER, "load_dotenv(): no .env from %s upwards", start)
            return False
        path = found
    else:
        path = os.path.abspath(os.fspath(dotenv_path))
    with _lock:
        if path in _loaded:
            return False
        try:
            import dotenv
        except ImportError:
            raise ModuleNotFoundError(
                "pysandboxes.load_dotenv() reads .env files with python-dotenv, which is not "
                "installed: pip install 'pysandboxes[dotenv]'",
                name="dotenv",
            ) from None
        done = bool(dotenv.load_dotenv(path, override=override, interpolate=interpolate, encoding=encoding))
        _loaded.add(path)
    from .api import _Session  # the host: partial mode's state

    if _Session.current is not None:
        import warnings

        warnings.warn(
            f"load_dotenv({path!r}) after the sandbox started: its child keeps the environment "
            "it started with; load the .env before the first sandboxes() or the first tool call",
            RuntimeWarning,
            stacklevel=2,
        )
    debug(_LOGGER, "load_dotenv(): %s loaded (%s)", path, "variables set" if done else "nothing new")
    return done


def _caller_directory() -> str:
    """The directory of the file that called :func:`load_dotenv` (the working directory for
    code typed at the prompt or given with ``-c``)."""
    frame = sys._getframe(2)
    filename = frame.f_code.co_filename
    if filename.startswith("<") or not os.path.exists(filename):
        return os.getcwd()
    return os.path.dirname(os.path.abspath(filename))


def _find(directory: str) -> str | None:
    while True:
        candidate = os.path.join(directory, ".env")
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent
