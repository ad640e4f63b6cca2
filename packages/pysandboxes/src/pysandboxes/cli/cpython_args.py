"""The ``python-sb`` command line: CPython's options, plus the sandbox options.

``python-sb`` takes the command line of ``python`` (3.11 and later) and adds the sandbox
options ``--pysandboxes-config FILE``, ``--learn[=FILE]`` and ``--KEY=VALUE`` rules, which may
appear anywhere among the interpreter options. Options end where CPython's end: at the first
argument that is not an option (the script), at ``-`` (standard input), after ``--`` (the next
argument is the script, even if it starts with a dash, unless it is ``-``), and after
``-c CODE`` or ``-m MODULE``. Everything after belongs to the program, untouched:
``python-sb script.py --learn`` hands ``--learn`` to the script.

Parsing is pure: no I/O, no environment, no ``isatty``. Errors raise :class:`UsageError`
(exit code 2, as CPython).
"""

from __future__ import annotations

from .._record import Record
from ..errors import SandBoxError

TYPE_CHECKING = False  # importing typing costs milliseconds at start-up
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, ClassVar


__all__ = [
    "COMMAND",
    "MODES",
    "MODULE",
    "REPL",
    "SCRIPT",
    "STDIN",
    "CommandLine",
    "InterpreterFlags",
    "UsageError",
    "parse_command_line",
    "usage_hint",
    "usage_text",
]

#: what runs: a script file, a module (``-m``), program text (``-c``), standard input (``-``)
#: or, when no program is given, the interactive interpreter (CPython reads standard input as
#: a script instead when it is not a terminal: see :meth:`CommandLine.interactive`)
SCRIPT = "script"
MODULE = "module"
COMMAND = "command"
STDIN = "stdin"
REPL = "repl"
MODES = (SCRIPT, MODULE, COMMAND, STDIN, REPL)

# Boolean words: ``--learn=false`` (or one of these) is not a learning request but a rule
# ``learn=VALUE``, left to the rule loader (the same words as the loader's).
_BOOLEAN_WORDS = frozenset(("true", "false", "0", "1", "yes", "no", "on", "off"))

# The shape of a rule key, as the rule file lexer accepts it: ``expose-ro``, ``eval-call:llm``,
# ``bwrap.share-net``.
_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
_KEY_CHARS = _LOWER | frozenset("0123456789_-")
_NAME_CHARS = _KEY_CHARS | frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_PROVIDER_CHARS = _NAME_CHARS | {"."}

# Short flags without a value, and the attribute each one sets (None: accepted, no effect).
_FLAGS = "bBdEiIOPqRsSuvx"
_HASH_PYC_MODES = ("default", "always", "never")
_HELP_TOPICS = {"--help": "", "--help-env": "env", "--help-xoptions": "xoptions", "--help-all": "all"}


class UsageError(SandBoxError, ValueError):
    """The command line cannot be parsed; ``python-sb`` prints the message and exits with 2.

    Messages of CPython's own options are CPython's (``Unknown option: -z``); messages of the
    sandbox options start with ``python-sb:``.
    """

    exit_code = 2


class InterpreterFlags(Record):
    """What the interpreter options ask for, named as in ``sys.flags``.

    Values are effective ones: under ``-I`` (isolated), ``ignore_environment``,
    ``no_user_site`` and ``safe_path`` are true as well. The environment (``PYTHONOPTIMIZE``
    and the like) is not read here.
    """

    __slots__ = (
        "bytes_warning",
        "check_hash_based_pycs",
        "debug",
        "dont_write_bytecode",
        "ignore_environment",
        "inspect",
        "isolated",
        "no_site",
        "no_user_site",
        "optimize",
        "quiet",
        "safe_path",
        "skip_first_line",
        "unbuffered",
        "verbose",
        "warnoptions",
        "xoptions",
    )
    _defaults: ClassVar[dict[str, Any]] = {
        "unbuffered": False,
        "optimize": 0,
        "dont_write_bytecode": False,
        "ignore_environment": False,
        "isolated": False,
        "no_user_site": False,
        "no_site": False,
        "safe_path": False,
        "inspect": False,
        "quiet": False,
        "verbose": 0,
        "debug": 0,
        "bytes_warning": 0,
        "skip_first_line": False,
        "warnoptions": (),
        "xoptions": (),
        "check_hash_based_pycs": "default",
    }
    unbuffered: bool  # -u
    optimize: int  # how many -O: 1 for -O, 2 for -OO (as sys.flags.optimize)
    dont_write_bytecode: bool  # -B
    ignore_environment: bool  # -E (or -I)
    isolated: bool  # -I
    no_user_site: bool  # -s (or -I)
    no_site: bool  # -S
    safe_path: bool  # -P (or -I)
    inspect: bool  # -i
    quiet: bool  # -q
    verbose: int  # how many -v
    debug: int  # how many -d
    bytes_warning: int  # how many -b
    skip_first_line: bool  # -x
    warnoptions: tuple[str, ...]  # each -W value, in order
    xoptions: tuple[str, ...]  # each -X value as written ("dev", "utf8=0"), in order
    check_hash_based_pycs: str  # --check-hash-based-pycs: "default", "always" or "never"


