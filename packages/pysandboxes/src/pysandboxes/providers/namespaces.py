"""The ``bwrap`` and ``unshare`` providers: the program runs in its own namespaces.

Both build the same sandbox:

* new user, mount, PID, IPC, UTS, cgroup and network namespaces;
* a root that is an empty tmpfs holding only, read-only, what the interpreter needs (the same
  minimum as the ``landlock`` provider: its prefixes, the virtual environment, the ``sys.path``
  entries, the directories of the shared libraries it maps, the CA stores and a few single
  files of ``/etc``), the ``expose-ro=`` directories read-only and the ``expose-rw=``
  directories writable; a private ``/tmp``, a minimal ``/dev`` and a ``/proc`` of the new PID
  namespace. The working directory exists but is empty unless a rule exposes it. The rule files
  inside writable directories are bound read-only again; files and directories matched by
  ``ignore=`` are masked (replaced by an empty file or directory);
* every capability dropped, ``no_new_privs``, and a seccomp filter that refuses the system calls a
  sandboxed Python program never needs and the sockets no rule can judge (see ``seccomp.py``);
* no network but the sandbox's own loopback, unless ``net=`` rules allow destinations (the
  network broker of ``netbroker.py`` then forwards exactly those).

``bwrap`` uses bubblewrap (0.8.0, Debian 12's, and newer); ``unshare`` uses util-linux
``unshare`` for the namespaces and does the mounts itself (:mod:`.unshare_setup`).
"""

from __future__ import annotations

import contextlib
import os
import sys

from ..errors import ProviderError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from ..rules.policy import Policy

# -- availability -------------------------------------------------------------------------------


def bwrap_binary() -> str | None:
    return _which("bwrap")


def unavailable_reason(name: str) -> str | None:
    """None when ``name`` (bwrap or unshare) can start here, else why and what to do."""
    if sys.platform != "linux":
        return f"os-sandbox={name} needs Linux namespaces"
    machine = os.uname().machine
    if machine not in ("x86_64", "amd64"):
        return f"its seccomp filter is built for x86_64 only in this version, not {machine}"
    if name == "bwrap":
        if bwrap_binary() is None:
            return "bubblewrap is not installed: install it (Debian: apt-get install bubblewrap)"
    elif _which("unshare") is None:
        return "util-linux's unshare is not installed (Debian: apt-get install util-linux)"
    problem = _userns_problem()
    if problem is not None:
        return problem
    return None


