"""The seccomp filters of every provider: one description, one assembler, one installer.

The attack each part answers, and where it holds:

* **Sockets the kernel layer cannot judge.** Landlock filters TCP ports only: a socket of
  another protocol (``IPPROTO_MPTCP``, SCTP, UDP-Lite, ICMP ping sockets) or another family
  (``AF_VSOCK``, which no network namespace isolates either; ``AF_ALG``, ``AF_PACKET``…)
  escapes its rules, and Landlock never mediates ``connect()`` to a *named* UNIX socket. So
  ``socket()`` is allowed only for IPv4/IPv6 TCP (protocol 0 or ``IPPROTO_TCP``) and UDP
  (0 or ``IPPROTO_UDP``), netlink's ``NETLINK_ROUTE`` (the C library's interface queries) and,
  when the rules say ``<provider>.unix-sockets=true``, ``AF_UNIX``. Everything else fails with
  an errno, as on a kernel without that protocol (``EAFNOSUPPORT``, ``EPROTONOSUPPORT``;
  ``EACCES`` for ``AF_UNIX``): Python's ``socket`` module raises an ordinary ``OSError``.
  ``socketpair(AF_UNIX, SOCK_STREAM | SOCK_SEQPACKET)`` stays allowed (asyncio's self-pipe,
  multiprocessing, partial mode's channel): a connected pair cannot connect again
  (``EISCONN``) and ignores a ``sendto()`` address; a *datagram* pair can be re-connected to
  any named datagram socket, so it follows ``AF_UNIX``.
* **io_uring** creates, connects and sends on sockets without the ``socket()`` and
  ``connect()`` system calls: ``io_uring_setup``, ``io_uring_enter`` and
  ``io_uring_register`` are refused (``EPERM``).
* **pidfd_getfd** copies a descriptor out of another process: refused (``EPERM``).
* ``landlock`` only: **System V IPC** (``shmget``, ``shmat``, ``msgget``, ``semget``…) reaches
  the host's segments and queues, which Landlock does not scope: refused (``EPERM``). The
  namespace providers give the program an IPC namespace of its own instead. And **another
  process's memory** (``ptrace``, ``process_vm_readv``/``writev``): Landlock lets a process of
  the domain trace another one of it, and the program's process (python-sb's own) started with
  the host's whole environment; a child started with ``process-exec`` must not read it.
* The namespace providers and ``qemu``'s guest add :data:`NAMESPACE_DENIED`: namespace and
  mount changes, tracing, keyrings, BPF, modules, clocks, ``clone()`` with namespace flags and
  ``ioctl(TIOCSTI)``.

Any other system call ABI than the machine's own (i386 through ``int 0x80`` or x32 on x86_64,
AArch32 on arm64) kills the process: its numbers are not the ones judged here.

The filters are classic BPF programs built by :func:`landlock_filter` and
:func:`namespace_filter` and installed by :func:`install` (which needs ``no_new_privs``).
"""

from __future__ import annotations

import os
import struct

from ..errors import ProviderError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# -- constants ----------------------------------------------------------------------------------

AF_UNIX, AF_INET, AF_INET6, AF_NETLINK = 1, 2, 10, 16
SOCK_STREAM, SOCK_DGRAM = 1, 2
_SOCK_TYPE_MASK = 0xF  # SOCK_NONBLOCK and SOCK_CLOEXEC are flags above it
IPPROTO_TCP, IPPROTO_UDP = 6, 17
NETLINK_ROUTE = 0
EPERM, EACCES, ENOSYS, EPROTONOSUPPORT, EAFNOSUPPORT = 1, 13, 38, 93, 97

_RET_ALLOW = 0x7FFF0000
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000

