"""``net=ACTION|PROTO|HOST|PORTS|DIR``: which connections and listening sockets are allowed.

DENY rules are tried first whatever their file and position, then ALLOW rules; nothing
matching is the implicit default deny.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable

from .._lazy import LazyPattern
from .._record import Record
from ..errors import RuleProblem, RuleSyntaxError
from .context import Context, Rule
from .substitution import split_outside_references

TYPE_CHECKING = False
if TYPE_CHECKING:
    import ipaddress
    from typing import Any, ClassVar

    IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
    IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def _ipaddress() -> Any:
    """``ipaddress`` costs a millisecond to import: only profiles with net= rules pay it."""
    module = sys.modules.get("ipaddress")
    if module is None:
        import ipaddress as module
    return module


_HOSTNAME = LazyPattern(
    r"(?=.{1,253}\.?$)(?:[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?\.)*"
    r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?\.?"
)


class NetRule(Record):
    __slots__ = ("allow", "directions", "host", "hostname", "networks", "ports", "protocols", "rule")
    allow: bool
    protocols: frozenset[str]  # {"tcp", "udp"}
    host: str  # as written after substitution: "*", an address, a network or a host name
    hostname: str | None  # set when HOST is a name
    networks: tuple[IPNetwork, ...]  # for a name: its pinned addresses (empty until pinned)
    ports: tuple[tuple[int, int], ...]
    directions: frozenset[str]  # {"in", "out"}
    rule: Rule

    def matches(self, address: IPAddress, port: int, protocol: str, direction: str) -> bool:
        if protocol not in self.protocols or direction not in self.directions:
            return False
        if not any(lo <= port <= hi for lo, hi in self.ports):
            return False
        return any(address in net for net in self.networks if net.version == address.version)


class NetDecision(Record):
    __slots__ = ("allowed", "rule")
    allowed: bool
    rule: NetRule | None  # None: the implicit default policy decided

    def explain(self, target: str) -> str:
        """The seed's wording: ``Connection to [ip]:port DENIED by explicit rule '…' from F(L)``."""
        if self.rule is None:
            return f"Connection to {target} DENIED by implicit default policy"
        word = "ALLOWED" if self.allowed else "DENIED"
        return f"Connection to {target} {word} by explicit rule {self.rule.rule.describe()}"


class NetPolicy(Record):
    __slots__ = ("allow", "deny", "rules")
    rules: tuple[NetRule, ...]
    deny: tuple[NetRule, ...]
    allow: tuple[NetRule, ...]

    _defaults: ClassVar[dict[str, Any]] = {"deny": (), "allow": ()}

    def _post_init(self) -> None:
        object.__setattr__(self, "deny", tuple(r for r in self.rules if not r.allow))
        object.__setattr__(self, "allow", tuple(r for r in self.rules if r.allow))

    @property
    def hostnames(self) -> frozenset[str]:
        return frozenset(r.hostname for r in self.rules if r.hostname)

    def decide(
        self, address: str | IPAddress, port: int, protocol: str = "tcp", direction: str = "out"
    ) -> NetDecision:
        ip = _as_judged(_ipaddress().ip_address(address) if isinstance(address, str) else address)
        for r in self.deny:
            if r.matches(ip, port, protocol, direction):
                return NetDecision(False, r)
        for r in self.allow:
            if r.matches(ip, port, protocol, direction):
                return NetDecision(True, r)
        return NetDecision(False, None)

    def pin_hostnames(self, resolve: Callable[[str], Iterable[str] | None]) -> NetPolicy:
        """Resolve every host name once and pin its addresses.

        A name that does not resolve: an ALLOW rule allows nothing (kept, matching nothing);
        a DENY rule cannot be honoured, so it is an error.
        """
        problems: list[RuleProblem] = []
        answers: dict[str, tuple[IPNetwork, ...]] = {}
        pinned: list[NetRule] = []
        for r in self.rules:
            if r.hostname is None:
                pinned.append(r)
                continue
            if r.hostname not in answers:
                found = resolve(r.hostname) or ()
                nets: list[IPNetwork] = []
                for a in found:
                    ip = _as_judged(_ipaddress().ip_address(a))
                    nets.append(_ipaddress().ip_network(ip))
                answers[r.hostname] = tuple(dict.fromkeys(nets))
            if not answers[r.hostname] and not r.allow:
                problems.append(
                    RuleProblem(
                        r.rule.origin,
                        f"'{r.rule.text}': '{r.hostname}' does not resolve, so this DENY rule "
                        "cannot be enforced; use an address or a network instead",
                    )
                )
            pinned.append(r._replace(networks=answers[r.hostname]))
        if problems:
            raise RuleSyntaxError(problems)
        return NetPolicy(tuple(pinned))


