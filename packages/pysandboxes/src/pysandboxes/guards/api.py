"""The sensitive-API guard: ``python-api=ALLOW|DENY:`` over the registry's eight categories.

Where CPython raises an audit event (``os.system``, ``os.exec``, ``os.posix_spawn``,
``os.fork``, ``subprocess.Popen``, ``os.kill``, ``ctypes.dlopen``/``dlsym``, ``sys.settrace``,
``gc.get_referrers``, ``pickle.find_class``, ``compile``, ``code.__new__``, ``marshal.loads``,
``cpython.PyInterpreterState_New``…) the hook decides, and no copy of a module or captured
reference escapes it. The registry functions without an event (``os.setuid``,
``threading.Thread.start``, ``pickle.loads``, ``_testcapi.run_in_subinterp``…) are replaced by
refusing wrappers in their modules: that stops ordinary code, not code that digs out the
original.

Code objects. CPython has no bytecode verifier: a code object whose bytecode, constants, names
or stack size do not match (``types.CodeType(...)``, ``code.replace(co_consts=())``, or one
read with ``marshal.loads``) reads and writes memory outside its frame once it runs, which
undoes every check of the Python layer, and ``exec()`` of it never meets the ``eval-*``
rules. The audit events carry the new bytecode but not its constants or names, so no event
tells a renaming (``types.coroutine``) from a forgery. The decision is therefore by caller, as
for ``compile``: the standard library, installed packages and the sandbox build and read
code objects freely; the program's own code needs ``python-api=ALLOW:types.CodeType``
(``marshal.loads``/``marshal.load`` for unmarshalling).
"""

from __future__ import annotations

import sys
from types import MappingProxyType

from ..errors import RuleApiPermissionError
from ..rules.api_registry import CATEGORY_OF
from ..rules.policy import Policy
from ._seal import frozen_get, seal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

#: the registry function that creating a subinterpreter stands for on this Python
SUBINTERPRETERS = "_interpreters.create" if sys.version_info >= (3, 13) else "_xxsubinterpreters.create"
#: audit event -> the registry function it stands for
EVENTS: MappingProxyType[str, str] = MappingProxyType(
    {
        "os.system": "os.system",
        "os.exec": "os.execv",
        "os.posix_spawn": "os.posix_spawn",
        "os.fork": "os.fork",
        "os.forkpty": "os.forkpty",
        "subprocess.Popen": "subprocess.Popen",
        "pty.spawn": "pty.spawn",
        "os.kill": "os.kill",
        "os.killpg": "os.killpg",
        "signal.pthread_kill": "signal.pthread_kill",
        "resource.setrlimit": "resource.setrlimit",
        "resource.prlimit": "resource.prlimit",
        "ctypes.dlopen": "ctypes.CDLL",
        "ctypes.dlsym": "_ctypes.dlsym",
        "ctypes.dlsym/handle": "_ctypes.dlsym",
        "ctypes.call_function": "_ctypes.call_function",
        "ctypes.cdata": "ctypes.cast",
        "ctypes.string_at": "ctypes.string_at",
        "ctypes.wstring_at": "ctypes.wstring_at",
        "ctypes.PyObj_FromPtr": "ctypes.cast",
        "sys.settrace": "sys.settrace",
        "sys.setprofile": "sys.setprofile",
        "sys.addaudithook": "sys.addaudithook",
        "gc.get_objects": "gc.get_objects",
        "gc.get_referrers": "gc.get_referrers",
        "gc.get_referents": "gc.get_referents",
        "pickle.find_class": "pickle.Unpickler",
        # PyInterpreterState_New raises it in the creating interpreter: audit hooks added by
        # sys.addaudithook are per interpreter, so code in a new one would run unwatched.
        "cpython.PyInterpreterState_New": SUBINTERPRETERS,
    }
)

#: audit event -> registry function, decided by who calls: the program needs the grant
CODE_OBJECT_EVENTS: MappingProxyType[str, str] = MappingProxyType(
    {"code.__new__": "types.CodeType", "marshal.loads": "marshal.loads", "marshal.load": "marshal.load"}
)

