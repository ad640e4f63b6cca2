"""net=ACTION|PROTO|HOST|PORTS|DIR: decisions are computed in-process; nothing connects."""

from __future__ import annotations

import pytest

from pysandboxes.errors import RuleSyntaxError
from pysandboxes.rules import CODE, Origin

ALLOW_API = "net=ALLOW|tcp|203.0.113.10|443|OUT\n"


def fake_resolver(table):
    calls = []

    def resolve(name):
        calls.append(name)
        return table.get(name)

    resolve.calls = calls
    return resolve


def test_connection_is_allowed_by_an_allow_rule(rules):
    assert rules.load(ALLOW_API).decide_connect("203.0.113.10", 443).allowed


def test_connection_is_denied_without_a_rule(rules):
    decision = rules.load("").decide_connect("203.0.113.10", 443)
    assert decision.allowed is False
    assert decision.rule is None


def test_other_port_is_denied(rules):
    assert not rules.load(ALLOW_API).decide_connect("203.0.113.10", 80).allowed


def test_other_address_is_denied(rules):
    assert not rules.load(ALLOW_API).decide_connect("203.0.113.11", 443).allowed


def test_udp_is_denied_by_a_tcp_rule(rules):
    assert not rules.load(ALLOW_API).decide_connect("203.0.113.10", 443, "udp").allowed


def test_listening_is_denied_by_an_outgoing_rule(rules):
    assert not rules.load(ALLOW_API).decide_connect("203.0.113.10", 443, "tcp", "in").allowed


def test_incoming_rule_allows_listening(rules):
    policy = rules.load("net=ALLOW|tcp|127.0.0.1|8000|IN\n")
    assert policy.decide_connect("127.0.0.1", 8000, "tcp", "in").allowed
    assert not policy.decide_connect("127.0.0.1", 8000, "tcp", "out").allowed


def test_star_direction_covers_both(rules):
    policy = rules.load("net=ALLOW|tcp|127.0.0.1|8000|*\n")
    assert policy.decide_connect("127.0.0.1", 8000, "tcp", "in").allowed
    assert policy.decide_connect("127.0.0.1", 8000, "tcp", "out").allowed


def test_direction_list_covers_both(rules):
    policy = rules.load("net=ALLOW|tcp|127.0.0.1|8000|in, out\n")
    assert policy.decide_connect("127.0.0.1", 8000, "tcp", "in").allowed
    assert policy.decide_connect("127.0.0.1", 8000, "tcp", "out").allowed


@pytest.mark.parametrize("proto", ["*", "any", "tcp,udp", "UDP, TCP"])
def test_protocol_lists_cover_tcp_and_udp(rules, proto):
    policy = rules.load(f"net=ALLOW|{proto}|127.0.0.1|53|OUT\n")
    assert policy.decide_connect("127.0.0.1", 53, "tcp").allowed
    assert policy.decide_connect("127.0.0.1", 53, "udp").allowed


def test_action_and_protocol_are_case_insensitive(rules):
    assert rules.load("net=allow|TCP|127.0.0.1|80|out\n").decide_connect("127.0.0.1", 80).allowed


@pytest.mark.parametrize(
    ("ports", "inside", "outside"),
    [
        ("443", [443], [442, 444]),
        ("8000-8099", [8000, 8050, 8099], [7999, 8100]),
        ("1024-", [1024, 65535], [1023]),
        ("80,443", [80, 443], [81, 442]),
        ("*", [0, 1, 65535], []),
    ],
)
def test_port_forms(rules, ports, inside, outside):
    policy = rules.load(f"net=ALLOW|tcp|127.0.0.1|{ports}|OUT\n")
    assert [p for p in inside if not policy.decide_connect("127.0.0.1", p).allowed] == []
    assert [p for p in outside if policy.decide_connect("127.0.0.1", p).allowed] == []


def test_network_rule_covers_its_addresses(rules):
    policy = rules.load("net=ALLOW|tcp|192.0.2.0/24|80|OUT\n")
    assert policy.decide_connect("192.0.2.200", 80).allowed
    assert not policy.decide_connect("192.0.3.1", 80).allowed


