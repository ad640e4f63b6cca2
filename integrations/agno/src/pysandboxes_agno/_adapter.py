"""``@sandboxed_tool`` (``agno.tools.tool`` with the body sandboxed) and ``SandboxToolkit``
(the sandbox opened for each agent or team run).

A refusal is raised as :class:`SandboxRefusal`, whose message is the denial text (no hint):
agno turns any exception of a tool into the tool result the model reads (``tool_call_error``)
and the run goes on. ``on_denial="raise"`` stops the run instead, with agno's own
``StopAgentRun``: agno reports every other exception's message to the model, so letting the
refusal itself through would hand the model the hint meant for the developer.
"""

from __future__ import annotations

import inspect
import threading
import typing
from typing import TYPE_CHECKING, Any

from agno.exceptions import StopAgentRun
from agno.tools import tool
from agno.tools.function import Function
from agno.tools.toolkit import Toolkit
from agno.utils.schema import AGNO_INJECTED_PARAMS, FRAMEWORK_INJECTED_PARAMS, is_framework_typed

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

__all__ = ["FRAMEWORK", "STOPPED", "SandboxRefusal", "SandboxToolkit", "host_tool", "sandboxed_tool"]

#: the parameters agno fills in by name (``FunctionCall._build_entrypoint_args``): the agent,
#: team, run context (session state, dependencies, metadata), the media of the run, the
#: ``_agno_`` channels, and ``fc`` (the FunctionCall itself)
INJECTED_NAMES = frozenset((*FRAMEWORK_INJECTED_PARAMS, *AGNO_INJECTED_PARAMS, "fc"))

#: what a sandboxed tool stopped by a refusal (``on_denial="raise"``) reports
STOPPED = "The sandbox refused this tool call: the run stops here."


class SandboxRefusal(Exception):
    """The sandbox refused something the tool's body did; the message is what the model reads
    (the first line of each refusal, without the hint for the developer)."""


def _refusal(text: str, exc: BaseException) -> Any:
    raise SandboxRefusal(text) from exc


def _stop(text: str, exc: BaseException) -> Any:
    raise StopAgentRun(STOPPED) from exc


def _is_context(name: str, annotation: Any) -> bool:
    """What agno injects: a parameter of a reserved name, whatever its annotation, or one whose
    annotation is an ``Agent``, ``Team`` or ``RunContext`` (agno's own test, which also finds
    them in unions and aliases)."""
    if name in INJECTED_NAMES:
        return True
    try:
        return annotation is not typing.Any and bool(is_framework_typed(annotation))
    except Exception:  # an annotation agno cannot read: not one it fills in either
        return False


_LIFECYCLE = "Agent(tools=[..., SandboxToolkit()])"

#: how agno tools meet the sandbox
FRAMEWORK = Framework(
    "agno",
    decorator="@sandboxed_tool",
    refusal=_refusal,
    is_context=_is_context,
    host_decorator="@host_tool",
    lifecycle=_LIFECYCLE,
)
_STOPPING = Framework(
    "agno",
    decorator="@sandboxed_tool",
    refusal=_stop,
    is_context=_is_context,
    host_decorator="@host_tool",
    lifecycle=_LIFECYCLE,
)


def _framework(on_denial: str) -> Framework:
    if on_denial not in ON_DENIAL:
        raise ValueError(f"on_denial={on_denial!r}: expected one of {', '.join(map(repr, ON_DENIAL))}")
    return FRAMEWORK if on_denial == "text" else _STOPPING


def sandboxed_tool(
    function: Callable[..., Any] | None = None,
    *args: Any,
    on_denial: str = "text",
    timeout: float | None = None,
    **tool_kwargs: Any,
) -> Any:
    """``agno.tools.tool`` whose body runs in the sandbox: the same forms (``@sandboxed_tool``,
    ``@sandboxed_tool(name=..., description=..., show_result=True, stop_after_tool_call=True,
    requires_confirmation=True, cache_results=True, ...)``, ``sandboxed_tool(function)``), and
    an agno ``Function``.

    ``on_denial="text"``: a refusal is the tool result the model reads (an error) and the run
    goes on; ``"raise"``: the run stops (agno's ``StopAgentRun``). ``timeout``: seconds a call
    may take.
    """
    framework = _framework(on_denial)
    return _decorator(
        function, args, tool_kwargs, lambda f: sandboxed(f, framework, timeout=timeout), "@sandboxed_tool"
    )


