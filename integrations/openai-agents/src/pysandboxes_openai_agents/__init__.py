"""PySandboxes for the OpenAI Agents SDK: a tool's body runs in the sandbox, in one line.

.. code-block:: python

    from agents import Agent, Runner
    from pysandboxes_openai_agents import SandboxRunHooks, sandboxed_function_tool

    @sandboxed_function_tool
    def read_file(path: str) -> str:
        \"\"\"Read a text file.\"\"\"
        with open(path) as f:  # judged by the rule file, in the sandbox
            return f.read()

    agent = Agent(name="files", tools=[read_file])
    Runner.run_sync(agent, "What is in notes.txt?", hooks=SandboxRunHooks())

See docs/integrations.md.
"""

from __future__ import annotations

from ._adapter import (
    FRAMEWORK,
    REFUSED,
    SandboxRefusal,
    SandboxRunHooks,
    host_function_tool,
    sandboxed_function_tool,
)

__all__ = [
    "FRAMEWORK",
    "REFUSED",
    "SandboxRefusal",
    "SandboxRunHooks",
    "host_function_tool",
    "sandboxed_function_tool",
]
