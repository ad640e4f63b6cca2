"""The sealed functions: no name lookups, no closures, nothing mutable within reach.

The families are built in this process from a loaded policy (building arms nothing); the
functions ``arm()`` itself seals (the hook, the refusal logger, the ``__setattr__`` guard) are
checked in a child process that really arms. The same analysis (``ANALYSIS``) runs in both.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pysandboxes.guards import api as api_guard
from pysandboxes.guards import files as file_guard
from pysandboxes.guards import imports as import_guard
from pysandboxes.guards import network as net_guard
from pysandboxes.guards._seal import SEALED_GLOBALS, seal, sealed_functions

ANALYSIS = '''
import dis, gc, re, types, _thread
from pysandboxes.guards._seal import SEALED_GLOBALS

#: every way to reach a name or a cell: a sealed function may use none of them
FORBIDDEN = frozenset({
    "LOAD_GLOBAL", "STORE_GLOBAL", "DELETE_GLOBAL", "LOAD_NAME", "STORE_NAME", "DELETE_NAME",
    "LOAD_DEREF", "STORE_DEREF", "DELETE_DEREF", "LOAD_CLASSDEREF", "LOAD_CLOSURE", "MAKE_CELL",
    "COPY_FREE_VARS", "IMPORT_NAME", "IMPORT_FROM", "IMPORT_STAR",
})
SCALARS = (type(None), bool, int, float, complex, str, bytes)
CALLABLES = (
    types.BuiltinFunctionType,  # C functions and methods of modules and types (posix.lstat)
    types.MethodWrapperType,  # _socket.socket.family.__get__
    types.WrapperDescriptorType,  # str.__str__
    types.MethodDescriptorType,  # bytes.decode
    types.ClassMethodDescriptorType,
    type(re.compile("").match),  # a compiled pattern's bound method
)
LRU = type(__import__("functools").lru_cache()(lambda: None))


def name_of(f):
    return f"{f.__module__}.{f.__qualname__}"


def bytecode_problems(f):
    problems = []
    todo = [f.__code__]
    while todo:
        code = todo.pop()
        if code.co_freevars or code.co_cellvars:
            problems.append(f"{name_of(f)}: cells {code.co_freevars + code.co_cellvars}")
        for ins in dis.get_instructions(code):
            if ins.opname in FORBIDDEN:
                problems.append(f"{name_of(f)}: {ins.opname} {ins.argval}")
        todo.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    if f.__globals__ is not SEALED_GLOBALS:
        problems.append(f"{name_of(f)}: not over the sealed globals")
    if f.__closure__ is not None or f.__kwdefaults__:
        problems.append(f"{name_of(f)}: closure or keyword-only defaults")
    return problems


def immutable_problems(value, where, seen=None):
    """Why ``value`` (a default of a sealed function, or something inside one) is mutable."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return []
    seen.add(id(value))
    if isinstance(value, SCALARS) or isinstance(value, type):
        return []
    if type(value) in (tuple, frozenset):
        return [p for i, v in enumerate(value) for p in immutable_problems(v, f"{where}[{i}]", seen)]
    if type(value) is types.MappingProxyType:  # `proxy == obj`, `proxy | obj` hand the dict to obj
        return [f"{where}: a mappingproxy gives its dict away"]
    if type(value) is types.FunctionType:
        return [] if value.__globals__ is SEALED_GLOBALS else [f"{where}: unsealed function {name_of(value)}"]
    if type(value) is LRU:  # its cache cannot be written from Python; what it calls must be sealed
        wrapped = getattr(value, "__wrapped__", None)
        if wrapped is None:  # built from the C type directly: no __wrapped__
            wrapped = [r for r in gc.get_referents(value) if callable(r)][0]
        return immutable_problems(wrapped, f"{where}.__wrapped__", seen)
    if isinstance(value, CALLABLES):
        # A C callable cannot be rewritten. Bound to a mappingproxy it gives the dict away; bound
        # to sys.modules (the refusal logger finds `logging` there) it only picks who logs.
        owner = getattr(value, "__self__", None)
        if type(owner) is types.MappingProxyType:
            return immutable_problems(owner, f"{where}.__self__", seen)
        return []
    if value is SEALED_GLOBALS:
        return []  # compared by identity only (the __setattr__ guard recognises sealed functions)
    if type(value) is _thread.LockType:
        return []  # the refusal logger's re-entry lock: it mutes logging, it decides nothing
    return [f"{where}: {type(value).__name__} is mutable"]


def problems_of(functions):
    found = []
    for f in functions:
        found += bytecode_problems(f)
        for i, value in enumerate(f.__defaults__ or ()):
            found += immutable_problems(value, f"{name_of(f)}.__defaults__[{i}]")
    return found
