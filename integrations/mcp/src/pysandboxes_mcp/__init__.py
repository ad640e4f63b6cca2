"""PySandboxes for MCP servers: a tool's body runs in the sandbox, in one line.

.. code-block:: python

    from mcp.server.mcpserver import MCPServer
    from pysandboxes_mcp import sandbox_lifespan, sandboxed_tool

    server = MCPServer("files", lifespan=sandbox_lifespan())

    @sandboxed_tool(server)
    def read_file(path: str) -> str:
        \"\"\"Read a text file.\"\"\"
        with open(path) as f:  # judged by the rule file, in the sandbox
            return f.read()

See docs/integrations.md.
"""

from __future__ import annotations

from ._adapter import (
    FRAMEWORK,
    host_tool,
    sandbox_lifespan,
    sandboxed_prompt,
    sandboxed_resource,
    sandboxed_tool,
)

__all__ = [
    "FRAMEWORK",
    "host_tool",
    "sandbox_lifespan",
    "sandboxed_prompt",
    "sandboxed_resource",
    "sandboxed_tool",
]
