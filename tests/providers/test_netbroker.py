"""The network broker of the namespace providers (``providers/netbroker.py``).

The test process runs the :class:`Broker` (the host side) and a TCP server on the host's
127.0.0.1; the :class:`Forwarder` runs in a child in a fresh network namespace
(``unshare --user --map-root-user --net``), which inherits the other end of the socket pair.
Inside, only what the rules allow is reachable, from Python and from native code (libc
``connect`` through ctypes, ``curl``). Every security test is a pair: reachable with the rule,
refused without it. Addresses other than loopback appear only inside the namespace.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from pysandboxes.errors import ProviderError
from pysandboxes.providers.netbroker import MAX_MESSAGE, Broker, NetPlan, plan
from pysandboxes.rules import Policy

from ..conftest import Rules

CURL = shutil.which("curl")

# The child, inside the namespace: the same rules, pinned the same way; the forwarder; probes.
CHILD = """\
import ctypes, json, os, socket, subprocess, sys, threading
from pysandboxes.rules import load_policy
from pysandboxes.providers.netbroker import Forwarder, fork_forwarder, plan

args = json.loads(sys.argv[1])
policy = load_policy(args["rules"], environ={"HOME": args["home"]}, cwd=args["cwd"])
policy = policy.pin_hostnames(lambda name: ["127.0.0.1"])
the_plan = plan(policy)
broker = socket.socket(fileno=args["fd"])
if args["hosts"]:
    with open(args["hosts"], "w") as f:
        f.write(the_plan.hosts)
    subprocess.run(["mount", "--bind", args["hosts"], "/etc/hosts"], check=True)
if args["fork"]:
    pid = fork_forwarder(broker, the_plan)
    forwarder = None
else:
    forwarder = Forwarder()
    forwarder.start(broker, the_plan)
results = []


def py(host, port):
    with socket.create_connection((host, port)) as s:
        s.sendall(b"ping")
        s.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := s.recv(100):
            data += chunk
        return data.decode()


def libc(host, port):
    c = ctypes.CDLL(None, use_errno=True)
    fd = c.socket(socket.AF_INET, socket.SOCK_STREAM, 0)
    family = bytes(ctypes.c_uint16(socket.AF_INET))
    addr = family + port.to_bytes(2, "big") + socket.inet_aton(host) + bytes(8)
    if c.connect(fd, addr, len(addr)) != 0:
        e = ctypes.get_errno()
        c.close(fd)
        raise OSError(e, os.strerror(e))
    if c.write(fd, b"ping", 4) != 4 or c.shutdown(fd, 1) != 0:
        e = ctypes.get_errno()
        c.close(fd)
        raise OSError(e, os.strerror(e))
    buf = ctypes.create_string_buffer(100)
    data = b""
    while True:
        n = c.read(fd, buf, 100)
        if n < 0:
            e = ctypes.get_errno()
            c.close(fd)
            raise OSError(e, os.strerror(e))
        if n == 0:
            break
        data += buf.raw[:n]
    c.close(fd)
    return data.decode()


def curl(url):
    p = subprocess.run([args["curl"], "-sS", "--max-time", "60", url], capture_output=True, text=True)
    return p.stdout if p.returncode == 0 else f"curl exit {p.returncode}: {p.stderr.strip()}"


def serve_once(port):
    server = socket.create_server(("127.0.0.1", port))
    print("ready", flush=True)
    conn, _ = server.accept()
    data = b""
    while chunk := conn.recv(100):
        data += chunk
    conn.sendall(b"inside:" + data)
    conn.close()
    server.close()
    sys.stdin.readline()  # the test got its answer: the forwarded connection is over
    return "served"


for kind, *probe in args["probes"]:
    try:
        results.append(globals()[kind](*probe))
    except OSError as exc:
        if exc.errno in (errno.ECONNRESET, errno.EPIPE, errno.ENOTCONN):
            results.append("reset")  # which call meets the reset first depends on timing
        else:
            results.append(f"{type(exc).__name__}:{errno.errorcode.get(exc.errno, exc.errno)}")
