"""``SandboxedToolset`` (a ``FunctionToolset`` whose tools run in the sandbox, and which opens
the sandbox for each agent run), ``@sandboxed_tool_plain(agent)`` / ``@sandboxed_tool(agent)``
(``agent.tool_plain`` / ``agent.tool`` with the body sandboxed) and ``@host_tool(agent)``.

A refusal is raised as pydantic-ai's own ``ToolFailed`` with the denial text (no hint): the
model reads a tool return whose outcome is ``"failed"``, the run goes on, and no retry is
spent. The body's ``ModelRetry`` (and ``ToolFailed``, ``CallDeferred``, ``ApprovalRequired``)
crosses back from the child as itself and keeps pydantic-ai's meaning, even when a refusal
caused it. ``on_denial="raise"`` lets the refusal through: pydantic-ai ends the run with it.
"""

from __future__ import annotations

import functools
import inspect
import threading
import types
import typing
from typing import TYPE_CHECKING, Any

from pydantic_ai import FunctionToolset, RunContext, Tool
from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, ModelRetry, ToolFailed
from pydantic_ai.tools import AgentDepsT

from pysandboxes.tools import (
    ON_DENIAL,
    Framework,
    caller_module,
    hosted,
    is_sandboxed_tool,
    sandboxed,
    sandboxes_for,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from pysandboxes import sandboxes

__all__ = [
    "FRAMEWORK",
    "SandboxedToolset",
    "host_tool",
    "sandboxed_tool",
    "sandboxed_tool_plain",
]

#: pydantic-ai's control flow: raised by a body, it keeps its meaning whatever caused it
_CONTROL = (ModelRetry, ToolFailed, CallDeferred, ApprovalRequired)

_LIFECYCLE = "Agent(..., toolsets=[SandboxedToolset()])"

#: the parameters of FunctionToolset(...) (the other keywords of SandboxedToolset go to sandboxes())
_TOOLSET_PARAMETERS = frozenset(inspect.signature(FunctionToolset.__init__).parameters) - {"self", "tools"}


def _refusal(text: str, exc: BaseException) -> Any:
    if isinstance(exc, _CONTROL):  # the body's own ModelRetry (...) about a refusal it caught
        raise exc
    raise ToolFailed(text) from exc


def _is_run_context(annotation: Any) -> bool:
    if annotation is RunContext or typing.get_origin(annotation) is RunContext:
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_is_run_context(a) for a in typing.get_args(annotation))
    return False


def _is_context(name: str, annotation: Any) -> bool:
    """What pydantic-ai injects: the ``RunContext`` (``RunContext[Deps]``, also in a union)."""
    try:
        return _is_run_context(annotation)
    except Exception:  # an annotation that cannot be read: not a RunContext either
        return False


@functools.cache
def _framework(decorator: str, context_first: bool) -> Framework:
    return Framework(
        "pydantic-ai",
        decorator=decorator,
        refusal=_refusal,
        is_context=_is_context,
        host_decorator="@host_tool(agent)",
        lifecycle=_LIFECYCLE,
        context_first=context_first,
    )


#: how ``agent.tool_plain`` tools meet the sandbox (``agent.tool`` ones: the same, ``context_first``)
FRAMEWORK = _framework("@sandboxed_tool_plain(agent)", False)


def _check_on_denial(on_denial: str) -> None:
    if on_denial not in ON_DENIAL:
        raise ValueError(f"on_denial={on_denial!r}: expected one of {', '.join(map(repr, ON_DENIAL))}")


def _takes_ctx(function: Callable[..., Any]) -> bool:
    """pydantic-ai's own inference: the first parameter is annotated ``RunContext``."""
    try:
        parameter = next(iter(inspect.signature(function).parameters.values()), None)
    except (TypeError, ValueError):
        return False
    if parameter is None or parameter.annotation is inspect.Parameter.empty:
        return False
    try:
        annotation = typing.get_type_hints(function, include_extras=True).get(parameter.name)
    except Exception:
        annotation = parameter.annotation
    return annotation is RunContext or typing.get_origin(annotation) is RunContext


