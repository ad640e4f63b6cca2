"""expose-ro=, expose-rw=, ignore=: which paths may be read or written."""

from __future__ import annotations

import os
import sys

from pysandboxes.rules import CODE, Origin
from pysandboxes.rules.files import FileVerdict


def test_read_is_allowed_with_expose_ro(rules):
    rules.mkdir("data")
    policy = rules.load("expose-ro=./data\n")
    assert policy.decide_open(str(rules.root / "data/f.txt")).verdict == FileVerdict.ALLOWED


def test_read_is_refused_without_an_exposure(rules):
    rules.mkdir("data")
    policy = rules.load("")
    assert policy.decide_open(str(rules.root / "data/f.txt")).verdict == FileVerdict.NOT_EXPOSED


def test_write_is_refused_under_expose_ro(rules):
    rules.mkdir("data")
    decision = rules.load("expose-ro=./data\n").decide_open(str(rules.root / "data/f.txt"), write=True)
    assert decision.verdict == FileVerdict.READ_ONLY
    assert decision.allowed is False


def test_write_is_allowed_under_expose_rw(rules):
    rules.mkdir("out")
    decision = rules.load("expose-rw=./out\n").decide_open(str(rules.root / "out/f.txt"), write=True)
    assert decision.verdict == FileVerdict.ALLOWED
    assert decision.allowed is True


def test_exposed_directory_itself_is_exposed(rules):
    rules.mkdir("data")
    assert rules.load("expose-ro=./data\n").decide_open(str(rules.root / "data")).allowed


def test_exposure_does_not_leak_to_a_sibling_with_the_same_prefix(rules):
    rules.mkdir("data")
    rules.mkdir("data2")
    policy = rules.load("expose-ro=./data\n")
    assert policy.decide_open(str(rules.root / "data2/f")).verdict == FileVerdict.NOT_EXPOSED


def test_exposure_does_not_cover_the_parent(rules):
    rules.mkdir("data")
    policy = rules.load("expose-ro=./data\n")
    assert policy.decide_open(str(rules.root / "f")).verdict == FileVerdict.NOT_EXPOSED


def test_relative_exposure_resolves_against_the_directory_of_its_file(rules):
    rules.mkdir("conf/data")
    rules.mkdir("data")
    rules.write("expose-ro=./data\n", "conf/files.rules")
    policy = rules.load('include "conf/files.rules"\n')
    assert policy.decide_open(str(rules.root / "conf/data/f")).allowed
    assert not policy.decide_open(str(rules.root / "data/f")).allowed


def test_relative_exposure_does_not_depend_on_the_cwd(rules):
    rules.mkdir("data")
    rules.mkdir("elsewhere")
    policy = rules.load("expose-ro=data\n", cwd=rules.root / "elsewhere")
    assert policy.decide_open(str(rules.root / "data/f")).allowed


def test_code_rule_relative_exposure_resolves_against_the_cwd(rules):
    rules.mkdir("run/data")
    policy = rules.load("", extra_rules={"expose_ro": "./data"}, extra_source=CODE, cwd=rules.root / "run")
    assert policy.decide_open(str(rules.root / "run/data/f")).allowed


def test_exposure_under_home_with_tilde(rules):
    (rules.home / "docs").mkdir()
    policy = rules.load("expose-ro=~/docs\n")
    assert policy.decide_open(str(rules.home / "docs/f")).allowed


def test_exposure_with_a_variable(rules):
    rules.mkdir("data")
    policy = rules.load("expose-ro=${DATA:-./nope}\n", environ={"DATA": str(rules.root / "data")})
    assert policy.decide_open(str(rules.root / "data/f")).allowed


def test_symlinked_exposure_is_resolved_to_its_real_directory(rules):
    real = rules.mkdir("real")
    os.symlink(real, rules.root / "link")
    policy = rules.load("expose-ro=./link\n")
    assert policy.decide_open(str(real / "f")).allowed
    assert policy.decide_open(str(rules.root / "link/f")).verdict == FileVerdict.NOT_EXPOSED