if forwarder is not None:
    forwarder.stop()
    threads = threading.active_count()
else:
    broker = None
    threads = 1
print(json.dumps({"results": results, "threads": threads}), flush=True)
""".replace("import ctypes, json", "import ctypes, errno, json")


class Server:
    """A TCP server on the host's 127.0.0.1 (or, with ``unix=PATH``, a UNIX socket there):
    answers ``echo:<request>`` (a request ends at the client's half-close, or at the end of HTTP
    headers, answered in HTTP), counts connections."""

    def __init__(self, unix: str | None = None) -> None:
        if unix is None:
            self.sock = socket.create_server(("127.0.0.1", 0))
            self.address: Any = ("127.0.0.1", self.sock.getsockname()[1])
        else:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.bind(unix)
            self.sock.listen(16)
            self.address = unix
        self.port: int = self.address[1] if unix is None else 0
        self.connections = 0
        self.thread = threading.Thread(target=self._serve)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            conn, _ = self.sock.accept()
            with conn:
                data = b""
                while chunk := conn.recv(100):
                    data += chunk
                    if b"\r\n\r\n" in data:
                        break
                if data == b"stop":
                    return
                self.connections += 1
                if data.startswith(b"GET "):
                    conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 9\r\n\r\nhttp-echo")
                else:
                    conn.sendall(b"echo:" + data)

    def close(self) -> None:
        with socket.socket(self.sock.family) as c:
            c.connect(self.address)
            c.sendall(b"stop")
        self.thread.join()
        self.sock.close()


@pytest.fixture
def servers() -> Iterator[tuple[Server, Server]]:
    """Two host servers: the allowed one and one no rule allows."""
    a, b = Server(), Server()
    yield a, b
    a.close()
    b.close()


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    assert set(threading.enumerate()) - before == set()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def pinned(rules: Rules, text: str) -> Policy:
    return rules.load(text).pin_hostnames(lambda name: ["127.0.0.1"])


class Sandbox:
    """The child in a fresh network namespace, with the broker serving it from this process."""

    def __init__(
        self, rules: Rules, text: str, probes: list[list[Any]], *, hosts: bool = False, fork: bool = False
    ) -> None:
        self.refusals: list[str] = []
        policy = pinned(rules, text)
        host_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.broker = Broker(policy, on_refusal=self.refusals.append)
        self.broker.start(host_end)
        args = {
            "rules": str(rules.path()),
            "home": str(rules.home),
            "cwd": str(rules.root),
            "fd": child_end.fileno(),
            "hosts": str(rules.root / "hosts") if hosts else "",
            "fork": fork,
            "curl": CURL,
            "probes": probes,
        }
        command = ["unshare", "--user", "--map-root-user", "--net"]
        command += ["--mount"] if hosts else []
        command += [sys.executable, "-c", CHILD, json.dumps(args)]
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            pass_fds=[child_end.fileno()],
        )
        child_end.close()

    def readline(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def finish(self) -> dict[str, Any]:
        out, err = self.process.communicate()
        self.broker.stop()
        assert self.process.returncode == 0, err
        result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
        return result


def run(rules: Rules, text: str, probes: list[list[Any]], **kwargs: Any) -> tuple[list[str], list[str]]:
    sandbox = Sandbox(rules, text, probes, **kwargs)
    result = sandbox.finish()
    assert result["threads"] == 1  # the forwarder's threads all ended
    return result["results"], sandbox.refusals


# -- the plan (pure) ---------------------------------------------------------------------------


def test_plan_ports_names_inbound_and_hosts_text(rules: Rules) -> None:
    p = plan(
        pinned(
            rules,
            "net=ALLOW|tcp|127.0.0.1|8080|OUT\n"
            "net=ALLOW|tcp|api.example.test|443,8443|OUT\n"
            "net=ALLOW|tcp|127.0.0.1|8000-8001|IN\n",
        )
    )
    assert p.ports == (443, 8080, 8443)
    assert p.aliases == (("127.0.1.1", "api.example.test", ("127.0.0.1",)),)
    assert p.hosts == (
        "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\tapi.example.test\n"
    )
    assert p.inbound == (("127.0.0.1", 8000), ("127.0.0.1", 8001))
    assert p.destinations("127.0.1.1") == ("127.0.0.1",)
    assert p.destinations("127.0.0.1") == ("127.0.0.1",)
    assert (p.refusals, p.anyip) == ((), ())


def test_plan_refuses_udp_only_and_wide_port_ranges(rules: Rules) -> None:
    path = rules.path()
    p = plan(
        pinned(
            rules,
            "net=ALLOW|udp|127.0.0.1|53|OUT\n"
            "net=ALLOW|tcp|127.0.0.1|1000-1064|OUT\n"
            "net=ALLOW|*|127.0.0.1|80|OUT\n",
        )
    )
    assert p.refusals == (
        f"Rule 'net=ALLOW|udp|127.0.0.1|53|OUT' from {path}(1) cannot be enforced: the network broker "
        "of this provider forwards TCP only, not UDP.\n"
        "Use `os-sandbox=landlock` or `os-sandbox=subprocess` for UDP, or remove the rule.",
        f"Rule 'net=ALLOW|tcp|127.0.0.1|1000-1064|OUT' from {path}(2) cannot be enforced: it allows 65 "
        "ports and the network broker listens on at most 64 ports per rule.\n"
        "List the ports the program needs, e.g. `443` or `8000-8009`.",
    )
    assert p.notes == (
        f"Rule 'net=ALLOW|*|127.0.0.1|80|OUT' from {path}(3): only TCP is forwarded, UDP is not.",
    )
    assert p.ports == (80,)
    with pytest.raises(ProviderError) as info:
        from pysandboxes.providers.netbroker import Forwarder

        Forwarder().start(socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET), p)
    assert str(info.value) == "\n".join(p.refusals)


def test_plan_non_loopback_addresses_need_anyip_and_deny_wins_for_inbound(rules: Rules) -> None:
    p = plan(
        pinned(
            rules,
            "net=ALLOW|tcp|10.1.2.3|443|OUT\nnet=ALLOW|tcp|127.0.0.0/8|9000-9001|IN\n"
            "net=DENY|tcp|127.0.0.1|9001|IN\n",
        )
    )
    assert p.anyip == (f"'net=ALLOW|tcp|10.1.2.3|443|OUT' from {rules.path()}(1)",)
    assert p.anyip_families == (4,)
    assert p.inbound == (("127.0.0.1", 9000),)


def test_guard_policy_pins_names_to_their_alias(rules: Rules) -> None:
    from pysandboxes.guards.network import decider

    policy = pinned(rules, "net=ALLOW|tcp|api.example.test|443|OUT\n")
    inside = plan(policy).guard_policy(policy)
    _parse, _decide, judge = decider(inside)
    judge("api.example.test", 443, "tcp", "out")
    judge("127.0.1.1", 443, "tcp", "out")
    with pytest.raises(ConnectionRefusedError):
        judge("127.0.1.1", 444, "tcp", "out")
    _parse, _decide, host_judge = decider(policy)  # the broker's: the real pinned address
    host_judge("127.0.0.1", 443, "tcp", "out")
    with pytest.raises(ConnectionRefusedError):
        host_judge("127.0.1.1", 443, "tcp", "out")


# -- the broker's protocol (no namespace needed: the test speaks it) ---------------------------


class Client:
    def __init__(self, rules: Rules, text: str, **kwargs: Any) -> None:
        self.host_end, self.sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.broker = Broker(pinned(rules, text), **kwargs)
        self.broker.start(self.host_end)

    def ask(
        self, request: bytes | dict[str, Any], fds: list[int] | None = None
    ) -> tuple[dict[str, Any], list[int]]:
        data = request if isinstance(request, bytes) else json.dumps(request).encode()
        socket.send_fds(self.sock, [data], fds or [])
        msg, got, _flags, _addr = socket.recv_fds(self.sock, MAX_MESSAGE, 4)
        reply: dict[str, Any] = json.loads(msg)
        return reply, got

    def close(self) -> None:
        self.broker.stop()
        self.sock.close()


def connect(ident: int, host: str, port: int, proto: str = "tcp") -> dict[str, Any]:
    return {"op": "connect", "id": ident, "proto": proto, "host": host, "port": port}


def test_broker_passes_a_connected_socket_for_an_allowed_destination(
    rules: Rules, servers: tuple[Server, Server]
) -> None:
    allowed, other = servers
    client = Client(rules, f"net=ALLOW|tcp|127.0.0.1|{allowed.port}|OUT\n")
    try:
        reply, fds = client.ask(connect(7, "127.0.0.1", allowed.port))
        assert reply == {"op": "connected", "id": 7} and len(fds) == 1
        with socket.socket(fileno=fds[0]) as s:
            s.sendall(b"hi")
            s.shutdown(socket.SHUT_WR)
            assert s.recv(100) == b"echo:hi"
        reply, fds = client.ask(connect(8, "127.0.0.1", other.port))
        assert (reply, fds) == (
            {
                "op": "error",
                "id": 8,
                "error": f"Connection to [127.0.0.1]:{other.port} DENIED by implicit default policy\n"
                f"Add `net=ALLOW|tcp|127.0.0.1|{other.port}|OUT` to allow it.",
            },
            [],
        )
    finally:
        client.close()
    assert (allowed.connections, other.connections) == (1, 0)


@pytest.mark.parametrize(
    ("request_", "ident", "error"),
    [
        (b"not json", None, "malformed request: not a JSON object"),
        (b"[1, 2]", None, "malformed request: not a JSON object"),
        (b"x" * (MAX_MESSAGE + 1), None, f"request longer than {MAX_MESSAGE} bytes"),
        ({"op": "connect", "id": True}, None, "malformed request: 'id' must be a non-negative integer"),
        ({**connect(1, "127.0.0.1", 80), "op": "bind"}, 1, "malformed request: 'op' must be 'connect'"),
        (connect(2, "127.0.0.1", 80, "udp"), 2, "UDP is not forwarded by the network broker"),
        (connect(3, "127.0.0.1", 80, "sctp"), 3, "malformed request: 'proto' must be 'tcp'"),
        (connect(4, "127.0.0.1", 0), 4, "malformed request: 'port' must be an integer from 1 to 65535"),
        (connect(5, "127.0.0.1", "80"), 5, "malformed request: 'port' must be an integer from 1 to 65535"),
        (
            connect(6, "localhost", 80),
            6,
            "Connection to 'localhost' DENIED: the broker connects to addresses only",
        ),
        (connect(7, "0.0.0.0", 80), 7, "Connection to [0.0.0.0]:80 DENIED: not a unicast address"),
        (connect(8, "::", 80), 8, "Connection to [::]:80 DENIED: not a unicast address"),
    ],
)
def test_broker_refuses_malformed_requests(
    rules: Rules, request_: bytes | dict[str, Any], ident: int | None, error: str
) -> None:
    client = Client(rules, "net=ALLOW|tcp|*|*|OUT\n")
    try:
        assert client.ask(request_) == ({"op": "error", "id": ident, "error": error}, [])
    finally:
        client.close()


def test_broker_judges_mapped_addresses_and_drops_passed_fds(
    rules: Rules, servers: tuple[Server, Server]
) -> None:
    allowed, _other = servers
    client = Client(rules, f"net=DENY|tcp|127.0.0.1|{allowed.port}|OUT\nnet=ALLOW|tcp|127.0.0.0/8|*|OUT\n")
    r, w = os.pipe()
    try:
        reply, fds = client.ask(connect(1, "::ffff:127.0.0.1", allowed.port), fds=[r])
        assert fds == []
        assert reply["error"] == (
            f"Connection to [127.0.0.1]:{allowed.port} DENIED by explicit rule "
            f"'net=DENY|tcp|127.0.0.1|{allowed.port}|OUT' from {rules.path()}(1)"
        )
    finally:
        client.close()
        os.close(r)
        os.close(w)
    assert allowed.connections == 0


def test_broker_bounds_pending_connections(rules: Rules) -> None:
    client = Client(rules, "net=ALLOW|tcp|127.0.0.1|*|OUT\n", max_pending=0)
    try:
        assert client.ask(connect(1, "127.0.0.1", 80)) == (
            {"op": "error", "id": 1, "error": "too many pending connections (at most 0)"},
            [],
        )
    finally:
        client.close()


# -- the forwarder in a fresh network namespace ------------------------------------------------


def test_allowed_port_is_reachable_from_python_and_native_code(
    rules: Rules, servers: tuple[Server, Server]
) -> None:
    allowed, _other = servers
    probes: list[list[Any]] = [["py", "127.0.0.1", allowed.port], ["libc", "127.0.0.1", allowed.port]]
    if CURL:
        probes.append(["curl", f"http://127.0.0.1:{allowed.port}/"])
    results, refusals = run(rules, f"net=ALLOW|tcp|127.0.0.1|{allowed.port}|OUT\n", probes)
    assert results == ["echo:ping", "echo:ping", *(["http-echo"] if CURL else [])]
    assert refusals == []
    assert allowed.connections == len(probes)


def test_port_no_rule_allows_is_refused_inside(rules: Rules, servers: tuple[Server, Server]) -> None:
    allowed, other = servers
    probes = [["py", "127.0.0.1", other.port], ["libc", "127.0.0.1", other.port]]
    if CURL:
        probes.append(["curl", f"http://127.0.0.1:{other.port}/"])
    results, _refusals = run(rules, f"net=ALLOW|tcp|127.0.0.1|{allowed.port}|OUT\n", probes)
    refused = "ConnectionRefusedError:ECONNREFUSED"
    assert results[:2] == [refused, refused]
    if CURL:
        assert results[2].startswith("curl exit 7: ")
    assert other.connections == 0


def test_without_any_rule_the_host_is_unreachable(rules: Rules, servers: tuple[Server, Server]) -> None:
    allowed, _other = servers
    results, _ = run(rules, "\n", [["py", "127.0.0.1", allowed.port], ["libc", "127.0.0.1", allowed.port]])
    assert results == ["ConnectionRefusedError:ECONNREFUSED"] * 2
    assert allowed.connections == 0


def test_network_rule_reaches_the_host(rules: Rules, servers: tuple[Server, Server]) -> None:
    allowed, _other = servers
    results, refusals = run(
        rules,
        f"net=ALLOW|tcp|127.0.0.0/8|{allowed.port}|OUT\n",
        [["py", "127.0.0.1", allowed.port], ["libc", "127.0.0.1", allowed.port]],
    )
    assert (results, refusals) == (["echo:ping", "echo:ping"], [])


def test_deny_wins_over_allow_for_native_code(rules: Rules, servers: tuple[Server, Server]) -> None:
    allowed, _other = servers
    text = f"net=ALLOW|tcp|127.0.0.0/8|{allowed.port}|OUT\nnet=DENY|tcp|127.0.0.1|{allowed.port}|OUT\n"
    results, refusals = run(
        rules, text, [["py", "127.0.0.1", allowed.port], ["libc", "127.0.0.1", allowed.port]]
    )
    # accepted by the forwarder (its port is allowed), then reset: the broker refused
    assert results == ["reset"] * 2
    denied = (
        f"Connection to [127.0.0.1]:{allowed.port} DENIED by explicit rule "
        f"'net=DENY|tcp|127.0.0.1|{allowed.port}|OUT' from {rules.path()}(2)"
    )
    assert refusals == [denied, denied]
    assert allowed.connections == 0


def test_host_name_rule_is_reachable_by_name_through_the_hosts_file(
    rules: Rules, servers: tuple[Server, Server]
) -> None:
    allowed, other = servers
    probes: list[list[Any]] = [["py", "service.test", allowed.port], ["libc", "127.0.1.1", allowed.port]]
    probes.append(["py", "service.test", other.port])
    if CURL:
        probes.append(["curl", f"http://service.test:{allowed.port}/"])
    results, refusals = run(rules, f"net=ALLOW|tcp|service.test|{allowed.port}|OUT\n", probes, hosts=True)
    assert results == [
        "echo:ping",
        "echo:ping",
        "ConnectionRefusedError:ECONNREFUSED",
        *(["http-echo"] if CURL else []),
    ]
    assert refusals == []
    assert other.connections == 0


def test_host_name_is_unknown_inside_without_its_rule(rules: Rules, servers: tuple[Server, Server]) -> None:
    allowed, _other = servers
    results, _ = run(
        rules, f"net=ALLOW|tcp|127.0.0.1|{allowed.port}|OUT\n", [["py", "service.test", allowed.port]]
    )
    assert results[0].startswith("gaierror:")
    assert allowed.connections == 0


@pytest.mark.parametrize("fork", [False, True], ids=["threads", "forked"])
def test_in_rule_is_reachable_from_the_host(rules: Rules, fork: bool) -> None:
    port = free_port()
    sandbox = Sandbox(rules, f"net=ALLOW|tcp|127.0.0.1|{port}|IN\n", [["serve_once", port]], fork=fork)
    try:
        assert sandbox.readline() == "ready"
        with socket.create_connection(("127.0.0.1", port)) as c:
            c.sendall(b"hello")
            c.shutdown(socket.SHUT_WR)
            data = b""
            while chunk := c.recv(100):
                data += chunk
        assert data == b"inside:hello"
    finally:
        result = sandbox.finish()
    assert result["results"] == ["served"]


def test_without_in_rule_the_host_port_is_closed(rules: Rules) -> None:
    port = free_port()
    sandbox = Sandbox(rules, f"net=ALLOW|tcp|127.0.0.1|{port}|OUT\n", [])
    try:
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port)).close()
    finally:
        sandbox.finish()


def test_in_rule_port_taken_on_the_host_fails_closed(rules: Rules) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        host_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        broker = Broker(pinned(rules, f"net=ALLOW|tcp|127.0.0.1|{port}|IN\n"))
        with pytest.raises(ProviderError) as info:
            broker.start(host_end)
        child_end.close()
    assert str(info.value) == (
        f"The network broker cannot listen on the host's [127.0.0.1]:{port} for an IN rule: "
        "Address already in use.\nStop what uses the port, or change the rule."
    )


def test_empty_plan_has_no_listener() -> None:
    assert NetPlan().ports == () and NetPlan().destinations("127.0.0.1") == ("127.0.0.1",)


# -- addresses outside the loopback: only inside a namespace with no route out -----------------

OUTER = """\
import json, socket, subprocess, sys, threading
from pysandboxes.rules import load_policy
from pysandboxes.providers.netbroker import Broker, _local_default_route

