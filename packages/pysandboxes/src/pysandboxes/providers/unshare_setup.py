"""The ``unshare`` provider: util-linux ``unshare`` makes the namespaces, this module the view.

``unshare --user --map-current-user --mount --pid --fork --net --ipc --uts --cgroup`` starts the
sandboxed interpreter; before anything else, that interpreter calls :func:`enter_if_asked`,
which builds the same view as bubblewrap would (see ``namespaces.py``) with the raw system calls:
a tmpfs root, read-only and writable bind mounts, a private ``/tmp``, a minimal ``/dev``, a
``/proc`` of the new PID namespace, ``pivot_root`` into it; then it drops every capability, sets
``no_new_privs`` and installs the seccomp filter. One interpreter, no helper binary of ours.

The view travels in a memfd whose number is in ``PYSANDBOXES_NS_VIEW``.
"""

from __future__ import annotations

import contextlib
import os

from ..errors import ProviderError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .namespaces import View

VIEW_ENV = "PYSANDBOXES_NS_VIEW"

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2
PR_SET_NO_NEW_PRIVS = 38
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
_DEVICES = ("null", "zero", "full", "random", "urandom", "tty")


def unshare_argv(
    view: View, *, seccomp_fd: int, info_fd: int | None
) -> tuple[list[str], dict[str, str], int]:
    """util-linux unshare's command line, the variable to add to its environment, and the
    descriptor to pass: the view and the filter go in inherited memfds."""
    import json

    from .namespaces import _which

    binary = _which("unshare")
    if binary is None:
        raise ProviderError("os-sandbox=unshare cannot start: util-linux's unshare is not installed")
    data = view_data(view, seccomp_fd)
    fd = os.memfd_create("pysandboxes-view", 0)
    os.write(fd, json.dumps(data).encode())
    os.lseek(fd, 0, os.SEEK_SET)
    os.set_inheritable(fd, True)
    del info_fd  # unshare has no --info-fd: signals go to unshare, which passes SIGTERM on
    return (
        [
            binary,
            "--user",
            "--map-current-user",
            "--mount",
            "--pid",
            "--fork",
            "--kill-child=SIGTERM",
            "--net",
            "--ipc",
            "--uts",
            "--cgroup",
        ],
        {VIEW_ENV: str(fd)},
        fd,
    )


def view_data(view: View, seccomp_fd: int) -> dict[str, Any]:
    """What :func:`_enter` needs, as plain data (it crosses an exec as JSON)."""
    return {
        "read_dirs": sorted(set(view.read_dirs)),
        "read_files": sorted(set(view.read_files)),
        "write_dirs": sorted(set(view.write_dirs)),
        "rebound": view.rebound,
        "masked_dirs": view.masked_dirs,
        "masked_files": view.masked_files,
        "symlinks": view.symlinks,
        "hosts_file": view.hosts_file,
        "anyip_families": list(view.anyip_families),
        "cwd": view.cwd,
        "seccomp_fd": seccomp_fd,
        "hostname": view.hostname,
        "proc": view.proc,
    }


CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000


def enter_in_process(view: View, seccomp_fd: int) -> None:
    """``os-sandbox=unshare`` without util-linux ``unshare``: this (single-threaded) process
    makes the namespaces itself, forks the namespace's init, which builds the view and forks
    the process that goes on (returns there, as PID 2: the caller then starts the program's
    fresh interpreter). The processes above it wait and exit as the program did; they never
    return."""
    import signal

    libc = _libc()
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID
    if libc.unshare(flags | CLONE_NEWCGROUP) != 0:
        _check(libc.unshare(flags), "unshare")
    _map_ids((uid, gid), (uid, gid))
    for number in (signal.SIGINT, signal.SIGQUIT):  # the terminal's: for the program only
        signal.signal(number, signal.SIG_IGN)
    pid = os.fork()  # the first child of a new PID namespace is its init
    if pid != 0:
        _wait_and_exit(pid)
    try:
        _enter(view_data(view, seccomp_fd))
    except OSError as exc:
        raise ProviderError(f"os-sandbox=unshare cannot build the sandbox: {exc}") from None
    become_init()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def _map_ids(inside: tuple[int, int], outside: tuple[int, int]) -> None:
    """Right after unshare(CLONE_NEWUSER): the host's ``outside`` uid and gid (read before the
    unshare) appear as ``inside``; no supplementary groups."""
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"{inside[0]} {outside[0]} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"{inside[1]} {outside[1]} 1")


