"""OS providers: what holds when the code is hostile.

Each provider answers :func:`unavailable_reason` (None when it can start) and is applied by
the runtime: ``none`` adds nothing, ``subprocess`` starts a fresh interpreter with the filtered
environment (no OS boundary), ``landlock`` confines the running process itself. A provider
named by the rules that cannot start is an error, never a silent downgrade.
"""

from __future__ import annotations

from ..errors import ProviderError

TYPE_CHECKING = False
if TYPE_CHECKING:  # the guest's agent of os-sandbox=qemu imports this package: it stays light
    from ..rules.policy import Policy

#: providers whose sandbox a launcher process builds (the program runs in a fresh interpreter)
LAUNCHED = ("bwrap", "unshare", "firejail", "qemu")


def unix_sockets_refused_by(policy: Policy, provider: str) -> str | None:
    """``provider`` when its seccomp filter refuses ``socket(AF_UNIX)`` (see seccomp.py): no
    ``<provider>.unix-sockets=true``. Used to name that rule when the kernel refuses one."""
    if provider not in ("landlock", "bwrap", "unshare"):
        return None
    return None if policy.options_for(provider).get("unix-sockets") else provider


def default_provider() -> str:
    """``landlock`` where the kernel filters TCP ports (ABI >= 4) and the seccomp filter that
    completes it is built for the machine, ``subprocess`` elsewhere."""
    from .landlock_abi import landlock_abi
    from .seccomp import landlock_unsupported

    return "landlock" if landlock_abi() >= 4 and landlock_unsupported() is None else "subprocess"


def chosen(policy: Policy) -> tuple[str, str]:
    """The provider to use and why: ``(name, "the rule …" | "the default")``."""
    setting = policy.os_sandbox
    if setting.value:
        return str(setting.value), setting.rule.describe() if setting.rule else "the rules"
    return default_provider(), "the default for this machine"


def unavailable_reason(name: str) -> str | None:
    if name in ("none", "subprocess"):
        return None
    if name == "landlock":
        from .landlock import available

        return available()
    if name in ("bwrap", "unshare"):
        from .namespaces import unavailable_reason as namespaces_reason

        return namespaces_reason(name)
    if name == "firejail":
        from .firejail import unavailable_reason as firejail_reason

        return firejail_reason()
    if name == "qemu":
        from .qemu import unavailable_reason as qemu_reason

        return qemu_reason()
    return f"unknown provider '{name}'"


def require(policy: Policy) -> str:
    """The provider name, or :class:`ProviderError` with the reason and what to do."""
    name, why = chosen(policy)
    reason = unavailable_reason(name)
    if reason is not None:
        raise ProviderError(f"os-sandbox={name} (from {why}) cannot start: {reason}")
    return name