args = json.loads(sys.argv[1])
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
subprocess.run(["ip", "route", "add", "local", "10.1.2.3/32", "dev", "lo"], check=True)
server = socket.create_server(("10.1.2.3", 4443))


def serve():
    conn, _ = server.accept()
    data = b""
    while chunk := conn.recv(100):
        data += chunk
    conn.sendall(b"far:" + data)
    conn.close()


t = threading.Thread(target=serve)
t.start()
policy = load_policy(args["rules"], environ={"HOME": args["home"]}, cwd=args["cwd"])
host_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
refusals = []
broker = Broker(policy, on_refusal=refusals.append)
broker.start(host_end)
inner = {**args, "fd": child_end.fileno()}
p = subprocess.run(
    ["unshare", "--user", "--map-root-user", "--net", sys.executable, "-c", args["child"], json.dumps(inner)],
    capture_output=True, text=True, pass_fds=[child_end.fileno()],
)
child_end.close()
if t.is_alive():
    socket.create_connection(("10.1.2.3", 4443)).close()
t.join()
broker.stop()
print(json.dumps({"rc": p.returncode, "err": p.stderr, "out": p.stdout, "refusals": refusals}))
"""


@pytest.mark.parametrize("allowed", [True, False], ids=["allowed", "denied"])
def test_address_outside_loopback_through_anyip(rules: Rules, allowed: bool) -> None:
    text = "net=ALLOW|tcp|10.0.0.0/8|4443|OUT\n" + ("" if allowed else "net=DENY|tcp|10.1.2.3|4443|OUT\n")
    rules.write(text)
    args = {
        "rules": str(rules.path()),
        "home": str(rules.home),
        "cwd": str(rules.root),
        "hosts": "",
        "fork": False,
        "curl": CURL,
        "probes": [["py", "10.1.2.3", 4443], ["py", "10.1.2.4", 4444]],
        "child": CHILD,
    }
    p = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--net", sys.executable, "-c", OUTER, json.dumps(args)],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    outcome = json.loads(p.stdout)
    assert outcome["rc"] == 0, outcome["err"]
    inner = json.loads(outcome["out"].strip().splitlines()[-1])
    if allowed:
        assert inner["results"] == ["far:ping", "ConnectionRefusedError:ECONNREFUSED"]
        assert outcome["refusals"] == []
    else:
        assert inner["results"] == ["reset", "ConnectionRefusedError:ECONNREFUSED"]
        assert outcome["refusals"] == [
            "Connection to [10.1.2.3]:4443 DENIED by explicit rule "
            f"'net=DENY|tcp|10.1.2.3|4443|OUT' from {rules.path()}(2)"
        ]


def test_address_outside_loopback_without_cap_net_admin_fails_closed(rules: Rules) -> None:
    rules.write("net=ALLOW|tcp|10.1.2.3|443|OUT\n")
    code = (
        "import json, socket, sys\n"
        "from pysandboxes.rules import load_policy\n"
        "from pysandboxes.providers.netbroker import Forwarder, plan\n"
        "args = json.loads(sys.argv[1])\n"
        "p = plan(load_policy(args['rules'], environ={'HOME': args['home']}, cwd=args['cwd']))\n"
        "a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)\n"
        "try:\n"
        "    Forwarder().start(a, p)\n"
        "except Exception as e:\n"
        "    print(type(e).__name__ + ': ' + str(e))\n"
    )
    args = {"rules": str(rules.path()), "home": str(rules.home), "cwd": str(rules.root)}
    # a network namespace owned by a user namespace we are not root in: no CAP_NET_ADMIN there
    outer = ["unshare", "--user", "--map-root-user", "--net", "sh", "-c"]
    inner = 'ip link set lo up && exec unshare --user "$@"'
    p = subprocess.run(
        [*outer, inner, "sh", sys.executable, "-c", code, json.dumps(args)], capture_output=True, text=True
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout == (
        f"ProviderError: The rule(s) 'net=ALLOW|tcp|10.1.2.3|443|OUT' from {rules.path()}(1) name addresses "
        "outside the loopback: reaching them needs CAP_NET_ADMIN in the sandbox's network namespace "
        "(Operation not permitted).\nUse a host name in the rule (it is reached through an alias), or run "
        "with `os-sandbox=unshare`.\n"
    )
