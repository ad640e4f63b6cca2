"""Ordinary code runs unchanged with the rights it needs: differences CPython's own test suite
found under ``python-sb`` (``make compat``, bench/compat.py), each pinned by the program that
shows it, run under every provider. Security-relevant ones come in pairs (allowed with the
rule, refused without)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

PYTHON_SB = str(Path(sys.executable).with_name("python-sb"))


def test_shutil_keeps_its_symlink_safe_functions(project: Any, provider: str) -> None:
    """``shutil`` picks ``rmtree``'s descriptor-based walk and ``copystat``'s
    ``follow_symlinks=False`` path by asking ``os.supports_*`` about ``os.stat`` & co."""
    run = project.run(
        """
        import os, shutil
        attempt("rmtree avoids symlink attacks", lambda: shutil.rmtree.avoids_symlink_attacks)
        attempt("stat in supports_dir_fd", lambda: os.stat in os.supports_dir_fd)
        attempt("access in supports_effective_ids", lambda: os.access in os.supports_effective_ids)
        os.symlink("data.txt", "@DATA@/one")
        os.symlink("data.txt", "@DATA@/two")
        attempt("copystat of a link", shutil.copystat, "@DATA@/one", "@DATA@/two", follow_symlinks=False)
        """,
        "expose-rw=@DATA@\npython-import=os, shutil",
        provider=provider,
    )
    assert run.outcomes() == {
        "rmtree avoids symlink attacks": "OK True",
        "stat in supports_dir_fd": "OK True",
        "access in supports_effective_ids": "OK True",
        "copystat of a link": "OK",
    }


def test_the_wrapped_os_functions_show_their_own_signature(project: Any, provider: str) -> None:
    run = project.run(
        """
        import inspect, os
        attempt("stat", lambda: str(inspect.signature(os.stat)))
        attempt("access", lambda: str(inspect.signature(os.access)))
        attempt("statvfs", lambda: str(inspect.signature(os.statvfs)))
        attempt("argspec", lambda: inspect.getfullargspec(os.lstat).args)
        """,
        "python-import=os, inspect",
        provider=provider,
    )
    assert run.outcomes() == {
        "stat": "OK '(path, *, dir_fd=None, follow_symlinks=True)'",
        "access": "OK '(path, mode, *, dir_fd=None, effective_ids=False, follow_symlinks=True)'",
        "statvfs": "OK '(path)'",
        "argspec": "OK ['path']",
    }


PACKAGE_WRITES_NEXT_TO_ITSELF = """\
import os
path = os.path.join(os.path.dirname(__file__), "cache.txt")
try:
    with open(path, "w") as f:
        f.write("cached")
    print("wrote", os.path.basename(path))
except OSError as e:
    print(type(e).__name__)
