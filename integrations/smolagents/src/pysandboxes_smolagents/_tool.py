"""``@sandboxed_tool``: ``smolagents.tool`` whose body runs in the sandbox's child.

smolagents builds a tool from the function itself: the schema from its docstring's ``Args:``
section and type hints (``get_json_schema``), and the tool's source from ``inspect.getsource``
(``Tool.to_dict``, ``save``, the remote executors' ``send_tools``). Given the adapter's host
wrapper, ``smolagents.tool`` would read the wrapper's source (a function of ``pysandboxes.tools``);
given the function, it would warn about "decorators other than @tool" and keep our decorator
line in the tool's source. So the tool is built here as ``smolagents.tool`` builds it — the same
``SimpleTool`` class, attributes and ``__source__`` (the function's own code, our decorator
lines left out, as ``@tool``'s are) — with the host wrapper as its ``forward``.

smolagents hands every exception of a tool to the model (``Error executing tool ...: <type>:
<message>``) and goes on. A refusal is raised as :class:`SandboxRefusal`, whose message is the
denial text (no hint). ``on_denial="raise"`` raises :class:`SandboxStop` instead: its message is
a fixed sentence (the refusal is its ``__cause__``), and the run stops after the step when the
agent has the :func:`stop_on_refusal` step callback (:class:`SandboxedCodeAgent` has it).
"""

from __future__ import annotations

import ast
import inspect
import json
import textwrap
import warnings
from typing import TYPE_CHECKING, Any

from smolagents import Tool
from smolagents.memory import ActionStep
from smolagents.tools import TypeHintParsingException, get_json_schema

from pysandboxes.tools import ON_DENIAL, Framework, hosted, sandboxed

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "STOPPED",
    "SandboxRefusal",
    "SandboxStop",
    "host_tool",
    "sandboxed_tool",
    "stop_on_refusal",
]

#: the message of a refusal that stops the run (``on_denial="raise"``): what the model reads
STOPPED = "The sandbox refused this tool call: the run stops here."

#: the decorators of this adapter, left out of a tool's source as ``@tool`` is by smolagents
_OURS = frozenset({"sandboxed_tool", "host_tool", "tool"})


class SandboxRefusal(Exception):
    """The sandbox refused something the tool's body did; the message is what the model reads
    (the first line of each refusal, without the hint for the developer)."""


class SandboxStop(SandboxRefusal):
    """A refusal of a tool made with ``on_denial="raise"``: the model reads :data:`STOPPED`,
    and :func:`stop_on_refusal` ends the run after the step. ``__cause__`` is the refusal."""


def _refusal(text: str, exc: BaseException) -> Any:
    raise SandboxRefusal(text) from exc


def _stop(text: str, exc: BaseException) -> Any:
    raise SandboxStop(STOPPED) from exc


def _framework(on_denial: str, decorator: str) -> Framework:
    if on_denial not in ON_DENIAL:
        raise ValueError(f"on_denial={on_denial!r}: expected one of {', '.join(map(repr, ON_DENIAL))}")
    return Framework(
        "smolagents",
        decorator=decorator,
        refusal=_refusal if on_denial == "text" else _stop,
        host_decorator="@host_tool",
        lifecycle="with pysandboxes.sandboxes(): (or a SandboxedCodeAgent)",
    )


def sandboxed_tool(
    tool_function: Callable[..., Any] | None = None,
    *,
    on_denial: str = "text",
    timeout: float | None = None,
) -> Any:
    """``smolagents.tool`` whose body runs in the sandbox: ``@sandboxed_tool``,
    ``@sandboxed_tool(on_denial="raise", timeout=5)`` or ``sandboxed_tool(function)``, and the
    ``Tool`` ``@tool`` makes (same name, description, inputs, output type and source).

    ``on_denial="text"``: a refusal is a tool error the model reads (the denial's first line,
    no hint) and the run goes on; ``"raise"``: the model reads :data:`STOPPED` and the run ends
    after the step with :func:`stop_on_refusal`. ``timeout``: seconds a call may take.
    """
    framework = _framework(on_denial, "@sandboxed_tool")

    def make(function: Callable[..., Any]) -> Tool:
        return _simple_tool(function, sandboxed(function, framework, timeout=timeout))

    return make if tool_function is None else make(tool_function)


def host_tool(tool_function: Callable[..., Any] | None = None, *, on_denial: str = "text") -> Any:
    """``smolagents.tool`` for a tool whose body runs **on the host** and calls ``@sandbox``
    functions with plain values: the sandbox is opened for them, and their refusals reach the
    model as for :func:`sandboxed_tool`. The body itself is not confined."""
    framework = _framework(on_denial, "@host_tool")

    def make(function: Callable[..., Any]) -> Tool:
        return _simple_tool(function, hosted(function, framework))

    return make if tool_function is None else make(tool_function)