class CommandLine(Record):
    """A parsed ``python-sb`` command line.

    ``help`` stops the parsing where it is met (as ``python -h`` prints its help whatever
    follows): the fields after it keep their defaults. ``version`` does not: CPython reads
    the whole line, reports its errors, then prints the version. Help wins over version.
    """

    __slots__ = (
        "args",
        "config",
        "flags",
        "help",
        "help_topic",
        "interpreter_options",
        "learn_file",
        "learn_requested",
        "mode",
        "rules",
        "target",
        "version",
    )
    _defaults: ClassVar[dict[str, Any]] = {
        "interpreter_options": (),
        "flags": InterpreterFlags(),
        "config": None,
        "learn_requested": False,
        "learn_file": None,
        "rules": (),
        "help": False,
        "help_topic": "",
        "version": 0,
        "mode": REPL,
        "target": None,
        "args": (),
    }
    #: CPython options as they go on a ``python`` command line, one item each, a value as its
    #: own item: ('-u', '-X', 'dev', '-W', 'error', '-O', '-O'); without -c/-m, -h and -V
    interpreter_options: tuple[str, ...]
    flags: InterpreterFlags
    #: --pysandboxes-config FILE: the rule file to use instead of looking for one
    config: str | None
    #: --learn or --learn=FILE (not --learn=false, which is a rule)
    learn_requested: bool
    learn_file: str | None  # None: learn into the rule file in use
    #: --KEY=VALUE and bare --KEY (value ''), in order, keys with '-' for '_' before any '.'
    rules: tuple[tuple[str, str], ...]
    help: bool  # -h, -?, --help, --help-env, --help-xoptions, --help-all
    help_topic: str  # "" (-h, -?, --help), "env", "xoptions" or "all"
    version: int  # how many -V / --version (-VV: 2, the long version)
    mode: str  # one of MODES
    #: the script path as given, the module name, the program text; None for stdin and REPL
    target: str | None
    #: the program's arguments: sys.argv[1:]
    args: tuple[str, ...]

    @property
    def program_argv0(self) -> str:
        """``sys.argv[0]`` as CPython sets it: the script path as given, ``'-c'``, ``'-'``,
        ``''`` for the interactive interpreter, and ``'-m'`` for a module (a placeholder that
        the runner replaces with the module's file, as ``runpy`` does)."""
        if self.mode == SCRIPT:
            return self.target or ""
        return {MODULE: "-m", COMMAND: "-c", STDIN: "-"}.get(self.mode, "")

    @property
    def argv(self) -> tuple[str, ...]:
        """The program's ``sys.argv`` (with the ``'-m'`` placeholder for a module)."""
        return (self.program_argv0, *self.args)

    @property
    def reads_stdin(self) -> bool:
        """The program text comes from standard input (``-``, or no program given)."""
        return self.mode in (STDIN, REPL)

    def interactive(self, stdin_is_tty: bool) -> bool:
        """Whether CPython reads standard input as an interactive session (prompts, a
        banner) rather than as one script: when it reads standard input and that is a
        terminal, or ``-i`` forces it. ``-i`` after a script or ``-c``/``-m`` is
        ``flags.inspect``."""
        return self.reads_stdin and (stdin_is_tty or self.flags.inspect)

    def python_arguments(self) -> tuple[str, ...]:
        """Arguments (after the interpreter path) that make ``python`` run the same program
        with the same interpreter options; sandbox options, help and version left out."""
        program: tuple[str, ...]
        if self.mode == SCRIPT:
            target = self.target or ""
            program = ("--", target) if target.startswith("-") else (target,)
        elif self.mode == MODULE:
            program = ("-m", self.target or "")
        elif self.mode == COMMAND:
            program = ("-c", self.target or "")
        elif self.mode == STDIN:
            program = ("-",)
        else:
            program = ()
        return (*self.interpreter_options, *program, *self.args)


def _normalise_key(key: str) -> str:
    """``os_sandbox`` → ``os-sandbox``; the profile after ``:`` and a provider key's part
    after the first ``.`` are kept as written (as the rule loader does)."""
    head, dot, tail = key.partition(".")
    base, colon, profile = head.partition(":")
    return base.replace("_", "-") + colon + profile + dot + tail