"""


def test_a_module_run_with_m_may_write_where_the_rules_let_it(project: Any, provider: str) -> None:
    """``python-sb -m tool``: the program's own directory is readable, and stays writable
    when an ``expose-rw=`` covers it (CPython's ``-m test`` writes into its package)."""
    tool = project.data / "tool"
    tool.mkdir()
    (tool / "__main__.py").write_text(PACKAGE_WRITES_NEXT_TO_ITSELF)
    outcomes = {}
    for exposure in ("expose-rw", "expose-ro"):
        project.rule_file.write_text(f"{exposure}={project.data}\npython-import=os\nos-sandbox={provider}\n")
        done = subprocess.run(
            [PYTHON_SB, f"--pysandboxes-config={project.rule_file}", "-m", "tool"],
            cwd=project.data,
            env={"HOME": str(project.home), "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            capture_output=True,
            text=True,
            timeout=30,
        )
        outcomes[exposure] = (done.returncode, done.stdout, done.stderr)
    assert outcomes == {
        "expose-rw": (0, "wrote cache.txt\n", ""),
        "expose-ro": (0, "RulePermissionError\n", ""),
    }
    assert (tool / "cache.txt").read_text() == "cached"


def test_sqlite3_connect_returns_what_a_factory_made(project: Any, provider: str) -> None:
    """A factory that skips ``Connection.__init__`` opens nothing: ``connect`` returns its
    object, which refuses every use (CPython's test_sqlite3 checks both)."""
    run = project.run(
        """
        import sqlite3
        class Unopened(sqlite3.Connection):
            def __init__(self, *args, **kwargs):
                pass
        attempt("connect", lambda: type(sqlite3.connect(":memory:", factory=Unopened)).__name__)
        attempt("use", lambda: sqlite3.connect(":memory:", factory=Unopened).execute("select 1"))
        """,
        "python-import=sqlite3",
        provider=provider,
    )
    assert run.outcomes() == {
        "connect": "OK 'Unopened'",
        "use": "ProgrammingError: Base Connection.__init__ not called.",
    }


def test_a_relative_import_without_globals_fails_as_under_python(project: Any, provider: str) -> None:
    run = project.run(
        'attempt("relative import, no globals", __import__, "sys", level=1)',
        provider=provider,
    )
    assert run.outcomes() == {"relative import, no globals": "KeyError: \"'__name__' not in globals\""}


NAMEINFO = """\
import socket
numeric = socket.NI_NUMERICHOST | socket.NI_NUMERICSERV
attempt("127.0.0.1", socket.getnameinfo, ("127.0.0.1", 8080), numeric)
attempt("::1", socket.getnameinfo, ("::1", 8080, 0, 0), numeric)
attempt("10.1.2.3", socket.getnameinfo, ("10.1.2.3", 8080), numeric)
class Anything(str):
    def __eq__(self, other):
        return True
    __hash__ = str.__hash__
attempt("str subclass", socket.getnameinfo, (Anything("10.1.2.3"), 8080), numeric)
"""


def test_getnameinfo_of_a_loopback_address_works_as_gethostbyaddr_does(project: Any, provider: str) -> None:
    """asyncio's tests format their own socket's address with ``getnameinfo``; a loopback
    address is answered from the hosts file, any other is refused before any query."""
    run = project.run(NAMEINFO, "python-import=socket", provider=provider, netns=True)
    denied = "RuleSocketConnectionRefusedError: Reverse lookup of '10.1.2.3' (socket.getnameinfo) DENIED: the sandbox sends no DNS query for it."
    assert run.outcomes() == {
        "127.0.0.1": "OK ('127.0.0.1', '8080')",
        "::1": "OK ('::1', '8080')",
        "10.1.2.3": denied,
        "str subclass": denied,
    }


READLINK = """\
import os
os.symlink("@SECRET@/secret.txt", "@DATA@/out")
os.symlink("@DATA@/loop", "@DATA@/loop")
attempt("readlink of a link to outside", os.readlink, "@DATA@/out")
attempt("realpath of a loop", os.path.realpath, "@DATA@/loop")
attempt("reading through the link", lambda: open("@DATA@/out").read())
attempt("readlink outside the exposures", os.readlink, "@SECRET@/secret.txt")
"""


def test_readlink_judges_the_link_itself_not_where_it_points(project: Any, provider: str) -> None:
    """``readlink`` reads a link of an exposed directory, as the kernel lets it, and
    ``realpath`` finds a loop itself (CPython's test_posixpath); what the link points to is
    still judged when it is opened."""
    run = project.run(READLINK, "expose-rw=@DATA@\npython-import=os", provider=provider)
    secret = project.secret / "secret.txt"
    outside = f"RuleFileNotFoundError: Access to '{secret}' must be accepted by a rule."
    assert run.outcomes() == {
        "readlink of a link to outside": f"OK '{secret}'",
        "realpath of a loop": f"OK '{project.data}/loop'",
        "reading through the link": outside,
        "readlink outside the exposures": outside,
    }


def test_a_bytearray_path_works_as_under_python_and_is_judged_like_bytes(project: Any, provider: str) -> None:
    """C accepts a bytearray or memoryview path with a DeprecationWarning (test_os): the wrapper
    copies it once, judges the copy and hands C the copy."""
    run = project.run(
        """
        import os, warnings
        warnings.simplefilter("error", DeprecationWarning)
        attempt("warned", os.stat, bytearray(b"@DATA@/data.txt"))
        warnings.simplefilter("ignore", DeprecationWarning)
        attempt("allowed", lambda: os.stat(bytearray(b"@DATA@/data.txt")).st_size > 0)
        attempt("memoryview", lambda: os.stat(memoryview(b"@DATA@/data.txt")).st_size > 0)
        attempt("secret", os.stat, bytearray(b"@SECRET@/secret.txt"))
        """,
        "expose-ro=@DATA@\npython-import=os, warnings",
        provider=provider,
    )
    outcomes = run.outcomes()
    assert outcomes.pop("warned").startswith(
        "DeprecationWarning: stat: path should be string, bytes, os.PathLike or integer, not bytearray"
    )
    assert outcomes.pop("secret").startswith("RuleFileNotFoundError: Access to")
    assert outcomes == {"allowed": "OK True", "memoryview": "OK True"}


def test_a_bytearray_path_a_call_converts_before_its_event_is_refused(project: Any, provider: str) -> None:
    """``os.listdir``, ``os.scandir``, ``os.chdir``…: C copies a bytearray path before it raises
    the audit event, which hands the guard the bytearray itself; another thread could change it
    in between, so it is refused (docs/complete-mode.md §9). The same path as bytes works."""
    run = project.run(
        """
        import os, warnings
        warnings.simplefilter("ignore", DeprecationWarning)
        attempt("bytes", lambda: "data.txt" in os.listdir(b"@DATA@".decode()))
        attempt("bytearray", os.listdir, bytearray(b"@DATA@"))
        attempt("chdir", os.chdir, bytearray(b"@DATA@"))
        """,
        "expose-ro=@DATA@\npython-import=os, warnings",
        provider=provider,
    )
    refusal = (
        "RulePermissionError: Cannot tell which file a 'bytearray' object names: the sandbox judges "
        "the path C uses, and this object could name another one when asked again."
    )
    assert run.outcomes() == {"bytes": "OK True", "bytearray": refusal, "chdir": refusal}
