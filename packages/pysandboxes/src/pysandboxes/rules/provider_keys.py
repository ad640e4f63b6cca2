"""The provider keys (``<provider>.<key>=value``) the rule language knows.

Each provider declares its keys here with a parser. Keys of every provider are validated;
only the active provider's are applied. An unknown key is an error, never silently dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType

from .._record import Record
from .values import parse_bool, parse_duration, parse_int, parse_qemu_memory

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PROVIDERS = ("none", "subprocess", "landlock", "bwrap", "unshare", "firejail", "qemu")


class ProviderKey(Record):
    __slots__ = ("help", "name", "parse")
    name: str
    parse: Callable[[str, str], object]
    help: str


def _choice(*choices: str) -> Callable[[str, str], str]:
    def parse(value: str, key: str) -> str:
        v = value.strip().lower()
        if v not in choices:
            raise ValueError(f"invalid value '{value}' for {key}: use one of {', '.join(choices)}")
        return v

    return parse


def _hostname(value: str, key: str) -> str:
    if not _re().fullmatch(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?", value.strip()):
        raise ValueError(f"invalid host name '{value}' for {key}: letters, digits and '-' only")
    return value.strip()


def _interface(value: str, key: str) -> str:
    v = value.strip()
    if v != "none" and not _re().fullmatch(r"[A-Za-z0-9_.:-]{1,15}", v):
        raise ValueError(f"invalid value '{value}' for {key}: a network interface name or none")
    return v


def _syscall_list(value: str, key: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in value.split(",") if n.strip())
    for n in names:
        if not _re().fullmatch(r"@?[a-z_][a-z0-9_-]*", n):
            raise ValueError(f"invalid system call name '{n}' for {key}")
    if not names:
        raise ValueError(f"{key} needs a comma-separated list of system calls")
    return names


def _rlimit(value: str, key: str) -> int:
    return parse_int(value, key)


def _bool(value: str, key: str) -> bool:
    return parse_bool(value, key, empty=True)


def _keys(*keys: ProviderKey) -> MappingProxyType[str, ProviderKey]:
    return MappingProxyType({k.name: k for k in keys})


#: the kernel layer refuses socket(AF_UNIX) unless the active provider's key says true
_UNIX_SOCKETS = ProviderKey(
    "unix-sockets", _bool, "true: the program may create UNIX sockets (the kernel layer refuses them)"
)

PROVIDER_KEYS: MappingProxyType[str, MappingProxyType[str, ProviderKey]] = MappingProxyType(
    {
        "landlock": _keys(
            _UNIX_SOCKETS,
        ),
        "bwrap": _keys(
            ProviderKey(
                "share-net", _bool, "true: share the host's network (no network rules apply to native code)"
            ),
            ProviderKey("unshare-net", _bool, "false: same as share-net=true"),
            ProviderKey("hostname", _hostname, "host name seen inside the sandbox"),
            _UNIX_SOCKETS,
        ),
        "unshare": _keys(
            ProviderKey("proc", _choice("mount", "none"), "mount: a private /proc (default); none: no /proc"),
            ProviderKey("hostname", _hostname, "host name seen inside the sandbox"),
            _UNIX_SOCKETS,
        ),
        "firejail": _keys(
            ProviderKey("net", _interface, "network interface to bridge, or none"),
            ProviderKey("seccomp", _bool, "true: firejail's default seccomp filter"),
            ProviderKey("seccomp.keep", _syscall_list, "system calls kept (allow-list filter)"),
            ProviderKey("seccomp.block", _syscall_list, "extra system calls refused"),
            ProviderKey("rlimit-as", _rlimit, "address-space limit in bytes"),
            ProviderKey("rlimit-cpu", _rlimit, "CPU seconds"),
            ProviderKey("rlimit-fsize", _rlimit, "largest file size in bytes"),
            ProviderKey("rlimit-nofile", _rlimit, "open files"),
            ProviderKey("rlimit-nproc", _rlimit, "processes"),
            ProviderKey("rlimit-sigpending", _rlimit, "pending signals"),
            _UNIX_SOCKETS,
        ),
        "qemu": _keys(
            ProviderKey("use_kvm", _bool, "true: use KVM when /dev/kvm works (default), false: emulate"),
            ProviderKey("memory", parse_qemu_memory, "guest memory, e.g. 512M or 2G (default 2048 MiB)"),
            ProviderKey("show_boot_console", _bool, "true: show the guest's boot console"),
            ProviderKey("start_timeout", parse_duration, "seconds the guest gets to become ready"),
            ProviderKey("virtfs", _choice("auto", "on", "off"), "stage trees before sharing them"),
            ProviderKey("virtfs_stage", _choice("auto", "on", "off"), "old name of qemu.virtfs"),
            ProviderKey(
                "virtfs_security_model",
                _choice("mapped-xattr", "mapped-file", "passthrough", "none"),
                "9p security model",
            ),
            ProviderKey(
                "ld_closure_libs",
                lambda v, k: tuple(p.strip() for p in v.split(",") if p.strip()),
                "extra libraries",
            ),
        ),
    }
)


def normalise(provider: str, key: str) -> str | None:
    """The declared name of ``key`` for ``provider`` (``-`` and ``_`` are interchangeable)."""
    keys = PROVIDER_KEYS.get(provider)
    if keys is None:
        return None
    wanted = key.replace("_", "-")
    for name in keys:
        if name.replace("_", "-") == wanted:
            return name
    return None


def _re() -> Any:
    """``re`` on first use: importing it costs milliseconds on every start of python-sb."""
    import re

    return re
