"""The ``qemu`` provider's agent: process 1 of the guest.

The guest's ``/init`` (busybox, in the initramfs) loads the virtio and 9p modules, mounts the
tree the launcher shares as the new root and starts this agent there with the host's own
interpreter. The agent

1. replaces ``/dev`` with a minimal one (``null``, ``zero``, ``full``, ``random``, ``urandom``,
   ``tty``) once it holds the link's port, mounts a private ``/tmp``, brings the loopback up
   and sets the host name and the routes the ``net=`` rules need;
2. says hello on the link and waits for what to run: command line, environment, working
   directory and the descriptors to give the program (at the numbers they had on the host);
3. starts the program with every capability dropped, ``no_new_privs`` and the same seccomp
   filter as ``bwrap``/``unshare``, relays its standard streams and the signals the host sends;
4. once it ends, stops whatever it left behind, reports its status and powers the guest off.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: the virtio-serial port of the link (named by the launcher's QEMU command line)
PORT_NAME = "pysandboxes"
_DEVICES = {
    "null": (1, 3),
    "zero": (1, 5),
    "full": (1, 7),
    "random": (1, 8),
    "urandom": (1, 9),
    "tty": (5, 0),
}


def _power_off() -> None:
    from .unshare_setup import _libc

    with contextlib.suppress(Exception):
        os.sync()
    with contextlib.suppress(Exception):
        _libc().reboot(0x4321FEDC)  # LINUX_REBOOT_CMD_POWER_OFF
    os._exit(0)


def _prepare() -> int:
    """Mounts, devices and network; returns the link's descriptor."""
    from .unshare_setup import MS_NODEV, MS_NOEXEC, MS_NOSUID, _check, _libc
    from .unshare_setup import _mount as mount

    libc = _libc()
    port = _port_from_dev()
    fd = os.open(port, os.O_RDWR | os.O_CLOEXEC)
    # a minimal /dev: the devtmpfs had every device of the machine (the link's port among them)
    mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755")
    for name, (major, minor) in _DEVICES.items():
        os.mknod(f"/dev/{name}", 0o20666, os.makedev(major, minor))
        os.chmod(f"/dev/{name}", 0o666)
    for name, target in (
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
    ):
        os.symlink(target, f"/dev/{name}")
    os.symlink("/proc/self/fd/2", "/dev/stderr")
    os.mkdir("/dev/shm")
    mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    # a private /tmp, with what the view shares under /tmp (the program's directory, say) bound
    # back on top of it
    from .unshare_setup import MNT_DETACH, MS_BIND, MS_REC

    os.mkdir("/dev/.tmp")
    mount("/tmp", "/dev/.tmp", "none", MS_BIND | MS_REC)
    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    for name in os.listdir("/dev/.tmp"):
        source, target = f"/dev/.tmp/{name}", f"/tmp/{name}"
        if os.path.isdir(source) and not os.path.islink(source):
            os.mkdir(target)
        elif os.path.islink(source):
            os.symlink(os.readlink(source), target)
            continue
        else:
            open(target, "w").close()
        mount(source, target, "none", MS_BIND | MS_REC)
    _check(libc.umount2(b"/dev/.tmp", MNT_DETACH), "umount /dev/.tmp")
    os.rmdir("/dev/.tmp")
    from .netsetup import _loopback_up

    _loopback_up()
    with contextlib.suppress(OSError), open("/proc/sys/net/ipv4/ip_unprivileged_port_start", "w") as f:
        f.write("0")
    return fd


