"""os-sandbox=qemu end to end: the program runs in a virtual machine; what holds, in pairs.

Every run boots a guest (seconds under TCG), so the checks are grouped: a few module-scoped
fixtures each run ONE ``python-sb`` program performing many probes and recording their results
(the ``RESULTS=`` line of test_namespaces.py's prelude), and many small tests assert on that
shared report; each test still fails when its feature breaks. About fifteen boots in all.

The guest's kernel and initramfs are cached under ``$XDG_CACHE_HOME``: every run of this module
shares one cache directory (built by the first run, which may also find that KVM hangs here and
say so on stderr: those notices are dropped before asserting on stderr). The cache directory is
also on QEMU's command line (``-kernel``), which is how a QEMU left behind by this module is
recognised on the host.

Network tests use the host's 127.0.0.1 only.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pysandboxes.providers import qemu as qemu_provider

from .test_kernel_layer import Host, expected_confined
from .test_namespaces import (
    LISTENER,
    PARTIAL_EXPECTED,
    PRELUDE,
    SECCOMP_PROBES,
    SLEEPER,
    WORKING_PROBES,
    Sandboxed,
    Server,
    free_port,
    processes_with,
    run_partial_host,
)

pytestmark = pytest.mark.vm  # each test boots a guest: `make test-fast` leaves them out

BIN = Path(sys.executable).parent
PYTHON_SB = str(BIN / "python-sb")
#: every run that boots a guest (TCG: ~5-8 s; the first one also builds the cache)
QEMU_TIMEOUT = 240
#: what the first runs of a session may say on stderr (not asserted either way)
NOTICES = (
    "python-sb: qemu: unpacking the guest's kernel (first use) ...",
    "python-sb: qemu: building the guest's initramfs (first use) ...",
    "python-sb: qemu: the guest did not start under KVM within ",
)

Result = subprocess.CompletedProcess[str]


def without_notices(stderr: str) -> str:
    return "".join(line for line in stderr.splitlines(keepends=True) if not line.startswith(NOTICES))


@pytest.fixture(scope="session")
def qemu_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One ``XDG_CACHE_HOME`` for every run: the kernel and initramfs are built once, and the
    KVM probe's verdict is shared."""
    assert qemu_provider.unavailable_reason() is None, "CI installs QEMU, the kernel and busybox-static"
    return tmp_path_factory.mktemp("qemu-cache")


class QemuBox(Sandboxed):
    """test_namespaces.py's project under ``os-sandbox=qemu``, with the shared cache and the
    longer timeout a boot needs."""

    def __init__(self, tmp_path: Path, cache: Path) -> None:
        super().__init__(tmp_path, "qemu")
        self.cache = cache
        self.environ["XDG_CACHE_HOME"] = str(cache)

    def sb(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        input: str | None = None,
    ) -> Result:
        done = subprocess.run(
            [PYTHON_SB, *args],
            cwd=cwd or self.root,
            env=env if env is not None else self.environ,
            input=input,
            stdin=subprocess.DEVNULL if input is None else None,
            capture_output=True,
            text=True,
            timeout=QEMU_TIMEOUT,
        )
        return subprocess.CompletedProcess(
            done.args, done.returncode, done.stdout, without_notices(done.stderr)
        )

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [PYTHON_SB, *args],
            cwd=self.root,
            env=self.environ,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )

    def leftovers(self) -> list[str]:
        return processes_with(str(self.cache))


def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    try:
        out, err = process.communicate(timeout=QEMU_TIMEOUT)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate(timeout=QEMU_TIMEOUT)
    return process.returncode, out, without_notices(err)


@dataclass
class Report:
    """One run: its outcome, the results its program recorded, and what the test saw around it."""

    done: Result
    results: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, done: Result, **extra: Any) -> Report:
        results: dict[str, Any] = {}
        for line in done.stdout.splitlines():
            if line.startswith("RESULTS="):
                results = json.loads(line[len("RESULTS=") :])
        return cls(done, results, extra)

    def __getitem__(self, key: str) -> Any:
        return self.results[key]


def _box(tmp_path_factory: pytest.TempPathFactory, cache: Path, name: str) -> QemuBox:
    return QemuBox(tmp_path_factory.mktemp(name), cache)


# -- 1. the Python layer in the guest -----------------------------------------------------------

LAYER_REFUSED = """\
import os, socket


def show(name, fn):
    try:
        value = fn()
    except Exception as exc:
        value = type(exc).__name__ + ": " + str(exc).splitlines()[0]
    print(name + "=" + str(value), flush=True)


def import_csv():
    import csv

    return csv.QUOTE_ALL


def connect():
    with socket.create_connection(("127.0.0.1", {port})) as s:
        return "connected"


show("import", import_csv)
show("api", lambda: os.system("exit 3"))
show("net", connect)
print(open("data/a.txt").read())  # uncaught: the run ends like python with a traceback
"""


