"""The crewai adapter's harness for the conformance suite, and shared fixtures.

crewai writes to ``$HOME`` when it is imported (``~/.config/crewai``, ``~/.local/share/...``)
and sends telemetry during a kickoff unless told not to: both are set before crewai is first
imported, here for the test process and in ``CrewaiHarness.environment`` for the processes the
suite starts (whose ``HOME`` is the project's).

No ``from __future__ import annotations``: the suite's driver loads this file outside
``sys.modules``.
"""

import atexit
import contextlib
import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator, Mapping, Sequence
from types import ModuleType
from typing import Any, ClassVar

import pytest

from pysandboxes import is_in_sandbox

QUIET = {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_DISABLE_TRACKING": "true",
    "OTEL_SDK_DISABLED": "true",
    "CREWAI_TRACING_ENABLED": "false",
    # the processes the suite starts have the project's HOME already
    "PYSANDBOXES_CREWAI_TEST_HOME": "1",
}
if not os.environ.get("PYSANDBOXES_CREWAI_TEST_HOME") and not is_in_sandbox():
    # a home of its own for the test process (crewai writes there at import): never the user's
    # (under python-sb, the rules give the program its home)
    _home = tempfile.mkdtemp(prefix="pysandboxes-crewai-home-")
    atexit.register(shutil.rmtree, _home, ignore_errors=True)
    os.environ["HOME"] = _home
for _name, _value in QUIET.items():
    os.environ.setdefault(_name, _value)
# the sandbox child's home and temporary directory (CrewaiHarness.child_rules)
if not is_in_sandbox():
    os.makedirs(os.path.join(os.environ["HOME"], "child"), exist_ok=True)

with warnings.catch_warnings():
    # importing crewai warns "Cannot set an attribute on 'crewai.rag' for child module
    # 'embeddings'" (an ImportWarning, ignored by default; an error under filterwarnings=error)
    warnings.simplefilter("ignore", ImportWarning)
    from crewai import Agent, Crew, Task
    from crewai.llms.base_llm import BaseLLM
    from crewai.tools import BaseTool
    from crewai.utilities.agent_utils import convert_tools_to_openai_schema
    from pydantic import Field

from pysandboxes_conformance import Call, Harness, Seen  # noqa: E402


