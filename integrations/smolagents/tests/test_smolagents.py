"""What is particular to smolagents: the tool smolagents builds (schema and source), a refusal
the run goes on after, ``on_denial="raise"`` with ``stop_on_refusal``, and above all the
``CodeAgent``'s model-written code run by ``SandboxedPythonExecutor`` in the sandbox's child:
refused outside the rules (the model reads the refusal, the run goes on), allowed inside, its
state kept across steps and runs, its tools called in the child, the sandbox closed with the
agent."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from smolagents import CodeAgent, ToolCallingAgent
from smolagents.local_python_executor import InterpreterError
from smolagents.models import get_tool_json_schema
from smolagents.monitoring import LogLevel

from pysandboxes import SandBoxError, sandbox_denials, sandboxes
from pysandboxes_smolagents import (
    EXECUTOR_TYPE,
    STOPPED,
    SandboxedCodeAgent,
    SandboxedPythonExecutor,
    SandboxedToolCallingAgent,
    SandboxStop,
    stop_on_refusal,
)
from pysandboxes_smolagents._executor import RESTARTED, _child_stop

from .conftest import ENVIRONMENT, ScriptedCodeModel, ScriptedToolModel, seen_of

HINT = "Add `"
ALLOWED_TEXT = "allowed content\n"
SECRET_TEXT = "secret content\n"

TOOLS = '''
    """The tools of these tests, made by pysandboxes-smolagents (and one by smolagents alone)."""

    import os
    import time

    from smolagents import tool

    from pysandboxes import sandbox
    from pysandboxes_smolagents import SandboxedCodeAgent, host_tool, sandboxed_tool


    @sandboxed_tool
    def read_file(path: str) -> str:
        """Read a text file.

        Args:
            path: The file to read.
        """
        with open(path, encoding="utf-8") as f:
            return f.read()


    @sandboxed_tool(on_denial="raise")
    def read_or_stop(path: str) -> str:
        """Read a text file; a refusal ends the run.

        Args:
            path: The file to read.
        """
        with open(path, encoding="utf-8") as f:
            return f.read()


    @sandboxed_tool
    def body_pid() -> int:
        """The process the tool's body runs in."""
        return os.getpid()


    @tool
    def plain_pid() -> int:
        """The process the plain tool runs in."""
        return os.getpid()


    @sandbox
    def _read(path: str) -> str:
        with open(path, encoding="utf-8") as f:
            return f.read()


    @host_tool
    def host_read(path: str) -> str:
        """Read a file through a sandboxed body, from the host.

        Args:
            path: The file to read.
        """
        return f"host={os.getpid()} " + _read(path)


    @sandboxed_tool
    def stall() -> None:
        """Ignore the cancellation of a call past its timeout: the child is killed."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                time.sleep(0.05)
            except BaseException:
                pass


    def make_agent(model, **kwargs):
        """A SandboxedCodeAgent created here: its rule file is the one next to this module."""
        return SandboxedCodeAgent(tools=[read_file, body_pid, plain_pid], model=model, **kwargs)
'''

SCHEMA_TOOL = '''
    """A tool with every kind of parameter, made by DECORATOR."""

    from __future__ import annotations

    from smolagents import tool

    from pysandboxes_smolagents import sandboxed_tool


    DECORATOR
    def search(query: str, limit: int = 5, lang: str | None = None, tags: list[str] | None = None) -> list[str]:
        """Search the notes for a query.

        Args:
            query: What to look for.
            limit: How many results at most.
            lang: The language of the notes, if any.
            tags: Only notes with these tags.
        """
        found = [query, lang or "any", *(tags or [])]
        return found[:limit]
'''


def _module(root: Path, name: str, source: str) -> ModuleType:
    (root / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    return importlib.import_module(name)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("smolagents")
    (root / "data").mkdir()
    (root / "data" / "allowed.txt").write_text(ALLOWED_TEXT, encoding="utf-8")
    (root / "secret").mkdir()
    (root / "secret" / "key.txt").write_text(SECRET_TEXT, encoding="utf-8")
    (root / ".py-sandboxes").write_text(
        "os-sandbox=landlock\nexpose-ro=./data\npython-import=colorsys, pathlib\n", encoding="utf-8"
    )
    sys.path.insert(0, str(root))  # left there: the registry keeps the tools for the process
    tools = _module(root, "smol_test_tools", TOOLS)
    sandboxed = _module(root, "smol_schema_sandboxed", SCHEMA_TOOL.replace("DECORATOR", "@sandboxed_tool"))
    plain = _module(root, "smol_schema_plain", SCHEMA_TOOL.replace("DECORATOR", "@tool"))

    class Project:
        rule_file = str(root / ".py-sandboxes")
        allowed = str(root / "data" / "allowed.txt")
        secret = str(root / "secret" / "key.txt")

    Project.tools = tools  # type: ignore[attr-defined]
    Project.schema = (sandboxed, plain)  # type: ignore[attr-defined]
    return Project


def code_agent(project: Any, blocks: list[str], *, tools: list[Any] | None = None, **kwargs: Any) -> Any:
    """A SandboxedCodeAgent on the project's rule file, driven by the scripted code model."""
    t = project.tools
    return SandboxedCodeAgent(
        tools=[t.read_file, t.read_or_stop, t.body_pid, t.plain_pid] if tools is None else tools,
        model=ScriptedCodeModel(blocks),
        max_steps=len(blocks) + 1,
        verbosity_level=LogLevel.OFF,
        executor_kwargs={"sandboxes_config": project.rule_file},
        **kwargs,
    )