def _wait_and_exit(pid: int, *, reap_all: bool = False) -> None:
    """Pass SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 on to ``pid``, wait for it (reaping every
    other child on the way when ``reap_all``: an init collects the orphans of its namespace),
    and exit as it did: its status, or 128 + the signal that ended it. Never returns."""
    import signal

    for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(number, lambda signum, frame: _pass_on(pid, signum))
    while True:
        try:
            waited, status = os.waitpid(-1 if reap_all else pid, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            os._exit(1)
        if waited == pid:
            code = os.waitstatus_to_exitcode(status)
            os._exit(code if code >= 0 else 128 - code)


def enter_if_asked() -> None:
    """In the interpreter unshare started: build the view and lock it (see the module doc)."""
    raw = os.environ.pop(VIEW_ENV, None)
    if raw is None:
        return
    import json

    with os.fdopen(int(raw), "rb") as f:
        data = json.loads(f.read())
    try:
        _enter(data)
    except OSError as exc:
        raise ProviderError(f"os-sandbox=unshare cannot build the sandbox: {exc}") from None
    become_init()


def init_if_first() -> None:
    """A fresh interpreter that is PID 1 of its namespace (bwrap ``--as-pid-1``) becomes its init
    (:func:`become_init`); the child goes on."""
    if os.getpid() == 1:
        become_init()


def become_init() -> None:
    """This process is PID 1 of the new PID namespace, which ignores every signal it has no
    handler for (SIGTERM included). So fork: the child goes on and runs the program as PID 2;
    this process stays PID 1, reaps orphans, passes SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 on
    (SIGINT and SIGQUIT come from the terminal to the program itself) and exits as the program
    did.

    PID 1 is made non-dumpable first: the program (same user, no capability) can then neither
    read its memory (``/proc/1/mem``), nor its environment block (``/proc/1/environ``), nor
    trace it. Under ``os-sandbox=unshare`` it is a fork of python-sb, which held the host's
    whole environment. The child is made dumpable again (its own ``/proc/self`` stays its)."""
    import signal

    from .._native import C

    c = C()
    if c.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise ProviderError("the sandbox's init cannot be made non-dumpable (prctl PR_SET_DUMPABLE)")
    pid = os.fork()
    if pid == 0:
        c.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
        return
    for number in (signal.SIGINT, signal.SIGQUIT):
        signal.signal(number, signal.SIG_IGN)
    _wait_and_exit(pid, reap_all=True)


def _pass_on(pid: int, signum: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, signum)


_LIBC: list[Any] = []


def _libc() -> Any:
    if not _LIBC:
        import ctypes

        _LIBC.append(ctypes.CDLL(None, use_errno=True))
    return _LIBC[0]


def _check(result: int, what: str) -> None:
    if result != 0:
        import ctypes

        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(
    source: str | None, target: str, fstype: str | None, flags: int, options: str | None = None
) -> None:
    import ctypes

    _check(
        _libc().mount(
            source.encode() if source else None,
            target.encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            options.encode() if options else None,
        ),
        f"mount {source or fstype} on {target}",
    )


def _locked_flags(path: str) -> int:
    """The flags of ``path``'s mount that a read-only remount in a user namespace must keep."""
    st = os.statvfs(path)
    flags = 0
    for bit, mount_bit in ((os.ST_NOSUID, MS_NOSUID), (os.ST_NODEV, MS_NODEV), (os.ST_NOEXEC, MS_NOEXEC)):
        if st.f_flag & bit:
            flags |= mount_bit
    return flags


def _bind(source: str, target: str, *, readonly: bool) -> None:
    """Bind ``source`` on ``target`` (created: a directory, or an empty file), read-only or not."""
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.path.exists(target):
            open(target, "w").close()
    _mount(source, target, None, MS_BIND | MS_REC)
    if readonly:
        _mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | _locked_flags(source))


