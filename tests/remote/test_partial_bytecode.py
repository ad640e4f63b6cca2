"""The partial-mode child and the host's bytecode settings.

The child is a fresh interpreter (``python -E -s``): it drops ``PYTHON*`` variables, so a host
started with ``PYTHONDONTWRITEBYTECODE=1`` or ``-B`` (which writes no bytecode, like python)
should still not get ``__pycache__`` directories written next to its modules by the child.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TOOLS = """
from pysandboxes import sandbox


@sandbox
def double(x):
    return 2 * x
"""

HOST = """
from pysandboxes import sandboxes

import tools

with sandboxes():
    print(tools.double(21))
"""


def _project(root: Path) -> None:
    (root / ".py-sandboxes").write_text("os-sandbox=subprocess\n", encoding="utf-8")
    (root / "tools.py").write_text(textwrap.dedent(TOOLS).lstrip(), encoding="utf-8")
    (root / "host.py").write_text(textwrap.dedent(HOST).lstrip(), encoding="utf-8")


def _run(root: Path, *flags: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {"HOME": str(root), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", **env}
    return subprocess.run(
        [sys.executable, *flags, "host.py"],
        cwd=root,
        env=environ,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_bytecode_is_cached_next_to_the_module_by_default(tmp_path: Path) -> None:
    _project(tmp_path)
    done = _run(tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "42\n", "")
    assert [p.name.split(".")[0] for p in (tmp_path / "__pycache__").iterdir()] == ["tools"]


@pytest.mark.parametrize(
    ("flags", "env"),
    [((), {"PYTHONDONTWRITEBYTECODE": "1"}), (("-B",), {})],
    ids=["PYTHONDONTWRITEBYTECODE=1", "python -B"],
)
def test_no_bytecode_written_when_the_host_writes_none(
    tmp_path: Path, flags: tuple[str, ...], env: dict[str, str]
) -> None:
    _project(tmp_path)
    done = _run(tmp_path, *flags, **env)
    assert (done.returncode, done.stdout, done.stderr) == (0, "42\n", "")
    assert not (tmp_path / "__pycache__").exists()
