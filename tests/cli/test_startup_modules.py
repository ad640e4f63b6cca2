"""What ``python-sb -c`` has imported when the program starts, beyond what ``python -c`` has.

Start-up cost is a feature (docs/architecture.md §5): DESIGN.md §7 puts ``python-sb empty.py``
under landlock at ≤ 1.5× plain python, and the core goes out of its way for it (``_log``: no
``logging``, ``_native``: no ``ctypes``, ``_record``: no ``dataclasses``, ``_lazy``: no
``re.compile`` at import). Every module imported before the program runs is paid by every
program. So the modules are pinned here: a new
one fails the test (import it where it is used), and one that is no longer loaded fails it too
(take it out: the list only shrinks).

Pinned: the package's own modules, exactly, and the standard-library modules the sandbox's code
imports by name; what those import in turn is asked of the running interpreter (``python -c
"import contextlib, ..."``), so the pin holds on every Python the project supports.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

PYTHON = sys.executable
PYTHON_SB = Path(sys.executable).with_name("python-sb")
PROGRAM = "import sys; print(sorted(sys.modules))"
RUNS = 3
TIMEOUT = 30

#: the sandbox's own modules, loaded under every provider
OWN = frozenset(
    {
        "pysandboxes",
        "pysandboxes._environ_block",
        "pysandboxes._frames",
        "pysandboxes._lazy",
        "pysandboxes._log",
        "pysandboxes._native",
        "pysandboxes._record",
        "pysandboxes._state",
        "pysandboxes.cli",
        "pysandboxes.cli.cpython_args",
        "pysandboxes.cli.python_sb",
        "pysandboxes.complete",
        "pysandboxes.errors",
        "pysandboxes.guards",
        "pysandboxes.guards._importlib_bootstrap",
        "pysandboxes.guards._seal",
        "pysandboxes.guards.api",
        "pysandboxes.guards.files",
        "pysandboxes.guards.imports",
        "pysandboxes.guards.network",
        "pysandboxes.guards.paths",
        "pysandboxes.limits",
        "pysandboxes.providers",
        "pysandboxes.providers.landlock",
        "pysandboxes.providers.landlock_abi",
        "pysandboxes.rules",
        "pysandboxes.rules.api",
        "pysandboxes.rules.api_registry",
        "pysandboxes.rules.context",
        "pysandboxes.rules.environment",
        "pysandboxes.rules.eval_vocab",
        "pysandboxes.rules.evaluation",
        "pysandboxes.rules.files",
        "pysandboxes.rules.lexer",
        "pysandboxes.rules.loader",
        "pysandboxes.rules.locate",
        "pysandboxes.rules.network",
        "pysandboxes.rules.origin",
        "pysandboxes.rules.policy",
        "pysandboxes.rules.provider_keys",
        "pysandboxes.rules.substitution",
        "pysandboxes.rules.template",
        "pysandboxes.rules.values",
    }
)

#: standard-library modules the sandbox's code imports by name, under every provider
STDLIB = frozenset(
    {
        "__future__",  # `from __future__ import annotations` in every module
        "contextlib",  # complete.py, providers/unshare_setup.py (with collections, functools, operator)
        "collections.abc",  # rules/context.py and providers/landlock.py, at module level
        "struct",  # _environ_block.py
        "_socket",  # guards/network.py
        "_ctypes",  # _native.py: a few C calls without ctypes
        "pwd",  # the home directory: providers/landlock.py; site, in a fresh interpreter without HOME
        "importlib._bootstrap",  # guards/ wrap _find_and_load (importlib brings warnings)
        "importlib._bootstrap_external",  # guards/_importlib_bootstrap.py
    }
)

#: provider → (its own modules, its standard-library modules by name) on top of the above
BY_PROVIDER: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    # the program runs in python-sb's own process
    "landlock": (
        frozenset({"python_sb", "pysandboxes.providers.seccomp"}),
        frozenset({"ctypes"}),  # providers/landlock_abi.py asks the kernel's Landlock ABI through ctypes
    ),
    # the program runs in a fresh interpreter that complete.resume() starts from a hand-off
    "subprocess": (
        frozenset({"pysandboxes.providers.namespaces", "pysandboxes.providers.unshare_setup"}),
        frozenset({"json"}),  # complete.resume() reads the hand-off (json brings re and enum)
    ),
}


def modules_loaded(command: list[str], cwd: Path, home: Path, program: str = PROGRAM) -> frozenset[str]:
    """``sys.modules`` as the ``-c`` program of ``command`` sees it, in a fixed environment."""
    result = subprocess.run(
        [*command, "-c", program],
        cwd=cwd,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert result.returncode == 0, result.stderr
    return frozenset(ast.literal_eval(result.stdout))


def imported_with(names: frozenset[str], cwd: Path, home: Path) -> frozenset[str]:
    """``names`` and what importing them loads on this interpreter (``python -c "import ..."``)."""
    return modules_loaded([PYTHON], cwd, home, f"import {', '.join(sorted(names))}; {PROGRAM}")


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "project"
    home = tmp_path / "home"
    root.mkdir()
    home.mkdir()
    return root, home


@pytest.mark.parametrize("provider", sorted(BY_PROVIDER))
def test_python_sb_imports_only_the_pinned_modules_before_the_program_runs(
    project: tuple[Path, Path], provider: str
) -> None:
    assert PYTHON_SB.exists(), "the python-sb console script is not installed next to python"
    root, home = project
    (root / ".py-sandboxes").write_text(f"os-sandbox={provider}\n", encoding="utf-8")
    plain = modules_loaded([PYTHON], root, home)
    runs = [modules_loaded([str(PYTHON_SB)], root, home) - plain for _ in range(RUNS)]
    assert all(run == runs[0] for run in runs), (
        f"python-sb (os-sandbox={provider}) loads different modules from run to run: "
        f"{sorted(set.union(*map(set, runs)) - set.intersection(*map(set, runs)))}"
    )
    own, stdlib = BY_PROVIDER[provider]
    pinned = OWN | own | STDLIB | stdlib
    new = sorted(runs[0] - pinned - imported_with(STDLIB | stdlib, root, home))
    assert new == [], (
        f"python-sb (os-sandbox={provider}) now imports {', '.join(new)} before the program runs, and "
        "python -c does not. Start-up cost is a feature (docs/architecture.md §5; DESIGN.md §7: "
        "python-sb empty.py at ≤ 1.5× plain python): move the import into the function that uses it, "
        "or, if the sandbox needs the module before the program starts, pin it in "
        "tests/cli/test_startup_modules.py with the reason"
    )
    gone = sorted(pinned - runs[0])
    assert gone == [], (
        f"python-sb (os-sandbox={provider}) no longer imports {', '.join(gone)} at start-up: "
        "take them out of tests/cli/test_startup_modules.py (the pinned set only shrinks)"
    )
