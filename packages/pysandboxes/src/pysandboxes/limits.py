"""Resource limits: CPU time, memory, processes, open files, file size, output, wall clock.

Enforced where native code cannot escape them:

* ``setrlimit`` in the confined process before any code of the program runs: ``RLIMIT_CPU``
  (``limit-cpu``; SIGXCPU, then SIGKILL one second later), ``RLIMIT_AS`` (``limit-memory``:
  an allocation beyond it fails, ``MemoryError`` in Python), ``RLIMIT_NPROC``
  (``limit-processes``; the kernel does not apply it to root), ``RLIMIT_NOFILE``
  (``limit-open-files``), ``RLIMIT_FSIZE`` (``limit-file-size``: a write beyond it fails with
  ``EFBIG``);
* a cgroup the sandbox creates for itself, where this host lets it (cgroup v2 with the
  controllers delegated, or v1 ``pids`` and ``memory`` hierarchies): ``pids.max`` bounds the
  processes of the whole tree, root included, and ``memory.max`` / ``memory.limit_in_bytes``
  its resident memory. Only cgroups created here are ever written, and they are removed at the
  end. Without cgroups the rlimits carry the limits (an INFO line says so);
* the supervising process (python-sb's parent side, or the host in partial mode) counts the
  output and the wall clock, and stops the whole process group.
"""

from __future__ import annotations

import contextlib
import os

from ._record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar

    from .rules.context import Rule
    from .rules.policy import Policy

#: exit status of a run stopped by ``timeout=`` (as GNU timeout) and by any other limit
EXIT_TIMEOUT = 124
EXIT_LIMIT = 125

#: partial mode: what a @sandbox call gets when the rule file says nothing
PARTIAL_DEFAULTS: dict[str, float | int] = {
    "limit-memory": 8 << 30,
    "limit-open-files": 4096,
    "limit-output": 100 << 20,
}

_LOGGER = "Pysandboxes"

#: the cgroup's memory limit is limit-memory plus this: the address-space limit (set on top of
#: what the interpreter has mapped) fails an allocation with MemoryError first, the cgroup kills
#: only what grows resident memory past it
CGROUP_HEADROOM = 256 << 20


class Limits(Record):
    """The limits of one sandbox: key -> value (None: unbounded), and the rule of each."""

    __slots__ = ("rules", "values")
    _defaults: ClassVar[dict[str, Any]] = {}
    values: dict[str, float | int | None]
    rules: dict[str, Rule | None]

    def __getitem__(self, key: str) -> Any:
        return self.values.get(key)

    def kernel(self) -> bool:
        """Something for setrlimit or a cgroup."""
        return any(self.values.get(k) for k in _RLIMITS)

    def supervised(self) -> bool:
        """Something only a supervising process can watch (output, wall clock), or a limit
        whose breach kills the process (CPU, memory under a cgroup): someone must report it."""
        return any(self.values.get(k) is not None for k in (*_RLIMITS, "limit-output", "timeout"))

    def shown(self, key: str) -> str:
        """``limit-memory=512M``, as written in the rules."""
        rule = self.rules.get(key)
        if rule is not None:
            return f"{key}={rule.value.strip()}"
        return f"{key}={_human(key, self.values.get(key))} (the default)"

    def where(self, key: str) -> str:
        """Where to change it: ``raise it in .py-sandboxes line 12``."""
        rule = self.rules.get(key)
        if rule is None:
            return f"set {key}= in the rule file to change it"
        origin = rule.origin
        if origin.is_file and origin.path:
            from .rules.origin import display_path

            return f"raise it in {display_path(origin.path)} line {origin.line}"
        if origin.source == "code":
            return f"raise it in the sandboxes() call ({key.replace('-', '_')}=)"
        return f"raise it on the command line (--{key}=)"

    def message(self, key: str, what: str, *, tool: str = "python-sb") -> str:
        verb = "timed out" if key == "timeout" else "stopped"
        return f"{tool}: {verb}: {self.shown(key)} exceeded ({what}); {self.where(key)}"


