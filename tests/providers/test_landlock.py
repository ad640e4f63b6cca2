"""The landlock provider: the plan (pure) and the confinement (in child processes: irreversible).

Every security test is a pair: the access works with the rule and is refused by the kernel
without it. The child loads the rules, confines itself, then tries the access with raw calls
(``os.open``, libc ``open`` through ctypes, ``_socket``), so no Python-layer guard is involved.
Network tests use loopback addresses only.
"""

from __future__ import annotations

import errno
import json
import os
import pwd
import socket
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from pysandboxes.errors import ProviderError, SandBoxError
from pysandboxes.providers import landlock
from pysandboxes.providers.landlock import LandlockPlan, available, confine, plan_for
from pysandboxes.providers.landlock_abi import landlock_abi

ABI = landlock_abi()
needs_landlock = pytest.mark.skipif(available() is not None, reason=f"landlock unavailable: {available()}")

RULES = "os-sandbox=landlock\n"

# The child: load the rules, confine, then run the test's body; the body fills `results`.
CHILD = """\
import json, sys
from pysandboxes.rules import load_policy
from pysandboxes.providers.landlock import confine, plan_for

policy = load_policy({rule_file!r}, extra_rules={extra!r}, environ={environ!r}, cwd={cwd!r})
plan = plan_for(policy, program_files={program_files!r})
confine(plan)

import ctypes, errno, os, subprocess, _socket  # imported after confinement on purpose

results = {{}}


def attempt(name, fn):
    try:
        value = fn()
    except OSError as exc:
        results[name] = exc.errno
    else:
        results[name] = 0 if value is None else value


libc = ctypes.CDLL(None, use_errno=True)


def native_open(path, flags=os.O_RDONLY):
    fd = libc.open(os.fsencode(path), flags, 0o644)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "native open")
    os.close(fd)


def read(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 100).decode()
    finally:
        os.close(fd)


def create(path):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, b"written")
    os.close(fd)


{body}

print("RESULTS=" + json.dumps(results))
"""


class Confined:
    """Runs code in a confined child process for one test's rule file."""

    def __init__(self, rules: Any, write_rules: Callable[..., Path], tmp_path: Path) -> None:
        self.rules = rules
        self.write_rules = write_rules
        self.tmp = tmp_path

    def run(
        self,
        rule_text: str,
        body: str,
        *,
        extra: Sequence[tuple[str, str]] = (),
        program_files: Sequence[str] = (),
    ) -> dict[str, object]:
        rule_file = self.write_rules(RULES + rule_text)
        code = CHILD.format(
            rule_file=str(rule_file),
            extra=list(extra),
            environ={"HOME": str(self.rules.home)},
            cwd=str(rule_file.parent),
            program_files=list(program_files),
            body=textwrap.dedent(body),
        )
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=self.tmp
        )
        assert proc.returncode == 0, proc.stderr
        line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULTS="))
        results: dict[str, object] = json.loads(line[len("RESULTS=") :])
        return results


@pytest.fixture
def confined(rules: Any, write_rules: Callable[..., Path], tmp_path: Path) -> Confined:
    return Confined(rules, write_rules, tmp_path)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A directory with a file, outside the project; exposed or not by each test."""
    d = tmp_path / "data"
    d.mkdir()
    (d / "file.txt").write_text("data-content")
    return d


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A file no rule ever exposes."""
    d = tmp_path / "elsewhere"
    d.mkdir()
    f = d / "secret.txt"
    f.write_text("secret-content")
    return f


@pytest.fixture
def server() -> Iterator[int]:
    """A TCP server on 127.0.0.1 in this (unconfined) process; yields its port."""
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    try:
        yield srv.getsockname()[1]
    finally:
        srv.close()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


# -- available() --------------------------------------------------------------------------------


def test_available_matches_the_kernel_abi() -> None:
    reason = available()
    if ABI >= 4:
        assert reason is None
    else:
        assert reason is not None and "Landlock" in reason


def test_available_on_this_machine() -> None:
    if not sys.platform.startswith("linux") or ABI == 0:
        pytest.skip("not a Landlock machine")
    assert ABI >= 4, "the development machine runs ABI 7"
    assert available() is None


