"""include, include-optional, include-platform: where files are found and what goes wrong."""

from __future__ import annotations

import os
import sys

from pysandboxes.rules import OPTIONAL_INCLUDES, load_policy


def test_bare_include_name_is_next_to_the_including_file(rules):
    rules.write('include "inner.rules"\n', "conf/outer.rules")
    rules.write("python-import=csv\n", "conf/inner.rules")
    rules.write("python-import=WRONG_FILE\n", "inner.rules")
    policy = rules.load('include "conf/outer.rules"\n')
    assert set(policy.imports) == {"csv"}


def test_include_path_with_a_slash_is_taken_from_the_cwd(rules):
    rules.write('include "./shared.rules"\n', "conf/outer.rules")
    rules.write("python-import=csv\n", "shared.rules")
    policy = rules.load('include "conf/outer.rules"\n')
    assert set(policy.imports) == {"csv"}
    assert policy.files[-1] == str(rules.path("shared.rules"))


def test_include_path_with_a_slash_follows_the_cwd_argument(rules):
    rules.write("python-import=csv\n", "elsewhere/shared.rules")
    main = rules.write('include "./shared.rules"\n', "main.rules")
    policy = load_policy(main, environ=rules.environ, cwd=str(rules.root / "elsewhere"))
    assert set(policy.imports) == {"csv"}


def test_absolute_include_path_is_used_as_is(rules):
    other = rules.write("python-import=csv\n", str(rules.home / "abs.rules"))
    policy = rules.load(f'include "{other}"\n')
    assert set(policy.imports) == {"csv"}


def test_include_path_expands_variables(rules):
    rules.write("python-import=csv\n", "profiles/ci.rules")
    policy = rules.load('include "./profiles/${PROFILE:-dev}.rules"\n', environ={"PROFILE": "ci"})
    assert set(policy.imports) == {"csv"}


def test_include_path_expands_the_home_directory(rules):
    rules.write("python-import=csv\n", str(rules.home / "mine.rules"))
    policy = rules.load('include "~/mine.rules"\n')
    assert set(policy.imports) == {"csv"}


def test_include_path_with_unset_variable_is_an_error(rules):
    problem = rules.problem('include "${NOWHERE}/x.rules"\n')
    assert problem.message == (
        "in 'include \"${NOWHERE}/x.rules\"': ${NOWHERE} is not set and has no default: "
        "set NOWHERE, or write ${NOWHERE:-default}"
    )


def test_include_with_unknown_user_home_is_an_error(rules):
    problem = rules.problem('include "~no-such-user-pysb/x.rules"\n')
    assert problem.message == 'include "~no-such-user-pysb/x.rules": the home directory is unknown'


def test_missing_include_is_an_error_at_the_include_line(rules):
    main = rules.write('python-import=json\ninclude "absent.rules"\n')
    problem = rules.problem()
    assert rules.where(problem) == (str(main), 2)
    assert problem.message == f"include '{rules.path('absent.rules')}' does not exist"


def test_missing_include_optional_is_recorded_not_an_error(rules):
    policy = rules.load('include-optional "absent.rules"\n')
    assert policy.missing_includes == (str(rules.path("absent.rules")),)
    assert [(i.written, i.present) for i in policy.includes] == [("absent.rules", False)]


def test_present_include_optional_is_read(rules):
    rules.write("python-import=csv\n", "present.rules")
    policy = rules.load('include-optional "present.rules"\n')
    assert set(policy.imports) == {"csv"}
    assert policy.missing_includes == ()


def test_the_three_template_includes_may_be_absent(rules):
    text = "".join(f'include "{p}"\n' for p in sorted(OPTIONAL_INCLUDES))
    policy = rules.load(text)
    absent = {
        os.path.normpath(os.path.join(str(rules.root), os.path.expanduser(p))) for p in OPTIONAL_INCLUDES
    }
    absent = {p for p in absent if not os.path.lexists(p)}
    assert set(policy.missing_includes) == absent
    assert str(rules.home / ".config/py-sandboxes/user-py-sandboxes.profile") in absent
    assert str(rules.path(".local.py-sandboxes")) in absent


def test_user_profile_include_is_read_when_present(rules):
    rules.user_profile("python-import=csv\n")
    policy = rules.load('include "~/.config/py-sandboxes/user-py-sandboxes.profile"\n')
    assert set(policy.imports) == {"csv"}


def test_local_include_reads_the_file_of_the_cwd(rules):
    rules.write("python-import=csv\n", "run/.local.py-sandboxes")
    policy = rules.load('include "./.local.py-sandboxes"\n', cwd=rules.root / "run")
    assert set(policy.imports) == {"csv"}


def test_same_path_written_differently_is_not_optional(rules):
    # Only the exact spellings of the template are optional.
    problem = rules.problem('include ".local.py-sandboxes"\n')
    assert problem.message == f"include '{rules.path('.local.py-sandboxes')}' does not exist"


def test_include_platform_of_this_platform_is_read(rules):
    rules.write("python-import=csv\n", "plat.rules")
    policy = rules.load(f'include-platform={sys.platform} "plat.rules"\n')
    assert set(policy.imports) == {"csv"}


def test_include_platform_of_another_platform_is_skipped_even_if_missing(rules):
    policy = rules.load('include-platform=no-such-platform "absent.rules"\n')
    assert policy.files == (str(rules.path()),)
    assert policy.includes == ()