def _human(key: str, value: Any) -> str:
    if value is None:
        return "none"
    if key in ("limit-cpu", "timeout"):
        return f"{value:g}s"
    if key in ("limit-memory", "limit-file-size", "limit-output"):
        for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
            if value % size == 0:
                return f"{value // size}{unit}"
    return str(value)


_RLIMITS = ("limit-cpu", "limit-memory", "limit-processes", "limit-open-files", "limit-file-size")


def from_policy(policy: Policy, *, partial: bool = False) -> Limits:
    values: dict[str, float | int | None] = {}
    rules: dict[str, Rule | None] = {}
    for key, setting in policy.limits.items():
        value = setting.value
        if value is None and partial:
            value = PARTIAL_DEFAULTS.get(key)
        values[key] = value  # type: ignore[assignment]
        rules[key] = setting.rule
    values["timeout"] = policy.timeout.value  # type: ignore[assignment]
    rules["timeout"] = policy.timeout.rule
    return Limits(values=values, rules=rules)


def apply_rlimits(limits: Limits) -> None:
    """Set the rlimits of this process (inherited by what it starts). Lowering is always
    allowed; a hard limit is set too, so that the program cannot raise it back without
    privilege."""
    import resource

    def lower(which: int, value: int) -> None:
        _soft, hard = resource.getrlimit(which)
        new_hard = value if hard == resource.RLIM_INFINITY else min(hard, value)
        resource.setrlimit(which, (min(value, new_hard), new_hard))

    cpu = limits["limit-cpu"]
    if cpu:
        import math

        seconds = max(1, math.ceil(cpu))
        # SIGXCPU at the soft limit (reported), SIGKILL one second later if it is ignored
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))
    if limits["limit-memory"]:
        # on top of what the interpreter has already mapped (thread stacks and malloc arenas are
        # address space it reserves, not memory it uses): the program may add the limit
        lower(resource.RLIMIT_AS, int(limits["limit-memory"]) + _address_space())
    if limits["limit-processes"]:
        lower(resource.RLIMIT_NPROC, int(limits["limit-processes"]))
    if limits["limit-open-files"]:
        lower(resource.RLIMIT_NOFILE, int(limits["limit-open-files"]))
    if limits["limit-file-size"]:
        lower(resource.RLIMIT_FSIZE, int(limits["limit-file-size"]))


class _Status:
    fd: int | None = None


