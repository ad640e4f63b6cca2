"""The openai-agents adapter's harness for the conformance suite, and shared helpers.

No ``from __future__ import annotations``: the suite's driver loads this file outside
``sys.modules``. Tracing is off in every process (``OPENAI_AGENTS_DISABLE_TRACING=1`` and
``set_tracing_disabled``); the model is scripted (an ``agents.models.interface.Model``), so no
request leaves the process.
"""

import asyncio
import itertools
import json
import logging
import os
import re
import warnings
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any, ClassVar

import pytest

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

from agents import Agent, FunctionTool, Runner, set_tracing_disabled
from agents.items import ModelResponse, ToolCallOutputItem
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from pysandboxes_conformance import Call, Harness, Seen

set_tracing_disabled(True)

ENVIRONMENT = {"OPENAI_AGENTS_DISABLE_TRACING": "1", "OTEL_SDK_DISABLED": "true"}


class Failures(logging.Handler):
    """Counts the tool failures openai-agents handles (``Tool <name> failed`` on its logger):
    the framework's own mark of a tool call whose output is an error message."""

    _FAILED = re.compile(r"^Tool \S+ failed")

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if self._FAILED.match(record.getMessage()):
            self.count += 1


_CALL_IDS = itertools.count()


def _parallel(step: Any) -> list[Call]:
    return list(step) if isinstance(step, list) else [step]


def _function_call(name: str, arguments: dict[str, Any]) -> ResponseFunctionToolCall:
    call = next(_CALL_IDS)  # unique in a run: a handoff's next agent has a model of its own
    return ResponseFunctionToolCall(
        type="function_call",
        id=f"fc_{call}",
        call_id=f"call_{call}",
        name=name,
        arguments=json.dumps(arguments),
        status="completed",
    )


class ScriptedModel(Model):
    """An offline model: one function call per turn, in order, then a final text. It notes the
    failure count at each turn, so that each call's output is known to be an error or not."""

    def __init__(self, calls: Sequence[Call] = (), failures: Failures | None = None) -> None:
        self.calls = list(calls)
        self.failures = failures
        self.counts: list[int] = []
        self.inputs: list[Any] = []

    async def get_response(
        self,
        system_instructions: Any,
        input: Any,
        model_settings: Any,
        tools: Any,
        output_schema: Any,
        handoffs: Any,
        tracing: Any,
        *,
        previous_response_id: Any = None,
        conversation_id: Any = None,
        prompt: Any = None,
        **kwargs: Any,
    ) -> ModelResponse:
        turn = len(self.counts)
        self.counts.append(self.failures.count if self.failures is not None else 0)
        self.inputs.append(input)
        if turn < len(self.calls):
            step = self.calls[turn]  # one (tool, arguments), or a list of them: parallel calls
            output: list[Any] = [_function_call(name, arguments) for name, arguments in _parallel(step)]
        else:
            text = ResponseOutputText(type="output_text", text="done", annotations=[])
            output = [
                ResponseOutputMessage(
                    type="message", id="msg_end", role="assistant", status="completed", content=[text]
                )
            ]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def tools_of(module: ModuleType) -> list[FunctionTool]:
    return [value for value in vars(module).values() if isinstance(value, FunctionTool)]


def output_text(item: ToolCallOutputItem) -> str:
    """What the model reads of one tool call: the ``function_call_output`` item's output."""
    raw = item.raw_item
    output = raw["output"] if isinstance(raw, dict) else raw.output
    return output if isinstance(output, str) else str(output)


class Recorded:
    """One scripted run's agent, model and failure counter."""

    def __init__(self, tools: list[FunctionTool], calls: Sequence[Call]) -> None:
        self.failures = Failures()
        self.model = ScriptedModel(calls, self.failures)
        self.agent: Agent[Any] = Agent(
            name="conformance", instructions="use the tools", tools=tools, model=self.model
        )
        self.logger = logging.getLogger("openai.agents")

    def __enter__(self) -> "Recorded":
        self.level = self.logger.level
        self.logger.setLevel(logging.DEBUG)
        self.logger.addHandler(self.failures)
        return self

    def __exit__(self, *exc: object) -> None:
        self.logger.removeHandler(self.failures)
        self.logger.setLevel(self.level)

    def seen(self, result: Any) -> list[Seen]:
        outputs = [output_text(i) for i in result.new_items if isinstance(i, ToolCallOutputItem)]
        counts = self.model.counts
        return [Seen(text, counts[n + 1] > counts[n]) for n, text in enumerate(outputs)]


