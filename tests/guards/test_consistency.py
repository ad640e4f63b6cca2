"""The sealed guards decide exactly as the Policy does (the guards re-implement the hot paths
with C primitives only, so they are checked against the rules' own decision functions)."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pysandboxes.guards import files as file_guard
from pysandboxes.guards import network as net_guard
from pysandboxes.rules import load_policy

NETWORKS = [
    "127.0.0.0/8",
    "127.0.0.1",
    "10.0.0.0/8",
    "10.1.2.0/24",
    "::1",
    "fc00::/7",
    "::ffff:10.0.0.0/104",
    "*",
]
PORTS = ["*", "80", "443", "1-1024", "8000-9000", "22"]
ADDRESSES = st.one_of(
    st.ip_addresses(v=4).map(str),
    st.ip_addresses(v=6).map(str),
    st.sampled_from(["127.0.0.1", "10.1.2.3", "10.255.255.1", "::1", "::ffff:10.1.2.3", "::ffff:127.0.0.1"]),
)
RULES = st.lists(
    st.tuples(
        st.sampled_from(["ALLOW", "DENY"]),
        st.sampled_from(["tcp", "udp", "*"]),
        st.sampled_from(NETWORKS),
        st.sampled_from(PORTS),
        st.sampled_from(["IN", "OUT", "*"]),
    ),
    max_size=5,
)


@settings(max_examples=300, deadline=None)
@given(
    rules=RULES,
    address=ADDRESSES,
    port=st.one_of(st.sampled_from([22, 80, 443, 1024, 8080, 9000]), st.integers(0, 65535)),
    protocol=st.sampled_from(["tcp", "udp"]),
    direction=st.sampled_from(["in", "out"]),
)
def test_network_guard_decides_like_the_policy(tmp_path_factory, rules, address, port, protocol, direction):
    folder = tmp_path_factory.mktemp("net")
    (folder / ".py-sandboxes").write_text("".join(f"net={'|'.join(r)}\n" for r in rules))
    policy = load_policy(str(folder / ".py-sandboxes"))
    parse, decide, _judge = net_guard.decider(policy)
    expected = policy.decide_connect(address, port, protocol, direction)
    parsed = parse(address)
    assert parsed is not None
    got = decide(parsed[0], parsed[1], port, protocol, direction)
    if expected.rule is None:
        assert got is None
    else:
        assert got is not None
        assert got[0] == expected.allowed
        assert got[6] == expected.rule.rule.text


def test_ipv4_mapped_addresses_are_parsed_as_ipv4(tmp_path: Path) -> None:
    (tmp_path / ".py-sandboxes").write_text("net=DENY|*|10.0.0.0/8|*|OUT\n")
    parse, _decide, _judge = net_guard.decider(load_policy(str(tmp_path / ".py-sandboxes")))
    assert parse("::ffff:10.1.2.3") == (4, int(ipaddress.ip_address("10.1.2.3")))
    assert parse("example.org") is None


def test_file_guard_decides_like_the_policy(tmp_path: Path) -> None:
    for d in ("ro/sub", "rw/sub", "other"):
        (tmp_path / d).mkdir(parents=True)
    (tmp_path / ".py-sandboxes").write_text("expose-ro=./ro\nexpose-rw=./rw\nignore=*.key\nignore=secret\n")
    policy = load_policy(str(tmp_path / ".py-sandboxes"))
    guard = file_guard.build(policy)
    probes = [
        "ro/a.txt",
        "ro/sub/b",
        "ro/x.key",
        "ro/secret/y",
        "rw/a.txt",
        "rw/sub/c",
        "rw/k.key",
        "other/a",
        ".py-sandboxes",
        "",
    ]
    for probe in probes:
        path = str(tmp_path / probe) if probe else str(tmp_path)
        for write in (False, True):
            expected = policy.decide_open(path, write=write)
            try:
                guard.check(path, write)
                verdict = "allowed"
            except FileNotFoundError as exc:
                verdict = "ignored" if "is ignored by rule" in str(exc) else "not exposed"
            except PermissionError as exc:
                verdict = "protected" if "sandbox configuration" in str(exc) else "read-only"
            assert verdict == expected.verdict, (probe, write, str(expected.verdict))