def test_old_abi_says_why_and_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(landlock, "landlock_abi", lambda: 3)
    assert available() == (
        "Landlock ABI 3 < 4: this kernel cannot filter TCP ports; "
        "use a kernel >= 6.7, or os-sandbox=subprocess (no OS boundary)"
    )


def test_not_linux(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    reason = available()
    assert reason is not None and "darwin" in reason and "os-sandbox=" in reason


@pytest.mark.parametrize(
    ("err", "words"),
    [
        (errno.EOPNOTSUPP, ("disabled at boot", "lsm=")),
        (errno.ENOSYS, ("no Landlock system calls", "kernel >= 6.7")),
        (errno.EPERM, ("seccomp",)),
    ],
)
def test_disabled_landlock_is_explained(err: int, words: tuple[str, ...]) -> None:
    message = landlock.explain_errno(err)
    assert all(w in message for w in words), message
    assert "os-sandbox=subprocess (no OS boundary)" in message


def test_confine_refuses_when_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(landlock, "landlock_abi", lambda: 2)
    plan = LandlockPlan((), (), (), (), (), ())
    with pytest.raises(ProviderError, match="ABI 2 < 4") as info:
        confine(plan)
    assert isinstance(info.value, SandBoxError)


# -- the plan (pure) ------------------------------------------------------------------------------


def test_plan_is_pure_and_described(rules: Any, data: Path, secret: Path) -> None:
    policy = rules.load(RULES + f"expose-ro={data}\n")
    plan = plan_for(policy)
    assert plan == plan_for(policy)  # same answer twice, nothing changed in between
    lines = plan.describe()
    assert f"landlock read+execute dir {data}" in lines
    assert "landlock tcp bind: every port refused" in lines
    assert "landlock tcp connect: every port refused" in lines
    assert "landlock read+write file /dev/null" in lines
    assert secret.read_text() == "secret-content"  # this process is still free
    with pytest.raises(AttributeError):
        plan.read_dirs = ()  # type: ignore[misc]


def test_plan_holds_the_interpreter(rules: Any) -> None:
    plan = plan_for(rules.load(RULES))
    granted = (*plan.read_dirs, *plan.write_dirs)

    def covered(path: str) -> bool:
        real = os.path.realpath(path)
        return any(real == d or real.startswith(d + "/") for d in granted)

    assert covered(os.__file__)
    assert covered(sys.executable)
    assert covered(os.path.dirname(socket.__file__))
    assert covered(os.path.dirname(landlock.__file__))
    for lib in ("libc.so.6",):
        maps = Path("/proc/self/maps").read_text()
        paths = {line.split(None, 5)[5] for line in maps.splitlines() if line.count(" ") >= 5 and lib in line}
        assert paths and all(covered(p.strip()) for p in paths)
    assert "/etc/ld.so.cache" in plan.read_files


def test_plan_never_grants_broad_directories(rules: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    real_home = os.path.realpath(pwd.getpwuid(os.getuid()).pw_dir)
    plan = plan_for(rules.load(RULES))
    fixture_home = str(rules.home)
    for d in (*plan.read_dirs, *plan.write_dirs):
        assert d not in ("/", "/etc", "/tmp", "/var/tmp", "/usr", "/home", real_home, fixture_home), d
        assert not real_home.startswith(d + "/"), d  # no directory holding HOME either
        # A checkout (and its virtual environment) may live under /tmp; nothing else there may.
        interpreter = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, *sys.path) if p}
        assert not d.startswith("/tmp/") or any(d == p or d.startswith(p + "/") for p in interpreter), d
    assert "/etc/passwd" not in plan.read_files
    assert not any(f.startswith("/etc/") and f not in _ETC_FILES for f in plan.read_files), plan.read_files


_ETC_FILES = {
    os.path.realpath(f)
    for f in ("/etc/ld.so.cache", "/etc/localtime", "/etc/nsswitch.conf", "/etc/mime.types")
}


