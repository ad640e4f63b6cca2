"""The network guard: ``net=`` rules on the socket audit events.

``socket.connect``, ``bind``, ``sendto``, ``sendmsg``, ``getaddrinfo`` and ``gethostbyname``
are raised by the C socket module, so the C base class found through ``type(sock).__mro__``
or a fresh ``_socket`` is judged the same way. Host names in rules were resolved once when the
rules loaded (pinned); a lookup of a name no rule names is refused before any query leaves.
AF_UNIX sockets are judged by the file rules (connecting or binding needs a writable exposure);
other families (netlink, packet, …) are refused.

**Values are judged as C uses them, never by asking them** (the file guard's docstring gives
the attack). An address is the program's object: ``str(host)`` and ``host.lower()`` run its
methods, a port's ``<=`` is its own ``__ge__``, a tuple subclass answers ``address[0]`` as it
likes, and for a ``str`` subclass C does not even use the characters: the ``idna`` codec calls
the object's own ``encode()``, whose answer is the name C resolves. So:

* a host must be an exact ``str`` or ``bytes`` (bytes: a subclass's data, read by
  ``bytes.__bytes__``); anything else is refused, with the way out in the message;
* a port is read by ``int.__index__`` (the data of a real ``int``, which is what C's ``i``
  format reads) and compared as that exact int; an object that is no real int is refused;
* the items of an address tuple are read by ``tuple.__getitem__``; an AF_UNIX name must be
  a real ``str`` or ``bytes`` (a ``bytearray`` can change after C read it), is cut at its first
  NUL where the kernel cuts it, and an abstract name (first byte NUL) is refused.

C resolves a host name given to ``connect``, ``connect_ex``, ``bind``, ``sendto`` and
``sendmsg`` *before* it raises the event, so the query would leave before any refusal:
``socket.socket``'s methods are wrapped (:func:`before_resolution`) to convert the address to
exact values, refuse a name no rule pins first, and hand C the judged tuple. Code calling the
C methods of ``_socket.socket`` directly still gets its name looked up (then the connection
refused): a DNS query the Python layer cannot stop; docs/security-model.md says which
provider holds. ``tests/guards/test_value_confusion.py`` tries each lie, next to the same call
with a plain value.
"""

from __future__ import annotations

import _socket

from .._record import Record
from ..errors import RuleSocketConnectionRefusedError
from ..rules.policy import Policy
from ._seal import frozen_get, seal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_LOCALHOST = ("127.0.0.1", "::1")


def _parse_ip(host, _pton=None, _from_bytes=None, _AF4=None, _AF6=None, _OSError=None):  # type: ignore[no-untyped-def]
    """``(version, integer)`` for an address literal (IPv4-mapped IPv6 as IPv4), else None.
    An IPv6 literal may carry a ``%scope`` (C resolves it without a query); IPv4 may not."""
    try:
        return (4, _from_bytes(_pton(_AF4, host), "big"))
    except _OSError:
        pass
    try:
        packed = _pton(_AF6, host.partition("%")[0])
    except _OSError:
        return None
    if packed[:12] == b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff":
        return (4, _from_bytes(packed[12:], "big"))
    return (6, _from_bytes(packed, "big"))


def _host_text(host, _type=None, _str=None, _bytes=None, _bytes_of=None, _decode=None, _TypeError=None):  # type: ignore[no-untyped-def]
    """A host name or address as the exact ``str`` C resolves, or None when that cannot be
    told (a ``str`` subclass: C asks its ``encode()``; a ``bytearray`` can change)."""
    kind = _type(host)
    if kind is _str:
        return host
    if kind is not _bytes:
        try:
            host = _bytes_of(host)
        except _TypeError:
            return None
    return _decode(host, "latin-1")  # C sends the bytes as they are: non-ASCII never matches


