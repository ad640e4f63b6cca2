"""``@sandboxed_tool`` (``strands.tool`` with the body sandboxed) and ``SandboxHooks`` (the
sandbox opened for each agent invocation).

strands turns any exception of a tool into an error tool result whose text is
``Error: <type> - <message>``. A refusal is raised as :class:`SandboxRefusal` (its message is the
denial text, no hint) and the tool's ``stream`` gives the model that text alone, with
``status="error"``; the exception still rides along for ``AfterToolCallEvent`` hooks. Other
exceptions keep strands' handling. ``on_denial="raise"`` ends the invocation the way strands'
own ``stop`` tool does (``agent.cancel(after_current_tools=True)``): strands reports every
other exception's message to the model, so letting the refusal itself through would hand the
model the hint meant for the developer.
"""

from __future__ import annotations

import threading
import typing
from typing import TYPE_CHECKING, Any

from strands import tool
from strands.hooks import AfterInvocationEvent, BeforeInvocationEvent, HookProvider, HookRegistry
from strands.tools.decorator import DecoratedFunctionTool
from strands.types._events import ToolResultEvent
from strands.types.tools import ToolContext

from pysandboxes.tools import ON_DENIAL, Framework, caller_module, hosted, sandboxed, sandboxes_for

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Callable

    from strands.types.tools import JSONSchema, ToolUse

    from pysandboxes import sandboxes

__all__ = [
    "STOPPED",
    "SandboxHooks",
    "SandboxRefusal",
    "SandboxStop",
    "SandboxedFunctionTool",
    "host_tool",
    "sandboxed_tool",
]

#: the result of a tool whose refusal ends the invocation (``on_denial="raise"``), and the
#: invocation's last assistant message
STOPPED = "The sandbox refused this tool call: the run stops here."

_LIFECYCLE = "Agent(..., hooks=[SandboxHooks()])"


class SandboxRefusal(Exception):
    """The sandbox refused something the tool's body did; the message is what the model reads
    (the first line of each refusal, without the hint for the developer)."""


class SandboxStop(SandboxRefusal):
    """A refusal of a tool made with ``on_denial="raise"``: the invocation ends after the tools
    of the current turn."""


def _refusal(text: str, exc: BaseException) -> Any:
    raise SandboxRefusal(text) from exc


def _stop(text: str, exc: BaseException) -> Any:
    raise SandboxStop(text) from exc


def _context_name(context: bool | str) -> str | None:
    """The parameter ``tool(context=...)`` fills with the ``ToolContext``."""
    if isinstance(context, str):
        return context.strip() or None
    return "tool_context" if context else None


def _framework(on_denial: str, context: bool | str, decorator: str) -> Framework:
    """How a tool of these arguments meets the sandbox: strands injects ``agent`` by name, and
    the ``ToolContext`` into the parameter ``context=`` names (it refuses one elsewhere)."""
    if on_denial not in ON_DENIAL:
        raise ValueError(f"on_denial={on_denial!r}: expected one of {', '.join(map(repr, ON_DENIAL))}")
    name = _context_name(context)

    def is_context(parameter: str, annotation: Any) -> bool:
        if parameter in ("agent", name):
            return True
        candidates = (annotation, typing.get_origin(annotation), *typing.get_args(annotation))
        return any(c is ToolContext for c in candidates)

    shown = "" if name is None else ("(context=True)" if context is True else f"(context={name!r})")
    return Framework(
        "strands",
        decorator=decorator,
        refusal=_refusal if on_denial == "text" else _stop,
        is_context=is_context,
        host_decorator=f"@host_tool{shown}",
        lifecycle=_LIFECYCLE,
    )


