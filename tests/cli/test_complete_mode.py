"""End to end: ``python-sb`` as a drop-in for ``python`` (complete mode).

Every test runs the real console script as a subprocess, in a temporary project that holds
its own ``.py-sandboxes``, with a small fixed environment (a temporary HOME, no PYTHON*
variables) and a timeout. Where ``python`` has an answer, the same command is run with plain
``python`` (the interpreter that runs ``python-sb``) and the outcomes are compared: stdout,
stderr, exit code. Behaviour that must not depend on the OS provider is checked under both
``subprocess`` and ``landlock``.

Sections: command-line forms · exit codes and errors · signals · streams · interpreter
options · environment · shebang · security pairs (works with the rule / refused without it).
Known product bugs are strict xfails whose reason starts with "bug:".
"""

from __future__ import annotations

import ast
import os
import signal
import socket
import stat
import subprocess
import sys
import textwrap
import time
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import pysandboxes

BIN = Path(sys.executable).parent
CONSOLE_SCRIPT = BIN / "python-sb"
PYTHON_SB = (
    [str(CONSOLE_SCRIPT)]
    if CONSOLE_SCRIPT.exists()
    else [sys.executable, "-c", "import sys; from python_sb import main; sys.exit(main())"]
)
PYTHON = sys.executable
PROVIDERS = ("subprocess", "landlock")
TIMEOUT = 30
#: where the sandbox's own code lives: no traceback shown to the user may name it
OWN_CODE = os.path.dirname(os.path.abspath(pysandboxes.__file__)) + os.sep
USAGE = "usage: python-sb [option] ... [-c cmd | -m mod | file | -] [arg] ...\n"

Result = subprocess.CompletedProcess[Any]


def bug(reason: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, reason=f"bug: {reason}")


class Project:
    """A temporary project directory (``root``) with a temporary home and a fixed environment."""

    def __init__(self, root: Path, home: Path) -> None:
        self.root = root
        self.home = home
        self.environ = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "LANG": "C.UTF-8",
        }

    def write(self, name: str, text: str = "", *, executable: bool = False) -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        if executable:
            path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        return path

    def rules(self, text: str = "", name: str = ".py-sandboxes") -> Path:
        return self.write(name, text)

    def mkdir(self, name: str) -> Path:
        path = self.root / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def _run(
        self,
        command: Sequence[str],
        *,
        cwd: Path | None,
        input: str | bytes | None,
        env: dict[str, str] | None,
        text: bool,
        merge: bool,
    ) -> Result:
        return subprocess.run(
            list(command),
            cwd=cwd or self.root,
            env={**self.environ, **(env or {})},
            input=input,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merge else subprocess.PIPE,
            text=text,
            timeout=TIMEOUT,
        )

    def sb(
        self,
        *args: str,
        provider: str | None = None,
        cwd: Path | None = None,
        input: str | bytes | None = None,
        env: dict[str, str] | None = None,
        text: bool = True,
        merge: bool = False,
    ) -> Result:
        """``python-sb [--os-sandbox=PROVIDER] ARGS``; stdin is empty unless ``input`` is given."""
        options = [f"--os-sandbox={provider}"] if provider else []
        return self._run(
            [*PYTHON_SB, *options, *args],
            cwd=cwd,
            input=input if input is not None else ("" if text else b""),
            env=env,
            text=text,
            merge=merge,
        )

    def python(
        self,
        *args: str,
        cwd: Path | None = None,
        input: str | bytes | None = None,
        env: dict[str, str] | None = None,
        text: bool = True,
        merge: bool = False,
    ) -> Result:
        """Plain ``python ARGS``, the same interpreter, the same environment."""
        return self._run(
            [PYTHON, *args],
            cwd=cwd,
            input=input if input is not None else ("" if text else b""),
            env=env,
            text=text,
            merge=merge,
        )


@pytest.fixture
def project(tmp_path: Path) -> Project:
    root = tmp_path / "project"
    home = tmp_path / "home"
    root.mkdir()
    home.mkdir()
    return Project(root, home)


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def same_outcome(got: Result, expected: Result) -> None:
    assert (got.returncode, got.stdout, got.stderr) == (expected.returncode, expected.stdout, expected.stderr)


def no_own_frames(stderr: str) -> None:
    assert OWN_CODE not in stderr, stderr


# ============================================================================================
# Command-line forms: script, -m, -c, -, piped stdin, -i
# ============================================================================================

SHOW = """\
import sys
print(repr((sys.argv, __name__, __file__, sys.path[0])))
"""


def test_script_with_arguments_runs_as_main_like_python(project: Project, provider: str) -> None:
    project.rules("")
    project.write("app.py", SHOW)
    result = project.sb("app.py", "one", "--two", "-c", provider=provider)
    assert result.returncode == 0, result.stderr
    argv, name, file, path0 = ast.literal_eval(result.stdout)
    assert argv == ["app.py", "one", "--two", "-c"]
    assert name == "__main__"
    assert file == str(project.root / "app.py")  # absolute
    assert path0 == str(project.root)
    same_outcome(result, project.python("app.py", "one", "--two", "-c"))


def test_options_after_the_script_belong_to_the_script(project: Project, provider: str) -> None:
    project.rules("")
    project.write("app.py", SHOW)
    result = project.sb("app.py", "--learn", "--expose-ro=/", "-O", provider=provider)
    assert result.returncode == 0, result.stderr
    assert ast.literal_eval(result.stdout)[0] == ["app.py", "--learn", "--expose-ro=/", "-O"]


def test_script_without_py_suffix_uses_the_rule_file_next_to_it_from_another_cwd(
    project: Project, provider: str
) -> None:
    project.rules("python-import=os\n", "tools/.py-sandboxes")
    project.write("tools/report", "import os\nprint(os.sep, __file__)\n")
    elsewhere = project.mkdir("elsewhere")
    # a broken rule file in the working directory: using it would stop with exit 2
    (elsewhere / ".py-sandboxes").write_text("pyhton-import=os\n")
    result = project.sb("../tools/report", provider=provider, cwd=elsewhere)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == f"/ {project.root / 'tools' / 'report'}\n"


