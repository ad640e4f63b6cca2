"""A profile written the way pysandboxes 0.7.0 writes them loads and means the same."""

from __future__ import annotations

import pytest

from pysandboxes.rules.files import FileVerdict
from pysandboxes.rules.review import review

REFERENCE_PROFILE = """\
########################################################################
#  .py-sandboxes -- sandbox profile of the "report-builder" tool
#
#  Written by a learning run of pysandboxes 0.7.0, then read over by hand.
#  Anything this file does not grant is refused. The lines between the
#  learning markers came from the learning run: look at each one, then
#  move the ones you keep out of the markers.
########################################################################

# ----------------------------------------------------------------------
# Shared profiles
# ----------------------------------------------------------------------
# The per-user profile applies to every project of this account; the
# machine profile applies to every account. Neither has to exist. A DENY
# network rule in either one beats any ALLOW rule below.
include "~/.config/py-sandboxes/user-py-sandboxes.profile"
include "/etc/py-sandboxes/global-py-sandboxes.profile"

# Personal overrides of whoever starts the tool (never committed).
include "./.local.py-sandboxes"

# ----------------------------------------------------------------------
# Environment variables
# ----------------------------------------------------------------------
# The tool starts with an empty environment. Each env= line adds one
# variable; a variable copied from an unset host variable is left out.
#
# <learning_guard_envs>
env=HOME=${HOME}
env=LANG=${LANG:-C.UTF-8}
env=REPORT_TOKEN=${REPORT_TOKEN}
# </learning_guard_envs>

# ----------------------------------------------------------------------
# Files and directories
# ----------------------------------------------------------------------
# Relative paths start at the directory of this file.
#
# <learning_guard_files>
expose-ro=./data
expose-rw=./reports
# </learning_guard_files>
ignore=*.secret   # credentials stay hidden even inside data/

# ----------------------------------------------------------------------
# Network
# ----------------------------------------------------------------------
# net=ACTION|PROTO|HOST|PORTS|DIRECTION
#
# <learning_guard_socket>
net=ALLOW|TCP|api.example.com|443|OUT
# </learning_guard_socket>
net=DENY|*|169.254.0.0/16|*|OUT   # never the cloud metadata service

# ----------------------------------------------------------------------
# Python imports
# ----------------------------------------------------------------------
# <learning_guard_import>
python-import=json, csv
# </learning_guard_import>

# ----------------------------------------------------------------------
# Sensitive Python APIs
# ----------------------------------------------------------------------
# <learning_guard_api>
python-api=ALLOW:threads
# </learning_guard_api>

# ----------------------------------------------------------------------
# Code given to eval()
# ----------------------------------------------------------------------
# <learning_guard_eval>
eval-syntax=arith, compare
# </learning_guard_eval>

# ----------------------------------------------------------------------
# Values returned by sandboxed functions
# ----------------------------------------------------------------------
# <learning_remote_result>
# </learning_remote_result>
remote-result-guard=true

# ----------------------------------------------------------------------
# Layers
# ----------------------------------------------------------------------
py-sandbox=true
os-sandbox=${OS_SANDBOX:-subprocess}

# ----------------------------------------------------------------------
# Provider settings (only read by the provider named above)
# ----------------------------------------------------------------------
# qemu.memory=2G
# qemu.use_kvm=true
# qemu.start_timeout=90
# bwrap.share-net=false
# firejail.seccomp=true
"""


def resolver(table):
    return lambda name: table.get(name)


@pytest.fixture
def reference(rules):
    rules.mkdir("data")
    rules.mkdir("reports")
    rules.write(REFERENCE_PROFILE)
    return rules


def load(reference, **kwargs):
    return reference.load(**kwargs)


def test_reference_profile_loads_cleanly(reference):
    policy = load(reference)
    assert policy.main_file == str(reference.path())
    assert policy.files == (str(reference.path()),)
    assert policy.notes == ()


def test_reference_optional_includes_are_absent_and_protected(reference):
    policy = load(reference)
    user = str(reference.home / ".config/py-sandboxes/user-py-sandboxes.profile")
    local = str(reference.root / ".local.py-sandboxes")
    assert [i.written for i in policy.includes] == [
        "~/.config/py-sandboxes/user-py-sandboxes.profile",
        "/etc/py-sandboxes/global-py-sandboxes.profile",
        "./.local.py-sandboxes",
    ]
    assert {user, local} <= set(policy.missing_includes)
    assert {user, local} <= policy.files_policy.protected


def test_reference_environment(reference):
    policy = load(reference, environ={"LANG": "", "PATH": "/usr/bin", "SECRET": "s"})
    assert dict(policy.environment) == {"HOME": str(reference.home), "LANG": "C.UTF-8"}