def test_star_host_covers_ipv4_and_ipv6(rules):
    policy = rules.load("net=ALLOW|tcp|*|80|OUT\n")
    assert policy.decide_connect("198.51.100.1", 80).allowed
    assert policy.decide_connect("2001:db8::1", 80).allowed


def test_bracketed_ipv6_host(rules):
    policy = rules.load("net=ALLOW|tcp|[2001:db8::1]|443|OUT\n")
    assert policy.decide_connect("2001:db8::1", 443).allowed
    assert not policy.decide_connect("2001:db8::2", 443).allowed


def test_ipv6_network(rules):
    policy = rules.load("net=DENY|*|fc00::/7|*|OUT\nnet=ALLOW|*|*|*|OUT\n")
    assert not policy.decide_connect("fd12::1", 80).allowed
    assert policy.decide_connect("2001:db8::1", 80).allowed


def test_variable_in_a_field(rules):
    policy = rules.load("net=ALLOW|tcp|127.0.0.1|${PORT:-8000}|IN\n", environ={"PORT": "9000"})
    assert policy.decide_connect("127.0.0.1", 9000, "tcp", "in").allowed
    assert not policy.decide_connect("127.0.0.1", 8000, "tcp", "in").allowed


# -- DENY wins ------------------------------------------------------------------------------


def test_deny_beats_an_earlier_allow_in_the_same_file(rules):
    policy = rules.load("net=ALLOW|*|*|*|OUT\nnet=DENY|*|10.0.0.0/8|*|OUT\n")
    assert not policy.decide_connect("10.1.2.3", 80).allowed
    assert policy.decide_connect("11.1.2.3", 80).allowed


def test_net_deny_in_included_profile_beats_allow_in_project(rules):
    rules.user_profile("net=DENY|*|10.0.0.0/8|*|OUT\n")
    policy = rules.load(
        'net=ALLOW|tcp|10.0.0.5|443|OUT\ninclude "~/.config/py-sandboxes/user-py-sandboxes.profile"\n'
    )
    decision = policy.decide_connect("10.0.0.5", 443)
    assert decision.allowed is False
    assert decision.rule.rule.text == "net=DENY|*|10.0.0.0/8|*|OUT"


def test_net_deny_in_file_beats_allow_from_the_command_line(rules):
    policy = rules.load("net=DENY|*|10.0.0.0/8|*|OUT\n", extra_rules={"net": "ALLOW|tcp|10.0.0.5|443|OUT"})
    assert not policy.decide_connect("10.0.0.5", 443).allowed


def test_net_deny_from_code_beats_allow_in_file(rules):
    policy = rules.load(
        "net=ALLOW|tcp|*|443|OUT\n", extra_rules={"net": "DENY|tcp|10.0.0.0/8|*|OUT"}, extra_source=CODE
    )
    assert not policy.decide_connect("10.0.0.5", 443).allowed
    assert policy.decide_connect("11.0.0.5", 443).allowed


def test_duplicate_rules_are_compiled_once(rules):
    policy = rules.load("net=ALLOW|tcp|127.0.0.1|80|OUT\nnet=allow|TCP|127.0.0.1|80|out\n")
    assert len(policy.net.rules) == 1


# -- IPv4 inside IPv6 -----------------------------------------------------------------------


def test_ipv4_mapped_address_is_judged_as_ipv4(rules):
    policy = rules.load("net=DENY|*|10.0.0.0/8|*|OUT\nnet=ALLOW|*|*|*|OUT\n")
    assert not policy.decide_connect("::ffff:10.1.2.3", 80).allowed


def test_ipv4_compatible_address_is_judged_as_ipv4(rules):
    policy = rules.load("net=DENY|*|10.0.0.0/8|*|OUT\nnet=ALLOW|*|*|*|OUT\n")
    assert not policy.decide_connect("::10.1.2.3", 80).allowed


def test_ipv4_mapped_address_in_a_rule_matches_the_ipv4_address(rules):
    policy = rules.load("net=ALLOW|tcp|::ffff:192.0.2.1|80|OUT\n")
    assert policy.decide_connect("192.0.2.1", 80).allowed