def run(
    module: ModuleType, calls: Sequence[Call], *, lifecycle: bool = True, **kwargs: Any
) -> tuple[Any, list[Seen]]:
    """``Runner.run_sync`` with the scripted model on the module's tools (and its
    ``SandboxRunHooks`` for the lifecycle); the result and what the model saw."""
    hooks = module.hooks if lifecycle and module.hooks is not None else None
    with Recorded(tools_of(module), calls) as recorded:
        result = Runner.run_sync(recorded.agent, "go", hooks=hooks, max_turns=len(calls) + 2, **kwargs)
    return result, recorded.seen(result)


class OpenAIAgentsHarness(Harness):
    name = "openai-agents"
    sandboxed_header = """
        from typing import Any

        from agents import function_tool
        from agents.tool_context import ToolContext

        from pysandboxes_openai_agents import SandboxRunHooks, host_function_tool, sandboxed_function_tool

        hooks = SandboxRunHooks()
    """
    plain_header = """
        from typing import Any

        from agents import function_tool
        from agents.tool_context import ToolContext

        hooks = None
    """
    sandboxed = "@sandboxed_function_tool"
    sandboxed_raise = '@sandboxed_function_tool(on_denial="raise")'
    host = "@host_function_tool"
    plain = "@function_tool"
    # openai-agents passes a ToolContext (a RunContextWrapper) first, without a default
    context = ("ctx", "ToolContext[Any]")
    context_first = True
    environment: ClassVar[Mapping[str, str]] = ENVIRONMENT
    wrong_usages = (
        (
            '@sandboxed_function_tool\n@function_tool\ndef wrapped() -> int:\n    """A tool object made a tool."""\n    return 3\n',
            "@sandboxed_function_tool makes a tool of a function, not of a agents.tool.FunctionTool",
        ),
        (
            '@sandbox\n@sandboxed_function_tool\ndef twice() -> int:\n    """Sandboxed twice."""\n    return 2\n',
            "@sandbox decorates a function, not a agents.tool.FunctionTool",
        ),
        (
            '@sandboxed_function_tool\ndef late(text: str, ctx: ToolContext[Any]) -> str:\n    """Context second."""\n    return text\n',
            "its `ctx: ToolContext",
        ),
    )

    def call_tools(self, module: ModuleType, calls: Sequence[Call], *, lifecycle: bool = True) -> list[Seen]:
        """``Runner.run_sync(agent, "go", hooks=...)`` with the scripted model; openai-agents runs
        a sync tool on a worker thread and awaits an async one, in the same run."""
        return run(module, calls, lifecycle=lifecycle)[1]

    def schema(self, module: ModuleType, tool: str) -> Any:
        made = getattr(module, tool)
        return {
            "name": made.name,
            "description": made.description,
            "parameters": made.params_json_schema,
            "strict": made.strict_json_schema,
        }


def close_default_loop() -> None:
    """Close the loop ``Runner.run_sync`` runs on: the thread's default loop, which it creates
    when there is none and never closes (``asyncio.run`` would drop it, unclosed)."""
    policy = asyncio.get_event_loop_policy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = policy.get_event_loop()
        except RuntimeError:  # none: set to None before
            return
    loop.close()
    policy.set_event_loop(None)


def run_async(coroutine: Any) -> Any:
    """``asyncio.run``, in a process that also uses ``Runner.run_sync``."""
    close_default_loop()
    return asyncio.run(coroutine)


@pytest.fixture(scope="session", autouse=True)
def _default_loop_closed() -> Any:
    yield
    close_default_loop()


@pytest.fixture(scope="session")
def harness() -> OpenAIAgentsHarness:
    return OpenAIAgentsHarness()
