"""``SandboxedFunctionTool`` (autogen-core's ``FunctionTool`` with the body sandboxed), its
decorator form ``@sandboxed_tool``, and the host-side ``HostFunctionTool`` / ``@host_tool``.

An agent's workbench turns any exception of a tool into the error result the model reads
(``FunctionExecutionResult(content=str(exc), is_error=True)``), and the run goes on. A refusal is
therefore raised as :class:`SandboxRefusal`, whose message is the denial text: the model reads
the first line of each refusal, without the hint for the developer.

``on_denial="raise"`` cannot leave the refusal itself to autogen (the workbench would hand the
model its whole message, hint included), and a tool cannot end an ``AssistantAgent`` run: an
exception that escapes the workbench, or the run's ``CancellationToken`` cancelled from within a
tool, leaves the agent waiting for tool results forever (autogen-agentchat 0.7.5). So the
refusal is raised as ``SandboxRefusal(REFUSED)``: the model reads only :data:`REFUSED`, not what
was refused; the exception's ``__cause__`` is the full refusal (and the ``Pysandboxes`` logger
has it).

AutoGen has no run lifecycle hook to open the sandbox in: the first sandboxed call opens it (and
leaves it up until Python exits), or the application opens it once with
``async with pysandboxes.sandboxes():`` around its runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from autogen_core.tools import FunctionTool

from pysandboxes.tools import ON_DENIAL, Framework, hosted, sandboxed

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from autogen_core.code_executor import Import

__all__ = [
    "REFUSED",
    "HostFunctionTool",
    "SandboxRefusal",
    "SandboxedFunctionTool",
    "host_tool",
    "sandboxed_tool",
]

#: what the model reads of a refusal of a tool made with ``on_denial="raise"``
REFUSED = "The sandbox refused this tool call."

_LIFECYCLE = "async with pysandboxes.sandboxes(): (around the agent's runs)"


class SandboxRefusal(Exception):
    """The sandbox refused something the tool's body did; the message is what the model reads
    (the first line of each refusal, without the hint for the developer)."""


def _refusal(text: str, exc: BaseException) -> Any:
    raise SandboxRefusal(text) from exc


def _refused(text: str, exc: BaseException) -> Any:
    raise SandboxRefusal(REFUSED) from exc


def _is_context(name: str, annotation: Any) -> bool:
    """autogen passes the run's ``CancellationToken`` to a parameter of that name."""
    return name == "cancellation_token"


def _framework(on_denial: str, decorator: str, host_decorator: str) -> Framework:
    if on_denial not in ON_DENIAL:
        raise ValueError(f"on_denial={on_denial!r}: expected one of {', '.join(map(repr, ON_DENIAL))}")
    return Framework(
        "autogen",
        decorator=decorator,
        refusal=_refusal if on_denial == "text" else _refused,
        is_context=_is_context,
        host_decorator=host_decorator,
        lifecycle=_LIFECYCLE,
    )


class _Tool(FunctionTool):
    """What the two tools share: no serialization."""

    def _to_config(self) -> Any:
        raise TypeError(
            f"{type(self).__name__} {self.name!r} cannot be serialized: a component config carries "
            "the function's source, which loading would run on the host, unconfined; build the tool "
            "in code (the sandbox's child finds its body by module and name)"
        )


class SandboxedFunctionTool(_Tool):
    """autogen-core's ``FunctionTool`` whose function runs in the sandbox's child:
    ``SandboxedFunctionTool(read_file, description="Read a file.")``, made at the top level of the
    function's module. The same arguments as ``FunctionTool`` (``name=``, ``global_imports=``,
    ``strict=``), plus ``on_denial=`` and ``timeout=`` (seconds a call may take).

    The schema the model gets is the plain ``FunctionTool``'s. A ``cancellation_token`` parameter
    stays on the host: with a default the body gets the default, without one the tool is refused
    (use :class:`HostFunctionTool`).
    """

    def __init__(
        self,
        func: Callable[..., Any],
        description: str,
        name: str | None = None,
        global_imports: Sequence[Import] = (),
        strict: bool = False,
        *,
        on_denial: str = "text",
        timeout: float | None = None,
    ) -> None:
        framework = _framework(on_denial, "SandboxedFunctionTool", "HostFunctionTool")
        wrapper = sandboxed(func, framework, timeout=timeout)
        super().__init__(wrapper, description, name, list(global_imports), strict)


class HostFunctionTool(_Tool):
    """A ``FunctionTool`` whose function runs **on the host** (it may use its
    ``cancellation_token``) and calls ``@sandbox`` functions with plain values: the sandbox is open
    for them, and their refusals reach the model as error results. The function itself is not
    confined."""

    def __init__(
        self,
        func: Callable[..., Any],
        description: str,
        name: str | None = None,
        global_imports: Sequence[Import] = (),
        strict: bool = False,
        *,
        on_denial: str = "text",
    ) -> None:
        framework = _framework(on_denial, "HostFunctionTool", "HostFunctionTool")
        super().__init__(hosted(func, framework), description, name, list(global_imports), strict)


def _description(func: Callable[..., Any], description: str | None) -> str:
    """What ``AssistantAgent(tools=[func])`` would describe the function with: its docstring."""
    if description is not None:
        return description
    return getattr(func, "__doc__", None) or ""


def sandboxed_tool(
    func: Callable[..., Any] | None = None,
    *,
    description: str | None = None,
    name: str | None = None,
    strict: bool = False,
    on_denial: str = "text",
    timeout: float | None = None,
) -> Any:
    """:class:`SandboxedFunctionTool` as a decorator: ``@sandboxed_tool`` (described by the
    docstring, as ``AssistantAgent(tools=[function])`` does) or ``@sandboxed_tool(description=...,
    name=..., strict=..., on_denial=..., timeout=...)``."""

    framework = _framework(on_denial, "@sandboxed_tool", "@host_tool")

    def make(function: Callable[..., Any]) -> SandboxedFunctionTool:
        wrapper = sandboxed(function, framework, timeout=timeout)  # messages name the decorator
        tool = SandboxedFunctionTool.__new__(SandboxedFunctionTool)
        FunctionTool.__init__(tool, wrapper, _description(function, description), name, strict=strict)
        return tool

    return make if func is None else make(func)


def host_tool(
    func: Callable[..., Any] | None = None,
    *,
    description: str | None = None,
    name: str | None = None,
    strict: bool = False,
    on_denial: str = "text",
) -> Any:
    """:class:`HostFunctionTool` as a decorator: ``@host_tool`` or ``@host_tool(description=...)``."""

    framework = _framework(on_denial, "@host_tool", "@host_tool")

    def make(function: Callable[..., Any]) -> HostFunctionTool:
        tool = HostFunctionTool.__new__(HostFunctionTool)
        FunctionTool.__init__(
            tool, hosted(function, framework), _description(function, description), name, strict=strict
        )
        return tool

    return make if func is None else make(func)
