"""The namespace providers ``os-sandbox=bwrap`` and ``os-sandbox=unshare``, end to end.

Every test runs the real ``python-sb`` console script (or, for partial mode, a host program
using ``sandboxes()``) in a subprocess, on a temporary project with its own ``.py-sandboxes``,
under each provider. The program inside tries its accesses with the Python layer on (the usual
refusals), off (``py-sandbox=false``) or bypassed through native code (libc ``open``/``connect``
through ctypes, a child ``cat``/``curl``): what it reaches then is what the kernel lets through.

Every security test is a pair: the access works with the rule and is refused without it.
Network tests use the host's 127.0.0.1 only; the one rule naming another address is checked in
a fresh network namespace with no route out, and no connection is ever made to it.
Known product bugs are strict xfails whose reason starts with "bug:".
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .test_netbroker import Server, free_port

BIN = Path(sys.executable).parent
PYTHON_SB = str(BIN / "python-sb")
CURL = shutil.which("curl")
TIMEOUT = 30
PROVIDERS = ("bwrap", "unshare")

Result = subprocess.CompletedProcess[str]


def bug(reason: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, reason=f"bug: {reason}")


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


# Helpers the program inside uses with the Python layer off: every probe returns a string,
# "ok…" or the errno's name, and the results are printed as the last line of stdout.
PRELUDE = """\
import ctypes, errno, json, os, socket, subprocess, sys

libc = ctypes.CDLL(None, use_errno=True)
results = {}


def _errno(e):
    return errno.errorcode.get(e, str(e))


def native_open(path, flags=os.O_RDONLY):
    fd = libc.open(os.fsencode(path), flags, 0o644)
    if fd < 0:
        return _errno(ctypes.get_errno())
    data = os.read(fd, 100).decode() if flags == os.O_RDONLY else ""
    os.close(fd)
    return "ok:" + data


