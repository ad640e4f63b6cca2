"""The ``qemu`` provider's launcher: a host process standing for the program in the guest.

Started as ``python -I -S -c <boot> ROOT SETTINGS_FD -- program argv...`` with the program's
environment, working directory and standard streams, and with every descriptor the program must
inherit (partial mode's channel, the network broker's socket, hand-off files). It

1. enters a user and mount namespace of its own and assembles there, on a tmpfs, the tree the
   guest may see (the sandbox's view: read-only binds, writable binds, masks);
2. starts QEMU on that tree, which it shares as the guest's root over virtio-9p, with one
   virtio-serial port for the link (:mod:`.vmlink`);
3. once the guest's agent is up, sends it the program's command line, environment and
   descriptors, then relays standard input, output and error and the signals it receives
   (SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2);
4. exits as the program did: its status, or killed by the same signal.

A guest that is not ready within the start timeout, or a QEMU that dies, ends the launcher
with a message naming the cause and the last lines of the guest's console.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import subprocess
import sys
import threading
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: exit status when the sandbox itself fails (not the program)
EXIT_FAILURE = 125
_FORWARDED = (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)


def _say(text: str) -> None:
    with contextlib.suppress(OSError):
        os.write(2, f"python-sb: qemu: {text}\n".encode())


def main() -> None:
    _root, settings_fd, *rest = sys.argv[1:]
    if not rest or rest[0] != "--" or len(rest) < 2:
        _say("usage: qemu_launch ROOT SETTINGS_FD -- PROGRAM [ARGS...]")
        os._exit(2)
    program = rest[1:]
    # a signal that comes while the view is assembled waits for the handlers of Launcher.run
    # (which remove the staging directory again)
    signal.pthread_sigmask(signal.SIG_BLOCK, _FORWARDED)
    with os.fdopen(int(settings_fd), "rb") as f:
        settings = json.loads(f.read())
    carried = _inherited_fds()
    try:
        stage = _assemble(settings["view"])
    except OSError as exc:
        _say(f"cannot assemble the guest's files: {exc}")
        os._exit(EXIT_FAILURE)
    try:
        code = Launcher(settings, program, carried, stage).run()
    finally:
        _dismantle(stage)
    if code < 0:  # the program was killed by a signal in the guest: the launcher dies of the same
        _die_of(-code)
    os._exit(code)


def _inherited_fds() -> list[int]:
    fds = []
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2:
            with contextlib.suppress(OSError):
                os.fstat(fd)
                fds.append(fd)
    return sorted(fds)


# -- the guest's files -------------------------------------------------------------------------


def _assemble(view: dict[str, Any]) -> str:
    """A user and mount namespace for this process, and in it, on a tmpfs, the sandbox's view:
    the directory QEMU shares as the guest's root."""
    import tempfile

    from .unshare_setup import (
        CLONE_NEWNS,
        CLONE_NEWUSER,
        MS_BIND,
        MS_NODEV,
        MS_NOSUID,
        MS_PRIVATE,
        MS_RDONLY,
        MS_REC,
        MS_REMOUNT,
        _bind,
        _check,
        _libc,
        _map_ids,
        _mount,
    )

    _sweep(tempfile.gettempdir())
    stage = tempfile.mkdtemp(prefix=f"pysandboxes-guest-{os.getpid()}-")
    uid, gid = os.getuid(), os.getgid()
    libc = _libc()
    _check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare a user and mount namespace")
    _map_ids((0, 0), (uid, gid))  # root inside: QEMU serves the user's files as the guest's own
    mount, bind = _mount, _bind
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("tmpfs", stage, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    for target, link in view["symlinks"]:
        os.symlink(target, stage + link)
    for path in view["read_dirs"]:
        bind(path, stage + path, readonly=True)
    for path in view["read_files"]:
        bind(path, stage + path, readonly=True)
    for path in view["write_dirs"]:
        bind(path, stage + path, readonly=False)
    for path, writable in view["rebound"]:  # QEMU's renameat of a mount point: EBUSY, as elsewhere
        bind(path, stage + path, readonly=not writable)
    for path in view["masked_dirs"]:
        os.makedirs(stage + path, exist_ok=True)
        mount("tmpfs", stage + path, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "mode=0755")
    for path in view["masked_files"]:
        bind("/dev/null", stage + path, readonly=True)
    if view.get("hosts_file"):
        bind(view["hosts_file"], stage + "/etc/hosts", readonly=True)
    for name in ("dev", "proc", "tmp"):
        os.makedirs(f"{stage}/{name}", exist_ok=True)
    os.makedirs(stage + view["cwd"], exist_ok=True)
    # the guest writes nowhere but in the writable binds
    mount(None, stage, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    return stage


def _sweep(base: str) -> None:
    """Remove the empty staging directories of launchers that were killed (SIGKILL leaves them)."""
    with contextlib.suppress(OSError):
        for name in os.listdir(base):
            parts = name.split("-")
            stale = len(parts) == 4 and parts[2].isdigit() and not os.path.exists(f"/proc/{parts[2]}")
            if name.startswith("pysandboxes-guest-") and stale:
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.join(base, name))


def _dismantle(stage: str) -> None:
    from .unshare_setup import MNT_DETACH, _libc

    with contextlib.suppress(Exception):
        _libc().umount2(stage.encode(), MNT_DETACH)
    with contextlib.suppress(OSError):
        os.rmdir(stage)


# -- QEMU and the link -------------------------------------------------------------------------


class Launcher:
    def __init__(self, settings: dict[str, Any], program: list[str], carried: list[int], stage: str) -> None:
        self.settings = settings
        self.program = program
        self.carried = carried
        self.stage = stage
        self.events: dict[str, threading.Event] = {
            name: threading.Event() for name in ("hello", "exit", "closed")
        }
        self.status: dict[str, Any] = {}
        self.link: Any = None
        self.qemu: subprocess.Popen[bytes] | None = None
        self.console: list[bytes] = []
        self.outputs = [threading.Event(), threading.Event()]
        self.failure: str | None = None

    # -- QEMU ---------------------------------------------------------------------------------

    def _argv(self, accel: str, link_fd: int) -> list[str]:
        s = self.settings
        # the TSC's frequency is given: calibrating it against the PIT fails now and then under TCG
        # (and the guest then waits forever for a timer)
        append = f"console=ttyS0 panic=-1 tsc_early_khz={_tsc_khz()} tsc=reliable no_timer_check "
        append += "" if s["show_boot_console"] else "quiet loglevel=1 "
        append += f"PYSB_PYTHON={s['python']} PYSB_ROOT={s['root']}"
        if s.get("cached"):
            append += f" PYSB_CACHED={':'.join(s['cached'])}"
        argv = [
            s["qemu"],
            "-M",
            "microvm,acpi=on",
            "-accel",
            accel,
            *(["-cpu", "max"] if accel == "tcg" else []),
            "-m",
            f"{s['memory_mb']}M",
            "-smp",
            "1",
            "-nodefaults",
            "-no-user-config",
            "-nographic",
            "-no-reboot",
            "-kernel",
            s["kernel"],
            "-initrd",
            s["initramfs"],
            "-append",
            append,
            "-serial",
            "stdio",
            "-fsdev",
            f"local,id=root,path={self.stage},security_model=none",
            "-device",
            "virtio-9p-device,fsdev=root,mount_tag=pysandboxes",
            "-fsdev",
            f"local,id=cached,path={self.stage},security_model=none,readonly=on",
            "-device",
            "virtio-9p-device,fsdev=cached,mount_tag=pysandboxes-cached",
            "-chardev",
            f"socket,id=link,fd={link_fd}",
            "-device",
            "virtio-serial-device,max_ports=2",
            "-device",
            "virtserialport,chardev=link,name=pysandboxes",
        ]
        return argv

    def _start(self, accel: str) -> None:
        import socket

        from .vmlink import Link

        for event in self.events.values():
            event.clear()
        mine, theirs = socket.socketpair()
        attempt = self.attempt = getattr(self, "attempt", 0) + 1
        # the link of a guest stopped for a retry (KVM to TCG) closes late: its end is not ours
        self.link = Link(
            mine.detach(),
            first_id=1001,
            on_control=self._control,
            on_closed=lambda: self._closed() if attempt == self.attempt else None,
        )
        # a signal that comes while QEMU is started waits until self.qemu holds it: the handler
        # then stops it and waits for it (handled in between, it found no QEMU and left one to
        # die of its PDEATHSIG after the launcher, still running when the launcher was gone)
        signal.pthread_sigmask(signal.SIG_BLOCK, _FORWARDED)
        try:
            self.qemu = subprocess.Popen(
                self._argv(accel, theirs.fileno()),
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                # the console (-serial stdio) goes to stderr: stdout is the program's
                stdout=2 if self.settings["show_boot_console"] else subprocess.PIPE,
                stderr=subprocess.PIPE,
                preexec_fn=functools.partial(_detach_and_follow, os.getpid()),
            )
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _FORWARDED)
        theirs.close()
        self.console = []
        for stream in (self.qemu.stdout, self.qemu.stderr):
            if stream is not None:
                threading.Thread(target=self._keep_console, args=(stream,), daemon=True).start()
        self.link.start()

    def _keep_console(self, stream: Any) -> None:
        for line in stream:
            self.console.append(line)
            del self.console[:-40]

    def _stop_qemu(self) -> None:
        qemu, self.qemu = self.qemu, None
        if qemu is not None:
            with contextlib.suppress(ProcessLookupError):
                qemu.kill()
            qemu.wait()

    def _console_tail(self) -> str:
        lines = b"".join(self.console).decode("utf-8", "replace").strip().splitlines()[-12:]
        return "\n".join(f"  | {line}" for line in lines)

    def _wait_ready(self, accel: str) -> bool:
        """Wait for the guest's hello; False when it did not come in time (QEMU is stopped)."""
        s = self.settings
        from .qemu import DEFAULT_START_TIMEOUT

        timeout = s["start_timeout"] or DEFAULT_START_TIMEOUT[accel]
        deadline = time.monotonic() + timeout
        # a guest that would time out anyway is not taken for a KVM that hangs
        probe = time.monotonic() + _kvm_probe() if accel == "kvm" and _kvm_probe() < timeout else None
        while not self.events["hello"].wait(0.05):
            qemu = self.qemu
            if qemu is not None and qemu.poll() is not None:
                self.failure = f"QEMU stopped before the guest was ready (status {qemu.returncode})"
                return False
            now = time.monotonic()
            if probe is not None and now > probe:
                self.failure = "kvm-probe"
                return False
            if now > deadline:
                self.failure = (
                    f"the guest was not ready within {timeout:g} s (qemu.start_timeout); "
                    "raise qemu.start_timeout, or check `qemu.show_boot_console=true`"
                )
                return False
        return True

    # -- the run ------------------------------------------------------------------------------

    def run(self) -> int:
        for number in _FORWARDED:
            signal.signal(number, self._on_signal)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _FORWARDED)
        accel = self.settings["accel"]
        if self.settings["show_boot_console"]:
            _say(f"starting the guest under {accel.upper()} ({self.settings['accel_why']})")
        self.t0 = time.monotonic()
        self._start(accel)
        if not self._wait_ready(accel):
            self._stop_qemu()
            if self.failure == "kvm-probe":
                _say(
                    f"the guest did not start under KVM within {_kvm_probe():.0f} s: using TCG (software "
                    "emulation); this host is remembered until it reboots"
                )
                with contextlib.suppress(OSError):
                    os.makedirs(os.path.dirname(self.settings["kvm_marker"]), exist_ok=True)
                    open(self.settings["kvm_marker"], "w").close()
                self.failure = None
                accel = "tcg"
                self._start(accel)
                if not self._wait_ready(accel):
                    self._stop_qemu()
            if self.failure is not None:
                return self._fail(self.failure)
        return self._converse()

    def _fail(self, text: str) -> int:
        tail = self._console_tail()
        _say(text + (f"\n  the guest's console ended with:\n{tail}" if tail else ""))
        return EXIT_FAILURE

    def _converse(self) -> int:
        link = self.link
        # the guest's output channels exist before it can write on them
        for channel, fd in ((2, 1), (3, 2)):
            done = self.outputs[channel - 2]
            link.attach(os.dup(fd), channel=channel, read=False, on_end=done.set)
        message = {
            "run": {
                "argv": self.program,
                "env": dict(os.environ),
                "cwd": os.getcwd(),
                "fds": self.carried,
                "seccomp": self.settings["seccomp"],
                "hostname": self.settings["view"].get("hostname", "sandbox"),
                "anyip_families": self.settings["view"].get("anyip_families", []),
                "cgroup": self.settings.get("cgroup", {}),
            }
        }
        from .vmlink import LinkClosed

        try:
            link.send_control(message, self.carried)
        except LinkClosed:
            self._stop_qemu()
            return self._fail("the link to the guest closed before the program started")
        for fd in self.carried:
            with contextlib.suppress(OSError):
                os.close(fd)
        while not self.events["exit"].wait(0.1):
            if self.events["closed"].is_set() or (self.qemu is not None and self.qemu.poll() is not None):
                if self.events["exit"].wait(0.5):
                    break
                self._stop_qemu()
                return self._fail(self.status.get("error") or "the guest stopped before the program ended")
        for done in self.outputs:
            done.wait(5)
        self._stop_qemu()
        status = int(self.status["exit"])
        if "error" in self.status and status == EXIT_FAILURE:
            _say(self.status["error"])
        return status  # negative: the program was killed by that signal

    def _control(self, message: Any, fds: list[int]) -> None:
        for fd in fds:
            os.close(fd)
        # what the guest says is not trusted: a status is an int of the range of statuses
        if not isinstance(message, dict):
            return
        if "exit" in message and not (isinstance(message["exit"], int) and -64 <= message["exit"] <= 255):
            message = {
                "exit": EXIT_FAILURE,
                "error": f"the guest reported an invalid status {message['exit']!r}",
            }
        if "error" in message:
            message["error"] = str(message["error"])[:2000]
        if "hello" in message:
            if self.settings["show_boot_console"]:
                uptime = message["hello"].get("uptime")
                _say(
                    f"guest ready after {time.monotonic() - self.t0:.2f} s (its agent started {uptime} s after boot)"
                )
            self.events["hello"].set()
        elif "started" in message:  # the guest's end of standard input exists now
            with contextlib.suppress(OSError):
                self.link.attach(os.dup(0), channel=1, write=False)
        elif "exit" in message:
            self.status["exit"] = message["exit"]
            if message.get("error"):
                self.status["error"] = message["error"]
            self.events["exit"].set()
        elif "error" in message:
            self.status["error"] = message["error"]

    def _closed(self) -> None:
        self.events["closed"].set()

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self.events["hello"].is_set() and not self.events["exit"].is_set():
            with contextlib.suppress(Exception):
                self.link.send_control({"signal": signum})
            return
        # nothing runs yet: the launcher ends as the program would have
        self._stop_qemu()
        _dismantle(self.stage)
        _die_of(signum)


def _die_of(number: int) -> None:
    """End this process with the signal ``number`` (no core file), as the program ended."""
    import resource

    sys.stdout.flush()
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    with contextlib.suppress(ValueError, OSError, RuntimeError):
        if number not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(number, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, (number,))
    os.kill(os.getpid(), number)
    os._exit(128 + number)


def _detach_and_follow(parent: int) -> None:
    """In QEMU's process before exec: a session of its own (the terminal's Ctrl-C is for the
    program, not for QEMU), and death with the launcher (SIGKILLed by a timeout, say)."""
    import ctypes

    os.setsid()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _FORWARDED)  # blocked around the fork (_start)
    ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the launcher died before the line above
        os._exit(1)


def _tsc_khz() -> int:
    """The host's TSC frequency in kHz (the guest's TSC ticks with it under KVM and TCG)."""
    with contextlib.suppress(OSError, ValueError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("cpu MHz"):
                return int(float(line.split(":")[1]) * 1000)
    return 2_000_000


def _kvm_probe() -> float:
    from .qemu import KVM_PROBE

    return KVM_PROBE
