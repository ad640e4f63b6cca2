"""The ``qemu`` provider: the program runs in a virtual machine of its own.

Nothing is downloaded. The guest is built from what the host has:

* the kernel of Debian's ``linux-image-amd64`` package (``/boot/vmlinuz-*`` with the ``9p`` and
  ``virtio`` modules under ``/lib/modules``);
* a small initramfs generated on first use and cached (``~/.cache/pysandboxes/qemu``): a static
  busybox (package ``busybox-static``), those modules and a short ``/init``;
* the sandbox's view of the host's files (the same view as ``bwrap``/``unshare``: the
  interpreter's minimum read-only, ``expose-ro`` read-only, ``expose-rw`` writable, ``ignore=``
  masked) assembled by the launcher in a mount namespace of its own and shared as the guest's
  root over virtio-9p: QEMU serves that tree and nothing else of the host;
* one virtio-serial port carrying everything else (:mod:`.vmlink`): the program's standard
  streams, its exit status, signals, partial mode's channel and the network broker's socket.
  The guest has no network card: its only way out is the broker, which judges every connection
  on the host (``net=`` rules), exactly as for ``bwrap`` and ``unshare``.

The machine is QEMU's ``microvm`` (no PCI, no firmware option ROMs). KVM is used when
``/dev/kvm`` works; a guest that does not come up under KVM within :data:`KVM_PROBE` seconds is
restarted under TCG (software emulation), and the host remembers it until the next boot.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import sys

from ..errors import ProviderError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..rules.policy import Policy
    from .namespaces import View

#: seconds a guest gets under KVM before the host falls back to TCG (a working KVM guest is
#: ready in well under a second)
KVM_PROBE = 8.0
#: the guest's memory when ``qemu.memory`` is not set (the reference's default)
DEFAULT_MEMORY_MB = 2048
#: seconds the guest gets to be ready when ``qemu.start_timeout`` is not set
DEFAULT_START_TIMEOUT = {"kvm": 90.0, "tcg": 180.0}
#: the modules the guest loads, in order (virtio transport, console, 9p)
MODULES = (
    "virtio_ring",
    "virtio",
    "virtio_mmio",
    "virtio_console",
    "netfs",
    "fscache",
    "9pnet",
    "9pnet_virtio",
    "9p",
)
_FORMAT = 2  # bump when the initramfs layout or /init changes

_INIT = """#!/bin/busybox sh
B=/bin/busybox
$B mount -t devtmpfs dev /dev
$B mount -t proc proc /proc
$B mount -t sysfs sys /sys
fail() { $B echo "pysandboxes-guest: $*" >/dev/ttyS0; $B poweroff -f; }
for m in {modules}; do $B insmod /modules/$m.ko || fail "cannot load the module $m"; done
O=trans=virtio,version=9p2000.L,msize=524288
$B mount -t 9p -o $O,cache=mmap pysandboxes /root || fail "cannot mount the shared root"
# the interpreter's own directories again, through a second device, cached by the guest
if [ -n "$PYSB_CACHED" ]; then
  $B mkdir -p /cached
  $B mount -t 9p -o $O,cache=loose,ro pysandboxes-cached /cached || fail "cannot mount the cached share"
  for d in $($B echo "$PYSB_CACHED" | $B tr : ' '); do $B mount --bind "/cached$d" "/root$d" || fail "bind $d"; done
  $B umount -l /cached
