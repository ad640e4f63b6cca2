"""PySandboxes for AutoGen: a tool's body runs in the sandbox, in one line.

.. code-block:: python

    from autogen_agentchat.agents import AssistantAgent
    from pysandboxes_autogen import sandboxed_tool

    @sandboxed_tool
    def read_file(path: str) -> str:
        \"\"\"Read a text file.\"\"\"
        with open(path) as f:  # judged by the rule file, in the sandbox
            return f.read()

    agent = AssistantAgent("reader", model_client=client, tools=[read_file])

See docs/integrations.md.
"""

from __future__ import annotations

from ._adapter import (
    REFUSED,
    HostFunctionTool,
    SandboxedFunctionTool,
    SandboxRefusal,
    host_tool,
    sandboxed_tool,
)

__all__ = [
    "REFUSED",
    "HostFunctionTool",
    "SandboxRefusal",
    "SandboxedFunctionTool",
    "host_tool",
    "sandboxed_tool",
]
