"""The program's environment under every provider: exactly the ``env=`` result, wherever it is read.

``os.environ`` is one place; the kernel's copy of the environment a process started with is
another (``/proc/PID/environ``, ``cat`` reads it, so does native code), and the process's memory
a third. The host sets a secret the rules do not forward, the interpreter's configuration
(``PYTHONDONTWRITEBYTECODE``, ``LANG``) and python-sb adds its own variables for the launcher;
the program must find none of them: not in ``/proc/self/environ``, not in ``/proc/1/environ``
(the sandbox's init: under ``unshare`` a fork of python-sb), not in its own memory (a fresh
interpreter is never handed the host's variables). The pair of each test: plain python, or a
probe that must find the same secret when it is forwarded.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .test_namespaces import Sandboxed

#: every provider this host runs (qemu: test_qemu.py)
PROVIDERS = ("none", "subprocess", "landlock", "bwrap", "unshare", "firejail")
#: the providers that run the program in namespaces of its own, with a PID 1 inside
NAMESPACED = ("bwrap", "unshare", "firejail")
TIMEOUT = 60
#: split so that the program's own code never holds it whole (see MEMORY)
SECRET_HEAD, SECRET_TAIL = "t0k-3f9a", "c2d17e-5b"

ENVIRON = """
import json, os