@pytest.fixture(scope="module")
def layer_refused(tmp_path_factory: pytest.TempPathFactory, qemu_cache: Path) -> Report:
    """The Python layer on, no rule for the accesses: each is refused as usual."""
    box = _box(tmp_path_factory, qemu_cache, "layer-refused")
    server = Server()
    try:
        box.write("data/a.txt", "data-a")
        box.rules("python-import=os, socket")
        box.write("p.py", LAYER_REFUSED.format(port=server.port))
        done = box.sb("p.py")
    finally:
        server.close()
    return Report.of(done, connections=server.connections, port=server.port, path=box.root / "data" / "a.txt")


LAYER_ALLOWED = """
call("file", lambda: open("data/a.txt").read())


def import_csv():
    import csv

    return csv.QUOTE_ALL


def connect():
    with socket.create_connection(("127.0.0.1", {port})) as s:
        s.sendall(b"py")
        s.shutdown(socket.SHUT_WR)
        return s.recv(100).decode()


call("import", import_csv)
call("api", lambda: os.system("exit 3") >> 8)
call("net", connect)
# around the Python layer: libc through ctypes, and child processes
call("libc_exposed", native_open, "data/a.txt")
call("libc_outside", native_open, {outside!r})
call("libc_home", native_open, {home!r})
call("libc_other_port", native_connect, "127.0.0.1", {other})
results["cat_exposed"] = child("cat", "data/a.txt")
results["cat_outside"] = child("cat", {outside!r})
results["curl_allowed"] = child("curl", "-sS", "--max-time", "20", "http://127.0.0.1:{port}/")
results["curl_other"] = child("curl", "-sS", "--max-time", "20", "http://127.0.0.1:{other}/")
"""


@pytest.fixture(scope="module")
def layer_allowed(tmp_path_factory: pytest.TempPathFactory, qemu_cache: Path) -> Report:
    """The Python layer on, with the rules for the same accesses; and what native code and
    child processes reach around it (ctypes and process-exec allowed)."""
    box = _box(tmp_path_factory, qemu_cache, "layer-allowed")
    server, other = Server(), Server()
    try:
        box.write("data/a.txt", "data-a")
        box.rules(
            "expose-ro=data",
            "python-import=csv, ctypes, errno, json, os, socket, subprocess, sys",
            "python-api=ALLOW:native",
            "python-api=ALLOW:process-exec",
            "expose-ro=/usr/bin",  # the Python layer lets cat and curl start only when exposed
            f"net=ALLOW|tcp|127.0.0.1|{server.port}|OUT",
        )
        box.program(
            LAYER_ALLOWED.format(
                port=server.port,
                other=other.port,
                outside=str(box.outside / "secret.txt"),
                home=str(box.home / ".secret"),
            )
        )
        done = box.sb("prog.py")
    finally:
        server.close()
        other.close()
    return Report.of(done, connections=server.connections, other_connections=other.connections)


def test_python_layer_runs_end_cleanly(layer_allowed: Report, layer_refused: Report) -> None:
    assert (layer_allowed.done.returncode, layer_allowed.done.stderr) == (0, ""), layer_allowed.done
    # the refused run ends with its uncaught refusal: exit 1, a traceback on stderr only
    assert layer_refused.done.returncode == 1, layer_refused.done
    assert layer_refused.done.stderr.startswith("Traceback (most recent call last):\n")
    assert "Traceback" not in layer_refused.done.stdout


def test_python_layer_file(layer_allowed: Report, layer_refused: Report) -> None:
    assert layer_allowed["file"] == "data-a"
    path = layer_refused.extra["path"]
    assert layer_refused.done.stderr.splitlines()[-2:] == [
        f"pysandboxes.errors.RuleFileNotFoundError: Access to '{path}' must be accepted by a rule.",
        f"Add `expose-ro={path.parent}` to the rule file to allow it.",
    ], layer_refused.done.stderr


def _refused_lines(report: Report) -> dict[str, str]:
    return dict(line.split("=", 1) for line in report.done.stdout.splitlines() if "=" in line)


def test_python_layer_import(layer_allowed: Report, layer_refused: Report) -> None:
    assert layer_allowed["import"] == 1  # csv.QUOTE_ALL
    assert _refused_lines(layer_refused)["import"] == (
        "RuleModuleNotFoundError: Module named 'csv' is not allowed by a rule"
    )


def test_python_layer_api(layer_allowed: Report, layer_refused: Report) -> None:
    assert layer_allowed["api"] == 3
    assert _refused_lines(layer_refused)["api"] == (
        "RuleApiPermissionError: os.system() is denied by the API guard (category: process-exec)."
    )


def test_python_layer_net(layer_allowed: Report, layer_refused: Report) -> None:
    assert layer_allowed["net"] == "echo:py"
    assert _refused_lines(layer_refused)["net"] == (
        f"RuleSocketConnectionRefusedError: Connection to [127.0.0.1]:{layer_refused.extra['port']} "
        "DENIED by implicit default policy"
    )
    assert layer_refused.extra["connections"] == 0


def test_refused_run_keeps_stdout_and_stderr_apart(layer_refused: Report) -> None:
    # what the program printed before its uncaught exception is on stdout, in order
    assert [line.split("=")[0] for line in layer_refused.done.stdout.splitlines()] == ["import", "api", "net"]
    assert "RuleModuleNotFoundError" not in layer_refused.done.stderr


