"""The network broker of ``os-sandbox=bwrap`` and ``os-sandbox=unshare``.

The sandbox runs in its own network namespace: it has only its own loopback. ``net=`` rules
are held by two halves that talk over one inherited ``AF_UNIX`` ``SOCK_SEQPACKET`` socket:

* :class:`Broker` runs in the host process, outside the sandbox, with the compiled rules. For
  every request it judges the destination with the same decision table as the Python layer
  (``guards.network.decider``: DENY rules first, then ALLOW, then the default deny), opens the
  TCP connection itself in the host's network namespace and passes the connected socket back
  (``SCM_RIGHTS``). It never trusts the sandbox: it connects only to address literals, every
  request is judged, malformed requests get an error, pending connections are bounded. For
  ``IN`` rules it listens on the host's loopback and passes each accepted socket in.
* :class:`Forwarder` runs inside the namespace (threads, or a forked process: see
  :func:`fork_forwarder`). It listens on every allowed TCP port on the wildcard address, so a
  connection from any code (a C extension, ``curl``) to any address on that port lands there;
  the address the client dialled is ``getsockname()`` of the accepted socket. Host names of the
  rules get an alias address ``127.0.1.N`` in the sandbox's ``/etc/hosts`` (:attr:`NetPlan.hosts`)
  and are mapped back to the addresses pinned when the rules loaded. The Forwarder asks the
  broker for the real destination and copies bytes both ways. A port no rule allows has no
  listener: connection refused. A destination the broker refuses is accepted, then reset.
  With ``CAP_NET_ADMIN`` in the namespace (``unshare --map-root-user``), rules naming
  non-loopback addresses work too: every address is made local to ``lo`` (a ``local default``
  route, the "AnyIP" trick), so ``connect(10.1.2.3:443)`` reaches the wildcard listener.

Wire format (one JSON object per datagram, UTF-8):

* sandbox -> host (at most :data:`MAX_MESSAGE` bytes): ``{"op": "connect", "id": N,
  "proto": "tcp", "host": "<address literal>", "port": P}``; a file descriptor attached is
  discarded by the kernel (received without room for it).
* host -> sandbox (at most :data:`MAX_REPLY` bytes): ``{"op": "connected", "id": N}`` + one
  fd (``SCM_RIGHTS``), or ``{"op": "error", "id": N | null, "error": "<text>"}``, or (IN
  rules) ``{"op": "accepted", "host": "127.0.0.1" | "::1", "port": P}`` + one fd.

UDP is not forwarded: :func:`plan` refuses rules that allow only UDP and notes it for
``tcp,udp`` and ``*`` rules.
"""

from __future__ import annotations

import contextlib
import ipaddress
import itertools
import json
import os
import select
import socket
import struct
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..errors import ProviderError, RuleSocketConnectionRefusedError
from ..rules.policy import Policy
from .vmlink import received_fds

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

__all__ = [
    "MAX_MESSAGE",
    "MAX_PORTS_PER_RULE",
    "MAX_REPLY",
    "Broker",
    "Forwarder",
    "NetPlan",
    "fork_forwarder",
    "plan",
]

#: the largest request, in bytes; longer requests are refused
MAX_MESSAGE = 1024
#: the largest reply (a refusal names a rule and its file); longer refusal texts are cut
MAX_REPLY = 16384
#: a rule whose ports are more than this many is refused (one listener per port)
MAX_PORTS_PER_RULE = 64
#: connections the broker opens at the same time; more pending requests are refused
MAX_PENDING = 64
#: connections the forwarder carries at the same time; more are reset at once
MAX_CONNECTIONS = 512
#: seconds the broker waits for a TCP connection to be established
CONNECT_TIMEOUT = 15.0

_ALIAS_BASE = int(ipaddress.IPv4Address("127.0.1.0"))
_LOOPBACK4 = ipaddress.ip_network("127.0.0.0/8")
_LOOPBACK6 = ipaddress.ip_network("::1/128")
_CHUNK = 65536