def _enter(data: dict[str, Any]) -> None:
    # imported while the host's root is still there (its bytecode cache among it)
    from .netsetup import _local_default_route, _loopback_up

    libc = _libc()
    mount, bind = _mount, _bind

    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    os.mkdir("/tmp/newroot")
    os.mkdir("/tmp/oldroot")
    _check(libc.syscall(155, b"/tmp", b"/tmp/oldroot"), "pivot_root")  # pivot_root(2)
    os.chdir("/")
    old, new = "/oldroot", "/newroot"
    mount("tmpfs", new, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    # the private /tmp first: the binds of files under /tmp go on top of it
    os.makedirs(new + "/tmp", exist_ok=True)
    mount("tmpfs", new + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    for target, link in data["symlinks"]:
        os.symlink(target, new + link)
    for path in data["read_dirs"]:
        bind(old + path, new + path, readonly=True)
    for path in data["read_files"]:
        bind(old + path, new + path, readonly=True)
    for path in data["write_dirs"]:
        bind(old + path, new + path, readonly=False)
    for path, writable in data["rebound"]:
        bind(old + path, new + path, readonly=not writable)
    for path in data["masked_dirs"]:
        os.makedirs(new + path, exist_ok=True)
        mount("tmpfs", new + path, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "mode=0755")
    for path in data["masked_files"]:
        bind(old + "/dev/null", new + path, readonly=True)
    if data.get("hosts_file"):
        bind(old + data["hosts_file"], new + "/etc/hosts", readonly=True)
    os.makedirs(new + "/dev", exist_ok=True)
    mount("tmpfs", new + "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755")
    for name in _DEVICES:
        if os.path.exists(f"{old}/dev/{name}"):
            bind(f"{old}/dev/{name}", f"{new}/dev/{name}", readonly=False)
    for name, target in (
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
    ):
        os.symlink(target, f"{new}/dev/{name}")
    os.symlink("/proc/self/fd/2", f"{new}/dev/stderr")
    if data.get("proc", True):
        os.makedirs(new + "/proc", exist_ok=True)
        mount("proc", new + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.makedirs(new + data["cwd"], exist_ok=True)
    os.mkdir(new + "/.oldroot")
    _check(libc.syscall(155, new.encode(), (new + "/.oldroot").encode()), "pivot_root")
    os.chdir("/")
    _check(libc.umount2(b"/.oldroot", MNT_DETACH), "umount the host's root")
    os.rmdir("/.oldroot")
    os.chdir(data["cwd"])
    hostname = str(data.get("hostname") or "sandbox").encode()
    libc.sethostname(hostname, len(hostname))
    # the network, while the capabilities are still there (see netbroker.py)
    _loopback_up()
    # the forwarder may listen on ports below 1024 (443...) once the capabilities are gone
    if os.path.exists("/proc/sys/net/ipv4/ip_unprivileged_port_start"):  # unshare.proc=none: no /proc
        with open("/proc/sys/net/ipv4/ip_unprivileged_port_start", "w") as f:
            f.write("0")
    for family in data.get("anyip_families", ()):
        import socket

        _local_default_route(socket.AF_INET6 if family == 6 else socket.AF_INET)
    _drop_capabilities(libc)
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    _seccomp(libc, data["seccomp_fd"])


def _drop_capabilities(libc: Any) -> None:
    import ctypes

    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [
            ("effective", ctypes.c_uint32),
            ("permitted", ctypes.c_uint32),
            ("inheritable", ctypes.c_uint32),
        ]

    header = Header(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (Data * 2)()
    _check(libc.capset(ctypes.byref(header), data), "drop capabilities")


def _seccomp(libc: Any, fd: int) -> None:
    from .seccomp import install

    with os.fdopen(fd, "rb") as f:
        install(libc, f.read())