def test_longest_prefix_wins_read_only_inside_read_write(rules):
    rules.mkdir("data")
    policy = rules.load("expose-rw=.\nexpose-ro=./data\n")
    assert policy.decide_open(str(rules.root / "data/f"), write=True).verdict == FileVerdict.READ_ONLY
    assert policy.decide_open(str(rules.root / "other"), write=True).verdict == FileVerdict.ALLOWED


def test_longest_prefix_wins_read_write_inside_read_only(rules):
    rules.mkdir("out")
    policy = rules.load("expose-rw=./out\nexpose-ro=.\n")
    assert policy.decide_open(str(rules.root / "out/f"), write=True).verdict == FileVerdict.ALLOWED
    assert policy.decide_open(str(rules.root / "f"), write=True).verdict == FileVerdict.READ_ONLY


def test_decision_names_the_rule_that_decided(rules):
    rules.mkdir("data")
    main = rules.write("expose-ro=./data\n")
    decision = rules.load().decide_open(str(rules.root / "data/f"))
    assert decision.exposure.describe() == f"'expose-ro=./data' from {Origin(str(main), 1)}"


def test_read_only_and_read_write_on_the_same_directory_is_an_error(rules):
    rules.mkdir("data")
    main = rules.write("expose-ro=./data\nexpose-rw=data\n")
    problem = rules.problem()
    assert rules.where(problem) == (str(main), 2)
    assert problem.message == (
        f"'expose-rw=data' contradicts 'expose-ro=./data' from {Origin(str(main), 1)}: the same "
        "directory cannot be both read-only and read-write; keep one of the two lines"
    )


def test_read_only_in_a_file_and_read_write_from_the_command_line_is_an_error(rules):
    rules.mkdir("data")
    exc = rules.error("expose-ro=./data\n", extra_rules={"expose-rw": "./data"})
    assert rules.messages(exc)[0].startswith("'expose-rw=./data' contradicts 'expose-ro=./data'")


def test_same_exposure_twice_is_accepted(rules):
    rules.mkdir("data")
    rules.write("expose-ro=../data\n", "conf/x.rules")
    policy = rules.load('expose-ro=./data\ninclude "conf/x.rules"\n')
    assert policy.decide_open(str(rules.root / "data/f")).allowed


def test_empty_exposure_is_an_error(rules):
    problem = rules.problem("expose-rw=\n")
    assert problem.message == "expose-rw= needs a directory, e.g. expose-rw=./data"


def test_exposure_with_a_comma_is_an_error(rules):
    problem = rules.problem("expose-ro=./a,./b\n")
    assert problem.message == (
        "'expose-ro=./a,./b': expected a single directory (no comma); write one expose-ro= line each"
    )


def test_missing_exposed_directory_is_an_error(rules):
    problem = rules.problem("expose-ro=./absent\n")
    assert problem.message == (
        f"'expose-ro=./absent': '{rules.root / 'absent'}' does not exist; create it, or remove the rule"
    )


def test_quoted_exposed_directory_gets_a_hint(rules):
    rules.mkdir("data")
    problem = rules.problem('expose-ro="./data"\n')
    assert problem.message == (
        f"'expose-ro=\"./data\"': '{rules.root}/\"./data\"' does not exist (quotes are part of "
        "the value: write the path without them); create it, or remove the rule"
    )


def test_exposing_a_file_is_an_error(rules):
    rules.write("x", "file.txt")
    problem = rules.problem("expose-ro=./file.txt\n")
    assert problem.message == (
        f"'expose-ro=./file.txt': '{rules.root / 'file.txt'}' is not a directory; "
        "expose the directory that holds it"
    )


# -- ignore= --------------------------------------------------------------------------------


def test_ignore_hides_a_matching_name_inside_an_exposure(rules):
    policy = rules.load("expose-ro=.\nignore=.env\n")
    decision = policy.decide_open(str(rules.root / "sub/.env"))
    assert decision.verdict == FileVerdict.IGNORED
    assert decision.ignore.rule.text == "ignore=.env"


def test_same_file_is_readable_without_ignore(rules):
    policy = rules.load("expose-ro=.\n")
    assert policy.decide_open(str(rules.root / "sub/.env")).allowed


