"""PySandboxes for strands-agents: a tool's body runs in the sandbox, in one line.

.. code-block:: python

    from strands import Agent
    from pysandboxes_strands import SandboxHooks, sandboxed_tool

    @sandboxed_tool
    def read_file(path: str) -> str:
        \"\"\"Read a text file.\"\"\"
        with open(path) as f:  # judged by the rule file, in the sandbox
            return f.read()

    agent = Agent(model=model, tools=[read_file], hooks=[SandboxHooks()])

See docs/integrations.md.
"""

from __future__ import annotations

from ._adapter import (
    STOPPED,
    SandboxedFunctionTool,
    SandboxHooks,
    SandboxRefusal,
    SandboxStop,
    host_tool,
    sandboxed_tool,
)

__all__ = [
    "STOPPED",
    "SandboxHooks",
    "SandboxRefusal",
    "SandboxStop",
    "SandboxedFunctionTool",
    "host_tool",
    "sandboxed_tool",
]
