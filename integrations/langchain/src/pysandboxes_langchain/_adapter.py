"""``@sandboxed_tool`` (``langchain_core.tools.tool`` with the body sandboxed) and
``SandboxMiddleware`` (the sandbox opened for each ``create_agent`` run).

A refusal is raised as :class:`SandboxRefusal`, a ``ToolException`` whose message is the denial
text (no hint), and the tool's ``handle_tool_error`` turns it into a ``ToolMessage`` with
``status="error"``: the model reads it and the run goes on. Other exceptions, the application's
own ``ToolException`` included, keep LangChain's default handling.
"""

from __future__ import annotations

import threading
import types
import typing
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware import AgentMiddleware
from langchain.tools import InjectedToolArg, InjectedToolCallId, ToolException, ToolRuntime
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool

from pysandboxes.tools import Framework, caller_module, hosted, sandboxed, sandboxes_for

if TYPE_CHECKING:
    from collections.abc import Callable

    from pysandboxes import sandboxes


class SandboxRefusal(ToolException):
    """The sandbox refused something the tool's body did; the message is what the model reads
    (the first line of each refusal, without the hint for the developer)."""


def _refusal(text: str, exc: BaseException) -> Any:
    raise SandboxRefusal(text) from exc


def _handle_tool_error(error: ToolException) -> str:
    """``handle_tool_error`` of a sandboxed tool: a refusal becomes the error ToolMessage's
    content; any other ToolException is raised as LangChain does without a handler."""
    if isinstance(error, SandboxRefusal):
        return str(error)
    raise error


def _is_context(name: str, annotation: Any) -> bool:
    """What LangChain injects at call time: ``ToolRuntime``, ``InjectedState``/``InjectedStore``
    (any ``Annotated[..., InjectedToolArg]`` but the tool call id, a plain string that crosses),
    a ``RunnableConfig`` and the ``callbacks`` manager; alone or in ``X | None``."""
    if name == "callbacks":
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_is_context(name, member) for member in typing.get_args(annotation))
    if annotation is RunnableConfig:
        return True
    origin = typing.get_origin(annotation) or annotation
    if isinstance(origin, type) and issubclass(origin, ToolRuntime):
        return True
    if typing.get_origin(annotation) is typing.Annotated:
        for marker in typing.get_args(annotation)[1:]:
            kind = marker if isinstance(marker, type) else type(marker)
            if issubclass(kind, InjectedToolArg) and not issubclass(kind, InjectedToolCallId):
                return True
    return False


#: how LangChain tools meet the sandbox
FRAMEWORK = Framework(
    "langchain",
    decorator="@sandboxed_tool",
    refusal=_refusal,
    is_context=_is_context,
    host_decorator="@host_tool",
    lifecycle="create_agent(..., middleware=[SandboxMiddleware()])",
)


def sandboxed_tool(
    name_or_callable: str | Callable[..., Any] | None = None,
    *args: Any,
    on_denial: str = "text",
    timeout: float | None = None,
    **tool_kwargs: Any,
) -> Any:
    """``langchain_core.tools.tool`` whose body runs in the sandbox: the same forms
    (``@sandboxed_tool``, ``@sandboxed_tool("name")``, ``@sandboxed_tool(parse_docstring=True)``,
    ``sandboxed_tool(function)``) and keyword arguments (``description``, ``return_direct``,
    ``args_schema``, ``infer_schema``, ``response_format``, ``parse_docstring``, ...).

    ``on_denial="text"``: a refusal is an error ``ToolMessage`` the model reads and the run goes
    on; ``"raise"``: the refusal propagates and ends the run. ``timeout``: seconds a call may take.
    """
    return _decorator(
        name_or_callable,
        args,
        tool_kwargs,
        lambda f: sandboxed(f, FRAMEWORK, on_denial=on_denial, timeout=timeout),
        on_denial,
    )


def host_tool(
    name_or_callable: str | Callable[..., Any] | None = None,
    *args: Any,
    on_denial: str = "text",
    **tool_kwargs: Any,
) -> Any:
    """``langchain_core.tools.tool`` for a tool that runs **on the host** (it may use its
    ``runtime: ToolRuntime``) and calls ``@sandbox`` functions with plain values: the sandbox is
    open for them, and their refusals reach the model as error ToolMessages."""
    return _decorator(
        name_or_callable, args, tool_kwargs, lambda f: hosted(f, FRAMEWORK, on_denial=on_denial), on_denial
    )


def _decorator(
    name_or_callable: Any,
    args: tuple[Any, ...],
    tool_kwargs: dict[str, Any],
    wrap: Callable[[Callable[..., Any]], Callable[..., Any]],
    on_denial: str,
) -> Any:
    if args:
        raise TypeError(
            "sandboxed_tool() takes a function (or a name, then decorates one): a Runnable "
            "cannot run in the sandbox; sandbox the functions it calls with @sandbox"
        )

    def make(function: Callable[..., Any], name: str | None = None) -> BaseTool:
        wrapper = wrap(function)
        made: BaseTool = tool(name, **tool_kwargs)(wrapper) if name else tool(**tool_kwargs)(wrapper)
        if on_denial == "text":
            made.handle_tool_error = _handle_tool_error
        return made

    if name_or_callable is None:
        return make
    if isinstance(name_or_callable, str):
        name = name_or_callable
        return lambda function: make(function, name)
    return make(name_or_callable)


class SandboxMiddleware(AgentMiddleware):
    """Opens the sandbox when an agent run starts and leaves it when the run ends:
    ``create_agent(model, tools, middleware=[SandboxMiddleware()])``.

    The arguments are ``sandboxes()``'s (``init_fn``, ``sandboxes_config``, ``learn=``,
    ``envs=``, rules such as ``expose_ro="./data"``); the default rule file is the one next to the
    module that creates the middleware. Runs share one sandbox child (nested and concurrent runs
    join it; the last to end stops it). A run that raises never reaches its end hook: the
    sandbox then stays up, for the next run, until Python exits.
    """

    def __init__(
        self,
        init_fn: Callable[[], Any] | None = None,
        sandboxes_config: str | None = None,
        **settings: Any,
    ) -> None:
        super().__init__()
        self._module = caller_module()
        self._init_fn = init_fn
        self._config = sandboxes_config
        self._settings = settings
        self._lock = threading.Lock()
        self._open: list[sandboxes] = []

    def _block(self) -> sandboxes:
        return sandboxes_for(self._module, self._init_fn, self._config, **self._settings)

    def _entered(self, block: sandboxes) -> None:
        with self._lock:
            self._open.append(block)

    def _leaving(self) -> sandboxes | None:
        with self._lock:
            return self._open.pop() if self._open else None

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        block = self._block()
        block.__enter__()
        self._entered(block)
        return None

    async def abefore_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        block = self._block()
        await block.__aenter__()
        self._entered(block)
        return None

    def after_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        block = self._leaving()
        if block is not None:
            block.__exit__(None, None, None)
        return None

    async def aafter_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        block = self._leaving()
        if block is not None:
            await block.__aexit__(None, None, None)
        return None