def test_ignore_glob_hides_matching_files(rules):
    policy = rules.load("expose-rw=.\nignore=*.pem\n")
    assert policy.decide_open(str(rules.root / "certs/server.pem")).verdict == FileVerdict.IGNORED
    assert policy.decide_open(str(rules.root / "certs/server.pem"), write=True).verdict == FileVerdict.IGNORED
    assert policy.decide_open(str(rules.root / "certs/server.crt")).allowed


def test_ignore_hides_everything_below_a_matching_directory(rules):
    policy = rules.load("expose-ro=.\nignore=.git\n")
    assert policy.decide_open(str(rules.root / ".git/config")).verdict == FileVerdict.IGNORED


def test_ignore_with_a_trailing_slash_hides_the_directory(rules):
    policy = rules.load("expose-ro=.\nignore=secrets/\n")
    assert policy.decide_open(str(rules.root / "secrets/key")).verdict == FileVerdict.IGNORED


def test_ignore_with_a_slash_is_a_path_relative_to_its_file(rules):
    policy = rules.load("expose-ro=.\nignore=./private\n")
    assert policy.decide_open(str(rules.root / "private/a/b")).verdict == FileVerdict.IGNORED
    assert policy.decide_open(str(rules.root / "sub/private/x")).allowed


def test_absolute_ignore_pattern(rules):
    policy = rules.load(f"expose-ro=.\nignore={rules.root}/*.key\n")
    assert policy.decide_open(str(rules.root / "a.key")).verdict == FileVerdict.IGNORED


def test_ignore_does_not_expose_anything(rules):
    policy = rules.load("ignore=.env\n")
    assert policy.decide_open(str(rules.root / ".env")).verdict == FileVerdict.NOT_EXPOSED


def test_empty_ignore_is_an_error(rules):
    problem = rules.problem("ignore=\n")
    assert problem.message == "ignore= needs a glob pattern, e.g. ignore=.env or ignore=*.key"


# -- protected rule files -------------------------------------------------------------------


def test_rule_file_is_protected_from_writes_under_expose_rw(rules):
    main = rules.write("expose-rw=.\n")
    policy = rules.load()
    assert policy.decide_open(str(main), write=True).verdict == FileVerdict.PROTECTED
    assert policy.decide_open(str(main)).allowed


def test_included_rule_file_is_protected_from_writes(rules):
    other = rules.write("", "other.rules")
    policy = rules.load('expose-rw=.\ninclude "other.rules"\n')
    assert policy.decide_open(str(other), write=True).verdict == FileVerdict.PROTECTED


def test_missing_optional_include_is_protected_from_creation(rules):
    policy = rules.load('expose-rw=.\ninclude "./.local.py-sandboxes"\n')
    local = rules.root / ".local.py-sandboxes"
    assert policy.decide_open(str(local), write=True).verdict == FileVerdict.PROTECTED


def test_learn_target_is_protected_from_writes(rules):
    policy = rules.load("expose-rw=.\nlearn=rules.learn\n")
    assert policy.decide_open(str(rules.root / "rules.learn"), write=True).verdict == FileVerdict.PROTECTED


def test_rule_file_reached_through_a_symlink_is_protected_at_its_real_path(rules):
    real = rules.mkdir("real")
    os.symlink(real, rules.root / "link")
    rules.write("expose-rw=.\n", "real/.py-sandboxes")
    policy = rules.load(name=str(rules.root / "link/.py-sandboxes"))
    assert policy.decide_open(str(real / ".py-sandboxes"), write=True).verdict == FileVerdict.PROTECTED
    assert policy.decide_open(str(real / "other"), write=True).allowed


# -- built-in exposures ---------------------------------------------------------------------


def test_python_prefix_is_readable_without_a_rule(rules):
    decision = rules.load("").decide_open(os.path.join(os.path.realpath(sys.prefix), "x"))
    assert decision.allowed
    assert decision.exposure.rule is None


def test_standard_library_is_readable_but_not_writable(rules):
    stdlib = os.path.realpath(os.path.dirname(os.__file__))
    policy = rules.load("")
    decision = policy.decide_open(os.path.join(stdlib, "json/__init__.py"), write=True)
    assert decision.verdict == FileVerdict.READ_ONLY
    assert str(decision.exposure.origin) == "<python>"
