"""The lexical level: lines, comments, quotes, key=value, include lines, unknown keys."""

from __future__ import annotations

import pytest

from pysandboxes.errors import RuleSyntaxError, SandBoxError
from pysandboxes.rules import RuleProblem, load_policy
from pysandboxes.rules.origin import Origin


def test_rule_syntax_error_is_a_sandbox_error_and_a_value_error(rules):
    exc = rules.error("nonsense\n")
    assert isinstance(exc, SandBoxError)
    assert isinstance(exc, ValueError)


def test_empty_file_loads_with_defaults(rules):
    policy = rules.load("")
    assert policy.py_sandbox.value is True
    assert policy.os_sandbox.value is None
    assert policy.learning is False
    assert policy.rules == ()


def test_comments_and_blank_lines_are_ignored(rules):
    policy = rules.load("# a comment\n\n   \n   # indented comment\npython-import=json\n")
    assert [r.text for r in policy.rules] == ["python-import=json"]
    assert policy.rules[0].origin.line == 5


def test_trailing_comment_is_removed_from_the_value(rules):
    policy = rules.load("env=GREETING=hello # the greeting\n")
    assert policy.environment == {"GREETING": "hello"}


def test_hash_inside_balanced_double_quotes_is_kept(rules):
    policy = rules.load('env=MSG="a # b" # comment\n')
    assert policy.environment == {"MSG": '"a # b"'}


def test_hash_inside_balanced_single_quotes_is_kept(rules):
    policy = rules.load("env=MSG='a # b'\n")
    assert policy.environment == {"MSG": "'a # b'"}


def test_lone_apostrophe_does_not_hide_a_comment(rules):
    policy = rules.load("env=MSG=it's fine # not part of the value\n")
    assert policy.environment == {"MSG": "it's fine"}


def test_escaped_quote_inside_quotes_does_not_close_them(rules):
    policy = rules.load('env=MSG="say \\"# hi\\"" # comment\n')
    assert policy.environment == {"MSG": '"say \\"# hi\\""'}


def test_spaces_around_equals_are_allowed(rules):
    policy = rules.load("python-import = json\npy-sandbox =false\n")
    assert set(policy.imports) == {"json"}
    assert policy.py_sandbox.value is False


def test_leading_and_trailing_spaces_of_a_line_are_ignored(rules):
    policy = rules.load("   python-import=json   \n\tpython-import=csv\t\n")
    assert set(policy.imports) == {"json", "csv"}


def test_crlf_line_endings_are_accepted(rules):
    policy = rules.load("python-import=json\r\npython-import=csv\r\n")
    assert set(policy.imports) == {"json", "csv"}
    assert [r.origin.line for r in policy.rules] == [1, 2]


def test_form_feed_does_not_shift_line_numbers(rules):
    # Only \n, \r\n and \r end a line: a form feed in a comment must not add a line.
    exc = rules.error("# page one\x0c page two\nbogus\n")
    assert [rules.where(p)[1] for p in exc.problems] == [2]


def test_unicode_line_separator_stays_inside_the_value(rules):
    policy = rules.load("env=MSG=a\u2028b\n")
    assert policy.environment == {"MSG": "a\u2028b"}


def test_value_keeps_everything_after_the_first_equals(rules):
    policy = rules.load("env=URL=https://x.example/?a=1&b=2\n")
    assert policy.environment == {"URL": "https://x.example/?a=1&b=2"}


def test_line_without_equals_is_an_error(rules):
    problem = rules.problem("python-import json\n")
    assert rules.where(problem) == (str(rules.path()), 1)
    assert problem.message == "invalid rule 'python-import json': expected key=value or include \"PATH\""


def test_invalid_key_characters_are_an_error(rules):
    problem = rules.problem("Python-Import=json\n")
    assert problem.message == "invalid rule 'Python-Import=json': 'Python-Import' is not a key"


def test_key_with_inner_space_is_an_error(rules):
    problem = rules.problem("python import=json\n")
    assert problem.message == "invalid rule 'python import=json': 'python import' is not a key"


def test_nul_character_in_a_line_is_an_error(rules):
    problem = rules.problem(b"python-import=json\npython-import=c\x00sv\n".decode())
    assert rules.where(problem) == (str(rules.path()), 2)
    assert problem.message == "the line holds a NUL character"


def test_unknown_key_is_an_error_with_a_suggestion(rules):
    problem = rules.problem("expose-rox=/tmp\n")
    assert problem.message == "unknown key 'expose-rox' in 'expose-rox=/tmp' (did you mean 'expose-ro'?)"


def test_unknown_key_far_from_any_key_has_no_suggestion(rules):
    problem = rules.problem("zzzz=1\n")
    assert problem.message == "unknown key 'zzzz' in 'zzzz=1'"