def test_ipv4_mapped_network_in_a_deny_rule_matches_ipv4_addresses(rules):
    policy = rules.load("net=DENY|*|::ffff:10.0.0.0/104|*|OUT\nnet=ALLOW|*|*|*|OUT\n")
    assert not policy.decide_connect("10.200.0.1", 80).allowed
    assert not policy.decide_connect("::ffff:10.200.0.1", 80).allowed
    assert policy.decide_connect("11.0.0.1", 80).allowed


def test_ipv4_rule_allows_the_mapped_address(rules):
    policy = rules.load("net=ALLOW|tcp|192.0.2.1|80|OUT\n")
    assert policy.decide_connect("::ffff:192.0.2.1", 80).allowed


# -- host names -----------------------------------------------------------------------------


def test_hostname_rule_matches_nothing_before_pinning(rules):
    policy = rules.load("net=ALLOW|tcp|api.example.com|443|OUT\n")
    assert policy.net.hostnames == {"api.example.com"}
    assert not policy.decide_connect("203.0.113.7", 443).allowed


def test_hostname_rule_matches_its_pinned_addresses(rules):
    policy = rules.load("net=ALLOW|tcp|API.Example.com.|443|OUT\n")
    pinned = policy.pin_hostnames(fake_resolver({"api.example.com": ["203.0.113.7", "2001:db8::7"]}))
    assert pinned.decide_connect("203.0.113.7", 443).allowed
    assert pinned.decide_connect("2001:db8::7", 443).allowed
    assert not pinned.decide_connect("203.0.113.8", 443).allowed
    assert not policy.decide_connect("203.0.113.7", 443).allowed  # the original is unchanged


def test_each_hostname_is_resolved_once(rules):
    resolve = fake_resolver({"api.example.com": ["203.0.113.7"]})
    policy = rules.load("net=ALLOW|tcp|api.example.com|443|OUT\nnet=ALLOW|udp|api.example.com|53|OUT\n")
    policy.pin_hostnames(resolve)
    assert resolve.calls == ["api.example.com"]


def test_unresolved_allow_hostname_allows_nothing(rules):
    policy = rules.load("net=ALLOW|tcp|api.example.com|443|OUT\n")
    pinned = policy.pin_hostnames(fake_resolver({}))
    assert not pinned.decide_connect("203.0.113.7", 443).allowed


def test_hostname_deny_beats_an_address_allow_after_pinning(rules):
    policy = rules.load("net=DENY|*|evil.example|*|OUT\nnet=ALLOW|tcp|*|443|OUT\n")
    pinned = policy.pin_hostnames(fake_resolver({"evil.example": ["198.51.100.66"]}))
    assert not pinned.decide_connect("198.51.100.66", 443).allowed
    assert pinned.decide_connect("198.51.100.67", 443).allowed


def test_unresolved_deny_hostname_is_an_error(rules):
    main = rules.write("net=DENY|*|evil.example|*|OUT\n")
    policy = rules.load()
    with pytest.raises(RuleSyntaxError) as info:
        policy.pin_hostnames(fake_resolver({}))
    assert [(p.origin.path, p.origin.line, p.message) for p in info.value.problems] == [
        (
            str(main),
            1,
            "'net=DENY|*|evil.example|*|OUT': 'evil.example' does not resolve, so this DENY rule "
            "cannot be enforced; use an address or a network instead",
        )
    ]


# -- explain --------------------------------------------------------------------------------


def test_explain_names_the_deny_rule_and_its_file(rules):
    main = rules.write("net=DENY|*|10.0.0.0/8|*|OUT\n")
    decision = rules.load().decide_connect("10.255.255.1", 80)
    assert decision.explain("[10.255.255.1]:80") == (
        f"Connection to [10.255.255.1]:80 DENIED by explicit rule 'net=DENY|*|10.0.0.0/8|*|OUT' "
        f"from {Origin(str(main), 1)}"
    )


def test_explain_implicit_default(rules):
    decision = rules.load("").decide_connect("10.255.255.1", 80)
    assert decision.explain("[10.255.255.1]:80") == (
        "Connection to [10.255.255.1]:80 DENIED by implicit default policy"
    )