def _as_judged(ip: IPAddress) -> IPAddress:
    """IPv4 carried inside IPv6 is judged as IPv4."""
    if ip.version == 6:
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        packed = ip.packed
        if packed[:12] == bytes(12) and int(ip) > 1:  # deprecated IPv4-compatible ::a.b.c.d
            v4: IPAddress = _ipaddress().IPv4Address(packed[12:])
            return v4
    return ip


def compile_net(rules: list[Rule], ctx: Context) -> NetPolicy:
    compiled: list[NetRule] = []
    seen: set[tuple[object, ...]] = set()
    for rule in rules:
        r = _parse(rule, ctx)
        if r is None:
            continue
        identity = (r.allow, r.protocols, r.host, r.ports, r.directions)
        if identity in seen:
            continue
        seen.add(identity)
        compiled.append(r)
    return NetPolicy(tuple(compiled))


_FORMAT = "net=ACTION|PROTO|HOST|PORTS|DIR, e.g. net=ALLOW|tcp|api.example.com|443|OUT"


def _parse(rule: Rule, ctx: Context) -> NetRule | None:
    raw_fields = split_outside_references(rule.value, "|")
    if len(raw_fields) != 5:
        ctx.problem(rule.origin, f"'{rule.text}' has {len(raw_fields)} field(s), expected 5: {_FORMAT}")
        return None
    fields: list[str] = []
    for raw in raw_fields:
        value = ctx.expand(rule, raw.strip())
        if value is None:
            return None
        fields.append(value.strip())
    action, proto, host, ports, direction = fields
    errors: list[str] = []

    allow = action.upper() == "ALLOW"
    if action.upper() not in ("ALLOW", "DENY"):
        errors.append(f"action '{action}' must be ALLOW or DENY")

    protocols = _protocols(proto, errors)
    networks, hostname = _host(host, errors)
    port_ranges = _ports(ports, errors)
    directions = _directions(direction, errors)
    if errors:
        for e in errors:
            ctx.problem(rule.origin, f"'{rule.text}': {e}")
        return None
    return NetRule(allow, protocols, host, hostname, networks, port_ranges, directions, rule)


def _protocols(text: str, errors: list[str]) -> frozenset[str]:
    items = [p.strip().lower() for p in text.split(",")]
    if items in (["*"], ["any"]):
        return frozenset({"tcp", "udp"})
    out: set[str] = set()
    for p in items:
        if p in ("tcp", "udp"):
            out.add(p)
        elif p in ("*", "any"):
            errors.append(f"protocol '{p}' must stand alone")
        else:
            errors.append(f"protocol '{p}' must be tcp, udp, tcp,udp or *")
    return frozenset(out)


def _host(text: str, errors: list[str]) -> tuple[tuple[IPNetwork, ...], str | None]:
    ipaddress = _ipaddress()
    if text == "*":
        return (ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0")), None
    candidate = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    try:
        net = ipaddress.ip_network(candidate, strict=False)
    except ValueError:
        pass
    else:
        if net.version == 6 and net.prefixlen >= 96:
            mapped = _as_judged(net.network_address)
            if mapped.version == 4:  # ::ffff:10.0.0.0/104 is 10.0.0.0/8: judged as IPv4
                net = ipaddress.ip_network((mapped, net.prefixlen - 96))
        return (net,), None
    if _re().fullmatch(r"[0-9./]+|[0-9A-Fa-f:./]*:[0-9A-Fa-f:./]*", candidate):
        errors.append(f"'{text}' is not a valid address or network")
        return (), None
    if not _HOSTNAME.fullmatch(candidate):
        errors.append(f"host '{text}' is not an address, a network (a.b.c.d/n), a host name or *")
        return (), None
    return (), candidate.rstrip(".").lower()


def _ports(text: str, errors: list[str]) -> tuple[tuple[int, int], ...]:
    if text == "*":
        return ((0, 65535),)
    out: list[tuple[int, int]] = []
    for item in text.split(","):
        item = item.strip()
        m = _re().fullmatch(r"([0-9]{1,5})(?:(-)([0-9]{0,5}))?", item)
        if not m:
            errors.append(f"invalid port list '{text}': use *, 443, 8000-8099, 1024- or 80,443")
            return ()
        lo = int(m.group(1))
        hi = lo if m.group(2) is None else (int(m.group(3)) if m.group(3) else 65535)
        if hi > 65535 or lo > hi:
            errors.append(f"invalid port range '{item}': ports go from 0 to 65535, low to high")
            return ()
        out.append((lo, hi))
    return tuple(sorted(set(out)))


def _directions(text: str, errors: list[str]) -> frozenset[str]:
    if text == "*":
        return frozenset({"in", "out"})
    out: set[str] = set()
    for d in text.split(","):
        d = d.strip().lower()
        if d in ("in", "out"):
            out.add(d)
        else:
            errors.append(f"direction '{text}' must be IN, OUT, IN,OUT or *")
            return frozenset()
    return frozenset(out)


def _re() -> Any:
    """``re`` on first use: importing it costs milliseconds on every start of python-sb."""
    import re

    return re