def host_tool(
    function: Callable[..., Any] | None = None,
    *args: Any,
    on_denial: str = "text",
    **tool_kwargs: Any,
) -> Any:
    """``agno.tools.tool`` for a tool that runs **on the host** (it may use its ``agent``,
    ``run_context``, ``images``, ...) and calls ``@sandbox`` functions with plain values: the
    sandbox is open for them, and their refusals reach the model as the tool's error."""
    framework = _framework(on_denial)
    return _decorator(function, args, tool_kwargs, lambda f: hosted(f, framework), "@host_tool")


def _decorator(
    function: Any,
    args: tuple[Any, ...],
    tool_kwargs: dict[str, Any],
    wrap: Callable[[Callable[..., Any]], Callable[..., Any]],
    decorator: str,
) -> Any:
    if args:
        raise TypeError(f"{decorator} takes one function, and agno.tools.tool's arguments by keyword")

    def make(function: Callable[..., Any]) -> Function:
        made: Function = tool(**tool_kwargs)(wrap(function))
        return made

    if function is None:
        return make
    if isinstance(function, str):
        raise TypeError(
            f'{decorator}("{function}"): give the name by keyword, as agno does: name="{function}"'
        )
    return make(function)


class SandboxToolkit(Toolkit):
    """Opens the sandbox when an agent (or team) run starts and leaves it when the run ends,
    however it ends: ``Agent(tools=[read_file, SandboxToolkit()])``.

    agno connects a toolkit that needs a connection when it resolves a run's tools and closes
    it in the run's ``finally``, for ``run`` and ``arun``, streamed or not; this toolkit's
    connection is the sandbox. It may hold the sandboxed tools themselves
    (``SandboxToolkit([read_file, fetch])``), or none.

    The other arguments are ``sandboxes()``'s (``init_fn``, ``sandboxes_config``, ``learn=``,
    ``envs=``, rules such as ``expose_ro="./data"``); the default rule file is the one next to
    the module that creates the toolkit. Runs share one sandbox child (the last to end stops
    it). agno logs a failure to connect and goes on: the first sandboxed call then reports the
    same error to the model.
    """

    def __init__(
        self,
        tools: Sequence[Function] = (),
        *,
        name: str = "pysandboxes",
        init_fn: Callable[[], Any] | None = None,
        sandboxes_config: str | None = None,
        **settings: Any,
    ) -> None:
        for made in tools:
            entrypoint = getattr(made, "entrypoint", None)
            if not isinstance(made, Function) or not is_sandboxed_tool(inspect.unwrap(entrypoint)):
                shown = getattr(made, "name", None) or getattr(made, "__name__", repr(made))
                raise TypeError(
                    f"SandboxToolkit holds the tools made by @sandboxed_tool or @host_tool; {shown!r} "
                    "is not one: give it to the Agent's tools directly (it runs on the host), or "
                    "decorate it with @sandboxed_tool"
                )
        super().__init__(name=name, tools=list(tools))
        self._requires_connect = True
        self._module = caller_module()
        self._init_fn = init_fn
        self._config = sandboxes_config
        self._settings = settings
        self._lock = threading.Lock()
        self._open: list[sandboxes] = []

    def connect(self) -> None:
        block = sandboxes_for(self._module, self._init_fn, self._config, **self._settings)
        block.__enter__()
        with self._lock:
            self._open.append(block)

    def close(self) -> None:
        with self._lock:
            block = self._open.pop() if self._open else None
        if block is not None:
            block.__exit__(None, None, None)
