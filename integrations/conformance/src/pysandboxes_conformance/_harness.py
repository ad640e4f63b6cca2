"""What an adapter tells the conformance suite: a :class:`Harness` subclass."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from types import ModuleType

#: one tool call the offline model makes: (tool name, arguments)
Call = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Seen:
    """What the model was told about one tool call: the text, and whether it was an error."""

    text: str
    error: bool = False


class Harness:
    """Describes one adapter to the suite. Subclass it in the adapter's ``tests/conftest.py``,
    fill in every attribute, implement the two methods, and return an instance from a
    ``harness`` fixture; see the package docstring for a complete example."""

    #: the adapter's short name: ``pysandboxes-<name>``, ``pysandboxes_<name>``
    name: ClassVar[str]
    #: the top of the module whose tools the adapter makes: imports and framework objects
    sandboxed_header: ClassVar[str]
    #: the top of the module whose tools the framework alone makes (the control)
    plain_header: ClassVar[str]
    #: the decorator lines, exactly as an application writes them
    sandboxed: ClassVar[str]  # e.g. "@sandboxed_tool(server)"
    sandboxed_raise: ClassVar[str]  # the same with on_denial="raise"
    host: ClassVar[str]  # the adapter's host-side tool, e.g. "@host_tool(server)"
    plain: ClassVar[str]  # the framework's own, e.g. "@server.tool()"
    #: the framework's context parameter as a tool declares it: (name, annotation); None: the
    #: framework has no context parameter (crewai): the context tools are not made, their
    #: tests skip
    context: ClassVar[tuple[str, str] | None]
    #: the context parameter is the tool's first parameter, which the framework always passes
    #: (pydantic-ai's ``RunContext``, openai-agents' ``RunContextWrapper``): the context tools
    #: are written ``(ctx: Context, text: str)``, and the sandboxed body gets ``None`` for it
    context_first: ClassVar[bool] = False
    #: wrong usages specific to the framework: (source appended to ``sandboxed_header``,
    #: words the ``TypeError`` raised when that source is imported must contain)
    wrong_usages: ClassVar[Sequence[tuple[str, str]]] = ()
    #: False when the framework has no lifecycle hook the adapter opens the sandbox in
    has_lifecycle: ClassVar[bool] = True
    #: variables every process the suite starts gets (telemetry off, ...)
    environment: ClassVar[Mapping[str, str]] = {}
    #: extra rule lines the framework needs in the partial child (appended to the project's
    #: rule file), each justified in a comment where the harness sets them
    child_rules: ClassVar[str] = ""
    #: extra rule lines the framework needs under python-sb (appended to the complete-mode rule
    #: file of ``test_under_python_sb_the_body_runs_directly``), each justified likewise
    complete_rules: ClassVar[str] = ""
    #: False when the framework has no async tools (the async test skips)
    async_tools: ClassVar[bool] = True
    #: True when the framework sends the model the message of every exception a tool raises
    #: (mcp 1.x): the adapter then sends a refusal's first line even with ``on_denial="raise"``,
    #: and the suite checks that the hint stays out
    sends_exception_messages: ClassVar[bool] = False

    def call_tools(self, module: ModuleType, calls: Sequence[Call], *, lifecycle: bool = True) -> list[Seen]:
        """Run the framework's own agent loop, driven by its offline model, on the tools of
        ``module``: the model calls each ``(tool, arguments)`` of ``calls`` in order within one
        run, then ends the run. Return what the model saw for each call, in order.

        ``lifecycle``: with the adapter's lifecycle hook (MCP lifespan, LangChain middleware);
        ``False``: without it (the adapter then opens the sandbox itself). An exception that
        ends the run propagates.
        """
        raise NotImplementedError

    def schema(self, module: ModuleType, tool: str) -> Any:
        """The description of ``tool`` the model gets (its JSON schema, name and description)."""
        raise NotImplementedError