def stop_on_refusal(memory_step: Any, agent: Any = None) -> None:
    """A smolagents step callback (``step_callbacks=[stop_on_refusal]``): a step whose error
    comes from a tool made with ``on_denial="raise"`` ends the run, raising the
    :class:`SandboxStop` (its ``__cause__`` the refusal) from ``agent.run()``."""
    if not isinstance(memory_step, ActionStep) or memory_step.error is None:
        return
    seen: set[int] = set()
    exc: BaseException | None = memory_step.error
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, SandboxStop):
            raise exc
        exc = exc.__cause__ or exc.__context__


# -- the tool, as smolagents.tool builds it --------------------------------------------------


def _simple_tool(function: Callable[..., Any], forward: Callable[..., Any]) -> Tool:
    """``smolagents.tool(function)`` (smolagents 1.26's ``tools.tool``), with ``forward`` as the
    tool's forward and our decorator lines left out of its source."""
    schema = get_json_schema(function)["function"]
    if "return" not in schema:
        if len(schema["parameters"]["properties"]) == 0:
            schema["return"] = {"type": "null"}
        else:
            raise TypeHintParsingException(
                "Tool return type not found: make sure your function has a return type hint!"
            )

    class SimpleTool(Tool):
        def __init__(self) -> None:
            self.is_initialized = True

    SimpleTool.name = schema["name"]
    SimpleTool.description = schema["description"]
    SimpleTool.inputs = schema["parameters"]["properties"]
    SimpleTool.output_type = schema["return"]["type"]
    if "output_schema" in schema:
        SimpleTool.output_schema = schema["output_schema"]
    elif "schema" in schema["return"]:
        SimpleTool.output_schema = schema["return"]["schema"]

    # the host wrapper itself (no __wrapped__: nothing reaches the unconfined body through it)
    SimpleTool.forward = staticmethod(forward)  # type: ignore[assignment]
    signature = inspect.signature(function)
    with_self = signature.replace(
        parameters=[
            inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
            *signature.parameters.values(),
        ]
    )
    forward.__signature__ = with_self  # type: ignore[attr-defined]
    class_source, forward_source = _sources(function, schema, with_self)
    SimpleTool.__source__ = class_source  # type: ignore[attr-defined]
    forward.__source__ = forward_source  # type: ignore[attr-defined]
    return SimpleTool()


def _is_ours(node: ast.expr) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    if isinstance(target, ast.Name):
        return target.id in _OURS
    return isinstance(target, ast.Attribute) and target.attr in _OURS


def _sources(
    function: Callable[..., Any], schema: dict[str, Any], signature: inspect.Signature
) -> tuple[str, str]:
    """The class and forward sources ``@tool`` gives the same function: its body under
    ``def forward(self, ...)``, the decorators that are not ours kept (and warned about, as
    smolagents does: they do not travel with the source)."""
    source = textwrap.dedent(inspect.getsource(function))
    lines = source.splitlines()
    tree = ast.parse(source)
    node = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)), None)
    if node is None:
        raise ValueError(
            f"No function definition found in the provided source of {function.__name__}. "
            "Ensure the input is a standard function."
        )
    others = [d for d in node.decorator_list if not _is_ours(d)]
    if others:
        warnings.warn(
            f"Function '{node.name}' has decorators other than @tool. "
            "This may cause issues with serialization in the remote executor. See issue #1626.",
            stacklevel=4,
        )
    decorator_lines = "\n".join(
        "\n".join(lines[d.lineno - 1 : d.end_lineno]) for d in others if d.end_lineno is not None
    )
    body = "\n".join(lines[node.body[0].lineno - 1 :])
    forward_source = f"def forward{signature}:\n{body}"
    indent = " " * 4
    class_source = (
        textwrap.dedent(f"""
        class SimpleTool(Tool):
            name: str = "{schema["name"]}"
            description: str = {json.dumps(textwrap.dedent(schema["description"]).strip())}
            inputs: dict[str, dict[str, str]] = {schema["parameters"]["properties"]}
            output_type: str = "{schema["return"]["type"]}"

            def __init__(self):
                self.is_initialized = True

        """)
        + textwrap.indent(decorator_lines + ("\n" if decorator_lines else ""), indent)
        + textwrap.indent(forward_source, indent)
    )
    return class_source, forward_source