def test_script_by_absolute_path_finds_its_rule_file_whatever_the_cwd(
    project: Project, provider: str, tmp_path: Path
) -> None:
    project.rules("python-import=os\n", "tools/.py-sandboxes")
    script = project.write("tools/app.py", "import os\nprint('ok')\n")
    result = project.sb(str(script), provider=provider, cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "ok\n", "")


def test_script_reached_through_a_symlink_gets_the_real_directory_as_path0(
    project: Project, provider: str
) -> None:
    project.rules("", "real/.py-sandboxes")
    project.write("real/app.py", SHOW)
    (project.root / "link").symlink_to(project.root / "real")
    result = project.sb("link/app.py", provider=provider)
    assert result.returncode == 0, result.stderr
    assert ast.literal_eval(result.stdout)[3] == str(project.root / "real")
    same_outcome(result, project.python("link/app.py"))


@pytest.mark.parametrize("form", ["--pysandboxes-config=FILE", "--pysandboxes-config FILE", "directory"])
def test_pysandboxes_config_picks_the_rule_file(project: Project, provider: str, form: str) -> None:
    project.rules("python-import=os\n", "conf/.py-sandboxes")
    project.write("app.py", "import os\nprint('ran')\n")  # no rule file next to it
    config = "conf" if form == "directory" else "conf/.py-sandboxes"
    option = [f"--pysandboxes-config={config}"] if "=" in form else ["--pysandboxes-config", config]
    result = project.sb(*option, "app.py", provider=provider)
    assert (result.returncode, result.stdout, result.stderr) == (0, "ran\n", "")


def test_pysandboxes_config_of_another_name_is_used_instead_of_the_one_next_to_the_script(
    project: Project, provider: str
) -> None:
    project.rules("pyhton-import=broken\n")  # would stop with exit 2 if used
    project.rules("python-import=os\n", "ci.rules")
    project.write("app.py", "import os\nprint('ran')\n")
    result = project.sb("--pysandboxes-config=ci.rules", "app.py", provider=provider)
    assert (result.returncode, result.stdout, result.stderr) == (0, "ran\n", "")


def test_m_module_with_arguments_like_python(project: Project, provider: str) -> None:
    project.rules("")
    project.write("tool.py", SHOW)
    result = project.sb("-m", "tool", "x", "-y", provider=provider)
    assert result.returncode == 0, result.stderr
    argv, name, file, path0 = ast.literal_eval(result.stdout)
    assert argv == [str(project.root / "tool.py"), "x", "-y"]  # argv[0]: the module's file
    assert (name, file, path0) == ("__main__", str(project.root / "tool.py"), str(project.root))
    same_outcome(result, project.python("-m", "tool", "x", "-y"))


def test_m_package_runs_its_main_module(project: Project, provider: str) -> None:
    project.rules("")
    project.write("pkg/__init__.py")
    project.write("pkg/__main__.py", "import sys\nprint(sys.argv[1:], __name__, __package__)\n")
    result = project.sb("-m", "pkg", "a", provider=provider)
    assert (result.returncode, result.stdout) == (0, "['a'] __main__ pkg\n"), result.stderr
    same_outcome(result, project.python("-m", "pkg", "a"))


def test_m_unknown_module_exits_1_like_python(project: Project, provider: str) -> None:
    project.rules("")
    result = project.sb("-m", "no_such_module_here", provider=provider)
    assert result.returncode == 1
    assert result.stderr.endswith(": No module named no_such_module_here\n")
    same_outcome(result, project.python("-m", "no_such_module_here"))


def test_c_code_with_arguments_like_python(project: Project, provider: str) -> None:
    project.rules("")
    code = "import sys; print(repr((sys.argv, __name__, sys.path[0], '__file__' in globals())))"
    result = project.sb("-c", code, "a", "-b", provider=provider)
    assert result.returncode == 0, result.stderr
    assert ast.literal_eval(result.stdout) == (["-c", "a", "-b"], "__main__", "", False)
    same_outcome(result, project.python("-c", code, "a", "-b"))


def test_dash_reads_the_program_from_stdin_like_python(project: Project, provider: str) -> None:
    project.rules("")
    program = "import sys\nprint(repr((sys.argv, __name__, sys.path[0])))\n"
    result = project.sb("-", "q", "r", provider=provider, input=program)
    assert result.returncode == 0, result.stderr
    assert ast.literal_eval(result.stdout) == (["-", "q", "r"], "__main__", "")
    same_outcome(result, project.python("-", "q", "r", input=program))


def test_piped_stdin_without_a_program_runs_it_like_python(project: Project, provider: str) -> None:
    project.rules("")
    program = "import sys\nprint(repr((sys.argv, __name__)))\nprint(6 * 7)\n"
    result = project.sb(provider=provider, input=program)
    assert (result.returncode, result.stdout, result.stderr) == (0, "([''], '__main__')\n42\n", "")
    same_outcome(result, project.python(input=program))


REPL_LINES = "x = 5\nprint(x * 2)\nx\nimport sys; sys.exit(4)\n"


def test_q_i_with_piped_lines_runs_them_and_exits_with_their_status(project: Project, provider: str) -> None:
    project.rules("")
    result = project.sb("-q", "-i", provider=provider, input=REPL_LINES)
    assert result.returncode == 4, result.stderr
    assert result.stdout.replace(">>>", "").split() == ["10", "5"]


def test_q_i_stdout_is_the_same_as_python(project: Project, provider: str) -> None:
    project.rules("")
    result = project.sb("-q", "-i", provider=provider, input=REPL_LINES)
    assert result.stdout == project.python("-q", "-i", input=REPL_LINES).stdout == "10\n5\n"


def test_q_i_traceback_shows_no_sandbox_frame(project: Project, provider: str) -> None:
    project.rules("")
    result = project.sb("-q", "-i", provider=provider, input="1/0\n")
    assert "ZeroDivisionError: division by zero" in result.stderr
    no_own_frames(result.stderr)


def test_i_after_a_script_inspects_its_namespace(project: Project, provider: str) -> None:
    project.rules("")
    project.write("app.py", "answer = 42\n")
    result = project.sb("-q", "-i", "app.py", provider=provider, input="print(answer + 1)\n")
    assert result.returncode == 0, result.stderr
    assert "43" in result.stdout.split()


