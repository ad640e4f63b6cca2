"""The sensitive-API guard under ``python-sb``: ``python-api=`` over the registry's categories.

Every category is refused by default whatever ``python-import=`` allows, and granted by its
category name or by the function's own name. ``expose-ro=/usr/bin`` lets landlock run ``sh``
so that ``os.system`` returns the same status under both providers.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

import pytest

# category: (function named in the refusal and in a function grant, imports, call)
CALLS: dict[str, tuple[str, str, str]] = {
    "process-exec": ("os.system", "os", 'os.system("exit 3") >> 8'),
    "process-control": ("os.kill", "os", "os.kill(os.getpid(), 0)"),
    "privileges": ("os.umask", "os", "(os.umask(0o077), os.umask(0o022))[1]"),
    "threads": ("threading.Thread.start", "threading", "start_and_join()"),
    "native": ("ctypes.CDLL", "ctypes", 'type(ctypes.CDLL("libc.so.6")).__name__'),
    "introspection": ("sys.settrace", "sys", "sys.settrace(None)"),
    "dynamic-code": ("builtins.eval", "sys", 'eval("1+1")'),
    "deserialization": ("pickle.loads", "pickle", "pickle.loads(pickle.dumps([1, 2]))"),
}
RESULTS = {
    "process-exec": "OK 3",
    "process-control": "OK",
    "privileges": "OK 63",
    "threads": "OK ['ran']",
    "native": "OK 'CDLL'",
    "introspection": "OK",
    "dynamic-code": "OK 2",
    "deserialization": "OK [1, 2]",
}
THREAD = """
def start_and_join():
    import threading
    done = []
    t = threading.Thread(target=lambda: done.append("ran"))
    t.start()
    t.join()
    return done
