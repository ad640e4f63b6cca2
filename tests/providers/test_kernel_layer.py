"""What each provider's seccomp filter adds to its boundary (``providers/seccomp.py``), in pairs.

Landlock never mediates ``connect()`` to a named UNIX socket and filters TCP ports only; io_uring
and ``pidfd_getfd`` go around the ``socket()`` and ``connect()`` checks; System V IPC is not
scoped by Landlock. The program below probes all of it with native calls (libc through ctypes,
the Python layer off), against things the test made on the host and no rule exposes: a UNIX
socket server (a stand-in for docker.sock, dbus, ssh-agent), a TCP port and a System V segment.
The pair of every probe is the same program run by plain python, which reaches all of them.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .test_namespaces import EPILOGUE, PRELUDE, Sandboxed, Server

#: the providers whose kernel boundary runs on this host's kernel (qemu: see test_qemu.py)
PROVIDERS = ("landlock", "bwrap", "unshare", "firejail")
CURL = shutil.which("curl")
TIMEOUT = 60

#: native probes; "{...}" fields are filled by :func:`kernel_probes` (the qemu suite runs them too)
KERNEL_PROBES = """
import struct

AF_VSOCK, IPPROTO_MPTCP = 40, 262


def native_socket(family, kind, protocol=0):
    fd = libc.socket(family, kind, protocol)
    if fd < 0:
        return _errno(ctypes.get_errno())
    libc.close(fd)
    return "ok"


def native_unix_connect(path, fd=None):
    if fd is None:
        fd = libc.socket(socket.AF_UNIX, socket.SOCK_STREAM, 0)
        if fd < 0:
            return "socket:" + _errno(ctypes.get_errno())
    address = struct.pack("=H", socket.AF_UNIX) + os.fsencode(path) + b"\\0"
    if libc.connect(fd, address, len(address)) != 0:
        e = ctypes.get_errno()
        libc.close(fd)
        return "connect:" + _errno(e)
    libc.write(fd, b"ping", 4)
    libc.shutdown(fd, 1)
    buffer = ctypes.create_string_buffer(100)
    n = libc.read(fd, buffer, 100)
    libc.close(fd)
    return "ok:" + buffer.raw[: max(n, 0)].decode()


def native_pair(kind):
    pair = (ctypes.c_int * 2)()
    if libc.socketpair(socket.AF_UNIX, kind, 0, pair) != 0:
        return _errno(ctypes.get_errno())
    libc.close(pair[0])
    libc.close(pair[1])
    return "ok"


def native_mptcp_connect(port):
    fd = libc.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP)
    if fd < 0:
        return "socket:" + _errno(ctypes.get_errno())
    address = struct.pack("=H", socket.AF_INET) + port.to_bytes(2, "big") + socket.inet_aton("127.0.0.1") + bytes(8)
    code = "ok" if libc.connect(fd, address, len(address)) == 0 else "connect:" + _errno(ctypes.get_errno())
    libc.close(fd)
    return code


def shm_read(shmid):
    libc.shmat.restype = ctypes.c_void_p
    address = libc.shmat(shmid, None, 0o10000)  # SHM_RDONLY
    if address in (None, ctypes.c_void_p(-1).value):
        return _errno(ctypes.get_errno())
    return "ok:" + ctypes.string_at(address, 16).rstrip(b"\\0").decode()


def syscall_fd(number, *args):
    fd = libc.syscall(number, *args)
    if fd < 0:
        return _errno(ctypes.get_errno())
    os.close(fd)
    return "ok"


