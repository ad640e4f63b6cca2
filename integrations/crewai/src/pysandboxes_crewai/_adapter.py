"""``@sandboxed_tool`` (``crewai.tools.tool`` with the body sandboxed) and ``sandbox_kickoff``
(the sandbox opened for each crew run).

crewai turns an exception of a tool into text for the model itself: ``Error executing tool:
<message>`` (native function calling) or ``I encountered an error while trying to use the tool.
This was the error: <message>`` after retrying the call (the ReAct text loop). A refusal's
message ends with the hint meant for the developer, so it must not get there. A refused call
returns a :class:`SandboxRefusal` instead: crewai's own declared tool failure (a
``ToolFailure``), which both loops give the model as its message alone — the denial text — and
record as a failure of the task (``TaskOutput.tool_failures``, ``ToolFailureDetectedEvent``,
the agent's ``tool_failure_policy``). Other exceptions keep crewai's handling.

``on_denial="raise"``: the run stops. Letting the refusal through would not stop anything: crewai
would retry the call and hand its whole message, hint included, to the model. The tool returns a
refusal that the adapter's ``post_tool_call`` hook (crewai's interception hooks) turns into
:class:`SandboxStop`, a ``HookAborted`` that crewai lets out of ``kickoff()``, raised from the
refusal.

The lifecycle: ``Crew(..., before_kickoff_callbacks=[sandbox_kickoff])`` opens the sandbox
when the crew's run starts; crewai's ``execution_end`` interception point, dispatched when a
kickoff ends whether it completed or raised, closes it.
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Any

from crewai import Crew
from crewai.hooks import HookAborted, InterceptionPoint, get_hooks, register_hook
from crewai.tools import tool
from crewai.tools.base_tool import Tool
from crewai.tools.tool_failure import ToolFailure, ToolFailureReason
from crewai.utilities.crew.crew_context import get_crew_context
from pydantic import PrivateAttr

from pysandboxes.tools import ON_DENIAL, Framework, hosted, sandboxed, sandboxes_for

if TYPE_CHECKING:
    from collections.abc import Callable

    from pydantic import BaseModel

    from pysandboxes import sandboxes

__all__ = [
    "SandboxRefusal",
    "SandboxStop",
    "SandboxedTool",
    "host_tool",
    "sandbox_kickoff",
    "sandboxed_tool",
]

_LIFECYCLE = "Crew(..., before_kickoff_callbacks=[sandbox_kickoff])"


class SandboxRefusal(ToolFailure):
    """What a tool returns when the sandbox refused something its body did: crewai's declared
    tool failure, whose ``message`` (what the model reads) is the first line of each refusal,
    without the hint for the developer. ``exception`` is the refusal itself."""

    _exception: BaseException | None = PrivateAttr(default=None)

    @property
    def exception(self) -> BaseException | None:
        return self._exception


class _Stopping(SandboxRefusal):
    """The refusal of a tool made with ``on_denial="raise"``: the post_tool_call hook stops the
    run with it."""


class SandboxStop(HookAborted):
    """The run stops: the sandbox refused a call of a tool made with ``on_denial="raise"``.
    ``reason`` is the denial text; ``__cause__`` the refusal, hint included."""


def _refusal(text: str, exc: BaseException) -> SandboxRefusal:
    made = SandboxRefusal(message=text, reason=ToolFailureReason.TOOL_REPORTED)
    made._exception = exc
    return made


def _stopping(text: str, exc: BaseException) -> SandboxRefusal:
    made = _Stopping(message=text, reason=ToolFailureReason.TOOL_REPORTED)
    made._exception = exc
    return made


def _framework(on_denial: str, decorator: str) -> Framework:
    if on_denial not in ON_DENIAL:
        raise ValueError(f"on_denial={on_denial!r}: expected one of {', '.join(map(repr, ON_DENIAL))}")
    return Framework(
        "crewai",
        decorator=decorator,
        refusal=_refusal if on_denial == "text" else _stopping,
        host_decorator="@host_tool",
        lifecycle=_LIFECYCLE,
    )


# -- the tools ---------------------------------------------------------------------------------


class SandboxedTool(Tool):  # type: ignore[type-arg]
    """crewai's ``Tool`` whose function is the sandbox's host wrapper: ``_run`` (and ``run``,
    ``arun``) run the body in the sandbox's child. A refused call returns a
    :class:`SandboxRefusal` (``on_denial="text"``) or stops the run (``"raise"``)."""

    _stops: bool = PrivateAttr(default=False)
    _module: str | None = PrivateAttr(default=None)

    def run(self, *args: Any, **kwargs: Any) -> Any:
        if self._stops:
            _ensure_hooks()
        return super().run(*args, **kwargs)

    async def arun(self, *args: Any, **kwargs: Any) -> Any:
        if self._stops:
            _ensure_hooks()
        return await super().arun(*args, **kwargs)


def sandboxed_tool(
    *args: Any,
    result_schema: type[BaseModel] | None = None,
    result_as_answer: bool = False,
    max_usage_count: int | None = None,
    on_denial: str = "text",
    timeout: float | None = None,
) -> Any:
    """``crewai.tools.tool`` whose body runs in the sandbox: the same forms (``@sandboxed_tool``,
    ``@sandboxed_tool("name")``, ``@sandboxed_tool(result_as_answer=True, ...)``,
    ``sandboxed_tool(function)``) and a :class:`SandboxedTool` with the plain tool's arguments
    schema.

    ``on_denial="text"``: a refused call is a :class:`SandboxRefusal` the model reads as the
    tool's result, and the run goes on; ``"raise"``: the run stops with :class:`SandboxStop`.
    ``timeout``: seconds a call may take (as ``@sandbox(timeout=)``).
    """
    framework = _framework(on_denial, "@sandboxed_tool")
    options = {
        "result_schema": result_schema,
        "result_as_answer": result_as_answer,
        "max_usage_count": max_usage_count,
    }
    wrap = lambda f: sandboxed(f, framework, timeout=timeout)  # noqa: E731
    return _decorator(args, options, wrap, "@sandboxed_tool", stops=on_denial == "raise")


def host_tool(
    *args: Any,
    result_schema: type[BaseModel] | None = None,
    result_as_answer: bool = False,
    max_usage_count: int | None = None,
    on_denial: str = "text",
) -> Any:
    """``crewai.tools.tool`` for a tool that runs **on the host** and calls ``@sandbox``
    functions with plain values: the sandbox is open for them, and their refusals reach the
    model as for :func:`sandboxed_tool`. The body itself is not confined."""
    framework = _framework(on_denial, "@host_tool")
    options = {
        "result_schema": result_schema,
        "result_as_answer": result_as_answer,
        "max_usage_count": max_usage_count,
    }
    wrap = lambda f: hosted(f, framework)  # noqa: E731
    return _decorator(args, options, wrap, "@host_tool", stops=on_denial == "raise")


def _decorator(
    args: tuple[Any, ...],
    options: dict[str, Any],
    wrap: Callable[[Callable[..., Any]], Callable[..., Any]],
    decorator: str,
    *,
    stops: bool,
) -> Any:
    def make(function: Callable[..., Any], name: str | None) -> SandboxedTool:
        wrapped = wrap(function)
        made = tool(name, **options)(wrapped) if name is not None else tool(**options)(wrapped)
        sandboxed_ = SandboxedTool(**{key: getattr(made, key) for key in made.model_fields_set})
        sandboxed_._stops = stops
        sandboxed_._module = function.__module__
        _ensure_hooks()
        return sandboxed_

    if len(args) == 1 and isinstance(args[0], str):
        name = args[0]
        return lambda function: make(function, name)
    if len(args) == 1:  # @sandboxed_tool on the function; the wrapper refuses what is not one
        return make(args[0], None)
    if not args:
        return lambda function: make(function, None)
    raise TypeError(f"{decorator} takes the function or the tool's name, as crewai.tools.tool")


# -- crewai's interception hooks ----------------------------------------------------------------

_HOOKS_LOCK = threading.Lock()
_RUNS_LOCK = threading.Lock()
#: crew id -> the crew whose kickoff has started (execution_start), until it ends
_STARTED: dict[str, Crew] = {}
#: crew id -> the sandboxes() blocks sandbox_kickoff opened for its run in progress
_OPEN: dict[str, list[sandboxes]] = {}


def _stop_refused_run(context: Any) -> None:
    """post_tool_call: a refusal of a tool made with ``on_denial="raise"`` stops the run."""
    refusal = getattr(context, "raw_tool_result", None)
    if isinstance(refusal, _Stopping):
        raise SandboxStop(refusal.message, source="pysandboxes-crewai") from refusal.exception


def _run_started(context: Any) -> None:
    """execution_start: the crew ``sandbox_kickoff`` is about to be called for."""
    crew = getattr(context, "crew", None)
    if crew is not None:
        with _RUNS_LOCK:
            _STARTED[str(crew.id)] = crew


def _run_ended(context: Any) -> None:
    """execution_end (a kickoff completed or raised): close what ``sandbox_kickoff`` opened for
    that crew's run."""
    crew = getattr(context, "crew", None)
    if crew is None:
        return
    with _RUNS_LOCK:
        _STARTED.pop(str(crew.id), None)
        blocks = _OPEN.pop(str(crew.id), [])
    for block in reversed(blocks):
        block.__exit__(None, None, None)