def open_status() -> None:
    """Open ``/proc/self/status`` now, while the OS provider still lets this process read it
    (landlock does not grant ``/proc/self``): :func:`apply_rlimits` reads it later."""
    if _Status.fd is None:
        try:
            _Status.fd = os.open("/proc/self/status", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            _Status.fd = None


def _address_space() -> int:
    """This process's mapped address space now (VmSize), in bytes; 0 when unknown."""
    try:
        if _Status.fd is not None:
            data = os.pread(_Status.fd, 65536, 0)
        else:
            with open("/proc/self/status", "rb") as f:
                data = f.read()
        for line in data.splitlines():
            if line.startswith(b"VmSize:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


# -- cgroups -----------------------------------------------------------------------------------


class Cgroup:
    """A cgroup this process created for one sandbox (pids and memory), or none.

    ``create()`` returns None with the reason logged when this host gives no writable
    hierarchy; nothing outside the directories created here is ever written.
    """

    _counter = 0

    #: created and not removed yet: removed at exit too (a thread removing one may be a daemon)
    live: ClassVar[set[Cgroup]] = set()

    def __init__(self, directories: dict[str, str], version: int) -> None:
        self.directories = directories  # controller -> directory created for this sandbox
        self.version = version
        if not Cgroup.live:
            import atexit

            atexit.register(_remove_live)
        Cgroup.live.add(self)

    @classmethod
    def create(cls, limits: Limits) -> Cgroup | None:
        wanted = {}
        if limits["limit-processes"]:
            wanted["pids"] = int(limits["limit-processes"])
        if limits["limit-memory"]:  # a backstop for resident memory: the interpreter's own
            wanted["memory"] = int(limits["limit-memory"]) + CGROUP_HEADROOM  # (see apply_rlimits)
        if not wanted:
            return None
        cls._counter += 1
        name = f"pysandboxes-{os.getpid()}-{cls._counter}"
        try:
            made = _create_v2(name, wanted) or _create_v1(name, wanted)
        except OSError as exc:
            made = None
            reason = str(exc)
        else:
            reason = "no writable cgroup hierarchy with the pids and memory controllers"
        if made is not None and cls._counter == 1:
            for directory in set(made.directories.values()):
                _sweep(os.path.dirname(directory))
        if made is None:
            _info(
                f"cgroups not available here ({reason}): limits hold through setrlimit only "
                "(limit-processes does not bind root, limit-memory bounds address space)"
            )
            return None
        return made

    def add(self, pid: int) -> None:
        for directory in self.directories.values():
            with open(os.path.join(directory, "cgroup.procs"), "w") as f:
                f.write(str(pid))

    def memory_exceeded(self) -> bool:
        directory = self.directories.get("memory")
        if directory is None:
            return False
        try:
            if self.version == 2:
                with open(os.path.join(directory, "memory.events")) as f:
                    for line in f:
                        key, _, value = line.partition(" ")
                        if key == "oom_kill" and int(value) > 0:
                            return True
                return False
            with open(os.path.join(directory, "memory.oom_control")) as f:
                for line in f:
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value) > 0
            with open(os.path.join(directory, "memory.failcnt")) as f:
                return int(f.read().strip() or 0) > 0
        except (OSError, ValueError):
            return False

    def kill(self) -> None:
        """SIGKILL whatever is left in the group (v2: cgroup.kill; v1: each pid)."""
        import signal

        for directory in self.directories.values():
            if self.version == 2 and os.path.exists(os.path.join(directory, "cgroup.kill")):
                try:
                    with open(os.path.join(directory, "cgroup.kill"), "w") as f:
                        f.write("1")
                    continue
                except OSError:
                    pass
            try:
                with open(os.path.join(directory, "cgroup.procs")) as f:
                    pids = [int(p) for p in f.read().split()]
            except (OSError, ValueError):
                continue
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)

    def remove(self) -> None:
        """Remove the directories (empty them first with :meth:`kill`). A cgroup whose last
        processes are still exiting (a memory bomb's reclaim can take seconds) is left to a
        short-lived detached process that keeps trying for a minute: never left behind, and
        the caller does not wait for it."""
        import time

        left = []
        for directory in self.directories.values():
            for _ in range(100):
                try:
                    os.rmdir(directory)
                    break
                except FileNotFoundError:
                    break
                except OSError:  # still busy: the last processes are exiting
                    time.sleep(0.01)
            else:
                left.append(directory)
        if left:
            _remove_later(left)
        # only now: a daemon thread removing it may be stopped by the interpreter's exit, and
        # the exit hook then removes what is still in this set
        Cgroup.live.discard(self)


def _sweep(parent: str) -> None:
    """Remove the empty cgroups a sandbox left next to ours when its host was killed before it
    could (SIGKILL runs no clean-up): ``pysandboxes-PID-N`` directories whose PID is gone and
    that hold no process. Anything else is never touched."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        parts = name.split("-")
        if len(parts) != 3 or parts[0] != "pysandboxes" or not parts[1].isdigit() or not parts[2].isdigit():
            continue
        pid = int(parts[1])
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
            continue  # its host is alive: its own to remove
        except ProcessLookupError:
            pass
        except OSError:
            continue
        directory = os.path.join(parent, name)
        try:
            with open(os.path.join(directory, "cgroup.procs")) as f:
                if f.read().strip():
                    continue
            os.rmdir(directory)
        except OSError:
            pass


def _remove_live() -> None:
    for cgroup in list(Cgroup.live):
        cgroup.kill()
        cgroup.remove()


def _remove_later(directories: list[str]) -> None:
    """A detached grandchild (no terminal, cwd /) retries ``rmdir`` for up to 60 s."""
    import time

    try:
        pid = os.fork()
    except OSError:
        return
    if pid:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        return
    try:
        os.setsid()
        if os.fork():
            os._exit(0)
        os.chdir("/")
        for fd in (0, 1, 2):
            with contextlib.suppress(OSError):
                os.close(fd)
        deadline = time.monotonic() + 60
        while directories and time.monotonic() < deadline:
            for directory in list(directories):
                try:
                    os.rmdir(directory)
                    directories.remove(directory)
                except FileNotFoundError:
                    directories.remove(directory)
                except OSError:
                    pass
            time.sleep(0.1)
    finally:
        os._exit(0)


def _own_cgroup(controller: str | None) -> str | None:
    """This process's cgroup path in the hierarchy of ``controller`` (None: v2)."""
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        _id, controllers, path = line.split(":", 2)
        if controller is None and controllers == "":
            return path
        if controller is not None and controller in controllers.split(","):
            return path
    return None