def _is_key(key: str) -> bool:
    head, dot, tail = key.partition(".")
    base, colon, profile = head.partition(":")
    if not base or base[0] not in _LOWER or not _KEY_CHARS.issuperset(base):
        return False
    if dot:
        return not colon and bool(tail) and _PROVIDER_CHARS.issuperset(tail)
    if colon:
        return bool(profile) and _NAME_CHARS.issuperset(profile)
    return True


class _Parser:
    __slots__ = (
        "argv",
        "config",
        "help_topic",
        "index",
        "learn_file",
        "learn_requested",
        "options",
        "rules",
        "values",
        "version",
        "warnoptions",
        "xoptions",
    )

    def __init__(self, argv: Sequence[str]) -> None:
        self.argv = [str(a) for a in argv]
        self.index = 0
        self.options: list[str] = []
        self.values: dict[str, Any] = {}
        self.warnoptions: list[str] = []
        self.xoptions: list[str] = []
        self.rules: list[tuple[str, str]] = []
        self.config: str | None = None
        self.learn_requested = False
        self.learn_file: str | None = None
        self.help_topic: str | None = None
        self.version = 0

    def next_value(self, message: str) -> str:
        if self.index >= len(self.argv):
            raise UsageError(message)
        value = self.argv[self.index]
        self.index += 1
        return value

    def result(self, mode: str = REPL, target: str | None = None, args: Sequence[str] = ()) -> CommandLine:
        flags = dict(self.values)
        if flags.get("isolated"):
            flags.update(ignore_environment=True, no_user_site=True, safe_path=True)
        return CommandLine(
            interpreter_options=tuple(self.options),
            flags=InterpreterFlags(
                **flags, warnoptions=tuple(self.warnoptions), xoptions=tuple(self.xoptions)
            ),
            config=self.config,
            learn_requested=self.learn_requested,
            learn_file=self.learn_file,
            rules=tuple(self.rules),
            help=self.help_topic is not None,
            help_topic=self.help_topic or "",
            version=self.version,
            mode=mode,
            target=target,
            args=tuple(args),
        )

    def parse(self) -> CommandLine:
        argv = self.argv
        while self.index < len(argv):
            arg = argv[self.index]
            if arg == "--":
                self.index += 1
                break
            if arg == "-" or not arg.startswith("-"):
                break
            self.index += 1
            if arg.startswith("--"):
                self.long_option(arg)
                if self.help_topic is not None:
                    return self.result()
                continue
            result = self.short_options(arg)
            if result is not None:
                return result
        rest = argv[self.index :]
        if not rest:
            return self.result()
        if rest[0] == "-":
            return self.result(STDIN, None, rest[1:])
        return self.result(SCRIPT, rest[0], rest[1:])

    def short_options(self, arg: str) -> CommandLine | None:
        """One argument of grouped short options (``-uB``, ``-Werror``, ``-Im``, ``-ccode``)."""
        values = self.values
        position = 1
        while position < len(arg):
            option = arg[position]
            position += 1
            if option in "cmWX":
                if position < len(arg):
                    value = arg[position:]
                else:
                    value = self.next_value(f"Argument expected for the -{option} option")
                if option == "c":
                    return self.result(COMMAND, value, self.argv[self.index :])
                if option == "m":
                    return self.result(MODULE, value, self.argv[self.index :])
                (self.warnoptions if option == "W" else self.xoptions).append(value)
                self.options += (f"-{option}", value)
                return None
            if option in "h?":
                self.help_topic = ""
                return self.result()
            if option == "V":
                self.version += 1
            elif option in _FLAGS:
                self.options.append(f"-{option}")
                if option == "O":
                    values["optimize"] = values.get("optimize", 0) + 1
                elif option in "vdb":
                    name = {"v": "verbose", "d": "debug", "b": "bytes_warning"}[option]
                    values[name] = values.get(name, 0) + 1
                elif option != "R":  # -R: hash randomisation, always on since 3.3
                    values[_FLAG_NAMES[option]] = True
            elif option == "t":
                pass  # accepted and ignored by CPython 3.11-3.13 (Python 2's tab warnings)
            elif option == "J":
                raise UsageError("-J is reserved for Jython")
            elif option == "-":
                raise UsageError(f"unknown option {arg}")
            else:
                raise UsageError(f"Unknown option: -{option}")
        return None

    def long_option(self, arg: str) -> None:
        if arg in _HELP_TOPICS:
            self.help_topic = _HELP_TOPICS[arg]
        elif arg == "--version":
            self.version += 1
        elif arg == "--check-hash-based-pycs":
            mode = self.next_value(f"Argument expected for the {arg} option")
            if mode not in _HASH_PYC_MODES:
                raise UsageError("--check-hash-based-pycs must be one of 'default', 'always', or 'never'")
            self.values["check_hash_based_pycs"] = mode
            self.options += (arg, mode)
        else:
            self.sandbox_option(arg)

    def sandbox_option(self, arg: str) -> None:
        """``--pysandboxes-config FILE``, ``--learn[=FILE]``, ``--KEY=VALUE`` or ``--KEY``."""
        written, equals, value = arg[2:].partition("=")
        key = _normalise_key(written)
        if key == "pysandboxes-config":
            if not equals:
                value = self.next_value("python-sb: --pysandboxes-config needs a file")
            if not value:
                raise UsageError("python-sb: --pysandboxes-config needs a file")
            if self.config is not None:
                raise UsageError(
                    f"python-sb: --pysandboxes-config is given twice ({self.config!r} and {value!r})"
                )
            self.config = value
        elif key == "learn" and value.strip().lower() not in _BOOLEAN_WORDS:
            if self.learn_requested:
                raise UsageError("python-sb: --learn is given twice")
            self.learn_requested = True
            self.learn_file = value or None
        elif _is_key(key):
            self.rules.append((key, value))
        else:
            raise UsageError(f"python-sb: {arg!r} is not a rule: write --KEY=VALUE, e.g. --expose-ro=./data")