def closed(project: Any) -> bool:
    try:
        project.tools._read(project.allowed)
    except SandBoxError as exc:
        return "called outside any sandbox" in str(exc)
    return False


# -- the tool smolagents builds -----------------------------------------------------------------


def test_the_tool_is_the_plain_tools_for_the_model_and_for_serialization(project: Any) -> None:
    sandboxed, plain = (m.search for m in project.schema)
    assert get_tool_json_schema(sandboxed) == get_tool_json_schema(plain)
    assert sandboxed.to_code_prompt() == plain.to_code_prompt()
    assert (sandboxed.inputs, sandboxed.output_type) == (plain.inputs, plain.output_type)
    # the source smolagents saves and sends to remote executors: the function's own, no decorator
    assert sandboxed.to_dict() == plain.to_dict()
    assert "sandboxed_tool" not in type(sandboxed).__source__
    assert not hasattr(sandboxed.forward, "__wrapped__")  # nothing reaches the unconfined body


def test_a_tool_runs_its_body_in_the_child_and_a_plain_one_in_the_host(project: Any) -> None:
    with sandboxes(sandboxes_config=project.rule_file):
        agent = ToolCallingAgent(
            tools=[project.tools.body_pid, project.tools.plain_pid],
            model=ScriptedToolModel([("body_pid", {}), ("plain_pid", {})]),
            verbosity_level=LogLevel.OFF,
        )
        body, plain = seen_of(agent)
    assert int(body.text) != os.getpid() and plain.text == str(os.getpid())


def test_the_run_goes_on_after_a_refusal(project: Any) -> None:
    with sandboxes(sandboxes_config=project.rule_file):
        agent = ToolCallingAgent(
            tools=[project.tools.read_file],
            model=ScriptedToolModel(
                [("read_file", {"path": project.secret}), ("read_file", {"path": project.allowed})]
            ),
            verbosity_level=LogLevel.OFF,
        )
        refused, allowed = seen_of(agent)
    assert refused.error
    assert (
        f"SandboxRefusal: RuleFileNotFoundError: Access to '{project.secret}' must be accepted"
        in refused.text
    )
    assert HINT not in refused.text and SECRET_TEXT.strip() not in refused.text
    assert allowed == (ALLOWED_TEXT, False) or (allowed.text, allowed.error) == (ALLOWED_TEXT, False)


def test_a_host_tool_runs_on_the_host_and_sandboxes_its_body(project: Any) -> None:
    with sandboxes(sandboxes_config=project.rule_file):
        agent = ToolCallingAgent(
            tools=[project.tools.host_read],
            model=ScriptedToolModel(
                [("host_read", {"path": project.allowed}), ("host_read", {"path": project.secret})]
            ),
            verbosity_level=LogLevel.OFF,
        )
        allowed, refused = seen_of(agent)
    assert allowed.text == f"host={os.getpid()} {ALLOWED_TEXT}"
    assert refused.error and "must be accepted by a rule." in refused.text and HINT not in refused.text


def test_on_denial_raise_with_stop_on_refusal_ends_the_run(project: Any) -> None:
    model = ScriptedToolModel(
        [("read_or_stop", {"path": project.secret}), ("read_file", {"path": project.allowed})]
    )
    with sandboxes(sandboxes_config=project.rule_file):
        agent = ToolCallingAgent(
            tools=[project.tools.read_or_stop, project.tools.read_file],
            model=model,
            step_callbacks=[stop_on_refusal],
            verbosity_level=LogLevel.OFF,
        )
        with pytest.raises(SandboxStop, match=STOPPED) as raised:
            agent.run("go")
    assert model.turn == 1  # the model was not asked again
    assert sandbox_denials(raised.value)  # the refusal is its cause, for the application