def test_explain_allow_rule(rules):
    decision = rules.load(ALLOW_API).decide_connect("203.0.113.10", 443)
    assert decision.explain("[203.0.113.10]:443").startswith(
        "Connection to [203.0.113.10]:443 ALLOWED by explicit rule 'net=ALLOW|tcp|203.0.113.10|443|OUT' from "
    )


def test_explain_relative_path_with_cwd_at_the_project(rules, monkeypatch):
    monkeypatch.chdir(rules.root)
    decision = rules.load("net=DENY|*|10.0.0.0/8|*|OUT\n").decide_connect("10.255.255.1", 80)
    assert decision.explain("[10.255.255.1]:80") == (
        "Connection to [10.255.255.1]:80 DENIED by explicit rule 'net=DENY|*|10.0.0.0/8|*|OUT' "
        "from .py-sandboxes(1)"
    )


# -- errors ---------------------------------------------------------------------------------

FORMAT = "net=ACTION|PROTO|HOST|PORTS|DIR, e.g. net=ALLOW|tcp|api.example.com|443|OUT"


@pytest.mark.parametrize(("value", "count"), [("ALLOW|tcp|*|443", 4), ("ALLOW|tcp|*|443|OUT|x", 6), ("", 1)])
def test_wrong_field_count_is_an_error(rules, value, count):
    problem = rules.problem(f"net={value}\n")
    assert problem.message == f"'net={value}' has {count} field(s), expected 5: {FORMAT}"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("PERMIT|tcp|*|443|OUT", "action 'PERMIT' must be ALLOW or DENY"),
        ("ALLOW|icmp|*|443|OUT", "protocol 'icmp' must be tcp, udp, tcp,udp or *"),
        ("ALLOW|tcp,*|*|443|OUT", "protocol '*' must stand alone"),
        ("ALLOW|tcp|10.0.0.256|443|OUT", "'10.0.0.256' is not a valid address or network"),
        ("ALLOW|tcp|10.0.0.0/33|443|OUT", "'10.0.0.0/33' is not a valid address or network"),
        ("ALLOW|tcp|2001:db8:::1|443|OUT", "'2001:db8:::1' is not a valid address or network"),
        (
            "ALLOW|tcp|bad host!|443|OUT",
            "host 'bad host!' is not an address, a network (a.b.c.d/n), a host name or *",
        ),
        ("ALLOW|tcp|*|https|OUT", "invalid port list 'https': use *, 443, 8000-8099, 1024- or 80,443"),
        ("ALLOW|tcp|*||OUT", "invalid port list '': use *, 443, 8000-8099, 1024- or 80,443"),
        ("ALLOW|tcp|*|70000|OUT", "invalid port range '70000': ports go from 0 to 65535, low to high"),
        ("ALLOW|tcp|*|90-80|OUT", "invalid port range '90-80': ports go from 0 to 65535, low to high"),
        ("ALLOW|tcp|*|443|SIDEWAYS", "direction 'SIDEWAYS' must be IN, OUT, IN,OUT or *"),
    ],
)
def test_invalid_field_is_an_error(rules, value, message):
    problem = rules.problem(f"net={value}\n")
    assert problem.message == f"'net={value}': {message}"


def test_every_bad_field_of_one_rule_is_reported(rules):
    exc = rules.error("net=MAYBE|icmp|*|x|UP\n")
    assert rules.messages(exc) == [
        "'net=MAYBE|icmp|*|x|UP': action 'MAYBE' must be ALLOW or DENY",
        "'net=MAYBE|icmp|*|x|UP': direction 'UP' must be IN, OUT, IN,OUT or *",
        "'net=MAYBE|icmp|*|x|UP': invalid port list 'x': use *, 443, 8000-8099, 1024- or 80,443",
        "'net=MAYBE|icmp|*|x|UP': protocol 'icmp' must be tcp, udp, tcp,udp or *",
    ]


def test_unset_variable_in_a_field_is_an_error(rules):
    problem = rules.problem("net=ALLOW|tcp|${HOST}|443|OUT\n")
    assert problem.message == (
        "in 'net=ALLOW|tcp|${HOST}|443|OUT': ${HOST} is not set and has no default: "
        "set HOST, or write ${HOST:-default}"
    )
