"""The network guard: ``net=`` rules on the socket audit events.

``socket.connect``, ``bind``, ``sendto``, ``sendmsg``, ``getaddrinfo`` and ``gethostbyname``
are raised by the C socket module, so the C base class found through ``type(sock).__mro__``
or a fresh ``_socket`` is judged the same way. Host names in rules were resolved once when the
rules loaded (pinned); a lookup of a name no rule names is refused before any query leaves.
AF_UNIX sockets are judged by the file rules (connecting or binding needs a writable exposure);
other families (netlink, packet, …) are refused.
"""

from __future__ import annotations

import _socket

from ..errors import RuleSocketConnectionRefusedError
from ..rules.policy import Policy
from ._seal import frozen_get, seal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_LOCALHOST = ("127.0.0.1", "::1")


def _parse_ip(host, _pton=None, _from_bytes=None, _AF4=None, _AF6=None, _OSError=None):  # type: ignore[no-untyped-def]
    """``(version, integer)`` for an address literal (IPv4-mapped IPv6 as IPv4), else None."""
    text = host.partition("%")[0]
    try:
        return (4, _from_bytes(_pton(_AF4, text), "big"))
    except _OSError:
        pass
    try:
        packed = _pton(_AF6, text)
    except _OSError:
        return None
    if packed[:12] == b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff":
        return (4, _from_bytes(packed[12:], "big"))
    return (6, _from_bytes(packed, "big"))


def _decide(version, value, port, protocol, direction, _rules=None):  # type: ignore[no-untyped-def]
    """The first matching rule (DENY rules come first), or None for the default deny."""
    for rule in _rules:
        _allow, protocols, directions, ports, networks, _described, _text = rule
        if protocol not in protocols or direction not in directions:
            continue
        hit = False
        for lo, hi in ports:
            if lo <= port <= hi:
                hit = True
                break
        if not hit:
            continue
        for net_version, base, mask in networks:
            if net_version == version and value & mask == base:
                return rule
    return None


def _judge(  # type: ignore[no-untyped-def]
    host,
    port,
    protocol,
    direction,
    _parse=None,
    _decide=None,
    _pinned=None,
    _Refused=None,
    _str=None,
    _type=None,
    _learn=None,
):
    if _type(host) is not _str:
        host = _str.__str__(host) if _str in _type(host).__mro__ else _str(host)
    addresses: tuple[str, ...]
    if host == "" or host == "0.0.0.0" or host == "::":
        addresses = ("0.0.0.0",) if host != "::" else ("::",)
    elif host == "localhost":
        addresses = ("127.0.0.1", "::1")
    else:
        addresses = _pinned(host.lower().rstrip("."))
        if addresses is None:
            addresses = (host,)
    if not addresses:
        raise _Refused(
            f"Connection to '{host}' DENIED: its net= rule names it, but the name did not resolve "
            "when the rules were loaded, so no address is allowed."
        )
    shown_host = host if host == addresses[0] else None
    for address in addresses:
        parsed = _parse(address)
        if parsed is None:
            if _learn is not None and _learn(host, port, protocol, direction):
                return
            raise _Refused(
                f"Connection to '{host}' DENIED: no net= rule names it, so it is never resolved.\n"
                f"Add `net=ALLOW|{protocol}|{host}|{port}|{direction.upper()}` to allow it."
            )
        version, value = parsed
        target = f"[{address}]:{port}" if shown_host is not None else f"'{host}' ({address}:{port})"
        verb = "Connection to" if direction == "out" else "Listening on"
        rule = _decide(version, value, port, protocol, direction)
        if rule is None:
            if _learn is not None and _learn(host, port, protocol, direction):
                continue
            raise _Refused(
                f"{verb} {target} DENIED by implicit default policy\n"
                f"Add `net=ALLOW|{protocol}|{address}|{port}|{direction.upper()}` to allow it."
            )
        if not rule[0]:
            raise _Refused(f"{verb} {target} DENIED by explicit rule {rule[5]}")