#: the AUDIT_ARCH of each machine whose numbers are known, and its system call numbers
_GENERIC = {  # include/uapi/asm-generic/unistd.h: arm64, riscv64
    "socket": 198,
    "socketpair": 199,
    "msgget": 186,
    "msgctl": 187,
    "msgrcv": 188,
    "msgsnd": 189,
    "semget": 190,
    "semctl": 191,
    "semtimedop": 192,
    "semop": 193,
    "shmget": 194,
    "shmctl": 195,
    "shmat": 196,
    "shmdt": 197,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "pidfd_getfd": 438,
    "ptrace": 117,
    "process_vm_readv": 270,
    "process_vm_writev": 271,
}
_X86_64 = {  # arch/x86/entry/syscalls/syscall_64.tbl
    "socket": 41,
    "socketpair": 53,
    "shmget": 29,
    "shmat": 30,
    "shmctl": 31,
    "semget": 64,
    "semop": 65,
    "semctl": 66,
    "shmdt": 67,
    "msgget": 68,
    "msgsnd": 69,
    "msgrcv": 70,
    "msgctl": 71,
    "semtimedop": 220,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "pidfd_getfd": 438,
    "ptrace": 101,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
}
ARCHES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (0xC000003E, _X86_64),
    "aarch64": (0xC00000B7, _GENERIC),
    "riscv64": (0xC00000F3, _GENERIC),
}
_X32_BIT = 0x40000000

#: refused under every provider (see the module's docstring)
COMMON_DENIED = ("io_uring_setup", "io_uring_enter", "io_uring_register", "pidfd_getfd")
#: refused under landlock: another process's memory, even one of the same Landlock domain (the
#: program's own process, a fork of python-sb, held the host's environment)
MEMORY_ACCESS = ("ptrace", "process_vm_readv", "process_vm_writev")
#: refused under landlock: the host's System V IPC objects
SYSV_IPC = (
    "shmget",
    "shmat",
    "shmctl",
    "shmdt",
    "semget",
    "semop",
    "semctl",
    "semtimedop",
    "msgget",
    "msgsnd",
    "msgrcv",
    "msgctl",
)

#: x86_64 system calls the namespace providers refuse with EPERM: namespace and mount changes,
#: tracing, kernel keyrings, BPF, kernel modules, reboot and clock changes, raw I/O ports,
#: handles that cross mounts, cross-process memory access, and the new mount API.
NAMESPACE_DENIED: dict[str, int] = {
    "ptrace": 101,
    "syslog": 103,
    "acct": 163,
    "settimeofday": 164,
    "mount": 165,
    "umount2": 166,
    "swapon": 167,
    "swapoff": 168,
    "reboot": 169,
    "sethostname": 170,
    "setdomainname": 171,
    "iopl": 172,
    "ioperm": 173,
    "init_module": 175,
    "delete_module": 176,
    "quotactl": 179,
    "pivot_root": 155,
    "adjtimex": 159,
    "chroot": 161,
    "lookup_dcookie": 212,
    "clock_settime": 227,
    "kexec_load": 246,
    "add_key": 248,
    "request_key": 249,
    "keyctl": 250,
    "unshare": 272,
    "perf_event_open": 298,
    "name_to_handle_at": 303,
    "open_by_handle_at": 304,
    "setns": 308,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "finit_module": 313,
    "kexec_file_load": 320,
    "bpf": 321,
    "userfaultfd": 323,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "mount_setattr": 442,
}
#: clone() with a namespace flag, and clone3() (ENOSYS: the C library falls back to clone)
_CLONE = 56
_CLONE3 = 435
_NAMESPACE_FLAGS = 0x7E020000  # NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
_IOCTL = 16
_TIOCSTI = 0x5412  # push characters into the terminal's input

# -- the assembler ------------------------------------------------------------------------------

_LD_W_ABS, _JEQ, _JGE, _JSET, _AND, _RET = 0x20, 0x15, 0x35, 0x45, 0x54, 0x06
_NR, _ARCH = 0, 4


def _arg(index: int) -> int:
    """Offset of the low 32 bits of ``args[index]`` in ``struct seccomp_data`` (the kernel
    takes ``int`` arguments from those bits only)."""
    return 16 + 8 * index


