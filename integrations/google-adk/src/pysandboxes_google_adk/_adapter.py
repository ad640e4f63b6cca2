"""``SandboxedFunctionTool`` (ADK's ``FunctionTool`` with the body sandboxed), the plain-callable
forms ADK wraps itself, ``HostFunctionTool``, and ``SandboxPlugin`` (the sandbox opened for each
runner invocation).

ADK hands a tool's return value to the model as the function response (a non-dict value as
``{"result": value}``), and its own argument and confirmation errors as ``{"error": text}``; an
exception of a tool goes to the ``on_tool_error_callback``s and, unanswered, ends the run. A
refusal is therefore returned as ``{"error": <denial text>}``: the model reads the first line
of the refusal, without the hint for the developer, and the run goes on.
``on_denial="raise"`` leaves the refusal to ADK: the error callbacks, then the end of the run.
"""

from __future__ import annotations

import threading
import types
import typing
from typing import TYPE_CHECKING, Any

from google.adk.agents.context import Context
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.function_tool import FunctionTool

from pysandboxes.tools import Framework, caller_module, hosted, sandboxed, sandboxes_for

if TYPE_CHECKING:
    from collections.abc import Callable

    from google.adk.agents.invocation_context import InvocationContext

    from pysandboxes import sandboxes

__all__ = [
    "HostFunctionTool",
    "SandboxPlugin",
    "SandboxedFunctionTool",
    "host_function",
    "sandboxed_function",
]

_LIFECYCLE = "App(..., plugins=[SandboxPlugin()]) (or Runner(..., plugins=[SandboxPlugin()]))"
#: the parameters ADK fills in itself: the context (by its annotation, else by this name) and
#: a live tool's input stream
_INJECTED = ("tool_context", "input_stream")


def _is_context_type(annotation: Any) -> bool:
    """``Context`` (``ToolContext`` is the same class) or an ``Optional`` of it, as ADK reads it."""
    if annotation is Context:
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        return any(_is_context_type(a) for a in typing.get_args(annotation))
    return False


def _is_context(name: str, annotation: Any) -> bool:
    return name in _INJECTED or _is_context_type(annotation)


def _refusal(text: str, exc: BaseException) -> Any:
    return {"error": text}


def _framework(decorator: str, host_decorator: str) -> Framework:
    return Framework(
        "google-adk",
        decorator=decorator,
        refusal=_refusal,
        is_context=_is_context,
        host_decorator=host_decorator,
        lifecycle=_LIFECYCLE,
    )


_TOOL = _framework("@SandboxedFunctionTool", "@HostFunctionTool")
_FUNCTION = _framework("@sandboxed_function", "@host_function")


class SandboxedFunctionTool(FunctionTool):
    """ADK's ``FunctionTool`` whose function runs in the sandbox's child:
    ``SandboxedFunctionTool(read_file)`` (or ``@SandboxedFunctionTool`` on the function), at the
    top level of the function's module.

    The declaration the model gets is the plain ``FunctionTool``'s. The ``tool_context``
    (a parameter annotated ``ToolContext``/``Context``, else named ``tool_context``) stays on
    the host: with a default (``tool_context: ToolContext = None``) the body gets the default,
    without one the tool is refused (use :class:`HostFunctionTool`). ``on_denial="text"``: a
    refusal is the function response ``{"error": <denial text>}``; ``"raise"``: it is left to
    ADK. ``timeout``: seconds a call may take.
    """

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        require_confirmation: bool | Callable[..., bool] = False,
        on_denial: str = "text",
        timeout: float | None = None,
    ) -> None:
        super().__init__(
            sandboxed(func, _TOOL, on_denial=on_denial, timeout=timeout),
            require_confirmation=require_confirmation,
        )


class HostFunctionTool(FunctionTool):
    """A ``FunctionTool`` whose function runs **on the host** (it may use its ``tool_context``:
    state, artifacts, memory, confirmation) and calls ``@sandbox`` functions with plain values:
    the sandbox is open for them, and their refusals reach the model as ``{"error": ...}``.
    The function itself is not confined."""

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        require_confirmation: bool | Callable[..., bool] = False,
        on_denial: str = "text",
    ) -> None:
        super().__init__(hosted(func, _TOOL, on_denial=on_denial), require_confirmation=require_confirmation)


def sandboxed_function(
    func: Callable[..., Any] | None = None, *, on_denial: str = "text", timeout: float | None = None
) -> Any:
    """The host wrapper of ``func`` as a plain function, for ADK to wrap itself
    (``LlmAgent(tools=[read_file])`` makes it a ``FunctionTool``): ``@sandboxed_function`` or
    ``@sandboxed_function(on_denial="raise", timeout=10)``. As :class:`SandboxedFunctionTool`
    otherwise."""

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        return sandboxed(function, _FUNCTION, on_denial=on_denial, timeout=timeout)

    return decorate if func is None else decorate(func)


def host_function(func: Callable[..., Any] | None = None, *, on_denial: str = "text") -> Any:
    """The plain-function form of :class:`HostFunctionTool`: ``@host_function``."""

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        return hosted(function, _FUNCTION, on_denial=on_denial)

    return decorate if func is None else decorate(func)


class SandboxPlugin(BasePlugin):
    """Opens the sandbox when a runner invocation starts and leaves it when the invocation
    ends: ``App(name=..., root_agent=agent, plugins=[SandboxPlugin()])`` or
    ``InMemoryRunner(agent, plugins=[SandboxPlugin()])``.

    ADK calls ``before_run_callback`` first and ``after_run_callback`` after a completed run;
    a run that raised is closed in ``on_run_error_callback``, and one that neither completed nor
    raised (cancelled) when the runner closes its plugins (``runner.close()``). The arguments are
    ``sandboxes()``'s (``init_fn``, ``sandboxes_config``, ``learn=``, ``envs=``, rules such as
    ``expose_ro="./data"``); the default rule file is the one next to the module that creates the
    plugin. Invocations share one sandbox child, the last to end stops it.
    """

    def __init__(
        self,
        init_fn: Callable[[], Any] | None = None,
        sandboxes_config: str | None = None,
        *,
        name: str = "pysandboxes",
        **settings: Any,
    ) -> None:
        super().__init__(name)
        self._module = caller_module()
        self._init_fn = init_fn
        self._config = sandboxes_config
        self._settings = settings
        self._lock = threading.Lock()
        self._open: dict[str, sandboxes] = {}

    async def before_run_callback(self, *, invocation_context: InvocationContext) -> None:
        block = sandboxes_for(self._module, self._init_fn, self._config, **self._settings)
        await block.__aenter__()
        with self._lock:
            previous = self._open.pop(invocation_context.invocation_id, None)
            self._open[invocation_context.invocation_id] = block
        if previous is not None:  # the same invocation started again (a resumed one)
            await previous.__aexit__(None, None, None)

    async def after_run_callback(self, *, invocation_context: InvocationContext) -> None:
        await self._leave(invocation_context.invocation_id)

    async def on_run_error_callback(self, *, invocation_context: InvocationContext, error: Exception) -> None:
        await self._leave(invocation_context.invocation_id)

    async def close(self) -> None:
        with self._lock:
            blocks = list(self._open.values())
            self._open.clear()
        for block in blocks:
            await block.__aexit__(None, None, None)

    async def _leave(self, invocation_id: str) -> None:
        with self._lock:
            block = self._open.pop(invocation_id, None)
        if block is not None:
            await block.__aexit__(None, None, None)
