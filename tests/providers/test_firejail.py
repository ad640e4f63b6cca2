"""os-sandbox=firejail end to end: what the kernel holds for native code, in pairs.

firejail shows the host's file system and hides what it is told to (``--blacklist``): a hidden
file reads as nothing (root may open the empty file firejail puts over it; anyone else gets
EACCES), never as its content. Everything else is held as under bwrap and unshare.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from .test_namespaces import PYTHON_SB, Sandboxed, Server

FIREJAIL = shutil.which("firejail")


@pytest.fixture
def box(tmp_path: Path) -> Sandboxed:
    assert FIREJAIL is not None, "CI installs firejail (.ci/run)"
    return Sandboxed(tmp_path, "firejail")


@pytest.fixture
def server() -> Server:
    s = Server()
    yield s  # type: ignore[misc]
    s.close()


def _hidden(value: str) -> bool:
    """What reading a hidden file gives: an error, or (root) the empty file over it."""
    return value in ("ok:", "EACCES", "ENOENT", "EPERM")


def test_python_layer_refuses_as_usual(box: Sandboxed) -> None:
    box.write("data/a.txt", "data-a")
    box.write("app.py", "print(open('data/a.txt').read())\n")
    box.rules()
    refused = box.sb("app.py")
    assert refused.returncode == 1
    assert "RuleFileNotFoundError: Access to" in refused.stderr
    box.rules("expose-ro=./data")
    assert box.sb("app.py").stdout == "data-a\n"


def test_native_code_cannot_read_what_is_not_exposed(box: Sandboxed) -> None:
    box.write("data/a.txt", "data-a")
    results = box.probe(
        "expose-ro=./data",
        body=f"""
        results["exposed"] = native_open("data/a.txt")
        results["outside"] = native_open({str(box.outside / "secret.txt")!r})
        results["home"] = native_open({str(box.home / ".secret")!r})
        results["etc"] = native_open("/etc/hostname")
        """,
    )
    assert results["exposed"] == "ok:data-a"
    for key in ("outside", "home", "etc"):
        assert _hidden(results[key]), results


def test_native_writes_only_in_expose_rw(box: Sandboxed) -> None:
    box.write("out/.keep", "")
    results = box.probe(
        "expose-rw=./out",
        body=f"""
        results["rw"] = native_write("out/x.txt")
        results["cwd"] = native_write("here.txt")
        results["outside"] = native_write({str(box.outside / "new.txt")!r})
        """,
    )
    assert results["rw"] == "ok" and (box.root / "out" / "x.txt").read_text() == "written"
    assert results["cwd"] in ("EROFS", "EACCES", "EPERM") and not (box.root / "here.txt").exists()
    assert results["outside"] in ("EROFS", "EACCES", "EPERM", "ENOENT")
    assert not (box.outside / "new.txt").exists()


def test_host_processes_are_invisible(box: Sandboxed) -> None:
    results = box.probe(
        body=f"""
        try:
            os.kill({os.getpid()}, 0)
            results["kill"] = "ok"
        except OSError as exc:
            results["kill"] = _errno(exc.errno)
        """
    )
    assert results["kill"] == "ESRCH"


def test_network_is_exactly_the_rules_for_native_code(box: Sandboxed, server: Server) -> None:
    other = Server()
    try:
        results = box.probe(
            f"net=ALLOW|tcp|127.0.0.1|{server.port}|OUT",
            body=f"""
            results["allowed"] = native_connect("127.0.0.1", {server.port})
            results["other"] = native_connect("127.0.0.1", {other.port})
            """,
        )
    finally:
        other.close()
    assert results["allowed"].startswith("ok:")
    assert results["other"] == "ECONNREFUSED"
    assert other.connections == 0


def test_a_shared_library_under_an_exposed_tmp_directory_loads(box: Sandboxed) -> None:
    # the reference's --noexec=/tmp breaks every compiled extension of a venv there
    libm = next(
        p
        for p in ("/usr/lib/x86_64-linux-gnu/libm.so.6", "/lib/x86_64-linux-gnu/libm.so.6")
        if os.path.exists(p)
    )
    (box.root / "lib").mkdir()
    shutil.copy(libm, box.root / "lib" / "libm.so.6")
    results = box.probe(
        "expose-ro=./lib",
        body="""
        m = ctypes.CDLL(os.path.abspath("lib/libm.so.6"))
        m.cos.restype = ctypes.c_double
        m.cos.argtypes = [ctypes.c_double]
        results["cos"] = m.cos(0.0)
        """,
    )
    assert results["cos"] == 1.0


def test_rlimit_keys_reach_the_program(box: Sandboxed) -> None:
    results = box.probe(
        "firejail.rlimit-nofile=64",
        body="""
        import resource
        results["nofile"] = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        """,
    )
    assert results["nofile"] == 64


def test_exit_status_like_python(box: Sandboxed) -> None:
    box.rules("python-import=os, signal, sys\npython-api=ALLOW:*")
    box.write("app.py", "import sys\nsys.exit(3)\n")
    box.write("high.py", "import sys\nsys.exit(143)\n")  # not to be taken for SIGTERM
    box.write("term.py", "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n")
    assert box.sb("app.py").returncode == 3
    assert box.sb("high.py").returncode == 143
    assert box.sb("term.py").returncode == -15


def test_partial_mode_call_runs_confined(box: Sandboxed) -> None:
    box.write("data/a.txt", "data-a")
    box.write(
        "tools.py",
        f"""
