"""``@sandboxed_function_tool`` (``agents.function_tool`` with the body sandboxed),
``@host_function_tool`` (a host-side tool that may use the run context) and ``SandboxRunHooks``
(the sandbox opened for each ``Runner.run``).

openai-agents hands a tool's exception to the tool's ``failure_error_function``, whose string is
what the model reads (the default one says only ``An error occurred while running the tool.
Please try again.``; ``None`` makes the run raise). A refusal is raised as
:class:`SandboxRefusal` (its message is the denial text, no hint) and the adapter's preset
``failure_error_function`` gives the model :data:`REFUSED` followed by that text (as it does
for a refusal of the framework's own work around the body, under ``python-sb``); every other
exception goes to the application's ``failure_error_function`` (the framework's default when
none is given), as without the adapter. ``on_denial="raise"`` leaves refusals to the framework's
own handling too.

The ``RunContextWrapper`` / ``ToolContext`` openai-agents passes as a tool's first argument
holds the run's state, usage and callbacks: it stays on the host (the sandboxed body receives
``None`` in its place); ``@host_function_tool`` is for a tool that uses it.
"""

from __future__ import annotations

import inspect
import logging
import re
import threading
import typing
from typing import TYPE_CHECKING, Any

from agents import (
    RunContextWrapper,
    RunHooks,
    ToolErrorFormatterArgs,
    default_tool_error_function,
    function_tool,
)
from agents.tool_context import ToolContext

from pysandboxes import denial_text, is_in_sandbox, sandbox_denials
from pysandboxes.tools import ON_DENIAL, Framework, caller_module, hosted, sandboxed, sandboxes_for

if TYPE_CHECKING:
    from collections.abc import Callable

    from agents import FunctionTool

    from pysandboxes import sandboxes

__all__ = [
    "FRAMEWORK",
    "REFUSED",
    "SandboxRefusal",
    "SandboxRunHooks",
    "host_function_tool",
    "sandboxed_function_tool",
]

#: what the model reads before the denial text of a refused tool call
REFUSED = "The sandbox refused this tool call: "

_LIFECYCLE = "Runner.run(agent, input, hooks=SandboxRunHooks())"

_FUNCTION_TOOL = inspect.signature(function_tool)

#: ``failure_error_function`` not given: the framework's default for other exceptions
_UNSET: Any = object()

#: a context annotation left as a string (``from __future__ import annotations`` unresolved)
_CONTEXT_NAME = re.compile(r"^\s*(?:[\w.]+\.)?(?:RunContextWrapper|ToolContext)\b")


class SandboxRefusal(Exception):
    """The sandbox refused something the tool's body did; the message is the denial text (the
    first line of each refusal, without the hint for the developer). Its ``__cause__`` is the
    full refusal."""


def _refusal(text: str, exc: BaseException) -> Any:
    raise SandboxRefusal(text) from exc


def _is_context(name: str, annotation: Any) -> bool:
    """``RunContextWrapper[...]``, ``ToolContext[...]`` (a subclass), or a union holding one."""
    if isinstance(annotation, str):
        return bool(_CONTEXT_NAME.match(annotation))
    for candidate in (annotation, typing.get_origin(annotation), *typing.get_args(annotation)):
        origin = typing.get_origin(candidate) or candidate
        if isinstance(origin, type) and issubclass(origin, RunContextWrapper):
            return True
    return False


FRAMEWORK = Framework(
    "openai-agents",
    decorator="@sandboxed_function_tool",
    refusal=_refusal,
    is_context=_is_context,
    host_decorator="@host_function_tool",
    lifecycle=_LIFECYCLE,
    context_first=True,
)


def _failure_error_function(given: Any) -> Any:
    """The preset ``failure_error_function``: a refusal is :data:`REFUSED` and its denial text;
    any other exception is ``given``'s (``None``: the run raises it, as
    ``function_tool(failure_error_function=None)`` does), or, when none was given, the
    framework's default message as ``RunConfig.tool_error_formatter`` may rewrite it."""

    def sandbox_failure_error_function(ctx: RunContextWrapper[Any], error: Exception) -> Any:
        if isinstance(error, SandboxRefusal):
            return f"{REFUSED}{error}"
        if sandbox_denials(error):  # refused around the body: python-sb refusing openai-agents' thread
            return f"{REFUSED}{denial_text(error)}"
        if given is None:
            return None
        if given is not _UNSET:
            return given(ctx, error)
        return _default_message(ctx, error)

    return sandbox_failure_error_function


async def _default_message(ctx: RunContextWrapper[Any], error: Exception) -> str:
    """What a tool without ``failure_error_function`` tells the model of an exception: the
    framework's default message, through the run's ``tool_error_formatter`` if it has one."""
    message: str = default_tool_error_function(ctx, error)
    run_config = getattr(ctx, "run_config", None)
    formatter = getattr(run_config, "tool_error_formatter", None)
    if formatter is None or not isinstance(ctx, ToolContext):
        return message
    try:
        formatted = formatter(
            ToolErrorFormatterArgs(
                kind="tool_exception",
                tool_type="function",
                tool_name=ctx.qualified_tool_name,
                call_id=ctx.tool_call_id,
                default_message=message,
                run_context=ctx,
                error=error,
            )
        )
        if inspect.isawaitable(formatted):
            formatted = await formatted
    except Exception:  # as the framework: a failing formatter leaves the default message
        logging.getLogger("openai.agents").warning("Tool error formatter failed", exc_info=True)
        return message
    return formatted if isinstance(formatted, str) else message