def test_first_sys_path_entry_is_not_granted(
    rules: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # sys.path[0] is the script's directory or the working directory: the rules decide on it.
    launcher = tmp_path / "launcher"
    launcher.mkdir()
    rest = [p for p in sys.path[1:] if p]
    monkeypatch.setattr(sys, "path", [str(launcher), *rest])
    plan = plan_for(rules.load(RULES))
    assert str(launcher) not in plan.read_dirs
    monkeypatch.setattr(sys, "path", ["", *rest])
    assert plan_for(rules.load(RULES)) == plan
    monkeypatch.setattr(sys, "path", ["", str(launcher), *rest])  # a later entry is an install location
    assert str(launcher) in plan_for(rules.load(RULES)).read_dirs


def test_name_resolution_files_only_with_a_net_allow_rule(rules: Any) -> None:
    without = plan_for(rules.load(RULES))
    with_net = plan_for(rules.load(RULES + "net=ALLOW|tcp|127.0.0.1|80|OUT\n"))
    for name in ("/etc/hosts", "/etc/resolv.conf"):
        real = os.path.realpath(name)
        if os.path.exists(name):
            assert real not in without.read_files
            assert real in with_net.read_files


def test_writable_exposures(rules: Any, data: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "nested").mkdir(parents=True)
    plan = plan_for(rules.load(RULES + f"expose-rw={out}\nexpose-ro={data}\n"))
    assert plan.write_dirs == (str(out),)
    assert str(data) in plan.read_dirs and str(data) not in plan.write_dirs
    assert plan.notes == ()


def test_notes_where_the_kernel_grants_more(rules: Any, tmp_path: Path) -> None:
    project = rules.root
    (project / "docs").mkdir()
    plan = plan_for(rules.load(RULES + f"expose-rw={project}\nexpose-ro={project}/docs\nignore=*.key\n"))
    text = "\n".join(plan.notes)
    assert f"expose-ro={project}/docs" in text and "native code may write there" in text
    assert "rule file" in text and ".py-sandboxes" in text
    assert "ignore= rules are enforced by the Python layer only" in text
    assert str(project / "docs") not in plan.read_dirs  # covered by the writable parent


def test_program_files(rules: Any, tmp_path: Path) -> None:
    script = tmp_path / "elsewhere" / "main.py"
    script.parent.mkdir()
    script.write_text("print(1)\n")
    plan = plan_for(rules.load(RULES), program_files=[str(script)])
    assert str(script) in plan.read_files
    assert str(script.parent) not in plan.read_dirs
    with pytest.raises(ProviderError, match="does not exist"):
        plan_for(rules.load(RULES), program_files=[str(tmp_path / "missing.py")])


@pytest.mark.parametrize(
    ("net", "bind", "connect"),
    [
        ("", (), ()),
        ("net=ALLOW|tcp|127.0.0.1|443|OUT\n", (), (443,)),
        ("net=ALLOW|tcp|127.0.0.1|8000-8002|IN\n", (8000, 8001, 8002), ()),
        ("net=ALLOW|tcp|127.0.0.1|80,443|*\n", (80, 443), (80, 443)),
        ("net=ALLOW|udp|127.0.0.1|53|OUT\n", (), ()),  # UDP: not a Landlock right
        ("net=ALLOW|*|127.0.0.1|53|OUT\n", (), (53,)),
        ("net=ALLOW|tcp|*|*|OUT\n", (), None),  # 65536 ports: left to the Python layer
        ("net=ALLOW|tcp|127.0.0.1|1024-|IN\n", None, ()),
        ("net=ALLOW|tcp|127.0.0.1|1-1024|OUT\n", (), tuple(range(1, 1025))),  # 1024: still listed
        ("net=ALLOW|tcp|127.0.0.1|1-1025|OUT\n", (), None),
        ("net=ALLOW|tcp|127.0.0.1|80,443|OUT\nnet=DENY|tcp|*|80|OUT\n", (), (443,)),
        ("net=ALLOW|tcp|127.0.0.1|80,443|OUT\nnet=DENY|tcp|10.0.0.0/8|80|OUT\n", (), (80, 443)),
        ("net=ALLOW|tcp|localhost|0|IN\n", (0,), ()),
    ],
)
def test_ports(rules: Any, net: str, bind: tuple[int, ...] | None, connect: tuple[int, ...] | None) -> None:
    plan = plan_for(rules.load(RULES + net))
    assert plan.bind_ports == bind
    assert plan.connect_ports == connect


def test_describe_ports(rules: Any) -> None:
    plan = plan_for(
        rules.load(RULES + "net=ALLOW|tcp|127.0.0.1|80,443,8000-8002|OUT\nnet=ALLOW|tcp|*|*|IN\n")
    )
    lines = plan.describe()
    assert "landlock tcp connect: ports 80,443,8000-8002" in lines
    assert "landlock tcp bind: not restricted by the kernel (the Python layer decides)" in lines


# -- confinement: files ------------------------------------------------------------------------------


@needs_landlock
@pytest.mark.parametrize("exposed", [True, False])
def test_read_needs_an_expose_rule(confined: Confined, data: Path, exposed: bool) -> None:
    rule = f"expose-ro={data}\n" if exposed else ""
    target = data / "file.txt"
    results = confined.run(
        rule,
        f"""
        attempt("os_open", lambda: read({str(target)!r}))
        attempt("native_open", lambda: native_open({str(target)!r}))
        attempt("listdir", lambda: os.listdir({str(data)!r}))
        attempt("stat", lambda: os.stat({str(target)!r}).st_size)
        """,
    )
    if exposed:
        assert results["os_open"] == "data-content"
        assert results["native_open"] == 0
        assert results["listdir"] == ["file.txt"]
    else:
        assert results["os_open"] == errno.EACCES
        assert results["native_open"] == errno.EACCES
        assert results["listdir"] == errno.EACCES
    assert results["stat"] == len("data-content")  # metadata is not a Landlock access


@needs_landlock
def test_unexposed_file_refused_next_to_an_exposed_one(confined: Confined, data: Path, secret: Path) -> None:
    results = confined.run(
        f"expose-ro={data}\n",
        f"""
        attempt("exposed", lambda: read({str(data / "file.txt")!r}))
        attempt("secret", lambda: read({str(secret)!r}))
        attempt("secret_native", lambda: native_open({str(secret)!r}))
        attempt("passwd", lambda: read("/etc/passwd"))
        """,
    )
    assert results == {
        "exposed": "data-content",
        "secret": errno.EACCES,
        "secret_native": errno.EACCES,
        "passwd": errno.EACCES,
    }


@needs_landlock
@pytest.mark.parametrize("writable", [True, False])
def test_write_needs_expose_rw(confined: Confined, data: Path, writable: bool) -> None:
    rule = f"expose-rw={data}\n" if writable else f"expose-ro={data}\n"
    results = confined.run(
        rule,
        f"""
        attempt("create", lambda: create({str(data / "new.txt")!r}))
        attempt("create_native", lambda: native_open({str(data / "native.txt")!r}, os.O_WRONLY | os.O_CREAT))
        attempt("append", lambda: os.close(os.open({str(data / "file.txt")!r}, os.O_WRONLY | os.O_APPEND)))
        attempt("truncate", lambda: os.close(os.open({str(data / "file.txt")!r}, os.O_WRONLY | os.O_TRUNC)))
        attempt("mkdir", lambda: os.mkdir({str(data / "sub")!r}))
        attempt("rename", lambda: os.rename({str(data / "file.txt")!r}, {str(data / "moved.txt")!r}))
        attempt("read", lambda: read({str(data / "moved.txt") if writable else str(data / "file.txt")!r}))
        """,
    )
    if writable:
        assert results == {
            "create": 0,
            "create_native": 0,
            "append": 0,
            "truncate": 0,
            "mkdir": 0,
            "rename": 0,
            "read": "",
        }
        assert (data / "new.txt").read_text() == "written"
    else:
        refused = {k: v for k, v in results.items() if k != "read"}
        assert set(refused.values()) == {errno.EACCES}, results
        assert results["read"] == "data-content"
        assert sorted(p.name for p in data.iterdir()) == ["file.txt"]


@needs_landlock
@pytest.mark.parametrize("exposed", [True, False])
def test_creating_in_tmp_needs_a_rule(confined: Confined, tmp_path: Path, exposed: bool) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    # tmp_path lies under /tmp (or $TMPDIR): the temporary directory is not granted by itself.
    rule = f"expose-rw={scratch}\n" if exposed else ""
    import tempfile

    results = confined.run(
        rule,
        f"""
        attempt("scratch", lambda: create({str(scratch / "x")!r}))
        attempt("tmp", lambda: create(os.path.join({tempfile.gettempdir()!r}, "pysandboxes-ll-" + str(os.getpid()))))
        """,
    )
    assert results["tmp"] == errno.EACCES
    assert results["scratch"] == (0 if exposed else errno.EACCES)


@needs_landlock
def test_dev_null_and_urandom(confined: Confined) -> None:
    results = confined.run(
        "",
        """
        import subprocess
        attempt("null", lambda: open(os.devnull, "w").close())
        attempt("urandom", lambda: len(open("/dev/urandom", "rb").read(8)))
        attempt("subprocess_devnull", lambda: subprocess.run([sys.executable, "-c", "pass"], stdout=subprocess.DEVNULL).returncode)
        """,
    )
    assert results == {"null": 0, "urandom": 8, "subprocess_devnull": 0}


@needs_landlock
def test_program_file_is_readable(confined: Confined, tmp_path: Path) -> None:
    script = tmp_path / "elsewhere" / "main.py"
    script.parent.mkdir()
    script.write_text("print('hello')\n")
    other = script.parent / "other.py"
    other.write_text("print('other')\n")
    results = confined.run(
        "",
        f"""
        attempt("script", lambda: read({str(script)!r}))
        attempt("sibling", lambda: read({str(other)!r}))
        """,
        program_files=[str(script)],
    )
    assert results == {"script": "print('hello')\n", "sibling": errno.EACCES}


# -- confinement: child processes inherit it -------------------------------------------------------------


@needs_landlock
@pytest.mark.parametrize("exposed", [True, False])
def test_child_processes_are_confined_too(
    confined: Confined, data: Path, secret: Path, exposed: bool
) -> None:
    cat = os.path.realpath("/bin/cat")
    rules = f"expose-ro={os.path.dirname(cat)}\n" + (f"expose-ro={secret.parent}\n" if exposed else "")
    results = confined.run(
        rules,
        f"""
        def cat():
            p = subprocess.run([{cat!r}, {str(secret)!r}], capture_output=True, text=True)
            return p.stdout if p.returncode == 0 else p.returncode
        def python():
            code = "import sys; sys.stdout.write(open(sys.argv[1]).read())"
            p = subprocess.run([sys.executable, "-c", code, {str(secret)!r}], capture_output=True, text=True)
            return p.stdout if p.returncode == 0 else p.stderr.strip().splitlines()[-1]
        attempt("cat", cat)
        attempt("python", python)
        """,
    )
    if exposed:
        assert results == {"cat": "secret-content", "python": "secret-content"}
    else:
        assert results["cat"] == 1
        assert str(results["python"]).startswith("PermissionError: [Errno 13]")


@needs_landlock
def test_executing_needs_a_rule(confined: Confined) -> None:
    cat = os.path.realpath("/bin/cat")
    if os.path.dirname(cat) in ("/usr/lib/x86_64-linux-gnu",):
        pytest.skip("cat lives with the shared libraries")
    results = confined.run("", f'attempt("cat", lambda: subprocess.run([{cat!r}, "/dev/null"]).returncode)')
    assert results == {"cat": errno.EACCES}


# -- confinement: TCP ------------------------------------------------------------------------------


CONNECT = """
def connect():
    s = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    try:
        s.connect(("127.0.0.1", {port}))
    finally:
        s.close()
attempt("connect", connect)
"""


@needs_landlock
@pytest.mark.parametrize("allowed", [True, False])
def test_connect_needs_a_net_rule(confined: Confined, server: int, allowed: bool) -> None:
    extra = [("net", f"ALLOW|tcp|127.0.0.1|{server}|OUT")] if allowed else []
    results = confined.run("", CONNECT.format(port=server), extra=extra)
    assert results == {"connect": 0 if allowed else errno.EACCES}


@needs_landlock
def test_connect_rule_on_another_port_does_not_help(confined: Confined, server: int) -> None:
    other = server + 1 if server < 65535 else server - 1
    results = confined.run(
        "", CONNECT.format(port=server), extra=[("net", f"ALLOW|tcp|127.0.0.1|{other}|OUT")]
    )
    assert results == {"connect": errno.EACCES}


@needs_landlock
def test_connect_with_every_port_is_left_to_the_python_layer(confined: Confined, server: int) -> None:
    results = confined.run("", CONNECT.format(port=server), extra=[("net", "ALLOW|tcp|127.0.0.1|*|OUT")])
    assert results == {"connect": 0}


BIND = """
def bind(port):
    s = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", port))
        return s.getsockname()[1]
    finally:
        s.close()
attempt("bind", lambda: bind({port}))
"""


@needs_landlock
@pytest.mark.parametrize("allowed", [True, False])
def test_bind_needs_a_net_in_rule(confined: Confined, allowed: bool) -> None:
    port = free_port()
    extra = (
        [("net", f"ALLOW|tcp|127.0.0.1|{port}|IN")]
        if allowed
        else [("net", f"ALLOW|tcp|127.0.0.1|{port}|OUT")]
    )
    results = confined.run("", BIND.format(port=port), extra=extra)
    assert results == {"bind": port if allowed else errno.EACCES}


@needs_landlock
@pytest.mark.parametrize("allowed", [True, False])
def test_bind_to_port_zero_is_checked_as_port_zero(confined: Confined, allowed: bool) -> None:
    # Landlock checks bind() against the port asked for: port 0 (kernel's choice) needs a rule
    # for port 0, and a rule for the port the kernel would pick does not help.
    port = free_port()
    rule = "ALLOW|tcp|127.0.0.1|0|IN" if allowed else f"ALLOW|tcp|127.0.0.1|{port}|IN"
    results = confined.run("", BIND.format(port=0), extra=[("net", rule)])
    if allowed:
        assert isinstance(results["bind"], int) and results["bind"] > 0
    else:
        assert results == {"bind": errno.EACCES}


# -- confinement: threads and signals ---------------------------------------------------------------


def test_confine_refuses_a_threaded_process(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import threading, time
        from pysandboxes.errors import ProviderError
        from pysandboxes.providers.landlock import LandlockPlan, confine
        stop = threading.Event()
        t = threading.Thread(target=stop.wait)
        t.start()
        try:
            confine(LandlockPlan((), (), (), (), (), ()))
        except ProviderError as exc:
            print("refused:", exc)
        finally:
            stop.set()
            t.join()
        print("secret:", open(__import__("sys").argv[1]).read())
        """
    )
    secret = tmp_path / "s.txt"
    secret.write_text("still-free")
    proc = subprocess.run(
        [sys.executable, "-c", code, str(secret)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    if available() is None:
        assert "refused: landlock: this process runs 2 threads" in proc.stdout
    assert "secret: still-free" in proc.stdout


@needs_landlock
@pytest.mark.skipif(ABI < 6, reason="signal scoping needs Landlock ABI 6")
@pytest.mark.parametrize("confine_first", [True, False])
def test_signals_do_not_leave_the_domain(tmp_path: Path, confine_first: bool) -> None:
    # Signal 0 only checks the permission: the test process is never disturbed.
    code = textwrap.dedent(
        f"""
        import os
        from pysandboxes.providers.landlock import LandlockPlan, confine
        if {confine_first!r}:
            confine(LandlockPlan((), (), (), (), (), ()))
        try:
            os.kill(os.getppid(), 0)
            print("signal: ok")
        except PermissionError:
            print("signal: refused")
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ("signal: refused" if confine_first else "signal: ok")


@needs_landlock
def test_confine_reports_the_failing_step(tmp_path: Path) -> None:
    # A port above 65535 is refused by landlock_add_rule: the error names the step and errno.
    code = textwrap.dedent(
        """
        from pysandboxes.errors import ProviderError
        from pysandboxes.providers.landlock import LandlockPlan, confine
        try:
            confine(LandlockPlan((), (), (), (), (), (70000,)))
        except ProviderError as exc:
            print(exc)
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert (
        proc.stdout.strip()
        == "landlock: landlock_add_rule (port) failed for 'tcp port 70000': [EINVAL] Invalid argument"
    )
