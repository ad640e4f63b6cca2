"""review(): warnings on valid but risky rules (they never stop a load)."""

from __future__ import annotations

from pysandboxes.rules import Origin
from pysandboxes.rules.review import is_shipped, review


def warnings_of(rules, text, *, shipped=False, **kwargs):
    policy = rules.load(text, **kwargs)
    return [(w.origin, w.message) for w in review(policy, shipped=shipped)]


def test_plain_profile_has_no_warning(rules):
    rules.mkdir("data")
    text = "expose-ro=./data\npython-import=json\npython-api=ALLOW:threads\nnet=ALLOW|tcp|*|443|OUT\n"
    assert warnings_of(rules, text) == []


def test_exposing_the_whole_file_system_is_a_warning(rules):
    main = rules.write("expose-ro=/\n")
    assert warnings_of(rules, None) == [
        (Origin(str(main), 1), "warning: 'expose-ro=/' exposes the whole file system")
    ]


def test_exposing_the_home_directory_is_a_warning(rules):
    assert [m for _, m in warnings_of(rules, "expose-ro=~\n")] == [
        "warning: 'expose-ro=~' exposes the whole home directory (keys, tokens, browser profiles)"
    ]


def test_exposing_a_parent_of_the_project_is_a_warning(rules):
    assert [m for _, m in warnings_of(rules, "expose-rw=..\n")] == [
        f"warning: 'expose-rw=..' exposes a parent of the project directory ({rules.root})"
    ]


def test_exposing_the_project_itself_is_a_warning_naming_narrower_rules(rules):
    rules.mkdir("data")
    found = [m for _, m in warnings_of(rules, "expose-rw=.\n")]
    assert len(found) == 1 and found[0].startswith(
        "warning: 'expose-rw=.' exposes the whole project directory (its .env, keys and .git included): "
        "expose only the subdirectories the program needs, e.g.\n    expose-ro=./data"
    )


def test_exposing_a_subdirectory_of_the_project_is_not_a_warning(rules):
    rules.mkdir("data")
    assert warnings_of(rules, "expose-rw=./data\n") == []


def test_star_import_is_a_warning(rules):
    assert [m for _, m in warnings_of(rules, "python-import=*\n")] == [
        "warning: 'python-import=*' allows every import: remove it, relearn and review before shipping"
    ]


def test_risky_api_grants_are_warnings(rules):
    text = (
        "python-api=ALLOW:*\npython-api=ALLOW:process-exec\npython-api=ALLOW:native\n"
        "python-api=ALLOW:dynamic-code\npython-api=ALLOW:introspection\n"
    )
    assert [m for _, m in warnings_of(rules, text)] == [
        "warning: 'python-api=ALLOW:*' allows every sensitive call (the API guard is off)",
        "warning: 'python-api=ALLOW:process-exec' lets the program start other programs, which the Python layer cannot watch",
        "warning: 'python-api=ALLOW:native' lets the program load native code and touch raw memory",
        "warning: 'python-api=ALLOW:dynamic-code' lets eval/exec/compile run any code unguarded",
        "warning: 'python-api=ALLOW:introspection' lets tracing and the object graph reach into the guards' own frames",
    ]


def test_denying_a_risky_category_is_not_a_warning(rules):
    assert warnings_of(rules, "python-api=DENY:*\npython-api=DENY:native\n") == []


def test_allowing_every_address_on_every_port_is_a_warning(rules):
    assert [m for _, m in warnings_of(rules, "net=ALLOW|*|*|*|*\n")] == [
        "warning: 'net=ALLOW|*|*|*|*' allows every address on every port"
    ]


def test_allowing_every_address_on_one_port_is_not_a_warning(rules):
    assert warnings_of(rules, "net=ALLOW|tcp|*|443|OUT\n") == []


def test_forwarding_the_whole_environment_is_a_warning(rules):
    assert [m for _, m in warnings_of(rules, "env=*=${*}\n")] == [
        "warning: 'env=*=${*}' forwards the whole environment, secrets included"
    ]


def test_shipped_profile_without_lock_is_a_warning(rules):
    main = rules.write("python-import=json\n")
    assert warnings_of(rules, None, shipped=True) == [
        (
            Origin(str(main), 0),
            "warning: .py-sandboxes ships without 'learn=false': anyone running it can add rules on "
            "the command line or learn new ones; add learn=false",
        )
    ]


def test_shipped_locked_profile_has_no_warning(rules):
    assert warnings_of(rules, "learn=false\npython-import=json\n", shipped=True) == []


def test_unshipped_profile_without_lock_has_no_warning(rules):
    assert warnings_of(rules, "python-import=json\n") == []


def test_shipped_os_sandbox_from_a_variable_is_a_warning(rules):
    assert [m for _, m in warnings_of(rules, "learn=false\nos-sandbox=${SB:-bwrap}\n", shipped=True)] == [
        "warning: 'os-sandbox=${SB:-bwrap}' lets an environment variable choose (or weaken) the OS provider; name it"
    ]


def test_shipped_local_include_is_a_warning(rules):
    main = rules.write('learn=false\ninclude "./.local.py-sandboxes"\n')
    assert warnings_of(rules, None, shipped=True) == [
        (
            Origin(str(main), 2),
            "warning: 'include \"./.local.py-sandboxes\"' reads rules from the directory the program is "
            "started in: whoever runs it can add rights; remove it",
        )
    ]


def test_shipped_learning_is_a_warning(rules):
    found = [m for _, m in warnings_of(rules, "learn=rules.learn\n", shipped=True)]
    assert "warning: 'learn=rules.learn' turns learning on for every run; remove it before shipping" in found


def test_review_does_not_change_the_policy(rules):
    policy = rules.load("python-import=*\n")
    before = policy.rules
    review(policy, shipped=True)
    assert policy.rules == before


def test_rule_file_in_a_package_is_shipped(rules):
    rules.write("", "pkg/__init__.py")
    assert is_shipped(str(rules.write("", "pkg/" + ".py-sandboxes")))


def test_rule_file_in_an_agent_skill_is_shipped(rules):
    rules.write("", "skill/SKILL.md")
    assert is_shipped(str(rules.write("", "skill/.py-sandboxes")))
    assert is_shipped(str(rules.write("", "skill/scripts/.py-sandboxes")))


def test_rule_file_of_a_plain_project_is_not_shipped(rules):
    assert not is_shipped(str(rules.write("")))