def test_profile_suffix_on_a_non_eval_key_is_an_unknown_key(rules):
    problem = rules.problem("net:x=ALLOW|tcp|*|*|OUT\n")
    assert problem.message.startswith("unknown key 'net:x' in 'net:x=ALLOW|tcp|*|*|OUT'")


def test_include_with_single_quotes_is_an_error(rules):
    problem = rules.problem("include 'other.rules'\n")
    assert problem.message == (
        "invalid include 'include 'other.rules'': write include \"PATH\" (double quotes), "
        'or include-optional "PATH"'
    )


def test_include_with_trailing_text_is_an_error(rules):
    rules.write("", "other.rules")
    problem = rules.problem('include "other.rules" extra\n')
    assert problem.message.startswith("invalid include 'include \"other.rules\" extra'")


def test_include_with_empty_path_is_an_error(rules):
    problem = rules.problem('include ""\n')
    assert problem.message == 'include needs a path: include "PATH"'


def test_include_followed_by_a_comment_is_accepted(rules):
    rules.write("python-import=csv\n", "other.rules")
    policy = rules.load('include "other.rules"  # shared rules\n')
    assert set(policy.imports) == {"csv"}


def test_include_path_may_hold_a_hash_and_escaped_quote(rules):
    rules.write("python-import=csv\n", 'we"ird#name')
    policy = rules.load('include "we\\"ird#name"\n')
    assert set(policy.imports) == {"csv"}


def test_include_platform_without_path_is_an_error(rules):
    problem = rules.problem("include-platform=linux\n")
    assert problem.message == (
        "invalid include-platform 'include-platform=linux': write include-platform=PLATFORM "
        '"PATH", e.g. include-platform=linux "linux.rules"'
    )


def test_include_platform_with_empty_path_is_an_error(rules):
    problem = rules.problem('include-platform=linux ""\n')
    assert problem.message.startswith("invalid include-platform 'include-platform=linux \"\"'")


def test_all_problems_of_a_load_are_reported_together_sorted_by_file_and_line(rules):
    rules.write("zzz=1\nnot a rule\n", "b.rules")
    main = rules.write('bogus\ninclude "b.rules"\npy-sandbox=maybe\nqqq=2\n')
    exc = rules.error(extra_rules={"expose_rox": "/etc"})
    b = str(rules.path("b.rules"))
    assert [rules.where(p) for p in exc.problems] == [
        (str(main), 1),
        (str(main), 3),
        (str(main), 4),
        (b, 1),
        (b, 2),
        (None, 1),
    ]
    assert exc.errors == [str(p) for p in exc.problems]
    assert str(exc) == "\n".join(exc.errors)


def test_error_lines_read_path_line_colon_message(rules):
    exc = rules.error("bogus\n")
    assert exc.errors == [f"{Origin(str(rules.path()), 1)}: {exc.problems[0].message}"]


def test_problem_paths_are_relative_to_the_cwd_of_the_process(rules, monkeypatch):
    monkeypatch.chdir(rules.root)
    exc = rules.error("bogus\n")
    assert exc.errors == [".py-sandboxes(1): invalid rule 'bogus': expected key=value or include \"PATH\""]


def test_problem_paths_under_home_are_shown_with_a_tilde(rules):
    path = rules.write("bogus\n", str(rules.home / "p.rules"))
    exc = rules.error(name=str(path))
    assert exc.errors[0].startswith("~/p.rules(1): invalid rule 'bogus'")


def test_problems_are_sorted_even_when_given_unsorted(rules):
    a = RuleProblem(Origin("/b", 2), "second")
    b = RuleProblem(Origin("/a", 9), "first")
    c = RuleProblem(Origin(None, 1, "command line"), "last")
    exc = RuleSyntaxError([c, a, b])
    assert [p.message for p in exc.problems] == ["first", "second", "last"]


@pytest.mark.parametrize("text", ["=value\n", "-x=1\n", "1key=1\n"])
def test_line_starting_without_a_key_is_an_error(rules, text):
    problem = rules.problem(text)
    assert problem.message.startswith("invalid rule ")
    assert problem.message.endswith("is not a key")


def test_load_policy_accepts_a_directory_and_reads_its_rule_file(rules):
    rules.write("python-import=json\n")
    policy = load_policy(rules.root, environ=rules.environ, cwd=str(rules.root))
    assert policy.main_file == str(rules.path())


def test_load_policy_resolves_a_relative_path_against_cwd(rules):
    rules.write("python-import=json\n", "sub/rules.txt")
    policy = load_policy("sub/rules.txt", environ=rules.environ, cwd=str(rules.root))
    assert policy.main_file == str(rules.path("sub/rules.txt"))