_HOOKS = (
    (InterceptionPoint.EXECUTION_START, _run_started),
    (InterceptionPoint.EXECUTION_END, _run_ended),
    (InterceptionPoint.POST_TOOL_CALL, _stop_refused_run),
)


def _ensure_hooks() -> None:
    """Register the adapter's hooks with crewai's dispatcher, once (and again after an
    application's ``clear_all_hooks()``)."""
    with _HOOKS_LOCK:
        for point, hook in _HOOKS:
            if hook not in get_hooks(point):
                register_hook(point, hook)


# -- the lifecycle -----------------------------------------------------------------------------


def sandbox_kickoff(
    inputs: dict[str, Any] | None = None,
    /,
    *,
    init_fn: Callable[[], Any] | None = None,
    sandboxes_config: str | None = None,
    **settings: Any,
) -> dict[str, Any] | None:
    """A crew's ``before_kickoff`` callback that opens the sandbox for the crew's run:
    ``Crew(agents=..., tasks=..., before_kickoff_callbacks=[sandbox_kickoff])``. crewai's
    ``execution_end``, dispatched when the kickoff ends, completed or raised, closes it. Returns
    ``inputs`` unchanged.

    The default rule file is the one next to the module of the crew's first sandboxed tool (as
    for the first call without a lifecycle); a crew without such a tool opens nothing, unless
    ``sandboxes_config`` names a rule file. For other settings, call it from a callback of the
    application's own with ``sandboxes()``'s arguments (``init_fn``, ``sandboxes_config``,
    ``learn=``, ``envs=``, rules such as ``expose_ro="./data"``)::

        def open_sandbox(inputs):
            return sandbox_kickoff(inputs, sandboxes_config="agents.py-sandboxes")

    Runs of several crews share one child; the last to end stops it.
    """
    _ensure_hooks()
    crew = _kicking_off()
    if crew is None:
        raise RuntimeError(
            f"sandbox_kickoff is a crew's before_kickoff callback ({_LIFECYCLE}); "
            "outside a kickoff, use `with pysandboxes.sandboxes():`"
        )
    module = _tools_module(crew)
    if module is None and sandboxes_config is None:
        return inputs  # no tool of this adapter, no rule file named: nothing to open
    block = sandboxes_for(module, init_fn, sandboxes_config, **settings)
    block.__enter__()
    with _RUNS_LOCK:
        _OPEN.setdefault(str(crew.id), []).append(block)
    return inputs


def _kicking_off() -> Crew | None:
    """The crew whose kickoff is calling its before_kickoff callbacks: crewai's crew context
    names it (its id), execution_start recorded it."""
    context = get_crew_context()
    if context is None:
        return None
    with _RUNS_LOCK:
        crew = _STARTED.get(str(context.id))
    if crew is not None:
        return crew
    # execution_start came before the hook was registered again (an application's
    # clear_all_hooks()): the crew is a local of a frame of its kickoff
    frame = sys._getframe(2)
    while frame is not None:
        for name in ("crew", "self"):
            value = frame.f_locals.get(name)
            if isinstance(value, Crew) and str(value.id) == str(context.id):
                return value
        frame = frame.f_back  # type: ignore[assignment]
    return None


def _tools_module(crew: Crew) -> str | None:
    """The module of the crew's first tool made by this adapter: its rule file is the default."""
    agents = [*crew.agents, crew.manager_agent]
    tools = [tool for agent in agents if agent is not None for tool in agent.tools or ()]
    tools += [tool for task in crew.tasks for tool in task.tools or ()]
    for candidate in tools:
        if isinstance(candidate, SandboxedTool) and candidate._module:
            return candidate._module
    return None


_ensure_hooks()
