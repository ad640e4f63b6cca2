"""Classic escapes from Python jails, one test each, under a generous profile: every syntax
group, common builtins (getattr, type, dir, format… included), the string/list/dict methods,
``format`` granted by name, a few modules. Each must be refused (``EvalSyntaxRejected``,
before or while it runs) and never reach frames, globals, builtins or the class graph."""

from __future__ import annotations

from typing import Any

import pytest

from pysandboxes.errors import EvalSyntaxRejected

GENEROUS = """
eval-syntax=arith, compare, conditional, loop, comprehension, assign, func, async, class
eval-syntax=exception, context, import, subscript, fstring, yield
eval-call=len, getattr, hasattr, setattr, delattr, type, dir, print, str, repr, isinstance, range
eval-call=sorted, format, iter, next, list, dict, tuple, object, id, super, math.sqrt
eval-attribute=str-methods, list-methods, dict-methods, format, format_map, send, close, throw, x
eval-import=math, re, string, operator, fractions, contextlib
eval-magic=__init__
"""

ESCAPES: dict[str, str] = {
    "subclasses walk": "().__class__.__bases__[0].__subclasses__()",
    "subclasses through object": "object.__subclasses__()",
    "mro": "int.mro()",
    "dunder mro": "[].__class__.__mro__",
    "base": "(1).__class__.__base__",
    "generator frame": "(x for x in ()).gi_frame.f_back.f_globals",
    "generator frame of a def": "def g():\n    yield 1\nr = g().gi_frame",
    "generator code": "r = (x for x in ()).gi_code",
    "coroutine frame": "async def c():\n    pass\nr = c().cr_frame",
    "traceback frame": "try:\n    1 / 0\nexcept Exception as e:\n    r = e.__traceback__.tb_frame",
    "function globals": "(lambda: 0).__globals__",
    "function code": "(lambda: 0).__code__.co_consts",
    "function closure": "def f():\n    x = 1\n    return lambda: x\nr = f().__closure__",
    "builtins name": "__builtins__",
    "builtins through a method's self": "print.__self__",
    "builtins through a module": "import math\nr = math.__builtins__",
    "module dict": "import math\nr = math.__dict__",
    "module loader": "import math\nr = math.__loader__",
    "format attribute walk": "'{0.__class__}'.format(1)",
    "format deep walk": "'{0.__class__.__bases__}'.format(1)",
    "format_map walk": "'{a.__class__}'.format_map({'a': 1})",
    "unbound str.format": "str.format('{0.__class__}', 1)",
    "format field frame": "'{0.gi_frame}'.format(x for x in ())",
    "getattr computed name": "getattr(1, '__' + 'class__')",
    "getattr default does not swallow": "getattr(1, '__class__', None)",
    "getattr frame": "getattr((x for x in ()), 'gi_' + 'frame')",
    "hasattr probe": "hasattr(1, '__class__')",
    "setattr on a module": "import math\nsetattr(math, 'pi', 3)",
    "attribute store on a module": "import math\nmath.pi = 3",
    "vars": "vars()",
    "globals": "globals()",
    "locals": "locals()",
    "dir without argument": "dir()",
    "type with three arguments": "type('X', (), {})",
    "type of a class": "type(type(1))('X', (), {})",
    "lambda default argument": "(lambda x=().__class__: x)()",
    "decorator": "@(lambda f: f.__globals__)\ndef g():\n    pass",
    "dunder import": "__import__('os')",
    "import os": "import os",
    "import sys": "import sys",
    "import builtins": "import builtins",
    "from import star": "from math import *",
    "relative import": "from . import x",
    "walrus builtins": "(b := __builtins__)",
    "walrus in a comprehension": "[y := x.__class__ for x in (1,)]",
    "f-string attribute": "f'{(1).__class__}'",
    "f-string hostile repr": "class X:\n    def __repr__(self):\n        return 'x'\nr = f'{X()!r}'",
    "hostile format": "class X:\n    def __format__(self, spec):\n        return spec\nr = f'{X():x}'",
    "breakpoint": "breakpoint()",
    "help": "help()",
    "exit": "exit()",
    "quit": "quit()",
    "eval": "eval('1')",
    "exec": "exec('x = 1')",
    "compile": "compile('1', '<s>', 'eval')",
    "unicode eval": "ｅval('1')",
    "unicode class": "().__ｃlass__",
    "unicode builtins": "__ｂuiltins__",
    "open": "open('/etc/passwd')",
    "input": "input()",
    "attrgetter": "import operator\nr = operator.attrgetter('__class__')",
    "methodcaller": "from operator import methodcaller",
    "string Formatter": "import string\nr = string.Formatter().vformat('{0.__class__}', (1,), {})",
    "module member module": "import fractions\nr = fractions.sys",
    "from import of a module": "from fractions import sys",
    "reduce_ex": "().__reduce_ex__(2)",
    "class getitem": "list.__class_getitem__",
    "init subclass": "class A:\n    def __init_subclass__(cls):\n        pass",
    "super walk": "class A:\n    def __init__(self):\n        super().__init__.__self__",
    "exception class walk": "try:\n    1 / 0\nexcept Exception as e:\n    r = e.__class__",
    "the real re through a module": "import fractions\nr = fractions.re._compile",
    "regex private parser": "import re\nr = re._parser",
    "global of builtins": "global __builtins__",
    "dotted grant proxy dict": "math.__dict__",
}


@pytest.fixture(scope="module")
def generous(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from pysandboxes.rules import load_policy

    folder = tmp_path_factory.mktemp("generous")
    path = folder / ".py-sandboxes"
    path.write_text(GENEROUS.strip() + "\n")
    return load_policy(path, environ={"HOME": str(folder)}, cwd=str(folder)).eval_profiles[""]


@pytest.mark.parametrize("source", list(ESCAPES.values()), ids=list(ESCAPES))
def test_an_escape_is_refused(generous: Any, run: Any, source: str) -> None:
    mode = "eval" if "\n" not in source and "=" not in source.replace("==", "") else "exec"
    if source.startswith(("import ", "from ", "global ", "@")):
        mode = "exec"
    namespace: dict[str, Any] = {}
    with pytest.raises(EvalSyntaxRejected):
        run(generous, source, namespace, mode)
    assert "r" not in namespace


def test_the_catalogue_is_large_enough() -> None:
    assert len(ESCAPES) >= 40


def test_the_generous_profile_does_run_code(generous: Any, run: Any) -> None:
    namespace: dict[str, Any] = {}
    source = """
    import re, math, string
    from contextlib import suppress
    class Point:
        def __init__(self, x):
            self.x = x
    words = [w.upper() for w in 'a b c'.split()]
    r = ('{0}-{1:>3}'.format(*words[:2]), getattr(Point(2), 'x'), math.sqrt(9), re.findall('[a-z]', 'a1b'),
         string.ascii_lowercase[:3], type(1) is type(2), sorted(dir(Point(1)))[-1])
    """
    run(generous, source, namespace, "exec")
    assert namespace["r"] == ("A-  B", 2, 3.0, ["a", "b"], "abc", True, "x")