# -- the plan ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class NetPlan:
    """What the ``net=`` rules need inside the namespace; computed by :func:`plan`.

    ``ports``: TCP ports the forwarder listens on (``0.0.0.0`` and ``::``) for OUT rules.
    ``aliases``: ``(alias address, host name, pinned addresses)`` for each host name of an
    OUT rule; ``hosts``: the text of the sandbox's ``/etc/hosts`` mapping each name to its alias.
    ``inbound``: ``(loopback address, port)`` the broker listens on in the host for IN rules (the
    forwarder connects to the same address and port inside). ``anyip``: the rules that name
    non-loopback addresses (they need ``CAP_NET_ADMIN`` in the namespace, see
    :meth:`Forwarder.start`), and ``anyip_families`` (4, 6) the routes they need.
    ``refusals``: rules that cannot be enforced as written: the run must stop, showing them.
    ``notes``: what is not forwarded (UDP of ``tcp,udp`` rules, IN rules on other addresses).
    """

    ports: tuple[int, ...] = ()
    aliases: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    inbound: tuple[tuple[str, int], ...] = ()
    anyip: tuple[str, ...] = ()
    anyip_families: tuple[int, ...] = ()
    hosts: str = ""
    refusals: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def destinations(self, address: str) -> tuple[str, ...]:
        """The real addresses behind an address dialled inside (an alias maps to its name's)."""
        for alias, _name, pinned in self.aliases:
            if alias == address:
                return pinned
        return (address,)

    def guard_policy(self, policy: Policy) -> Policy:
        """``policy`` with each aliased host name pinned to its alias: the policy of the Python
        layer *inside* the sandbox, where the name resolves (``/etc/hosts``) to the alias. The
        broker keeps the real pinned addresses."""
        by_name = {name: alias for alias, name, _pinned in self.aliases}
        current: dict[str, list[str]] = {}
        for r in policy.net.rules:
            if r.hostname:
                current.setdefault(r.hostname, []).extend(str(n.network_address) for n in r.networks)

        def resolve(name: str) -> list[str]:
            alias = by_name.get(name)
            return [alias] if alias is not None else current.get(name, [])

        return policy._replace(net=policy.net.pin_hostnames(resolve))


def _is_loopback(net: IPNetwork) -> bool:
    if net.version == 4:
        return net.subnet_of(_LOOPBACK4)  # type: ignore[arg-type]
    return net == _LOOPBACK6


def _port_count(ports: Iterable[tuple[int, int]]) -> int:
    return sum(hi - lo + 1 for lo, hi in ports)