# -- 2. around the Python layer: libc and child processes with the layer on ---------------------


def test_libc_open_around_the_python_layer_reads_only_exposed_files(layer_allowed: Report) -> None:
    assert layer_allowed["libc_exposed"] == "ok:data-a"
    assert layer_allowed["libc_outside"] == "ENOENT"
    assert layer_allowed["libc_home"] == "ENOENT"


def test_child_cat_reads_only_exposed_files(layer_allowed: Report) -> None:
    # cat runs at all: with process-exec allowed the guest's view holds /usr
    assert layer_allowed["cat_exposed"] == "exit 0: data-a"
    assert layer_allowed["cat_outside"] == "exit 1: "


def test_child_curl_reaches_only_the_allowed_port(layer_allowed: Report) -> None:
    assert layer_allowed["curl_allowed"] == "exit 0: http-echo"
    assert layer_allowed["curl_other"].startswith("exit 7: "), layer_allowed.results  # couldn't connect
    assert layer_allowed["libc_other_port"] == "ECONNREFUSED"
    # the Python connection and curl's; nothing reached the other server
    assert layer_allowed.extra["connections"] == 2
    assert layer_allowed.extra["other_connections"] == 0


# -- 2-4. the kernel, with the Python layer off: one guest, many probes ----------------------------

NATIVE = """
import threading

# files outside the project: a directory no rule exposes, one exposed, the home
call("outside", native_open, {outside!r})
call("outside_listdir", lambda: ",".join(os.listdir({outside_dir!r})))
call("shared", native_open, {shared!r})
call("home", native_open, {home_secret!r})
call("home_visible", native_open, {home_visible!r})
# writes
call("write_outside_new", native_write, {outside_new!r})
call("write_outside_existing", native_write, {outside!r}, "overwritten")
call("write_cwd", native_write, "made-inside.txt")
call("cwd_kept", native_open, "kept.txt")
call("cwd_seen", lambda: sorted(os.listdir(".")))
call("write_tmp", native_write, {tmp_name!r}, "guest tmp")
call("read_tmp", native_open, {tmp_name!r})
# expose-ro, expose-rw, ignore=
call("ro_read", native_open, "data/a.txt")
call("ro_write", native_write, "data/a.txt")
call("ro_create", native_write, "data/new.txt")
call("ro_remove", os.remove, "data/a.txt")
call("rw_create", native_write, "out/new.txt", "from inside")
call("rw_remove", os.remove, "out/old.txt")
call("ignore_plain", native_open, "data/plain.txt")
call("ignore_file", native_open, "data/key.secret")
call("ignore_dir", native_open, "data/private/inner.txt")
# no process-exec rule: the system's commands are not in the view
results["usr_bin_cat"] = os.path.exists("/usr/bin/cat")
# processes
results["pids"] = sorted(int(n) for n in os.listdir("/proc") if n.isdigit())
results["mine"] = os.getpid()
call("kill_test", os.kill, {me}, 0)
call("kill_parent", os.kill, {parent}, 0)
cmdlines = []
for pid in results["pids"]:
    try:
        with open(f"/proc/{{pid}}/cmdline", "rb") as f:
            cmdlines.append(f.read().replace(b"\\0", b" ").decode(errors="replace"))
    except OSError:
        pass
results["cmdlines"] = cmdlines
with open("/proc/1/cmdline", "rb") as f:
    results["init"] = f.read().replace(b"\\0", b" ").decode(errors="replace")
with open("/proc/sys/kernel/random/boot_id") as f:
    results["boot_id"] = f.read().strip()
with open("/proc/meminfo") as f:
    results["memtotal_kb"] = int(f.readline().split()[1])
# the guest's own devices and kernel interfaces: the link to the host is out of reach
results["dev"] = sorted(os.listdir("/dev"))
results["sys"] = os.path.exists("/sys/class")
results["fds"] = {{}}
for n in os.listdir("/proc/self/fd"):
    try:
        results["fds"][n] = os.readlink(f"/proc/self/fd/{{n}}")
    except OSError:
        pass  # the directory listing's own descriptor
call("agent_fds", lambda: sorted({{native_open(f"/proc/1/fd/{{n}}") for n in os.listdir("/proc/1/fd")}}))
call("agent_environ", native_open, "/proc/1/environ")
call("mknod", os.mknod, "/tmp/port", 0o20600, os.makedev(1, 3))
results["environ"] = dict(os.environ)
with open("/proc/self/environ", "rb") as f:
    results["proc_environ"] = f.read().decode(errors="replace")
results["hostname"] = socket.gethostname()
# network: the host's 127.0.0.1, from native code
call("net_allowed", native_connect, "127.0.0.1", {allowed})
call("net_other", native_connect, "127.0.0.1", {other})
call("net_denied", native_connect, "127.0.0.1", {denied})
call("net_py", lambda: socket.create_connection(("127.0.0.1", {allowed})).close())
# threads, fork and a child interpreter still work
@WORKING_PROBES@
# the program itself, as python runs it
results["script"] = [__file__, sys.argv, sys.path[0], os.getcwd()]
"""
NATIVE = NATIVE.replace("@WORKING_PROBES@", WORKING_PROBES)