def _which(name: str) -> str | None:
    """``shutil.which`` without importing shutil (it loads the compression modules: ~5 ms)."""
    for directory in os.get_exec_path():
        path = os.path.join(directory, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def _userns_problem() -> str | None:
    for path, bad, advice in (
        ("/proc/sys/user/max_user_namespaces", "0", "sysctl -w user.max_user_namespaces=15000"),
        ("/proc/sys/kernel/unprivileged_userns_clone", "0", "sysctl -w kernel.unprivileged_userns_clone=1"),
        (
            "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
            "1",
            "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, or an AppArmor profile for bwrap",
        ),
    ):
        try:
            with open(path) as f:
                value = f.read().strip()
        except OSError:
            continue
        if value == bad and (os.geteuid() != 0 or path.endswith("max_user_namespaces")):
            return f"user namespaces are disabled on this host ({path} is {value}): {advice}"
    return None


# -- the view of the file system ---------------------------------------------------------------


class View:
    """What the sandbox sees: read-only and writable binds, masks, and single files."""

    def __init__(self) -> None:
        self.read_dirs: list[str] = []
        self.read_files: list[str] = []
        self.write_dirs: list[str] = []
        #: paths inside writable binds bound again, ``(path, writable)``, bound in path order
        #: (parents first) after the writable binds: rule files read-only, the directories on the
        #: way to them onto themselves (a mount point cannot be renamed nor removed: EBUSY), the
        #: exposures nested in a writable one with their own mode (see :func:`_protect`)
        self.rebound: list[tuple[str, bool]] = []
        self.masked_files: list[str] = []
        self.masked_dirs: list[str] = []
        self.symlinks: list[tuple[str, str]] = []  # (target, link) of the host's top-level links
        self.cwd = "/"
        self.hosts_file: str | None = None  # the sandbox's /etc/hosts (network broker aliases)
        self.anyip_families: tuple[int, ...] = ()  # unshare: routes to set before dropping caps
        #: the forwarder listens on ports below 1024: bwrap keeps CAP_NET_BIND_SERVICE until the
        #: forwarder has bound them (unshare lowers ip_unprivileged_port_start in its namespace)
        self.bind_service = False
        self.hostname = "sandbox"
        self.share_net = False  # bwrap.share-net=true: the host's network (net= binds Python only)
        self.proc = True  # unshare.proc=none: no /proc at all


#: most files to look at when masking ignore= matches inside exposed directories
_MASK_SCAN_LIMIT = 20000


def view_for(policy: Policy, program_files: Sequence[str], cwd: str, provider: str = "bwrap") -> View:
    from .landlock import plan_for

    plan = plan_for(policy, program_files=program_files)
    view = View()
    options = policy.options_for(provider)  # bwrap.* / unshare.* keys (rules.md §4.15)
    view.hostname = str(options.get("hostname") or "sandbox")
    view.share_net = bool(options.get("share-net")) or options.get("unshare-net") is False
    view.proc = options.get("proc") != "none"
    view.read_dirs = list(plan.read_dirs)
    view.read_files = [f for f in plan.read_files if not f.startswith(("/dev/", "/proc/"))]
    view.write_dirs = list(plan.write_dirs)
    for link in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(link):
            view.symlinks.append((os.readlink(link), link))
    for extra in ("/usr/lib64",):  # the ELF interpreter's own path (/lib64/ld-linux-x86-64.so.2)
        if os.path.isdir(extra) and not os.path.islink(extra):
            view.read_dirs.append(extra)
    # programs the rules let it start need the system's commands and their libraries
    if any(
        policy.decide_api(f).allowed for f in ("subprocess.Popen", "os.execv", "os.system", "os.posix_spawn")
    ):
        view.read_dirs = [d for d in view.read_dirs if not _beneath(d, "/usr")] + ["/usr"]
    # the rule files: the sandboxed interpreter loads the same rules (read-only, like any file
    # of the configuration)
    view.read_files += [os.path.realpath(f) for f in policy.files if os.path.isfile(f)]
    _protect(policy, view)
    _masks(policy, view)
    view.cwd = os.path.realpath(cwd)
    return view


def _protect(policy: Policy, view: View) -> None:
    """What lies inside a writable bind and must not be written there: the exposures nested in
    it (``expose-ro=data`` in ``expose-rw=.``: read-only for native code too, as the Python layer
    says; a writable one nested again in that, writable), and the rule files, includes (present
    or not) and learn output: the program can neither write them, nor replace them, nor move the
    directories that lead to them (docs/providers.md, "Rule files inside expose-rw= directories").

    * an existing one is bound read-only again (a mount point: no write, no rename, no unlink);
    * an absent one gets a placeholder first, created on the host: an empty file when only the
      file is missing (an empty include adds no rule, as an absent ``include-optional``), else the
      first missing directory, empty, bound read-only (nothing can be created beneath it). A
      placeholder stays after the run: removing it would lift the binds of a run still going;
    * every directory between the writable bind and it is bound onto itself (still writable)."""
    rebound: dict[str, bool] = {}
    roots = list(view.write_dirs)
    for exposure in policy.files_policy.exposures:
        nested = exposure.path not in roots and any(_beneath(exposure.path, w) for w in roots)
        if nested and os.path.exists(exposure.path):
            rebound[exposure.path] = exposure.writable
    writable = {**dict.fromkeys(roots, True), **rebound}  # every exposure in a writable bind
    for path in sorted(policy.files_policy.protected):
        holders = [w for w in writable if _beneath(path, w) and path != w]
        if not holders or not writable[max(holders, key=len)]:
            continue  # outside the writable binds, or in a read-only exposure there: not writable
        holder = max(holders, key=len)
        probe = holder
        for name in os.path.relpath(path, holder).split(os.sep):
            probe = os.path.join(probe, name)
            if os.path.islink(probe):
                break  # its target is protected on its own (the real path is in the set)
            if not os.path.lexists(probe):
                if _placeholder(probe, last=probe == path):
                    rebound[probe] = False
                break
            if probe != path and os.path.isdir(probe):
                rebound[probe] = True
                continue
            # the file itself, or a file where a directory of the path should be: bound read-only
            rebound[probe] = False
            break
    view.rebound = sorted(rebound.items())


def _placeholder(path: str, *, last: bool) -> bool:
    """Create ``path`` (an empty file when ``last``, else an empty directory); False when it
    cannot be made (then nothing below can be protected: the run goes on, as for a rule file
    outside the writable binds)."""
    try:
        if last:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644))
        else:
            os.mkdir(path, 0o755)
    except FileExistsError:
        return True
    except OSError:
        return False
    return True