def _check(on_denial: str) -> None:
    if on_denial not in ON_DENIAL:
        raise ValueError(f"on_denial={on_denial!r}: expected one of {', '.join(map(repr, ON_DENIAL))}")


def _decorator(
    fn: Any,
    on_denial: str,
    failure_error_function: Any,
    function_tool_kwargs: dict[str, Any],
    wrap: Callable[[Callable[..., Any]], Callable[..., Any]],
) -> Any:
    _check(on_denial)
    kwargs = dict(function_tool_kwargs)
    # function_tool's keywords checked now, before the body is registered with the sandbox
    _FUNCTION_TOOL.bind(None, **kwargs, failure_error_function=failure_error_function)
    if on_denial == "text":
        kwargs["failure_error_function"] = _failure_error_function(failure_error_function)
    elif failure_error_function is not _UNSET:  # "raise": the framework's handling, unchanged
        kwargs["failure_error_function"] = failure_error_function

    def make(function: Callable[..., Any]) -> FunctionTool:
        return function_tool(wrap(function), **kwargs)

    return make if fn is None else make(fn)


def sandboxed_function_tool(
    fn: Callable[..., Any] | None = None,
    *,
    on_denial: str = "text",
    sandbox_timeout: float | None = None,
    failure_error_function: Any = _UNSET,
    **function_tool_kwargs: Any,
) -> Any:
    """``agents.function_tool`` whose body runs in the sandbox: the same forms
    (``@sandboxed_function_tool``, ``@sandboxed_function_tool(name_override=...,
    description_override=..., strict_mode=..., failure_error_function=..., ...)``,
    ``sandboxed_function_tool(function, ...)``) and a ``FunctionTool``.

    ``on_denial="text"``: a refusal reaches the model as :data:`REFUSED` and the denial text,
    and the run goes on; other exceptions go to ``failure_error_function`` as usual.
    ``"raise"``: refusals get the framework's own handling too. ``sandbox_timeout``: seconds a
    call may take in the sandbox (``@sandbox(timeout=)``); ``timeout=`` stays the framework's.
    A first parameter ``RunContextWrapper`` / ``ToolContext`` stays on the host: the body
    receives ``None`` there (``@host_function_tool`` for a tool that uses it).
    """
    return _decorator(
        fn,
        on_denial,
        failure_error_function,
        function_tool_kwargs,
        lambda f: sandboxed(f, FRAMEWORK, on_denial=on_denial, timeout=sandbox_timeout),
    )


def host_function_tool(
    fn: Callable[..., Any] | None = None,
    *,
    on_denial: str = "text",
    failure_error_function: Any = _UNSET,
    **function_tool_kwargs: Any,
) -> Any:
    """``agents.function_tool`` for a tool that runs **on the host** (it may use its
    ``RunContextWrapper`` / ``ToolContext``) and calls ``@sandbox`` functions with plain values:
    the sandbox is open for them, and their refusals reach the model as for
    :func:`sandboxed_function_tool`. Its body itself is not confined."""
    return _decorator(
        fn,
        on_denial,
        failure_error_function,
        function_tool_kwargs,
        lambda f: hosted(f, FRAMEWORK, on_denial=on_denial),
    )


class SandboxRunHooks(RunHooks[Any]):
    """Opens the sandbox when a run's first agent starts and leaves it when the run's final
    output is produced: ``Runner.run(agent, input, hooks=SandboxRunHooks())`` (``run_sync``,
    ``run_streamed`` alike).

    The arguments are ``sandboxes()``'s (``init_fn``, ``sandboxes_config``, ``learn=``,
    ``envs=``, rules such as ``expose_ro="./data"``); the default rule file is the one next to the
    module that creates the hooks. A run is told apart by its ``Usage`` object (one per run,
    handoffs included); concurrent runs share one child, the last to end stops it. openai-agents
    has no hook for a run that raises (``MaxTurnsExceeded``, a guardrail tripwire, a tool error
    with ``failure_error_function=None``): the sandbox it opened then stays up until
    :meth:`close`, or until Python exits. A subclass that overrides ``on_agent_start`` /
    ``on_agent_end`` calls ``super()``.
    """

    def __init__(
        self,
        init_fn: Callable[[], Any] | None = None,
        sandboxes_config: str | None = None,
        **settings: Any,
    ) -> None:
        self._module = caller_module()
        self._init_fn = init_fn
        self._config = sandboxes_config
        self._settings = settings
        self._lock = threading.Lock()
        self._open: dict[int, tuple[object, sandboxes]] = {}

    async def on_agent_start(self, context: Any, agent: Any) -> None:
        if is_in_sandbox():  # python-sb: the whole program is sandboxed already
            return
        usage = context.usage
        with self._lock:
            if id(usage) in self._open:  # a handoff: the run's sandbox is open
                return
        block = sandboxes_for(self._module, self._init_fn, self._config, **self._settings)
        await block.__aenter__()
        with self._lock:
            self._open[id(usage)] = (usage, block)

    async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
        with self._lock:
            _, block = self._open.pop(id(context.usage), (None, None))
        if block is not None:
            await block.__aexit__(None, None, None)

    def close(self) -> None:
        """Leave the sandbox of every run these hooks saw start and not end (a run that raised);
        the last one left stops the child. A no-op when none is left."""
        with self._lock:
            blocks = [block for _, block in self._open.values()]
            self._open.clear()
        for block in reversed(blocks):
            block.__exit__(None, None, None)