def test_a_directory_with_main_runs_like_python(project: Project, provider: str) -> None:
    project.rules("")
    project.write("appdir/__main__.py", SHOW)
    result = project.sb("appdir", "z", provider=provider)
    same_outcome(result, project.python("appdir", "z"))
    assert result.returncode == 0


def test_a_zip_with_main_runs_like_python(project: Project, provider: str) -> None:
    project.rules("")
    with zipfile.ZipFile(project.root / "app.zip", "w") as archive:
        archive.writestr("__main__.py", SHOW)
    result = project.sb("app.zip", "z", provider=provider)
    same_outcome(result, project.python("app.zip", "z"))
    assert result.returncode == 0


def test_x_skips_the_first_line_and_keeps_line_numbers_like_python(project: Project, provider: str) -> None:
    project.rules("")
    project.write("app.py", "not python at all\nx = 1\nraise ValueError(x)\n")
    result = project.sb("-x", "app.py", provider=provider)
    assert result.returncode == 1
    same_outcome(result, project.python("-x", "app.py"))


@pytest.mark.parametrize("mode", ["script", "-c", "stdin"])
def test_main_module_namespace_is_the_one_python_makes(project: Project, provider: str, mode: str) -> None:
    project.rules("")
    code = "print(sorted(globals()))"
    project.write("app.py", code + "\n")
    args, program = {"script": (["app.py"], None), "-c": (["-c", code], None), "stdin": (["-"], code)}[mode]
    result = project.sb(*args, provider=provider, input=program)
    same_outcome(result, project.python(*args, input=program))


# ============================================================================================
# Exit codes and errors
# ============================================================================================


@pytest.mark.parametrize(
    "statement",
    [
        "pass",
        "sys.exit()",
        "sys.exit(0)",
        "sys.exit(3)",
        "sys.exit(255)",
        "sys.exit(256)",
        "sys.exit(-1)",
        "sys.exit(True)",
        "sys.exit('msg')",
        "raise SystemExit(3.5)",
    ],
)
def test_exit_status_like_python(project: Project, provider: str, statement: str) -> None:
    project.rules("")
    project.write("app.py", f"import sys\nprint('before')\n{statement}\n")
    result = project.sb("app.py", provider=provider)
    same_outcome(result, project.python("app.py"))


def test_sys_exit_3_gives_3_and_sys_exit_message_gives_1(project: Project, provider: str) -> None:
    project.rules("")
    project.write("three.py", "import sys\nsys.exit(3)\n")
    project.write("message.py", "import sys\nsys.exit('bad input')\n")
    three = project.sb("three.py", provider=provider)
    assert (three.returncode, three.stdout, three.stderr) == (3, "", "")
    message = project.sb("message.py", provider=provider)
    assert (message.returncode, message.stdout, message.stderr) == (1, "", "bad input\n")


UNCAUGHT = """\
def inner():
    raise ValueError("boom")


def outer():
    inner()


outer()
"""


@pytest.mark.parametrize("mode", ["script", "-m", "-c", "stdin"])
def test_uncaught_exception_prints_pythons_traceback_and_exits_1(
    project: Project, provider: str, mode: str
) -> None:
    project.rules("")
    project.write("app.py", UNCAUGHT)
    args, program = {
        "script": (["app.py"], None),
        "-m": (["-m", "app"], None),
        "-c": (["-c", UNCAUGHT], None),
        "stdin": (["-"], UNCAUGHT),
    }[mode]
    result = project.sb(*args, provider=provider, input=program)
    assert result.returncode == 1
    assert result.stderr.endswith("\nValueError: boom\n")
    no_own_frames(result.stderr)
    same_outcome(result, project.python(*args, input=program))


def test_uncaught_exception_with_a_cause_prints_both_like_python(project: Project, provider: str) -> None:
    project.rules("")
    project.write(
        "app.py",
        """\
        try:
            {}["key"]
        except KeyError as exc:
            raise RuntimeError("lookup failed") from exc
        """,
    )
    result = project.sb("app.py", provider=provider)
    assert result.returncode == 1
    assert "The above exception was the direct cause of the following exception:" in result.stderr
    same_outcome(result, project.python("app.py"))


def test_a_refusal_shown_as_the_cause_has_no_sandbox_frames(project: Project, provider: str) -> None:
    project.rules("")
    project.write(
        "app.py",
        """\
        try:
            open("/etc/hostname")
        except OSError as exc:
            raise RuntimeError("wrapped") from exc
        """,
    )
    result = project.sb("app.py", provider=provider)
    assert result.returncode == 1
    assert "RuleFileNotFoundError: Access to '/etc/hostname' must be accepted by a rule." in result.stderr
    assert result.stderr.endswith("RuntimeError: wrapped\n")
    no_own_frames(result.stderr)


def test_a_custom_excepthook_is_used_for_an_uncaught_exception(project: Project, provider: str) -> None:
    project.rules("")
    project.write(
        "app.py",
        """\
        import sys
        sys.excepthook = lambda kind, value, tb: print("hook:", kind.__name__, value)
        raise KeyError("k")
        """,
    )
    result = project.sb("app.py", provider=provider)
    assert (result.returncode, result.stdout, result.stderr) == (1, "hook: KeyError 'k'\n", "")
    same_outcome(result, project.python("app.py"))


@pytest.mark.parametrize("mode", ["script", "-c", "stdin"])
def test_syntax_error_is_reported_like_python(project: Project, provider: str, mode: str) -> None:
    project.rules("")
    source = "x = (1,\nprint('a'\n"
    project.write("app.py", source)
    args, program = {"script": (["app.py"], None), "-c": (["-c", source], None), "stdin": (["-"], source)}[
        mode
    ]
    result = project.sb(*args, provider=provider, input=program)
    assert result.returncode == 1
    assert result.stderr.endswith("SyntaxError: '(' was never closed\n")
    same_outcome(result, project.python(*args, input=program))


def test_syntax_error_exits_1_and_runs_nothing(project: Project, provider: str) -> None:
    project.rules("expose-rw=.\n")
    project.write("app.py", "open('marker', 'w').close()\nx = (\n")
    result = project.sb("app.py", provider=provider)
    assert result.returncode == 1
    assert result.stderr.endswith("SyntaxError: '(' was never closed\n")
    assert not (project.root / "marker").exists()