@pytest.fixture(scope="module")
def native(tmp_path_factory: pytest.TempPathFactory, qemu_cache: Path) -> Iterator[Report]:
    """``py-sandbox=false``: one guest running every native probe (files, writes, exposures,
    processes, network, seccomp, threads) against the rules below."""
    box = _box(tmp_path_factory, qemu_cache, "native")
    shared = box.outside.parent / "shared"
    shared.mkdir()
    (shared / "shared.txt").write_text("shared")
    (box.home / "visible").mkdir()
    (box.home / "visible" / "v.txt").write_text("visible")
    box.write("kept.txt", "host file")
    box.write("data/a.txt", "data-a")
    box.write("data/plain.txt", "plain")
    box.write("data/key.secret", "hidden")
    box.write("data/private/inner.txt", "inner")
    box.write("out/old.txt", "old")
    tmp_name = f"/tmp/pysandboxes-test-{uuid.uuid4().hex}"
    allowed, other, denied = Server(), Server(), Server()
    host = Host(box.root.parent)
    try:
        box.rules(
            "py-sandbox=false",
            "expose-ro=data",
            "expose-rw=out",
            f"expose-ro={shared}",
            f"expose-ro={box.home / 'visible'}",
            "ignore=*.secret",
            "ignore=private",
            "env=GREETING=hello",
            f"net=ALLOW|tcp|127.0.0.1|{allowed.port}|OUT",
            f"net=ALLOW|tcp|127.0.0.0/8|{denied.port}|OUT",
            f"net=DENY|tcp|127.0.0.1|{denied.port}|OUT",
        )
        box.program(
            NATIVE.format(
                outside=str(box.outside / "secret.txt"),
                outside_dir=str(box.outside),
                outside_new=str(box.outside / "new.txt"),
                shared=str(shared / "shared.txt"),
                home_secret=str(box.home / ".secret"),
                home_visible=str(box.home / "visible" / "v.txt"),
                tmp_name=tmp_name,
                me=os.getpid(),
                parent=os.getppid(),
                allowed=allowed.port,
                other=other.port,
                denied=denied.port,
            )
            + SECCOMP_PROBES
            + host.probes()
        )
        done = box.sb("prog.py", "arg", env={**box.environ, "TERM": "xterm", "SECRET_TOKEN": "t0k"})
    finally:
        for server in (allowed, other, denied):
            server.close()
        host.close()
    yield Report.of(
        done,
        box=box,
        tmp_name=tmp_name,
        connections={
            "allowed": allowed.connections,
            "other": other.connections,
            "denied": denied.connections,
        },
    )
    with contextlib.suppress(OSError):
        os.unlink(tmp_name)


def test_native_run_ends_cleanly(native: Report) -> None:
    assert (native.done.returncode, native.done.stderr) == (0, ""), native.done
    assert native.done.stdout.startswith("RESULTS="), native.done


def test_native_read_of_unexposed_host_files(native: Report) -> None:
    assert native["outside"] == "ENOENT"
    assert native["outside_listdir"] == "ENOENT"
    assert native["home"] == "ENOENT"
    # the pair: exposed directories outside the project and in the home are read
    assert native["shared"] == "ok:shared"
    assert native["home_visible"] == "ok:visible"


def test_native_write_outside_expose_rw(native: Report) -> None:
    box = native.extra["box"]
    # the directory is not in the guest at all
    assert (native["write_outside_new"], native["write_outside_existing"]) == ("ENOENT", "ENOENT")
    assert not (box.outside / "new.txt").exists()
    assert (box.outside / "secret.txt").read_text() == "outside-secret"
    # the pair: expose-rw is written
    assert native["rw_create"] == "ok"


def test_native_write_in_the_unexposed_working_directory(native: Report) -> None:
    box = native.extra["box"]
    assert native["write_cwd"] == "EROFS"
    assert not (box.root / "made-inside.txt").exists()
    # the host's files in the working directory are not seen
    assert native["cwd_kept"] == "ENOENT"
    assert "kept.txt" not in native["cwd_seen"]
    assert {"data", "out", "prog.py"} <= set(native["cwd_seen"])


def test_the_guest_has_a_tmp_of_its_own(native: Report) -> None:
    assert (native["write_tmp"], native["read_tmp"]) == ("ok", "ok:guest tmp")
    assert not os.path.exists(native.extra["tmp_name"])


def test_host_processes_are_invisible(native: Report) -> None:
    me = os.getpid()
    with open(f"/proc/{me}/cmdline", "rb") as f:
        mine = f.read().replace(b"\0", b" ").decode(errors="replace")
    # another kernel: its own boot id, the agent as process 1, none of the host's processes
    with open("/proc/sys/kernel/random/boot_id") as f:
        assert native["boot_id"] != f.read().strip()
    assert "pysandboxes.providers.qemu_guest" in native["init"], native["init"]
    assert native["mine"] in native["pids"]
    assert mine not in native["cmdlines"]
    assert not any("pytest" in cmdline for cmdline in native["cmdlines"]), native["cmdlines"]
    # the test's pid and python-sb's parent: unknown in the guest (or another process there)
    for key, pid in (("kill_test", me), ("kill_parent", os.getppid())):
        if pid not in native["pids"]:
            assert native[key] == "ESRCH", native.results
    # the pair: the host's /proc lists the test itself
    assert str(me) in os.listdir("/proc")


