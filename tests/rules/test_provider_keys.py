"""Provider keys (bwrap.*, unshare.*, firejail.*, qemu.*): validated against their schema."""

from __future__ import annotations

import pytest

from pysandboxes.rules import Origin
from pysandboxes.rules.provider_keys import PROVIDER_KEYS


@pytest.mark.parametrize(
    ("line", "provider", "expected"),
    [
        ("bwrap.share-net=true", "bwrap", {"share-net": True}),
        ("bwrap.unshare-net=off", "bwrap", {"unshare-net": False}),
        ("bwrap.hostname=sandbox-1", "bwrap", {"hostname": "sandbox-1"}),
        ("unshare.proc=None", "unshare", {"proc": "none"}),
        ("firejail.net=eth0", "firejail", {"net": "eth0"}),
        ("firejail.seccomp=yes", "firejail", {"seccomp": True}),
        (
            "firejail.seccomp.keep=read, write,@basic-io",
            "firejail",
            {"seccomp.keep": ("read", "write", "@basic-io")},
        ),
        ("firejail.seccomp.block=ptrace", "firejail", {"seccomp.block": ("ptrace",)}),
        ("firejail.rlimit-nproc=64", "firejail", {"rlimit-nproc": 64}),
        ("firejail.rlimit-as=1_000_000", "firejail", {"rlimit-as": 1_000_000}),
        ("qemu.memory=2G", "qemu", {"memory": 2 << 30}),
        ("qemu.memory=512", "qemu", {"memory": 512 << 20}),
        ("qemu.memory=65536k", "qemu", {"memory": 64 << 20}),
        ("qemu.use_kvm=false", "qemu", {"use_kvm": False}),
        ("qemu.start_timeout=90", "qemu", {"start_timeout": 90.0}),
        ("qemu.show_boot_console=true", "qemu", {"show_boot_console": True}),
        ("qemu.virtfs=OFF", "qemu", {"virtfs": "off"}),
        ("qemu.virtfs_security_model=mapped-xattr", "qemu", {"virtfs_security_model": "mapped-xattr"}),
        ("qemu.ld_closure_libs=libfoo.so,libbar.so", "qemu", {"ld_closure_libs": ("libfoo.so", "libbar.so")}),
    ],
)
def test_valid_provider_key_is_parsed(rules, line, provider, expected):
    assert rules.load(line + "\n").options_for(provider) == expected


def test_dash_and_underscore_are_interchangeable_in_provider_keys(rules):
    assert rules.load("qemu.use-kvm=false\n").options_for("qemu") == {"use_kvm": False}
    assert rules.load("bwrap.share_net=true\n").options_for("bwrap") == {"share-net": True}


def test_provider_without_keys_gives_no_options(rules):
    assert rules.load("").options_for("landlock") == {}


def test_provider_setting_records_its_rule(rules):
    main = rules.write("qemu.memory=1G\n")
    setting = rules.load().provider_options["qemu"]["memory"]
    assert setting.rule.origin == Origin(str(main), 1)


def test_keys_of_an_inactive_provider_are_validated_too(rules):
    problem = rules.problem("os-sandbox=bwrap\nqemu.memory=2GB\n")
    assert problem.message.startswith("invalid memory size '2GB' for qemu.memory")


def test_provider_value_takes_a_variable(rules):
    policy = rules.load("qemu.memory=${QEMU_MEM:-1G}\n", environ={"QEMU_MEM": "4G"})
    assert policy.options_for("qemu") == {"memory": 4 << 30}


def test_command_line_overrides_a_provider_key_of_the_rule_file(rules):
    policy = rules.load("qemu.memory=1G\n", extra_rules={"qemu.memory": "3G"})
    assert policy.options_for("qemu") == {"memory": 3 << 30}


def test_code_provider_key_keeps_its_underscores(rules):
    policy = rules.load("", extra_rules={"qemu.use_kvm": False}, extra_source="code")
    assert policy.options_for("qemu") == {"use_kvm": False}