def test_missing_script_exits_2_with_cant_open_file(project: Project, provider: str) -> None:
    project.rules("")
    result = project.sb("nowhere.py", provider=provider)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.endswith(
        f": can't open file '{project.root / 'nowhere.py'}': [Errno 2] No such file or directory\n"
    )
    assert project.python("nowhere.py").returncode == 2


def test_rule_file_errors_print_file_line_messages_exit_2_and_run_nothing(
    project: Project, provider: str
) -> None:
    project.rules("expose-rw=.\npython-import=numpy.linalg\npyhton-import=json\n")
    project.write("app.py", "open('marker', 'w').close()\n")
    result = project.sb("app.py", provider=provider)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        ".py-sandboxes(2): 'python-import=numpy.linalg': python-import takes top-level names: "
        "write 'numpy' (it covers 'numpy.linalg')\n"
        ".py-sandboxes(3): unknown key 'pyhton-import' in 'pyhton-import=json' (did you mean 'python-import'?)\n"
    )
    assert not (project.root / "marker").exists()


def test_rule_file_error_is_named_relative_to_the_cwd(project: Project, provider: str) -> None:
    project.rules("expose-rw=.\nnet=ALLOW|tcp\n", "tools/.py-sandboxes")
    project.write("tools/app.py", "open('marker', 'w').close()\n")
    result = project.sb("tools/app.py", provider=provider)
    assert result.returncode == 2
    assert result.stderr.startswith("tools/.py-sandboxes(2): 'net=ALLOW|tcp' has 2 field(s), expected 5")
    assert not (project.root / "tools" / "marker").exists()


def test_unknown_provider_exits_2_before_running(project: Project) -> None:
    project.rules("expose-rw=.\n")
    project.write("app.py", "open('marker', 'w').close()\n")
    result = project.sb("--os-sandbox=bogus", "app.py")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        "<command line>: invalid os-sandbox 'bogus': use one of none, subprocess, landlock, bwrap, "
        "unshare, firejail, qemu\n"
    )
    project.rules("expose-rw=.\nos-sandbox=landlok\n")
    result = project.sb("app.py")
    assert result.returncode == 2
    assert result.stderr.startswith(".py-sandboxes(2): invalid os-sandbox 'landlok'")
    assert not (project.root / "marker").exists()


def test_a_provider_that_cannot_start_exits_2_with_the_reason(project: Project) -> None:
    project.rules("expose-rw=.\nos-sandbox=qemu\n")
    project.write("app.py", "open('marker', 'w').close()\n")
    # no QEMU on this PATH
    result = project.sb("app.py", env={**os.environ, "PATH": str(project.root)})
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith(
        "python-sb: os-sandbox=qemu (from 'os-sandbox=qemu' from .py-sandboxes(2)) cannot start: "
        "it needs a kernel with the 9p and virtio modules, a static busybox and QEMU; install them with "
        "`apt-get install qemu-system-x86"
    )
    assert not (project.root / "marker").exists()


@pytest.mark.parametrize(
    ("args", "first_line"),
    [
        (["-z", "app.py"], "Unknown option: -z"),
        (["-c"], "Argument expected for the -c option"),
        (
            ["--Foo=1", "app.py"],
            "python-sb: '--Foo=1' is not a rule: write --KEY=VALUE, e.g. --expose-ro=./data",
        ),
    ],
)
def test_bad_command_line_exits_2_with_a_clear_message(
    project: Project, args: list[str], first_line: str
) -> None:
    project.rules("expose-rw=.\n")
    project.write("app.py", "open('marker', 'w').close()\n")
    result = project.sb(*args)
    assert (result.returncode, result.stdout) == (2, "")
    lines = result.stderr.splitlines()
    assert lines[:3] == [first_line, USAGE.rstrip("\n"), "Try `python-sb -h' for more information."]
    assert not (project.root / "marker").exists()


def test_unknown_rule_key_on_the_command_line_exits_2(project: Project) -> None:
    project.rules("expose-rw=.\n")
    project.write("app.py", "open('marker', 'w').close()\n")
    result = project.sb("--pyhton-import=json", "app.py")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        "<command line>: unknown key 'pyhton-import' in --pyhton-import=json (did you mean 'python-import'?)\n"
    )
    assert not (project.root / "marker").exists()


def test_usage_error_text_has_pythons_shape(project: Project) -> None:
    result = project.sb("-z", "app.py")
    assert result.stderr == f"Unknown option: -z\n{USAGE}Try `python-sb -h' for more information.\n"


# ============================================================================================
# Signals
# ============================================================================================

SLEEPER = """\
import os, sys, time
open(sys.argv[1], "w").write(str(os.getpid()))
print("ready", flush=True)
while True:
    time.sleep(0.05)
"""