def _sandboxed(
    function: Any, decorator: str, takes_ctx: bool, on_denial: str, sandbox_timeout: float | None
) -> Callable[..., Any]:
    if takes_ctx and isinstance(function, types.FunctionType) and not _takes_ctx(function):
        # the context would be sent to the child as an argument: refuse it here
        raise TypeError(
            f"{decorator}: the first parameter of {function.__name__}() must be the "
            "`ctx: RunContext[...]` (annotated: the sandbox keeps it on the host), as for "
            "agent.tool; a tool without it is @sandboxed_tool_plain(agent)"
        )
    framework = _framework(decorator, takes_ctx)
    try:
        return sandboxed(function, framework, on_denial=on_denial, timeout=sandbox_timeout)
    except TypeError as exc:
        if "which was already imported" not in str(exc):
            raise
        raise TypeError(
            f"{exc}; or mark it @sandbox there: a @sandbox function of any module can be given to {decorator}"
        ) from None


def _target(agent: Any, decorator: str) -> Any:
    if isinstance(agent, types.FunctionType) or not hasattr(agent, "tool_plain"):
        raise TypeError(
            f"{decorator} registers the tool with an agent (or a FunctionToolset): "
            f"write {decorator.replace('(agent)', '(my_agent)')}, with the Agent as its first argument"
        )
    return agent