def _create_v2(name: str, wanted: dict[str, int]) -> Cgroup | None:
    root = "/sys/fs/cgroup"
    if not os.path.exists(os.path.join(root, "cgroup.controllers")):
        root = "/sys/fs/cgroup/unified"
    own = _own_cgroup(None)
    if own is None or not os.path.exists(os.path.join(root, "cgroup.controllers")):
        return None
    parent = os.path.join(root, own.lstrip("/"))
    try:
        with open(os.path.join(parent, "cgroup.subtree_control")) as f:
            delegated = set(f.read().split())
    except OSError:
        return None
    if not set(wanted) <= delegated:
        return None
    directory = os.path.join(parent, name)
    os.mkdir(directory)
    try:
        if "pids" in wanted:
            _write(directory, "pids.max", wanted["pids"])
        if "memory" in wanted:
            _write(directory, "memory.max", wanted["memory"])
            try:  # noqa: SIM105
                _write(directory, "memory.swap.max", 0)
            except OSError:
                pass
    except OSError:
        os.rmdir(directory)
        raise
    return Cgroup(dict.fromkeys(wanted, directory), 2)


def _create_v1(name: str, wanted: dict[str, int]) -> Cgroup | None:
    made: dict[str, str] = {}
    try:
        for controller, value in wanted.items():
            own = _own_cgroup(controller)
            base = os.path.join("/sys/fs/cgroup", controller)
            if own is None or not os.path.isdir(base):
                raise LookupError(controller)
            directory = os.path.join(base, own.lstrip("/"), name)
            os.mkdir(directory)
            made[controller] = directory
            if controller == "pids":
                _write(directory, "pids.max", value)
            else:
                _write(directory, "memory.limit_in_bytes", value)
                try:  # noqa: SIM105
                    _write(directory, "memory.memsw.limit_in_bytes", value)
                except OSError:
                    pass
    except (LookupError, OSError):
        for directory in made.values():
            try:  # noqa: SIM105
                os.rmdir(directory)
            except OSError:
                pass
        return None
    return Cgroup(made, 1)


def _write(directory: str, name: str, value: int) -> None:
    with open(os.path.join(directory, name), "w") as f:
        f.write(str(value))


def _info(message: str) -> None:
    from ._log import info

    info(_LOGGER, message)


def breach_of(error: BaseException, limits: Limits) -> tuple[str, str] | None:
    """An error that a limit caused (the program's uncaught error, or a call's): ``(key, what)``."""
    from .errors import SandBoxError

    if isinstance(error, MemoryError) and limits["limit-memory"]:
        return ("limit-memory", "MemoryError")
    if isinstance(error, OSError) and not isinstance(error, SandBoxError):
        if error.errno == 27 and limits["limit-file-size"]:  # EFBIG
            return ("limit-file-size", "a write beyond it failed: File too large")
        if error.errno == 24 and limits["limit-open-files"]:  # EMFILE
            return ("limit-open-files", "Too many open files")
        if isinstance(error, BlockingIOError) and limits["limit-processes"]:  # fork: EAGAIN
            return ("limit-processes", "a new process was refused")
    return None


def stderr(line: str) -> None:
    with contextlib.suppress(OSError):
        os.write(2, (line + "\n").encode("utf-8", "replace"))


__all__ = ["EXIT_LIMIT", "EXIT_TIMEOUT", "Cgroup", "Limits", "apply_rlimits", "breach_of", "from_policy"]