def start_sleeper(project: Project, command: Sequence[str]) -> tuple[subprocess.Popen[str], int]:
    """Start ``command`` (which runs SLEEPER), wait until it sleeps; return it and the program's pid."""
    pid_file = project.root / "run" / "pid"
    pid_file.unlink(missing_ok=True)
    process = subprocess.Popen(
        [*command, str(pid_file)],
        cwd=project.root,
        env=project.environ,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # the program is running (or has died)
        assert line == "ready\n", process.communicate(timeout=TIMEOUT)
        return process, int(pid_file.read_text())
    except BaseException:
        process.kill()
        process.communicate(timeout=TIMEOUT)
        raise


def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    try:
        out, err = process.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate(timeout=TIMEOUT)
        raise
    return process.returncode, out, err


def gone(pid: int) -> bool:
    """Whether ``pid`` no longer runs (waits up to a few seconds for it to go)."""
    deadline = time.monotonic() + 5
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


@pytest.fixture
def sleeper(project: Project) -> Project:
    project.rules("python-import=os, time\nexpose-rw=run\n")
    project.mkdir("run")
    project.write("sleeper.py", SLEEPER)
    return project


def test_the_program_killing_itself_with_sigterm_gives_minus_15(project: Project, provider: str) -> None:
    project.rules("python-import=os, signal\npython-api=ALLOW:process-control\n")
    project.write("app.py", "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\nprint('not reached')\n")
    result = project.sb("app.py", provider=provider)
    assert (result.returncode, result.stdout, result.stderr) == (-signal.SIGTERM, "", "")
    same_outcome(result, project.python("app.py"))


def test_killing_itself_needs_process_control(project: Project, provider: str) -> None:
    project.rules("python-import=os, signal\n")
    project.write("app.py", "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n")
    result = project.sb("app.py", provider=provider)
    assert result.returncode == 1
    assert "RuleApiPermissionError: os.kill() is denied by the API guard (category: process-control)." in (
        result.stderr
    )


def test_sigint_to_python_sb_raises_keyboardinterrupt_in_the_program_like_python(
    sleeper: Project, provider: str
) -> None:
    outcomes = []
    for command in (
        [*PYTHON_SB, f"--os-sandbox={provider}", "sleeper.py"],
        [PYTHON, "sleeper.py"],
    ):
        process, pid = start_sleeper(sleeper, command)
        assert pid == process.pid  # one process: the program is python-sb itself
        process.send_signal(signal.SIGINT)
        outcomes.append(finish(process))
    (status, out, err), (py_status, py_out, py_err) = outcomes
    assert status == py_status == -signal.SIGINT
    assert out == py_out == ""
    # where the interrupt lands (print, the loop, sleep) varies from run to run: compare the shape
    for text in (err, py_err):
        lines = text.splitlines()
        assert lines[0] == "Traceback (most recent call last):"
        assert lines[-1] == "KeyboardInterrupt"
        files = [line.strip() for line in lines if line.strip().startswith("File ")]
        assert files and all(f.startswith(f'File "{sleeper.root / "sleeper.py"}", line ') for f in files)
    no_own_frames(err)


def test_the_program_may_handle_sigint_itself(project: Project, provider: str) -> None:
    project.rules("python-import=os, time\nexpose-rw=run\n")
    project.mkdir("run")
    project.write(
        "sleeper.py",
        """\
        import os, sys, time
        try:
            open(sys.argv[1], "w").write(str(os.getpid()))
            print("ready", flush=True)
            while True:
                time.sleep(0.05)
        except KeyboardInterrupt:
            print("bye")
        """,
    )
    process, _ = start_sleeper(project, [*PYTHON_SB, f"--os-sandbox={provider}", "sleeper.py"])
    process.send_signal(signal.SIGINT)
    assert finish(process) == (0, "bye\n", "")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_terminating_python_sb_terminates_the_program_and_leaves_nothing_running(
    sleeper: Project, provider: str, sig: signal.Signals
) -> None:
    process, pid = start_sleeper(sleeper, [*PYTHON_SB, f"--os-sandbox={provider}", "sleeper.py"])
    try:
        process.send_signal(sig)
        status, out, err = finish(process)
        assert (status, out, err) == (-sig, "", "")
        assert gone(pid), f"the sandboxed program {pid} still runs"
    finally:
        if pid != process.pid and not gone(pid):
            os.kill(pid, signal.SIGKILL)  # the program this test started


def test_sigterm_outcome_is_the_same_as_python(sleeper: Project, provider: str) -> None:
    outcomes = []
    for command in ([*PYTHON_SB, f"--os-sandbox={provider}", "sleeper.py"], [PYTHON, "sleeper.py"]):
        process, _ = start_sleeper(sleeper, command)
        process.send_signal(signal.SIGTERM)
        outcomes.append(finish(process))
    assert outcomes[0] == outcomes[1] == (-signal.SIGTERM, "", "")


# ============================================================================================
# Streams
# ============================================================================================


def test_5_mb_on_stdout_and_1_mb_on_stderr_stream_through(project: Project, provider: str) -> None:
    project.rules("")
    project.write(
        "big.py",
        """\
        import sys
        line = "x" * 1023 + "\\n"
        for i in range(5 * 1024):
            sys.stdout.write(line)
            if i % 5 == 0:
                sys.stderr.write("e" * 1024)
        """,
    )
    result = project.sb("big.py", provider=provider, text=False)
    assert result.returncode == 0
    assert len(result.stdout) == 5 * 1024 * 1024
    assert len(result.stderr) == 1024 * 1024
    expected = project.python("big.py", text=False)
    assert (result.stdout, result.stderr) == (expected.stdout, expected.stderr)


def test_stdin_data_reaches_the_program(project: Project, provider: str) -> None:
    project.rules("")
    project.write(
        "count.py",
        "import sys\ndata = sys.stdin.buffer.read()\nprint(len(data), data.count(b'\\n'), data[-6:])\n",
    )
    data = b"".join(b"line %06d\n" % i for i in range(200_000))  # 2.2 MB
    result = project.sb("count.py", provider=provider, input=data, text=False)
    assert (result.returncode, result.stderr) == (0, b"")
    assert result.stdout == f"{len(data)} 200000 b'99999\\n'\n".encode()
    assert result.stdout == project.python("count.py", input=data, text=False).stdout


def test_stdin_lines_read_one_by_one(project: Project, provider: str) -> None:
    project.rules("")
    project.write("echo.py", "for line in iter(input, 'end'):\n    print(line.upper())\n")
    result = project.sb("echo.py", provider=provider, input="a\nb\nend\nc\n")
    assert (result.returncode, result.stdout, result.stderr) == (0, "A\nB\n", "")


INTERLEAVED = {
    "text": """\
import sys
for i in range(3):
    print("out%d" % i)
    print("err%d" % i, file=sys.stderr)
""",
    "binary": """\
import sys
for i in range(3):
    sys.stdout.buffer.write(b"out%d\\n" % i)
    sys.stderr.buffer.write(b"err%d\\n" % i)
""",
}


@pytest.mark.parametrize("layer", ["text", "binary"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_u_keeps_stdout_and_stderr_in_order_like_python(project: Project, provider: str, layer: str) -> None:
    project.rules("")
    project.write("order.py", INTERLEAVED[layer])
    result = project.sb("-u", "order.py", provider=provider, merge=True)
    assert result.stdout == "out0\nerr0\nout1\nerr1\nout2\nerr2\n"
    assert result.stdout == project.python("-u", "order.py", merge=True).stdout


@pytest.mark.parametrize("layer", ["text", "binary"])
def test_without_u_output_is_complete(project: Project, provider: str, layer: str) -> None:
    project.rules("")
    project.write("order.py", INTERLEAVED[layer])
    result = project.sb("order.py", provider=provider)
    assert (result.stdout, result.stderr) == ("out0\nout1\nout2\n", "err0\nerr1\nerr2\n")


# ============================================================================================
# Interpreter options
# ============================================================================================

FLAGS = """\
import sys
flags = {
    name: getattr(sys.flags, name)
    for name in dir(sys.flags)
    if not name.startswith(("_", "n_")) and name not in ("count", "index")
}
script_dir = __file__.rpartition("/")[0]
print(repr({
    "flags": flags,
    "__debug__": __debug__,
    "warnoptions": sys.warnoptions,
    "xoptions": sys._xoptions,
    "dont_write_bytecode": sys.dont_write_bytecode,
    "script_dir_first": sys.path[0] == script_dir,
}))
"""

#: -B, -q and -i are emulated in-process under landlock, and sys.flags does not show them
_FLAG_BUGS = {
    # A documented difference, not a bug: python-sb runs the console itself after the program
    # (python's own -i would start its REPL outside the runner).
    ("-i", "landlock"): "documented: -i leaves sys.flags.inspect and sys.flags.interactive at 0",
    ("-i", "subprocess"): "documented: -i leaves sys.flags.inspect and sys.flags.interactive at 0",
}
_OPTIONS = ["", "-O", "-OO", "-B", "-X dev", "-X utf8", "-X utf8=0", "-W error", "-E", "-I", "-s", "-S"]
_OPTIONS += ["-P", "-q", "-b", "-i", "-R"]


def _flag_cases() -> Iterator[object]:
    for option in _OPTIONS:
        for name in PROVIDERS:
            reason = _FLAG_BUGS.get((option, name))
            marks = [bug(reason)] if reason else []
            yield pytest.param(option, name, marks=marks, id=f"{option or 'none'}-{name}")


@pytest.mark.parametrize(("option", "provider"), list(_flag_cases()))
def test_interpreter_options_reach_the_program_like_python(
    project: Project, option: str, provider: str
) -> None:
    project.rules("")
    project.write("flags.py", FLAGS)
    options = option.split()
    got = project.sb(*options, "flags.py", provider=provider)
    expected = project.python(*options, "flags.py")
    assert got.returncode == 0, got.stderr
    seen = ast.literal_eval(got.stdout.splitlines()[0])
    wanted = ast.literal_eval(expected.stdout.splitlines()[0])
    if "utf8" not in option:
        # the program's environment has no LANG: a fresh interpreter may pick UTF-8 mode (PEP 540)
        del seen["flags"]["utf8_mode"], wanted["flags"]["utf8_mode"]
    assert seen == wanted


@pytest.mark.parametrize(("option", "optimize"), [("-O", 1), ("-OO", 2)])
def test_O_drops_asserts_and_OO_docstrings(
    project: Project, provider: str, option: str, optimize: int
) -> None:
    project.rules("")
    project.write(
        "app.py",
        '''\
        import sys
        def f():
            """doc"""
        assert False, "asserts run"
        print(__debug__, sys.flags.optimize, f.__doc__)
        ''',
    )
    result = project.sb(option, "app.py", provider=provider)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == f"False {optimize} {'doc' if optimize == 1 else None}\n"
    same_outcome(result, project.python(option, "app.py"))


def test_asserts_run_without_O(project: Project, provider: str) -> None:
    project.rules("")
    project.write("app.py", "assert False, 'asserts run'\n")
    result = project.sb("app.py", provider=provider)
    assert result.returncode == 1
    assert result.stderr.endswith("AssertionError: asserts run\n")
    same_outcome(result, project.python("app.py"))


@pytest.mark.parametrize("dont_write", [False, True], ids=["default", "-B"])
def test_B_writes_no_bytecode(project: Project, provider: str, dont_write: bool) -> None:
    project.rules("expose-rw=.\npython-import=helper\n")
    project.write("helper.py", "VALUE = 1\n")
    project.write("app.py", "import helper\nprint(helper.VALUE)\n")
    options = ["-B"] if dont_write else []
    result = project.sb(*options, "app.py", provider=provider)
    assert (result.returncode, result.stdout, result.stderr) == (0, "1\n", "")
    assert (project.root / "__pycache__").exists() is not dont_write


def test_W_error_turns_warnings_into_errors(project: Project, provider: str) -> None:
    project.rules("python-import=warnings\n")
    project.write("app.py", "import warnings\nwarnings.warn('careful')\nprint('went on')\n")
    result = project.sb("-W", "error", "app.py", provider=provider)
    assert result.returncode == 1
    assert result.stderr.endswith("UserWarning: careful\n")
    same_outcome(result, project.python("-W", "error", "app.py"))
    relaxed = project.sb("app.py", provider=provider)
    assert (relaxed.returncode, relaxed.stdout) == (0, "went on\n")


def test_X_dev_shows_resource_warnings(project: Project, provider: str) -> None:
    project.rules("expose-ro=.\npython-import=gc\n")
    project.write("data.txt", "x")
    project.write("app.py", "import gc\nopen('data.txt')\ngc.collect()\nprint('done')\n")
    result = project.sb("-X", "dev", "app.py", provider=provider)
    assert result.returncode == 0, result.stderr
    assert "ResourceWarning: unclosed file" in result.stderr
    quiet = project.sb("app.py", provider=provider)
    assert (quiet.returncode, quiet.stderr) == (0, "")


@pytest.mark.parametrize(
    "provider",
    [
        "subprocess",
        "landlock",
    ],
)
def test_python_environment_variables_configure_the_interpreter_like_python(
    project: Project, provider: str
) -> None:
    project.rules("")
    code = "import sys; print(sys.flags.dont_write_bytecode, sys.flags.optimize)"
    env = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONOPTIMIZE": "1"}
    result = project.sb("-c", code, provider=provider, env=env)
    assert result.stdout == project.python("-c", code, env=env).stdout == "1 1\n"


# ============================================================================================
# Environment
# ============================================================================================

SHOW_ENV = "import os\nprint(repr(dict(os.environ)))\n"


def test_the_program_sees_only_term_without_env_rules(project: Project, provider: str) -> None:
    project.rules("python-import=os\n")
    project.write("app.py", SHOW_ENV)
    host = {"DEMO_SECRET": "x", "TERM": "xterm-test"}
    result = project.sb("app.py", provider=provider, env=host)
    assert result.returncode == 0, result.stderr
    assert ast.literal_eval(result.stdout) == {"TERM": "xterm-test"}
    without_term = project.sb("app.py", provider=provider, env={"DEMO_SECRET": "x"})
    assert ast.literal_eval(without_term.stdout) == {}


@pytest.mark.parametrize("where", ["file", "command line"])
def test_env_rule_passes_a_host_secret(project: Project, provider: str, where: str) -> None:
    rule = "env=DEMO_SECRET=${DEMO_SECRET}"
    project.rules("python-import=os\n" + (rule + "\n" if where == "file" else ""))
    project.write("app.py", SHOW_ENV)
    extra = [f"--{rule}"] if where == "command line" else []
    result = project.sb(*extra, "app.py", provider=provider, env={"DEMO_SECRET": "x"})
    assert result.returncode == 0, result.stderr
    assert ast.literal_eval(result.stdout) == {"DEMO_SECRET": "x"}


def test_env_fixed_values_and_patterns(project: Project, provider: str) -> None:
    project.rules("python-import=os\nenv=APP_MODE=report\nenv=DEMO_*=${DEMO_*}\n")
    project.write("app.py", SHOW_ENV)
    result = project.sb("app.py", provider=provider, env={"DEMO_A": "1", "DEMO_B": "2", "OTHER": "3"})
    assert ast.literal_eval(result.stdout) == {"APP_MODE": "report", "DEMO_A": "1", "DEMO_B": "2"}


def test_unenv_removes_what_env_would_pass(project: Project, provider: str) -> None:
    project.rules("python-import=os\nenv=DEMO_*=${DEMO_*}\nunenv=DEMO_SECRET\n")
    project.write("app.py", SHOW_ENV)
    result = project.sb("app.py", provider=provider, env={"DEMO_SECRET": "x", "DEMO_OTHER": "y"})
    assert result.returncode == 0, result.stderr
    assert ast.literal_eval(result.stdout) == {"DEMO_OTHER": "y"}
    on_command_line = project.sb("--unenv=DEMO_*", "app.py", provider=provider, env={"DEMO_OTHER": "y"})
    assert ast.literal_eval(on_command_line.stdout) == {}


# ============================================================================================
# Shebang
# ============================================================================================


def test_shebang_script_runs_under_the_rule_file_next_to_it(project: Project, tmp_path: Path) -> None:
    assert CONSOLE_SCRIPT.exists(), "the python-sb console script is not installed next to python"
    project.rules("python-import=os\nexpose-ro=.\n", "skill/.py-sandboxes")
    project.write("skill/notes.txt", "hello\n")
    script = project.write(
        "skill/report",
        f"""\
        #!/usr/bin/env -S {CONSOLE_SCRIPT}
        import os, sys
        here = os.path.dirname(__file__)
        print(sys.argv[1:], __name__, open(os.path.join(here, "notes.txt")).read().strip())
        """,
        executable=True,
    )
    result = subprocess.run(
        [str(script), "a", "b"],
        cwd=tmp_path,  # not the script's directory
        env=project.environ,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, "['a', 'b'] __main__ hello\n", "")


def test_shebang_script_is_refused_what_its_rules_do_not_grant(project: Project, tmp_path: Path) -> None:
    project.rules("python-import=os\n", "skill/.py-sandboxes")
    project.write("skill/notes.txt", "hello\n")
    script = project.write(
        "skill/report",
        f"""\
        #!/usr/bin/env -S {CONSOLE_SCRIPT}
        import os
        print(open(os.path.join(os.path.dirname(__file__), "notes.txt")).read())
        """,
        executable=True,
    )
    result = subprocess.run(
        [str(script)], cwd=tmp_path, env=project.environ, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert result.returncode == 1
    assert result.stderr.endswith(
        f"RuleFileNotFoundError: Access to '{project.root / 'skill' / 'notes.txt'}' must be accepted by a rule.\n"
        f"Add `expose-ro={project.root / 'skill'}` to the rule file to allow it.\n"
    )


def test_python3_sb_is_the_same_command(project: Project) -> None:
    python3_sb = BIN / "python3-sb"
    assert python3_sb.exists(), "the python3-sb console script is not installed next to python"
    project.rules("")
    project.write("app.py", SHOW)
    result = subprocess.run(
        [str(python3_sb), "app.py", "x"],
        cwd=project.root,
        env=project.environ,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert result.returncode == 0, result.stderr
    assert (result.stdout, result.stderr) == (project.sb("app.py", "x").stdout, "")


# ============================================================================================
# Security pairs from the command line: works with the rule / refused without it
# ============================================================================================


@pytest.mark.parametrize("allowed", [True, False], ids=["allowed", "refused"])
def test_pair_file_read(project: Project, provider: str, allowed: bool) -> None:
    project.rules("expose-ro=data\n" if allowed else "")
    project.write("data/secret.txt", "s3cret\n")
    project.write("app.py", "print(open('data/secret.txt').read().strip())\n")
    result = project.sb("app.py", provider=provider)
    if allowed:
        assert (result.returncode, result.stdout, result.stderr) == (0, "s3cret\n", "")
    else:
        assert (result.returncode, result.stdout) == (1, "")
        assert result.stderr.endswith(
            "pysandboxes.errors.RuleFileNotFoundError: "
            f"Access to '{project.root / 'data' / 'secret.txt'}' must be accepted by a rule.\n"
            f"Add `expose-ro={project.root / 'data'}` to the rule file to allow it.\n"
        )
        no_own_frames(result.stderr)


@pytest.mark.parametrize("allowed", [True, False], ids=["expose-rw", "expose-ro"])
def test_pair_file_write(project: Project, provider: str, allowed: bool) -> None:
    project.rules("expose-rw=out\n" if allowed else "expose-ro=out\n")
    project.mkdir("out")
    project.write("app.py", "open('out/result.txt', 'w').write('done')\nprint('wrote')\n")
    result = project.sb("app.py", provider=provider)
    if allowed:
        assert (result.returncode, result.stdout, result.stderr) == (0, "wrote\n", "")
        assert (project.root / "out" / "result.txt").read_text() == "done"
    else:
        assert (result.returncode, result.stdout) == (1, "")
        assert result.stderr.endswith(
            "pysandboxes.errors.RulePermissionError: "
            f"Cannot write to '{project.root / 'out' / 'result.txt'}': rule 'expose-ro=out' from "
            ".py-sandboxes(1) exposes it read-only.\n"
            "Add `expose-rw=<directory>` for a directory that may be written.\n"
        )
        assert not (project.root / "out" / "result.txt").exists()


@pytest.mark.parametrize("allowed", [True, False], ids=["allowed", "refused"])
def test_pair_import(project: Project, provider: str, allowed: bool) -> None:
    project.rules("")
    project.write("app.py", "import colorsys\nprint(colorsys.rgb_to_hsv(1, 0, 0))\n")
    extra = ["--python-import=colorsys"] if allowed else []
    result = project.sb(*extra, "app.py", provider=provider)
    if allowed:
        assert (result.returncode, result.stdout, result.stderr) == (0, "(0.0, 1.0, 1)\n", "")
    else:
        assert (result.returncode, result.stdout) == (1, "")
        assert result.stderr.endswith(
            "pysandboxes.errors.RuleModuleNotFoundError: Module named 'colorsys' is not allowed by a rule\n"
            "Add `python-import=colorsys` to the rule file to allow it.\n"
        )


SHELL_DIR = os.path.dirname(os.path.realpath("/bin/sh"))


@pytest.mark.parametrize("allowed", [True, False], ids=["allowed", "refused"])
def test_pair_os_system(project: Project, provider: str, allowed: bool) -> None:
    # under landlock the shell itself must be readable: its directory is exposed in both cases
    project.rules(f"python-import=os\nexpose-ro={SHELL_DIR}\n")
    project.write("app.py", "import os\nstatus = os.system('echo from-the-shell')\nprint('status', status)\n")
    extra = ["--python-api=ALLOW:process-exec"] if allowed else []
    result = project.sb(*extra, "app.py", provider=provider)
    if allowed:
        assert (result.returncode, result.stdout, result.stderr) == (0, "from-the-shell\nstatus 0\n", "")
    else:
        assert (result.returncode, result.stdout) == (1, "")
        assert result.stderr.endswith(
            "pysandboxes.errors.RuleApiPermissionError: os.system() is denied by the API guard "
            "(category: process-exec).\n"
            "Add `python-api=ALLOW:os.system` for this function only, or `python-api=ALLOW:process-exec` "
            "for the whole category.\n"
        )


@pytest.fixture
def server() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that accepts connections (the kernel's backlog does the work)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield listener.getsockname()[1]


CONNECT = """\
import socket
s = socket.socket()
s.connect(("127.0.0.1", {port}))
print("connected")
s.close()
"""
#: the standard library's own imports (socket importing selectors) need no rule of their own
SOCKET_IMPORTS = "python-import=socket\n"


@pytest.mark.parametrize("allowed", [True, False], ids=["allowed", "refused"])
def test_pair_loopback_connect(project: Project, provider: str, server: int, allowed: bool) -> None:
    project.rules(SOCKET_IMPORTS)
    project.write("app.py", CONNECT.format(port=server))
    extra = [f"--net=ALLOW|tcp|127.0.0.1|{server}|OUT"] if allowed else []
    result = project.sb(*extra, "app.py", provider=provider)
    if allowed:
        assert (result.returncode, result.stdout, result.stderr) == (0, "connected\n", "")
    else:
        assert (result.returncode, result.stdout) == (1, "")
        assert result.stderr.endswith(
            "pysandboxes.errors.RuleSocketConnectionRefusedError: "
            f"Connection to [127.0.0.1]:{server} DENIED by implicit default policy\n"
            f"Add `net=ALLOW|tcp|127.0.0.1|{server}|OUT` to allow it.\n"
        )


@pytest.mark.parametrize("allowed", [True, False], ids=["allowed", "refused"])
def test_pair_env_secret(project: Project, provider: str, allowed: bool) -> None:
    project.rules("python-import=os\n")
    project.write("app.py", "import os\nprint(os.environ.get('DEMO_SECRET', 'absent'))\n")
    extra = ["--env=DEMO_SECRET=${DEMO_SECRET}"] if allowed else []
    result = project.sb(*extra, "app.py", provider=provider, env={"DEMO_SECRET": "x"})
    assert (result.returncode, result.stdout, result.stderr) == (0, "x\n" if allowed else "absent\n", "")


@pytest.mark.parametrize("provider_line", PROVIDERS)
def test_os_sandbox_line_of_the_rule_file_picks_the_provider(project: Project, provider_line: str) -> None:
    """Under landlock the kernel refuses a shell's read of a file no rule exposes; under
    subprocess nothing but the Python layer watches, and the shell is outside it."""
    project.rules(
        f"os-sandbox={provider_line}\npython-import=os\npython-api=ALLOW:process-exec\nexpose-ro={SHELL_DIR}\n"
    )
    project.write("hidden/secret.txt", "s3cret\n")
    project.write("app.py", "import os\nprint('status', os.system('cat hidden/secret.txt 2>/dev/null'))\n")
    result = project.sb("app.py")
    assert result.returncode == 0, result.stderr
    if provider_line == "landlock":
        assert result.stdout == f"status {1 << 8}\n"  # cat: Permission denied
    else:
        assert result.stdout == "s3cret\nstatus 0\n"


def test_a_codec_not_loaded_yet_works_like_python(project: Project, provider: str) -> None:
    """The codec machinery imports ``encodings.cp1252`` on first use: the interpreter's own
    import, not the program's (before the stdlib exemption it was refused and surfaced as
    ``LookupError: unknown encoding: cp1252``, with no hint)."""
    project.rules("")
    code = "print('é'.encode('cp1252'))"
    result = project.sb("-c", code, provider=provider)
    assert (result.returncode, result.stdout, result.stderr) == (0, "b'\\xe9'\n", "")
    same_outcome(result, project.python("-c", code))


def test_create_connection_by_numeric_address_works_with_the_net_rule(
    project: Project, provider: str, server: int
) -> None:
    project.rules(SOCKET_IMPORTS + f"net=ALLOW|tcp|127.0.0.1|{server}|OUT\n")
    project.write(
        "app.py",
        f"import socket\nwith socket.create_connection(('127.0.0.1', {server}), timeout=10):\n    print('connected')\n",
    )
    result = project.sb("app.py", provider=provider)
    assert (result.returncode, result.stdout, result.stderr) == (0, "connected\n", "")