def test_without_stop_on_refusal_the_model_reads_only_that_the_run_should_stop(project: Any) -> None:
    with sandboxes(sandboxes_config=project.rule_file):
        agent = ToolCallingAgent(
            tools=[project.tools.read_or_stop, project.tools.read_file],
            model=ScriptedToolModel(
                [("read_or_stop", {"path": project.secret}), ("read_file", {"path": project.allowed})]
            ),
            verbosity_level=LogLevel.OFF,
        )
        stopped, allowed = seen_of(agent)
    assert stopped.error and STOPPED in stopped.text and "must be accepted by a rule" not in stopped.text
    assert allowed.text == ALLOWED_TEXT


# -- the model's code, in the sandbox -----------------------------------------------------------


def test_the_models_code_runs_in_the_child_and_keeps_its_state_across_steps(project: Any) -> None:
    blocks = [
        f"import pathlib\ntext = pathlib.Path({project.allowed!r}).read_text()\nprint(len(text))",
        "final_answer([text, body_pid(), plain_pid()])",
    ]
    with code_agent(project, blocks, additional_authorized_imports=["pathlib"]) as agent:
        text, body, plain = agent.run("go")
        assert "Execution logs:\n16" in agent.model.seen[1]
    assert text == ALLOWED_TEXT
    # the tools the code calls run in the child too: the sandboxed one and the plain one
    assert body == plain and body != os.getpid()
    assert closed(project)  # the agent's `with` left the sandbox


def test_the_models_code_reading_a_file_outside_the_rules_is_refused(project: Any) -> None:
    blocks = [
        f"import pathlib\nprint('before')\nsecret = pathlib.Path({project.secret!r}).read_text()",
        'final_answer("went on")',
    ]
    with code_agent(project, blocks, additional_authorized_imports=["pathlib"]) as agent:
        assert agent.run("go") == "went on"  # the run goes on after the refusal
        told = agent.model.seen[1]
    assert f"RuleFileNotFoundError: Access to '{project.secret}' must be accepted by a rule." in told
    assert "Code execution failed at line 'secret = pathlib.Path(" in told
    assert "before" in told  # the logs printed before the refusal
    assert HINT not in told and SECRET_TEXT.strip() not in told


def test_the_local_executor_reads_the_refused_file(project: Any) -> None:
    """The control: smolagents' own executor runs the same code with the agent's rights."""
    agent = CodeAgent(
        tools=[],
        model=ScriptedCodeModel(
            [f"import pathlib\nfinal_answer(pathlib.Path({project.secret!r}).read_text())"]
        ),
        additional_authorized_imports=["pathlib"],
        max_steps=2,
        verbosity_level=LogLevel.OFF,
    )
    assert agent.run("go") == SECRET_TEXT


def test_an_import_needs_smolagents_and_the_rules(project: Any) -> None:
    blocks = [
        "import colorsys\nok = colorsys.rgb_to_hsv(1.0, 0.0, 0.0)",
        "import ftplib",
        "import socket",
        "final_answer(ok)",
    ]
    with code_agent(project, blocks, additional_authorized_imports=["colorsys", "ftplib"]) as agent:
        answer = agent.run("go")
        _, rules, smolagents_ = agent.model.seen[1:4]
    assert answer == (0.0, 1.0, 1.0)
    assert "RuleModuleNotFoundError: Module named 'ftplib' is not allowed by a rule" in rules
    assert HINT not in rules
    assert "Import of socket is not allowed" in smolagents_  # smolagents' own check, first


def test_a_tool_the_code_calls_is_refused_as_text(project: Any) -> None:
    blocks = [f"content = read_file({project.secret!r})", 'final_answer("went on")']
    with code_agent(project, blocks) as agent:
        assert agent.run("go") == "went on"
        told = agent.model.seen[1]
    assert f"RuleFileNotFoundError: Access to '{project.secret}' must be accepted by a rule." in told
    assert HINT not in told


def test_a_tool_with_on_denial_raise_ends_the_code_agents_run(project: Any) -> None:
    blocks = [f"content = read_or_stop({project.secret!r})", 'final_answer("went on")']
    with code_agent(project, blocks) as agent:
        with pytest.raises(SandboxStop, match=STOPPED):
            agent.run("go")
        assert len(agent.model.seen) == 1