def environ(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode(errors="replace")
    except OSError as exc:
        return type(exc).__name__

print("RESULTS=" + json.dumps({"self": environ("/proc/self/environ"), "init": environ("/proc/1/environ")}))
"""

#: every readable mapping of the process, searched for the secret through /proc/self/mem
MEMORY = f"""
import json

def found():
    head, tail = {SECRET_HEAD.encode()!r}, {SECRET_TAIL.encode()!r}
    with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", buffering=0) as mem:
        for line in maps:
            fields = line.split()
            if not fields[1].startswith("r") or fields[-1] in ("[vvar]", "[vsyscall]", "[vvar_vclock]"):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            try:
                mem.seek(start)
                data = mem.read(end - start)
            except (OSError, ValueError, OverflowError):
                continue
            at = data.find(head)
            while at >= 0:
                if data[at + len(head) : at + len(head) + len(tail)] == tail:
                    return True
                at = data.find(head, at + 1)
    return False

print("RESULTS=" + json.dumps({{"found": found()}}))
"""


def host_environ(box: Sandboxed) -> dict[str, str]:
    """What python-sb is started with: a secret, the interpreter's configuration, no TERM."""
    return {**box.environ, "SECRET_TOKEN": SECRET_HEAD + SECRET_TAIL, "PYTHONDONTWRITEBYTECODE": "1"}


def results(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert (done.returncode, done.stderr) == (0, ""), done
    found: dict[str, Any] = json.loads(done.stdout.splitlines()[-1][len("RESULTS=") :])
    return found


def entries(block: str) -> list[str]:
    """The variables of an environment block, and the check that nothing else is in it."""
    assert block.endswith("\0") and "\0\0" not in block, repr(block)
    return sorted(block[:-1].split("\0"))


@pytest.fixture(params=PROVIDERS)
def box(request: pytest.FixtureRequest, tmp_path: Path) -> Sandboxed:
    return Sandboxed(tmp_path, str(request.param))


def test_proc_self_environ_is_exactly_the_env_result(box: Sandboxed) -> None:
    # landlock grants no /proc unless a rule does: the rule lets the program look
    proc = ["expose-ro=/proc"] if box.provider == "landlock" else []
    box.rules("py-sandbox=false", "env=GREETING=hello", "env=HOME=${HOME}", *proc)
    box.write("p.py", ENVIRON)
    found = results(box.sb("p.py", env=host_environ(box)))
    assert entries(found["self"]) == ["GREETING=hello", f"HOME={box.home}"]


def test_plain_python_sees_the_host_environment_there(box: Sandboxed) -> None:
    # the pair: the same probe finds the secret when nothing filters it
    box.write("p.py", ENVIRON)
    done = subprocess.run(
        [sys.executable, "p.py"],
        cwd=box.root,
        env=host_environ(box),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert f"SECRET_TOKEN={SECRET_HEAD}{SECRET_TAIL}" in entries(results(done)["self"])


@pytest.mark.parametrize("provider", NAMESPACED)
def test_the_sandbox_init_shows_no_environment(tmp_path: Path, provider: str) -> None:
    # PID 1 of the sandbox: non-dumpable (unshare, bwrap: ours), or firejail's own
    box = Sandboxed(tmp_path, provider)
    box.rules("py-sandbox=false", "env=GREETING=hello")
    box.write("p.py", ENVIRON)
    assert results(box.sb("p.py", env=host_environ(box)))["init"] == "PermissionError"


@pytest.mark.parametrize("provider", NAMESPACED)
def test_cat_of_the_program_and_init_environment(tmp_path: Path, provider: str) -> None:
    # with process-exec: a child reads its parent's (the program's) block and PID 1's
    box = Sandboxed(tmp_path, provider)
    box.rules(
        "python-import=subprocess",
        "python-api=ALLOW:process-exec",
        "expose-ro=/usr/bin",
        "env=GREETING=hello",
    )
    box.write(
        "p.py",
        "import subprocess\n"
        "for path in ('/proc/$PPID/environ', '/proc/1/environ'):\n"
        "    p = subprocess.run(['sh', '-c', f'cat {path}'], capture_output=True, text=True)\n"
        "    print(repr(p.stdout), p.returncode)\n",
    )
    done = box.sb("p.py", env=host_environ(box))
    assert (done.returncode, done.stderr) == (0, ""), done
    program, init = done.stdout.splitlines()
    assert program == "'GREETING=hello\\x00' 0"
    assert init == "'' 1"  # cat: /proc/1/environ: Permission denied (on its stderr)


#: a fresh interpreter runs the program: it must never have been handed the host's variables
FRESH = ("subprocess", "bwrap", "unshare", "firejail")


@pytest.mark.parametrize("provider", FRESH)
@pytest.mark.parametrize("forwarded", [False, True], ids=["not-forwarded", "forwarded"])
def test_only_a_forwarded_variable_is_in_the_program_memory(
    tmp_path: Path, provider: str, forwarded: bool
) -> None:
    # the pair: the same scan finds the secret once a rule forwards it
    box = Sandboxed(tmp_path, provider)
    box.rules("py-sandbox=false", "env=SECRET_TOKEN=${SECRET_TOKEN}" if forwarded else "env=GREETING=hello")
    box.write("p.py", MEMORY)
    assert results(box.sb("p.py", env=host_environ(box))) == {"found": forwarded}


def test_landlock_with_native_code_holds_no_copy_either(tmp_path: Path) -> None:
    # native code granted: python-sb starts a fresh interpreter (complete.needs_fresh_interpreter)
    box = Sandboxed(tmp_path, "landlock")
    box.rules("python-import=json", "python-api=ALLOW:native", "expose-ro=/proc")
    box.write("p.py", MEMORY)
    assert results(box.sb("p.py", env=host_environ(box))) == {"found": False}


def test_a_rule_reading_a_variable_hands_over_its_value_only(tmp_path: Path) -> None:
    # the rules are loaded again inside from the variables they read (here HOME, and the
    # pattern's names): the program gets the same environment as before
    box = Sandboxed(tmp_path, "bwrap")
    box.rules("py-sandbox=false", "env=HOME=${HOME}", "env=LC_*=C", "expose-ro=${HOME}")
    box.write("p.py", "import json, os\nprint('RESULTS=' + json.dumps(dict(os.environ)))\n")
    environ = {**host_environ(box), "LC_TIME": "fr_FR.UTF-8"}
    found = results(box.sb("p.py", env=environ))
    assert found == {"HOME": str(box.home), "LC_TIME": "C"}