class SandboxedFunctionTool(DecoratedFunctionTool):  # type: ignore[type-arg]
    """strands' ``DecoratedFunctionTool`` whose refusals are the model's text: an error result
    reading the denial (``on_denial="text"``), or ending the invocation (``"raise"``)."""

    async def stream(
        self, tool_use: ToolUse, invocation_state: dict[str, Any], **kwargs: Any
    ) -> AsyncGenerator[Any, None]:
        async for event in super().stream(tool_use, invocation_state, **kwargs):
            exception = event.exception if isinstance(event, ToolResultEvent) else None
            if isinstance(exception, SandboxRefusal):
                text = str(exception)
                if isinstance(exception, SandboxStop):
                    text = STOPPED
                    agent = invocation_state.get("agent")
                    if agent is not None and hasattr(agent, "cancel"):
                        agent.cancel(message=STOPPED, after_current_tools=True)
                result = {**event.tool_result, "status": "error", "content": [{"text": text}]}
                event = ToolResultEvent(result, exception=exception)  # type: ignore[arg-type]
            yield event


def sandboxed_tool(
    func: Callable[..., Any] | None = None,
    description: str | None = None,
    inputSchema: JSONSchema | None = None,
    name: str | None = None,
    context: bool | str = False,
    *,
    on_denial: str = "text",
    timeout: float | None = None,
) -> Any:
    """``strands.tool`` whose body runs in the sandbox: the same forms (``@sandboxed_tool``,
    ``@sandboxed_tool(name=..., description=..., inputSchema=..., context=True)``,
    ``sandboxed_tool(function)``), and a ``DecoratedFunctionTool``.

    ``on_denial="text"``: a refusal is an error tool result the model reads and the run goes on;
    ``"raise"``: the invocation ends after the current tools (``agent.cancel``). ``timeout``:
    seconds a call may take. The ``ToolContext`` (``context=``) and ``agent`` stay on the host.
    """
    framework = _framework(on_denial, context, "@sandboxed_tool")
    return _decorator(
        func,
        {"description": description, "inputSchema": inputSchema, "name": name, "context": context},
        lambda f: sandboxed(f, framework, timeout=timeout),
    )


def host_tool(
    func: Callable[..., Any] | None = None,
    description: str | None = None,
    inputSchema: JSONSchema | None = None,
    name: str | None = None,
    context: bool | str = False,
    *,
    on_denial: str = "text",
) -> Any:
    """``strands.tool`` for a tool that runs **on the host** (it may use its ``tool_context``
    and ``agent``) and calls ``@sandbox`` functions with plain values: the sandbox is open for
    them, and their refusals reach the model as error tool results."""
    framework = _framework(on_denial, context, "@host_tool")
    return _decorator(
        func,
        {"description": description, "inputSchema": inputSchema, "name": name, "context": context},
        lambda f: hosted(f, framework),
    )


def _decorator(
    func: Any, tool_kwargs: dict[str, Any], wrap: Callable[[Callable[..., Any]], Callable[..., Any]]
) -> Any:
    def make(function: Callable[..., Any]) -> SandboxedFunctionTool:
        made = tool(**tool_kwargs)(wrap(function))
        return SandboxedFunctionTool(made.tool_name, made.tool_spec, made._tool_func, made._metadata)

    return make if func is None else make(func)


class SandboxHooks(HookProvider):
    """Opens the sandbox when an agent invocation starts and leaves it when the invocation ends,
    however it ends: ``Agent(model, tools=[...], hooks=[SandboxHooks()])``.

    The arguments are ``sandboxes()``'s (``init_fn``, ``sandboxes_config``, ``learn=``,
    ``envs=``, rules such as ``expose_ro="./data"``); the default rule file is the one next to the
    module that creates the hooks. Invocations share one sandbox child, counted: nested and
    concurrent invocations (of one agent or of several holding the same hooks) join it, the last
    to end stops it.
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
        self._open: list[sandboxes] = []

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeInvocationEvent, self._before_invocation)
        registry.add_callback(AfterInvocationEvent, self._after_invocation)

    async def _before_invocation(self, event: BeforeInvocationEvent) -> None:
        block = sandboxes_for(self._module, self._init_fn, self._config, **self._settings)
        await block.__aenter__()
        with self._lock:
            self._open.append(block)

    async def _after_invocation(self, event: AfterInvocationEvent) -> None:
        with self._lock:
            block = self._open.pop() if self._open else None
        if block is not None:
            await block.__aexit__(None, None, None)
