"""Where the rule file of a program is.

- ``--pysandboxes-config=FILE`` (or ``sandboxes(sandboxes_config=...)`` with a path) wins;
  a directory means its ``.py-sandboxes``.
- A script: the ``.py-sandboxes`` next to the script (its real directory, whatever its
  suffix and whatever the working directory), else the working directory's.
- ``-m package.module``: the ``.py-sandboxes`` in the module's directory, found on
  ``sys.path`` without importing anything, else the working directory's.
- The API: the nearest package of the calling module holding the file, then its parents,
  else the working directory's.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from .loader import RULE_FILE_NAME


def for_config(config: str | os.PathLike[str], cwd: str) -> str:
    path = os.path.join(cwd, os.path.expanduser(os.fspath(config)))
    if os.path.isdir(path):
        return os.path.join(path, RULE_FILE_NAME)
    return os.path.normpath(path)


def for_script(script: str, cwd: str) -> str:
    if not script:  # -c, - and the REPL: the working directory's file
        return os.path.join(cwd, RULE_FILE_NAME)
    try:
        directory = os.path.dirname(os.path.realpath(os.path.join(cwd, script)))
    except (OSError, ValueError):
        directory = cwd
    candidate = os.path.join(directory, RULE_FILE_NAME)
    if os.path.isfile(candidate):
        return candidate
    return os.path.join(cwd, RULE_FILE_NAME)


def module_directory(module: str, search_path: Sequence[str], cwd: str) -> str | None:
    """The directory holding ``module`` (a package's own directory), found without importing."""
    parts = module.split(".")
    if not all(p.isidentifier() for p in parts):
        return None
    for entry in search_path:
        current = os.path.join(cwd, entry or ".")
        for i, part in enumerate(parts):
            if os.path.isdir(os.path.join(current, part)):
                current = os.path.join(current, part)
                continue
            is_last = i == len(parts) - 1
            if is_last and any(
                os.path.isfile(os.path.join(current, part + suffix)) for suffix in _module_suffixes()
            ):
                return os.path.abspath(current)
            break
        else:
            return os.path.abspath(current)
    return None


def for_module(module: str, cwd: str, search_path: Sequence[str] | None = None) -> str:
    directory = module_directory(module, sys.path if search_path is None else search_path, cwd)
    if directory is not None:
        candidate = os.path.join(directory, RULE_FILE_NAME)
        if os.path.isfile(candidate):
            return candidate
    return os.path.join(cwd, RULE_FILE_NAME)


def for_caller(module_name: str | None, cwd: str, name: str = RULE_FILE_NAME) -> str:
    """For ``sandboxes()``: the nearest package of the caller holding ``name``, else the cwd."""
    parts = (module_name or "").split(".")
    while parts and parts[0]:
        mod = sys.modules.get(".".join(parts))
        directory = _module_dir(mod)
        if directory is not None:
            candidate = os.path.join(directory, name)
            if os.path.isfile(candidate):
                return candidate
        parts.pop()
    return os.path.join(cwd, name)


def _module_dir(mod: object) -> str | None:
    if mod is None:
        return None
    paths = getattr(mod, "__path__", None)
    if paths:
        return os.path.abspath(str(next(iter(paths))))
    file = getattr(mod, "__file__", None)
    return os.path.dirname(os.path.abspath(file)) if isinstance(file, str) else None


def _module_suffixes() -> tuple[str, ...]:
    import importlib.machinery

    return tuple(importlib.machinery.all_suffixes())