def _on_address(  # type: ignore[no-untyped-def]
    args,
    _direction="out",
    _judge=None,
    _check_file=None,
    _family=None,
    _kind=None,
    _type=None,
    _tuple=None,
    _Refused=None,
    _AF_INET=None,
    _AF_INET6=None,
    _AF_UNIX=None,
    _STREAM=None,
    _DGRAM=None,
):
    sock, address = args[0], args[1]
    family = _family(sock)
    if family == _AF_UNIX:
        if _type(address) is _tuple or address is None:
            return
        if address[:1] in ("\x00", b"\x00") or not address:
            raise _Refused(
                "Connection to an abstract AF_UNIX socket DENIED: abstract sockets have no path "
                "a file rule can cover."
            )
        _check_file(address, True)
        return
    if family != _AF_INET and family != _AF_INET6:
        raise _Refused(
            f"Socket operation on address family {family} DENIED: only IPv4, IPv6 and AF_UNIX "
            "sockets can be judged by rules."
        )
    if address is None:
        return  # sendto/sendmsg on a connected socket: judged at connect
    kind = _kind(sock) & 0xF
    protocol = "tcp" if kind == _STREAM else "udp" if kind == _DGRAM else "raw"
    if protocol == "raw":
        raise _Refused("Raw sockets are DENIED: no net= rule can allow them.")
    host, port = address[0], address[1]
    _judge(host, port, protocol, _direction)


def _on_lookup(  # type: ignore[no-untyped-def]
    args, _pinned=None, _parse=None, _Refused=None, _str=None, _bytes=None, _type=None, _learn=None
):
    host = args[0]
    if host is None:
        return
    if _type(host) is _bytes:
        host = _bytes.decode(host, "ascii", "replace")
    elif _type(host) is not _str:
        host = _str(host)
    name = host.lower().rstrip(".")
    if name == "" or name == "localhost" or name in _pinned or _parse(host) is not None:
        return
    if _learn is not None and _learn(name, args[1]):
        return
    raise _Refused(
        f"Resolution of '{host}' DENIED: no net= rule names it, so it is never looked up.\n"
        f"Add `net=ALLOW|tcp|{host}|443|OUT` (with the right protocol and port) to allow it."
    )


def _on_reverse(args, _parse=None, _Refused=None, _loopback=None):  # type: ignore[no-untyped-def]
    address = args[0]
    if address in _loopback:
        return
    raise _Refused(f"Reverse lookup of '{address}' DENIED: the sandbox sends no DNS query for it.")


def _on_nameinfo(args, _Refused=None, _loopback=None, _type=None, _tuple=None, _str=None):  # type: ignore[no-untyped-def]
    """``getnameinfo(sockaddr, flags)``: the event carries the address, not the flags. A
    loopback address is answered from the hosts file, as for ``gethostbyaddr``; any other may
    send a DNS query. Exact types only: a ``str`` subclass could compare equal to anything."""
    sockaddr = args[0]
    host = sockaddr[0] if _type(sockaddr) is _tuple and sockaddr else None
    if _type(host) is _str and host in _loopback:
        return
    raise _Refused(
        f"Reverse lookup of '{host}' (socket.getnameinfo) DENIED: the sandbox sends no DNS query for it."
    )


def _refuse_always(args, _Refused=None, _message=""):  # type: ignore[no-untyped-def]
    raise _Refused(_message)


def _pinned(policy: Policy) -> dict[str, tuple[str, ...]]:
    pinned: dict[str, tuple[str, ...]] = {}
    for r in policy.net.rules:
        if r.hostname:
            pinned[r.hostname.lower().rstrip(".")] = tuple(str(n.network_address) for n in r.networks)
    return pinned


def _network(net: Any) -> tuple[int, int, int]:
    bits = net.max_prefixlen
    mask = ((1 << bits) - 1) ^ ((1 << (bits - net.prefixlen)) - 1)
    return (net.version, int(net.network_address) & mask, mask)