def sandboxed_tool_plain(
    agent: Any, /, *, on_denial: str = "text", sandbox_timeout: float | None = None, **tool_kwargs: Any
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``agent.tool_plain(**tool_kwargs)`` whose body runs in the sandbox: the same keyword
    arguments (``name=``, ``description=``, ``retries=``, ``prepare=``, ``docstring_format=``,
    ``timeout=`` (pydantic-ai's), ...), the same schema. Returns the host wrapper, callable like
    the function. ``agent`` may also be a ``FunctionToolset``.

    ``on_denial="text"``: a refusal is a failed tool return the model reads, and the run goes
    on; ``"raise"``: pydantic-ai ends the run with it. ``sandbox_timeout``: seconds a call may
    take in the child (as ``@sandbox(timeout=)``).
    """
    decorator = "@sandboxed_tool_plain(agent)"
    target = _target(agent, decorator)
    _check_on_denial(on_denial)

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        wrapper = _sandboxed(function, decorator, False, on_denial, sandbox_timeout)
        target.tool_plain(**tool_kwargs)(wrapper)
        return wrapper

    return decorate


def sandboxed_tool(
    agent: Any, /, *, on_denial: str = "text", sandbox_timeout: float | None = None, **tool_kwargs: Any
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``agent.tool(**tool_kwargs)`` whose body runs in the sandbox. The first parameter is the
    ``RunContext``, as for ``agent.tool``; it stays on the host (it holds the deps, the model,
    the usage) and the sandboxed body receives ``None`` in its place. A body that needs the
    context itself is a :func:`host_tool` calling a ``@sandbox`` function with plain values.
    Arguments as :func:`sandboxed_tool_plain`.
    """
    decorator = "@sandboxed_tool(agent)"
    target = _target(agent, decorator)
    _check_on_denial(on_denial)

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        wrapper = _sandboxed(function, decorator, True, on_denial, sandbox_timeout)
        target.tool(**tool_kwargs)(wrapper)
        return wrapper

    return decorate


def host_tool(
    agent: Any, /, *, on_denial: str = "text", **tool_kwargs: Any
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``agent.tool(**tool_kwargs)`` for a tool that runs **on the host**: it gets the
    ``RunContext`` (``ctx.deps``, ``ctx.usage``, ...) and calls ``@sandbox`` functions with
    plain values. The sandbox is open for them (the run's ``SandboxedToolset``, else the first
    call opens one), and their refusals reach the model as the tool's failed return. The body
    itself is not confined. A function without a ``RunContext`` first goes to
    ``agent.tool_plain``.
    """
    target = _target(agent, "@host_tool(agent)")
    _check_on_denial(on_denial)

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        takes_ctx = isinstance(function, types.FunctionType) and _takes_ctx(function)
        wrapper = hosted(function, _framework("@host_tool(agent)", takes_ctx), on_denial=on_denial)
        (target.tool if takes_ctx else target.tool_plain)(**tool_kwargs)(wrapper)
        return wrapper

    return decorate


class SandboxedToolset(FunctionToolset[AgentDepsT]):
    """A ``FunctionToolset`` whose tools' bodies run in the sandbox, and which opens the sandbox
    for each agent run: ``Agent(model, toolsets=[SandboxedToolset([read_file, fetch])])``.

    Functions are added as ``FunctionToolset`` adds them (a ``RunContext`` first parameter
    makes an ``agent.tool``-style tool, whose context stays on the host: the body gets
    ``None``), by the constructor, ``add_function``, ``@toolset.tool`` and
    ``@toolset.tool_plain``. A function of a module imported already must be a ``@sandbox``
    function (the child finds it by its module). ``Tool`` objects are accepted when their
    function was made by this adapter.

    The agent enters the toolset when a run starts and leaves it when the run ends, however it
    ends: that is the sandbox's lifetime (runs share one child, the last to end stops it). An
    empty ``SandboxedToolset()`` opens the sandbox for the tools of ``@sandboxed_tool(agent)``.

    Keywords: ``on_denial=`` and ``sandbox_timeout=`` for its tools; ``FunctionToolset``'s
    own (``max_retries=``, ``timeout=``, ``id=``, ...); ``init_fn=``, ``sandboxes_config=``
    and any other keyword for ``sandboxes()`` (``learn=``, ``envs=``, rules such as
    ``expose_ro="./data"``). The default rule file is the one next to the module that creates
    the toolset.
    """

    def __init__(
        self,
        tools: Sequence[Tool[AgentDepsT] | Callable[..., Any]] = (),
        *,
        on_denial: str = "text",
        sandbox_timeout: float | None = None,
        init_fn: Callable[[], Any] | None = None,
        sandboxes_config: str | None = None,
        **kwargs: Any,
    ) -> None:
        _check_on_denial(on_denial)
        self._on_denial = on_denial
        self._sandbox_timeout = sandbox_timeout
        self._module = caller_module()
        self._init_fn = init_fn
        self._config = sandboxes_config
        toolset_kwargs = {k: kwargs.pop(k) for k in list(kwargs) if k in _TOOLSET_PARAMETERS}
        self._settings = kwargs
        self._lock = threading.Lock()
        self._open: list[sandboxes] = []
        super().__init__(list(tools), **toolset_kwargs)

    def add_function(
        self, func: Any, takes_ctx: bool | None = None, *args: Any, **kwargs: Any
    ) -> Tool[AgentDepsT]:
        """``FunctionToolset.add_function`` with the function's body sandboxed."""
        if not is_sandboxed_tool(func):
            if takes_ctx is None:
                takes_ctx = isinstance(func, types.FunctionType) and _takes_ctx(func)
            func = _sandboxed(func, "SandboxedToolset", takes_ctx, self._on_denial, self._sandbox_timeout)
        return super().add_function(func, takes_ctx, *args, **kwargs)

    def add_tool(self, tool: Tool[AgentDepsT]) -> None:
        """``FunctionToolset.add_tool``, for a ``Tool`` whose function this adapter made."""
        if not is_sandboxed_tool(tool.function):
            raise TypeError(
                f"SandboxedToolset runs its tools' bodies in the sandbox; the Tool {tool.name!r} wraps "
                "a function that would run on the host: give the function itself "
                "(SandboxedToolset([function]) or toolset.add_function(function, name=...)), or put "
                "the Tool in a FunctionToolset of its own"
            )
        super().add_tool(tool)

    async def __aenter__(self) -> SandboxedToolset[AgentDepsT]:
        block = sandboxes_for(self._module, self._init_fn, self._config, **self._settings)
        await block.__aenter__()
        with self._lock:
            self._open.append(block)
        return self

    async def __aexit__(self, *args: Any) -> bool | None:
        with self._lock:
            block = self._open.pop() if self._open else None
        if block is not None:
            await block.__aexit__(*args)
        return None