def test_the_guest_shows_no_way_to_the_link(native: Report) -> None:
    # a minimal /dev (the virtio port is not there), no /sys, the agent's descriptors closed to
    # the program, no device nodes of its own
    assert native["dev"] == [
        "fd",
        "full",
        "null",
        "random",
        "shm",
        "stderr",
        "stdin",
        "stdout",
        "tty",
        "urandom",
        "zero",
    ]
    assert native["sys"] is False
    assert not any(target.startswith("/dev/") for target in native["fds"].values()), native["fds"]
    assert native["agent_fds"] == ["EACCES"]
    assert native["agent_environ"] == "EACCES"
    assert native["mknod"] == "EPERM"


def test_the_environment_is_only_env_rules(native: Report) -> None:
    assert native["environ"] == {"GREETING": "hello", "TERM": "xterm"}
    # the kernel's copy too: no launcher variable, no interpreter configuration (test_environment.py)
    assert sorted(native["proc_environ"].split("\0")) == ["", "GREETING=hello", "TERM=xterm"]
    assert native["hostname"] == "sandbox"


def test_the_kernel_layer_refuses_sockets_io_uring_and_pidfd_getfd(native: Report) -> None:
    # test_kernel_layer.py's probes: a guest's UNIX sockets are its kernel's (none reaches the
    # host, the key is not needed), a host System V segment does not exist there
    expected = {**expected_confined("qemu"), "unix_outside": "connect:ENOENT", "pair_dgram": "ok"}
    assert {key: native[key] for key in expected} == expected


def test_expose_ro_is_read_only_natively(native: Report) -> None:
    box = native.extra["box"]
    assert (native["ro_read"], native["ro_write"], native["ro_create"], native["ro_remove"]) == (
        "ok:data-a",
        "EROFS",
        "EROFS",
        "EROFS",
    )
    assert (box.root / "data" / "a.txt").read_text() == "data-a"
    assert not (box.root / "data" / "new.txt").exists()


def test_expose_rw_is_writable_and_seen_on_the_host(native: Report) -> None:
    box = native.extra["box"]
    assert (native["rw_create"], native["rw_remove"]) == ("ok", "ok")
    assert (box.root / "out" / "new.txt").read_text() == "from inside"
    assert not (box.root / "out" / "old.txt").exists()


def test_ignored_files_are_masked_natively(native: Report) -> None:
    assert native["ignore_plain"] == "ok:plain"
    assert native["ignore_file"] == "ok:"  # an empty file over it
    assert native["ignore_dir"] == "ENOENT"


def test_usr_is_in_the_view_only_with_process_exec(native: Report, layer_allowed: Report) -> None:
    assert native["usr_bin_cat"] is False
    assert layer_allowed["cat_exposed"] == "exit 0: data-a"  # the pair: /usr/bin/cat ran


def test_native_connect_to_host_loopback_ports(native: Report) -> None:
    assert native["net_allowed"] == "ok:echo:ping"
    assert native["net_py"] == "ok"
    assert native["net_other"] == "ECONNREFUSED"
    connections = native.extra["connections"]
    assert (connections["allowed"], connections["other"]) == (2, 0)


def test_deny_wins_over_allow_for_native_code(native: Report) -> None:
    # accepted by the forwarder (the port is allowed by the range), then reset: the broker refused
    assert native["net_denied"] in ("ECONNRESET", "EPIPE"), native.results
    assert native.extra["connections"]["denied"] == 0


def test_seccomp_refuses_namespace_tracing_mount_keyring_and_bpf_calls(native: Report) -> None:
    assert {k: native[k] for k in ("unshare", "ptrace", "mount", "keyctl", "bpf")} == {
        "unshare": "EPERM",
        "ptrace": "EPERM",
        "mount": "EPERM",
        "keyctl": "EPERM",
        "bpf": "EPERM",
    }


def test_threads_subprocess_and_fork_still_work(native: Report) -> None:
    assert (native["thread"], native["subprocess"], native["fork"]) == ("thread ran", "exit 0: 42", 9)


def test_the_program_under_tmp_runs_like_python(native: Report) -> None:
    box = native.extra["box"]
    assert str(box.root).startswith("/tmp/")  # the project lives under /tmp (the guest's is private)
    assert native["script"] == [str(box.root / "prog.py"), ["prog.py", "arg"], str(box.root), str(box.root)]


def test_default_memory_is_the_default(native: Report) -> None:
    # the pair of qemu.memory=256M below: the default 2048 MiB guest
    assert native["memtotal_kb"] > 1024 * 1024