fi
$B mount --move /dev /root/dev
$B mount --move /proc /root/proc
$B umount /sys
exec $B switch_root /root "$PYSB_PYTHON" -I -S -c "import sys; sys.path.insert(0, sys.argv[1]); from pysandboxes.providers.qemu_guest import main; main()" "$PYSB_ROOT"
"""


def _which_qemu() -> str | None:
    from .namespaces import _which

    return _which("qemu-system-x86_64")


@functools.cache
def _busybox() -> str | None:
    """A static busybox (the dynamic one would need the host's libc in the initramfs)."""
    for path in ("/usr/bin/busybox", "/bin/busybox"):
        if os.path.isfile(path):
            with open(path, "rb") as f:
                head = f.read(1 << 16)
            if b"ld-linux" not in head:
                return path
    return None


@functools.cache
def kernel() -> tuple[str, str] | None:
    """The newest ``/boot/vmlinuz-*`` with the 9p and virtio modules: ``(image, modules dir)``."""
    candidates = []
    with contextlib.suppress(OSError):
        for name in os.listdir("/boot"):
            if not name.startswith("vmlinuz-"):
                continue
            version = name[len("vmlinuz-") :]
            modules = f"/lib/modules/{version}"
            if os.access(f"/boot/{name}", os.R_OK) and os.path.isfile(f"{modules}/modules.dep"):
                with open(f"{modules}/modules.dep") as f:
                    dep = f.read()
                if "/9pnet_virtio.ko" in dep and "/virtio_console.ko" in dep and "/virtio_mmio.ko" in dep:
                    candidates.append((_version_key(version), f"/boot/{name}", modules))
    if not candidates:
        return None
    _key, image, modules = max(candidates)
    return image, modules


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version))


def unavailable_reason() -> str | None:
    if sys.platform != "linux" or os.uname().machine != "x86_64":
        return "the qemu provider runs x86_64 Linux guests on x86_64 Linux hosts only"
    missing = []
    if _which_qemu() is None:
        missing.append("qemu-system-x86")
    if kernel() is None:
        missing.append("linux-image-amd64")
    if _busybox() is None:
        missing.append("busybox-static")
    if missing:
        return (
            "it needs a kernel with the 9p and virtio modules, a static busybox and QEMU; install "
            f"them with `apt-get install {' '.join(missing)}`"
        )
    from .namespaces import _userns_problem

    problem = _userns_problem()
    if problem is not None:
        return f"the launcher assembles the guest's files in a user namespace: {problem}"
    return None


def accelerator(use_kvm: bool = True) -> tuple[str, str]:
    """``("kvm" | "tcg", why)``: KVM when it is allowed, usable and not known to hang here."""
    if not use_kvm:
        return "tcg", "qemu.use_kvm=false"
    if not os.path.exists("/dev/kvm"):
        return "tcg", "no /dev/kvm"
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "tcg", "/dev/kvm is not usable by this user"
    if os.path.exists(kvm_marker()):
        return "tcg", "a KVM guest did not start on this host since its last boot"
    return "kvm", "/dev/kvm"


def cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pysandboxes", "qemu")


def kvm_marker() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
    except OSError:
        boot = "unknown"
    return os.path.join(cache_dir(), f"kvm-hangs-{boot}")


def initramfs(modules_dir: str, *, announce: bool = True) -> str:
    """The cached initramfs for the kernel of ``modules_dir``, built when missing."""
    busybox = _busybox()
    if busybox is None:
        raise ProviderError("os-sandbox=qemu cannot start: install busybox-static")
    init = _INIT.replace("{modules}", " ".join(MODULES))
    st = os.stat(busybox)
    key = hashlib.sha256(
        f"{_FORMAT}\0{modules_dir}\0{os.stat(os.path.join(modules_dir, 'modules.dep')).st_mtime_ns}"
        f"\0{st.st_size}\0{st.st_mtime_ns}\0{init}".encode()
    ).hexdigest()[:16]
    target = os.path.join(cache_dir(), f"initramfs-{os.path.basename(modules_dir)}-{key}.cpio")
    if os.path.exists(target):
        return target
    if announce:
        print("python-sb: qemu: building the guest's initramfs (first use) ...", file=sys.stderr, flush=True)
    deps: dict[str, str] = {}
    with open(os.path.join(modules_dir, "modules.dep")) as f:
        for line in f:
            path = line.partition(":")[0]
            deps[os.path.basename(path).split(".ko")[0]] = path
    entries: list[tuple[str, int, bytes]] = [
        (name, 0o40755, b"") for name in ("dev", "proc", "sys", "root", "bin", "modules")
    ]
    with open(busybox, "rb") as f:
        entries.append(("bin/busybox", 0o100755, f.read()))
    for name in MODULES:
        if name not in deps:
            raise ProviderError(f"os-sandbox=qemu cannot start: the kernel has no module {name}")
        entries.append((f"modules/{name}.ko", 0o100644, _module_bytes(os.path.join(modules_dir, deps[name]))))
    entries.append(("init", 0o100755, init.encode()))
    os.makedirs(cache_dir(), exist_ok=True)
    temporary = f"{target}.{os.getpid()}.tmp"
    with open(temporary, "wb") as f:
        f.write(_cpio(entries))
    os.replace(temporary, target)
    return target