def native_write(path, text="written"):
    fd = libc.open(os.fsencode(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    if fd < 0:
        return _errno(ctypes.get_errno())
    data = text.encode()
    n = libc.write(fd, data, len(data))
    e = ctypes.get_errno()
    os.close(fd)
    return "ok" if n == len(data) else _errno(e)


def native_connect(host, port):
    fd = libc.socket(socket.AF_INET, socket.SOCK_STREAM, 0)
    addr = bytes(ctypes.c_uint16(socket.AF_INET)) + port.to_bytes(2, "big") + socket.inet_aton(host)
    addr += bytes(8)
    if libc.connect(fd, addr, len(addr)) != 0:
        e = ctypes.get_errno()
        libc.close(fd)
        return _errno(e)
    if libc.write(fd, b"ping", 4) != 4 or libc.shutdown(fd, 1) != 0:
        e = ctypes.get_errno()
        libc.close(fd)
        return _errno(e)
    buf = ctypes.create_string_buffer(100)
    data = b""
    while (n := libc.read(fd, buf, 100)) > 0:
        data += buf.raw[:n]
    e = ctypes.get_errno()
    libc.close(fd)
    return _errno(e) if n < 0 else "ok:" + data.decode()


def child(*argv):
    try:
        p = subprocess.run(list(argv), capture_output=True, text=True, timeout=20)
    except OSError as exc:
        return type(exc).__name__
    return f"exit {p.returncode}: {p.stdout.strip()}"


def call(name, fn, *args):
    try:
        value = fn(*args)
    except OSError as exc:
        value = _errno(exc.errno)
    results[name] = "ok" if value is None else value


"""

EPILOGUE = '\nprint("RESULTS=" + json.dumps(results), flush=True)\n'


class Sandboxed:
    """A temporary project (``root``), a home, and a directory no rule exposes (``outside``)."""

    def __init__(self, tmp_path: Path, provider: str) -> None:
        self.provider = provider
        self.root = tmp_path / "project"
        self.home = tmp_path / "home"
        self.outside = tmp_path / "outside"
        for d in (self.root, self.home, self.outside):
            d.mkdir()
        (self.outside / "secret.txt").write_text("outside-secret")
        (self.home / ".secret").write_text("home-secret")
        self.environ = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
        }

    def write(self, name: str, text: str) -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def rules(self, *lines: str) -> Path:
        return self.write(
            ".py-sandboxes", "".join(f"{line}\n" for line in (f"os-sandbox={self.provider}", *lines))
        )

    def sb(self, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> Result:
        return subprocess.run(
            [PYTHON_SB, *args],
            cwd=cwd or self.root,
            env=env if env is not None else self.environ,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )

    def program(self, body: str, name: str = "prog.py") -> Path:
        return self.write(name, PRELUDE + textwrap.dedent(body) + EPILOGUE)

    def probe(self, *rules: str, body: str) -> dict[str, Any]:
        """Run ``body`` (with the prelude) with the Python layer off; the results it recorded."""
        self.rules("py-sandbox=false", *rules)
        self.program(body)
        done = self.sb("prog.py")
        assert (done.returncode, done.stderr) == (0, ""), done
        line = done.stdout.splitlines()[-1]
        assert line.startswith("RESULTS="), done
        results: dict[str, Any] = json.loads(line[len("RESULTS=") :])
        return results


@pytest.fixture
def box(tmp_path: Path, provider: str) -> Sandboxed:
    return Sandboxed(tmp_path, provider)


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.close()


# -- 1. the Python layer still refuses as usual ------------------------------------------------


@pytest.mark.parametrize("exposed", [True, False], ids=["exposed", "refused"])
def test_python_layer_file(box: Sandboxed, exposed: bool) -> None:
    box.write("data/a.txt", "data-a")
    box.rules(*(["expose-ro=data"] if exposed else []))
    box.write("p.py", "print(open('data/a.txt').read())\n")
    done = box.sb("p.py")
    if exposed:
        assert (done.returncode, done.stdout, done.stderr) == (0, "data-a\n", ""), done
    else:
        path = box.root / "data" / "a.txt"
        assert done.returncode == 1, done
        assert done.stderr.splitlines()[-2:] == [
            f"pysandboxes.errors.RuleFileNotFoundError: Access to '{path}' must be accepted by a rule.",
            f"Add `expose-ro={path.parent}` to the rule file to allow it.",
        ], done.stderr


@pytest.mark.parametrize("allowed", [True, False], ids=["allowed", "refused"])
def test_python_layer_import(box: Sandboxed, allowed: bool) -> None:
    box.rules(*(["python-import=socket"] if allowed else []))
    box.write("p.py", "import socket\nprint(socket.AF_INET.name)\n")
    done = box.sb("p.py")
    if allowed:
        assert (done.returncode, done.stdout, done.stderr) == (0, "AF_INET\n", ""), done
    else:
        assert done.returncode == 1, done
        assert done.stderr.splitlines()[-2:] == [
            "pysandboxes.errors.RuleModuleNotFoundError: Module named 'socket' is not allowed by a rule",
            "Add `python-import=socket` to the rule file to allow it.",
        ], done.stderr


@pytest.mark.parametrize("allowed", [True, False], ids=["allowed", "refused"])
def test_python_layer_api(box: Sandboxed, allowed: bool) -> None:
    box.rules("python-import=os", *(["python-api=ALLOW:os.system", "expose-ro=/usr/bin"] if allowed else []))
    box.write("p.py", "import os\nprint(os.system('exit 3') >> 8)\n")
    done = box.sb("p.py")
    if allowed:
        assert (done.returncode, done.stdout, done.stderr) == (0, "3\n", ""), done
    else:
        assert done.returncode == 1, done
        assert done.stderr.splitlines()[-2] == (
            "pysandboxes.errors.RuleApiPermissionError: os.system() is denied by the API guard "
            "(category: process-exec)."
        ), done.stderr


@pytest.mark.parametrize("allowed", [True, False], ids=["allowed", "refused"])
def test_python_layer_net(box: Sandboxed, server: Server, allowed: bool) -> None:
    port = server.port
    box.rules("python-import=socket", *([f"net=ALLOW|tcp|127.0.0.1|{port}|OUT"] if allowed else []))
    box.write(
        "p.py",
        f"""import socket
with socket.create_connection(("127.0.0.1", {port})) as s:
    s.sendall(b"py")
    s.shutdown(socket.SHUT_WR)
    print(s.recv(100).decode())
""",
    )
    done = box.sb("p.py")
    if allowed:
        assert (done.returncode, done.stdout, done.stderr) == (0, "echo:py\n", ""), done
    else:
        assert done.returncode == 1, done
        assert done.stderr.splitlines()[-2] == (
            "pysandboxes.errors.RuleSocketConnectionRefusedError: "
            f"Connection to [127.0.0.1]:{port} DENIED by implicit default policy"
        ), done.stderr
        assert server.connections == 0


# -- 2. the kernel, with the Python layer off or bypassed ---------------------------------------


@pytest.mark.parametrize("exposed", [True, False], ids=["exposed", "refused"])
def test_native_read_of_a_file_outside_the_project(box: Sandboxed, exposed: bool) -> None:
    rules = [f"expose-ro={box.outside}", f"expose-ro={box.home}"] if exposed else []
    results = box.probe(
        *rules,
        body=f"""
        call("outside", native_open, {str(box.outside / "secret.txt")!r})
        call("home", native_open, {str(box.home / ".secret")!r})
        call("listdir", lambda: ",".join(os.listdir({str(box.outside)!r})))
        """,
    )
    if exposed:
        assert results == {"outside": "ok:outside-secret", "home": "ok:home-secret", "listdir": "secret.txt"}
    else:
        assert results == {"outside": "ENOENT", "home": "ENOENT", "listdir": "ENOENT"}


@pytest.mark.parametrize("exposed", [True, False], ids=["exposed", "refused"])
def test_native_read_with_the_python_layer_on(box: Sandboxed, exposed: bool) -> None:
    # the Python layer is armed; ctypes is allowed, so libc open goes around it
    box.rules(
        "python-import=ctypes, os",
        "python-api=ALLOW:native",
        *([f"expose-ro={box.outside}"] if exposed else []),
    )
    box.write(
        "p.py",
        f"""import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.open({str(box.outside / "secret.txt").encode()!r}, os.O_RDONLY)
print(os.read(fd, 100).decode() if fd >= 0 else os.strerror(ctypes.get_errno()))
""",
    )
    done = box.sb("p.py")
    expected = "outside-secret\n" if exposed else "No such file or directory\n"
    assert (done.returncode, done.stdout, done.stderr) == (0, expected, ""), done


@pytest.mark.parametrize("exposed", [True, False], ids=["exposed", "refused"])
def test_child_cat_reads_only_exposed_files(box: Sandboxed, exposed: bool) -> None:
    # the Python layer is on and lets the child start; the kernel decides what cat reads
    box.rules(
        "python-import=subprocess",
        "python-api=ALLOW:process-exec",
        "expose-ro=/usr/bin",  # the Python layer lets a program start only when its file is exposed
        *([f"expose-ro={box.outside}"] if exposed else []),
    )
    box.write(
        "p.py",
        f"""import subprocess
p = subprocess.run(["cat", {str(box.outside / "secret.txt")!r}], capture_output=True, text=True)
print(p.returncode, p.stdout, p.stderr.strip())
""",
    )
    done = box.sb("p.py")
    if exposed:
        expected = "0 outside-secret \n"
    else:
        expected = f"1  cat: {box.outside / 'secret.txt'}: No such file or directory\n"
    assert (done.returncode, done.stdout, done.stderr) == (0, expected, ""), done


@pytest.mark.parametrize("writable", [True, False], ids=["expose-rw", "refused"])
def test_native_write_outside_expose_rw(box: Sandboxed, writable: bool) -> None:
    rules = [f"expose-rw={box.outside}"] if writable else [f"expose-ro={box.outside}"]
    results = box.probe(
        *rules,
        body=f"""
        call("new", native_write, {str(box.outside / "new.txt")!r})
        call("existing", native_write, {str(box.outside / "secret.txt")!r}, "overwritten")
        """,
    )
    if writable:
        assert results == {"new": "ok", "existing": "ok"}
        assert (box.outside / "new.txt").read_text() == "written"
        assert (box.outside / "secret.txt").read_text() == "overwritten"
    else:
        assert results == {"new": "EROFS", "existing": "EROFS"}
        assert not (box.outside / "new.txt").exists()
        assert (box.outside / "secret.txt").read_text() == "outside-secret"


@pytest.mark.parametrize("writable", [True, False], ids=["expose-rw", "refused"])
def test_native_write_in_the_working_directory(box: Sandboxed, writable: bool) -> None:
    # the working directory is the project: without expose-rw a write there never reaches the
    # host (it is an empty directory of the sandbox's own), and the host's files are not seen
    box.write("kept.txt", "host file")
    results = box.probe(
        *(["expose-rw=."] if writable else []),
        body="""
        call("write", native_write, "made-inside.txt")
        call("seen", lambda: sorted(n for n in os.listdir(".") if not n.startswith(".")))
        call("kept", native_open, "kept.txt")
        """,
    )
    if writable:
        assert results["write"] == "ok"
        assert results["kept"] == "ok:host file"
        assert (box.root / "made-inside.txt").read_text() == "written"
    else:
        assert results["kept"] == "ENOENT"
        # the sandbox's own directory: the script file (bound alone) and what it wrote there
        assert results["seen"] == ["made-inside.txt", "prog.py"]
        assert not (box.root / "made-inside.txt").exists()


def test_host_processes_are_invisible(box: Sandboxed) -> None:
    me = os.getpid()
    results = box.probe(
        body=f"""
        pids = sorted(int(n) for n in os.listdir("/proc") if n.isdigit())
        results["pids"] = pids
        results["mine"] = os.getpid()
        call("kill", os.kill, {me}, 0)
        call("kill_parent", os.kill, {os.getppid()}, 0)
        """,
    )
    assert results["kill"] == "ESRCH"
    assert results["kill_parent"] == "ESRCH"
    assert me not in results["pids"]
    assert results["mine"] in results["pids"]
    assert len(results["pids"]) <= 3  # the namespace's init (bwrap / unshare's), the program
    assert max(results["pids"]) < 10
    # the pair: the host's /proc lists the test itself
    assert str(me) in os.listdir("/proc")


@pytest.mark.parametrize("allowed", [True, False], ids=["allowed", "refused"])
def test_native_connect_to_a_host_loopback_port(box: Sandboxed, allowed: bool) -> None:
    allowed_server, other = Server(), Server()
    try:
        rules = [f"net=ALLOW|tcp|127.0.0.1|{allowed_server.port}|OUT"] if allowed else []
        results = box.probe(
            *rules,
            body=f"""
            call("libc", native_connect, "127.0.0.1", {allowed_server.port})
            call("other", native_connect, "127.0.0.1", {other.port})
            call("py", lambda: socket.create_connection(("127.0.0.1", {allowed_server.port})).close())
            """,
        )
    finally:
        allowed_server.close()
        other.close()
    assert results["other"] == "ECONNREFUSED"
    assert other.connections == 0
    if allowed:
        assert results["libc"] == "ok:echo:ping"
        assert results["py"] == "ok"
        assert allowed_server.connections == 2
    else:
        assert results == {"libc": "ECONNREFUSED", "other": "ECONNREFUSED", "py": "ECONNREFUSED"}
        assert allowed_server.connections == 0


@pytest.mark.parametrize("allowed", [True, False], ids=["allowed", "refused"])
def test_child_curl_reaches_only_an_allowed_port(box: Sandboxed, server: Server, allowed: bool) -> None:
    assert CURL is not None
    rules = [f"net=ALLOW|tcp|127.0.0.1|{server.port}|OUT"] if allowed else []
    results = box.probe(
        "python-api=ALLOW:process-exec",
        *rules,
        body=f"""
        results["curl"] = child("curl", "-sS", "--max-time", "20", "http://127.0.0.1:{server.port}/")
        """,
    )
    if allowed:
        assert results == {"curl": "exit 0: http-echo"}
        assert server.connections == 1
    else:
        assert results["curl"].startswith("exit 7: "), results  # couldn't connect
        assert server.connections == 0


def test_deny_wins_over_allow_for_native_code(box: Sandboxed, server: Server) -> None:
    port = server.port
    results = box.probe(
        f"net=ALLOW|tcp|127.0.0.0/8|{port}|OUT",
        f"net=DENY|tcp|127.0.0.1|{port}|OUT",
        body=f"""
        call("denied", native_connect, "127.0.0.1", {port})
        """,
    )
    # accepted by the forwarder (the port is allowed), then reset: the broker refused
    assert results["denied"] in ("ECONNRESET", "EPIPE"), results
    assert server.connections == 0


def test_allow_of_a_range_without_deny_reaches_the_port(box: Sandboxed, server: Server) -> None:
    # the pair of the test above
    results = box.probe(
        f"net=ALLOW|tcp|127.0.0.0/8|{server.port}|OUT",
        body=f"""
        call("allowed", native_connect, "127.0.0.1", {server.port})
        """,
    )
    assert results == {"allowed": "ok:echo:ping"}


LISTENER = """\
import socket, sys
server = socket.create_server(("127.0.0.1", {port}))
print("ready", flush=True)
conn, _ = server.accept()
data = b""
while chunk := conn.recv(100):
    data += chunk
conn.sendall(b"inside:" + data)
conn.close()
print("served", flush=True)
"""


@pytest.mark.parametrize("allowed", [True, False], ids=["allowed", "refused"])
def test_in_rule_listener_is_reachable_from_the_host(box: Sandboxed, allowed: bool) -> None:
    port = free_port()
    box.rules("py-sandbox=false", *([f"net=ALLOW|tcp|127.0.0.1|{port}|IN"] if allowed else []))
    box.write("listen.py", LISTENER.format(port=port))
    process = subprocess.Popen(
        [PYTHON_SB, "listen.py"],
        cwd=box.root,
        env=box.environ,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == "ready\n"
        if allowed:
            with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as c:
                c.sendall(b"hello")
                c.shutdown(socket.SHUT_WR)
                data = b""
                while chunk := c.recv(100):
                    data += chunk
            assert data == b"inside:hello"
            out, err = process.communicate(timeout=TIMEOUT)
            assert (process.returncode, out, err) == (0, "served\n", "")
        else:
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT).close()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate(timeout=TIMEOUT)


# -- 3. exposures --------------------------------------------------------------------------------


def test_expose_ro_is_read_only_natively(box: Sandboxed) -> None:
    box.write("data/a.txt", "data-a")
    results = box.probe(
        "expose-ro=data",
        body="""
        call("read", native_open, "data/a.txt")
        call("write", native_write, "data/a.txt")
        call("create", native_write, "data/new.txt")
        call("remove", os.remove, "data/a.txt")
        """,
    )
    assert results == {"read": "ok:data-a", "write": "EROFS", "create": "EROFS", "remove": "EROFS"}
    assert sorted(p.name for p in (box.root / "data").iterdir()) == ["a.txt"]
    assert (box.root / "data" / "a.txt").read_text() == "data-a"


def test_expose_rw_is_writable_and_seen_on_the_host(box: Sandboxed) -> None:
    box.write("out/old.txt", "old")
    results = box.probe(
        "expose-rw=out",
        body="""
        call("create", native_write, "out/new.txt", "from inside")
        call("remove", os.remove, "out/old.txt")
        """,
    )
    assert results == {"create": "ok", "remove": "ok"}
    assert (box.root / "out" / "new.txt").read_text() == "from inside"
    assert not (box.root / "out" / "old.txt").exists()


def test_ignored_files_are_masked_natively(box: Sandboxed) -> None:
    box.write("data/plain.txt", "plain")
    box.write("data/key.secret", "hidden")
    box.write("data/private/inner.txt", "inner")
    results = box.probe(
        "expose-ro=data",
        "ignore=*.secret",
        "ignore=private",
        body="""
        call("plain", native_open, "data/plain.txt")
        call("secret", native_open, "data/key.secret")
        call("private", native_open, "data/private/inner.txt")
        """,
    )
    # masked: an ignored file reads as empty (unshare) or cannot be opened (bwrap), an ignored
    # directory is empty
    assert results == {
        "plain": "ok:plain",
        "secret": "EACCES" if box.provider == "bwrap" else "ok:",
        "private": "ENOENT",
    }


def test_rule_file_in_an_expose_rw_directory_is_not_writable(box: Sandboxed) -> None:
    results = box.probe(
        "expose-rw=.",
        body="""
        call("rules", native_write, ".py-sandboxes", "py-sandbox=false\\nexpose-rw=/\\n")
        call("other", native_write, "other.txt")
        """,
    )
    assert results == {"rules": "EROFS", "other": "ok"}
    assert (box.root / ".py-sandboxes").read_text().splitlines() == [
        f"os-sandbox={box.provider}",
        "py-sandbox=false",
        "expose-rw=.",
    ]
    assert (box.root / "other.txt").read_text() == "written"


def test_the_script_runs_from_its_path(box: Sandboxed) -> None:
    box.rules("py-sandbox=false")
    box.write(
        "sub/prog.py",
        "import json, os, sys\n"
        "print(json.dumps([__file__, sys.argv, sys.path[0], os.getcwd(), os.path.exists(__file__)]))\n",
    )
    done = box.sb("sub/prog.py", "arg")
    assert (done.returncode, done.stderr) == (0, ""), done
    plain = subprocess.run(
        [sys.executable, "sub/prog.py", "arg"],
        cwd=box.root,
        env=box.environ,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert (
        json.loads(done.stdout)
        == json.loads(plain.stdout)
        == [
            str(box.root / "sub" / "prog.py"),
            ["sub/prog.py", "arg"],
            str(box.root / "sub"),
            str(box.root),
            True,
        ]
    )


def test_the_environment_is_only_env_rules(box: Sandboxed) -> None:
    box.rules("py-sandbox=false", "env=GREETING=hello", "env=HOME=${HOME}")
    box.write("p.py", "import json, os\nprint(json.dumps(dict(os.environ)))\n")
    env = {**box.environ, "TERM": "xterm", "SECRET_TOKEN": "t0k", "PYTHONDONTWRITEBYTECODE": "1"}
    done = box.sb("p.py", env=env)
    assert (done.returncode, done.stderr) == (0, ""), done
    assert json.loads(done.stdout) == {"GREETING": "hello", "HOME": str(box.home), "TERM": "xterm"}


# -- 4. seccomp ----------------------------------------------------------------------------------

SECCOMP_PROBES = """
import threading

CLONE_NEWUSER = 0x10000000


def sys_call(number, *args):
    if libc.syscall(number, *args) != 0:
        return _errno(ctypes.get_errno())
    return "ok"


results["unshare"] = "ok" if libc.unshare(CLONE_NEWUSER) == 0 else _errno(ctypes.get_errno())
results["ptrace"] = sys_call(101, 0, 0, 0, 0)  # PTRACE_TRACEME
results["mount"] = "ok" if libc.mount(b"none", b"/tmp", b"tmpfs", 0, None) == 0 else _errno(ctypes.get_errno())
results["keyctl"] = sys_call(250, 0, -3, 0)  # KEYCTL_GET_KEYRING_ID of the session keyring
results["bpf"] = sys_call(321, 0, None, 0)
"""


def test_seccomp_refuses_namespace_tracing_mount_keyring_and_bpf_calls(box: Sandboxed) -> None:
    results = box.probe(body=SECCOMP_PROBES)
    assert results == {
        "unshare": "EPERM",
        "ptrace": "EPERM",
        "mount": "EPERM",
        "keyctl": "EPERM",
        "bpf": "EPERM",
    }


def test_seccomp_pair_the_same_calls_work_without_the_provider(tmp_path: Path, provider: str) -> None:
    # the pair: the same program in a plain child of the test (no provider) gets past the
    # refused calls (unshare of a user namespace and PTRACE_TRACEME are harmless to the host)
    body = PRELUDE + textwrap.dedent(
        """
        CLONE_NEWUSER = 0x10000000
        results["unshare"] = "ok" if libc.unshare(CLONE_NEWUSER) == 0 else _errno(ctypes.get_errno())
        results["ptrace"] = "ok" if libc.syscall(101, 0, 0, 0, 0) == 0 else _errno(ctypes.get_errno())
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", body + EPILOGUE], capture_output=True, text=True, timeout=TIMEOUT, cwd=tmp_path
    )
    assert json.loads(done.stdout.splitlines()[-1][len("RESULTS=") :]) == {"unshare": "ok", "ptrace": "ok"}
    assert provider in PROVIDERS


#: threads, a child interpreter and fork, which a sandbox must leave working (no braces: the qemu
#: suite puts it in a format string)
WORKING_PROBES = """
import threading

box = []
t = threading.Thread(target=lambda: box.append("thread ran"))
t.start()
t.join()
results["thread"] = box[0]
results["subprocess"] = child(sys.executable, "-c", "print(6 * 7)")
pid = os.fork()
if pid == 0:
    os._exit(9)
results["fork"] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
"""


def test_threads_subprocess_and_fork_still_work(box: Sandboxed) -> None:
    results = box.probe(body=WORKING_PROBES)
    assert results == {"thread": "thread ran", "subprocess": "exit 0: 42", "fork": 9}


# -- 5. exit status and signals ------------------------------------------------------------------


def test_exit_status(box: Sandboxed) -> None:
    box.rules("python-import=sys")
    box.write("exit3.py", "import sys\nsys.exit(3)\n")
    box.write("raise.py", "raise ValueError('boom')\n")
    three = box.sb("exit3.py")
    assert (three.returncode, three.stdout, three.stderr) == (3, "", "")
    raised = box.sb("raise.py")
    assert raised.returncode == 1
    assert raised.stderr.splitlines()[-1] == "ValueError: boom"
    assert raised.stderr.startswith("Traceback (most recent call last):\n")


def test_a_program_killed_by_sigkill_ends_like_python(box: Sandboxed) -> None:
    box.rules("py-sandbox=false")
    box.write("kill9.py", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    done = box.sb("kill9.py")
    assert (done.returncode, done.stderr) == (-9, "")


def test_an_exit_status_above_128_is_kept(box: Sandboxed) -> None:
    # behind a launcher, 128 + N is also how a death by signal N looks
    box.rules("python-import=os, signal, sys\npython-api=ALLOW:*")
    box.write("exit143.py", "import sys\nsys.exit(143)\n")
    box.write("term.py", "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n")
    assert box.sb("exit143.py").returncode == 143
    assert box.sb("term.py").returncode == -signal.SIGTERM


SLEEPER = """\
import subprocess, sys, time
try:
    print("ready", flush=True)
    time.sleep(25)
    print("slept", flush=True)
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
    sys.exit(5)
"""


def processes_with(marker: str) -> list[str]:
    """Command lines of the host's processes (this one excepted) containing ``marker``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(cmdline.replace(b"\0", b" ").decode(errors="replace"))
    return found


def _start(box: Sandboxed, *args: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [PYTHON_SB, *args],
        cwd=box.root,
        env=box.environ,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    return process


def _finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    try:
        out, err = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate(timeout=TIMEOUT)
    return process.returncode, out, err


def test_sigterm_ends_the_program_like_python(box: Sandboxed) -> None:
    marker = f"marker-{uuid.uuid4().hex}"
    box.rules("py-sandbox=false")
    box.write("sleeper.py", SLEEPER)
    process = _start(box, "sleeper.py", marker)
    assert process.stdout is not None
    assert process.stdout.readline() == "ready\n"
    process.send_signal(signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=10)  # python ends at once; the program sleeps 25 s otherwise
    status, out, err = _finish(process)
    assert (status, out, err) == (-signal.SIGTERM, "", "")
    assert processes_with(marker) == []


def test_ctrl_c_is_a_keyboard_interrupt_in_the_program(box: Sandboxed) -> None:
    marker = f"marker-{uuid.uuid4().hex}"
    box.rules("py-sandbox=false")
    box.write("sleeper.py", SLEEPER)
    process = _start(box, "sleeper.py", marker)
    assert process.stdout is not None
    assert process.stdout.readline() == "ready\n"
    os.killpg(process.pid, signal.SIGINT)
    assert _finish(process) == (5, "KeyboardInterrupt\n", "")
    assert processes_with(marker) == []


def test_no_process_is_left_behind(box: Sandboxed) -> None:
    # the program starts a grandchild that would outlive it, then exits: the PID namespace
    # ends with it
    marker = f"marker-{uuid.uuid4().hex}"
    box.rules("py-sandbox=false")
    box.write(
        "spawn.py",
        "import subprocess, sys\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', sys.argv[1]],"
        " start_new_session=True)\n"
        "print('spawned', flush=True)\n",
    )
    done = box.sb("spawn.py", marker)
    assert (done.returncode, done.stdout, done.stderr) == (0, "spawned\n", "")
    assert processes_with(marker) == []


# -- 6. partial mode -------------------------------------------------------------------------------

PARTIAL_TOOLS = """\
import ctypes, os
from pysandboxes import sandbox

TOKEN = os.urandom(8).hex()  # one per child


@sandbox
def read(path):
    with open(path) as f:
        return f.read()


@sandbox
def native_open(path):
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.open(path.encode(), os.O_RDONLY)
    if fd < 0:
        return os.strerror(ctypes.get_errno())
    data = os.read(fd, 100).decode()
    os.close(fd)
    return data


@sandbox
def token():
    return TOKEN


@sandbox
def die():
    os._exit(7)
"""

PARTIAL_HOST = """\
from pysandboxes import sandboxes
from pysandboxes.errors import SandBoxError
import tools

with sandboxes():
    first = tools.token()
    print("exposed:", tools.read("data/a.txt"))
    print("native exposed:", tools.native_open("data/a.txt"))
    print("native outside:", tools.native_open({outside!r}))
    try:
        tools.die()
    except SandBoxError as e:
        print("died:", e)
    print("fresh child:", tools.token() != first)
    print("after restart:", tools.native_open({outside!r}))
"""


#: what PARTIAL_HOST prints when the provider holds
PARTIAL_EXPECTED = [
    "exposed: data-a",
    "native exposed: data-a",
    "native outside: No such file or directory",
    "died: the sandbox process died during the call: it exited with status 7",
    "fresh child: True",
    "after restart: No such file or directory",
]


def run_partial_host(box: Any, *, timeout: float) -> subprocess.CompletedProcess[str]:
    """PARTIAL_HOST in ``box`` (a project with ``rules``, ``write``, ``root``, ``environ`` and
    ``outside``): calls under the box's provider, a child that dies, a fresh one."""
    box.rules(
        "python-import=ctypes, os",
        "python-api=ALLOW:native",
        "python-api=ALLOW:process-control",
        "expose-ro=data",
    )
    box.write("data/a.txt", "data-a")
    box.write("tools.py", PARTIAL_TOOLS)
    box.write("host.py", PARTIAL_HOST.format(outside=str(box.outside / "secret.txt")))
    return subprocess.run(
        [sys.executable, "host.py"],
        cwd=box.root,
        env={**box.environ, "HOME": str(box.root)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_partial_mode_calls_run_in_the_namespaces(box: Sandboxed) -> None:
    done = run_partial_host(box, timeout=60)
    assert (done.returncode, done.stderr) == (0, ""), done
    assert done.stdout.splitlines() == PARTIAL_EXPECTED


# -- 7. fail closed --------------------------------------------------------------------------------


def test_missing_launcher_fails_closed(box: Sandboxed, tmp_path: Path) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    box.rules("py-sandbox=false")
    box.write("p.py", "open('ran.txt', 'w').write('ran')\nprint('ran')\n")
    done = box.sb("p.py", env={**box.environ, "PATH": str(empty)})
    reason = (
        "bubblewrap is not installed: install it (Debian: apt-get install bubblewrap)"
        if box.provider == "bwrap"
        else "util-linux's unshare is not installed (Debian: apt-get install util-linux)"
    )
    assert done.returncode == 2, done
    assert done.stdout == ""
    assert done.stderr == (
        f"python-sb: os-sandbox={box.provider} (from 'os-sandbox={box.provider}' from .py-sandboxes(1)) "
        f"cannot start: {reason}\n"
    )
    assert not (box.root / "ran.txt").exists()
    # the pair: with the launcher on PATH the same program runs
    ok = box.sb("p.py")
    assert (ok.returncode, ok.stdout) == (0, "ran\n"), ok


def test_rule_outside_the_loopback(box: Sandboxed) -> None:
    # bwrap cannot route a non-loopback address: it stops before anything runs. unshare routes
    # it. Run in a network namespace with no route out; no connection is made.
    box.rules("py-sandbox=false", "net=ALLOW|tcp|10.1.2.3|8080|OUT")
    box.write("p.py", "print('ran')\n")
    done = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--net", PYTHON_SB, "p.py"],
        cwd=box.root,
        env=box.environ,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    if box.provider == "bwrap":
        assert (done.returncode, done.stdout) == (2, ""), done
        assert done.stderr == (
            "python-sb: the rule(s) 'net=ALLOW|tcp|10.1.2.3|8080|OUT' from .py-sandboxes(3) name addresses "
            "outside the loopback: "
            "under bwrap the sandbox has no CAP_NET_ADMIN to route them; use a host name in the rule, "
            "or os-sandbox=unshare\n"
        )
    else:
        assert (done.returncode, done.stdout, done.stderr) == (0, "ran\n", ""), done


def test_rule_for_a_privileged_port_runs(box: Sandboxed) -> None:
    # no connection is made: the program only has to start
    box.rules("py-sandbox=false", "net=ALLOW|tcp|127.0.0.1|443|OUT")
    box.write("p.py", "print('ran')\n")
    done = box.sb("p.py")
    assert (done.returncode, done.stdout, done.stderr) == (0, "ran\n", ""), done


def test_rule_for_an_unprivileged_port_runs(box: Sandboxed) -> None:
    # the pair of the test above
    box.rules("py-sandbox=false", "net=ALLOW|tcp|127.0.0.1|8443|OUT")
    box.write("p.py", "print('ran')\n")
    done = box.sb("p.py")
    assert (done.returncode, done.stdout, done.stderr) == (0, "ran\n", ""), done


# -- 8. provider keys (rules.md §4.15) ---------------------------------------------------------

KEY_PROBE = """
import socket
results["hostname"] = socket.gethostname()
results["proc"] = os.path.isdir("/proc/self")
results["interfaces"] = sorted(name for _index, name in socket.if_nameindex())
"""


def test_hostname_key_names_the_sandbox(box: Sandboxed) -> None:
    default = box.probe(body=KEY_PROBE)
    named = box.probe(f"{box.provider}.hostname=builder-7", body=KEY_PROBE)
    assert (default["hostname"], named["hostname"]) == ("sandbox", "builder-7")


def test_unshare_proc_none_leaves_no_proc(tmp_path: Path) -> None:
    box = Sandboxed(tmp_path, "unshare")
    assert box.probe(body=KEY_PROBE)["proc"] is True
    assert box.probe("unshare.proc=none", body=KEY_PROBE)["proc"] is False


def test_bwrap_share_net_keeps_the_host_interfaces(tmp_path: Path) -> None:
    box = Sandboxed(tmp_path, "bwrap")
    host = sorted(name for _index, name in socket.if_nameindex())
    assert box.probe(body=KEY_PROBE)["interfaces"] == ["lo"]
    assert box.probe("bwrap.share-net=true", body=KEY_PROBE)["interfaces"] == host


def test_a_program_piped_on_standard_input_reaches_the_sandbox(box: Sandboxed) -> None:
    box.rules()
    done = subprocess.run(
        [PYTHON_SB, "-"],
        cwd=box.root,
        env=box.environ,
        input='import sys\nprint("from stdin", sys.argv)\n',
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "from stdin ['-']\n", "")
