"""Parsing the `python-sb` command line: CPython's options, the sandbox options, the program."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pysandboxes.cli.cpython_args import (
    COMMAND,
    MODULE,
    REPL,
    SCRIPT,
    STDIN,
    CommandLine,
    InterpreterFlags,
    UsageError,
    parse_command_line,
    usage_hint,
    usage_text,
)
from pysandboxes.errors import SandBoxError


def parse(*argv: str) -> CommandLine:
    return parse_command_line(argv)


def usage_error(*argv: str) -> str:
    with pytest.raises(UsageError) as info:
        parse_command_line(argv)
    assert info.value.exit_code == 2
    return str(info.value)


# -- the program ------------------------------------------------------------------------------


def test_nothing_given_is_the_repl() -> None:
    line = parse()
    assert (line.mode, line.target, line.args, line.program_argv0) == (REPL, None, (), "")
    assert line == CommandLine()
    assert line.argv == ("",)


def test_a_script_and_its_arguments() -> None:
    line = parse("tools/report.py", "a", "b")
    assert (line.mode, line.target, line.args) == (SCRIPT, "tools/report.py", ("a", "b"))
    assert line.program_argv0 == "tools/report.py"
    assert line.argv == ("tools/report.py", "a", "b")


def test_arguments_of_the_script_that_look_like_options_are_the_script_s() -> None:
    argv = ("-u", "script.py", "--learn", "-c", "x", "--pysandboxes-config=f", "-W", "--expose-ro=/", "--")
    line = parse(*argv)
    assert line.mode == SCRIPT and line.target == "script.py"
    assert line.args == argv[2:]
    assert line.interpreter_options == ("-u",)
    assert (line.learn_requested, line.config, line.rules) == (False, None, ())


def test_command_takes_the_next_argument_and_ends_the_options() -> None:
    line = parse("-c", "print(1)", "a", "b")
    assert (line.mode, line.target, line.args, line.program_argv0) == (COMMAND, "print(1)", ("a", "b"), "-c")
    assert line.argv == ("-c", "a", "b")


def test_command_glued_and_grouped() -> None:
    assert parse("-cprint(1)", "-u").target == "print(1)"
    assert parse("-cprint(1)", "-u").args == ("-u",)
    line = parse("-ic", "pass", "--learn")
    assert line.flags.inspect and line.interpreter_options == ("-i",)
    assert (line.mode, line.target, line.args) == (COMMAND, "pass", ("--learn",))
    assert parse("-c", "").target == ""
    assert parse("-c", "-u").target == "-u"


def test_module_takes_the_next_argument_and_ends_the_options() -> None:
    line = parse("-Im", "json.tool", "a", "b")
    assert (line.mode, line.target, line.args) == (MODULE, "json.tool", ("a", "b"))
    assert line.program_argv0 == "-m"
    assert line.interpreter_options == ("-I",)
    line = parse("-mjson.tool", "-h")
    assert (line.mode, line.target, line.args, line.help) == (MODULE, "json.tool", ("-h",), False)
    assert parse("-m", "pkg.mod", "--os-sandbox=none").args == ("--os-sandbox=none",)


def test_a_lone_dash_reads_standard_input() -> None:
    line = parse("-u", "-", "a", "-b")
    assert (line.mode, line.target, line.args, line.program_argv0) == (STDIN, None, ("a", "-b"), "-")
    assert line.reads_stdin


def test_double_dash_ends_the_options() -> None:
    line = parse("-u", "--", "-x", "a")
    assert (line.mode, line.target, line.args) == (SCRIPT, "-x", ("a",))
    assert line.flags.skip_first_line is False
    assert parse("--", "--learn").target == "--learn"
    assert parse("--", "script.py", "--").args == ("--",)
    assert parse("--").mode == REPL
    # as in CPython, '-' after '--' is still standard input
    assert parse("--", "-", "x").mode == STDIN


def test_inspect_with_a_script() -> None:
    line = parse("-i", "script.py", "-i")
    assert line.flags.inspect and line.mode == SCRIPT and line.args == ("-i",)
    assert not line.interactive(stdin_is_tty=True)


def test_interactive_depends_on_the_terminal_and_on_i() -> None:
    assert parse().interactive(stdin_is_tty=True)
    assert not parse().interactive(stdin_is_tty=False)  # CPython runs stdin as a script
    assert parse("-i").interactive(stdin_is_tty=False)
    assert parse("-").interactive(stdin_is_tty=True)
    assert not parse("-").interactive(stdin_is_tty=False)
    assert not parse("-c", "pass").reads_stdin


# -- interpreter options --------------------------------------------------------------------


def test_grouped_flags_are_normalised_one_per_item() -> None:
    line = parse("-uB", "-sS", "script.py")
    assert line.interpreter_options == ("-u", "-B", "-s", "-S")
    flags = line.flags
    assert flags.unbuffered and flags.dont_write_bytecode and flags.no_user_site and flags.no_site
    assert not flags.isolated and not flags.ignore_environment


def test_every_flag() -> None:
    line = parse("-bBdEiOPqRsSuvx", "-")
    assert line.interpreter_options == tuple(f"-{c}" for c in "bBdEiOPqRsSuvx")
    assert line.flags == InterpreterFlags(
        bytes_warning=1,
        dont_write_bytecode=True,
        debug=1,
        ignore_environment=True,
        inspect=True,
        optimize=1,
        safe_path=True,
        quiet=True,
        no_user_site=True,
        no_site=True,
        unbuffered=True,
        verbose=1,
        skip_first_line=True,
    )


def test_counted_flags() -> None:
    line = parse("-OO", "-vv", "-v", "-bb")
    assert line.interpreter_options == ("-O", "-O", "-v", "-v", "-v", "-b", "-b")
    assert (line.flags.optimize, line.flags.verbose, line.flags.bytes_warning) == (2, 3, 2)
    assert parse("-O").flags.optimize == 1
    assert parse("-O", "-O").flags.optimize == 2


def test_isolated_implies_e_s_p() -> None:
    flags = parse("-I").flags
    assert flags.isolated and flags.ignore_environment and flags.no_user_site and flags.safe_path
    assert parse("-I").interpreter_options == ("-I",)


def test_warning_and_x_options_with_separate_or_glued_values() -> None:
    line = parse("-W", "error", "-X", "dev", "-Wignore::DeprecationWarning", "-Xutf8=0", "-c", "pass")
    assert line.interpreter_options == (
        "-W",
        "error",
        "-X",
        "dev",
        "-W",
        "ignore::DeprecationWarning",
        "-X",
        "utf8=0",
    )
    assert line.flags.warnoptions == ("error", "ignore::DeprecationWarning")
    assert line.flags.xoptions == ("dev", "utf8=0")


def test_values_glued_after_grouped_flags() -> None:
    line = parse("-uWerror", "-BX", "importtime", "script.py")
    assert line.interpreter_options == ("-u", "-W", "error", "-B", "-X", "importtime")
    # the value of -W / -X is taken as is, even when it looks like an option
    assert parse("-W", "-u").flags.warnoptions == ("-u",)
    assert parse("-X", "--learn").flags.xoptions == ("--learn",)
    assert not parse("-X", "--learn").learn_requested


def test_check_hash_based_pycs() -> None:
    line = parse("--check-hash-based-pycs", "always", "script.py")
    assert line.interpreter_options == ("--check-hash-based-pycs", "always")
    assert line.flags.check_hash_based_pycs == "always"
    assert parse().flags.check_hash_based_pycs == "default"


def test_t_is_accepted_and_dropped_as_cpython_ignores_it() -> None:
    assert parse("-tu").interpreter_options == ("-u",)


# -- help and version -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arg", "topic"),
    [
        ("-h", ""),
        ("-?", ""),
        ("--help", ""),
        ("--help-env", "env"),
        ("--help-xoptions", "xoptions"),
        ("--help-all", "all"),
    ],
)
def test_help_forms(arg: str, topic: str) -> None:
    line = parse(arg)
    assert line.help and line.help_topic == topic


def test_help_stops_the_parsing_as_in_cpython() -> None:
    line = parse("-u", "-h", "-z", "-c")
    assert line.help and line.interpreter_options == ("-u",) and line.mode == REPL
    assert parse("-uh").help
    assert usage_error("-z", "-h") == "Unknown option: -z"


@pytest.mark.parametrize(
    ("argv", "count"),
    [(["-V"], 1), (["--version"], 1), (["-VV"], 2), (["-V", "--version"], 2), (["-uV", "x.py"], 1)],
)
def test_version_forms(argv: list[str], count: int) -> None:
    assert parse_command_line(argv).version == count


def test_version_still_reads_the_whole_line() -> None:
    line = parse("-V", "-u", "script.py", "a")
    assert line.version == 1 and line.interpreter_options == ("-u",) and line.target == "script.py"
    assert usage_error("-V", "-c") == "Argument expected for the -c option"
    assert parse("--", "-V").version == 0
    assert parse("script.py", "-V").version == 0


# -- sandbox options ------------------------------------------------------------------------


def test_config_with_equals_or_separate_value() -> None:
    assert parse("--pysandboxes-config=rules/ci.py-sandboxes").config == "rules/ci.py-sandboxes"
    assert parse("--pysandboxes-config", "ci", "script.py").config == "ci"
    assert parse("--pysandboxes-config", "-weird").config == "-weird"
    assert parse("--pysandboxes_config=ci").config == "ci"
    assert parse().config is None


def test_learn_bare_with_file_and_lock() -> None:
    bare = parse("--learn", "script.py")
    assert (bare.learn_requested, bare.learn_file, bare.rules) == (True, None, ())
    assert bare.target == "script.py"  # --learn takes no separate value
    to_file = parse("--learn=out.rules")
    assert (to_file.learn_requested, to_file.learn_file) == (True, "out.rules")
    assert parse("--learn=").learn_file is None and parse("--learn=").learn_requested
    assert not parse().learn_requested


@pytest.mark.parametrize("value", ["false", "False", "no", "0", "true", "YES", "1", "on", "off"])
def test_learn_with_a_boolean_is_a_rule_for_the_loader(value: str) -> None:
    line = parse(f"--learn={value}")
    assert not line.learn_requested and line.learn_file is None
    assert line.rules == (("learn", value),)


def test_rules_keep_their_order_repeat_and_normalise_underscores() -> None:
    line = parse(
        "--os_sandbox=bwrap",
        "--expose-ro=./data",
        "--expose-ro=/etc/ssl",
        "--net=ALLOW|tcp|api.example.com|443|OUT",
        "--bwrap.share_net=true",
        "--eval_call:my_profile=x",
        "--python-import",
        "--env=A=B",
    )
    assert line.rules == (
        ("os-sandbox", "bwrap"),
        ("expose-ro", "./data"),
        ("expose-ro", "/etc/ssl"),
        ("net", "ALLOW|tcp|api.example.com|443|OUT"),
        ("bwrap.share_net", "true"),
        ("eval-call:my_profile", "x"),
        ("python-import", ""),
        ("env", "A=B"),
    )


def test_unknown_keys_are_left_to_the_rule_loader() -> None:
    assert parse("--no-such-key=1", "--help-me", "--version=2").rules == (
        ("no-such-key", "1"),
        ("help-me", ""),
        ("version", "2"),
    )


def test_a_rule_takes_no_separate_value() -> None:
    line = parse("--expose-ro", "./data")
    assert line.rules == (("expose-ro", ""),)
    assert (line.mode, line.target) == (SCRIPT, "./data")


def test_sandbox_options_interleave_with_interpreter_options() -> None:
    line = parse(
        "-u",
        "--pysandboxes-config",
        "ci.rules",
        "-X",
        "dev",
        "--expose-ro=./data",
        "-O",
        "--learn=l.rules",
        "-W",
        "error",
        "--os-sandbox=landlock",
        "-m",
        "pkg.main",
        "--expose-rw=/",
    )
    assert line.interpreter_options == ("-u", "-X", "dev", "-O", "-W", "error")
    assert line.config == "ci.rules" and line.learn_file == "l.rules"
    assert line.rules == (("expose-ro", "./data"), ("os-sandbox", "landlock"))
    assert (line.mode, line.target, line.args) == (MODULE, "pkg.main", ("--expose-rw=/",))


# -- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-c"], "Argument expected for the -c option"),
        (["-u", "-c"], "Argument expected for the -c option"),
        (["-m"], "Argument expected for the -m option"),
        (["-Im"], "Argument expected for the -m option"),
        (["-W"], "Argument expected for the -W option"),
        (["-X"], "Argument expected for the -X option"),
        (["-uX"], "Argument expected for the -X option"),
        (["-z"], "Unknown option: -z"),
        (["-uz", "x.py"], "Unknown option: -z"),
        (["-J"], "-J is reserved for Jython"),
        (["-u-x"], "unknown option -u-x"),
        (["--check-hash-based-pycs"], "Argument expected for the --check-hash-based-pycs option"),
        (
            ["--check-hash-based-pycs", "sometimes"],
            "--check-hash-based-pycs must be one of 'default', 'always', or 'never'",
        ),
        (["--pysandboxes-config"], "python-sb: --pysandboxes-config needs a file"),
        (["--pysandboxes-config="], "python-sb: --pysandboxes-config needs a file"),
        (["--pysandboxes-config", ""], "python-sb: --pysandboxes-config needs a file"),
        (
            ["--pysandboxes-config=a", "--pysandboxes-config", "b"],
            "python-sb: --pysandboxes-config is given twice ('a' and 'b')",
        ),
        (["--learn", "--learn=f"], "python-sb: --learn is given twice"),
    ],
)
def test_usage_errors(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_command_line(argv)
    assert str(info.value) == message
    assert info.value.exit_code == 2


@pytest.mark.parametrize(
    "arg",
    [
        "--=x",
        "--a b",
        "--a b=c",
        "---x",
        "--Expose-ro=x",
        "--1key=x",
        "--é=x",
        "--key:=x",
        "--bwrap.=x",
        "--a:b.c=x",
    ],
)
def test_what_is_not_a_rule_key(arg: str) -> None:
    assert usage_error(arg, "script.py") == (
        f"python-sb: '{arg}' is not a rule: write --KEY=VALUE, e.g. --expose-ro=./data"
    )


def test_usage_error_is_a_sandbox_error_and_a_value_error() -> None:
    assert issubclass(UsageError, SandBoxError) and issubclass(UsageError, ValueError)
    assert UsageError.exit_code == 2


# -- reproducing the python command line ----------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], ()),
        (["-uOO", "--learn", "s.py", "a"], ("-u", "-O", "-O", "s.py", "a")),
        (["--", "-s.py"], ("--", "-s.py")),
        (["-Wd", "-mjson.tool", "f"], ("-W", "d", "-m", "json.tool", "f")),
        (["--os-sandbox=none", "-", "x"], ("-", "x")),
        (["-V", "-c", "pass"], ("-c", "pass")),
    ],
)
def test_python_arguments(argv: list[str], expected: tuple[str, ...]) -> None:
    assert parse_command_line(argv).python_arguments() == expected


_PROBE = (
    "import json, sys; f = sys.flags; print(json.dumps([sys.argv, [f.optimize, f.verbose, f.bytes_warning,"
    " f.dont_write_bytecode, f.ignore_environment, f.isolated, f.no_user_site, f.no_site, f.quiet,"
    " f.safe_path, f.debug], sys._xoptions, sys.warnoptions]))"
)


@pytest.mark.parametrize(
    "options",
    [
        [],
        ["-uB"],
        ["-OO", "-bb"],
        ["-I"],
        ["-sSEP", "-q"],
        ["-Werror", "-W", "ignore::UserWarning", "-Xfrozen_modules=off"],
        ["-X", "utf8", "--check-hash-based-pycs", "never", "-R"],
    ],
)
def test_flags_match_the_real_interpreter(options: list[str]) -> None:
    line = parse_command_line([*options, "--expose-ro=./data", "-c", _PROBE, "a", "-b", "--learn"])
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    out = subprocess.run(
        [sys.executable, *line.python_arguments()],
        env=environ,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    argv, sys_flags, xoptions, warnoptions = json.loads(out)
    f = line.flags
    assert argv == list(line.argv)
    assert sys_flags == [
        f.optimize,
        f.verbose,
        f.bytes_warning,
        f.dont_write_bytecode,
        f.ignore_environment,
        f.isolated,
        f.no_user_site,
        f.no_site,
        f.quiet,
        f.safe_path,
        f.debug,
    ]
    assert sorted(xoptions) == sorted(x.partition("=")[0] for x in f.xoptions)
    # -b / -bb add their own filter to sys.warnoptions; flags.warnoptions holds the -W values
    assert [w for w in warnoptions if not w.endswith("::BytesWarning")] == list(f.warnoptions)


# -- any input ------------------------------------------------------------------------------

_TOKENS = st.sampled_from(
    [
        "-",
        "--",
        "-c",
        "-m",
        "-W",
        "-X",
        "-uB",
        "-OO",
        "-Im",
        "-ic",
        "-Werror",
        "-Xdev",
        "-h",
        "-V",
        "-VV",
        "-z",
        "-J",
        "-u-",
        "--help",
        "--help-all",
        "--version",
        "--check-hash-based-pycs",
        "always",
        "--learn",
        "--learn=f",
        "--learn=false",
        "--pysandboxes-config",
        "--pysandboxes-config=c",
        "--os_sandbox=bwrap",
        "--bwrap.share-net=true",
        "--=x",
        "--a b",
        "script.py",
        "",
    ]
)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(_TOKENS, st.text(max_size=12)), max_size=8))
def test_any_argument_list_parses_or_raises_usage_error(argv: list[str]) -> None:
    try:
        line = parse_command_line(argv)
    except UsageError as exc:
        assert str(exc)
        return
    assert line.mode in (SCRIPT, MODULE, COMMAND, STDIN, REPL)
    assert (line.target is None) == (line.mode in (STDIN, REPL))
    if line.help:
        return
    # python_arguments() gives a command line that parses back to the same program
    again = parse_command_line(line.python_arguments())
    assert again.interpreter_options == line.interpreter_options
    assert again.flags == line.flags
    assert (again.mode, again.target, again.args) == (line.mode, line.target, line.args)
    assert (again.rules, again.config, again.learn_requested, again.version) == ((), None, False, 0)


# -- help text ------------------------------------------------------------------------------


def test_usage_text_names_the_sandbox_options_and_the_rules_file() -> None:
    text = usage_text()
    for needle in (
        "--pysandboxes-config FILE",
        "--pysandboxes-config=FILE",
        "--learn[=FILE]",
        "--KEY=VALUE",
        "--expose-ro=./data",
        "--net='ALLOW|tcp|api.example.com|443|OUT'",
        "--os-sandbox=landlock",
        "-V, --version",
        "-h, -?, --help",
        "-c CMD",
        "-m MOD",
        "-X OPT",
        "--check-hash-based-pycs",
        "docs/rules.md",
    ):
        assert needle in text
    assert all(len(line) <= 90 for line in text.splitlines())
    assert usage_hint().startswith("usage: python-sb [option] ...")
