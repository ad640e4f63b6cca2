"""End to end: programs under ``python-sb`` whose rules carry ``eval-*`` keys."""

from __future__ import annotations

from typing import Any

CALCULATOR = "eval-namespace=closed\neval-syntax=arith, compare\neval-timeout=2s"

PROGRAM = """
def attempt(label, source):
    try:
        print(label, "->", eval(source))
    except BaseException as e:
        print(label, "->", type(e).__name__ + ":", str(e).splitlines()[0])

attempt("calc", "2*(3+4)")
attempt("call", "__import__('os').system('echo escaped')")
attempt("walk", "().__class__.__bases__[0].__subclasses__()")
attempt("list", "[x for x in (1, 2)]")
code = compile("6 * 7", "<calc>", "eval")
attempt("code", code)
try:
    exec((lambda: 0).__code__)
except PermissionError as e:
    print("foreign code ->", type(e).__name__ + ":", str(e).splitlines()[0])
"""


def test_the_calculator_under_python_sb(project: Any, provider: str) -> None:
    run = project.run(PROGRAM, CALCULATOR, provider)
    assert run.lines() == [
        "calc -> 14",
        "call -> EvalSyntaxRejected: The name '__import__' is never allowed in evaluated code "
        "(it reaches the interpreter's internals) (eval profile: default).",
        "walk -> EvalSyntaxRejected: The attribute '__subclasses__' is never allowed in evaluated code "
        "(it reaches frames, code, globals or the class graph) (eval profile: default).",
        "list -> EvalSyntaxRejected: ListComp is not allowed in evaluated code (eval profile: default).",
        "code -> 42",
        "foreign code -> RuleApiPermissionError: builtins.exec() is denied by the API guard "
        "(category: dynamic-code).",
    ]


def test_without_eval_rules_eval_exec_compile_are_refused(project: Any) -> None:
    program = """
    for f, arg in ((eval, "1"), (exec, "x = 1"), (compile, ("1", "<s>", "eval"))):
        try:
            f(*arg) if isinstance(arg, tuple) else f(arg)
        except PermissionError as e:
            print(str(e).splitlines()[0])
    """
    assert project.run(program, "").lines() == [
        f"builtins.{n}() is denied by the API guard (category: dynamic-code)."
        for n in ("eval", "exec", "compile")
    ]


def test_an_uncaught_interrupt_ends_the_program(project: Any) -> None:
    run = project.run("eval('10 ** 10 ** 10')\nprint('not reached')", CALCULATOR)
    assert run.returncode == 1
    assert run.stdout == ""
    assert run.stderr.splitlines()[-1] == (
        "pysandboxes.errors.EvalInterrupted: The evaluated code would allocate more than "
        "eval-max-alloc=10MB and was interrupted (eval profile: default)."
    )


def test_library_code_generation_still_works(project: Any, provider: str) -> None:
    program = """
    import dataclasses, collections, typing, enum
    @dataclasses.dataclass(frozen=True)
    class P:
        x: int
        y: int = 2
    T = collections.namedtuple("T", "a b")
    class N(typing.NamedTuple):
        a: int
    class D(typing.TypedDict):
        k: str
    class Color(enum.Enum):
        RED = 1
    print(P(1), T(1, 2), N(3), D(k="v"), Color.RED, eval("1 + 1"))
    """
    rules = f"{CALCULATOR}\npython-import=dataclasses, collections, typing, enum"
    assert project.run(program, rules, provider).lines() == [
        "P(x=1, y=2) T(a=1, b=2) N(a=3) {'k': 'v'} Color.RED 2"
    ]


def test_exec_namespaces(project: Any) -> None:
    program = """
    ns = {"base": 10}
    exec("total = base * 2", ns)
    print(ns["total"])
    x = 5
    try:
        eval("x + 1")
    except NameError as e:
        print("closed:", e)
    """
    rules = "eval-syntax=arith, assign"
    assert project.run(program, rules).lines() == ["20", "closed: name 'x' is not defined"]
    assert (
        project.run(program.replace("closed", "caller"), f"{rules}\neval-namespace=caller").lines()[0] == "20"
    )
    program = "x = 5\nexec('y = x + 1')\nprint(y)\n"
    assert project.run(program, f"{rules}\neval-namespace=caller").lines() == ["6"]


def test_named_profiles_and_guarded_eval(project: Any) -> None:
    program = """
    from pysandboxes import guarded_eval
    print(guarded_eval("len(xs) * 2", profile="llm", namespace={"xs": [1, 2]}))
    try:
        guarded_eval("1", profile="nope")
    except ValueError as e:
        print(e)
    try:
        eval("1 + 1")
    except PermissionError as e:
        print(*str(e).splitlines(), sep=chr(10))
    """
    rules = "eval-syntax:llm=arith\neval-call:llm=len"
    assert project.run(program, rules).lines() == [
        "4",
        "unknown eval profile 'nope', configured: ['llm']",
        "builtins.eval() is denied by the API guard (category: dynamic-code).",
        "The program's eval(), exec() and compile() run code under the default eval-* profile "
        "(`eval-KEY=` lines; none without them), a named profile through "
        "pysandboxes.guarded_eval(source, profile=NAME); this call went around them.",
    ]


def test_the_eval_layer_is_not_loaded_at_start_up(project: Any) -> None:
    program = "import sys\nprint('pysandboxes.evaluation' in sys.modules)\neval('1')\nprint('pysandboxes.evaluation' in sys.modules)"
    assert project.run(program, CALCULATOR).lines() == ["False", "True"]


def test_an_eval_profile_with_an_unguarded_grant_is_a_load_error(project: Any) -> None:
    run = project.run("print(1)", f"{CALCULATOR}\npython-api=ALLOW:dynamic-code")
    assert run.returncode == 2
    assert "is never applied: " in run.stderr
    assert "run unguarded; remove the eval-* lines or the python-api grant" in run.stderr


def test_a_costly_big_integer_operation_is_refused_under_python_sb(project: Any, provider: str) -> None:
    program = """
    def attempt(source):
        try:
            print(eval(source) == 7**1500 * 7**1500 // (7**1500 + 1))
        except BaseException as e:
            print(type(e).__name__, e.budget, str(e).split(":")[0])

    attempt("7**1500 * 7**1500 // (7**1500 + 1)")
    attempt("7**1500000 * 7**1500000 // (7**1500000 + 1)")
    """
    moderate, huge = project.run(program, CALCULATOR, provider).lines()
    assert moderate == "True"
    # the product, or the second power on a machine slow enough to use most of the 2 s first
    assert huge in (
        "EvalInterrupted timeout The evaluated code was interrupted before `*` of a 4211033-bit "
        "integer by a 4211033-bit integer",
        "EvalInterrupted timeout The evaluated code was interrupted before `**` of a 3-bit "
        "integer to the power 1500000",
    )
