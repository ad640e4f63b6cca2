"""The ``landlock`` provider: the running process confines itself with Linux Landlock.

No helper binary and no second interpreter: :func:`plan_for` turns a policy into a
:class:`LandlockPlan` (pure: it reads the policy, ``sys`` and ``/proc/self/maps``, it changes
nothing), then :func:`confine` applies it with the raw system calls (``prctl``,
``landlock_create_ruleset``, ``landlock_add_rule``, ``landlock_restrict_self``). Confinement is
irreversible and inherited by every process started afterwards, native code included.

What the kernel confines
    * Files: every access right the kernel's Landlock ABI knows is *handled*, so a path is
      refused unless a rule grants it. ``expose-ro=`` directories may be read and their files
      executed; ``expose-rw=`` directories get every right (create, remove, rename within the
      writable tree, truncate, device ioctl). The interpreter gets, read-only, the minimum it
      needs to keep running and to start child interpreters: its prefixes and the CA stores
      (the policy's built-in exposures), the directories of the shared libraries mapped into
      this process, the directories of ``sys.executable`` and of each symlink on the way to
      it, the ``sys.path`` entries, and a short list of single files (``/etc/ld.so.cache``,
      ``/etc/localtime``, ``/etc/nsswitch.conf``, ``/dev/null``, ``/dev/urandom``, ...).
    * TCP ports (ABI >= 4): ``bind()`` and ``connect()`` are refused except on the ports of
      ``net=ALLOW|tcp|...`` rules, ``IN`` for bind and ``OUT`` for connect. A rule covering
      more than 1024 ports (``*``, ``1024-``) leaves that right to the Python layer: one kernel
      rule per port would mean tens of thousands of rules.
    * Signals and abstract UNIX sockets (ABI >= 6): the process cannot signal, nor connect to
      an abstract UNIX socket of, a process outside its Landlock domain (the caller, the
      desktop session, ...). Its own children share the domain and stay reachable.
    * What Landlock does not see, by a seccomp filter installed with it (``seccomp.py``): no
      UNIX socket can be created unless ``landlock.unix-sockets=true``; no socket of a protocol
      its TCP port rules miss (MPTCP, SCTP, ICMP, UDP-Lite) or of another family (vsock,
      packet...); no io_uring, ``pidfd_getfd``, ``ptrace``/``process_vm_readv``, System V IPC.

What the kernel does not confine (the Python layer decides there, native code is not held)
    * Metadata: ``stat``, ``lstat``, ``readlink``, ``access`` and path walking are not Landlock
      accesses; a confined program can learn that a path exists and its size and times, never
      its content.
    * Hosts: Landlock filters TCP *ports*, not addresses; ``net=ALLOW|tcp|10.0.0.1|443|OUT``
      lets native code reach port 443 on any host. UDP is not filtered at all (name resolution
      needs it). ``net=DENY`` rules are honoured by the kernel only when they name every host
      (``*``): their ports are then removed.
    * Ephemeral ports: ``bind()`` to port 0 is checked as port 0 (a rule must allow port 0
      ``IN`` to let the kernel pick a port), never as the port the kernel then picks.
      ``connect()`` on an unbound socket picks its local port without a bind check, and so
      does ``listen()`` on an unbound socket: native code can listen on a random port of
      every interface even though ``bind()`` is refused (measured on ABI 7; Landlock has no
      listen right yet).
    * ``ignore=`` rules and the protection of the rule files: Landlock rights add up along a
      path and cannot subtract, so a file inside an ``expose-rw=`` directory is writable by
      native code even when the Python layer refuses it (:attr:`LandlockPlan.notes` says so).
    * Named UNIX sockets, once ``landlock.unix-sockets=true`` lets the program create UNIX
      sockets: connecting to a socket file is not a Landlock file access, so every socket this
      user may write to is reachable.
    * File descriptors opened before :func:`confine` keep their rights (stdin/stdout, the
      partial-mode channel).

Why not all of ``/etc``
    ``/etc`` holds host secrets and identity (``shadow`` is unreadable anyway, but ``passwd``,
    ``hostname``, machine-id, service configuration with credentials, ...). The interpreter
    needs a handful of files there; the name-resolution files are added only when the policy
    has at least one ``net=ALLOW`` rule. ``/tmp``, ``$HOME`` and ``/`` are never added by the
    plan itself; a rule may expose them.

``/proc/self`` is not granted: it names a different directory in every process, so a rule on
it would be a rule on this pid only, and Python does not need it (``subprocess`` closes file
descriptors with ``close_range``). Threads: Landlock confines the calling thread only (and the
threads and processes it starts later), so :func:`confine` refuses to run while another thread
exists.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from .._record import Record
from ..errors import ProviderError
from .landlock_abi import _SYSCALL_NUMBERS, landlock_abi

TYPE_CHECKING = False  # importing typing costs milliseconds at start-up
if TYPE_CHECKING:
    from typing import Any, ClassVar

    from ..rules.policy import Policy

__all__ = ["LandlockPlan", "available", "confine", "plan_for"]

#: The first ABI that can filter TCP ports: what this provider requires.
MIN_ABI = 4

# -- uapi constants (include/uapi/linux/landlock.h) ------------------------------------------
ACCESS_FS_EXECUTE = 1 << 0
ACCESS_FS_WRITE_FILE = 1 << 1
ACCESS_FS_READ_FILE = 1 << 2
ACCESS_FS_READ_DIR = 1 << 3
ACCESS_FS_REMOVE_DIR = 1 << 4
ACCESS_FS_REMOVE_FILE = 1 << 5
ACCESS_FS_MAKE_CHAR = 1 << 6
ACCESS_FS_MAKE_DIR = 1 << 7
ACCESS_FS_MAKE_REG = 1 << 8
ACCESS_FS_MAKE_SOCK = 1 << 9
ACCESS_FS_MAKE_FIFO = 1 << 10
ACCESS_FS_MAKE_BLOCK = 1 << 11
ACCESS_FS_MAKE_SYM = 1 << 12
ACCESS_FS_REFER = 1 << 13  # ABI 2
ACCESS_FS_TRUNCATE = 1 << 14  # ABI 3
ACCESS_FS_IOCTL_DEV = 1 << 15  # ABI 5

ACCESS_NET_BIND_TCP = 1 << 0  # ABI 4
ACCESS_NET_CONNECT_TCP = 1 << 1  # ABI 4

SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

RULE_PATH_BENEATH = 1
RULE_NET_PORT = 2

_PR_SET_NO_NEW_PRIVS = 38

_FS_ABI1 = (1 << 13) - 1  # EXECUTE .. MAKE_SYM
_FS_BY_ABI = {1: _FS_ABI1, 2: ACCESS_FS_REFER, 3: ACCESS_FS_TRUNCATE, 5: ACCESS_FS_IOCTL_DEV}

#: What a single file may be granted (a directory right on a file rule is EINVAL).
_FILE_RIGHTS = (
    ACCESS_FS_EXECUTE | ACCESS_FS_WRITE_FILE | ACCESS_FS_READ_FILE | ACCESS_FS_TRUNCATE | ACCESS_FS_IOCTL_DEV
)
_READ_DIR_RIGHTS = ACCESS_FS_EXECUTE | ACCESS_FS_READ_FILE | ACCESS_FS_READ_DIR
_READ_FILE_RIGHTS = ACCESS_FS_READ_FILE
# No IOCTL_DEV: isatty() on /dev/null answers "no" either way, and ioctl on /dev/tty could push
# keystrokes into the terminal (TIOCSTI).
_WRITE_FILE_RIGHTS = ACCESS_FS_READ_FILE | ACCESS_FS_WRITE_FILE | ACCESS_FS_TRUNCATE

#: A rule wider than this leaves its access right to the Python layer (one kernel rule a port).
MAX_RULE_PORTS = 1024
#: More ports than this in all: same.
MAX_TOTAL_PORTS = 4096

#: Read by the C library or the interpreter whatever the program does.
_BASE_READ_FILES = (
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/etc/nsswitch.conf",
    "/etc/mime.types",  # mimetypes.init() at import (agno, httpx): public data
    "/dev/urandom",
    "/dev/random",
    "/dev/zero",
)
#: Needed to resolve names and services: only with at least one net=ALLOW rule.
_NAME_RESOLUTION_FILES = (
    "/etc/hosts",
    "/etc/resolv.conf",
    "/etc/gai.conf",
    "/etc/host.conf",
    "/etc/services",
    "/etc/protocols",
)
_WRITE_FILES = ("/dev/null", "/dev/tty")

#: Mapped files under these are never turned into directory rules.
_VOLATILE_ROOTS = ("/tmp", "/var/tmp", "/dev", "/run", "/proc", "/sys")


def fs_rights(abi: int) -> int:
    """Every file-system right the given ABI knows."""
    rights = 0
    for since, bits in _FS_BY_ABI.items():
        if abi >= since:
            rights |= bits
    return rights


# -- availability -----------------------------------------------------------------------------


def available() -> str | None:
    """None when this provider can confine this process, else why not and what to do."""
    if sys.platform != "linux":
        return (
            f"Landlock is a Linux feature and this system is {sys.platform}; "
            "use os-sandbox=subprocess (no OS boundary) or run on Linux >= 6.7"
        )
    machine = os.uname().machine
    if machine not in _SYSCALL_NUMBERS:
        return (
            f"Landlock system call numbers are not known for the {machine} architecture; "
            "use os-sandbox=subprocess (no OS boundary) until the bwrap and unshare providers arrive"
        )
    from .seccomp import landlock_unsupported

    unsupported = landlock_unsupported()
    if unsupported is not None:
        return f"{unsupported}; use os-sandbox=subprocess (no OS boundary)"
    abi = landlock_abi()
    if abi == 0:
        return _why_no_landlock()
    if abi < MIN_ABI:
        return (
            f"Landlock ABI {abi} < {MIN_ABI}: this kernel cannot filter TCP ports; "
            "use a kernel >= 6.7, or os-sandbox=subprocess (no OS boundary)"
        )
    return None


def _why_no_landlock() -> str:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    ctypes.set_errno(0)
    result = libc.syscall(
        ctypes.c_long(_SYSCALL_NUMBERS[os.uname().machine]), None, ctypes.c_size_t(0), ctypes.c_uint32(1)
    )
    if result >= 0:
        return f"Landlock answered ABI {result} but no usable version was read; use os-sandbox=subprocess (no OS boundary)"
    return explain_errno(ctypes.get_errno())


def explain_errno(err: int) -> str:
    """Why ``landlock_create_ruleset(NULL, 0, VERSION)`` failed with ``err``, and what to do."""
    import errno

    alternatives = "use os-sandbox=subprocess (no OS boundary)"
    if err == errno.EOPNOTSUPP:
        return (
            "Landlock is built into this kernel but disabled at boot (EOPNOTSUPP): add 'landlock' "
            f"to the lsm= kernel parameter (see /sys/kernel/security/lsm), or {alternatives}"
        )
    if err == errno.ENOSYS:
        return (
            "this kernel has no Landlock system calls (ENOSYS: older than 5.13, built without "
            "CONFIG_SECURITY_LANDLOCK, or a seccomp filter of a container hides them); "
            f"{alternatives} or a kernel >= 6.7"
        )
    if err == errno.EPERM:
        return f"a seccomp filter refuses the Landlock system calls (EPERM); {alternatives}"
    return f"Landlock is unavailable ({errno.errorcode.get(err, err)}: {os.strerror(err)}); {alternatives}"


# -- the plan ---------------------------------------------------------------------------------


class LandlockPlan(Record):
    """What :func:`confine` grants; paths are resolved and existed when the plan was made."""

    __slots__ = (
        "bind_ports",
        "connect_ports",
        "notes",
        "read_dirs",
        "read_files",
        "unix_sockets",
        "write_dirs",
        "write_files",
    )
    _defaults: ClassVar[dict[str, Any]] = {"notes": (), "unix_sockets": False}
    #: directories whose files may be read and executed
    read_dirs: tuple[str, ...]
    #: single files that may be read
    read_files: tuple[str, ...]
    #: directories with every right: read, write, create, remove, rename, truncate, ioctl
    write_dirs: tuple[str, ...]
    #: single files that may be read, written and truncated (/dev/null, /dev/tty)
    write_files: tuple[str, ...]
    #: TCP ports bind() may use; None: the kernel does not restrict bind (Python layer only)
    bind_ports: tuple[int, ...] | None
    #: TCP ports connect() may reach; None: the kernel does not restrict connect
    connect_ports: tuple[int, ...] | None
    #: where the kernel grants more than the Python layer (for the debug log and `check`)
    notes: tuple[str, ...]
    #: ``landlock.unix-sockets=true``: socket(AF_UNIX) allowed (Landlock cannot tell which
    #: named socket it then reaches); else refused by the seccomp filter (see seccomp.py)
    unix_sockets: bool

    def describe(self) -> list[str]:
        """One line per grant, for the debug log."""
        lines = [f"landlock read+execute dir {p}" for p in self.read_dirs]
        lines += [f"landlock read file {p}" for p in self.read_files]
        lines += [f"landlock read+write dir {p}" for p in self.write_dirs]
        lines += [f"landlock read+write file {p}" for p in self.write_files]
        for what, ports in (("bind", self.bind_ports), ("connect", self.connect_ports)):
            if ports is None:
                lines.append(f"landlock tcp {what}: not restricted by the kernel (the Python layer decides)")
            elif not ports:
                lines.append(f"landlock tcp {what}: every port refused")
            else:
                lines.append(f"landlock tcp {what}: ports {_ranges(ports)}")
        if self.unix_sockets:
            lines.append(
                "landlock unix sockets: allowed (landlock.unix-sockets=true): native code can reach every "
                "named UNIX socket this user may write to"
            )
        else:
            lines.append("landlock unix sockets: refused (seccomp)")
        lines += [f"landlock note: {n}" for n in self.notes]
        return lines


def _ranges(ports: Sequence[int]) -> str:
    parts: list[str] = []
    start = prev = ports[0]
    for p in [*ports[1:], -1]:
        if p == prev + 1:
            prev = p
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = p
    return ",".join(parts)


def plan_for(policy: Policy, *, program_files: Sequence[str] = ()) -> LandlockPlan:
    """What the kernel must grant for ``policy`` and the interpreter running it (no side effect).

    ``program_files`` are the files the program is read from (the script, or its directory
    or zip); they must exist.
    """
    read_dirs: list[str] = []
    write_dirs: list[str] = []
    read_files: list[str] = []
    notes: list[str] = []
    exposures = policy.files_policy.exposures
    for exposure in exposures:
        (write_dirs if exposure.writable else read_dirs).append(exposure.path)

    broad = _broad_dirs()
    for path in _interpreter_paths():
        real = os.path.realpath(path)
        if os.path.isdir(real):
            if real not in broad:
                read_dirs.append(real)
        elif os.path.isfile(real):
            read_files.append(real)

    for path in _mapped_files():
        real = os.path.realpath(path)
        folder = os.path.dirname(real)
        if folder in broad or _beneath_any(folder, _VOLATILE_ROOTS):
            read_files.append(real)  # already in memory: reading it again reveals nothing
        else:
            read_dirs.append(folder)

    singles = list(_BASE_READ_FILES)
    if policy.net.allow:
        singles += _NAME_RESOLUTION_FILES
    read_files += [os.path.realpath(p) for p in singles if os.path.exists(p)]

    for program in program_files:
        real = os.path.realpath(program)
        if os.path.isdir(real):
            read_dirs.append(real)
        elif os.path.isfile(real):
            read_files.append(real)
        else:
            raise ProviderError(f"landlock: the program file '{program}' does not exist")

    write_files = [p for p in _WRITE_FILES if os.path.exists(p)]

    write_dirs = _outermost(write_dirs, ())
    read_dirs = _outermost(read_dirs, write_dirs)
    read_files = _outermost(read_files, (*read_dirs, *write_dirs))
    write_files = _outermost(write_files, write_dirs)

    for exposure in exposures:
        if exposure.writable:
            continue
        holder = next((w for w in write_dirs if _beneath(exposure.path, w)), None)
        if holder is not None:
            notes.append(
                f"{exposure.describe()} lies inside the read-write directory {holder}: "
                "Landlock rights add up, so native code may write there"
            )
    for protected in sorted(policy.files_policy.protected):
        holder = next((w for w in write_dirs if _beneath(protected, w)), None)
        if holder is not None:
            notes.append(
                f"the rule file {protected} lies inside the read-write directory {holder}: only the "
                "Python layer protects it; keep rule files out of expose-rw= directories"
            )
    if policy.files_policy.ignores:
        notes.append("ignore= rules are enforced by the Python layer only")

    return LandlockPlan(
        read_dirs=tuple(read_dirs),
        read_files=tuple(read_files),
        write_dirs=tuple(write_dirs),
        write_files=tuple(write_files),
        bind_ports=_tcp_ports(policy, "in"),
        connect_ports=_tcp_ports(policy, "out"),
        notes=tuple(notes),
        unix_sockets=bool(policy.options_for("landlock").get("unix-sockets")),
    )


def _interpreter_paths() -> list[str]:
    """The directories of sys.executable and each symlink hop, and the sys.path entries."""
    paths: list[str] = []
    executable = sys.executable
    if executable:
        hop = os.path.abspath(executable)
        for _ in range(40):  # the kernel's own limit on symlink hops
            paths.append(os.path.dirname(hop))
            if not os.path.islink(hop):
                break
            hop = os.path.normpath(os.path.join(os.path.dirname(hop), os.readlink(hop)))
    # sys.path[0] is the script's directory or the working directory, not an install location:
    # the rules decide whether the program may read there (unless -P / PYTHONSAFEPATH).
    entries = sys.path if sys.flags.safe_path else sys.path[1:]
    paths += [os.path.abspath(e) for e in entries if e]
    if sys.pycache_prefix and os.path.isdir(sys.pycache_prefix):  # PYTHONPYCACHEPREFIX: compiled
        paths.append(sys.pycache_prefix)  # modules kept aside, read-only (nothing is recompiled)
    return paths


def _mapped_files() -> list[str]:
    """Every file mapped into this process (shared libraries, locale data, gconv cache)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
    except OSError:
        return []
    found: dict[str, None] = {}
    for line in text.splitlines():
        fields = line.split(None, 5)
        if len(fields) < 6:
            continue
        path = fields[5]
        if not path.startswith("/") or path.endswith(" (deleted)"):
            continue
        found[path] = None
    return [p for p in found if not _beneath_any(p, ("/dev", "/proc", "/sys", "/memfd:"))]