# -- 2-3. expose-rw=. : the rule file stays read-only; an IN rule --------------------------------

IN_PROGRAM = """
call("rules", native_write, ".py-sandboxes", "py-sandbox=false\\nexpose-rw=/\\n")
call("cwd", native_write, "other.txt")
call("include", native_write, "sub/local.rules", "expose-ro=/")
call("include_dir", native_write, "conf.d/local.rules", "expose-ro=/")
call("move_sub", os.rename, "sub", "sub-old")
call("move_other", os.rename, "other-dir", "other-moved")
print("RESULTS=" + json.dumps(results), flush=True)
refused = socket.create_server(("127.0.0.1", {refused}))
""" + LISTENER.replace("{port}", "{allowed}")


@pytest.fixture(scope="module")
def inbound(tmp_path_factory: pytest.TempPathFactory, qemu_cache: Path) -> Report:
    """``expose-rw=.``: writes in the working directory reach the host but the rule file there
    stays read-only. Inside, a program listens on two ports; an IN rule allows one."""
    box = _box(tmp_path_factory, qemu_cache, "inbound")
    allowed, refused = free_port(), free_port()
    box.write("sub/keep.txt", "kept")
    (box.root / "other-dir").mkdir()
    box.rules(
        "py-sandbox=false",
        "expose-rw=.",
        f"net=ALLOW|tcp|127.0.0.1|{allowed}|IN",
        'include-optional "sub/local.rules"',
        'include-optional "conf.d/local.rules"',
    )
    box.write("prog.py", PRELUDE + textwrap.dedent(IN_PROGRAM.format(allowed=allowed, refused=refused)))
    process = box.start("prog.py")
    extra: dict[str, Any] = {"box": box}
    try:
        assert process.stdout is not None
        results_line = process.stdout.readline()
        extra["ready"] = process.stdout.readline()
        if extra["ready"] == "ready\n":
            try:
                socket.create_connection(("127.0.0.1", refused), timeout=30).close()
                extra["refused"] = "connected"
            except OSError as exc:
                extra["refused"] = type(exc).__name__
            with socket.create_connection(("127.0.0.1", allowed), timeout=30) as c:
                c.sendall(b"hello")
                c.shutdown(socket.SHUT_WR)
                data = b""
                while chunk := c.recv(100):
                    data += chunk
            extra["allowed"] = data
        status, out, err = finish(process)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate(timeout=QEMU_TIMEOUT)
    return Report.of(subprocess.CompletedProcess(process.args, status, results_line + out, err), **extra)


def test_rule_file_in_an_expose_rw_directory_is_not_writable(inbound: Report) -> None:
    box = inbound.extra["box"]
    assert (inbound["rules"], inbound["cwd"]) == ("EROFS", "ok")
    assert (box.root / ".py-sandboxes").read_text().splitlines()[:2] == [
        "os-sandbox=qemu",
        "py-sandbox=false",
    ]
    assert "expose-rw=/" not in (box.root / ".py-sandboxes").read_text()
    # the pair: the working directory, exposed read-write, is written on the host
    assert (box.root / "other.txt").read_text() == "written"


def test_absent_includes_and_the_way_to_them_stay_as_they_are(inbound: Report) -> None:
    # test_rule_files.py under qemu: placeholders bound read-only, sub/ a mount point of the
    # launcher's view (QEMU's renameat fails with EBUSY)
    box = inbound.extra["box"]
    assert {k: inbound[k] for k in ("include", "include_dir", "move_sub")} == {
        "include": "EROFS",
        "include_dir": "EROFS",
        "move_sub": "EBUSY",
    }
    assert (box.root / "sub" / "local.rules").read_text() == ""
    assert list((box.root / "conf.d").iterdir()) == []
    # the pair: a directory on the way to no rule file moves
    assert inbound["move_other"] == "ok" and (box.root / "other-moved").is_dir()


def test_in_rule_listener_is_reachable_from_the_host(inbound: Report) -> None:
    assert inbound.extra["ready"] == "ready\n", inbound.done
    assert inbound.extra["allowed"] == b"inside:hello"
    assert (inbound.done.returncode, inbound.done.stderr) == (0, ""), inbound.done
    assert inbound.done.stdout.splitlines()[1:] == ["served"]


def test_a_port_without_in_rule_is_not_reachable(inbound: Report) -> None:
    # the program listens on it in the guest; nothing forwards it to the host
    assert inbound.extra["refused"] == "ConnectionRefusedError"


# -- 5. exit status, standard streams, signals, nothing left behind -------------------------------


def processes_after(box: QemuBox, marker: str) -> list[str]:
    """What is left on the host once a run ended: processes with the marker, QEMUs of ours."""
    return processes_with(marker) + box.leftovers()


EXIT_PROGRAM = """\
import subprocess, sys
data = sys.stdin.read()
print("stdin:", data.upper(), flush=True)
print("to stderr", file=sys.stderr, flush=True)
# a grandchild that would outlive the program: the guest ends with it
subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(60)", sys.argv[1]],
    start_new_session=True,
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
)
sys.exit(3)
"""


