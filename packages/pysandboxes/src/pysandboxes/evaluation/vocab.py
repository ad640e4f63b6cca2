"""What evaluated code may never reach, whatever the ``eval-*`` rules grant.

Kept apart from the rule language's vocabulary (``rules/eval_vocab.py``): these sets are the
engine's own fixed decisions, not names a rule file can use.
"""

from __future__ import annotations

#: attributes that reach frames, code, globals, the class graph or the interpreter: refused
#: even when ``eval-attribute``/``eval-magic`` (or ``*``) would grant them
ALWAYS_DENIED_ATTRIBUTES = frozenset(
    {
        # frames and code (generators, coroutines, async generators, tracebacks, frames)
        "gi_frame",
        "gi_code",
        "gi_yieldfrom",
        "gi_running",
        "cr_frame",
        "cr_code",
        "cr_await",
        "cr_origin",
        "ag_frame",
        "ag_code",
        "ag_await",
        "f_back",
        "f_globals",
        "f_locals",
        "f_builtins",
        "f_code",
        "f_trace",
        "f_lasti",
        "tb_frame",
        "tb_next",
        "tb_lasti",
        "co_code",
        "co_consts",
        "co_names",
        "__code__",
        "__globals__",
        "__closure__",
        "__defaults__",  # a helper's state is bound there (runtime.py)
        "__kwdefaults__",
        "__builtins__",
        "__func__",
        "__self__",
        "__wrapped__",
        "__traceback__",
        # the class graph
        "__subclasses__",
        "__bases__",
        "__base__",
        "__mro__",
        "mro",
        "__class_getitem__",
        "__init_subclass__",
        "__subclasshook__",
        # namespaces and the import system
        "__dict__",
        "__import__",
        "__loader__",
        "__spec__",
        "__getattribute__",
        "__reduce__",
        "__reduce_ex__",
        "__setattr__",
        "__delattr__",
        "__objclass__",
    }
)

#: builtins never put into an evaluation's namespace, even when ``eval-call`` names them:
#: they run code, read the caller's namespaces, or stop the process
NEVER_CALLS = frozenset(
    {
        "eval",
        "exec",
        "compile",
        "globals",
        "locals",
        "vars",
        "breakpoint",
        "help",
        "exit",
        "quit",
        "input",
        "copyright",
        "credits",
        "license",
        "__import__",
        "__build_class__",
        "__loader__",
        "__spec__",
    }
)

#: modules evaluated code never imports (introspection, the interpreter, code execution)
NEVER_IMPORTS = frozenset(
    {
        "builtins",
        "sys",
        "inspect",
        "gc",
        "ctypes",
        "_ctypes",
        "importlib",
        "code",
        "codeop",
        "runpy",
        "pdb",
        "bdb",
        "traceback",
        "types",
        "_string",
        "_thread",
        "posix",
        "pickle",
        "_pickle",
        "marshal",
        "pysandboxes",
        "python_sb",
    }
)

#: module members that read attributes by computed names (``str.format``-like walks)
NEVER_MEMBERS = frozenset(
    {
        ("operator", "attrgetter"),
        ("operator", "methodcaller"),
        ("string", "Formatter"),
    }
)

#: builtin names every evaluation sees without a rule: constants and exception classes
ALWAYS_NAMES_EXTRA = frozenset({"None", "True", "False", "Ellipsis", "NotImplemented"})

#: str/bytes methods whose result size is a product of their arguments
SIZED_METHODS = frozenset({"ljust", "rjust", "center", "zfill", "expandtabs", "replace"})

#: names that reserved helpers use in the rewritten tree; no source can spell them
HELPER_PREFIX = "@"
