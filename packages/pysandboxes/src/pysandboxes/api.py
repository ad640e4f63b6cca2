"""Partial mode: ``@sandbox`` functions run in a confined child, inside ``sandboxes()``.

.. code-block:: python

    from pysandboxes import sandbox, sandboxes

    @sandbox
    def summarize(path: str) -> str: ...

    with sandboxes():                 # starts the child (once, shared by nested blocks)
        print(summarize("data/report.txt"))

The application keeps its own rights; each ``@sandbox`` call runs in the child under the
rule file (found next to the calling module's package, or in the working directory) and
comes back through the result guard. Inside the child, and with ``os-sandbox=none``, calls
are direct.
"""

from __future__ import annotations

import functools
import os
import sys
import threading

from ._frames import without_own_frames
from ._state import State as _State
from .errors import SandBoxError
from .remote import registry
from .remote.child import in_sandbox
from .remote.registry import CO_ASYNC_GENERATOR, CO_COROUTINE, CO_GENERATOR, code_flags

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

__all__ = ["is_in_sandbox", "run", "sandbox", "sandboxes"]


def is_in_sandbox() -> bool:
    """True inside the sandbox's child process (where ``@sandbox`` calls are direct)."""
    return _State.in_sandbox


# -- the session ---------------------------------------------------------------------------


class _Session:
    """The process-wide sandbox: one child shared by every open ``sandboxes()`` block."""

    lock = threading.RLock()
    current: _Session | None = None

    def __init__(self, signature: tuple[Any, ...], child: Any, provider: str, timeout: float | None) -> None:
        self.signature = signature
        self.child = child  # None with os-sandbox=none: calls are direct
        self.provider = provider
        self.timeout = timeout
        self.count = 0
        self.learning: Any = None  # learning mode: writes the rules when the child stops


class sandboxes:
    """Start (or join) the sandbox for the ``@sandbox`` functions called in this block.

    ``sandboxes_config``: the rule file (default: ``.py-sandboxes`` of the caller's package,
    else of the working directory); ``init_fn``: a function run once in the child before the
    first call (under the rules); ``**rules``: extra rules, e.g. ``expose_ro="./data"`` or
    ``python_import=["json", "csv"]`` (refused under ``learn=false``). Nested and concurrent
    blocks share one child; the last one to leave stops it. Usable as ``with`` and
    ``async with``, or with ``__enter__()`` alone in a notebook (stopped at exit).
    """

    def __init__(
        self,
        init_fn: Callable[[], Any] | None = None,
        sandboxes_config: str | os.PathLike[str] | None = None,
        *,
        learn: str | bool | None = None,
        envs: Mapping[str, str] | None = None,
        _caller: str | None = None,
        **rules: Any,
    ) -> None:
        self.init_fn = init_fn
        self.config = os.fspath(sandboxes_config) if sandboxes_config is not None else None
        self.learn = learn
        self.envs = dict(os.environ if envs is None else envs)
        self.rules = _rule_pairs(rules)
        self.caller = _caller if _caller is not None else _caller_module()
        self._entered: _Session | None = None

    def __enter__(self) -> _Session:
        if in_sandbox():
            return _Session((), None, "none", None)
        session = _join(self)
        self._entered = session
        return session

    def __exit__(self, *exc: object) -> None:
        session, self._entered = self._entered, None
        if session is not None:
            _leave(session)

    async def __aenter__(self) -> _Session:
        try:
            session: _Session = await _off_the_loop(self.__enter__)
        except _Cancelled as cancelled:  # entered, but the caller will never leave: leave now
            if cancelled.done:
                self.__exit__(None, None, None)
            raise cancelled.error from None
        return session

    async def __aexit__(self, *exc: object) -> None:
        try:
            await _off_the_loop(self.__exit__, *exc)
        except _Cancelled as cancelled:  # left all the same (the child is stopped)
            raise cancelled.error from None