#: registry functions without an audit event: (module, attribute path, registry name)
WRAPPED: tuple[tuple[str, str, str], ...] = (
    *(
        (m, n, f"os.{n}")
        for m in ("os", "posix")
        for n in [
            "setuid",
            "setgid",
            "seteuid",
            "setegid",
            "setreuid",
            "setregid",
            "setresuid",
            "setresgid",
            "setgroups",
            "initgroups",
            "unshare",
            "setns",
            "umask",
            "chroot",
            "nice",
            "setpriority",
            "abort",
            "setsid",
            "setpgid",
            "setpgrp",
            "pidfd_open",
        ]
    ),
    ("os", "popen", "os.popen"),
    *((m, n, f"signal.{n}") for m in ("signal", "_signal") for n in ("alarm", "setitimer", "raise_signal")),
    ("_posixsubprocess", "fork_exec", "_posixsubprocess.fork_exec"),
    ("_thread", "start_new_thread", "_thread.start_new_thread"),
    ("_thread", "start_new", "_thread.start_new"),
    ("_thread", "interrupt_main", "_thread.interrupt_main"),
    ("_thread", "stack_size", "_thread.stack_size"),
    ("threading", "_start_new_thread", "_thread.start_new_thread"),
    ("threading", "Thread.start", "threading.Thread.start"),
    ("threading", "stack_size", "threading.stack_size"),
    ("pickle", "loads", "pickle.loads"),
    ("pickle", "load", "pickle.load"),
    ("_pickle", "loads", "_pickle.loads"),
    ("_pickle", "load", "_pickle.load"),
    ("ctypes", "memmove", "ctypes.memmove"),
    ("ctypes", "memset", "ctypes.memset"),
    ("ctypes", "cast", "ctypes.cast"),
    ("importlib", "reload", "importlib.reload"),
    ("faulthandler", "enable", "faulthandler.enable"),
    ("faulthandler", "register", "faulthandler.register"),
    ("faulthandler", "dump_traceback_later", "faulthandler.dump_traceback_later"),
    # Named refusals; the event above also stops a fresh copy of _xxsubinterpreters. The test
    # modules' run_in_subinterp switches to no thread state first: it raises no event at all.
    ("_xxsubinterpreters", "create", "_xxsubinterpreters.create"),
    ("_interpreters", "create", "_interpreters.create"),
    ("_testcapi", "run_in_subinterp", "_testcapi.run_in_subinterp"),
    ("_testcapi", "run_in_subinterp_with_config", "_testcapi.run_in_subinterp_with_config"),
    ("_testinternalcapi", "create_interpreter", "_testinternalcapi.create_interpreter"),
    (
        "_testinternalcapi",
        "run_in_subinterp_with_config",
        "_testinternalcapi.run_in_subinterp_with_config",
    ),
)


def refusal_message(function: str, category: str) -> str:
    return (
        f"{function}() is denied by the API guard (category: {category}).\n"
        f"Add `python-api=ALLOW:{function}` for this function only, or "
        f"`python-api=ALLOW:{category}` for the whole category."
    )


def _refuse(function, _denied=None, _Refused=None, _eval_declared=False):  # type: ignore[no-untyped-def]
    category = _denied(function)
    if category is not None:
        if category == "dynamic-code" and _eval_declared:
            hint = (
                "The program's eval(), exec() and compile() run code under the default eval-* profile "
                "(`eval-KEY=` lines; none without them), a named profile through "
                "pysandboxes.guarded_eval(source, profile=NAME); this call went around them."
            )
        else:
            hint = (
                f"Add `python-api=ALLOW:{function}` for this function only, or "
                f"`python-api=ALLOW:{category}` for the whole category."
            )
        raise _Refused(
            f"{function}() is denied by the API guard (category: {category}).\n{hint}", function, category
        )


def _on_event(args, _name="", _refuse=None):  # type: ignore[no-untyped-def]
    _refuse(_name)


def _on_dlopen(args, _refuse=None):  # type: ignore[no-untyped-def]
    if args[0] is not None:  # dlopen(NULL) is how ctypes reaches the interpreter at import
        _refuse("ctypes.CDLL")


def _on_find_class(  # type: ignore[no-untyped-def]
    args, _refuse=None, _getframe=None, _ours=None, _str=None, _type=None, _ValueError=None
):
    """Unpickling a class: refused to the program; the sandbox's own decoding of the host's
    (trusted) arguments passes — only the sandbox's frames are on the stack then."""
    try:
        frame = _getframe(2)
    except _ValueError:
        frame = None
    while frame is not None:
        filename = frame.f_code.co_filename
        if _type(filename) is not _str or not filename.startswith(_ours):
            _refuse("pickle.Unpickler")
            return
        frame = frame.f_back


def _on_prlimit(args, _refuse=None):  # type: ignore[no-untyped-def]
    if args[2] is not None:  # reading a limit is harmless
        _refuse("resource.prlimit")


def _on_compile(  # type: ignore[no-untyped-def]
    args, _getframe=None, _library=None, _refuse=None, _str=None, _type=None, _ValueError=None, _depth=2
):
    """Code compiled from a string: library code generation passes, the program's does not."""
    try:
        frame = _getframe(_depth)
    except _ValueError:
        frame = None
    if frame is not None:
        filename = frame.f_code.co_filename
        if _type(filename) is _str and (filename.startswith(_library) or filename.startswith("<frozen ")):
            return
    _refuse("builtins.compile")


def _on_code_object(  # type: ignore[no-untyped-def]
    args, _name="", _refuse=None, _getframe=None, _guards="", _library=None, _str=None, _type=None
):
    """A code object built or unmarshalled: the library's pass, the program's need the grant.

    The caller is the first frame outside the guards (this handler, the hook and, while
    learning, the recorder's wrapper sit between)."""
    frame = _getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if _type(filename) is not _str or not filename.startswith(_guards):
            break
        frame = frame.f_back
    if frame is not None:
        filename = frame.f_code.co_filename
        if _type(filename) is _str and (filename.startswith(_library) or filename.startswith("<frozen ")):
            return
    _refuse(_name)