'''

analysis: dict[str, Any] = {}
exec(ANALYSIS, analysis)
problems_of: Callable[[Any], list[str]] = analysis["problems_of"]

RULES = """\
expose-ro=./data
expose-rw=./output
ignore=.env
ignore=./data/private
net=ALLOW|tcp|127.0.0.1|8000|OUT
net=ALLOW|udp,tcp|::1|53|OUT
net=ALLOW|tcp|example.invalid|443|OUT
net=DENY|*|10.0.0.0/8|*|OUT
python-import=json, csv
python-api=ALLOW:threads
python-api=DENY:threading.settrace
"""


@pytest.fixture
def policy(rules: Any) -> Any:
    rules.mkdir("data")
    rules.mkdir("output")
    return rules.load(RULES)


def made_by(build: Callable[[], object]) -> tuple[Any, ...]:
    before = len(sealed_functions())
    build()
    made = sealed_functions()[before:]
    assert made, "the build sealed nothing"
    return made


def build_family(family: str, policy: Any, tmp_path: Path) -> tuple[Any, ...]:
    check = file_guard.build(policy).check
    builders: dict[str, Callable[[], object]] = {
        "files": lambda: file_guard.build(policy, program_files=[str(tmp_path / "prog.py")]),
        "network": lambda: net_guard.build(policy, check),
        "imports": lambda: import_guard.build(policy, ()),
        "api": lambda: api_guard.build(policy, import_guard.library_prefixes()),
    }
    return made_by(builders[family])


FAMILIES = ["files", "network", "imports", "api"]


@pytest.mark.parametrize("family", FAMILIES)
def test_every_sealed_function_of_a_family_is_sealed(family: str, policy: Any, tmp_path: Path) -> None:
    functions = build_family(family, policy, tmp_path)
    assert problems_of(functions) == []


def test_the_sealed_globals_have_no_builtins() -> None:
    assert SEALED_GLOBALS == {"__builtins__": {}, "__name__": "pysandboxes.guards"}


ARMED_CHILD = """
import json, sys
from pysandboxes.rules import load_policy
from pysandboxes.guards import arm
from pysandboxes.guards._seal import sealed_functions
exec({analysis!r})
# gc.get_referents (introspection) finds what a C lru_cache wraps
policy = load_policy(
    {rule_file!r}, environ={{"HOME": {home!r}}}, cwd={cwd!r}, extra_rules=[("python-api", "ALLOW:gc.get_referents")]
)
arm(policy)
functions = sealed_functions()
print(json.dumps({{"names": sorted({{f.__name__ for f in functions}}), "problems": problems_of(functions)}}))
"""


def test_every_function_arm_seals_is_sealed(rules: Any) -> None:
    rules.mkdir("data")
    rules.mkdir("output")
    rule_file = rules.write(RULES)
    child = ARMED_CHILD.format(
        analysis=ANALYSIS, rule_file=str(rule_file), home=str(rules.home), cwd=str(rules.root)
    )
    done = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, timeout=60, cwd=rules.root
    )
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    report = json.loads(done.stdout)
    assert {"_hook", "_on_setattr", "_check", "_judge", "_on_import", "_refuse"} <= set(report["names"])
    assert report["problems"] == []


# -- seal() itself ---------------------------------------------------------------------------------


def _template(value, _state=None):  # type: ignore[no-untyped-def]
    return (value, _state)


def test_seal_binds_the_state_as_defaults() -> None:
    sealed = seal(_template, _state=frozenset({1}))
    assert sealed(0) == (0, frozenset({1}))
    assert sealed.__defaults__ == (frozenset({1}),)
    assert sealed.__globals__ is SEALED_GLOBALS
    assert sealed.__code__ is _template.__code__
    assert problems_of([sealed]) == []


def test_seal_refuses_a_closure() -> None:
    captured = 1

    def uses_a_cell(_state=None):  # type: ignore[no-untyped-def]
        return captured

    with pytest.raises(TypeError) as info:
        seal(uses_a_cell, _state=1)
    assert str(info.value) == (
        "test_seal_refuses_a_closure.<locals>.uses_a_cell uses a closure: bind its state as defaults"
    )


def test_seal_refuses_an_unknown_name() -> None:
    with pytest.raises(TypeError) as info:
        seal(_template, _state=1, _other=2)
    assert str(info.value) == "_template: unknown parameters ['_other']"


def test_seal_refuses_missing_state() -> None:
    with pytest.raises(TypeError) as info:
        seal(_template)
    assert str(info.value) == "_template: no value for _state"


def test_the_analysis_sees_a_global_lookup_and_mutable_state() -> None:
    # The checker itself: a template that forgets to bind a builtin, and a mutable default.
    def looks_up(value, _state=None):  # type: ignore[no-untyped-def]
        return len(value)

    assert problems_of([seal(looks_up, _state=[])]) == [
        f"{__name__}.test_the_analysis_sees_a_global_lookup_and_mutable_state.<locals>.looks_up: "
        "LOAD_GLOBAL len",
        f"{__name__}.test_the_analysis_sees_a_global_lookup_and_mutable_state.<locals>.looks_up"
        ".__defaults__[0]: list is mutable",
    ]