def test_missing_include_platform_of_this_platform_is_an_error(rules):
    problem = rules.problem(f'include-platform={sys.platform} "absent.rules"\n')
    assert problem.message == f"include '{rules.path('absent.rules')}' does not exist"


def test_self_include_is_a_cycle(rules):
    problem = rules.problem('include ".py-sandboxes"\n')
    assert problem.message == (
        'include ".py-sandboxes" makes a cycle (.py-sandboxes -> .py-sandboxes); remove one include'
    )


def test_two_file_cycle_is_an_error_at_the_closing_include(rules):
    other = rules.write('python-import=csv\ninclude ".py-sandboxes"\n', "other.rules")
    problem = rules.problem('include "other.rules"\n')
    assert rules.where(problem) == (str(other), 2)
    assert problem.message == (
        'include ".py-sandboxes" makes a cycle (.py-sandboxes -> other.rules -> .py-sandboxes); '
        "remove one include"
    )


def test_diamond_include_is_read_once(rules):
    rules.write('include "d.rules"\n', "b.rules")
    rules.write('include "d.rules"\n', "c.rules")
    rules.write("python-import=csv\n", "d.rules")
    policy = rules.load('include "b.rules"\ninclude "c.rules"\n')
    names = [os.path.basename(f) for f in policy.files]
    assert names == [".py-sandboxes", "b.rules", "d.rules", "c.rules"]
    assert sum(r.text == "python-import=csv" for r in policy.rules) == 1
    assert [os.path.basename(i.path) for i in policy.includes] == ["b.rules", "d.rules", "c.rules", "d.rules"]


def test_files_lists_the_main_file_then_includes_in_reading_order(rules):
    rules.write('include "c.rules"\n', "b.rules")
    rules.write("", "c.rules")
    rules.write("", "e.rules")
    policy = rules.load('include "b.rules"\ninclude "e.rules"\n')
    assert policy.files == tuple(
        str(rules.path(n)) for n in (".py-sandboxes", "b.rules", "c.rules", "e.rules")
    )
    assert policy.main_file == str(rules.path())


def test_rules_of_an_include_keep_their_own_file_and_line(rules):
    other = rules.write("\n\npython-import=csv\n", "other.rules")
    policy = rules.load('include "other.rules"\n')
    rule = policy.imports["csv"]
    assert (rule.origin.path, rule.origin.line) == (str(other), 3)


def test_include_of_a_directory_is_an_error(rules):
    rules.mkdir("adir")
    problem = rules.problem('include "adir"\n')
    assert problem.message == f"include '{rules.path('adir')}' is a directory, not a rule file"


def test_include_optional_of_a_directory_is_an_error(rules):
    rules.mkdir("adir")
    problem = rules.problem('include-optional "adir"\n')
    assert problem.message == f"include '{rules.path('adir')}' is a directory, not a rule file"


def test_unreadable_include_is_an_error(rules):
    loop = rules.path("loop.rules")
    os.symlink(loop, loop)  # a symbolic link to itself cannot be opened, even by root
    problem = rules.problem('include "loop.rules"\n')
    assert problem.message == f"cannot read include '{loop}': Too many levels of symbolic links"


def test_include_below_a_regular_file_is_an_error(rules):
    rules.write("", "plain")
    problem = rules.problem('include "./plain/x.rules"\n')
    assert problem.message == f"cannot read include '{rules.path('plain/x.rules')}': Not a directory"


def test_non_utf8_include_is_an_error_at_the_bad_line(rules):
    other = rules.write(b"python-import=json\n# caf\xe9\n", "latin1.rules")
    problem = rules.problem('include "latin1.rules"\n')
    assert rules.where(problem) == (str(other), 2)
    assert problem.message == "not UTF-8 text (byte 0xe9); save the file as UTF-8"


def test_non_utf8_main_file_is_an_error(rules):
    rules.write(b"\xff\xfep\x00")
    problem = rules.problem()
    assert rules.where(problem) == (str(rules.path()), 1)
    assert problem.message == "not UTF-8 text (byte 0xff); save the file as UTF-8"


def test_missing_main_rule_file_is_an_error_at_line_zero(rules):
    problem = rules.problem(name="absent.rules")
    assert rules.where(problem) == (str(rules.path("absent.rules")), 0)
    assert problem.message == f"rule file '{rules.path('absent.rules')}' does not exist"


def test_directory_without_rule_file_is_a_missing_rule_file(rules):
    rules.mkdir("empty")
    exc = rules.error(name=str(rules.path("empty")))
    assert rules.messages(exc) == [f"rule file '{rules.path('empty/.py-sandboxes')}' does not exist"]


def test_unreadable_main_rule_file_is_an_error(rules):
    rules.write("", "plain")
    problem = rules.problem(name=str(rules.path("plain/.py-sandboxes")))
    assert problem.message == f"cannot read rule file '{rules.path('plain/.py-sandboxes')}': Not a directory"


def test_no_path_reads_the_builtin_template(rules):
    policy = load_policy(None, environ=rules.environ, cwd=str(rules.root))
    assert policy.main_file is None
    assert policy.os_sandbox.value == "subprocess"
    assert policy.learning is False


def test_problems_in_several_includes_are_all_reported(rules):
    rules.write("bad1\n", "a.rules")
    rules.write("bad2\n", "b.rules")
    exc = rules.error('include "a.rules"\ninclude "b.rules"\n')
    assert [os.path.basename(p.origin.path) for p in exc.problems] == ["a.rules", "b.rules"]