def test_reference_environment_copies_a_set_token(reference):
    policy = load(reference, environ={"REPORT_TOKEN": "abc"})
    assert policy.environment["REPORT_TOKEN"] == "abc"


def test_reference_files(reference):
    policy = load(reference)
    root = reference.root
    assert policy.decide_open(str(root / "data/2024.csv")).allowed
    assert policy.decide_open(str(root / "data/2024.csv"), write=True).verdict == FileVerdict.READ_ONLY
    assert policy.decide_open(str(root / "data/api.secret")).verdict == FileVerdict.IGNORED
    assert policy.decide_open(str(root / "reports/out.pdf"), write=True).allowed
    assert policy.decide_open(str(root / "src/main.py")).verdict == FileVerdict.NOT_EXPOSED
    assert policy.decide_open(str(reference.home / ".ssh/id_ed25519")).verdict == FileVerdict.NOT_EXPOSED


def test_reference_network_before_pinning_allows_nothing(reference):
    assert not load(reference).decide_connect("203.0.113.7", 443).allowed


def test_reference_network_after_pinning(reference):
    policy = load(reference).pin_hostnames(resolver({"api.example.com": ["203.0.113.7"]}))
    assert policy.decide_connect("203.0.113.7", 443, "tcp", "out").allowed
    assert not policy.decide_connect("203.0.113.7", 80, "tcp", "out").allowed
    assert not policy.decide_connect("203.0.113.7", 443, "udp", "out").allowed
    assert not policy.decide_connect("203.0.113.7", 443, "tcp", "in").allowed
    assert not policy.decide_connect("198.51.100.1", 443).allowed


def test_reference_deny_beats_a_host_name_resolving_into_the_denied_network(reference):
    policy = load(reference).pin_hostnames(resolver({"api.example.com": ["169.254.169.254"]}))
    decision = policy.decide_connect("169.254.169.254", 443)
    assert decision.allowed is False
    assert decision.rule.rule.text == "net=DENY|*|169.254.0.0/16|*|OUT"


def test_reference_imports(reference):
    policy = load(reference)
    assert policy.decide_import("json") is not None
    assert policy.decide_import("csv") is not None
    assert policy.decide_import("os") is None
    assert policy.decide_import("subprocess") is None


def test_reference_api(reference):
    policy = load(reference)
    assert policy.decide_api("threading.Thread.start").allowed
    assert not policy.decide_api("os.system").allowed
    assert not policy.decide_api("builtins.eval").allowed  # eval goes through the eval-* profile


def test_reference_eval_profile(reference):
    profile = load(reference).eval_profiles[""]
    assert profile.allows_node("BinOp")
    assert profile.allows_node("Compare")
    assert not profile.allows_node("Call")
    assert not profile.allows_node("Attribute")


def test_reference_layers(reference):
    policy = load(reference)
    assert policy.py_sandbox.value is True
    assert policy.os_sandbox.value == "subprocess"
    assert policy.remote_result_guard.value is True
    assert policy.remote_result_mode.value == "data-only"
    assert policy.learning is False
    assert policy.locked_by is None


def test_reference_os_sandbox_follows_the_environment(reference):
    assert load(reference, environ={"OS_SANDBOX": "landlock"}).os_sandbox.value == "landlock"


def test_reference_commented_provider_settings_are_not_applied(reference):
    assert dict(load(reference).provider_options) == {}


def test_reference_local_include_is_read_when_present(reference):
    reference.write("python-import=re\n", ".local.py-sandboxes")
    policy = load(reference)
    assert policy.decide_import("re") is not None
    assert policy.files[-1] == str(reference.root / ".local.py-sandboxes")


def test_reference_user_profile_deny_beats_the_learned_allow(reference):
    reference.user_profile("net=DENY|*|203.0.113.0/24|*|OUT\n")
    policy = load(reference).pin_hostnames(resolver({"api.example.com": ["203.0.113.7"]}))
    assert not policy.decide_connect("203.0.113.7", 443).allowed


def test_reference_review_when_shipped(reference):
    messages = [w.message for w in review(load(reference), shipped=True)]
    assert len(messages) == 3
    assert messages[0].startswith("warning: .py-sandboxes ships without 'learn=false'")
    assert messages[1].startswith(
        "warning: 'os-sandbox=${OS_SANDBOX:-subprocess}' lets an environment variable"
    )
    assert messages[2].startswith(
        "warning: 'include \"./.local.py-sandboxes\"' reads rules from the directory"
    )


def test_reference_review_in_development_is_quiet(reference):
    assert review(load(reference)) == []