@pytest.fixture(scope="module")
def exited(tmp_path_factory: pytest.TempPathFactory, qemu_cache: Path) -> Report:
    box = _box(tmp_path_factory, qemu_cache, "exit")
    marker = f"marker-{uuid.uuid4().hex}"
    box.rules("py-sandbox=false")
    box.write("exit3.py", EXIT_PROGRAM)
    done = box.sb("exit3.py", marker, input="hello from the host")
    return Report.of(done, left=processes_after(box, marker))


def test_exit_status_stdin_and_separate_streams(exited: Report) -> None:
    done = exited.done
    assert (done.returncode, done.stdout, done.stderr) == (3, "stdin: HELLO FROM THE HOST\n", "to stderr\n")


def test_no_process_is_left_behind_after_an_exit(exited: Report) -> None:
    assert exited.extra["left"] == []


@pytest.fixture(scope="module")
def sigterm(tmp_path_factory: pytest.TempPathFactory, qemu_cache: Path) -> Report:
    box = _box(tmp_path_factory, qemu_cache, "sigterm")
    marker = f"marker-{uuid.uuid4().hex}"
    box.rules("py-sandbox=false")
    box.write("sleeper.py", SLEEPER)
    process = box.start("sleeper.py", marker)
    assert process.stdout is not None
    ready = process.stdout.readline()
    process.send_signal(signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=30)  # python ends at once; the program sleeps 25 s otherwise
    status, out, err = finish(process)
    return Report.of(
        subprocess.CompletedProcess(process.args, status, out, err),
        ready=ready,
        left=processes_after(box, marker),
    )


def test_sigterm_ends_the_program_like_python(sigterm: Report) -> None:
    assert sigterm.extra["ready"] == "ready\n", sigterm.done
    assert (sigterm.done.returncode, sigterm.done.stdout, sigterm.done.stderr) == (-signal.SIGTERM, "", "")
    assert sigterm.extra["left"] == []


#: SLEEPER in short naps: a SIGINT that lands between ``print`` and ``time.sleep`` (a wide window
#: under TCG) is handled after the current nap, not after the whole sleep (CPython's own race)
NAPPER = SLEEPER.replace("time.sleep(25)", "for _ in range(250):\n        time.sleep(0.1)")


def test_ctrl_c_is_a_keyboard_interrupt_in_the_program(tmp_path: Path, qemu_cache: Path) -> None:
    box = QemuBox(tmp_path, qemu_cache)
    marker = f"marker-{uuid.uuid4().hex}"
    box.rules("py-sandbox=false")
    box.write("sleeper.py", NAPPER)
    process = box.start("sleeper.py", marker)
    assert process.stdout is not None
    assert process.stdout.readline() == "ready\n"
    os.killpg(process.pid, signal.SIGINT)
    assert finish(process) == (5, "KeyboardInterrupt\n", "")
    assert processes_after(box, marker) == []


def test_a_program_killed_by_sigkill_ends_like_python(tmp_path: Path, qemu_cache: Path) -> None:
    box = QemuBox(tmp_path, qemu_cache)
    box.rules("py-sandbox=false")
    box.write(
        "k.py", "import os, signal\nprint('killing', flush=True)\nos.kill(os.getpid(), signal.SIGKILL)\n"
    )
    done = box.sb("k.py")
    assert (done.returncode, done.stdout, done.stderr) == (-signal.SIGKILL, "killing\n", ""), done


def test_an_exit_status_above_128_is_kept(tmp_path: Path, qemu_cache: Path) -> None:
    box = QemuBox(tmp_path, qemu_cache)
    box.rules("py-sandbox=false")
    box.write("e.py", "import sys\nsys.exit(143)\n")
    done = box.sb("e.py")
    assert (done.returncode, done.stdout, done.stderr) == (143, "", ""), done


@pytest.fixture(scope="module")
def sigterm_at_boot(tmp_path_factory: pytest.TempPathFactory, qemu_cache: Path) -> Report:
    """SIGTERM while the guest boots: the launcher's own temporary directory (``env=TMPDIR``)
    shows when its staging directory exists, i.e. QEMU is being started."""
    box = _box(tmp_path_factory, qemu_cache, "sigterm-boot")
    tmpdir = box.outside.parent / "launcher-tmp"
    tmpdir.mkdir()
    # under TCG the boot takes seconds on any host: the signal lands before the guest is ready
    box.rules("py-sandbox=false", "qemu.use_kvm=false", f"env=TMPDIR={tmpdir}")
    box.write("sleeper.py", SLEEPER)
    process = box.start("sleeper.py")
    deadline = time.monotonic() + QEMU_TIMEOUT
    while not list(tmpdir.iterdir()) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    staged = [p.name for p in tmpdir.iterdir()]
    process.send_signal(signal.SIGTERM)
    status, out, err = finish(process)
    return Report.of(
        subprocess.CompletedProcess(process.args, status, out, err),
        staged=staged,
        left_dirs=[p.name for p in tmpdir.iterdir()],
        left=box.leftovers(),
    )