class ScriptedLLM(BaseLLM):
    """An offline crewai LLM with native function calling: one tool call per turn, in order,
    then a final answer. ``react=True``: the same calls as ReAct text (``Action:`` /
    ``Action Input:``), crewai's loop for models without function calling."""

    calls: list[Any] = Field(default_factory=list)
    react: bool = False
    #: the call (0-based) at which the model raises instead of answering: a failed run
    explode_at: int | None = None
    #: the conversation crewai sent on each call
    seen: list[list[dict[str, Any]]] = Field(default_factory=list)

    def supports_function_calling(self) -> bool:
        return not self.react

    def supports_stop_words(self) -> bool:
        return False

    def get_context_window_size(self) -> int:
        return 8192

    def get_input_tokens_count(self, messages: Any, tools: Any = None, response_model: Any = None) -> int:
        return 1  # BaseLLM's estimate says so at WARNING on every call

    def call(
        self,
        messages: Any,
        tools: Any = None,
        callbacks: Any = None,
        available_functions: Any = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
        **kwargs: Any,
    ) -> Any:
        messages = [{"role": "user", "content": messages}] if isinstance(messages, str) else list(messages)
        self.seen.append(messages)
        turn = len(tool_messages(messages, react=self.react))
        if turn == self.explode_at:
            raise RuntimeError("the model failed")
        if turn >= len(self.calls):
            return "Thought: I now know the final answer\nFinal Answer: done" if self.react else "done"
        name, arguments = self.calls[turn]
        if self.react:
            return f"Thought: I use {name}.\nAction: {name}\nAction Input: {json.dumps(arguments)}"
        return [
            {
                "id": f"call_{turn}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ]


def tool_messages(messages: Sequence[Mapping[str, Any]], *, react: bool = False) -> list[str]:
    """What the model was told of each tool call so far: the tool messages (native), or the
    text after each ``Observation:`` (ReAct; the first two messages are the prompt)."""
    if not react:
        return [str(m.get("content", "")) for m in messages if m.get("role") == "tool"]
    observed = []
    for message in messages[2:]:
        content = str(message.get("content", ""))
        if "Observation:" in content:
            observed.append(content.rsplit("Observation:", 1)[1].strip())
    return observed


@contextlib.contextmanager
def crewai_warnings() -> Iterator[None]:
    """crewai reads its own deprecated fields (``function_calling_llm``, ``allow_code_execution``)
    when it builds an Agent or a Crew: DeprecationWarnings from crewai's modules, errors under
    ``filterwarnings=error``. Only those are ignored."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"crewai(\.|$)")
        yield


def tools_of(module: ModuleType) -> list[BaseTool]:
    return [value for value in vars(module).values() if isinstance(value, BaseTool)]


def crew(
    module: ModuleType,
    calls: Sequence[Call],
    *,
    lifecycle: bool = True,
    react: bool = False,
    tools: Sequence[BaseTool] | None = None,
    **crew_kwargs: Any,
) -> tuple[Crew, ScriptedLLM]:
    """A one-agent, one-task crew whose scripted model makes ``calls``; with the module's
    ``kickoff`` callback (``sandbox_kickoff``) for the lifecycle."""
    llm = ScriptedLLM(model="scripted", calls=list(calls), react=react, seen=[])
    callbacks = [module.kickoff] if lifecycle and getattr(module, "kickoff", None) is not None else []
    with crewai_warnings():
        agent = Agent(
            role="tester",
            goal="call the tools you are told to call",
            backstory="a test",
            llm=llm,
            tools=list(tools_of(module) if tools is None else tools),
            max_iter=len(calls) + 3,
            verbose=False,
        )
        task = Task(description="Call the tools.", expected_output="done", agent=agent)
        made = Crew(
            agents=[agent], tasks=[task], before_kickoff_callbacks=callbacks, verbose=False, **crew_kwargs
        )
    return made, llm


def seen(made: Crew, llm: ScriptedLLM, output: Any) -> list[Seen]:
    """What the model was told of each tool call, and whether crewai recorded the call as a
    failed one (``TaskOutput.tool_failures``, in the order of the calls)."""
    texts = tool_messages(llm.seen[-1], react=llm.react) if llm.seen else []
    failures = [record for task in output.tasks_output for record in task.tool_failures]
    result = []
    for text in texts:
        failed = bool(failures) and failures[0].failure.message in text
        if failed:
            failures.pop(0)
        result.append(Seen(text, failed))
    return result


class CrewaiHarness(Harness):
    name = "crewai"
    sandboxed_header = """
        from crewai.tools import tool
        from pysandboxes_crewai import host_tool, sandbox_kickoff, sandboxed_tool

        kickoff = sandbox_kickoff
    """
    plain_header = """
        from crewai.tools import tool

        kickoff = None
    """
    sandboxed = "@sandboxed_tool"
    sandboxed_raise = '@sandboxed_tool(on_denial="raise")'
    host = "@host_tool"
    plain = "@tool"
    context = None  # crewai gives a tool its arguments only
    environment: ClassVar[Mapping[str, str]] = QUIET
    # The child imports the tools' module, so crewai, under the rules. crewai's import creates
    # ~/.local/share/<project>/ and ~/.local/share/crewai/credentials/secret.key (and reads the
    # key back), and imports portalocker, whose BoundedSemaphore asks tempfile for a writable
    # directory: the child gets a home and a temporary directory of its own, never the user's
    # home (where crewai's credentials are) nor the host's /tmp (where the suite's refused file is).
    child_rules = "env=HOME=${HOME}/child\nenv=TMPDIR=${HOME}/child\nexpose-rw=${HOME}/child\n"
    # Under python-sb the whole program imports crewai under the rules: the same writes, in the
    # program's home (the suite's, in the project) and a temporary directory there.
    complete_rules = "env=HOME=${HOME}\nenv=TMPDIR=${HOME}\nexpose-rw=${HOME}\n"
    wrong_usages = (
        (
            '@sandboxed_tool\n@tool\ndef wrapped() -> int:\n    """A tool object made a tool."""\n    return 3\n',
            "@sandboxed_tool makes a tool of a function, not of a crewai.tools.base_tool.Tool",
        ),
        (
            '@sandbox\n@sandboxed_tool\ndef twice() -> int:\n    """Sandboxed twice."""\n    return 2\n',
            "@sandbox decorates a function",
        ),
        (
            '@sandboxed_tool("named")\n@sandboxed_tool\ndef again() -> int:\n    """Twice."""\n    return 2\n',
            "@sandboxed_tool makes a tool of a function, not of a pysandboxes_crewai._adapter.SandboxedTool",
        ),
    )

    def call_tools(self, module: ModuleType, calls: Sequence[Call], *, lifecycle: bool = True) -> list[Seen]:
        """``Crew(...).kickoff()``: one agent, one task, the scripted model calling the tools
        natively (crewai's loop for models with function calling)."""
        made, llm = crew(module, calls, lifecycle=lifecycle)
        with crewai_warnings():
            output = made.kickoff()
        return seen(made, llm, output)

    def schema(self, module: ModuleType, tool: str) -> Any:
        """What the model is given: the function of native tool calling, and the tool's text
        description of the ReAct prompt."""
        made = getattr(module, tool)
        (function,), _, _ = convert_tools_to_openai_schema([made])
        return {"native": function, "react": made.formatted_description}


@pytest.fixture(scope="session")
def harness() -> CrewaiHarness:
    return CrewaiHarness()


@pytest.fixture(scope="session")
def files(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The project of the crewai-specific tests (``_files.py``) and its tools module."""
    from ._files import make_files

    return make_files(tmp_path_factory.mktemp("crewai-files"))