def boot_image(image: str, *, announce: bool = True) -> str:
    """The kernel QEMU boots: the ELF ``vmlinux`` inside ``image`` (a bzImage), unpacked once and
    cached. QEMU starts it directly (PVH entry point), which spares the guest decompressing
    itself, seconds under TCG. ``image`` itself when its payload is not xz or gzip."""
    st = os.stat(image)
    key = hashlib.sha256(f"{image}\0{st.st_size}\0{st.st_mtime_ns}".encode()).hexdigest()[:16]
    target = os.path.join(cache_dir(), f"vmlinux-{os.path.basename(image)}-{key}")
    if os.path.exists(target):
        return target
    with open(image, "rb") as f:
        data = f.read()
    if len(data) < 0x250 or data[0x202:0x206] != b"HdrS":
        return image
    setup_sects = data[0x1F1] or 4
    offset, length = int.from_bytes(data[0x248:0x24C], "little"), int.from_bytes(data[0x24C:0x250], "little")
    payload = data[(setup_sects + 1) * 512 + offset :][:length]
    if announce:
        print("python-sb: qemu: unpacking the guest's kernel (first use) ...", file=sys.stderr, flush=True)
    try:
        if payload.startswith(b"\xfd7zXZ\x00"):
            import lzma

            elf = lzma.LZMADecompressor().decompress(payload)
        elif payload.startswith(b"\x1f\x8b"):
            import zlib

            elf = zlib.decompressobj(31).decompress(payload)
        else:
            return image
    except (OSError, ValueError, EOFError):
        return image
    if not elf.startswith(b"\x7fELF"):
        return image
    os.makedirs(cache_dir(), exist_ok=True)
    temporary = f"{target}.{os.getpid()}.tmp"
    with open(temporary, "wb") as f:
        f.write(elf)
    os.replace(temporary, target)
    return target


def _module_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".xz"):
        import lzma

        return lzma.decompress(data)
    if path.endswith(".zst"):
        raise ProviderError(f"os-sandbox=qemu cannot start: {path} is zstd-compressed (not supported)")
    return data


def _cpio(entries: list[tuple[str, int, bytes]]) -> bytes:
    """A ``newc`` cpio archive (what the kernel unpacks as its initramfs)."""
    out = bytearray()
    for inode, (name, mode, data) in enumerate([*entries, ("TRAILER!!!", 0, b"")], start=1):
        encoded = name.encode() + b"\0"
        fields = (inode, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(encoded), 0)
        out += b"070701" + "".join(f"{v:08x}" for v in fields).encode() + encoded
        out += b"\0" * (-len(out) % 4)
        out += data
        out += b"\0" * (-len(out) % 4)
    return bytes(out)


#: room the cached directories may take on the kernel's command line (2048 bytes in all)
_CACHED_ROOM = 1200