def _port_number(port, _type=None, _int=None, _index=None, _TypeError=None):  # type: ignore[no-untyped-def]
    """A port as the exact int C's ``i`` format read from a real int, or None."""
    if _type(port) is _int:
        return port
    try:
        return _index(port)
    except _TypeError:
        return None


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
    _int=None,
    _type=None,
    _learn=None,
):
    """``host``: an exact str; ``port``: an exact int (see ``_host_text``, ``_port_number``)."""
    if _type(host) is not _str or _type(port) is not _int:
        raise _Refused("Connection DENIED: the guard judges exact str hosts and int ports only.")
    addresses: tuple[str, ...]
    if host == "" or host == "0.0.0.0" or host == "::":
        addresses = ("0.0.0.0",) if host != "::" else ("::",)
    elif host == "localhost":
        addresses = ("127.0.0.1", "::1")
    else:
        found = _pinned(host.lower().rstrip(".")) if host.isascii() else None
        addresses = (host,) if found is None else found
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
    _str=None,
    _bytes=None,
    _int=None,
    _item=None,
    _host=None,
    _port=None,
    _str_of=None,
    _bytes_of=None,
    _decode=None,
    _name_of=None,
    _TypeError=None,
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
        if address is None or _type(address) is _tuple:
            return  # C refuses it
        kind = _type(address)
        if kind is not _str:
            if kind is not _bytes:
                try:
                    address = _str_of(address)
                except _TypeError:
                    try:
                        address = _bytes_of(address)
                    except _TypeError:
                        raise _Refused(
                            f"Socket operation on an AF_UNIX address given as a '{_name_of(kind)}' object "
                            "DENIED: it can change after C read it.\nPass the path as a str or bytes."
                        ) from None
            if _type(address) is _bytes:
                address = _decode(address, "utf-8", "surrogateescape")
        if address == "" or address[0] == "\x00":
            raise _Refused(
                "Connection to an abstract AF_UNIX socket DENIED: abstract sockets have no path "
                "a file rule can cover."
            )
        _check_file(address, True)  # judged up to a NUL, where the kernel ends the name
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
    if _type(address) is _tuple:
        host, port = address[0], address[1]
    else:  # C took it: a real tuple (subclass) of 2 or more; its own items
        host, port = _item(address, 0), _item(address, 1)
    text = host if _type(host) is _str else _host(host)
    number = port if _type(port) is _int else _port(port)
    if text is None:
        raise _Refused(
            f"Connection to a host given as a '{_name_of(_type(host))}' object DENIED: C resolves "
            "what its encode() answers, not what it shows.\nPass the host as a str."
        )
    if number is None:
        raise _Refused(
            f"Connection to '{text}' DENIED: its port is a '{_name_of(_type(port))}' object, not an "
            "int.\nPass the port as an int."
        )
    _judge(text, number, protocol, _direction)


def _on_lookup(  # type: ignore[no-untyped-def]
    args, _pinned=None, _parse=None, _host=None, _name_of=None, _type=None, _Refused=None, _learn=None
):
    host = args[0]
    if host is None:
        return
    text = _host(host)
    if text is None:
        raise _Refused(
            f"Resolution of a host given as a '{_name_of(_type(host))}' object DENIED: C resolves "
            "what its encode() answers, not what it shows.\nPass the host as a str."
        )
    name = text.lower().rstrip(".")
    if name == "" or name == "localhost" or (text.isascii() and name in _pinned) or _parse(text) is not None:
        return
    if _learn is not None and _learn(name, args[1] if args[1:] else None):
        return
    raise _Refused(
        f"Resolution of '{text}' DENIED: no net= rule names it, so it is never looked up.\n"
        f"Add `net=ALLOW|tcp|{text}|443|OUT` (with the right protocol and port) to allow it."
    )


def _on_reverse(args, _host=None, _Refused=None, _loopback=None):  # type: ignore[no-untyped-def]
    text = _host(args[0])
    if text is not None and text in _loopback:
        return
    raise _Refused(f"Reverse lookup of '{text}' DENIED: the sandbox sends no DNS query for it.")


