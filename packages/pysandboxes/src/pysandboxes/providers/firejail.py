"""The ``firejail`` provider: the same view as ``bwrap``/``unshare``, expressed in firejail options.

firejail cannot start from an empty root: it shows the host's file system and hides what it
is told to. So the view of ``namespaces.view_for`` is turned around: every entry of the file
system that holds nothing the sandbox may see is ``--blacklist``-ed (walking down only the
directories on the way to what it may see; symbolic links are left, their targets are judged
on their own), what it may see is ``--read-only``, the ``expose-rw=`` directories
``--read-write``. Then ``--caps.drop=all``, ``--nonewprivs``, ``--seccomp``,
``--restrict-namespaces``, ``--private-dev``, a new network namespace (``--net=none``) reached
through the same network broker as the other namespace providers, and the ``firejail.rlimit-*``
keys. ``/tmp`` is not replaced (``--private-tmp`` would hide a virtual environment or an exposed
directory there): its other entries are hidden like any other.
"""

from __future__ import annotations

import os
import re
import threading

from ..errors import ProviderError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from .namespaces import View

#: never walked nor hidden: firejail builds them itself (a private /dev, the PID namespace's
#: /proc), and /sys holds no file a rule could expose
_MANAGED = ("/proc", "/dev", "/sys")
#: firejail's own run-time state lives there
_KEEP = ("/run/firejail",)
_CONFIG = "/etc/firejail/firejail.config"
#: firejail 0.9.72 starts the program through /bin/bash: it must stay visible (read-only)
SHELL = tuple(p for p in ("/bin/bash",) if os.path.exists(p))


def binary() -> str | None:
    from .namespaces import _which

    return _which("firejail")


def unavailable_reason() -> str | None:
    if binary() is None:
        return "firejail is not installed: install it (Debian: apt-get install firejail)"
    return None


def _restricted_network() -> bool:
    """Debian ships ``restricted-network yes``: ``--net`` is then refused to users other than
    root, and firejail would run with the host's network."""
    try:
        with open(_CONFIG, encoding="utf-8") as f:
            for line in f:
                words = line.split()
                if words[:2] == ["restricted-network", "yes"]:
                    return True
    except OSError:
        pass
    return False


#: how often a sandbox is started when firejail stopped because an entry it hides vanished
ATTEMPTS = 3
#: firejail's words then: it checks each entry to hide, then mounts over it; an entry another
#: process removes in between stops it ("disable file: ... No such file or directory") before
#: anything of the program ran (reproduced with files made and removed in a hidden directory)
_VANISHED = re.compile(rb"^Error disable file: .*No such file or directory$", re.MULTILINE)