"""


def refused(function: str, category: str) -> str:
    return f"RuleApiPermissionError: {function}() is denied by the API guard (category: {category})."


def run_call(project: Any, provider: str, category: str, grant: str | None) -> Any:
    _function, module, call = CALLS[category]
    program = f"import {module}\n{THREAD}attempt({category!r}, lambda: {call})\n"
    rules = f"expose-ro=/usr/bin\npython-import={module}" + (f"\npython-api=ALLOW:{grant}" if grant else "")
    return project.run(program, rules, provider=provider)


@pytest.mark.parametrize("category", list(CALLS))
def test_every_category_is_refused_by_default(project: Any, provider: str, category: str) -> None:
    run = run_call(project, provider, category, None)
    assert run.outcomes() == {category: refused(CALLS[category][0], category)}


@pytest.mark.parametrize("category", list(CALLS))
def test_a_category_grant_allows_its_functions(project: Any, provider: str, category: str) -> None:
    run = run_call(project, provider, category, category)
    assert run.outcomes() == {category: RESULTS[category]}


@pytest.mark.parametrize(
    "category",
    [c for c in CALLS],
)
def test_a_function_grant_allows_that_function(project: Any, provider: str, category: str) -> None:
    run = run_call(project, provider, category, CALLS[category][0])
    assert run.outcomes() == {category: RESULTS[category]}


def test_the_hint_of_an_api_refusal(project: Any, provider: str) -> None:
    run = project.run('eval("1+1")\n', "", provider=provider)
    assert run.returncode == 1
    assert run.stderr.endswith(
        f"pysandboxes.errors.{refused('builtins.eval', 'dynamic-code')}\n"
        "Add `python-api=ALLOW:builtins.eval` for this function only, or "
        "`python-api=ALLOW:dynamic-code` for the whole category.\n"
    )


def test_a_function_deny_beats_its_category_grant(project: Any, provider: str) -> None:
    program = """
    import os, subprocess
    attempt("os.system", os.system, "true")
    attempt("subprocess.run", lambda: subprocess.run(["true"]).returncode)
    attempt("os.posix_spawn", lambda: os.waitpid(os.posix_spawn("/bin/true", ["true"], {}), 0)[1])
    """
    rules = """
    expose-ro=/usr/bin
    python-import=os, subprocess
    python-api=ALLOW:process-exec
    python-api=DENY:os.system
    """
    run = project.run(program, rules, provider=provider)
    assert run.outcomes() == {  # the refusal names the rule that said no (file and line), no hint
        "os.system": "RuleApiPermissionError: os.system() (category: process-exec) DENIED by explicit "
        "rule 'python-api=DENY:os.system' from .py-sandboxes(4)",
        "subprocess.run": "OK 0",
        "os.posix_spawn": "OK 0",
    }


def test_an_import_right_is_not_a_call_right(project: Any, provider: str) -> None:
    program = """
    import subprocess
    attempt("subprocess.run", subprocess.run, ["true"])
    """
    run = project.run(program, "python-import=*", provider=provider)
    assert run.outcomes() == {"subprocess.run": refused("subprocess.Popen", "process-exec")}


def test_library_code_generation_works_while_the_program_cannot_eval(project: Any, provider: str) -> None:
    program = """
    import collections, dataclasses
    @dataclasses.dataclass(frozen=True)
    class Point:
        x: int
        y: int = 2
    attempt("dataclass", lambda: Point(1))
    attempt("make_dataclass", lambda: dataclasses.make_dataclass("P", ["a"])(1))
    attempt("namedtuple", lambda: collections.namedtuple("Pair", "a b")(1, 2))
    attempt("eval", eval, "1+1")
    attempt("exec", exec, "x = 1")
    attempt("compile", compile, "1", "<s>", "eval")
    """
    run = project.run(program, "python-import=collections, dataclasses", provider=provider)
    assert run.outcomes() == {
        "dataclass": "OK Point(x=1, y=2)",
        "make_dataclass": "OK P(a=1)",
        "namedtuple": "OK Pair(a=1, b=2)",
        "eval": refused("builtins.eval", "dynamic-code"),
        "exec": refused("builtins.exec", "dynamic-code"),
        "compile": refused("builtins.compile", "dynamic-code"),
    }


# -- code objects: the standard library builds them, the program needs a grant ----------------


def test_the_standard_library_builds_code_objects_without_a_grant(project: Any, provider: str) -> None:
    # types.coroutine (imported by asyncio) and unittest.mock call code.replace(); nothing here
    # may need python-api=ALLOW:builtins.compile
    program = """
    import asyncio, dataclasses, types, unittest.mock
    async def answer():
        await asyncio.sleep(0)
        return 42
    @types.coroutine
    def legacy():
        yield
    @dataclasses.dataclass
    class Point:
        x: int
    attempt("asyncio.run", asyncio.run, answer())
    attempt("types.coroutine", lambda: bool(legacy.__code__.co_flags & 0x100))
    attempt("unittest.mock", lambda: unittest.mock.MagicMock(return_value=7)())
    attempt("AsyncMock", lambda: asyncio.run(unittest.mock.AsyncMock(return_value=8)()))
    attempt("dataclass", lambda: Point(1))
    """
    run = project.run(program, "python-import=asyncio, dataclasses, types, unittest", provider=provider)
    assert run.outcomes() == {
        "asyncio.run": "OK 42",
        "types.coroutine": "OK True",
        "unittest.mock": "OK 7",
        "AsyncMock": "OK 8",
        "dataclass": "OK Point(x=1)",
    }


CODE_OBJECTS = """
import types
def f():
    return 42
def forged():
    # LOAD_CONST 200 of a function with one constant: reads memory outside the tuple if it runs
    return types.CodeType(0, 0, 0, 0, 1, 0, bytes([151, 0, 100, 200, 83, 0]), (None,), (), (), "x.py",
                          "forged", "forged", 1, b"", b"")
def renamed():
    return types.FunctionType(f.__code__.replace(co_name="renamed"), {})