results["unix_outside"] = native_unix_connect({unix_outside!r})
results["mptcp"] = native_mptcp_connect({tcp_port})
results["vsock"] = native_socket(AF_VSOCK, socket.SOCK_STREAM)
results["tcp"] = native_socket(socket.AF_INET6, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
results["udp"] = native_socket(socket.AF_INET, socket.SOCK_DGRAM)
results["pair_stream"] = native_pair(socket.SOCK_STREAM)
results["pair_seqpacket"] = native_pair(socket.SOCK_SEQPACKET)
results["pair_dgram"] = native_pair(socket.SOCK_DGRAM)
results["shm"] = shm_read({shmid})
results["io_uring"] = syscall_fd(425, 4, ctypes.create_string_buffer(120))  # io_uring_setup
pidfd = libc.syscall(434, os.getpid(), 0)  # pidfd_open
results["pidfd_getfd"] = syscall_fd(438, pidfd, 1, 0)  # a copy of its own stdout
# another process's memory (here its own): process_vm_readv of 8 bytes
source, target = ctypes.create_string_buffer(b"memory!!"), ctypes.create_string_buffer(8)
local = (ctypes.c_void_p * 2)(ctypes.addressof(target), 8)
remote = (ctypes.c_void_p * 2)(ctypes.addressof(source), 8)
one = ctypes.c_ulong(1)
n = libc.process_vm_readv(os.getpid(), local, one, remote, one, ctypes.c_ulong(0))
results["process_vm_readv"] = "ok" if n == 8 else _errno(ctypes.get_errno())
"""


def kernel_probes(*, unix_outside: str, tcp_port: int, shmid: int) -> str:
    return KERNEL_PROBES.format(unix_outside=unix_outside, tcp_port=tcp_port, shmid=shmid)


class HostSegment:
    """A System V shared memory segment of the host holding ``text`` (removed at close)."""

    def __init__(self, text: bytes) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.shmat.restype = ctypes.c_void_p
        self.libc = libc
        self.shmid = libc.shmget(0, 4096, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
        assert self.shmid >= 0, os.strerror(ctypes.get_errno())
        address = libc.shmat(self.shmid, None, 0)
        ctypes.memmove(address, text, len(text))
        libc.shmdt(ctypes.c_void_p(address))

    def close(self) -> None:
        self.libc.shmctl(self.shmid, 0, None)  # IPC_RMID


class Host:
    """What the probes try to reach: a UNIX socket server outside every exposure, a TCP
    server on a port no rule allows, a System V segment."""

    def __init__(self, tmp_path: Path) -> None:
        self.socket_dir = tmp_path / "run"
        self.socket_dir.mkdir()
        self.unix = Server(unix=str(self.socket_dir / "service.sock"))
        self.tcp = Server()
        self.segment = HostSegment(b"host-segment")

    def probes(self) -> str:
        return kernel_probes(unix_outside=self.unix.address, tcp_port=self.tcp.port, shmid=self.segment.shmid)

    def close(self) -> None:
        self.unix.close()
        self.tcp.close()
        self.segment.close()


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    h = Host(tmp_path)
    yield h
    h.close()


@pytest.fixture(params=PROVIDERS)
def box(request: pytest.FixtureRequest, tmp_path: Path) -> Sandboxed:
    return Sandboxed(tmp_path, str(request.param))


def _io_uring_disabled() -> bool:
    try:
        with open("/proc/sys/kernel/io_uring_disabled") as f:
            return f.read().strip() != "0"
    except OSError:
        return False


#: what plain python reaches: everything (the pair of every refusal below)
UNCONFINED = {
    "unix_outside": "ok:echo:ping",
    "mptcp": "ok",
    "vsock": "ok",
    "tcp": "ok",
    "udp": "ok",
    "pair_stream": "ok",
    "pair_seqpacket": "ok",
    "pair_dgram": "ok",
    "shm": "ok:host-segment",
    "io_uring": "ok",
    "pidfd_getfd": "ok",
    "process_vm_readv": "ok",
}


def plain_python(tmp_path: Path, body: str) -> dict[str, Any]:
    code = PRELUDE + textwrap.dedent(body) + EPILOGUE
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT, cwd=tmp_path
    )
    assert (done.returncode, done.stderr) == (0, ""), done
    results: dict[str, Any] = json.loads(done.stdout.splitlines()[-1][len("RESULTS=") :])
    return results


def test_plain_python_reaches_every_probe(tmp_path: Path, host: Host) -> None:
    results = plain_python(tmp_path, host.probes())
    if not os.path.exists("/proc/sys/net/mptcp/enabled"):
        results["mptcp"] = UNCONFINED["mptcp"]  # a kernel without MPTCP: nothing to escape with
    if not os.path.exists("/dev/vsock"):
        results["vsock"] = UNCONFINED["vsock"]  # no vsock transport on this host
    if _io_uring_disabled():
        results["io_uring"] = UNCONFINED["io_uring"]
    assert results == UNCONFINED
    assert host.unix.connections == 1


def expected_confined(provider: str) -> dict[str, str]:
    """What the probes reach under ``provider`` without ``<provider>.unix-sockets``."""
    return {
        "unix_outside": "socket:EACCES",
        "mptcp": "socket:EPROTONOSUPPORT",
        "vsock": "EAFNOSUPPORT",
        "tcp": "ok",
        "udp": "ok",
        "pair_stream": "ok",
        "pair_seqpacket": "ok",
        "pair_dgram": "EACCES",
        # landlock: refused by the filter; the others have an IPC namespace of their own
        "shm": "EPERM" if provider == "landlock" else "EINVAL",
        "io_uring": "EPERM",
        "pidfd_getfd": "EPERM",
        "process_vm_readv": "EPERM",
    }


def test_native_code_reaches_no_host_socket_segment_or_io_uring(box: Sandboxed, host: Host) -> None:
    results = box.probe(body=host.probes())
    assert results == expected_confined(box.provider)
    assert (host.unix.connections, host.tcp.connections) == (0, 0)


def test_with_unix_sockets_a_host_socket_outside_the_exposures(box: Sandboxed, host: Host) -> None:
    # the key lets the program create UNIX sockets; what they reach is then the view's
    # business: nothing outside it under the namespace providers, every socket of the host the
    # user may write to under landlock (which does not mediate connect(): docs/providers.md)
    results = box.probe(f"{box.provider}.unix-sockets=true", body=host.probes())
    expected = expected_confined(box.provider)
    expected["pair_dgram"] = "ok"
    if box.provider == "landlock":
        expected["unix_outside"] = "ok:echo:ping"
        assert results == expected
        assert host.unix.connections == 1
    else:
        expected["unix_outside"] = "connect:ENOENT"  # not in the view
        assert results == expected
        assert host.unix.connections == 0


def test_with_unix_sockets_a_socket_in_an_expose_rw_directory_is_reached(box: Sandboxed, host: Host) -> None:
    # the pair of the test above: the rules expose the socket's directory
    results = box.probe(
        f"{box.provider}.unix-sockets=true", f"expose-rw={host.socket_dir}", body=host.probes()
    )
    assert results["unix_outside"] == "ok:echo:ping"
    assert host.unix.connections == 1


def test_with_unix_sockets_a_socket_in_an_expose_ro_directory_is_reached_natively(
    box: Sandboxed, host: Host
) -> None:
    # a documented limit (docs/providers.md): connect() needs write permission on the socket
    # file, which a read-only mount does not take away; the Python layer refuses it (it judges a
    # connect as a write), native code does not
    results = box.probe(
        f"{box.provider}.unix-sockets=true", f"expose-ro={host.socket_dir}", body=host.probes()
    )
    assert results["unix_outside"] == "ok:echo:ping"


@pytest.mark.skipif(CURL is None, reason="curl is not installed (CI installs it: .ci/run)")
@pytest.mark.parametrize("unix_sockets", [True, False], ids=["key", "no-key"])
def test_curl_with_process_exec_reaches_no_host_socket(
    box: Sandboxed, host: Host, unix_sockets: bool
) -> None:
    # the Python layer is on and lets curl start; curl then talks to the socket itself
    key = [f"{box.provider}.unix-sockets=true"] if unix_sockets else []
    box.rules(
        "python-import=subprocess",
        "python-api=ALLOW:process-exec",
        "expose-ro=/usr",  # curl and its libraries (landlock grants the interpreter's only)
        *key,
    )
    box.write(
        "p.py",
        "import subprocess\n"
        f"p = subprocess.run(['curl', '-sS', '--max-time', '20', '--unix-socket', {host.unix.address!r}, "
        "'http://localhost/'], capture_output=True, text=True)\n"
        "print(p.returncode, p.stdout)\n",
    )
    done = box.sb("p.py")
    assert (done.returncode, done.stderr) == (0, ""), done
    if unix_sockets and box.provider == "landlock":
        assert done.stdout == "0 http-echo\n"  # the documented limit: Landlock does not mediate it
        assert host.unix.connections == 1
    else:
        assert done.stdout == "7 \n", done  # curl: couldn't connect
        assert host.unix.connections == 0
    # the pair: curl outside the sandbox reaches the socket
    plain = subprocess.run(
        [CURL, "-sS", "--unix-socket", host.unix.address, "http://localhost/"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert (plain.returncode, plain.stdout) == (0, "http-echo")


SOCKET_USERS = """
import asyncio, json, socket

results = {}

async def main():
    reader, writer = await asyncio.open_connection(sock=socket.socketpair()[0])
    writer.close()
    return "asyncio ran"

results["asyncio"] = asyncio.run(main())
flags = socket.AI_ADDRCONFIG  # the C library asks netlink which address families are configured
results["getaddrinfo"] = socket.getaddrinfo("127.0.0.1", 80, type=socket.SOCK_STREAM, flags=flags)[0][4][0]
results["if_nameindex"] = [name for _index, name in socket.if_nameindex()][:1]
with socket.socket(socket.AF_INET6) as s:
    results["ipv6"] = s.family.name
print("RESULTS=" + json.dumps(results))
"""


def test_python_sockets_keep_working(box: Sandboxed) -> None:
    # what the filter must leave working: asyncio's self-pipe (a socket pair), netlink (the
    # interface list, the configured address families), IPv6 probing
    box.rules("py-sandbox=false")
    box.write("prog.py", SOCKET_USERS)
    done = box.sb("prog.py")
    assert (done.returncode, done.stderr) == (0, ""), done
    assert json.loads(done.stdout.splitlines()[-1][len("RESULTS=") :]) == {
        "asyncio": "asyncio ran",
        "getaddrinfo": "127.0.0.1",
        "if_nameindex": ["lo"],
        "ipv6": "AF_INET6",
    }