def _masks(policy: Policy, view: View) -> None:
    ignores = policy.files_policy.ignores
    if not ignores:
        return
    import glob

    seen = 0
    for exposure in policy.files_policy.exposures:
        for root, dirs, files in os.walk(exposure.path):
            for name in [*dirs, *files]:
                seen += 1
                if seen > _MASK_SCAN_LIMIT:
                    return
                path = os.path.join(root, name)
                for ignore in ignores:
                    hit = ignore.regex.match(path if ignore.absolute else name) is not None
                    if hit:
                        (view.masked_dirs if os.path.isdir(path) else view.masked_files).append(path)
                        break
            dirs[:] = [d for d in dirs if os.path.join(root, d) not in view.masked_dirs]
    for ignore in ignores:
        if ignore.absolute:
            for path in glob.glob(ignore.pattern):
                (view.masked_dirs if os.path.isdir(path) else view.masked_files).append(path)


def _beneath(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def bwrap_argv(
    view: View, *, seccomp_fd: int, info_fd: int | None, hosts_file: str | None = None, own_init: bool = False
) -> list[str]:
    """bubblewrap's command line for ``view`` (the program's own argv follows ``--``)."""
    binary = bwrap_binary()
    if binary is None:
        raise ProviderError("os-sandbox=bwrap cannot start: bubblewrap is not installed")
    argv = [
        binary,
        "--unshare-user",
        "--unshare-ipc",
        "--unshare-pid",
        *([] if view.share_net else ["--unshare-net"]),
        "--unshare-uts",
        "--unshare-cgroup-try",
        *(["--as-pid-1"] if own_init else []),
        "--die-with-parent",
        "--hostname",
        view.hostname,
        "--cap-drop",
        "ALL",
        *(["--cap-add", "CAP_NET_BIND_SERVICE"] if view.bind_service else []),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
    ]
    for target, link in view.symlinks:
        argv += ["--symlink", target, link]
    for path in sorted(set(view.read_dirs)):
        argv += ["--ro-bind", path, path]
    for path in sorted(set(view.read_files)):
        argv += ["--ro-bind", path, path]
    for path in sorted(set(view.write_dirs)):
        argv += ["--bind", path, path]
    for path, writable in view.rebound:  # parents first
        argv += ["--bind" if writable else "--ro-bind", path, path]
    for path in view.masked_dirs:
        argv += ["--tmpfs", path, "--remount-ro", path]
    for path in view.masked_files:
        argv += ["--ro-bind", "/dev/null", path]
    if view.hosts_file is not None:
        argv += ["--ro-bind", view.hosts_file, "/etc/hosts"]
    argv += ["--dir", view.cwd, "--chdir", view.cwd]
    argv += ["--seccomp", str(seccomp_fd)]
    if info_fd is not None:
        argv += ["--info-fd", str(info_fd)]
    return argv


def unix_sockets(policy: Policy, provider: str) -> bool:
    """``<provider>.unix-sockets=true``: the program may create UNIX sockets (see seccomp.py).
    A guest of ``qemu`` may always: its sockets are the guest kernel's, none reaches the host."""
    return provider == "qemu" or bool(policy.options_for(provider).get("unix-sockets"))


def seccomp_fd(*, unix_sockets: bool) -> int:
    """A memfd holding the seccomp program, inheritable, positioned at its start."""
    from .seccomp import namespace_filter

    fd = os.memfd_create("pysandboxes-seccomp", 0)
    os.write(fd, namespace_filter(unix_sockets=unix_sockets))
    os.lseek(fd, 0, os.SEEK_SET)
    os.set_inheritable(fd, True)
    return fd


# -- the network broker (see netbroker.py) ------------------------------------------------------

BROKER_ENV = "PYSANDBOXES_NS_BROKER"
PINNED_ENV = "PYSANDBOXES_NS_PINNED"
STATUS_ENV = "PYSANDBOXES_NS_STATUS"


class Network:
    """The host side of the sandbox's network: the broker judging every connection, and the
    ``/etc/hosts`` file the sandbox sees. Nothing at all when the rules allow no TCP."""

    def __init__(self, policy: Policy, provider: str, *, start: bool = True) -> None:
        self.broker: Any = None
        self.host_end: Any = None
        self.fd: int | None = None
        self.hosts_file: str | None = None
        self.env: dict[str, str] = {}
        self.plan: Any = _NO_PLAN
        if not policy.net.allow:  # no destination at all: the sandbox keeps its own loopback only
            return
        options = policy.options_for(provider)
        if options.get("share-net") or options.get("unshare-net") is False:
            return  # the host's network, as the key says: the Python layer alone holds net=
        from . import netbroker

        self.plan = plan = netbroker.plan(policy)
        if plan.refusals:
            raise ProviderError("\n".join(plan.refusals))
        if provider == "bwrap" and plan.anyip:
            raise ProviderError(
                f"the rule(s) {', '.join(plan.anyip)} name addresses outside the loopback: under bwrap the "
                "sandbox has no CAP_NET_ADMIN to route them; use a host name in the rule, or os-sandbox=unshare"
            )
        if not (plan.ports or plan.inbound):
            return
        import json
        import socket
        import tempfile

        self.host_end, sandbox_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.broker = netbroker.Broker(policy)
        if start:
            self.start()
        self.fd = sandbox_end.detach()
        os.set_inheritable(self.fd, True)
        if plan.aliases:
            fd, self.hosts_file = tempfile.mkstemp(prefix="pysandboxes-hosts-")
            with os.fdopen(fd, "w") as f:
                f.write(plan.hosts)
            os.chmod(self.hosts_file, 0o644)
        pinned = {name: list(addresses) for _alias, name, addresses in plan.aliases}
        self.env = {BROKER_ENV: str(self.fd), PINNED_ENV: json.dumps(pinned)}

    @property
    def privileged_ports(self) -> bool:
        return any(port < 1024 for port in getattr(self.plan, "ports", ()))

    def start(self) -> None:
        """Start the broker's threads (in the process that stays outside the sandbox)."""
        if self.broker is not None and self.host_end is not None:
            host_end, self.host_end = self.host_end, None
            self.broker.start(host_end)

    def give_up_host_end(self) -> None:
        """In the sandbox's process: drop the broker's end of the socket pair."""
        if self.host_end is not None:
            self.host_end.close()
            self.host_end = None

    def stop(self) -> None:
        if self.host_end is not None:
            self.host_end.close()
            self.host_end = None
        if self.broker is not None:
            self.broker.stop()
            self.broker = None
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None
        if self.hosts_file is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.hosts_file)
            self.hosts_file = None