#: allowing a function allows the primitives it is made of (the refusal's hint must work)
IMPLIED: MappingProxyType[str, tuple[str, ...]] = MappingProxyType(
    {
        "threading.Thread.start": (
            "_thread.start_new_thread",
            "_thread.start_new",
            "threading._start_new_thread",
        ),
        "pickle.loads": ("_pickle.loads", "pickle.Unpickler"),
        "pickle.load": ("_pickle.load", "pickle.Unpickler"),
        "_pickle.loads": ("pickle.Unpickler",),
        "_pickle.load": ("pickle.Unpickler",),
        "subprocess.run": ("subprocess.Popen", "_posixsubprocess.fork_exec"),
        "subprocess.call": ("subprocess.Popen", "_posixsubprocess.fork_exec"),
        "subprocess.check_call": ("subprocess.Popen", "_posixsubprocess.fork_exec"),
        "subprocess.check_output": ("subprocess.Popen", "_posixsubprocess.fork_exec"),
        "subprocess.getoutput": ("subprocess.Popen", "_posixsubprocess.fork_exec"),
        "subprocess.getstatusoutput": ("subprocess.Popen", "_posixsubprocess.fork_exec"),
        "subprocess.Popen": ("_posixsubprocess.fork_exec",),
        "os.popen": ("subprocess.Popen", "_posixsubprocess.fork_exec"),
        "multiprocessing.Process.start": ("os.fork", "_posixsubprocess.fork_exec", "subprocess.Popen"),
        "concurrent.interpreters.create": (SUBINTERPRETERS,),
        "_testinternalcapi.create_interpreter": (SUBINTERPRETERS,),
    }
)


def decisions(policy: Policy) -> MappingProxyType[str, str]:
    """Every denied registry function -> its category (``Policy.decide_api``, for all at once),
    less the primitives of an allowed function (:data:`IMPLIED`) unless a rule denies them."""
    rules = policy.api.rules
    if not rules:
        return MappingProxyType(dict(CATEGORY_OF))
    targets = {r.target for r in rules}
    denied: dict[str, str] = {}
    for function, category in CATEGORY_OF.items():
        spoken_for = function in targets or category in targets or "*" in targets
        if not (spoken_for and policy.decide_api(function).allowed):
            denied[function] = category
    for function, primitives in IMPLIED.items():
        if function not in denied:
            for primitive in primitives:
                if policy.decide_api(primitive).rule is None:  # no rule speaks for it: implied
                    denied.pop(primitive, None)
    return MappingProxyType(denied)


def build(
    policy: Policy,
    library: tuple[str, ...],
    denied: Mapping[str, str] | None = None,
    *,
    allow_dynamic: bool = False,
) -> tuple[Callable[[str], None], dict[str, Callable[[tuple[Any, ...]], None]]]:
    """``denied``: :func:`decisions` of ``policy`` when the caller has them already."""
    if denied is None:
        denied = decisions(policy)
    refuse = seal(
        _refuse,
        _denied=frozen_get(dict(denied)),
        _Refused=RuleApiPermissionError,
        _eval_declared=bool(policy.eval_profiles),
    )
    handlers: dict[str, Callable[[tuple[Any, ...]], None]] = {}
    for event, function in EVENTS.items():
        if function in denied:
            handlers[event] = seal(_on_event, _name=function, _refuse=refuse)
    if "ctypes.CDLL" in denied:
        handlers["ctypes.dlopen"] = seal(_on_dlopen, _refuse=refuse)
    if "pickle.Unpickler" in denied:
        import os

        handlers["pickle.find_class"] = seal(
            _on_find_class,
            _refuse=refuse,
            _getframe=sys._getframe,
            _ours=os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + "/",
            _str=str,
            _type=type,
            _ValueError=ValueError,
        )
    if "resource.prlimit" in denied:
        handlers["resource.prlimit"] = seal(_on_prlimit, _refuse=refuse)
    import os

    for event, function in CODE_OBJECT_EVENTS.items():
        if function in denied:
            handlers[event] = seal(
                _on_code_object,
                _name=function,
                _refuse=refuse,
                _getframe=sys._getframe,
                _guards=os.path.dirname(__file__) + "/",
                _library=library,
                _str=str,
                _type=type,
            )
    dynamic_denied = all(f"builtins.{n}" in denied for n in ("compile", "eval", "exec"))
    if dynamic_denied and not allow_dynamic:
        handlers["compile"] = seal(
            _on_compile,
            _getframe=sys._getframe,
            _library=library,
            _refuse=refuse,
            _str=str,
            _type=type,
            _ValueError=ValueError,
            _depth=2,
        )
    return refuse, handlers