def test_the_state_persists_across_runs_and_variables_are_sent(project: Any) -> None:
    with code_agent(project, ["total = sum(numbers)\nfinal_answer(total)"]) as agent:
        assert agent.run("sum", additional_args={"numbers": [1, 2, 3]}) == 6
        agent.model.blocks = ["final_answer(total * 10)"]
        assert agent.run("again", reset=False) == 60


def test_an_output_the_result_guard_refuses_crosses_as_its_text(project: Any) -> None:
    blocks = ["class Box:\n    def __str__(self):\n        return 'a box'\n\nfinal_answer(Box())"]
    with code_agent(project, blocks) as agent:
        assert str(agent.run("go")) == "a box"


def test_the_default_rule_file_is_the_one_next_to_the_module_creating_the_agent(project: Any) -> None:
    model = ScriptedCodeModel(
        [f"read_file({project.secret!r})", f"final_answer(read_file({project.allowed!r}))"]
    )
    with project.tools.make_agent(model, max_steps=3, verbosity_level=LogLevel.OFF) as agent:
        assert agent.executor_type == EXECUTOR_TYPE
        assert isinstance(agent.python_executor, SandboxedPythonExecutor)
        assert agent.run("go") == ALLOWED_TEXT
        assert "must be accepted by a rule." in model.seen[1]
    assert closed(project)


def test_the_executor_in_a_plain_code_agent(project: Any) -> None:
    model = ScriptedCodeModel(
        [
            f"import pathlib\npathlib.Path({project.secret!r}).read_text()",
            f"final_answer(pathlib.Path({project.allowed!r}).read_text())",
        ]
    )
    executor = SandboxedPythonExecutor(["pathlib"], sandboxes_config=project.rule_file)
    with CodeAgent(
        tools=[], model=model, executor=executor, max_steps=3, verbosity_level=LogLevel.OFF
    ) as agent:
        assert agent.run("go") == ALLOWED_TEXT
    assert "must be accepted by a rule." in model.seen[1] and HINT not in model.seen[1]
    assert closed(project)


def test_a_code_action_past_the_rule_files_timeout_is_cancelled(project: Any) -> None:
    """The rule file's timeout= bounds each code action (smolagents' timeout thread is not used
    in the child); the model reads that it was cancelled, without the rule file's hint."""
    rules = Path(project.rule_file).with_name("timeout.py-sandboxes")
    rules.write_text(Path(project.rule_file).read_text(encoding="utf-8") + "timeout=1s\n", encoding="utf-8")
    agent = code_agent(project, ["x = 41", "stall()", "final_answer(x + 1)"], tools=[project.tools.stall])
    agent.python_executor = SandboxedPythonExecutor(sandboxes_config=str(rules))
    with agent:
        assert agent.run("go") == 42  # the child was kept: the cancelled call stopped in time
        told = agent.model.seen[2]
    assert "Code execution did not finish within the time the sandbox allows (1 s): it was cancelled" in told
    assert "rule file" not in told


def test_a_new_child_gets_the_interpreter_again_and_the_model_is_told(project: Any) -> None:
    """A child restarted after a crash or a limit knows no interpreter: the executor makes it
    again (tools and variables sent again), and the code's variables of earlier steps are gone."""
    executor = SandboxedPythonExecutor(sandboxes_config=project.rule_file)
    try:
        executor.send_tools({"body_pid": project.tools.body_pid})
        executor.send_variables({"numbers": [1, 2]})
        executor("x = 41")
        _child_stop(executor._key)  # what a fresh child knows of this executor: nothing
        again = executor("y = sum(numbers) + body_pid() * 0")
        assert again.output == 3 and again.logs.startswith(RESTARTED)
        with pytest.raises(InterpreterError, match="The variable `x` is not defined"):
            executor("x")
    finally:
        executor.cleanup()
    assert closed(project)


COMPLETE = '''
    """A SandboxedCodeAgent run under python-sb: the whole program is under the rules."""

    import json
    import sys

    from smolagents.models import ChatMessage, MessageRole, Model

    from pysandboxes_smolagents import SandboxedCodeAgent

    secret, allowed = sys.argv[1:3]


    class Scripted(Model):
        def __init__(self, blocks):
            super().__init__(model_id="scripted")
            self.blocks, self.seen = blocks, []

        def generate(self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kw):
            self.seen.append(str(messages[-1].content))
            return ChatMessage(role=MessageRole.ASSISTANT, content="<code>\\n" + self.blocks.pop(0) + "\\n</code>")


    model = Scripted(
        [
            f"import pathlib\\npathlib.Path({secret!r}).read_text()",
            f"import pathlib\\nfinal_answer(pathlib.Path({allowed!r}).read_text())",
        ]
    )
    agent = SandboxedCodeAgent(
        tools=[], model=model, additional_authorized_imports=["pathlib"], max_steps=3, verbosity_level=-1
    )
    answer = agent.run("go")
    print(json.dumps({"answer": answer, "told": model.seen[1], "kind": type(agent.python_executor).__name__}))
'''