def test_provider_key_set_twice_in_files_is_an_error(rules):
    main = rules.write("qemu.memory=1G\nqemu.memory=4G\n")
    problem = rules.problem()
    assert rules.where(problem) == (str(main), 2)
    assert problem.message == (
        f"'qemu.memory=4G': qemu.memory is already set to another value at {Origin(str(main), 1)}"
    )


def test_provider_key_set_twice_with_both_spellings_is_an_error(rules):
    problem = rules.problem("qemu.use_kvm=true\nqemu.use-kvm=false\n")
    assert problem.message.startswith(
        "'qemu.use-kvm=false': qemu.use_kvm is already set to another value at "
    )


def test_provider_key_set_twice_to_the_same_value_is_accepted(rules):
    rules.write("qemu.memory=1G\n", "other.rules")
    assert rules.load('qemu.memory=1G\ninclude "other.rules"\n').options_for("qemu") == {"memory": 1 << 30}


def test_unknown_provider_is_an_error_with_a_suggestion(rules):
    problem = rules.problem("bwarp.share-net=true\n")
    assert problem.message == (
        "unknown provider key 'bwarp.share-net' (did you mean 'bwrap'?): provider keys start with "
        "landlock., bwrap., unshare., firejail., qemu."
    )


def test_unknown_key_of_a_known_provider_is_an_error_listing_its_keys(rules):
    problem = rules.problem("bwrap.sharenet=true\n")
    assert problem.message == (
        "unknown key 'bwrap.sharenet' (did you mean 'bwrap.share-net'?); bwrap knows "
        "bwrap.share-net, bwrap.unshare-net, bwrap.hostname, bwrap.unix-sockets"
    )


def test_unknown_key_of_every_provider_is_an_error(rules):
    exc = rules.error("".join(f"{p}.nope=1\n" for p in PROVIDER_KEYS))
    assert len(exc.problems) == len(PROVIDER_KEYS)
    assert all(m.startswith("unknown key '") for m in rules.messages(exc))


def test_provider_key_of_a_provider_without_keys_is_an_error(rules):
    problem = rules.problem("subprocess.strict=true\n")
    assert problem.message.startswith("unknown provider key 'subprocess.strict'")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("bwrap.share-net=perhaps", "invalid value 'perhaps' for bwrap.share-net: use true or false"),
        (
            "bwrap.hostname=my_host",
            "invalid host name 'my_host' for bwrap.hostname: letters, digits and '-' only",
        ),
        ("unshare.proc=private", "invalid value 'private' for unshare.proc: use one of mount, none"),
        (
            "firejail.net=not a nic",
            "invalid value 'not a nic' for firejail.net: a network interface name or none",
        ),
        ("firejail.seccomp.keep=READ", "invalid system call name 'READ' for firejail.seccomp.keep"),
        ("firejail.seccomp.block=,", "firejail.seccomp.block needs a comma-separated list of system calls"),
        ("firejail.rlimit-cpu=1s", "invalid value '1s' for firejail.rlimit-cpu: expected a whole number"),
        (
            "qemu.memory=2GB",
            "invalid memory size '2GB' for qemu.memory: write a number of MiB or a number with one of "
            "k, M, G, T, P, E (e.g. 512M or 2G; not 2GB)",
        ),
        ("qemu.memory=32M", "qemu.memory must be at least 64M, got '32M'"),
        (
            "qemu.start_timeout=soon",
            "invalid duration 'soon' for qemu.start_timeout: write a number with ms, s or m, e.g. 2s or 500ms",
        ),
        ("qemu.virtfs=maybe", "invalid value 'maybe' for qemu.virtfs: use one of auto, on, off"),
    ],
)
def test_invalid_provider_value_is_an_error(rules, line, message):
    assert rules.problem(line + "\n").message == message


def test_commented_provider_keys_are_ignored(rules):
    assert rules.load("#qemu.memory=2G\n# bwrap.share-net=true\n").provider_options == {}