class SetupWatch:
    """firejail's standard error (a pipe), held back until the shim inside the sandbox marks
    the start (``seccomp.STARTED_MARK``), then copied to this process's standard error as it
    comes. What firejail said when it stopped before the start is then known, and a start
    that only failed on an entry vanishing under its feet is tried again, silently."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        self.started = False
        self.held = bytearray()
        self.thread = threading.Thread(target=self._pump, name="pysandboxes-firejail-stderr", daemon=True)

    def launched(self) -> None:
        """The launcher runs (it holds the pipe's other end): watch it."""
        os.close(self.write_fd)
        self.write_fd = -1
        self.thread.start()

    def _pump(self) -> None:
        from ..supervise import _write_all
        from .seccomp import STARTED_MARK

        try:
            while data := os.read(self.read_fd, 65536):
                if not self.started:
                    self.held += data
                    at = self.held.find(STARTED_MARK)
                    if at < 0:
                        continue
                    self.started = True
                    data = bytes(self.held[:at] + self.held[at + 1 :])
                    self.held.clear()
                _write_all(2, data)
        except OSError:
            pass
        finally:
            os.close(self.read_fd)

    def finish(self, *, last: bool) -> bool:
        """After the launcher's end: True when it should be started again (not on the
        ``last`` attempt); otherwise what it said before any start is on standard error now."""
        if self.write_fd >= 0:  # never launched
            os.close(self.write_fd)
            self.write_fd = -1
            os.close(self.read_fd)
            return False
        self.thread.join(timeout=10)  # the launcher is gone: its pipe ends at once
        if self.started or not self.held:
            return False
        if not last and _VANISHED.search(self.held):
            return True
        from ..supervise import _write_all

        _write_all(2, bytes(self.held))
        return False


#: hidden through a pattern firejail expands itself, never entry by entry: their entries come
#: and go while the sandbox starts (pid files, sockets), and a name that vanishes between the
#: profile and firejail's mount stops firejail ("disable_file: No such file or directory")
#: (/etc: ldconfig writes ld.so.cache~, account tools passwd+ and .pwd.lock, while apt runs)
_GLOBBED = ("/run", "/etc")


def _whitelisted() -> tuple[str, ...]:
    """Directories where other processes make and remove entries at any time (the temporary
    directory, the user's home): what the view shows there is ``whitelist``-ed (firejail mounts
    a tmpfs on it and binds those paths back), so no other entry is named, and none made later
    (another program's secret written after the start) is seen."""
    roots = ["/tmp"]
    try:
        import pwd

        home = os.path.realpath(pwd.getpwuid(os.getuid()).pw_dir)
    except (ImportError, KeyError, OSError):
        home = ""
    if home not in ("", "/") and not home.startswith(("/tmp/", *(d + "/" for d in _MANAGED))):
        roots.append(home)
    return tuple(roots)


def hiding(view: View) -> list[str]:
    """The profile lines that hide what the view does not show: ``blacklist`` for the entries
    not on the way to it (names that stay: system directories, the top level), ``whitelist``
    for what it shows in the directories of :func:`_whitelisted`, a pattern for /run."""
    visible = {os.path.realpath(p) for p in (*view.read_dirs, *view.read_files, *view.write_dirs, *SHELL)}
    visible.add(os.path.realpath(view.cwd))
    visible.update(p for p in _KEEP if os.path.exists(p))
    if view.hosts_file is not None:
        visible.add(os.path.realpath(view.hosts_file))
    ancestors: set[str] = set()
    for path in visible:
        probe = path
        while probe != "/":
            probe = os.path.dirname(probe)
            ancestors.add(probe)
    whitelisted = _whitelisted()
    lines: list[str] = []

    def walk(directory: str) -> None:
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            return
        for name in names:
            path = os.path.join(directory, name)
            if path in visible or path in _MANAGED or path in _KEEP or os.path.islink(path):
                continue
            if path not in ancestors:
                lines.append(f"blacklist {path}")
            elif path in whitelisted:
                lines.extend(f"whitelist {p}" for p in sorted(visible) if _beneath(p, path))
            elif path in _GLOBBED:
                lines.extend(
                    f"noblacklist {p}" for p in sorted(visible | ancestors) if os.path.dirname(p) == path
                )
                lines.append(f"blacklist {path}/*")
                for inner in sorted(ancestors - visible):  # /etc/ssl for /etc/ssl/certs: walked
                    if os.path.dirname(inner) == path:
                        walk(inner)
            else:
                walk(path)

    walk("/")
    return lines


def _beneath(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def firejail_argv(view: View, options: Mapping[str, object]) -> tuple[list[str], int]:
    """firejail's command line for ``view`` (the program follows ``--``), and the descriptor of
    the profile it reads (an anonymous memory file, inherited): firejail takes at most 128
    arguments, and hiding a file system takes hundreds of lines."""
    path = binary()
    if path is None:
        raise ProviderError("os-sandbox=firejail cannot start: firejail is not installed")
    if not view.share_net and os.geteuid() != 0 and _restricted_network():
        raise ProviderError(
            f"os-sandbox=firejail cannot give the sandbox its own network: {_CONFIG} says "
            "'restricted-network yes', so firejail refuses --net to users other than root and the "
            "program would keep the host's network. Change that line to 'restricted-network no' "
            "(as root), or use os-sandbox=unshare or bwrap"
        )
    bridge = options.get("net")
    if bridge not in (None, "none"):
        raise ProviderError(
            f"firejail.net={bridge}: bridging a host interface into the sandbox would give native code "
            "the host's network; the net= rules are held by the network broker instead: remove the line"
        )
    lines = [
        "caps.drop all",
        "nonewprivs",
        "nogroups",
        "restrict-namespaces",
        "ipc-namespace",  # the host's System V segments and queues stay out of reach
        "private-dev",
        f"hostname {view.hostname}",
    ]
    if options.get("seccomp", True) is not False:
        lines.append("seccomp")
    for key, option in (("seccomp.keep", "seccomp.keep"), ("seccomp.block", "seccomp.drop")):
        value = options.get(key)
        if value:
            names = value if isinstance(value, str) else ",".join(str(v) for v in value)  # type: ignore[attr-defined]
            lines.append(f"{option} {names}")
    if not view.share_net:
        lines.append("net none")
    for key in (
        "rlimit-as",
        "rlimit-cpu",
        "rlimit-fsize",
        "rlimit-nofile",
        "rlimit-nproc",
        "rlimit-sigpending",
    ):
        value = options.get(key)
        if value is not None:
            lines.append(f"{key} {value}")
    hide = [*hiding(view), *(f"blacklist {entry}" for entry in (*view.masked_files, *view.masked_dirs))]
    for line in hide:
        if any(c in line for c in "\n\r"):
            raise ProviderError(
                f"os-sandbox=firejail cannot hide {line.split(' ', 1)[1]!r}: its name holds a line break"
            )
    lines += hide
    lines += [
        f"read-only {p}" for p in sorted({*view.read_dirs, *view.read_files, *map(os.path.realpath, SHELL)})
    ]
    if view.cwd not in view.write_dirs:
        lines.append(f"read-only {view.cwd}")
    lines += [f"read-write {p}" for p in sorted(set(view.write_dirs))]
    for p, writable in view.rebound:  # parents first; read-only then read-write: a mount point
        lines += [f"read-only {p}", f"read-write {p}"] if writable else [f"read-only {p}"]
    if view.hosts_file is not None:
        lines.append(f"hosts-file {view.hosts_file}")
    fd = os.memfd_create("pysandboxes-firejail-profile", 0)
    os.write(fd, ("\n".join(lines) + "\n").encode())
    os.lseek(fd, 0, os.SEEK_SET)
    os.set_inheritable(fd, True)
    argv = [
        path,
        "--quiet",
        f"--profile=/proc/self/fd/{fd}",
        "--keep-fd=all",
        "--deterministic-exit-code",
        "--deterministic-shutdown",
    ]
    return argv, fd
