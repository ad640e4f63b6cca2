"""Native code the Python layer cannot see: only the landlock provider holds.

The rules grant the door (``python-api=ALLOW:native`` for ctypes, ``ALLOW:process-exec`` for a
shell), then the program goes around the Python layer: libc ``open``/``connect`` through
ctypes, ``cat`` in a child process. Under ``os-sandbox=landlock`` the kernel refuses
(``EACCES``); the same program under ``os-sandbox=subprocess`` gets through, which documents
that ``subprocess`` is no boundary. ``expose-ro=/usr/bin`` lets the shell and ``cat`` start
under landlock, so the refusal seen is the file's, not the executable's.
"""

from __future__ import annotations

import errno
import textwrap
from typing import Any

import pytest

LIBC = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def errno_of(result):
    return ctypes.get_errno() if result < 0 else 0
"""
NATIVE_RULES = "expose-ro=@DATA@\npython-import=ctypes\npython-api=ALLOW:native"


def test_libc_open_of_an_unexposed_file(project: Any, provider: str) -> None:
    program = LIBC + textwrap.dedent(
        """
    def native_read(path):
        fd = libc.open(path.encode(), 0)
        if fd < 0:
            return ("errno", errno_of(fd))
        buffer = ctypes.create_string_buffer(64)
        n = libc.read(fd, buffer, 64)
        libc.close(fd)
        return ("read", buffer.raw[:n])
    attempt("data", native_read, "@DATA@/data.txt")
    attempt("secret", native_read, "@SECRET@/secret.txt")
    """
    )
    run = project.run(program, NATIVE_RULES, provider=provider)
    secret = f"OK ('errno', {errno.EACCES})" if provider == "landlock" else "OK ('read', b'TOPSECRET\\n')"
    assert run.outcomes() == {"data": "OK ('read', b'DATA\\n')", "secret": secret}


def test_a_shell_command_reading_an_unexposed_file(project: Any, provider: str) -> None:
    program = """
    import os
    attempt("cat data", os.system, "cat @DATA@/data.txt")
    attempt("cat secret", os.system, "cat @SECRET@/secret.txt 2>/dev/null")
    """
    rules = "expose-ro=/usr/bin\nexpose-ro=@DATA@\npython-import=os\npython-api=ALLOW:process-exec"
    run = project.run(program, rules, provider=provider)
    assert (run.returncode, run.stderr) == (0, "")
    if provider == "landlock":
        assert run.stdout == "DATA\ncat data -> OK 0\ncat secret -> OK 256\n"  # cat: Permission denied
    else:
        assert run.stdout == "DATA\ncat data -> OK 0\nTOPSECRET\ncat secret -> OK 0\n"


def test_libc_connect_to_a_port_no_rule_allows(project: Any, provider: str, listening: Any) -> None:
    allowed, other = listening(), listening()
    program = LIBC + textwrap.dedent(
        f"""
    class sockaddr_in(ctypes.Structure):
        _fields_ = [("family", ctypes.c_ushort), ("port", ctypes.c_uint16),
                    ("addr", ctypes.c_uint32), ("zero", ctypes.c_char * 8)]
    def native_connect(port):
        s = libc.socket(2, 1, 0)  # AF_INET, SOCK_STREAM
        address = sockaddr_in(2, ((port & 0xFF) << 8) | (port >> 8), 0x0100007F)  # network order
        result = libc.connect(s, ctypes.byref(address), ctypes.sizeof(address))
        code = errno_of(result)
        libc.close(s)
        return code
    attempt("allowed", native_connect, {allowed})
    attempt("other", native_connect, {other})
    """
    )
    rules = f"python-import=ctypes\npython-api=ALLOW:native\nnet=ALLOW|tcp|127.0.0.1|{allowed}|OUT"
    run = project.run(program, rules, provider=provider)
    assert run.outcomes() == {
        "allowed": "OK 0",
        "other": f"OK {errno.EACCES}" if provider == "landlock" else "OK 0",
    }


# -- no process-exec grant: a fresh _posixsubprocess ----------------------------------------------
# `python-import=_posixsubprocess` is what a profile written for the reference (which charged the
# stdlib's own imports) lists for `subprocess`.

FORK_EXEC = """
import os, sys
_imp = sys.modules["_imp"]
spec = sys.modules["importlib._bootstrap"].ModuleSpec(
    "_posixsubprocess", sys.modules["_frozen_importlib_external"].ExtensionFileLoader("_posixsubprocess", "@SO@"),
    origin="@SO@",
)
fresh = _imp.create_dynamic(spec)
_imp.exec_dynamic(fresh)
def run(command):
    read_end, write_end = os.pipe()
    pid = fresh.fork_exec(
        [b"/bin/sh", b"-c", command.encode()], [b"/bin/sh"], True, (write_end,), None, None,
        -1, -1, -1, -1, -1, -1, read_end, write_end, True, False, -1, None, None, None, -1, None, True,
    )
    os.close(write_end)
    os.close(read_end)
    return os.waitpid(pid, 0)[1]
attempt("cat secret", run, "cat @SECRET@/secret.txt 2>/dev/null")
"""


def so_path() -> str:
    import _posixsubprocess

    return str(_posixsubprocess.__file__)


def test_a_fresh_posixsubprocess_under_landlock_cannot_read_outside(project: Any) -> None:
    rules = "expose-ro=/usr/bin\npython-import=os, _posixsubprocess"
    run = project.run(FORK_EXEC.replace("@SO@", so_path()), rules, provider="landlock")
    assert run.outcomes() == {"cat secret": "OK 256"}  # the shell ran; cat got EACCES
    assert "TOPSECRET" not in run.stdout


@pytest.mark.xfail(
    strict=True,
    reason="Python-layer limit (docs/security-model.md §5): a fresh _posixsubprocess (sys.modules['_imp'].create_dynamic) runs a shell with no "
    "process-exec grant: fork_exec raises no audit event and only the module attribute is wrapped",
)
def test_a_fresh_posixsubprocess_is_refused_by_the_python_layer(project: Any) -> None:
    rules = "expose-ro=/usr/bin\npython-import=os, _posixsubprocess"
    run = project.run(FORK_EXEC.replace("@SO@", so_path()), rules, provider="subprocess")
    assert "TOPSECRET" not in run.stdout
    assert run.outcome("cat secret") == (
        "RuleApiPermissionError: _posixsubprocess.fork_exec() is denied by the API guard (category: process-exec)."
    )
