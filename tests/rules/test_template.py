"""The built-in template: what `pysandboxes init` writes and what a missing rule file means."""

from __future__ import annotations

import os
import re

import pytest

from pysandboxes.rules import OPTIONAL_INCLUDES, render_template
from pysandboxes.rules.provider_keys import PROVIDERS
from pysandboxes.rules.template import LEARNING_BLOCKS

TEMPLATE_BLOCKS = [f"learning_guard_{b}" for b in LEARNING_BLOCKS] + ["learning_remote_result"]


def test_rendered_template_loads_cleanly(rules):
    policy = rules.load(render_template("landlock"))
    assert policy.os_sandbox.value == "landlock"
    assert policy.py_sandbox.value is True
    assert policy.remote_result_guard.value is True
    assert policy.locked_by is None
    assert policy.learning is False
    assert policy.notes == ()


def test_rendered_template_grants_nothing(rules):
    policy = rules.load(render_template("landlock"))
    assert dict(policy.environment) == {}
    assert dict(policy.imports) == {}
    assert policy.net.rules == ()
    assert policy.api.rules == ()
    assert dict(policy.eval_profiles) == {}
    assert all(e.rule is None for e in policy.files_policy.exposures)


def test_os_sandbox_of_the_template_follows_the_os_sandbox_variable(rules):
    policy = rules.load(render_template("landlock"), environ={"OS_SANDBOX": "bwrap"})
    assert policy.os_sandbox.value == "bwrap"
    assert policy.os_sandbox.rule.value == "${OS_SANDBOX:-landlock}"


def test_empty_os_sandbox_variable_gives_the_template_default(rules):
    assert rules.load(render_template("qemu"), environ={"OS_SANDBOX": ""}).os_sandbox.value == "qemu"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_template_renders_and_loads_for_every_provider(rules, provider):
    text = render_template(provider)
    assert "@DEFAULT_OS_SANDBOX@" not in text
    assert rules.load(text).os_sandbox.value == provider


def test_unknown_provider_cannot_be_rendered():
    with pytest.raises(ValueError, match="unknown provider 'bwarp'"):
        render_template("bwarp")


@pytest.mark.parametrize("block", TEMPLATE_BLOCKS)
def test_every_learning_block_opens_once_and_closes_after(block):
    lines = render_template("landlock").splitlines()
    opening, closing = f"# <{block}>", f"# </{block}>"
    assert lines.count(opening) == 1
    assert lines.count(closing) == 1
    assert lines.index(opening) < lines.index(closing)


def test_learning_blocks_are_not_nested():
    stack = []
    for line in render_template("landlock").splitlines():
        m = re.fullmatch(r"# <(/?)(learning_\w+)>", line)
        if not m:
            continue
        if m.group(1):
            assert stack.pop() == m.group(2)
        else:
            assert stack == []
            stack.append(m.group(2))
    assert stack == []


def test_template_includes_the_user_and_global_profiles(rules):
    policy = rules.load(render_template("landlock"))
    written = [i.written for i in policy.includes]
    assert written == [
        "~/.config/py-sandboxes/user-py-sandboxes.profile",
        "/etc/py-sandboxes/global-py-sandboxes.profile",
    ]
    assert set(written) <= OPTIONAL_INCLUDES
    assert all(i.present == os.path.lexists(i.path) for i in policy.includes)


def test_template_local_include_is_commented_out():
    assert '\ninclude "./.local.py-sandboxes"' not in render_template("landlock")
    assert '\n#include "./.local.py-sandboxes"' in render_template("landlock")


def test_template_reads_the_user_profile(rules):
    rules.user_profile("python-import=json\n")
    policy = rules.load(render_template("landlock"))
    assert set(policy.imports) == {"json"}


def test_every_commented_example_of_the_template_is_a_valid_rule(rules):
    rules.mkdir("data")
    rules.mkdir("output")
    examples = []
    for line in render_template("landlock").splitlines():
        m = re.fullmatch(r"#([a-z][a-z0-9_.:-]*=.*)", line)
        if m and not m.group(1).startswith("include-platform="):
            examples.append(m.group(1))
    assert len(examples) > 20
    policy = rules.load(render_template("landlock") + "\n".join(examples) + "\n")
    assert policy.locked_by is not None  # '#learn=false' is one of the examples
    assert policy.options_for("qemu")["memory"] == 2 << 30


def test_missing_rule_file_in_learn_mode_reads_the_template(rules):
    policy = rules.load(name="absent.rules", missing_file="learn")
    assert [r.origin.path for r in policy.rules if r.key == "os-sandbox"] == ["<template>"]
    assert policy.os_sandbox.rule.value == "${OS_SANDBOX:-subprocess}"
