"""What every framework adapter needs, so that each adapter is a few lines (``pysandboxes.tools``).

A framework's decorator (``@server.tool()``, ``@tool``) turns a function into an object the
framework calls; partial mode runs a function's body in the sandbox's child, which finds it by
module and name. :func:`sandboxed` joins the two the one way that works:

- the body is registered with ``@sandbox`` where it is defined, so the child finds it;
- the framework receives a **host wrapper** with the body's name, docstring, signature and
  resolved type hints (the schema the model gets is the plain tool's), ``async def`` when the
  body is; it carries no ``__wrapped__``, so a framework that unwraps callables cannot reach the
  unconfined body;
- the framework's **context parameters** (MCP ``Context``, LangChain ``ToolRuntime``, …) stay in
  the wrapper and never cross: the body gets the parameter's default. A body whose context
  parameter has no default needs the object itself, which cannot cross: it is refused at
  decoration, naming the pattern (:func:`hosted` around a ``@sandbox`` function);
- a call made with no sandbox open starts one (the rule file next to the tool's module, as
  ``sandboxes()`` finds it), said at INFO on the ``Pysandboxes`` logger, stopped when Python
  exits; inside ``with sandboxes():`` (or a framework lifecycle hook) that one is used; under
  ``python-sb`` the whole program is sandboxed already and the body runs directly;
- a **refusal** becomes :func:`pysandboxes.denial_text` (its first line, no hint) sent through the
  framework's own tool-error path (``Framework.refusal``); other exceptions are left to the
  framework. ``on_denial="raise"`` leaves refusals to the framework too.

An adapter describes its framework once and wraps the framework's decorator:

.. code-block:: python

    from pysandboxes.tools import Framework, sandboxed

    FRAMEWORK = Framework(
        "myframework",
        decorator="@sandboxed_tool",
        refusal=lambda text, exc: f"Error: {text}",  # or: raise TheFrameworksToolError(text) from exc
        is_context=lambda name, annotation: annotation is MyContext,
    )

    def sandboxed_tool(function, *, on_denial="text"):
        return myframework.tool(sandboxed(function, FRAMEWORK, on_denial=on_denial))
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
import threading
import types
import typing

from ._state import State
from .api import TOOL_MARKER as MARKER
from .api import _Session, sandbox, sandboxes
from .errors import denial_text, sandbox_denials
from .remote.registry import CO_ASYNC_GENERATOR, CO_COROUTINE, CO_GENERATOR, code_flags

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = [
    "ON_DENIAL",
    "Framework",
    "caller_module",
    "ensure_sandbox",
    "hosted",
    "is_sandboxed_tool",
    "sandboxed",
    "sandboxes_for",
]

#: what a refused call does: ``"text"`` (the model reads the denial) or ``"raise"`` (the
#: framework's own handling of an exception, e.g. stopping the run)
ON_DENIAL = ("text", "raise")


def _never(name: str, annotation: Any) -> bool:
    return False


@dataclasses.dataclass(frozen=True)
class Framework:
    """How one framework meets the sandbox: what an adapter tells :func:`sandboxed`."""

    #: the framework's short name: the adapter is ``pysandboxes-<name>``
    name: str
    #: the adapter's decorator as a user writes it, for messages: ``"@sandboxed_tool(server)"``
    decorator: str
    #: the framework's tool-error path: given the text a model may read and the refusal, return
    #: what the model is told, or raise the framework's tool error (``from exc``)
    refusal: Callable[[str, BaseException], Any]
    #: is the parameter ``name: annotation`` (type hints resolved) one the framework injects?
    is_context: Callable[[str, Any], bool] = _never
    #: the adapter's host-side decorator (a tool that may use the context), for messages
    host_decorator: str = ""
    #: how an application opens the sandbox once with this framework, for the INFO message
    lifecycle: str = "with pysandboxes.sandboxes():"
    #: the framework passes its context as the tool's first argument (pydantic-ai's
    #: ``RunContext``, openai-agents' ``RunContextWrapper``): a first parameter ``is_context``
    #: accepts needs no default; it is not sent, and the body gets its default, else ``None``
    context_first: bool = False

    @property
    def package(self) -> str:
        return f"pysandboxes-{self.name}"


def is_sandboxed_tool(obj: object) -> bool:
    """True for a wrapper made by :func:`sandboxed` or :func:`hosted`."""
    return getattr(obj, MARKER, None) is not None


# -- the wrappers ------------------------------------------------------------------------------


def sandboxed(
    function: Callable[..., Any],
    framework: Framework,
    *,
    on_denial: str = "text",
    timeout: float | None = None,
) -> Callable[..., Any]:
    """The host wrapper to hand to the framework: ``function``'s body runs in the sandbox.

    ``function`` is a module-level function or ``async def`` function defined in the module that
    calls this, or a ``@sandbox`` function of any module (registered when its module was
    imported, so the child finds it). ``timeout``: as ``@sandbox(timeout=)``.
    Raises ``TypeError`` at decoration for anything the child could not run (see the module
    docstring).
    """
    _check_on_denial(on_denial)
    registered = hasattr(function, "__sandbox_key__")
    original = _plain_function(function, framework)
    if not registered:  # a @sandbox function was registered at its module's import already
        _refuse_misplaced(original, framework)
    hints = _type_hints(original)
    signature = _signature(original, hints)
    context = _context_parameters(original, signature, hints, framework)
    inner = function if registered else sandbox(original, timeout=timeout)
    strip = _stripper(signature, context, _first_context(signature, hints, framework)) if context else None
    wrapper = _wrapper(original, inner, strip, framework, on_denial)
    return _as(wrapper, original, signature, hints, framework)


def hosted(
    function: Callable[..., Any],
    framework: Framework,
    *,
    on_denial: str = "text",
) -> Callable[..., Any]:
    """A tool whose body stays on the host (it may use the framework's context) and calls
    ``@sandbox`` functions: the sandbox is opened as for :func:`sandboxed`, and their refusals
    reach the model through the framework's tool-error path. The body itself is not confined.
    """
    _check_on_denial(on_denial)
    original = _plain_function(function, framework, host=True)
    hints = _type_hints(original)
    signature = _signature(original, hints)
    wrapper = _wrapper(original, original, None, framework, on_denial)
    return _as(wrapper, original, signature, hints, framework)


def _wrapper(
    original: Callable[..., Any],
    inner: Callable[..., Any],
    strip: Callable[[tuple[Any, ...], dict[str, Any]], tuple[tuple[Any, ...], dict[str, Any]]] | None,
    framework: Framework,
    on_denial: str,
) -> Any:
    """Call ``inner`` (with the context parameters taken out by ``strip``) once a sandbox is
    open, or ``original`` under python-sb; a refusal goes through the framework's error path."""
    refusal = framework.refusal if on_denial == "text" else None
    module = original.__module__
    name = original.__name__

    if code_flags(original) & CO_COROUTINE:

        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            if State.in_sandbox:  # python-sb: the whole program is sandboxed; run it here
                body = original
            else:
                if _current() is None:
                    await _ensure_async(module, framework, name)
                body = inner
                if strip is not None:
                    args, kwargs = strip(args, kwargs)
            try:
                return await body(*args, **kwargs)
            except Exception as exc:
                if refusal is None or not sandbox_denials(exc):
                    raise
                return refusal(denial_text(exc), exc)

        return async_wrapper

    def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
        if State.in_sandbox:
            body = original
        else:
            if _current() is None:
                ensure_sandbox(module, framework, name)
            body = inner
            if strip is not None:
                args, kwargs = strip(args, kwargs)
        try:
            return body(*args, **kwargs)
        except Exception as exc:
            if refusal is None or not sandbox_denials(exc):
                raise
            return refusal(denial_text(exc), exc)

    return sync_wrapper


def _check_on_denial(on_denial: str) -> None:
    if on_denial not in ON_DENIAL:
        raise ValueError(f"on_denial={on_denial!r}: expected one of {', '.join(map(repr, ON_DENIAL))}")


def _as(
    wrapper: Any,
    original: Callable[..., Any],
    signature: inspect.Signature,
    hints: dict[str, Any],
    framework: Framework,
) -> Callable[..., Any]:
    """``wrapper`` with ``original``'s identity (what a framework reads to build the schema)."""
    for attribute in ("__module__", "__name__", "__qualname__", "__doc__"):
        setattr(wrapper, attribute, getattr(original, attribute))
    wrapper.__annotations__ = hints
    wrapper.__signature__ = signature
    setattr(wrapper, MARKER, framework.name)
    return wrapper  # type: ignore[no-any-return]


# -- what the framework sees -------------------------------------------------------------------


def _type_hints(function: Callable[..., Any]) -> dict[str, Any]:
    """The function's annotations, resolved: the wrapper lives in this module, where the
    names of ``from __future__ import annotations`` strings do not exist."""
    try:
        return typing.get_type_hints(function, include_extras=True)
    except Exception:  # unresolvable here: the framework meets the same strings it would
        return dict(getattr(function, "__annotations__", {}))


def _signature(function: Callable[..., Any], hints: dict[str, Any]) -> inspect.Signature:
    signature = inspect.signature(function)
    parameters = [
        p.replace(annotation=hints.get(p.name, p.annotation)) for p in signature.parameters.values()
    ]
    return signature.replace(
        parameters=parameters, return_annotation=hints.get("return", signature.return_annotation)
    )


def _context_parameters(
    function: Callable[..., Any],
    signature: inspect.Signature,
    hints: dict[str, Any],
    framework: Framework,
) -> tuple[str, ...]:
    """The parameters the framework injects; refused when one has no default (the body would
    need the object itself, on the other side of the process boundary), except the first one of
    a ``context_first`` framework (always injected: the body gets ``None``)."""
    names = []
    first = _first_context(signature, hints, framework)
    for parameter in signature.parameters.values():
        if not framework.is_context(parameter.name, hints.get(parameter.name, parameter.annotation)):
            continue
        if parameter.default is inspect.Parameter.empty and parameter.name != first:
            raise TypeError(_context_message(function, parameter, framework))
        names.append(parameter.name)
    return tuple(names)


def _context_message(function: Callable[..., Any], parameter: inspect.Parameter, framework: Framework) -> str:
    name = function.__name__
    annotation = parameter.annotation
    declared = parameter.name  # a framework may inject by name alone: `agent`, not `agent: _empty`
    if annotation is not inspect.Parameter.empty:
        declared += f": {getattr(annotation, '__name__', None) or repr(annotation)}"
    host = framework.host_decorator or "the framework's own decorator"
    prefix = "async " if code_flags(function) & CO_COROUTINE else ""
    await_ = "await " if prefix else ""
    return (
        f"{framework.decorator} runs {name}() in the sandbox, where its `{declared}` "
        f"(the framework's context object) cannot go: it stays on the host.\n"
        f"Do the context work on the host and pass plain values to the sandboxed body:\n\n"
        f"    @sandbox\n"
        f"    {prefix}def _{name}(...): ...          # the body, in the sandbox\n\n"
        f"    {host}\n"
        f"    {prefix}def {name}(..., {declared}):  # on the host, with the context\n"
        f"        ...use {parameter.name}...\n"
        f"        return {await_}_{name}(...)\n\n"
        f"or give the parameter a default (`{declared} = None`): the sandboxed body "
        f"then receives the default (see docs/integrations.md)."
    )


def _first_context(signature: inspect.Signature, hints: dict[str, Any], framework: Framework) -> str | None:
    """The name of the first parameter when a ``context_first`` framework injects it there."""
    if not framework.context_first:
        return None
    parameter = next(iter(signature.parameters.values()), None)
    if parameter is None or parameter.kind not in (
        parameter.POSITIONAL_ONLY,
        parameter.POSITIONAL_OR_KEYWORD,
    ):
        return None
    annotation = hints.get(parameter.name, parameter.annotation)
    return parameter.name if framework.is_context(parameter.name, annotation) else None


def _stripper(
    signature: inspect.Signature, context: tuple[str, ...], leading: str | None = None
) -> Callable[[tuple[Any, ...], dict[str, Any]], tuple[tuple[Any, ...], dict[str, Any]]]:
    """Take the context parameters out of a call (frameworks pass them by keyword; a positional
    one is moved to its name first). ``leading``: the first parameter, a context the framework
    passes by position, replaced by its default (else ``None``) in place."""
    parameters = list(signature.parameters.values())
    if leading is not None:
        default = parameters[0].default
        placeholder = None if default is inspect.Parameter.empty else default
        parameters = parameters[1:]
        context = tuple(n for n in context if n != leading)
    positional = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    first = min((positional.index(n) for n in context if n in positional), default=len(positional))

    def strip_rest(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        if len(args) > first:  # a context value passed by position: everything by name
            kwargs = {**dict(zip(positional, args, strict=False)), **kwargs}
            args = ()
        return args, {k: v for k, v in kwargs.items() if k not in context}

    if leading is None:
        return strip_rest

    def strip(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        if args:
            rest, kwargs = strip_rest(args[1:], kwargs)
        else:  # the context passed by name
            rest, kwargs = strip_rest((), {k: v for k, v in kwargs.items() if k != leading})
        return (placeholder, *rest), kwargs

    return strip


# -- what the sandbox can run ------------------------------------------------------------------


def _plain_function(function: Any, framework: Framework, *, host: bool = False) -> Any:
    """The module-level function behind ``function``, or ``TypeError`` saying what to do."""
    decorator = framework.host_decorator if host and framework.host_decorator else framework.decorator
    if is_sandboxed_tool(function):
        raise TypeError(
            f"{decorator}: {getattr(function, '__name__', function)!r} is already a tool made by "
            f"{framework.package if getattr(function, MARKER) == framework.name else 'an adapter'}: "
            "use one decorator"
        )
    if hasattr(function, "__sandbox_key__"):  # @sandbox under the adapter: the same body
        if host:
            raise TypeError(
                f"{decorator} keeps its body on the host; {function.__name__}() is a @sandbox "
                f"function: call it from the host tool instead, or use {framework.decorator}"
            )
        function = function.__wrapped__
    if isinstance(function, types.MethodType):
        raise TypeError(
            f"{decorator} makes a tool of a function; {function.__qualname__} is a method bound to "
            "an instance, which the sandbox's child cannot find: use a module-level function"
        )
    if not isinstance(function, types.FunctionType):
        kind = type(function)
        raise TypeError(
            f"{decorator} makes a tool of a function, not of a {kind.__module__}.{kind.__qualname__}: "
            f"put {decorator} alone on the function (it applies the framework's decorator itself)"
        )
    if function.__name__ == "<lambda>" or "<locals>" in function.__qualname__:
        raise TypeError(
            f"{decorator}: {function.__qualname__} is defined inside a function; the sandbox's "
            "child finds a tool by module and name: define it at module level"
        )
    flags = code_flags(function)
    if flags & (CO_GENERATOR | CO_ASYNC_GENERATOR):
        raise TypeError(
            f"{decorator}: {function.__qualname__}() is a generator; a tool returns its result: "
            "return a list (or call a @sandbox generator from the tool)"
        )
    return function


def _refuse_misplaced(function: Callable[..., Any], framework: Framework) -> None:
    """The child finds a tool because importing its module registers it again there: a tool
    made after its module was imported (by another module, or at run time) would be missing."""
    if function.__module__ in ("__main__", "__mp_main__"):
        return  # a script's top level runs in the child too (as __sb_main__)
    module = sys.modules.get(function.__module__)
    initializing = getattr(getattr(module, "__spec__", None), "_initializing", None)
    if initializing is False:
        raise TypeError(
            f"{framework.decorator}: {function.__name__}() belongs to module {function.__module__!r}, "
            "which was already imported: the sandbox's child imports that module to find the tool, "
            "and would not see it made. Apply the decorator in that module, at its top level"
        )


# -- the session -------------------------------------------------------------------------------

_START_LOCK = threading.Lock()


def _current() -> _Session | None:
    return _Session.current


def ensure_sandbox(module: str | None, framework: Framework | None = None, tool: str = "") -> None:
    """Open the sandbox if none is: the ``sandboxes()`` of ``module`` (its rule file), left open
    until Python exits, and said at INFO on ``Pysandboxes``. No-op under ``python-sb`` and
    inside an open ``sandboxes()`` block."""
    if State.in_sandbox or _current() is not None:
        return
    with _START_LOCK:
        if _current() is not None:
            return
        session = sandboxes(_caller=module).__enter__()
    import logging

    who = f"{framework.package}: " if framework is not None else ""
    what = f" for {tool}()" if tool else ""
    hint = framework.lifecycle if framework is not None else "with pysandboxes.sandboxes():"
    logging.getLogger("Pysandboxes").info(
        "%sno sandbox was open%s: started one with %s (os-sandbox=%s); it stays up until Python "
        "exits (open it once for the application with %s)",
        who,
        what,
        session.signature[0],
        session.provider,
        hint,
    )


def caller_module() -> str | None:
    """The module of the nearest caller outside PySandboxes and its adapters (``pysandboxes*``
    modules): the application module whose rule file ``sandboxes()`` would find. A lifecycle
    hook calls this when it is built, since the framework, not the application, enters it."""
    frame = sys._getframe(1)
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith("pysandboxes"):
        frame = frame.f_back  # type: ignore[assignment]
    return frame.f_globals.get("__name__") if frame is not None else None


def sandboxes_for(
    module: str | None,
    init_fn: Callable[[], Any] | None = None,
    sandboxes_config: str | None = None,
    **settings: Any,
) -> sandboxes:
    """``sandboxes(init_fn, sandboxes_config, **settings)`` whose default rule file is found from
    ``module`` (see :func:`caller_module`) rather than from the frame that enters it."""
    return sandboxes(init_fn, sandboxes_config, _caller=module, **settings)


async def _ensure_async(module: str | None, framework: Framework, tool: str) -> None:
    import asyncio

    start = functools.partial(ensure_sandbox, module, framework, tool)
    await asyncio.get_running_loop().run_in_executor(None, start)
