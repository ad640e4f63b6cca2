"""PySandboxes for crewai: a tool's body runs in the sandbox, in one line.

.. code-block:: python

    from crewai import Agent, Crew, Task
    from pysandboxes_crewai import sandbox_kickoff, sandboxed_tool

    @sandboxed_tool("read_file")
    def read_file(path: str) -> str:
        \"\"\"Read a text file.\"\"\"
        with open(path) as f:  # judged by the rule file, in the sandbox
            return f.read()

    agent = Agent(role="reader", goal="...", backstory="...", llm=llm, tools=[read_file])
    crew = Crew(agents=[agent], tasks=[...], before_kickoff_callbacks=[sandbox_kickoff])

See docs/integrations.md.
"""

from __future__ import annotations

from ._adapter import (
    SandboxedTool,
    SandboxRefusal,
    SandboxStop,
    host_tool,
    sandbox_kickoff,
    sandboxed_tool,
)

__all__ = [
    "SandboxRefusal",
    "SandboxStop",
    "SandboxedTool",
    "host_tool",
    "sandbox_kickoff",
    "sandboxed_tool",
]