class _Program:
    """Classic BPF with named jump targets (resolved by :meth:`assemble`)."""

    def __init__(self) -> None:
        self.code: list[tuple[int, str | None, str | None, int]] = []
        self.labels: dict[str, int] = {}

    def load(self, offset: int) -> None:
        self.code.append((_LD_W_ABS, None, None, offset))

    def mask(self, bits: int) -> None:
        self.code.append((_AND, None, None, bits))

    def ret(self, value: int) -> None:
        self.code.append((_RET, None, None, value))

    def jump(self, op: int, k: int, then: str | None, otherwise: str | None = None) -> None:
        """``op k``: go to ``then`` if true, ``otherwise`` if false (None: the next one)."""
        self.code.append((op, then, otherwise, k))

    def label(self, name: str) -> None:
        self.labels[name] = len(self.code)

    def assemble(self) -> bytes:
        out = []
        for index, (op, then, otherwise, k) in enumerate(self.code):
            offsets = []
            for target in (then, otherwise):
                step = 0 if target is None else self.labels[target] - index - 1
                if not 0 <= step <= 255:
                    raise ProviderError(f"seccomp: jump out of range ({step})")
                offsets.append(step)
            out.append(struct.pack("=HBBI", op, offsets[0], offsets[1], k))
        return b"".join(out)


def _errno(number: int) -> int:
    return _RET_ERRNO | number


def _build(machine: str, denied: dict[int, int], unix_sockets: bool, namespace: bool) -> bytes:
    audit_arch, numbers = ARCHES[machine]
    p = _Program()
    p.load(_ARCH)
    p.jump(_JEQ, audit_arch, None, "kill")  # another ABI (i386 via int 0x80, AArch32): refused
    p.load(_NR)
    if machine == "x86_64":
        p.jump(_JGE, _X32_BIT, "kill")  # the x32 bit set on an x86_64 arch: refused whole
    p.jump(_JEQ, numbers["socket"], "socket")
    p.jump(_JEQ, numbers["socketpair"], "socketpair")
    if namespace:
        p.jump(_JEQ, _CLONE3, "enosys")
        p.jump(_JEQ, _CLONE, "clone")
        p.jump(_JEQ, _IOCTL, "ioctl")
    for number, result in sorted(denied.items()):
        p.jump(_JEQ, number, f"errno{result}")
    p.ret(_RET_ALLOW)
    # socket(domain, type, protocol)
    p.label("socket")
    p.load(_arg(0))
    p.jump(_JEQ, AF_INET, "inet")
    p.jump(_JEQ, AF_INET6, "inet")
    p.jump(_JEQ, AF_UNIX, "allow" if unix_sockets else "eacces")
    p.jump(_JEQ, AF_NETLINK, None, "eafnosupport")
    p.load(_arg(2))
    p.jump(_JEQ, NETLINK_ROUTE, "allow", "eprotonosupport")
    p.label("inet")
    p.load(_arg(1))
    p.mask(_SOCK_TYPE_MASK)
    p.jump(_JEQ, SOCK_STREAM, None, "dgram")
    p.load(_arg(2))
    p.jump(_JEQ, 0, "allow")
    p.jump(_JEQ, IPPROTO_TCP, "allow", "eprotonosupport")
    p.label("dgram")
    p.jump(_JEQ, SOCK_DGRAM, None, "eprotonosupport")
    p.load(_arg(2))
    p.jump(_JEQ, 0, "allow")
    p.jump(_JEQ, IPPROTO_UDP, "allow", "eprotonosupport")
    # socketpair(domain, type, protocol, sv): a datagram pair of AF_UNIX follows AF_UNIX
    p.label("socketpair")
    if unix_sockets:
        p.ret(_RET_ALLOW)
    else:
        p.load(_arg(0))
        p.jump(_JEQ, AF_UNIX, None, "allow")
        p.load(_arg(1))
        p.mask(_SOCK_TYPE_MASK)
        p.jump(_JEQ, SOCK_DGRAM, "eacces", "allow")
    if namespace:
        # clone(flags, ...): no new namespace
        p.label("clone")
        p.load(_arg(0))
        p.jump(_JSET, _NAMESPACE_FLAGS, "errno1", "allow")
        # ioctl(fd, TIOCSTI, ...)
        p.label("ioctl")
        p.load(_arg(1))
        p.jump(_JEQ, _TIOCSTI, "errno1", "allow")
    # the outcomes, last: classic BPF jumps forward only
    p.label("allow")
    p.ret(_RET_ALLOW)
    p.label("kill")
    p.ret(_RET_KILL_PROCESS)
    for result in sorted({*denied.values(), EPERM}):
        p.label(f"errno{result}")
        p.ret(_errno(result))
    p.label("enosys")
    p.ret(_errno(ENOSYS))
    p.label("eacces")
    p.ret(_errno(EACCES))
    p.label("eafnosupport")
    p.ret(_errno(EAFNOSUPPORT))
    p.label("eprotonosupport")
    p.ret(_errno(EPROTONOSUPPORT))
    return p.assemble()


