"""Whatever the input, loading rules raises nothing but RuleSyntaxError."""

from __future__ import annotations

import ipaddress

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pysandboxes.errors import RuleProblem, RuleSyntaxError
from pysandboxes.rules import load_policy
from pysandboxes.rules.eval_vocab import EVAL_LIST_KEYS, EVAL_SCALARS
from pysandboxes.rules.loader import KNOWN_KEYS
from pysandboxes.rules.provider_keys import PROVIDER_KEYS
from pysandboxes.rules.substitution import SubstitutionError, substitute

FAST = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

ENVIRON = {"HOME": "", "PIPE": "ALLOW|tcp|*|*|OUT", "COMMA": "json,os", "EMPTY": "", "WORD": "bwrap"}

TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=400)

KEYS = [
    *KNOWN_KEYS,
    *(f"{p}.{k}" for p, keys in PROVIDER_KEYS.items() for k in keys),
    *(f"{k}:llm" for k in (*EVAL_LIST_KEYS, *EVAL_SCALARS)),
    "unknown-key",
    "bwrap.nope",
]

FRAGMENTS = [
    "ALLOW",
    "DENY",
    "ALLOW:",
    "DENY:",
    "|",
    ",",
    "=",
    ":",
    "*",
    "${",
    "}",
    "${PIPE}",
    "${COMMA}",
    "${EMPTY:-x}",
    "${UNSET}",
    "${A:=b}",
    "${WORD:-${UNSET}}",
    "#",
    '"',
    "'",
    "\\",
    " ",
    "~",
    "/",
    ".",
    "..",
    "./",
    "tcp",
    "udp",
    "OUT",
    "IN",
    "443",
    "0-65535",
    "1024-",
    "10.0.0.0/8",
    "::ffff:1.2.3.4",
    "[::1]",
    "api.example.com",
    "json",
    "os.path",
    "threads",
    "os.system",
    "dynamic-code",
    "arith",
    "ListComp",
    "str-methods",
    "__len__",
    "2s",
    "10MB",
    "2G",
    "true",
    "false",
    "\t",
    "é",
    "\x00",
]

VALUES = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=8), max_size=8).map("".join)

LINE = st.one_of(
    st.tuples(st.sampled_from(KEYS), st.sampled_from(["=", " = ", "= "]), VALUES).map("".join),
    st.tuples(
        st.sampled_from(["include ", "include-optional ", "include-platform=linux "]),
        st.text(st.sampled_from("abc.-_${}:~ "), max_size=12),
    ).map(lambda t: f'{t[0]}"{t[1]}"'),
    st.sampled_from(["", "# comment", "learn=false", "py-sandbox=false", "learn=", "expose-rw=."]),
)


def load(rules, data):
    """Write ``data`` as the rule file and load it: a Policy or a RuleSyntaxError, nothing else."""
    rules.write(data)
    try:
        return load_policy(rules.path(), environ=ENVIRON, cwd=str(rules.root))
    except RuleSyntaxError as exc:
        assert exc.problems
        assert list(exc.problems) == sorted(exc.problems, key=RuleProblem.sort_key)
        assert str(exc) == "\n".join(exc.errors)
        return None


@FAST
@given(text=TEXT)
def test_arbitrary_text_raises_only_rule_syntax_error(rules, text):
    load(rules, text)


@FAST
@given(data=st.binary(max_size=400))
def test_arbitrary_bytes_raise_only_rule_syntax_error(rules, data):
    load(rules, data)


@FAST
@given(lines=st.lists(LINE, max_size=12))
def test_lines_of_real_keys_with_random_values_raise_only_rule_syntax_error(rules, lines):
    load(rules, "\n".join(lines) + "\n")


@FAST
@given(
    extra=st.dictionaries(
        st.sampled_from(KEYS).map(lambda k: k.replace("-", "_")),
        VALUES | st.lists(VALUES, max_size=3) | st.booleans() | st.none() | st.integers(),
        max_size=5,
    ),
    source=st.sampled_from(["code", "command line"]),
    locked=st.booleans(),
)
def test_random_extra_rules_raise_only_rule_syntax_error(rules, extra, source, locked):
    rules.write("learn=false\n" if locked else "")
    try:
        load_policy(
            rules.path(), extra_rules=extra, extra_source=source, environ=ENVIRON, cwd=str(rules.root)
        )
    except RuleSyntaxError as exc:
        assert exc.problems
    else:
        assert not (locked and extra), "the lock must refuse every extra rule"


@settings(max_examples=300, deadline=None)
@given(text=TEXT)
def test_substitution_raises_only_substitution_error(text):
    try:
        result = substitute(text, ENVIRON)
    except SubstitutionError:
        assert "${" in text
    else:
        if "${" not in text:
            assert result == text


@FAST
@given(
    address=st.ip_addresses(),
    port=st.integers(0, 65535),
    proto=st.sampled_from(["tcp", "udp"]),
    direction=st.sampled_from(["in", "out"]),
)
def test_deny_network_always_wins_over_allow_all(rules, address, port, proto, direction):
    policy = rules.load("net=ALLOW|*|*|*|*\nnet=DENY|*|10.0.0.0/8|*|*\nnet=DENY|*|fc00::/7|*|*\n")
    decision = policy.decide_connect(str(address), port, proto, direction)
    judged = address
    if address.version == 6 and address.ipv4_mapped is not None:
        judged = address.ipv4_mapped
    elif address.version == 6 and address.packed[:12] == bytes(12) and int(address) > 1:
        judged = ipaddress.IPv4Address(address.packed[12:])
    inside = (judged.version == 4 and judged in ipaddress.ip_network("10.0.0.0/8")) or (
        judged.version == 6 and judged in ipaddress.ip_network("fc00::/7")
    )
    assert decision.allowed is not inside


@FAST
@given(
    parts=st.lists(
        st.text(
            st.characters(exclude_categories=["Cs"], exclude_characters="/\x00"), min_size=1, max_size=10
        ).filter(
            lambda s: s not in (".", "..")  # decide_open() takes resolved paths
        ),
        max_size=6,
    )
)
def test_file_decisions_never_raise_and_stay_inside_exposures(rules, parts):
    rules.mkdir("data")
    policy = rules.load("expose-ro=./data\nignore=*.key\n")
    path = "/".join([str(rules.root / "data"), *parts])
    decision = policy.decide_open(path)
    assert decision.verdict in ("allowed", "ignored")
    assert policy.decide_open(path, write=True).verdict in ("read-only", "ignored")