_FLAG_NAMES = {
    "B": "dont_write_bytecode",
    "E": "ignore_environment",
    "i": "inspect",
    "I": "isolated",
    "P": "safe_path",
    "q": "quiet",
    "s": "no_user_site",
    "S": "no_site",
    "u": "unbuffered",
    "x": "skip_first_line",
}


def parse_command_line(argv: Sequence[str]) -> CommandLine:
    """Parse the arguments of ``python-sb`` (without the program name).

    Raises :class:`UsageError` for what CPython refuses (``Unknown option: -z``,
    ``Argument expected for the -c option``) and for malformed sandbox options.
    """
    return _Parser(argv).parse()


def usage_hint() -> str:
    """The lines printed after a usage error, as CPython does."""
    return (
        "usage: python-sb [option] ... [-c cmd | -m mod | file | -] [arg] ...\n"
        "Try `python-sb -h' for more information.\n"
    )


def usage_text() -> str:
    """The text of ``python-sb --help``."""
    return _USAGE


_USAGE = """\
usage: python-sb [option] ... [-c cmd | -m mod | file | -] [arg] ...

Runs a Python program as `python` does, under the rules of its rule file.

Sandbox options (anywhere before the program, among the Python options):
  --pysandboxes-config FILE, --pysandboxes-config=FILE
                 use FILE as the rule file instead of looking for one
  --learn[=FILE] learning mode: allow what the program does, record it, and write the
                 rules into FILE (default: the rule file)
  --KEY=VALUE    add a rule for this run, as if KEY=VALUE were in the rule file
                 (refused when the rule file locks the rules with learn=false), e.g.
                   --expose-ro=./data
                   --net='ALLOW|tcp|api.example.com|443|OUT'
                   --os-sandbox=landlock
  -V, --version  print the versions of Python and python-sb and exit (-VV: more detail)
  -h, -?, --help print this help and exit

Python options (as for `python`; `python-sb --help-all` shows Python's own text):
  -b, -bb  warn about (-bb: refuse) str(bytes) and comparing bytes with str
  -B       do not write .pyc files
  -c CMD   run the program text CMD; the options end here
  -d       debug output from the parser
  -E       ignore the PYTHON* environment variables
  -i       inspect interactively once the program ends
  -I       isolated mode: implies -E, -P and -s
  -m MOD   run the library module MOD as a script; the options end here
  -O, -OO  drop assert statements (-OO: and docstrings)
  -P       do not put the script's directory (or the working directory) first on sys.path
  -q       no version banner in the interactive interpreter
  -R       accepted for compatibility: hash randomisation is always on
  -s       leave the user site directory out of sys.path
  -S       do not import the site module at start-up
  -u       unbuffered stdout and stderr
  -v       trace imports (twice: more)
  -W ARG   warning filter, e.g. -W error or -W ignore::DeprecationWarning
  -x       skip the first line of the script
  -X OPT   implementation option, e.g. -X dev, -X importtime, -X utf8
  --check-hash-based-pycs default|always|never
           how hash-based .pyc files are checked
  --help-env, --help-xoptions, --help-all
           Python's help on environment variables, -X options, everything
  file     run the program in this file; the options end here
  -        read the program from standard input; the options end here
  --       the options end here: the next argument is the file
  arg ...  handed to the program as sys.argv[1:]

Rules file: .py-sandboxes next to the script, in the module's package, or in the working
directory; see docs/rules.md
"""