def cached_dirs(view: View, policy: Policy) -> list[str]:
    """The interpreter's own directories (prefixes, ``sys.path`` entries but the first, the
    folders of the shared libraries it maps) that the guest may cache (9p ``cache=loose``, a
    second device sharing the same tree): what the program's files are not. A directory that
    holds or lies in a directory a rule exposes, the working directory or a rule file is never cached
    (the host may change what is there while the guest runs; the guest's writes must reach the
    host at once). Start-up under TCG is about 1.4 s shorter."""
    from .landlock import _interpreter_paths, _mapped_files
    from .namespaces import _beneath

    # the built-in read-only exposures (prefixes, virtual environment, CA stores) are the
    # interpreter's own: cacheable
    live = [e.path for e in policy.files_policy.exposures if e.rule is not None or e.writable]
    live += list(view.write_dirs)
    live += [
        view.cwd,
        *(path for path, _writable in view.rebound),
        *view.masked_dirs,
        *view.masked_files,
    ]
    live += [os.path.dirname(os.path.realpath(f)) for f in policy.files]
    candidates = {os.path.realpath(p) for p in _interpreter_paths()}
    candidates |= {os.path.dirname(os.path.realpath(p)) for p in _mapped_files()}
    shown = list(view.read_dirs)
    chosen: list[str] = []
    for path in sorted(candidates):
        if not os.path.isdir(path) or re.search(r"[\s:]", path):
            continue
        if not any(_beneath(path, d) for d in shown):
            continue  # not in the view at all
        if any(_beneath(path, other) for other in live) or any(_beneath(other, path) for other in live):
            continue
        if any(_beneath(path, c) for c in chosen):
            continue
        chosen = [c for c in chosen if not _beneath(c, path)] + [path]
    kept: list[str] = []
    for path in sorted(chosen, key=len):
        if sum(len(p) + 1 for p in kept) + len(path) > _CACHED_ROOM:
            break
        kept.append(path)
    return sorted(kept)


def _guest_cgroup(limits: Any) -> dict[str, int]:
    """``pids.max`` and ``memory.max`` for the program's cgroup in the guest (the memory with the
    same headroom as on the host: ``MemoryError`` from the rlimit comes first)."""
    if limits is None:
        return {}
    from ..limits import CGROUP_HEADROOM

    wanted = {}
    if limits["limit-processes"]:
        wanted["pids.max"] = int(limits["limit-processes"])
    if limits["limit-memory"]:
        wanted["memory.max"] = int(limits["limit-memory"]) + CGROUP_HEADROOM
    return wanted


def launcher_argv(
    view: View, policy: Policy, filter_fd: int, limits: Any = None
) -> tuple[list[str], list[int]]:
    """The host launcher's command line (the program's follows ``--``) and the descriptor of
    its settings (inherited; the caller closes it once the launcher runs). ``limits``: the
    run's resource limits; the guest's agent puts the program in a cgroup of the guest for
    ``limit-processes`` and ``limit-memory`` (the rlimits are the program's own business)."""
    import json

    from .unshare_setup import view_data

    reason = unavailable_reason()
    if reason is not None:
        raise ProviderError(f"os-sandbox=qemu cannot start: {reason}")
    found = kernel()
    assert found is not None
    image, modules = found
    options = policy.options_for("qemu")
    accel, why = accelerator(bool(options.get("use_kvm", True)))
    from .._log import USER_LOGGER, info

    info(USER_LOGGER, "os-sandbox=qemu: the guest runs under %s (%s)", accel.upper(), why)
    timeout = options.get("start_timeout")
    with os.fdopen(os.dup(filter_fd), "rb") as f:
        f.seek(0)
        seccomp = f.read()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for path in (sys.executable, root):
        if re.search(r"\s", path):
            raise ProviderError(f"os-sandbox=qemu cannot start: the path '{path}' contains white space")
    settings: dict[str, Any] = {
        "view": view_data(view, -1),
        "kernel": boot_image(image),
        "initramfs": initramfs(modules),
        "accel": accel,
        "accel_why": why,
        "kvm_marker": kvm_marker(),
        "memory_mb": int(str(options.get("memory") or DEFAULT_MEMORY_MB << 20)) >> 20,
        "start_timeout": float(str(timeout)) if timeout else None,
        "show_boot_console": bool(options.get("show_boot_console", False)),
        "seccomp": seccomp.hex(),
        "python": sys.executable,
        "root": root,
        "qemu": _which_qemu(),
        "cgroup": _guest_cgroup(limits),
        "cached": cached_dirs(view, policy),
    }
    fd = os.memfd_create("pysandboxes-qemu", 0)
    os.write(fd, json.dumps(settings).encode())
    os.lseek(fd, 0, os.SEEK_SET)
    os.set_inheritable(fd, True)
    boot = "import sys; sys.path.insert(0, sys.argv[1]); from pysandboxes.providers.qemu_launch import main; main()"
    return [sys.executable, "-I", "-S", "-c", boot, root, str(fd)], [fd]
