"""Reading a learned rule file, and the broad rules of issue 18 §2 it must not hold.

Each check takes a ``RoundTrip`` (its learned file, environment and directories) and returns the
offending lines, each quoted as ``.py-sandboxes(LINE): RULE: why``; an empty list is a pass.
"""

from __future__ import annotations

import os
import subprocess

from pysandboxes.rules import load_policy

from .conftest import RULES, TIMEOUT, RoundTrip

# -- reading the learned file ------------------------------------------------------------------


def active_lines(round_trip: RoundTrip) -> list[tuple[str, str]]:
    """``(where, rule)`` for each line that is not blank nor a comment: ``rule`` without its
    trailing comment (``#`` starts one), ``where`` the whole line with its number, such as
    ``.py-sandboxes(12): env=X=${X}  # absent while learning``."""
    found = []
    for number, line in enumerate(round_trip.text().splitlines(), 1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            found.append((f"{RULES}({number}): {stripped}", stripped.partition("#")[0].strip()))
    return found


def exposures(round_trip: RoundTrip) -> list[tuple[str, str]]:
    """``(where, directory)`` for each exposure of the learned file, resolved as the strict run
    resolves it (same environment, same working directory)."""
    learned = os.path.realpath(round_trip.learned_file())
    policy = load_policy(learned, environ=round_trip.environ, cwd=str(round_trip.project))
    return [
        (f"{RULES}({e.origin.line}): {e.rule.text}", e.path)
        for e in policy.files_policy.exposures
        if e.rule is not None and e.origin.path is not None and os.path.realpath(e.origin.path) == learned
    ]


def holds(directory: str, path: str | os.PathLike[str]) -> bool:
    """``directory`` is ``path`` or one of its parents."""
    real = os.path.realpath(path)
    return directory == real or directory == "/" or real.startswith(directory + "/")


def imported_modules(round_trip: RoundTrip) -> list[tuple[str, str]]:
    """``(where, module)`` for each (top-level) module named by a ``python-import=`` line."""
    return [
        (where, name.strip())
        for where, rule in active_lines(round_trip)
        if rule.startswith("python-import=")
        for name in rule.partition("=")[2].split(",")
        if name.strip()
    ]


def missing_modules(round_trip: RoundTrip, names: list[str]) -> list[str]:
    """The modules of ``names`` that the case's environment cannot import (``find_spec`` in its
    interpreter, isolated: nothing from the working directory or the environment)."""
    probe = (
        "import importlib.util, sys\nfor n in sys.argv[1:]:\n    importlib.util.find_spec(n) or print(n)\n"
    )
    done = subprocess.run(
        [str(round_trip.env_dir / "bin" / "python"), "-I", "-c", probe, *names],
        env=round_trip.environ,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=True,
    )
    return done.stdout.split()


# -- the broad rules (each helper returns the offending lines, with why) -------------------------


def device_directories(round_trip: RoundTrip) -> list[str]:
    """``/dev`` or a directory under it: exact device files (``/dev/null``) are enough."""
    return [
        f"{where}: exposes the directory {path}; expose the device files the program opens"
        for where, path in exposures(round_trip)
        if (path == "/dev" or path.startswith("/dev/")) and os.path.isdir(path)
    ]


def dotenv_exposures(round_trip: RoundTrip) -> list[str]:
    """The project directory itself, or a parent: it holds ``.env``."""
    return [
        f"{where}: exposes {path}, which holds the project's .env ({round_trip.dotenv})"
        for where, path in exposures(round_trip)
        if holds(path, round_trip.dotenv)
    ]


def home_or_root_exposures(round_trip: RoundTrip) -> list[str]:
    """``/``, the home directory, or a parent of it."""
    return [
        f"{where}: exposes {path}, the whole home directory ({round_trip.home}) with it"
        for where, path in exposures(round_trip)
        if holds(path, round_trip.home)
    ]


def listening_rules(round_trip: RoundTrip) -> list[str]:
    """``net=...|IN``: no program here listens (probes bind ephemeral loopback sockets)."""
    return [
        f"{where}: a listening right"
        for where, rule in active_lines(round_trip)
        if rule.startswith("net=") and rule.rsplit("|", 1)[-1].strip().upper() == "IN"
    ]


def absent_variables(round_trip: RoundTrip) -> list[str]:
    """``env=X=${X}  # absent while learning`` as an active line: a grant for a variable
    nobody set (it belongs in a commented block)."""
    return [
        f"{where}: an active grant of an unset variable"
        for where, _ in active_lines(round_trip)
        if where.endswith("# absent while learning")
    ]


def missing_module_imports(round_trip: RoundTrip) -> list[str]:
    """``python-import=`` of a module the environment does not have (a failed optional import)."""
    named = [(where, name.partition(".")[0]) for where, name in imported_modules(round_trip) if name != "*"]
    missing = set(missing_modules(round_trip, sorted({name for _, name in named})))
    return [
        f"{where}: {name!r} is not installed in {round_trip.env_dir}"
        for where, name in named
        if name in missing
    ]


def wildcard_imports(round_trip: RoundTrip) -> list[str]:
    """``python-import=*``: every module."""
    return [f"{where}: every module" for where, name in imported_modules(round_trip) if name == "*"]


def compile_grants(round_trip: RoundTrip) -> list[str]:
    """``python-api=ALLOW:builtins.compile``: raw dynamic code for the whole program."""
    return [
        f"{where}: a grant of raw compile()"
        for where, rule in active_lines(round_trip)
        if rule == "python-api=ALLOW:builtins.compile"
    ]


def objects_result_mode(round_trip: RoundTrip) -> list[str]:
    """``remote-result-mode=objects``: a @sandbox call may return any object (partial mode)."""
    return [
        f"{where}: results as objects"
        for where, rule in active_lines(round_trip)
        if rule == "remote-result-mode=objects"
    ]


#: every check, in the order the tests run them
CHECKS = (
    device_directories,
    dotenv_exposures,
    home_or_root_exposures,
    listening_rules,
    absent_variables,
    missing_module_imports,
    wildcard_imports,
    compile_grants,
    objects_result_mode,
)