class _NoPlan:
    anyip_families: tuple[int, ...] = ()


_NO_PLAN = _NoPlan()


class Inside:
    """In the sandboxed interpreter: what the host handed over for the network."""

    broker_fd: int | None = None
    pinned: dict[str, list[str]] | None = None
    #: where the program's exit status is written for the supervisor (see supervise.status_pipe)
    status_fd: int | None = None

    @classmethod
    def take(cls) -> None:
        """Read (and remove) the variables the host set, before anything else runs."""
        import json

        raw = os.environ.pop(BROKER_ENV, None)
        pinned = os.environ.pop(PINNED_ENV, None)
        status = os.environ.pop(STATUS_ENV, None)
        if status is not None and status.isdigit():
            cls.status_fd = int(status)
            os.set_inheritable(cls.status_fd, False)  # the program's children never see it
        if raw is not None:
            cls.broker_fd = int(raw)
        if pinned is not None:
            cls.pinned = json.loads(pinned)


def start_forwarder(policy: Policy, provider: str) -> Policy:
    """Inside: fork the forwarder (before the guards are armed) and return the policy the Python
    layer must use there (host names pinned to their aliases)."""
    if Inside.broker_fd is None or not policy.net.allow:
        return policy
    import dataclasses
    import socket

    from . import netbroker

    plan = netbroker.plan(policy)
    if provider in ("unshare", "qemu"):  # the routes were set while the capabilities were still there
        plan = dataclasses.replace(plan, anyip_families=())
    fd, Inside.broker_fd = Inside.broker_fd, None
    netbroker.fork_forwarder(socket.socket(fileno=fd), plan)
    if provider == "bwrap":  # CAP_NET_BIND_SERVICE served the forwarder's listeners: gone now
        from .unshare_setup import _drop_capabilities, _libc

        _drop_capabilities(_libc())
    return plan.guard_policy(policy)


