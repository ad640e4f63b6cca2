"""PySandboxes for smolagents: a tool's body, and a CodeAgent's model-written code, run in the
sandbox's child under the rule file.

.. code-block:: python

    from pysandboxes_smolagents import SandboxedCodeAgent, SandboxedToolCallingAgent, sandboxed_tool

    @sandboxed_tool
    def read_file(path: str) -> str:
        \"\"\"Read a text file.

        Args:
            path: The file to read.
        \"\"\"
        with open(path) as f:  # judged by the rule file, in the sandbox
            return f.read()

    SandboxedToolCallingAgent(tools=[read_file], model=model).run("What is in notes.txt?")

    with SandboxedCodeAgent(tools=[read_file], model=model) as agent:  # the model's code too
        agent.run("Sum the numbers in data/numbers.txt")

See docs/integrations.md.
"""

from __future__ import annotations

from ._executor import EXECUTOR_TYPE, SandboxedCodeAgent, SandboxedPythonExecutor, SandboxedToolCallingAgent
from ._tool import STOPPED, SandboxRefusal, SandboxStop, host_tool, sandboxed_tool, stop_on_refusal

__all__ = [
    "EXECUTOR_TYPE",
    "STOPPED",
    "SandboxRefusal",
    "SandboxStop",
    "SandboxedCodeAgent",
    "SandboxedPythonExecutor",
    "SandboxedToolCallingAgent",
    "host_tool",
    "sandboxed_tool",
    "stop_on_refusal",
]
