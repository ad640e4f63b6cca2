"""PySandboxes for pydantic-ai: a tool's body runs in the sandbox, in one line.

.. code-block:: python

    from pydantic_ai import Agent
    from pysandboxes_pydantic_ai import SandboxedToolset


    def read_file(path: str) -> str:
        \"\"\"Read a text file.\"\"\"
        with open(path) as f:  # judged by the rule file, in the sandbox
            return f.read()


    agent = Agent(model, toolsets=[SandboxedToolset([read_file])])

or ``@sandboxed_tool_plain(agent)`` / ``@sandboxed_tool(agent)`` instead of
``@agent.tool_plain`` / ``@agent.tool``. See docs/integrations.md.
"""

from __future__ import annotations

from ._adapter import FRAMEWORK, SandboxedToolset, host_tool, sandboxed_tool, sandboxed_tool_plain

__all__ = ["FRAMEWORK", "SandboxedToolset", "host_tool", "sandboxed_tool", "sandboxed_tool_plain"]