def _machine() -> str:
    machine = os.uname().machine
    return "x86_64" if machine == "amd64" else machine


def landlock_unsupported() -> str | None:
    """Why the landlock provider's filter cannot be built on this machine (None: it can)."""
    machine = _machine()
    if machine not in ARCHES:
        return (
            f"the seccomp filter that completes Landlock (UNIX sockets, protocols Landlock cannot "
            f"filter, io_uring) is not built for the {machine} architecture in this version"
        )
    return None


def landlock_filter(*, unix_sockets: bool) -> bytes:
    """The ``landlock`` provider's filter: the socket policy, io_uring, pidfd_getfd, SysV IPC."""
    reason = landlock_unsupported()
    if reason is not None:
        raise ProviderError(reason)
    machine = _machine()
    numbers = ARCHES[machine][1]
    denied = {numbers[name]: EPERM for name in (*COMMON_DENIED, *MEMORY_ACCESS, *SYSV_IPC)}
    return _build(machine, denied, unix_sockets, namespace=False)


def namespace_filter(*, unix_sockets: bool) -> bytes:
    """The filter of ``bwrap``, ``unshare``, ``firejail`` and ``qemu``'s guest (x86_64 only)."""
    machine = _machine()
    if machine != "x86_64":
        raise ProviderError(f"the seccomp filter of this version is built for x86_64 only, not {machine}")
    numbers = ARCHES[machine][1]
    denied = dict.fromkeys(NAMESPACE_DENIED.values(), EPERM)
    denied.update({numbers[name]: EPERM for name in COMMON_DENIED})
    return _build(machine, denied, unix_sockets, namespace=True)


# -- the installer ------------------------------------------------------------------------------

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2


def install(libc: Any, program: bytes) -> None:
    """Install the BPF ``program`` on this thread (and what it starts). Needs ``no_new_privs``
    (or CAP_SYS_ADMIN)."""
    import ctypes

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    buffer = ctypes.create_string_buffer(program, len(program))
    prog = SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    ctypes.set_errno(0)
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"seccomp filter: {os.strerror(err)}")


#: what the shim writes on the launcher's standard error, first thing inside the sandbox
#: (``stderr_fd`` of :func:`shim_argv`): what came before is the launcher's own setup
STARTED_MARK = b"\0"


def shim_argv(filter_fd: int, argv: list[str], *, stderr_fd: int | None = None) -> list[str]:
    """``argv`` started through a fresh interpreter that first installs the filter read from
    descriptor ``filter_fd`` (for a launcher that cannot load one itself: firejail brings its
    own filter, and ours is stacked on it, so both hold). ``stderr_fd``: the program's real
    standard error; the launcher's is a pipe its caller watches, on which the shim writes
    :data:`STARTED_MARK` before it puts ``stderr_fd`` in its place."""
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    boot = (
        f"import sys; sys.path.insert(0, {root!r}); from pysandboxes.providers.seccomp import _shim; _shim()"
    )
    fds = str(filter_fd) if stderr_fd is None else f"{filter_fd},{stderr_fd}"
    return [sys.executable, "-I", "-S", "-c", boot, fds, *argv]


def _shim() -> None:
    """``python -c BOOT FD[,STDERR] PROGRAM ARG...``: install the filter of ``FD``, then exec
    PROGRAM (with ``STDERR`` as its standard error, once the start is marked)."""
    import ctypes
    import sys

    first, _, err = sys.argv[1].partition(",")
    argv = sys.argv[2:]
    if argv[:1] == ["--"]:  # the launcher's caller ends the launcher's options with it
        argv = argv[1:]
    if err:
        try:  # noqa: SIM105 - contextlib is not loaded in this interpreter
            os.write(2, STARTED_MARK)
        except OSError:
            pass  # nobody watches any more: the program's own stream is what matters
        os.dup2(int(err), 2)
        os.close(int(err))
    with os.fdopen(int(first), "rb") as f:
        program = f.read()
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "no_new_privs")
        install(libc, program)
    except OSError as exc:
        sys.exit(f"python-sb: cannot install the seccomp filter: {exc}")
    os.execv(argv[0], argv)
