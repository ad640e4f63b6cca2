"""The sensitive-API guard: ``python-api=ALLOW|DENY:`` over the registry's eight categories.

Where CPython raises an audit event (``os.system``, ``os.exec``, ``os.posix_spawn``,
``os.fork``, ``subprocess.Popen``, ``os.kill``, ``ctypes.dlopen``/``dlsym``, ``sys.settrace``,
``gc.get_referrers``, ``pickle.find_class``, ``compile``, ``code.__new__``,
``cpython.PyInterpreterState_New``…) the hook decides, and no copy of a module or captured
reference escapes it. The registry functions without an event (``os.setuid``,
``threading.Thread.start``, ``pickle.loads``, ``_testcapi.run_in_subinterp``…) are replaced by
refusing wrappers in their modules: that stops ordinary code, not code that digs out the
original.

Code objects. CPython has no bytecode verifier: a code object whose bytecode, constants, names
or stack size do not match (``types.CodeType(...)``, ``code.replace(co_consts=())``) reads
and writes memory outside its frame once it runs, which undoes every check of the Python
layer, and ``exec()`` of it never meets the ``eval-*`` rules. The ``code.__new__`` event
carries the new bytecode but not its constants or names, so it cannot tell a renaming
(``types.coroutine``) from a forgery. The decision is therefore by caller, as for
``compile``: the standard library, installed packages and the sandbox build code objects
freely; the program's own code needs ``python-api=ALLOW:types.CodeType``. Unmarshalled code
(``marshal.loads``, a ``.pyc``) is not judged: the import system unmarshals every ``.pyc``
(a check there costs every import), and importlib's ``_compile_bytecode`` hands the same
conversion to any caller (docs/security-model.md §5).

A granted process start is still judged by the file rules: the file it runs (found on
``PATH`` as the call would find it, ``/bin/sh`` for a shell) must be readable, or the start is
refused with the ``expose-ro=`` line to add, under every provider — the kernel of ``landlock``
would refuse it anyway, with a bare ``EACCES``.
"""

from __future__ import annotations

import sys
from types import MappingProxyType

from ..errors import RuleApiPermissionError, RuleFileNotFoundError
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
CODE_OBJECT_EVENTS: MappingProxyType[str, str] = MappingProxyType({"code.__new__": "types.CodeType"})

#: audit event -> how to find the program a granted process start runs (see _on_process)
PROCESS_EVENTS: MappingProxyType[str, str] = MappingProxyType(
    {
        "subprocess.Popen": "popen",  # (executable, args, cwd, env): a PATH search of env's
        "os.system": "shell",  # (command,): /bin/sh
        "os.exec": "path",  # (path, args, env): os.execvp searches PATH itself, one event a try
        "os.posix_spawn": "spawnp",  # (path, argv, env): posix_spawnp searches this process's PATH
        "pty.spawn": "pty",  # (argv,): the child's os.execlp searches PATH
    }
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


def explicit_denials(policy: Policy, denied: Mapping[str, str]) -> dict[str, str]:
    """The denied functions an explicit ``python-api=DENY:`` rule names (itself, its category or
    ``*``): function -> that rule, described for a message (file and line)."""
    explicit: dict[str, str] = {}
    for function in denied:
        decision = policy.decide_api(function)
        if decision.rule is not None and not decision.allowed:
            explicit[function] = decision.rule.rule.describe()
    return explicit


def refusal_message(function: str, category: str, explicit: str | None = None) -> str:
    if explicit is not None:
        return f"{function}() (category: {category}) DENIED by explicit rule {explicit}"
    return (
        f"{function}() is denied by the API guard (category: {category}).\n"
        f"Add `python-api=ALLOW:{function}` for this function only, or "
        f"`python-api=ALLOW:{category}` for the whole category."
    )


def _refuse(function, _denied=None, _Refused=None, _eval_declared=False, _explicit=None):  # type: ignore[no-untyped-def]
    category = _denied(function)
    if category is not None:
        rule = _explicit(function) if _explicit is not None else None
        if rule is not None:  # the author said no: name that rule, no hint to lift it
            raise _Refused(
                f"{function}() (category: {category}) DENIED by explicit rule {rule}", function, category
            )
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
    args,
    _name="",
    _refuse=None,
    _getframe=None,
    _depth=2,
    _library=None,
    _str=None,
    _type=None,
    _ValueError=None,
):
    """A code object built (``types.CodeType``, ``code.replace``): the library's pass, the
    program's need the grant.

    ``_depth``: 0 is this handler, 1 the hook (2 the recorder's wrapper while learning), then
    whoever called ``replace()`` or ``CodeType()`` (C functions have no frame)."""
    try:
        filename = _getframe(_depth).f_code.co_filename
    except _ValueError:  # no Python caller to vouch for it
        filename = None
    if _type(filename) is _str and (filename.startswith(_library) or filename.startswith("<frozen ")):
        return
    _refuse(_name)