attempt("CodeType", lambda: type(forged()).__name__)
attempt("replace", lambda: (renamed().__code__.co_name, renamed()()))
"""


@pytest.mark.parametrize("granted", [False, True], ids=["refused", "granted"])
def test_the_program_builds_code_objects_only_with_a_grant(
    project: Any, provider: str, granted: bool
) -> None:
    rules = "python-import=types"
    if granted:
        rules += "\npython-api=ALLOW:types.CodeType"
    run = project.run(CODE_OBJECTS, rules, provider=provider)
    if granted:  # built, never run: the forged one would read out of bounds
        assert run.outcomes() == {
            "CodeType": "OK 'code'",
            "replace": "OK ('renamed', 42)",
        }
    else:
        assert run.outcomes() == {
            "CodeType": refused("types.CodeType", "dynamic-code"),
            "replace": refused("types.CodeType", "dynamic-code"),
        }


def test_the_hint_of_a_code_object_refusal(project: Any, provider: str) -> None:
    run = project.run('(lambda: 1).__code__.replace(co_name="g")\n', "", provider=provider)
    assert run.returncode == 1
    assert run.stderr.endswith(
        f"pysandboxes.errors.{refused('types.CodeType', 'dynamic-code')}\n"
        "Add `python-api=ALLOW:types.CodeType` for this function only, or "
        "`python-api=ALLOW:dynamic-code` for the whole category.\n"
    )


def test_the_program_imports_pysandboxes_and_calls_sandbox_functions_directly(
    project: Any, provider: str
) -> None:
    program = """
    from pysandboxes import SandBoxError, is_in_sandbox, sandbox
    @sandbox
    def add(a, b):
        return a + b
    attempt("is_in_sandbox", is_in_sandbox)
    attempt("@sandbox", add, 40, 2)
    attempt("SandBoxError", lambda: issubclass(SandBoxError, RuntimeError))
    """
    run = project.run(program, "", provider=provider)
    assert run.outcomes() == {"is_in_sandbox": "OK True", "@sandbox": "OK 42", "SandBoxError": "OK True"}


# -- subinterpreters: no audit hook of ours runs there ---------------------------------------------

SUBINTERPRETERS = """
import _imp, _testcapi, _xxsubinterpreters, importlib.util, test.support
def code(label):
    return (
        "try:\\n"
        "    with open(" + repr("@SECRET@/secret.txt") + ") as f: seen = f.read().strip()\\n"
        "except OSError as e:\\n"
        "    seen = type(e).__name__\\n"
        "print(" + repr(label + " reads -> ") + " + seen, flush=True)\\n"
    )
def fresh_module():
    fresh = _imp.create_dynamic(importlib.util.find_spec("_xxsubinterpreters"))
    return fresh.run_string(fresh.create(), code("fresh"))
attempt("_xxsubinterpreters", lambda: _xxsubinterpreters.run_string(_xxsubinterpreters.create(), code("sub")))
attempt("_testcapi", _testcapi.run_in_subinterp, code("capi"))
attempt("test.support", test.support.run_in_subinterp, code("support"))
attempt("fresh module", fresh_module)
"""


@pytest.mark.parametrize("granted", [False, True], ids=["refused", "granted"])
def test_a_subinterpreter_needs_a_process_exec_grant(project: Any, provider: str, granted: bool) -> None:
    rules = "python-import=*" + ("\npython-api=ALLOW:process-exec" if granted else "")
    run = project.run(SUBINTERPRETERS, rules, provider=provider)
    if granted:  # outside the Python layer: only the kernel (landlock) keeps the file closed
        seen = "TOPSECRET" if provider == "subprocess" else "PermissionError"
        assert run.outcomes() == {
            "sub reads": seen,
            "_xxsubinterpreters": "OK",
            "capi reads": seen,
            "_testcapi": "OK 0",
            "support reads": seen,
            "test.support": "OK 0",
            "fresh reads": seen,
            "fresh module": "OK",
        }
    else:
        assert run.outcomes() == {
            "_xxsubinterpreters": refused("_xxsubinterpreters.create", "process-exec"),
            "_testcapi": refused("_testcapi.run_in_subinterp", "process-exec"),
            "test.support": refused("_testcapi.run_in_subinterp", "process-exec"),
            # a fresh copy of the module escapes the wrapper, not the audit event (whose refusal
            # the module reports in its own words)
            "fresh module": "RuntimeError: interpreter creation failed",
        }


# -- a granted process start: the program it runs must be exposed ---------------------------------

#: what the sandboxed program's PATH finds (no env= rule passes PATH: os.defpath)
SHELL = os.path.realpath("/bin/sh")
ECHO = os.path.realpath(shutil.which("echo", path=os.defpath) or "/bin/echo")
TRUE = os.path.realpath(shutil.which("true", path=os.defpath) or "/bin/true")

PROGRAM_STARTS = """
import os, subprocess
attempt("os.system", lambda: os.system("exit 3") >> 8)
attempt("os.popen", lambda: os.popen("echo x").read())
attempt("subprocess.run", lambda: subprocess.run(["echo", "x"], capture_output=True, text=True).stdout)
attempt("shell=True", lambda: subprocess.run("exit 4", shell=True).returncode)
attempt("posix_spawnp", lambda: os.waitpid(os.posix_spawnp("true", ["true"], {}), 0)[1])
attempt("script", lambda: subprocess.run(["@DATA@/tool.sh"]).returncode)
attempt("missing", subprocess.run, ["no-such-program-here"])
def execv():
    pid = os.fork()
    if pid == 0:  # the child reports the refusal, the parent its exit status
        attempt("os.execv in the child", os.execv, "/bin/true", ["true"])
        os._exit(7)
    return os.waitpid(pid, 0)[1] >> 8