def _port_from_dev() -> str:
    """The link's port, found through a sysfs mounted for the moment under /dev (the init
    unmounted /sys; the program never sees a sysfs)."""
    from .unshare_setup import MNT_DETACH, MS_NODEV, MS_NOEXEC, MS_NOSUID, _libc
    from .unshare_setup import _mount as mount

    os.makedirs("/dev/.sys", exist_ok=True)
    mount("sysfs", "/dev/.sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    try:
        base = "/dev/.sys/class/virtio-ports"
        for _attempt in range(500):
            with contextlib.suppress(OSError):
                for name in os.listdir(base):
                    with open(f"{base}/{name}/name") as f:
                        if f.read().strip() == PORT_NAME:
                            return f"/dev/{name}"
            import time

            time.sleep(0.01)
        raise OSError("the link's virtio port did not appear")
    finally:
        _libc().umount2(b"/dev/.sys", MNT_DETACH)


class Agent:
    def __init__(self, fd: int) -> None:
        from .vmlink import Link

        self.run_message = threading.Event()
        self.message: dict[str, Any] = {}
        self.fds: list[int] = []
        self.pid = 0
        self.link = Link(fd, first_id=1000, on_control=self._control, on_closed=self._closed)

    def _control(self, message: dict[str, Any], fds: list[int]) -> None:
        if "run" in message:
            self.message = message["run"]
            self.fds = fds
            self.run_message.set()
            return
        for fd in fds:
            os.close(fd)
        if "signal" in message and self.pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, int(message["signal"]))

    def _closed(self) -> None:
        if self.pid:  # the host is gone: nobody waits for the program any more
            with contextlib.suppress(ProcessLookupError):
                os.kill(-1, signal.SIGKILL)
        _power_off()

    def serve(self) -> None:
        self.link.start()
        import time

        self.link.send_control({"hello": {"uptime": round(time.clock_gettime(time.CLOCK_BOOTTIME), 2)}})
        self.run_message.wait()
        run = self.message
        report: dict[str, Any]
        try:
            self._network(run)
            report = {"exit": self._run(run)}
        except Exception as exc:  # the host shows it and ends with the sandbox's failure status
            report = {"exit": 125, "error": f"the guest could not run the program: {exc}"}
        with contextlib.suppress(Exception):
            self.link.send_control(report)
            # the host stops the machine once it has the report: powering off first could lose it
            self.link.closed.wait(10)
        _power_off()

    def _network(self, run: dict[str, Any]) -> None:
        import socket

        from .unshare_setup import _libc

        hostname = str(run.get("hostname") or "sandbox").encode()
        _libc().sethostname(hostname, len(hostname))
        if run.get("anyip_families"):
            from .netsetup import _local_default_route

            for family in run["anyip_families"]:
                _local_default_route(socket.AF_INET6 if family == 6 else socket.AF_INET)

    def _run(self, run: dict[str, Any]) -> int:
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        stderr_r, stderr_w = os.pipe()
        seccomp = bytes.fromhex(run["seccomp"])
        targets = [int(n) for n in run["fds"]]
        gate_r, gate_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(gate_w)
                os.read(gate_r, 1)  # until the agent has put this process in its cgroup
                os.close(gate_r)
                self._exec(run, (stdin_r, stdout_w, stderr_w), targets, seccomp)
            except BaseException as exc:
                import traceback

                for fd in (2, stderr_w):  # 2 once the descriptors are in place
                    with contextlib.suppress(OSError):
                        os.write(fd, f"python-sb: qemu: cannot start the program: {exc}\n".encode())
                        os.write(fd, traceback.format_exc().encode())
                        break
            os._exit(127)
        self.pid = pid
        os.close(gate_r)
        try:
            _cgroup(pid, run.get("cgroup") or {})
        finally:
            os.write(gate_w, b"x")
            os.close(gate_w)
        for fd in (stdin_r, stdout_w, stderr_w, *self.fds):
            os.close(fd)
        done = [threading.Event(), threading.Event()]
        self.link.attach(stdout_r, channel=2, write=False, on_end=done[0].set)
        self.link.attach(stderr_r, channel=3, write=False, on_end=done[1].set)
        self.link.attach(stdin_w, channel=1, read=False)
        self.link.send_control({"started": pid})
        status = 0
        while True:  # process 1: every orphan of the guest comes here
            try:
                child, raw = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            if child == pid:
                status = os.waitstatus_to_exitcode(raw)
                break
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)  # what the program left behind
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, 0)[0] > 0:
                pass
        for event in done:
            event.wait(10)
        return status  # negative: killed by that signal

    def _exec(
        self, run: dict[str, Any], stdio: tuple[int, int, int], targets: list[int], seccomp: bytes
    ) -> None:
        from .seccomp import install
        from .unshare_setup import PR_SET_NO_NEW_PRIVS, _check, _drop_capabilities, _libc

        os.setsid()
        # the descriptors the program inherits, at the numbers they had on the host
        staged = [os.dup(fd) for fd in (*stdio, *self.fds)]
        above = max([*targets, *staged, 2]) + 1  # out of the way of every target
        moved = [fcntl_dupfd(fd, above) for fd in staged]
        for fd in staged:
            os.close(fd)
        for number, fd in zip((0, 1, 2, *targets), moved, strict=True):
            os.dup2(fd, number, inheritable=True)
        for fd in moved:
            os.close(fd)
        keep = {0, 1, 2, *targets}
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            if fd not in keep:
                with contextlib.suppress(OSError):
                    os.close(fd)
        os.chdir(run["cwd"])
        signal.pthread_sigmask(signal.SIG_SETMASK, ())
        for number in range(1, signal.NSIG):
            with contextlib.suppress(OSError, ValueError, RuntimeError):
                if number not in (signal.SIGKILL, signal.SIGSTOP):
                    signal.signal(number, signal.SIG_DFL)
        libc = _libc()
        _drop_capabilities(libc)
        _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        install(libc, seccomp)
        os.execve(run["argv"][0], run["argv"], run["env"])


def _cgroup(pid: int, wanted: dict[str, int]) -> None:
    """Put ``pid`` in a cgroup of the guest with the limits ``wanted`` (``pids.max``,
    ``memory.max``). The hierarchy is mounted for the moment only: the program never sees it."""
    if not wanted:
        return
    from .unshare_setup import MNT_DETACH, MS_NODEV, MS_NOEXEC, MS_NOSUID, _libc, _mount

    libc = _libc()
    base = "/dev/.cgroup"
    os.mkdir(base)
    _mount("cgroup2", base, "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    try:
        with open(f"{base}/cgroup.subtree_control", "w") as f:
            f.write(" ".join(f"+{key.split('.')[0]}" for key in wanted))
        os.mkdir(f"{base}/program")
        for key, value in wanted.items():
            with open(f"{base}/program/{key}", "w") as f:
                f.write(str(value))
        if "memory.max" in wanted:
            with contextlib.suppress(OSError), open(f"{base}/program/memory.swap.max", "w") as f:
                f.write("0")
        with open(f"{base}/program/cgroup.procs", "w") as f:
            f.write(str(pid))
    finally:
        libc.umount2(base.encode(), MNT_DETACH)
        os.rmdir(base)


def fcntl_dupfd(fd: int, minimum: int) -> int:
    import fcntl

    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, minimum)


def main() -> None:
    try:
        fd = _prepare()
    except Exception as exc:  # no link: the console is all there is
        with contextlib.suppress(OSError):
            print(f"pysandboxes-guest: {exc}", file=sys.stderr, flush=True)
        _power_off()
        return
    Agent(fd).serve()