def _before_resolution(  # type: ignore[no-untyped-def]
    sock,
    address,
    _family=None,
    _type=None,
    _tuple=None,
    _str=None,
    _int=None,
    _len=None,
    _concat=None,
    _str_of=None,
    _port=None,
    _pton=None,
    _lookup=None,
    _TypeError=None,
    _OSError=None,
    _AF_INET=None,
    _AF_INET6=None,
):
    """The address ``socket.socket``'s methods hand C: its items read once, as exact values,
    and a host name no rule pins refused *before* C resolves it (C looks a name up before it
    raises the event). Anything else goes to C unchanged, for the event to judge."""
    family = _family(sock)
    if family != _AF_INET and family != _AF_INET6:
        return address
    exact = _type(address) is _tuple
    if not exact:
        try:
            address = _concat((), address)  # a tuple subclass: a tuple of its real items
        except _TypeError:
            return address  # not a tuple: C refuses it
    if _len(address) < 2:
        return address
    host, port = address[0], address[1]
    if _type(host) is not _str:
        exact = False
        try:
            host = _str_of(host)  # a str subclass: its characters, not its encode()
        except _TypeError:
            return address
    if _type(port) is not _int:
        exact = False
        port = _port(port)
        if port is None:
            return address
    try:
        _pton(family, host)  # an address literal of the socket's family: nothing to resolve
    except _OSError:
        if host != "<broadcast>":
            _lookup((host, port))  # a name (or a literal C resolves): refused unless named
    if exact:
        return address
    return (host, port, *address[2:])


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
        _int=int,
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


class NetworkGuard(Record):
    """The sealed functions of the network guard (built once per run by :func:`build`)."""

    __slots__ = ("before_resolution", "handlers", "judge_listen")
    #: audit event -> sealed handler(args)
    handlers: dict[str, Callable[[tuple[Any, ...]], None]]
    #: judge_listen(sock): ``listen()`` raises no event
    judge_listen: Callable[[Any], None]
    #: before_resolution(sock, address) -> the exact address to hand C (or the refusal)
    before_resolution: Callable[[Any, Any], Any]


def build(
    policy: Policy,
    check_file: Callable[..., None],
    learn: Callable[..., bool] | None = None,
    learn_lookup: Callable[..., bool] | None = None,
) -> NetworkGuard:
    """The sealed handlers of the network guard (audit event -> handler(args)), the judge of
    ``listen()`` (which raises no event) and the address check ``socket.socket``'s methods run
    before C resolves a name. Learning mode: ``learn(host, port, protocol, direction)`` and
    ``learn_lookup(name, port)`` record and return True to allow."""
    parse, _decide_fn, judge = decider(policy, learn)
    pinned = _pinned(policy)
    name_of = type.__dict__["__name__"].__get__
    host = seal(
        _host_text,
        _type=type,
        _str=str,
        _bytes=bytes,
        _bytes_of=bytes.__bytes__,
        _decode=bytes.decode,
        _TypeError=TypeError,
    )
    port = seal(_port_number, _type=type, _int=int, _index=int.__index__, _TypeError=TypeError)
    family = _socket.socket.family.__get__  # type: ignore[attr-defined]
    common: dict[str, object] = {
        "_judge": judge,
        "_check_file": check_file,
        "_family": family,
        "_kind": _socket.socket.type.__get__,  # type: ignore[attr-defined]
        "_type": type,
        "_tuple": tuple,
        "_str": str,
        "_bytes": bytes,
        "_int": int,
        "_item": tuple.__getitem__,
        "_host": host,
        "_port": port,
        "_str_of": str.__str__,
        "_bytes_of": bytes.__bytes__,
        "_decode": bytes.decode,
        "_name_of": name_of,
        "_TypeError": TypeError,
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
        _host=host,
        _name_of=name_of,
        _type=type,
        _Refused=RuleSocketConnectionRefusedError,
        _learn=learn_lookup,
    )
    judge_listen = seal(
        _judge_listen,
        _getsockname=_socket.socket.getsockname,
        _family=family,
        _judge=judge,
        _AF_INET=_socket.AF_INET,
        _AF_INET6=_socket.AF_INET6,
    )
    before = seal(
        _before_resolution,
        _family=family,
        _type=type,
        _tuple=tuple,
        _str=str,
        _int=int,
        _len=len,
        _concat=tuple.__add__,
        _str_of=str.__str__,
        _port=port,
        _pton=_socket.inet_pton,
        _lookup=lookup,
        _TypeError=TypeError,
        _OSError=OSError,
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
            _on_reverse,
            _host=host,
            _Refused=RuleSocketConnectionRefusedError,
            _loopback=frozenset(_LOCALHOST),
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
    return NetworkGuard(handlers, judge_listen, before)