attempt("os.execv", execv)
"""


def cannot_run(shown: str, path: str) -> str:
    return f"RuleFileNotFoundError: Cannot run {shown}: Access to '{path}' must be accepted by a rule."


@pytest.mark.parametrize("exposed", [False, True], ids=["not-exposed", "exposed"])
def test_a_granted_program_start_needs_the_program_exposed(
    project: Any, provider: str, exposed: bool
) -> None:
    script = project.data / "tool.sh"
    script.write_text("#!/bin/sh\nexit 5\n")
    script.chmod(0o755)
    rules = "python-import=os, subprocess\npython-api=ALLOW:process-exec\nexpose-ro=@DATA@"
    directories = sorted({os.path.dirname(p) for p in (SHELL, ECHO, TRUE)})
    if exposed:
        rules += "".join(f"\nexpose-ro={d}" for d in directories)
    run = project.run(PROGRAM_STARTS, rules, provider=provider)
    missing = "FileNotFoundError: [Errno 2] No such file or directory: 'no-such-program-here'"
    if exposed:
        assert run.outcomes() == {
            "os.system": "OK 3",
            "os.popen": "OK 'x\\n'",
            "subprocess.run": "OK 'x\\n'",
            "shell=True": "OK 4",
            "posix_spawnp": "OK 0",
            "script": "OK 5",
            "missing": missing,
            "os.execv": "OK 0",
        }
    else:  # the same under subprocess and landlock: the Python layer refuses before the kernel
        assert run.outcomes() == {
            "os.system": cannot_run("'/bin/sh'", SHELL),
            "os.popen": cannot_run("'/bin/sh'", SHELL),
            "subprocess.run": cannot_run("'echo'", ECHO),
            "shell=True": cannot_run("'/bin/sh'", SHELL),
            "posix_spawnp": cannot_run("'true'", TRUE),
            "script": cannot_run(f"'{script}' (its interpreter '/bin/sh')", SHELL),
            "missing": missing,
            "os.execv in the child": cannot_run("'/bin/true'", TRUE),
            "os.execv": "OK 7",
        }


def test_the_hint_of_a_program_start_refusal(project: Any, provider: str) -> None:
    rules = "python-import=subprocess\npython-api=ALLOW:subprocess.Popen"
    run = project.run('import subprocess\nsubprocess.run(["echo", "x"])\n', rules, provider=provider)
    assert run.returncode == 1
    assert run.stderr.endswith(
        f"pysandboxes.errors.{cannot_run(repr('echo'), ECHO)}\n"
        f"Add `expose-ro={os.path.dirname(ECHO)}` to the rule file to allow it.\n"
    )