def test_sigterm_while_the_guest_boots_ends_the_run(sigterm_at_boot: Report) -> None:
    assert len(sigterm_at_boot.extra["staged"]) == 1, sigterm_at_boot.extra
    assert sigterm_at_boot.extra["staged"][0].startswith("pysandboxes-guest-")
    done = sigterm_at_boot.done
    assert (done.returncode, done.stdout, done.stderr) == (-signal.SIGTERM, "", ""), done
    assert sigterm_at_boot.extra["left"] == []


def test_sigterm_while_the_guest_boots_leaves_no_staging_directory(sigterm_at_boot: Report) -> None:
    assert sigterm_at_boot.extra["staged"], sigterm_at_boot.extra
    assert sigterm_at_boot.extra["left_dirs"] == []


# -- 6. partial mode -----------------------------------------------------------------------------


def test_partial_mode_calls_run_in_the_guest(tmp_path: Path, qemu_cache: Path) -> None:
    # two guests: the first child, and the fresh one after it died
    box = QemuBox(tmp_path, qemu_cache)
    done = run_partial_host(box, timeout=QEMU_TIMEOUT)
    assert (done.returncode, without_notices(done.stderr)) == (0, ""), done
    assert done.stdout.splitlines() == PARTIAL_EXPECTED
    assert box.leftovers() == []


# -- 7. fail closed --------------------------------------------------------------------------------


def test_missing_qemu_fails_closed(tmp_path: Path, qemu_cache: Path, exited: Report) -> None:
    box = QemuBox(tmp_path, qemu_cache)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    box.rules("py-sandbox=false")
    box.write("p.py", "open('ran.txt', 'w').write('ran')\nprint('ran')\n")
    done = box.sb("p.py", env={**box.environ, "PATH": str(empty)})
    assert (done.returncode, done.stdout) == (2, ""), done
    assert done.stderr == (
        "python-sb: os-sandbox=qemu (from 'os-sandbox=qemu' from .py-sandboxes(1)) cannot start: it needs "
        "a kernel with the 9p and virtio modules, a static busybox and QEMU; install them with "
        "`apt-get install qemu-system-x86`\n"
    )
    assert not (box.root / "ran.txt").exists()
    assert box.leftovers() == []
    # the pair: with QEMU on PATH a program runs (the exit-status run above)
    assert exited.done.returncode == 3


def test_start_timeout_fails_closed(tmp_path: Path, qemu_cache: Path) -> None:
    box = QemuBox(tmp_path, qemu_cache)
    # TCG: no guest is ready within a second on any host (KVM might be)
    box.rules("py-sandbox=false", "qemu.use_kvm=false", "qemu.start_timeout=1")
    box.write("p.py", "open('ran.txt', 'w').write('ran')\nprint('ran')\n")
    done = box.sb("p.py")
    assert (done.returncode, done.stdout) == (125, ""), done  # the sandbox failed, not the program
    lines = done.stderr.splitlines()
    assert lines[0] == (
        "python-sb: qemu: the guest was not ready within 1 s (qemu.start_timeout); raise "
        "qemu.start_timeout, or check `qemu.show_boot_console=true`"
    ), done.stderr
    assert not (box.root / "ran.txt").exists()
    assert box.leftovers() == []


def test_a_start_timeout_below_the_kvm_probe_is_a_timeout() -> None:
    # the launcher's wait for the guest, with no guest (no boot): KVM, qemu.start_timeout=0.2
    from pysandboxes.providers.qemu_launch import Launcher

    launcher = Launcher({"start_timeout": 0.2}, ["program"], [], "/nonexistent")
    assert launcher._wait_ready("kvm") is False
    assert launcher.failure is not None
    assert launcher.failure.startswith("the guest was not ready within "), launcher.failure
    assert "(qemu.start_timeout)" in launcher.failure


# -- 8. provider keys ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory, qemu_cache: Path) -> Report:
    box = _box(tmp_path_factory, qemu_cache, "keys")
    box.rules("py-sandbox=false", "qemu.use_kvm=false", "qemu.show_boot_console=true", "qemu.memory=256M")
    box.write("m.py", "with open('/proc/meminfo') as f:\n    print('MEMTOTAL=' + f.readline().split()[1])\n")
    return Report.of(box.sb("m.py"))


def _memtotal(report: Report) -> int:
    lines = [line for line in report.done.stdout.splitlines() if line.startswith("MEMTOTAL=")]
    assert len(lines) == 1, report.done
    return int(lines[0][len("MEMTOTAL=") :])


def test_use_kvm_false_runs_under_tcg(keys: Report) -> None:
    assert keys.done.returncode == 0, keys.done
    assert "python-sb: qemu: starting the guest under TCG (qemu.use_kvm=false)\n" in keys.done.stderr


def test_memory_key_is_the_guests_memory(keys: Report, native: Report) -> None:
    assert _memtotal(keys) < 300 * 1024
    assert native["memtotal_kb"] > 300 * 1024  # the pair: the default


def test_boot_console_is_on_stderr(keys: Report) -> None:
    assert keys.done.stdout == f"MEMTOTAL={_memtotal(keys)}\n"
    assert "Linux version" in keys.done.stderr