import ctypes, os
from pysandboxes import sandbox

@sandbox
def look():
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.open({str(box.outside / "secret.txt")!r}.encode(), os.O_RDONLY)
    leaked = os.read(fd, 100).decode() if fd >= 0 else ""
    return open("data/a.txt").read(), leaked
""",
    )
    box.write(
        "host.py",
        "import tools\nfrom pysandboxes import sandboxes\nwith sandboxes():\n    print(tools.look())\n",
    )
    box.rules("expose-ro=./data", "python-import=ctypes, os", "python-api=ALLOW:native")
    done = subprocess.run(
        [sys.executable, "host.py"],
        cwd=box.root,
        env=box.environ,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (0, "('data-a', '')\n"), done


def test_a_missing_firejail_stops_the_run(box: Sandboxed, tmp_path: Path) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    box.rules()
    box.write("app.py", "open('ran', 'w').close()\n")
    done = box.sb("app.py", env={**box.environ, "PATH": str(empty)})
    assert done.returncode == 2
    assert done.stderr.strip().endswith(
        "cannot start: firejail is not installed: install it (Debian: apt-get install firejail)"
    )
    assert not (box.root / "ran").exists()


LATE = """\
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
print("ready", flush=True)
sys.stdin.readline()
fd = libc.open(sys.argv[1].encode(), os.O_RDONLY)
print("late:", os.read(fd, 100).decode() if fd >= 0 else errno.errorcode[ctypes.get_errno()], flush=True)
"""


@pytest.mark.parametrize("made", ["before", "after"])
def test_a_file_made_next_to_the_project_is_never_seen(box: Sandboxed, made: str) -> None:
    # the temporary directory is whitelisted (a tmpfs with the view's paths bound back), not
    # hidden entry by entry: an entry made after the profile was written is not in the view either
    late = box.root.parent / "late-secret.txt"
    if made == "before":
        late.write_text("late-secret")
    box.rules("py-sandbox=false")
    box.write("late.py", LATE)
    process = subprocess.Popen(
        [PYTHON_SB, "late.py", str(late)],
        cwd=box.root,
        env=box.environ,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdin is not None
    try:
        assert process.stdout.readline() == "ready\n"
        if made == "after":
            late.write_text("late-secret")
        out, err = process.communicate("go\n", timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert (process.returncode, out, err) == (0, "late: ENOENT\n", "")
    # the pair: the host sees it
    assert late.read_text() == "late-secret"


def test_the_profile_names_no_entry_of_the_temporary_directory(rules: Any) -> None:
    # firejail stops when a name of its profile vanishes before it mounts over it ("Error
    # disable file: fs.c:151 disable_file: No such file or directory", seen with a concurrent
    # test's temporary files): the profile names only what the view shows there
    from pysandboxes.providers.firejail import firejail_argv
    from pysandboxes.providers.namespaces import view_for

    sibling = rules.root.parent / "another-test-file"
    sibling.write_text("x")
    policy = rules.load("os-sandbox=firejail\nexpose-rw=.\n")
    _argv, fd = firejail_argv(view_for(policy, [], str(rules.root), "firejail"), {})
    with os.fdopen(fd) as f:
        profile = f.read().splitlines()
    tmp = os.path.realpath(tempfile.gettempdir())
    named = [line.split(" ", 1)[-1] for line in profile if line.split(" ", 1)[-1].startswith(tmp + "/")]
    # what the view shows there: the project, and the interpreter's own tree when the checkout
    # or the virtual environment lives in the temporary directory
    shown = [str(rules.root), *(e.path for e in policy.files_policy.exposures)]
    shown += [os.path.realpath(p) for p in sys.path if p]
    assert named and all(any(p == s or p.startswith(f"{s}/") for s in shown) for p in named), named
    assert not [p for p in named if p.startswith(str(sibling))], named
    assert f"whitelist {rules.root}" in profile


VANISHED = "Error disable file: fs.c:155 disable_file: No such file or directory"


def _flaky_firejail(tmp_path: Path, failures: int, message: str) -> tuple[dict[str, str], Path]:
    """A firejail that stops ``failures`` times with ``message`` before anything runs (as the
    real one does when an entry it hides is removed between its check and its mount), then
    is the real one: the PATH to use, and the file counting its starts."""
    assert FIREJAIL is not None
    bin_dir = tmp_path / "flaky-bin"
    bin_dir.mkdir()
    count = tmp_path / "starts"
    script = bin_dir / "firejail"
    script.write_text(
        "#!/bin/sh\n"
        f'n=$(cat {count} 2>/dev/null || echo 0); n=$((n + 1)); echo "$n" > {count}\n'
        f'if [ "$n" -le {failures} ]; then\n'
        f'  echo "{message}" >&2\n'
        '  echo "Error: proc 1 cannot sync with peer: unexpected EOF" >&2\n'
        "  exit 1\n"
        "fi\n"
        f'exec {FIREJAIL} "$@"\n'
    )
    script.chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}"}, count


def test_a_start_stopped_by_a_vanished_entry_is_tried_again(box: Sandboxed, tmp_path: Path) -> None:
    path, starts = _flaky_firejail(tmp_path, 1, VANISHED)
    box.rules()
    box.write("app.py", "import sys\nprint('ran')\nprint('to stderr', file=sys.stderr)\n")
    done = box.sb("app.py", env={**box.environ, **path})
    # firejail's words on the failed start are not shown; the program's own stderr is
    assert (done.returncode, done.stdout, done.stderr) == (0, "ran\n", "to stderr\n"), done
    assert starts.read_text() == "2\n"


def test_a_start_stopped_for_another_reason_is_not_tried_again(box: Sandboxed, tmp_path: Path) -> None:
    path, starts = _flaky_firejail(tmp_path, 1, "Error: cannot mount tmpfs on /run/firejail/mnt")
    box.rules()
    box.write("app.py", "open('ran', 'w').close()\n")
    done = box.sb("app.py", env={**box.environ, **path})
    assert done.returncode == 1
    assert done.stderr.startswith("Error: cannot mount tmpfs on /run/firejail/mnt\n"), done
    assert starts.read_text() == "1\n" and not (box.root / "ran").exists()


def test_a_start_that_keeps_failing_gives_up_with_firejails_words(box: Sandboxed, tmp_path: Path) -> None:
    path, starts = _flaky_firejail(tmp_path, 99, VANISHED)
    box.rules()
    box.write("app.py", "open('ran', 'w').close()\n")
    done = box.sb("app.py", env={**box.environ, **path})
    assert done.returncode == 1
    assert done.stderr.count(VANISHED) == 1, done
    assert starts.read_text() == "3\n" and not (box.root / "ran").exists()


def test_partial_mode_tries_a_vanished_entry_start_again(box: Sandboxed, tmp_path: Path) -> None:
    path, starts = _flaky_firejail(tmp_path, 1, VANISHED)
    box.write("tools.py", "from pysandboxes import sandbox\n\n@sandbox\ndef add(a, b):\n    return a + b\n")
    box.write(
        "host.py",
        "import tools\nfrom pysandboxes import sandboxes\nwith sandboxes():\n    print(tools.add(2, 3))\n",
    )
    box.rules()
    done = subprocess.run(
        [sys.executable, "host.py"],
        cwd=box.root,
        env={**box.environ, **path},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "5\n", ""), done
    assert starts.read_text() == "2\n"