def _text(value, _fspath=None, _decode=None, _str=None, _bytes=None, _type=None, _TypeError=None):  # type: ignore[no-untyped-def]
    """A path or program name as text (``str``, ``bytes``, ``os.PathLike``); None otherwise."""
    try:
        value = _fspath(value)
    except _TypeError:  # not a path: the call itself will fail
        return None
    if _type(value) is _bytes:
        return _decode(value, "utf-8", "surrogateescape")
    return value if _type(value) is _str else None


def _search_path(env, _modules_get=None, _text=None, _Missing=None, _default=""):  # type: ignore[no-untyped-def]
    """The directories a program name is looked up in, as ``os.get_exec_path(env)`` finds them:
    ``env``'s ``PATH`` (``os.environ``'s when None), ``/bin:/usr/bin`` without one."""
    if env is None:
        os_module = _modules_get("os")
        env = os_module.environ if os_module is not None else None
    value = None
    if env is not None:
        try:
            value = env.get("PATH")
        except _Missing:
            value = None
        if value is None:
            try:
                value = env[b"PATH"]
            except _Missing:
                value = None
    text = _text(value) if value is not None else None
    return (text if text is not None else _default).split(":")


def _find_program(  # type: ignore[no-untyped-def]
    name, search, cwd, _stat=None, _access=None, _OSError=None, _ValueError=None, _X_OK=0
):
    """The file that running ``name`` executes: a name with a ``/`` as it is, a bare name in
    each ``search`` directory in turn (an empty entry is the working directory); relative
    paths start from ``cwd`` when given. The first regular, executable file wins, as in
    ``execvp``. None: nothing would run (the call fails by itself, with its own error)."""
    if search is None or "/" in name:
        candidates = [name]
    else:
        candidates = []
        for directory in search:
            candidates.append(directory.rstrip("/") + "/" + name if directory else name)
    for candidate in candidates:
        if cwd is not None and not candidate.startswith("/"):
            candidate = cwd.rstrip("/") + "/" + candidate
        try:
            mode = _stat(candidate).st_mode
        except (_OSError, _ValueError):
            continue
        if mode & 0o170000 == 0o100000 and _access(candidate, _X_OK):
            return candidate
    return None


def _interpreter(path, _open=None, _read=None, _close=None, _flags=0, _OSError=None, _text=None):  # type: ignore[no-untyped-def]
    """The interpreter a ``#!`` line names, or None (a binary, or an unreadable file)."""
    try:
        fd = _open(path, _flags)
    except _OSError:
        return None
    try:
        head = _read(fd, 256)
    except _OSError:
        head = b""
    finally:
        _close(fd)
    if not head.startswith(b"#!"):
        return None
    words = head[2:].partition(b"\n")[0].split()
    return _text(words[0]) if words else None


def _judge_program(shown, path, _check=None, _NotFound=None):  # type: ignore[no-untyped-def]
    try:
        _check(path, False)
    except _NotFound as refusal:
        raise _NotFound(f"Cannot run {shown}: {refusal}", refusal.filename) from None


def _runs(name, search, cwd, _find=None, _judge=None, _interpreter=None):  # type: ignore[no-untyped-def]
    """Refuse to run ``name`` unless the file it executes, and the interpreter of its ``#!``
    line, may be read: ``RuleFileNotFoundError`` naming the ``expose-ro=`` line (learning
    records them). A program missing altogether is left to fail as it would."""
    path = _find(name, search, cwd)
    if path is None:
        return
    _judge(f"{name!r}", path)
    interpreter = _interpreter(path)
    if interpreter is not None:
        found = _find(interpreter, None, None)
        if found is not None:
            _judge(f"{name!r} (its interpreter {interpreter!r})", found)