def _broad_dirs() -> frozenset[str]:
    """Directories the interpreter's needs never justify granting whole."""
    broad = {"/", "/tmp", "/var/tmp", "/dev/shm", "/dev", "/etc", "/home", "/root", "/run", "/var"}
    broad |= {"/usr", "/proc", "/sys", "/mnt", "/media", "/opt", "/srv"}
    for variable in ("HOME", "TMPDIR"):
        value = os.environ.get(variable)
        if value:
            real = os.path.realpath(value)
            broad.add(real)
            while real != "/":  # and every directory holding it
                real = os.path.dirname(real)
                broad.add(real)
    try:
        import pwd

        broad.add(os.path.realpath(pwd.getpwuid(os.getuid()).pw_dir))
    except (ImportError, KeyError, OSError):
        pass
    return frozenset(broad)


def _beneath(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _beneath_any(path: str, roots: Sequence[str]) -> bool:
    return any(_beneath(path, r) for r in roots)


def _outermost(paths: Sequence[str], covering: Sequence[str]) -> list[str]:
    """Sorted, without duplicates, without a path beneath another or beneath ``covering``."""
    unique = sorted(set(paths))
    return [
        p
        for p in unique
        if not _beneath_any(p, covering) and not any(o != p and _beneath(p, o) for o in unique)
    ]


def _tcp_ports(policy: Policy, direction: str) -> tuple[int, ...] | None:
    """The ports of ALLOW tcp rules for one direction; None when too many to list."""
    allowed: set[int] = set()
    for rule in policy.net.allow:
        if "tcp" not in rule.protocols or direction not in rule.directions:
            continue
        for lo, hi in rule.ports:
            if hi - lo + 1 > MAX_RULE_PORTS:
                return None
            allowed.update(range(lo, hi + 1))
    if len(allowed) > MAX_TOTAL_PORTS:
        return None
    for rule in policy.net.deny:
        if rule.host == "*" and "tcp" in rule.protocols and direction in rule.directions:
            for lo, hi in rule.ports:
                allowed.difference_update(range(lo, hi + 1))
    return tuple(sorted(allowed))


# -- confinement ------------------------------------------------------------------------------


def confine(plan: LandlockPlan) -> None:
    """Confine this process and every process it starts from now on. Irreversible.

    Raises :class:`ProviderError` naming the step, the errno and the path when any step fails;
    the process may then be partly confined and must not go on to run the program.
    """
    reason = available()
    if reason is not None:
        raise ProviderError(reason)
    threads = _thread_count()
    if threads > 1:
        raise ProviderError(
            f"landlock: this process runs {threads} threads and Landlock confines only the calling "
            "one; confine before starting threads"
        )
    import ctypes

    abi = landlock_abi()
    create = _SYSCALL_NUMBERS[os.uname().machine]
    add_rule, restrict_self = create + 1, create + 2
    libc = ctypes.CDLL(None, use_errno=True)

    class RulesetAttr(ctypes.Structure):
        _fields_ = (
            ("handled_access_fs", ctypes.c_uint64),
            ("handled_access_net", ctypes.c_uint64),
            ("scoped", ctypes.c_uint64),
        )

    class PathBeneathAttr(ctypes.Structure):
        _pack_ = 1  # __attribute__((packed)): 12 bytes
        _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))

    class NetPortAttr(ctypes.Structure):
        _fields_ = (("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64))

    def fail(step: str, path: str | None = None) -> ProviderError:
        err = ctypes.get_errno()
        where = f" for '{path}'" if path is not None else ""
        import errno

        name = errno.errorcode.get(err, str(err))
        return ProviderError(f"landlock: {step} failed{where}: [{name}] {os.strerror(err)}")

    handled_fs = fs_rights(abi)
    handled_net = 0
    if abi >= MIN_ABI:
        if plan.bind_ports is not None:
            handled_net |= ACCESS_NET_BIND_TCP
        if plan.connect_ports is not None:
            handled_net |= ACCESS_NET_CONNECT_TCP
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
    attr = RulesetAttr(handled_fs, handled_net, scoped)
    size = 8 if abi < MIN_ABI else 16 if abi < 6 else 24

    ctypes.set_errno(0)
    ruleset = libc.syscall(
        ctypes.c_long(create), ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)
    )
    if ruleset < 0:
        raise fail("landlock_create_ruleset")
    try:
        grants = [
            *((p, _READ_DIR_RIGHTS) for p in plan.read_dirs),
            *((p, handled_fs) for p in plan.write_dirs),
            *((p, _READ_FILE_RIGHTS) for p in plan.read_files),
            *((p, _WRITE_FILE_RIGHTS) for p in plan.write_files),
        ]
        for path, rights in grants:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except FileNotFoundError:
                continue  # gone since the plan was made: nothing to grant
            except OSError as exc:
                raise ProviderError(
                    f"landlock: opening failed for '{path}': [{exc.errno}] {exc.strerror}"
                ) from None
            try:
                if not _is_dir(fd):
                    rights &= _FILE_RIGHTS
                beneath = PathBeneathAttr(rights & handled_fs, fd)
                ctypes.set_errno(0)
                done = libc.syscall(
                    ctypes.c_long(add_rule),
                    ctypes.c_long(ruleset),
                    ctypes.c_long(RULE_PATH_BENEATH),
                    ctypes.byref(beneath),
                    ctypes.c_long(0),
                )
                if done < 0:
                    raise fail("landlock_add_rule (path)", path)
            finally:
                os.close(fd)

        ports: dict[int, int] = {}
        if handled_net & ACCESS_NET_BIND_TCP:
            for port in plan.bind_ports or ():
                ports[port] = ports.get(port, 0) | ACCESS_NET_BIND_TCP
        if handled_net & ACCESS_NET_CONNECT_TCP:
            for port in plan.connect_ports or ():
                ports[port] = ports.get(port, 0) | ACCESS_NET_CONNECT_TCP
        for port, rights in sorted(ports.items()):
            net = NetPortAttr(rights, port)
            ctypes.set_errno(0)
            done = libc.syscall(
                ctypes.c_long(add_rule),
                ctypes.c_long(ruleset),
                ctypes.c_long(RULE_NET_PORT),
                ctypes.byref(net),
                ctypes.c_long(0),
            )
            if done < 0:
                raise fail("landlock_add_rule (port)", f"tcp port {port}")

        ctypes.set_errno(0)
        if libc.prctl(
            _PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)
        ):
            raise fail("prctl(PR_SET_NO_NEW_PRIVS)")
        ctypes.set_errno(0)
        if libc.syscall(ctypes.c_long(restrict_self), ctypes.c_long(ruleset), ctypes.c_long(0)) < 0:
            raise fail("landlock_restrict_self")
    finally:
        os.close(ruleset)
    from .seccomp import install, landlock_filter

    try:  # what Landlock does not see: UNIX sockets, other protocols, io_uring, SysV IPC
        install(libc, landlock_filter(unix_sockets=plan.unix_sockets))
    except OSError as exc:
        raise ProviderError(f"landlock: installing the seccomp filter failed: {exc}") from None


def _is_dir(fd: int) -> bool:
    import stat

    return stat.S_ISDIR(os.fstat(fd).st_mode)


def _thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        threading = sys.modules.get("threading")
        return int(threading.active_count()) if threading is not None else 1