class _Cancelled(Exception):
    """The task was cancelled while a thread entered or left the sandbox; ``done``: the thread
    finished (it was waited for), ``error``: the cancellation to re-raise."""

    def __init__(self, error: BaseException, done: bool) -> None:
        self.error, self.done = error, done


async def _off_the_loop(function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)`` in a thread, not blocking the event loop; if the task is cancelled
    meanwhile (a task group's cancel scope, Ctrl-C), the thread is still waited for — starting or
    stopping the child is never left half done, nor a child left running — then ``_Cancelled``."""
    import asyncio
    import concurrent.futures

    result: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def run() -> None:
        try:
            result.set_result(function(*args))
        except BaseException as exc:
            result.set_exception(exc)

    threading.Thread(target=run, name="pysandboxes-enter", daemon=True).start()
    try:
        return await asyncio.shield(asyncio.wrap_future(result))
    except asyncio.CancelledError as exc:
        try:
            result.result()  # blocks the loop for the (short) rest of the start or the stop
        except Exception:
            raise _Cancelled(exc, False) from None
        raise _Cancelled(exc, True) from None


def _rule_pairs(rules: Mapping[str, Any]) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for name, value in rules.items():
        key = name.replace("_", "-")
        values = value if isinstance(value, (list, tuple, set, frozenset)) else [value]
        for v in values:
            text = ("true" if v else "false") if isinstance(v, bool) else str(v)
            pairs.append((key, text))
    return pairs


def _caller_module() -> str | None:
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("pysandboxes"):
        frame = frame.f_back  # type: ignore[assignment]
    return frame.f_globals.get("__name__") if frame is not None else None


def _join(block: sandboxes) -> _Session:
    from . import _log, providers
    from .rules import load_policy, locate
    from .rules.origin import CODE

    cwd = os.getcwd()
    if block.config is not None:
        rule_file = locate.for_config(block.config, cwd)
    else:
        rule_file = locate.for_caller(block.caller, cwd)
    rules = list(block.rules)
    if block.learn:
        rules.append(("learn", rule_file if block.learn is True else str(block.learn)))
    signature = (rule_file, tuple(rules), block.init_fn)
    _log.setup_from_environment()
    with _Session.lock:
        session = _Session.current
        if session is not None:
            if session.signature != signature:
                raise SandBoxError(
                    "a sandboxes() block is already open with other settings "
                    f"({session.signature[0]}); nested and concurrent blocks share one sandbox: "
                    "open them with the same rule file, rules and init_fn"
                )
            session.count += 1
            return session
        implicit = not block.learn and not any(key == "learn" for key, _ in rules)
        implicit = implicit and not os.path.lexists(rule_file)
        policy = load_policy(
            rule_file, extra_rules=rules, environ=block.envs, cwd=cwd, missing_file="learn", extra_source=CODE
        )
        learning = None
        if policy.learning and implicit:
            _refuse_silent_learning(rule_file)
        if policy.learning:  # no OS boundary: the child records instead of refusing
            from .learning import PartialLearning

            learning = PartialLearning(policy, block.envs)
            provider = "subprocess"
        else:
            provider = providers.require(policy)
        timeout = policy.timeout.value
        child = None
        forgotten = registry.forget_failed_imports()
        if forgotten:
            _log.debug(
                "pysandboxes.partial", "not imported in the sandbox (their import failed): %s", forgotten
            )
        if provider != "none":
            from .remote.host import Child, host_settings

            init_key = registry.key_of(block.init_fn) if block.init_fn is not None else None
            modules = set(registry.modules())
            if init_key is not None:
                modules.add(init_key[0])
            settings = host_settings(
                rule_file=rule_file,
                rules=rules,
                environ=block.envs,
                cwd=cwd,
                provider=provider,
                modules=sorted(modules),
                main_file=registry.main_file(),
                init_fn=init_key,
                want_asyncio=_registry_has_coroutines(block.init_fn),
                learn_journal=learning.journal if learning is not None else None,
            )
            child = Child(settings, policy, provider)
            if learning is not None:
                child.learner = learning.recorder
            # looked for while the child starts (a pass over every object: milliseconds)
            held: list[BaseException] = []
            checker = threading.Thread(target=_collect_refusal, args=(held,), name="pysandboxes-check")
            checker.start()
            try:
                try:
                    child.start()
                finally:
                    checker.join()
                if held:
                    child.stop()
                    raise held[0]
            except BaseException:
                if learning is not None:
                    learning.finish()
                raise
        session = _Session(signature, child, provider, float(timeout) if timeout else None)  # type: ignore[arg-type]
        session.learning = learning
        session.count = 1
        _Session.current = session
        _register_exit()
        return session


def _collect_refusal(found: list[BaseException]) -> None:
    try:
        _refuse_functions_held_elsewhere()
    except SandBoxError as exc:
        found.append(exc)
    except Exception as exc:  # the check failing must not let the sandbox start unchecked
        found.append(SandBoxError(f"@sandbox: could not check who holds the @sandbox functions: {exc!r}"))


def _refuse_functions_held_elsewhere() -> None:
    """``@sandbox`` on top of a decorator that registers the function it is given and returns
    it unchanged (``@server.tool()``, ``@app.route()``) leaves the framework holding the
    *unsandboxed* function: every call it makes runs in the host. Nothing at decoration time
    can see it; here, once per sandbox, the objects holding each ``@sandbox`` function are
    looked up (two passes of the garbage collector's referrers: milliseconds) and an object
    of a class, or a dict of one or of a module, holding it is refused. Frames, closures and
    wrappers (``__wrapped__``) are not: they are the decorators' and the program's own."""
    import gc
    import types

    functions = registry.functions()
    if not functions or not _held_elsewhere(functions):
        return
    wanted = {id(f) for f in functions}  # ids only: a dict of ours would hold them too
    modules = {id(vars(m)): n for n, m in list(sys.modules.items()) if m is not None}
    harmless = (types.FrameType, types.CellType, types.FunctionType, types.ModuleType, tuple, type)
    suspects: list[tuple[Any, list[tuple[Any, Any]]]] = []
    dicts: list[dict[Any, Any]] = []
    for holder in gc.get_referrers(*functions):
        if isinstance(holder, harmless) or holder is registry._FUNCTIONS or id(holder) in modules:
            continue
        if isinstance(holder, dict):
            dicts.append(holder)
        elif type(holder).__module__ not in ("builtins", "functools", "weakref"):
            found = [(k, v) for k, v in getattr(holder, "__dict__", {}).items() if id(v) in wanted]
            found = found or [("?", r) for r in gc.get_referents(holder) if id(r) in wanted]
            if found:
                suspects.append((_describe(holder), found))
    if dicts:
        owners: dict[int, list[Any]] = {id(d): [] for d in dicts}
        for owner in gc.get_referrers(*dicts):
            for inner in gc.get_referents(owner):
                if id(inner) in owners:
                    owners[id(inner)].append(owner)
        for holder in dicts:
            held_by = owners[id(holder)]
            if any(isinstance(o, types.FunctionType) and o.__dict__ is holder for o in held_by):
                continue  # a wrapper's attributes (``__wrapped__``)
            owner = next((o for o in held_by if type(o).__module__ != "builtins"), None)
            if owner is not None:
                where = f"a dict of {_describe(owner)}"
            else:  # a registry at a module's top level; else a frame's locals, a cache: not ours
                home = next((modules[id(o)] for o in held_by if id(o) in modules), None)
                if home is None:
                    continue
                where = f"a dict of the module {home}"
            found = [(k, v) for k, v in holder.items() if id(v) in wanted]
            if found:
                suspects.append((where, found))
    if suspects:
        where, found = suspects[0]
        module, name = registry.key_of(found[0][1])
        raise SandBoxError(
            f"@sandbox: {module}.{name} is also held, unsandboxed, by {where} (key "
            f"{found[0][0]!r}): a decorator below @sandbox registered the function itself, so "
            "what it calls runs in the host, unconfined. Put @sandbox on a function of its own and "
            "register a host function that calls it, or use the framework's adapter "
            "(docs/integrations.md)"
        )


def _held_elsewhere(functions: list[Any]) -> bool:
    """Does anything hold one of ``functions`` beyond what ``@sandbox`` itself keeps (the
    registry, its wrapper's closure and ``__wrapped__``)? Counted against a probe function held
    the same way, counted the same way, so that the interpreter's own counting does not
    matter. False spares the walk over every object (a framework's hundred thousand: tenths
    of a second of the host's CPU while the child starts)."""

    def probe() -> None: ...

    kept = ({0: probe}, _wrapped_like_sandbox(probe))
    items = [probe]
    del probe
    baseline = _reference_counts(items)[0]
    del kept
    return any(count > baseline for count in _reference_counts(functions))


def _wrapped_like_sandbox(function: Callable[..., Any]) -> Any:
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return function(*args, **kwargs)

    return wrapper


def _reference_counts(functions: list[Any]) -> list[int]:
    return [sys.getrefcount(f) for f in functions]


def _describe(obj: Any) -> str:
    kind = type(obj)
    return f"a {kind.__module__}.{kind.__qualname__} object"


def _refuse_silent_learning(rule_file: str) -> None:
    """A missing rule file makes ``sandboxes()`` learn: every access of the sandboxed functions
    is granted and written down. On a terminal that is the first-run workflow, said loudly; in
    a server (an MCP host hides stderr) a model's calls would become rights nobody asked for,
    so without a terminal it is an error unless ``learn=`` asks for it."""
    import logging

    message = (
        f"no rule file at {rule_file}: partial mode learns, with no OS boundary, and every "
        "access of the sandboxed functions becomes a rule"
    )
    logging.getLogger("Pysandboxes").warning(message)
    stdin = sys.stdin
    try:
        interactive = stdin is not None and stdin.isatty()
    except (OSError, ValueError):
        interactive = False
    if not interactive:
        raise SandBoxError(
            f"{message[0].upper()}{message[1:]}; refused without a terminal.\n"
            f"Create the rule file (`pysandboxes init {rule_file}`), or ask for learning: "
            "sandboxes(learn=True)."
        )


def _leave(session: _Session) -> None:
    with _Session.lock:
        session.count -= 1
        if session.count > 0:
            return
        if _Session.current is session:
            _Session.current = None
    _stop(session)


def _stop(session: _Session) -> None:
    try:
        if session.child is not None:
            session.child.stop()
    finally:
        if session.learning is not None:
            session.learning.finish()


_EXIT_REGISTERED: list[bool] = []


def _register_exit() -> None:
    """A notebook may enter a block and never leave it: stop the child when Python exits."""
    if not _EXIT_REGISTERED:
        import atexit

        atexit.register(_stop_at_exit)
        _EXIT_REGISTERED.append(True)


def _stop_at_exit() -> None:
    session = _Session.current
    _Session.current = None
    if session is not None:
        _stop(session)


def _registry_has_coroutines(init_fn: Any) -> bool:
    functions = registry.functions()
    if init_fn is not None:
        functions.append(init_fn)
    return any(code_flags(f) & (CO_COROUTINE | CO_ASYNC_GENERATOR) for f in functions)


# -- the decorator -----------------------------------------------------------------------------

#: set by ``pysandboxes.tools`` on the wrappers it hands to a framework (the adapter's name)
TOOL_MARKER = "__pysandboxes_tool__"


def sandbox(function: Callable[..., Any] | None = None, *, timeout: float | None = None) -> Any:
    """Run this function in the sandbox's child when called inside ``sandboxes()``.

    Works on functions, ``async def`` functions, generators and async generators (values
    stream back as they are produced), methods, and functions of a ``__main__`` script.
    ``timeout``: seconds a call may take (overrides the rule file's ``timeout=``).
    """
    if function is None:
        return lambda f: sandbox(f, timeout=timeout)
    if getattr(function, TOOL_MARKER, None) is not None:
        raise TypeError(
            f"@sandbox: {function.__name__} is already a tool made by "
            f"pysandboxes-{getattr(function, TOOL_MARKER)}, whose decorator runs its body in the "
            "sandbox: remove @sandbox"
        )
    kind = type(function)
    framework_object = not isinstance(function, type) and kind.__module__ not in ("builtins", "functools")
    if not callable(function) or not hasattr(function, "__qualname__") or framework_object:
        raise TypeError(
            f"@sandbox decorates a function, not a {kind.__module__}.{kind.__qualname__} (a framework's "
            "tool object?): put @sandbox under the framework's decorator, or use the framework's "
            "adapter (docs/integrations.md)"
        )
    key = registry.register(function)
    flags = code_flags(function)

    def session_for() -> _Session | None:
        if in_sandbox():
            return None
        session = _Session.current
        if session is None:
            raise SandBoxError(
                f"{key[0]}.{key[1]}() is a @sandbox function called outside any sandbox: call it "
                "inside `with pysandboxes.sandboxes():` (or `async with`), or run the program "
                "with `pysandboxes.run(main())`"
            )
        if session.child is None:
            return None
        if registry.lookup(key) is None:
            raise SandBoxError(
                f"{key[0]}.{key[1]}() cannot run in the sandbox: the import of its module {key[0]} "
                "failed after @sandbox decorated it, so the sandbox does not import that module. "
                "Fix the import error (or import the module before sandboxes())"
            )
        return session

    def limit(session: _Session) -> float | None:
        return timeout if timeout is not None else session.timeout

    if flags & CO_ASYNC_GENERATOR:

        @functools.wraps(function)
        async def async_gen_wrapper(*args: Any, **kwargs: Any) -> Any:
            session = session_for()
            if session is None:
                async for item in function(*args, **kwargs):
                    yield item
                return
            async for item in session.child.iterate_async(key, args, kwargs, limit(session)):
                yield item

        wrapper: Any = async_gen_wrapper
    elif flags & CO_COROUTINE:

        @functools.wraps(function)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            session = session_for()
            if session is None:
                return await function(*args, **kwargs)
            try:
                return await session.child.call_async(key, args, kwargs, limit(session))
            except BaseException as exc:
                raise _as_if_local(exc)  # noqa: B904 - the function's own exception

        wrapper = async_wrapper
    elif flags & CO_GENERATOR:

        @functools.wraps(function)
        def gen_wrapper(*args: Any, **kwargs: Any) -> Any:
            session = session_for()
            if session is None:
                yield from function(*args, **kwargs)
                return
            yield from session.child.iterate(key, args, kwargs, limit(session))

        wrapper = gen_wrapper
    else:

        @functools.wraps(function)
        def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
            session = session_for()
            if session is None:
                return function(*args, **kwargs)
            try:
                return session.child.call(key, args, kwargs, limit(session))
            except BaseException as exc:
                raise _as_if_local(exc)  # noqa: B904 - the function's own exception

        wrapper = sync_wrapper
    wrapper.__sandbox_key__ = key
    return wrapper


def _as_if_local(exc: BaseException) -> BaseException:
    """The exception without the channel's frames: the caller's frames, then the sandboxed
    function's, as if it ran here. (The line that raises it adds this decorator's frame
    back, as any decorator's frame appears.)"""
    return exc.with_traceback(without_own_frames(exc.__traceback__))


def run(
    main: Any, *, init_fn: Callable[[], Any] | None = None, sandboxes_config: str | None = None, **rules: Any
) -> Any:
    """``asyncio.run(main)`` inside ``sandboxes()``: the sandbox starts before ``main`` runs."""
    import asyncio
    import inspect

    if not inspect.iscoroutine(main):
        raise ValueError(f"a coroutine was expected, got {main!r}")

    caller = _caller_module()

    async def runner() -> Any:
        async with sandboxes(init_fn, sandboxes_config, _caller=caller, **rules):
            return await main

    return asyncio.run(runner())