def _on_process(  # type: ignore[no-untyped-def]
    args,
    _kind="",
    _name="",
    _refuse=None,
    _runs=None,
    _search=None,
    _text=None,
    _learning=False,
    _str=None,
    _bytes=None,
    _type=None,
    _Bad=None,
):
    """A process start (``_kind``: see PROCESS_EVENTS). The API right comes first; granted, the
    program it runs must be readable. Learning records both (the file first: the recorder's
    wrapper turns the API refusal into a record, which ends this handler)."""
    if not _learning:
        _refuse(_name)  # raises unless granted
    cwd = None
    if _kind == "shell":
        name = "/bin/sh"
    elif _kind == "pty":
        argv = args[0]
        try:
            name = _text(argv if _type(argv) is _str or _type(argv) is _bytes else argv[0])
        except _Bad:  # an empty or odd argv: pty.spawn fails by itself
            name = None
    else:
        name = _text(args[0])
        if _kind == "popen" and args[2] is not None:
            cwd = _text(args[2])
    if name:
        search = None  # a name with a "/", or os.exec (execvp raises the event for each try)
        if "/" not in name and _kind != "path" and _kind != "shell":
            search = _search(args[3] if _kind == "popen" else None)
        _runs(name, search, cwd)
    if _learning:
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
    check_file: Callable[..., None] | None = None,
    learning: bool = False,
) -> tuple[Callable[[str], None], dict[str, Callable[[tuple[Any, ...]], None]]]:
    """``denied``: :func:`decisions` of ``policy`` when the caller has them already.
    ``check_file``: the file guard's ``check``; with it, a process start must be allowed to read
    the program it runs. ``learning``: the handlers are wrapped by the recorder (a refusal
    is recorded, and ends the handler)."""
    if denied is None:
        denied = decisions(policy)
    refuse = seal(
        _refuse,
        _denied=frozen_get(dict(denied)),
        _Refused=RuleApiPermissionError,
        _eval_declared=bool(policy.eval_profiles),
        _explicit=frozen_get(explicit_denials(policy, denied)),
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
    for event, function in CODE_OBJECT_EVENTS.items():
        if function in denied:
            handlers[event] = seal(
                _on_code_object,
                _name=function,
                _refuse=refuse,
                _getframe=sys._getframe,
                _depth=3 if learning else 2,
                _library=library,
                _str=str,
                _type=type,
                _ValueError=ValueError,
            )
    if check_file is not None:
        handlers.update(_process_handlers(refuse, check_file, learning))
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


def _process_handlers(
    refuse: Callable[[str], None], check_file: Callable[..., None], learning: bool
) -> dict[str, Callable[[tuple[Any, ...]], None]]:
    """The handlers of :data:`PROCESS_EVENTS`: the API right, then the program's file."""
    import posix

    text = seal(
        _text,
        _fspath=posix.fspath,
        _decode=bytes.decode,
        _str=str,
        _bytes=bytes,
        _type=type,
        _TypeError=TypeError,
    )
    # The C functions themselves: the metadata wrappers installed later would judge the probes.
    find = seal(
        _find_program,
        _stat=posix.stat,
        _access=posix.access,
        _OSError=OSError,
        _ValueError=ValueError,
        _X_OK=posix.X_OK,
    )
    runs = seal(
        _runs,
        _find=find,
        _judge=seal(_judge_program, _check=check_file, _NotFound=RuleFileNotFoundError),
        _interpreter=seal(
            _interpreter,
            _open=posix.open,
            _read=posix.read,
            _close=posix.close,
            _flags=posix.O_RDONLY | posix.O_CLOEXEC,
            _OSError=OSError,
            _text=text,
        ),
    )
    search = seal(
        _search_path,
        _modules_get=sys.modules.get,
        _text=text,
        _Missing=(KeyError, TypeError, AttributeError),
        _default="/bin:/usr/bin",  # os.defpath
    )
    return {
        event: seal(
            _on_process,
            _kind=kind,
            _name=EVENTS[event],
            _refuse=refuse,
            _runs=runs,
            _search=search,
            _text=text,
            _learning=learning,
            _str=str,
            _bytes=bytes,
            _type=type,
            _Bad=(IndexError, TypeError, KeyError),
        )
        for event, kind in PROCESS_EVENTS.items()
    }