def decider(
    policy: Policy, learn: Callable[..., bool] | None = None
) -> tuple[Callable[..., Any], Callable[..., Any], Callable[..., None]]:
    """The sealed ``(parse, decide, judge)`` functions of ``policy``'s ``net=`` rules.

    ``parse(text) -> (version, int) | None``; ``decide(version, int, port, protocol,
    direction) -> rule tuple | None``; ``judge(host, port, protocol, direction)`` raises.
    """
    net = policy.net
    rules = tuple(
        (
            r.allow,
            frozenset(r.protocols),
            frozenset(r.directions),
            tuple(r.ports),
            tuple(_network(n) for n in r.networks),
            r.rule.describe(),
            r.rule.text,
        )
        for r in (*net.deny, *net.allow)
    )
    pinned = _pinned(policy)
    parse = seal(
        _parse_ip,
        _pton=_socket.inet_pton,
        _from_bytes=int.from_bytes,
        _AF4=_socket.AF_INET,
        _AF6=_socket.AF_INET6,
        _OSError=OSError,
    )
    decide = seal(_decide, _rules=rules)
    judge = seal(
        _judge,
        _parse=parse,
        _decide=decide,
        _pinned=frozen_get(pinned),
        _Refused=RuleSocketConnectionRefusedError,
        _str=str,
        _type=type,
        _learn=learn,
    )
    return parse, decide, judge


def _judge_listen(  # type: ignore[no-untyped-def]
    sock, _getsockname=None, _family=None, _judge=None, _AF_INET=None, _AF_INET6=None
):
    """A socket that listens without a bind gets a random port on every interface."""
    family = _family(sock)
    if family in (_AF_INET, _AF_INET6) and _getsockname(sock)[1] == 0:
        _judge("::" if family == _AF_INET6 else "0.0.0.0", 0, "tcp", "in")


def build(
    policy: Policy,
    check_file: Callable[..., None],
    learn: Callable[..., bool] | None = None,
    learn_lookup: Callable[..., bool] | None = None,
) -> tuple[dict[str, Callable[[tuple[Any, ...]], None]], Callable[[Any], None]]:
    """The sealed handlers of the network guard (audit event -> handler(args)), and the
    judge of ``listen()`` (which raises no event). Learning mode: ``learn(host, port,
    protocol, direction)`` and ``learn_lookup(name, port)`` record and return True to allow."""
    parse, _decide_fn, judge = decider(policy, learn)
    pinned = _pinned(policy)
    common: dict[str, object] = {
        "_judge": judge,
        "_check_file": check_file,
        "_family": _socket.socket.family.__get__,  # type: ignore[attr-defined]
        "_kind": _socket.socket.type.__get__,  # type: ignore[attr-defined]
        "_type": type,
        "_tuple": tuple,
        "_Refused": RuleSocketConnectionRefusedError,
        "_AF_INET": _socket.AF_INET,
        "_AF_INET6": _socket.AF_INET6,
        "_AF_UNIX": getattr(_socket, "AF_UNIX", -1),
        "_STREAM": _socket.SOCK_STREAM,
        "_DGRAM": _socket.SOCK_DGRAM,
    }
    outgoing = seal(_on_address, _direction="out", **common)
    lookup = seal(
        _on_lookup,
        _pinned=frozenset(pinned),
        _parse=parse,
        _Refused=RuleSocketConnectionRefusedError,
        _str=str,
        _bytes=bytes,
        _type=type,
        _learn=learn_lookup,
    )
    judge_listen = seal(
        _judge_listen,
        _getsockname=_socket.socket.getsockname,
        _family=_socket.socket.family.__get__,  # type: ignore[attr-defined]
        _judge=judge,
        _AF_INET=_socket.AF_INET,
        _AF_INET6=_socket.AF_INET6,
    )
    handlers = {
        "socket.connect": outgoing,
        "socket.sendto": outgoing,
        "socket.sendmsg": outgoing,
        "socket.bind": seal(_on_address, _direction="in", **common),
        "socket.getaddrinfo": lookup,
        "socket.gethostbyname": lookup,
        "socket.gethostbyaddr": seal(
            _on_reverse, _parse=parse, _Refused=RuleSocketConnectionRefusedError, _loopback=_LOCALHOST
        ),
        "socket.getnameinfo": seal(
            _on_nameinfo,
            _Refused=RuleSocketConnectionRefusedError,
            _loopback=_LOCALHOST,
            _type=type,
            _tuple=tuple,
            _str=str,
        ),
        "socket.sethostname": seal(
            _refuse_always,
            _Refused=RuleSocketConnectionRefusedError,
            _message="socket.sethostname DENIED: a sandboxed program cannot rename the host.",
        ),
    }
    return handlers, judge_listen
