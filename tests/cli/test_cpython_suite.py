"""CPython's own regression suite under ``python-sb`` with every right granted: a few fast test
files, run with ``bench/compat.py`` (the tool behind ``make compat``, which runs the whole list)
under plain ``python`` and under ``python-sb`` with each provider. Every test id must end the
same way (ok, skipped, failure, error...), and so must the file's ``Result:`` line.

Also here: the differences that are deliberate (docs/complete-mode.md §9), each shown by the
program that meets it.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
PYTHON_SB = str(Path(sys.executable).with_name("python-sb"))


def _load_compat() -> ModuleType:
    spec = importlib.util.spec_from_file_location("compat", REPO / "bench" / "compat.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["compat"] = module  # dataclasses looks its module up
    spec.loader.exec_module(module)
    return module


compat = _load_compat()


#: a few seconds each, under python and under python-sb alike
FAST_FILES = [
    "test_json",
    "test_shutil",
    "test_sqlite3",
    "test_inspect",
    "test_csv",
    "test_re",
]


@pytest.mark.parametrize("name", FAST_FILES)
def test_a_cpython_test_file_ends_as_under_python(name: str, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(compat, "WORK_DIR", tmp_path)
    results = compat.compare([name], compat.PROVIDERS, compat.Settings(timeout=300))
    differing = {p: c.differing for p, cs in results.items() for c in cs if c.differing}
    assert differing == {}


# -- deliberate differences (docs/complete-mode.md §9) ----------------------------------------

WRITE_INTO_THE_PREFIX = """\
import os, sys
path = os.path.join(sys.prefix, "pysandboxes-compat-probe.txt")
try:
    with open(path, "w"):
        pass
    os.unlink(path)
    print("written")
except PermissionError as e:
    print(type(e).__name__)
"""


@pytest.mark.parametrize("provider", compat.PROVIDERS)
def test_expose_rw_of_the_root_leaves_the_interpreter_read_only(tmp_path: Path, provider: str) -> None:
    """``expose-rw=/`` does not make the built-in read-only directories (here the
    interpreter's prefix, this venv) writable; a line that names one does."""
    prefix = os.path.realpath(sys.prefix)
    outcomes = {}
    for extra in ("", f"expose-rw={prefix}\n"):
        rules = tmp_path / ".py-sandboxes"
        rules.write_text(f"expose-rw=/\npython-import=os, sys\n{extra}os-sandbox={provider}\n")
        done = subprocess.run(
            [PYTHON_SB, f"--pysandboxes-config={rules}", "-c", WRITE_INTO_THE_PREFIX],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=30,
        )
        outcomes[extra.strip() or "expose-rw=/"] = (done.returncode, done.stdout, done.stderr)
    assert outcomes == {
        "expose-rw=/": (0, "RulePermissionError\n", ""),
        f"expose-rw={prefix}": (0, "written\n", ""),
    }


BIND_EVERY_INTERFACE = """\
import socket
for host in ("127.0.0.1", "0.0.0.0"):
    s = socket.socket()
    try:
        s.bind((host, 0))
        print(host, "bound")
    except ConnectionRefusedError as e:
        print(host, type(e).__name__)
    finally:
        s.close()
"""


@pytest.mark.parametrize("provider", compat.PROVIDERS)
def test_loopback_rules_do_not_grant_listening_on_every_interface(tmp_path: Path, provider: str) -> None:
    """``0.0.0.0`` (and ``::``) is every interface, not loopback: it needs a rule naming it."""
    outcomes = {}
    for extra in ("", "net=ALLOW|tcp|0.0.0.0|*|IN\n"):
        rules = tmp_path / ".py-sandboxes"
        rules.write_text(
            f"net=ALLOW|*|127.0.0.0/8|*|IN,OUT\npython-import=socket\n{extra}os-sandbox={provider}\n"
        )
        done = subprocess.run(
            [PYTHON_SB, f"--pysandboxes-config={rules}", "-c", BIND_EVERY_INTERFACE],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=30,
        )
        outcomes[extra.strip() or "loopback only"] = (done.returncode, done.stdout, done.stderr)
    assert outcomes == {
        "loopback only": (0, "127.0.0.1 bound\n0.0.0.0 RuleSocketConnectionRefusedError\n", ""),
        "net=ALLOW|tcp|0.0.0.0|*|IN": (0, "127.0.0.1 bound\n0.0.0.0 bound\n", ""),
    }