def test_under_python_sb_the_code_runs_in_the_program_under_its_rules(project: Any) -> None:
    root = Path(project.rule_file).parent
    app = root / "app"
    app.mkdir(exist_ok=True)
    (app / "complete_agent.py").write_text(textwrap.dedent(COMPLETE), encoding="utf-8")
    adapter = Path(importlib.import_module("pysandboxes_smolagents").__file__).parent.parent  # type: ignore[arg-type]
    rules = app / ".py-sandboxes"
    rules.write_text(
        f"os-sandbox=landlock\nexpose-ro={root / 'data'}\nexpose-ro={app}\nexpose-ro={adapter}\n"
        # smolagents' interpreter imports what the code asks for; its timeout runs in a thread
        "python-import=*\npython-api=ALLOW:threads\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("python-sb")),
            f"--pysandboxes-config={rules}",
            str(app / "complete_agent.py"),
            project.secret,
            project.allowed,
        ],
        cwd=app,
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(root), "LANG": "C.UTF-8", **ENVIRONMENT},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["answer"] == ALLOWED_TEXT and report["kind"] == "SandboxedPythonExecutor"
    assert (
        f"RuleFileNotFoundError: Access to '{project.secret}' must be accepted by a rule." in report["told"]
    )
    assert HINT not in report["told"]


def test_a_tool_the_child_cannot_find_is_refused_when_sent(project: Any) -> None:
    def local_tool() -> int:
        """Made inside a function: no module global holds it."""
        return 1

    from smolagents import tool

    made = tool(local_tool)
    agent = code_agent(project, ['final_answer("never")'], tools=[made])
    with agent, pytest.raises(TypeError, match="define it at the top level of a module"):
        agent.run("go")
    assert closed(project)


def test_a_sandboxed_tool_calling_agent_opens_the_sandbox_for_each_run(project: Any) -> None:
    def agent(calls: list[Any], **kwargs: Any) -> SandboxedToolCallingAgent:
        return SandboxedToolCallingAgent(
            tools=[project.tools.read_file, project.tools.read_or_stop, project.tools.body_pid],
            model=ScriptedToolModel(calls),
            verbosity_level=LogLevel.OFF,
            sandboxes_kwargs={"sandboxes_config": project.rule_file},
            **kwargs,
        )

    assert agent([("read_file", {"path": project.allowed})]).run("go") == "done"
    assert closed(project)
    # streamed: open while the events are read, closed once they are
    (seen,) = seen_of(agent([("body_pid", {})]))
    assert int(seen.text) != os.getpid() and closed(project)
    # a run that raises leaves the sandbox too
    stopping = agent([("read_or_stop", {"path": project.secret})])  # stop_on_refusal is there
    with pytest.raises(SandboxStop):
        stopping.run("go")
    assert closed(project)


def test_decoration_is_refused_or_warned_about_as_by_tool(tmp_path: Path) -> None:
    """An async def is refused as smolagents' @tool refuses it; a decorator of the
    application's below ours is warned about as @tool warns (it does not travel with the
    source); ours is not."""
    sys.path.insert(0, str(tmp_path))
    header = "from pysandboxes_smolagents import sandboxed_tool\n\n\n"
    # in a fresh process: a failed import leaves its @sandbox body registered (children import it)
    (tmp_path / "smol_async_tool.py").write_text(
        header + '@sandboxed_tool\nasync def later() -> int:\n    """Later."""\n    return 1\n',
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-c", "import smol_async_tool"],
        cwd=tmp_path,
        env={
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(tmp_path),
            "PYTHONPATH": str(tmp_path),
            **ENVIRONMENT,
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "ValueError: No function definition found in the provided source of later" in done.stderr
    other = "def logged(f):\n    return f\n\n\n"
    with pytest.warns(UserWarning, match="has decorators other than @tool"):
        made = _module(
            tmp_path,
            "smol_decorated_tool",
            header
            + other
            + '@sandboxed_tool\n@logged\ndef noted() -> int:\n    """Noted."""\n    return 1\n',
        )
    assert "@logged" in type(made.noted).__source__ and "sandboxed_tool" not in type(made.noted).__source__