# -- one sandbox, host side (complete and partial mode) -----------------------------------------


def sandbox_view(
    policy: Policy, provider: str, files: Sequence[str], cwd: str, *, start_broker: bool = True
) -> tuple[View, Network]:
    """The view for ``provider`` and the network behind it (the broker; ``start_broker=False``:
    its threads are started later, in the process that stays outside)."""
    view = view_for(policy, files, cwd, provider)
    network = Network(policy, provider, start=start_broker)
    view.hosts_file = network.hosts_file
    view.anyip_families = network.plan.anyip_families
    view.bind_service = network.privileged_ports
    return view, network


def launcher(
    view: View,
    policy: Policy,
    provider: str,
    network: Network,
    *,
    info_fd: int | None = None,
    limits: Any = None,
    own_init: bool = False,
    stderr_fd: int | None = None,
) -> tuple[list[str], list[int], dict[str, str], bool]:
    """The launcher's command line (the interpreter follows ``--``), the descriptors it must
    inherit (the broker's sandbox end is handed over with them: the caller closes them once
    the launcher runs), the variables to add to its environment, and whether it writes
    ``info_fd`` (bwrap's ``--info-fd``: the pid to signal). ``own_init``: under bwrap the
    interpreter is the PID namespace's process 1 and becomes its init itself
    (``unshare_setup.become_init``). ``stderr_fd`` (firejail): the program's standard error,
    put in place by the shim; the launcher's own is then a ``firejail.SetupWatch`` pipe."""
    filter_fd = seccomp_fd(unix_sockets=unix_sockets(policy, provider))
    fds = [filter_fd, *([network.fd] if network.fd is not None else [])]
    network.fd = None
    if provider == "bwrap":
        return (
            bwrap_argv(view, seccomp_fd=filter_fd, info_fd=info_fd, own_init=own_init),
            fds,
            dict(network.env),
            info_fd is not None,
        )
    if provider == "qemu":
        from .qemu import launcher_argv

        argv, settings_fds = launcher_argv(view, policy, filter_fd, limits)
        os.close(filter_fd)  # the guest's agent applies the same filter (sent in the settings)
        return argv, [*fds[1:], *settings_fds], dict(network.env), False
    if provider == "firejail":
        from .firejail import firejail_argv
        from .seccomp import shim_argv

        # firejail brings its own seccomp filter; ours is stacked on it by a shim that runs
        # first in the sandbox (the caller's "--" that follows is skipped by the shim)
        argv, profile_fd = firejail_argv(view, policy.options_for("firejail"))
        shim = shim_argv(filter_fd, [], stderr_fd=stderr_fd)
        return [*argv, "--", *shim], [*fds, profile_fd], dict(network.env), False
    from .unshare_setup import unshare_argv

    argv, extra, view_fd = unshare_argv(view, seccomp_fd=filter_fd, info_fd=info_fd)
    return argv, [*fds, view_fd], {**network.env, **extra}, False