def plan(policy: Policy) -> NetPlan:
    """The listeners, ``/etc/hosts`` text and refusals for ``policy``'s ``net=`` rules.

    Host names must already be pinned (``policy.pin_hostnames``): a name is reached through the
    addresses it had when the rules loaded, never resolved again.
    """
    net = policy.net
    ports: set[int] = set()
    names: dict[str, tuple[str, ...]] = {}
    inbound: set[tuple[str, int]] = set()
    anyip: list[str] = []
    families: set[int] = set()
    refusals: list[str] = []
    notes: list[str] = []
    for r in net.allow:
        where = r.rule.describe()
        if "tcp" not in r.protocols:
            refusals.append(
                f"Rule {where} cannot be enforced: the network broker of this provider forwards TCP only, "
                "not UDP.\nUse `os-sandbox=landlock` or `os-sandbox=subprocess` for UDP, or remove the rule."
            )
            continue
        if "udp" in r.protocols:
            notes.append(f"Rule {where}: only TCP is forwarded, UDP is not.")
        count = _port_count(r.ports)
        if count > MAX_PORTS_PER_RULE:
            refusals.append(
                f"Rule {where} cannot be enforced: it allows {count} ports and the network broker "
                f"listens on at most {MAX_PORTS_PER_RULE} ports per rule.\nList the ports the program "
                "needs, e.g. `443` or `8000-8009`."
            )
            continue
        rule_ports = [p for lo, hi in r.ports for p in range(lo, hi + 1) if p != 0]
        if "out" in r.directions:
            if r.hostname:
                if not r.networks:
                    notes.append(f"Rule {where}: '{r.hostname}' did not resolve: nothing is forwarded.")
                elif r.hostname != "localhost":
                    names.setdefault(r.hostname, tuple(str(n.network_address) for n in r.networks))
            else:
                outside = [n for n in r.networks if not _is_loopback(n)]
                if outside:
                    anyip.append(where)
                    families.update(n.version for n in outside)
            ports.update(rule_ports)
        if "in" in r.directions:
            local = [a for a in ("127.0.0.1", "::1") if any(ipaddress.ip_address(a) in n for n in r.networks)]
            if not local:
                notes.append(
                    f"Rule {where}: only listening sockets on 127.0.0.1 and ::1 are reachable from the host."
                )
            for a in local:
                for p in rule_ports:
                    if net.decide(a, p, "tcp", "in").allowed:
                        inbound.add((a, p))
    in_ports = {p for _a, p in inbound}
    shared = sorted(ports & in_ports)
    if shared:
        notes.append(
            f"Port(s) {', '.join(map(str, shared))}: listened on by the program (IN rules), so "
            "connections to them inside the sandbox are not forwarded out."
        )
        ports -= in_ports
    if len(names) > 254:
        refusals.append(f"The rules name {len(names)} hosts: the network broker forwards at most 254 names.")
    aliases = tuple(
        (str(ipaddress.IPv4Address(_ALIAS_BASE + i)), name, pinned)
        for i, (name, pinned) in enumerate(sorted(names.items())[:254], start=1)
    )
    hosts = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
    hosts += "".join(f"{alias}\t{name}\n" for alias, name, _pinned in aliases)
    return NetPlan(
        ports=tuple(sorted(ports)),
        aliases=aliases,
        inbound=tuple(sorted(inbound)),
        anyip=tuple(anyip),
        anyip_families=tuple(sorted(families)),
        hosts=hosts,
        refusals=tuple(refusals),
        notes=tuple(notes),
    )


# -- messages ----------------------------------------------------------------------------------


def _encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode()


