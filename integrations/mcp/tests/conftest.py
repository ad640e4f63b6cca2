"""The MCP adapter's harness for the conformance suite, and shared fixtures."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver.exceptions import ToolError

from pysandboxes_conformance import Call, Harness, Seen


def seen(result: Any) -> Seen:
    """What a client reads from a CallToolResult."""
    text = "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")
    return Seen(text, bool(result.is_error))


class McpHarness(Harness):
    name = "mcp"
    sandboxed_header = """
        from mcp.server.mcpserver import Context, MCPServer
        from pysandboxes_mcp import host_tool, sandbox_lifespan, sandboxed_tool

        server = MCPServer("conformance", lifespan=sandbox_lifespan())
    """
    plain_header = """
        from mcp.server.mcpserver import Context, MCPServer

        server = MCPServer("conformance")
    """
    sandboxed = "@sandboxed_tool(server)"
    sandboxed_raise = '@sandboxed_tool(server, on_denial="raise")'
    host = "@host_tool(server)"
    plain = "@server.tool()"
    context = ("ctx", "Context")
    wrong_usages = (
        (
            '@sandbox\n@sandboxed_tool(server)\ndef twice() -> int:\n    """Sandboxed twice."""\n    return 2\n',
            "twice is already a tool made by pysandboxes-mcp",
        ),
        (
            '@sandboxed_tool(server)\n@server.tool()\ndef registered() -> int:\n    """Registered unsandboxed."""\n'
            "    return 1\n",
            "the server already has a tool named 'registered'",
        ),
        (
            '@sandboxed_tool\ndef uncalled() -> int:\n    """No server given."""\n    return 1\n',
            "takes the MCPServer the tool belongs to first",
        ),
    )

    def call_tools(self, module: ModuleType, calls: Sequence[Call], *, lifecycle: bool = True) -> list[Seen]:
        """A client session with the server (its lifespan runs); without the lifecycle, the
        server's own dispatch (``MCPServer.call_tool``), which has no lifespan."""
        return asyncio.run(self._call(module.server, calls, lifecycle))

    async def _call(self, server: Any, calls: Sequence[Call], lifecycle: bool) -> list[Seen]:
        if lifecycle:
            async with Client(server) as client:
                return [seen(await client.call_tool(name, arguments)) for name, arguments in calls]
        results = []
        for name, arguments in calls:
            try:
                results.append(seen(await server.call_tool(name, arguments)))
            except ToolError as exc:  # what the session turns into an isError result
                results.append(Seen(str(exc), True))
        return results

    def schema(self, module: ModuleType, tool: str) -> Any:
        (listed,) = [t for t in asyncio.run(module.server.list_tools()) if t.name == tool]
        return listed.model_dump()


@pytest.fixture(scope="session")
def harness() -> McpHarness:
    return McpHarness()