def _send(sock: socket.socket, message: dict[str, Any], fd: int | None = None) -> bool:
    """Send one message (and ``fd``) without blocking; False when the peer is gone or not reading."""
    ancillary = [] if fd is None else [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", fd))]
    try:
        sock.sendmsg([_encode(message)], ancillary, socket.MSG_DONTWAIT | socket.MSG_NOSIGNAL)
    except OSError:
        return False
    return True


def _close_fds(fds: Iterable[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def _reset(sock: socket.socket) -> None:
    """Close with a reset: the client sees ECONNRESET, not a clean end of stream."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def _splice(a: socket.socket, b: socket.socket, active: set[socket.socket], lock: threading.Lock) -> None:
    """Copy bytes both ways until both directions ended, then close both sockets."""
    with lock:
        active.update((a, b))

    def pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(_CHUNK):
                dst.sendall(data)
            dst.shutdown(socket.SHUT_WR)  # half-close: the other direction goes on
        except OSError:
            for s in (src, dst):  # a reset or an error: both directions end
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    other = threading.Thread(target=pump, args=(b, a), name="netbroker-pump", daemon=True)
    other.start()
    pump(a, b)
    other.join()
    with lock:
        active.difference_update((a, b))
    a.close()
    b.close()


class _Threads:
    """Threads started by a broker or a forwarder, joined when it stops."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.threads: set[threading.Thread] = set()
        self.sockets: set[socket.socket] = set()  # connections being spliced
        self.stopping = False

    def start(self, target: Callable[..., None], *args: Any) -> bool:
        def run() -> None:
            try:
                target(*args)
            finally:
                with self.lock:
                    self.threads.discard(thread)

        thread = threading.Thread(target=run, name="netbroker", daemon=True)
        with self.lock:
            if self.stopping:
                return False
            self.threads.add(thread)
        thread.start()
        return True

    def count(self) -> int:
        with self.lock:
            return len(self.threads)

    def stop(self) -> None:
        with self.lock:
            self.stopping = True
            sockets = list(self.sockets)
        for s in sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
        while True:
            with self.lock:
                remaining = [t for t in self.threads if t is not threading.current_thread()]
            if not remaining:
                return
            for t in remaining:
                t.join()


def _serve(
    listeners: list[socket.socket], wake: int, on_accept: Callable[[socket.socket, socket.socket], None]
) -> None:
    """Accept on every listener until ``wake`` becomes readable (or is closed)."""
    poller = select.poll()
    by_fd = {s.fileno(): s for s in listeners}
    for fd in by_fd:
        poller.register(fd, select.POLLIN)
    poller.register(wake, select.POLLIN)
    while True:
        for fd, _events in poller.poll():
            if fd == wake:
                return
            listener = by_fd[fd]
            try:
                conn, _peer = listener.accept()
            except OSError:
                continue
            on_accept(listener, conn)


def _listen(address: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((address, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


# -- the host side -----------------------------------------------------------------------------


def _shut(side: Any) -> None:
    """Stop a Broker or a Forwarder: wake and join its threads, close its sockets."""
    if side._sock is not None:
        with contextlib.suppress(OSError):
            side._sock.shutdown(socket.SHUT_RDWR)
    if side._wake is not None:
        os.write(side._wake[1], b"x")
    side._threads.stop()
    for s in side._listeners:
        s.close()
    side._listeners = []
    if side._wake is not None:
        _close_fds(side._wake)
        side._wake = None
    if side._sock is not None:
        side._sock.close()
        side._sock = None


class Broker:
    """The host half: judges and opens connections for the sandbox; the network boundary.

    ``Broker(policy)`` with host names already pinned; :meth:`start` takes ownership of the
    host end of the socket pair; :meth:`stop` closes everything and joins its threads.
    ``on_refusal(text)`` is called with each refusal (for a log), from a broker thread.
    """

    def __init__(
        self,
        policy: Policy,
        *,
        connect_timeout: float = CONNECT_TIMEOUT,
        max_pending: int = MAX_PENDING,
        on_refusal: Callable[[str], None] | None = None,
    ) -> None:
        from ..guards.network import decider

        _parse, _decide, self._judge = decider(policy)
        self.plan = plan(policy)
        self._timeout = connect_timeout
        self._pending = threading.BoundedSemaphore(max_pending)
        self._max_pending = max_pending
        self._on_refusal = on_refusal
        self._threads = _Threads()
        self._sock: socket.socket | None = None
        self._listeners: list[socket.socket] = []
        self._wake: tuple[int, int] | None = None

    def start(self, sock: socket.socket) -> None:
        """Serve the sandbox on ``sock`` (``AF_UNIX``, ``SOCK_SEQPACKET``) and listen on the host's
        loopback for the IN rules. Raises :class:`ProviderError` when a port is taken."""
        if sock.family != socket.AF_UNIX or sock.type != socket.SOCK_SEQPACKET:
            raise ProviderError("the network broker needs an AF_UNIX SOCK_SEQPACKET socket")
        sock.setblocking(True)
        self._sock = sock
        try:
            for address, port in self.plan.inbound:
                self._listeners.append(_listen(address, port))
        except OSError as e:
            self.stop()
            raise ProviderError(
                f"The network broker cannot listen on the host's [{address}]:{port} for an IN rule: "
                f"{e.strerror or e}.\nStop what uses the port, or change the rule."
            ) from None
        self._wake = os.pipe()
        self._threads.start(self._read, sock)
        if self._listeners:
            self._threads.start(_serve, self._listeners, self._wake[0], self._accepted)

    def stop(self) -> None:
        """Stop serving: close the socket and the listeners, join every thread (a connection
        being established is waited for, at most ``connect_timeout``)."""
        _shut(self)

    def _read(self, sock: socket.socket) -> None:
        while True:
            try:
                data, _anc, flags, _addr = sock.recvmsg(MAX_MESSAGE)  # no room for fds: dropped
            except InterruptedError:
                continue
            except OSError:
                return
            if not data:
                return
            if flags & socket.MSG_TRUNC:
                self._refuse(sock, None, f"request longer than {MAX_MESSAGE} bytes")
                continue
            self._request(sock, data)

    def _refuse(self, sock: socket.socket, ident: int | None, text: str) -> None:
        if self._on_refusal is not None:
            self._on_refusal(text)
        _send(sock, {"op": "error", "id": ident, "error": text[: MAX_REPLY // 2]})

    def _request(self, sock: socket.socket, data: bytes) -> None:
        try:
            request = json.loads(data)
        except ValueError:
            request = None
        if not isinstance(request, dict):
            self._refuse(sock, None, "malformed request: not a JSON object")
            return
        ident = request.get("id")
        if type(ident) is not int or not 0 <= ident < 2**63:
            self._refuse(sock, None, "malformed request: 'id' must be a non-negative integer")
            return
        proto, host, port = request.get("proto"), request.get("host"), request.get("port")
        if request.get("op") != "connect":
            self._refuse(sock, ident, "malformed request: 'op' must be 'connect'")
        elif proto == "udp":
            self._refuse(sock, ident, "UDP is not forwarded by the network broker")
        elif proto != "tcp":
            self._refuse(sock, ident, "malformed request: 'proto' must be 'tcp'")
        elif type(port) is not int or not 1 <= port <= 65535:
            self._refuse(sock, ident, "malformed request: 'port' must be an integer from 1 to 65535")
        elif type(host) is not str or len(host) > 64:
            self._refuse(sock, ident, "malformed request: 'host' must be an address literal")
        else:
            try:
                address = ipaddress.ip_address(host)
            except ValueError:
                self._refuse(
                    sock, ident, f"Connection to '{host[:64]}' DENIED: the broker connects to addresses only"
                )
                return
            if address.version == 6 and address.ipv4_mapped is not None:
                address = address.ipv4_mapped
            if address.is_unspecified or address.is_multicast:
                self._refuse(sock, ident, f"Connection to [{address}]:{port} DENIED: not a unicast address")
            elif not self._pending.acquire(blocking=False):
                self._refuse(sock, ident, f"too many pending connections (at most {self._max_pending})")
            elif not self._threads.start(self._connect, sock, ident, address, port):
                self._pending.release()

    def _connect(
        self,
        sock: socket.socket,
        ident: int,
        address: ipaddress.IPv4Address | ipaddress.IPv6Address,
        port: int,
    ) -> None:
        try:
            try:
                self._judge(str(address), port, "tcp", "out")
            except RuleSocketConnectionRefusedError as refusal:
                self._refuse(sock, ident, str(refusal))
                return
            family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
            conn = socket.socket(family, socket.SOCK_STREAM)
            try:
                conn.settimeout(self._timeout)
                conn.connect((str(address), port))
                conn.settimeout(None)
            except OSError as e:
                conn.close()
                self._refuse(sock, ident, f"Connection to [{address}]:{port} failed: {e.strerror or e}")
                return
            _send(sock, {"op": "connected", "id": ident}, conn.fileno())
            conn.close()
        finally:
            self._pending.release()

    def _accepted(self, listener: socket.socket, conn: socket.socket) -> None:
        assert self._sock is not None
        host, port = listener.getsockname()[:2]
        _send(self._sock, {"op": "accepted", "host": host, "port": port}, conn.fileno())
        conn.close()


# -- the sandbox side --------------------------------------------------------------------------

from .netsetup import _local_default_route, _loopback_up  # noqa: E402 - shared with unshare_setup


class Forwarder:
    """The sandbox half: listens inside the namespace and forwards through the broker.

    Start it before the program runs and before ``guards.arm()``: setting up the namespace
    opens netlink and ioctl sockets the Python layer refuses. Once armed, the Python layer
    still sees the forwarder's own calls (an audit hook is process-wide): an OUT connection
    raises only ``socket.__new__``, but an IN connection also raises ``socket.connect`` to the
    loopback port, which the guards judge as OUT. Use :func:`fork_forwarder` to keep the
    forwarder out of the armed process.
    """

    def __init__(self, *, on_refusal: Callable[[str], None] | None = None) -> None:
        self._on_refusal = on_refusal
        self._threads = _Threads()
        self._sock: socket.socket | None = None
        self._listeners: list[socket.socket] = []
        self._wake: tuple[int, int] | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[int, tuple[threading.Event, list[Any]]] = {}
        self._lock = threading.Lock()
        self._broken = False
        #: set when the broker closed its end (the host stopped), or after :meth:`stop`
        self.closed = threading.Event()
        self.plan = NetPlan()

    def start(self, sock: socket.socket, plan: NetPlan) -> None:
        """Set up the namespace (``lo`` up; the AnyIP routes when ``plan.anyip``), listen on
        ``plan.ports`` and serve. ``sock``: the sandbox end of the socket pair (owned from now).

        Raises :class:`ProviderError` (fail closed) when ``plan.refusals`` is not empty, when the
        namespace cannot be set up (no ``CAP_NET_ADMIN`` for rules naming non-loopback
        addresses: the message names them), or when a port cannot be listened on; ``sock`` is
        closed then.
        """
        try:
            self._start(sock, plan)
        except ProviderError:
            sock.close()
            raise

    def _start(self, sock: socket.socket, plan: NetPlan) -> None:
        if plan.refusals:
            raise ProviderError("\n".join(plan.refusals))
        self.plan = plan
        try:
            _loopback_up()
        except OSError as e:
            raise ProviderError(
                f"The sandbox's loopback interface is down and cannot be brought up: {e.strerror or e}."
            ) from None
        for family in plan.anyip_families:
            try:
                _local_default_route(socket.AF_INET6 if family == 6 else socket.AF_INET)
            except OSError as e:
                raise ProviderError(
                    f"The rule(s) {', '.join(plan.anyip)} name addresses outside the loopback: reaching "
                    f"them needs CAP_NET_ADMIN in the sandbox's network namespace ({e.strerror or e}).\n"
                    "Use a host name in the rule (it is reached through an alias), or run with "
                    "`os-sandbox=unshare`."
                ) from None
        try:
            for port in plan.ports:
                self._listeners.append(_listen("0.0.0.0", port))
                with contextlib.suppress(OSError):  # IPv6 off in this namespace: IPv4 only
                    self._listeners.append(_listen("::", port))
        except OSError as e:
            for s in self._listeners:
                s.close()
            self._listeners = []
            raise ProviderError(
                f"The network forwarder cannot listen on port {port} in the sandbox: {e.strerror or e}."
            ) from None
        sock.setblocking(True)
        self._sock = sock
        self._wake = os.pipe()
        self._threads.start(self._read, sock)
        if self._listeners:
            self._threads.start(_serve, self._listeners, self._wake[0], self._outbound)

    def stop(self) -> None:
        """Close the listeners, the broker socket and every forwarded connection; join threads."""
        _shut(self)
        self.closed.set()

    # the broker connection: one reader thread dispatches every reply

    def _read(self, sock: socket.socket) -> None:
        space = socket.CMSG_SPACE(4 * struct.calcsize("i"))
        while True:
            try:
                data, ancillary, _flags, _addr = sock.recvmsg(MAX_REPLY, space)
            except InterruptedError:
                continue
            except OSError:
                data, ancillary = b"", []
            fds = received_fds(ancillary)
            if not data:
                _close_fds(fds)
                break
            try:
                message = json.loads(data)
            except ValueError:
                message = None
            if not isinstance(message, dict) or not self._dispatch(message, fds):
                _close_fds(fds)
        with self._lock:
            self._broken = True
            waiting, self._waiting = self._waiting, {}
        for event, slot in waiting.values():
            slot.append(None)
            event.set()
        self.closed.set()

    def _dispatch(self, message: dict[str, Any], fds: list[int]) -> bool:
        op = message.get("op")
        if op == "accepted":
            target = (message.get("host"), message.get("port"))
            if len(fds) != 1 or target not in self.plan.inbound:
                return False
            conn = socket.socket(fileno=fds[0])
            if not self._threads.start(self._inbound, conn, target):
                _reset(conn)
            return True
        if op not in ("connected", "error") or type(message.get("id")) is not int:
            return False
        with self._lock:
            entry = self._waiting.pop(message.get("id"), None)  # type: ignore[arg-type]
        if entry is None:
            return False
        event, slot = entry
        if op == "connected" and len(fds) == 1:
            slot.append(fds[0])
        else:
            _close_fds(fds)
            slot.append(str(message.get("error", "the broker refused")))
        event.set()
        return True

    def _ask(self, host: str, port: int) -> int | str:
        """A connected fd to ``host``:``port`` from the broker, or the refusal text."""
        ident = next(self._ids)
        event = threading.Event()
        slot: list[Any] = []
        with self._lock:
            if self._broken or self._sock is None:
                return "the network broker is gone"
            self._waiting[ident] = (event, slot)
            sock = self._sock
        message = {"op": "connect", "id": ident, "proto": "tcp", "host": host, "port": port}
        try:
            sock.sendall(_encode(message))
        except OSError:
            with self._lock:
                self._waiting.pop(ident, None)
            return "the network broker is gone"
        event.wait()
        result = slot[0]
        return "the network broker is gone" if result is None else result  # type: ignore[no-any-return]

    def _outbound(self, listener: socket.socket, conn: socket.socket) -> None:
        if self._threads.count() >= MAX_CONNECTIONS or not self._threads.start(self._forward, conn):
            _reset(conn)

    def _forward(self, conn: socket.socket) -> None:
        address, port = conn.getsockname()[:2]
        refusal = ""
        for destination in self.plan.destinations(address):
            answer = self._ask(destination, port)
            if isinstance(answer, int):
                remote = socket.socket(fileno=answer)
                _splice(conn, remote, self._threads.sockets, self._threads.lock)
                return
            refusal = answer
        if self._on_refusal is not None:
            self._on_refusal(refusal)
        _reset(conn)

    def _inbound(self, conn: socket.socket, target: tuple[str, int]) -> None:
        family = socket.AF_INET6 if ":" in target[0] else socket.AF_INET
        inner = socket.socket(family, socket.SOCK_STREAM)
        try:
            inner.connect(target)
        except OSError:
            inner.close()
            _reset(conn)
            return
        _splice(conn, inner, self._threads.sockets, self._threads.lock)


def fork_forwarder(sock: socket.socket, plan: NetPlan) -> int:
    """Run a :class:`Forwarder` in a forked child of this process; returns its pid.

    Call it before ``guards.arm()`` and before any other thread starts. The child never arms
    the guards, so its connections (IN ones included) are judged by the broker alone; it exits
    when the broker closes its end or when this process exits (a pipe it watches). The parent
    closes its copy of ``sock``: the sandboxed program holds no broker socket. Errors of
    :meth:`Forwarder.start` are raised here, in the parent, before the fork.
    """
    if plan.refusals:
        sock.close()
        raise ProviderError("\n".join(plan.refusals))
    ready_r, ready_w = os.pipe()
    alive_r, alive_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        status = 1
        try:
            os.close(ready_r)
            os.close(alive_w)
            forwarder = Forwarder()
            try:
                forwarder.start(sock, plan)
            except ProviderError as e:
                os.write(ready_w, str(e).encode()[:4000])
                os._exit(1)
            os.close(ready_w)

            def watch_parent() -> None:
                select.select([alive_r], [], [])  # readable (EOF) when the parent exited
                forwarder.closed.set()

            threading.Thread(target=watch_parent, daemon=True).start()
            forwarder.closed.wait()  # the parent exited, or the broker closed its end
            status = 0
        finally:
            os._exit(status)
    os.close(ready_w)
    os.close(alive_r)
    sock.close()
    error = b""
    while chunk := os.read(ready_r, 4096):
        error += chunk
    os.close(ready_r)
    if error:
        os.waitpid(pid, 0)
        os.close(alive_w)
        raise ProviderError(error.decode(errors="replace"))
    return pid
