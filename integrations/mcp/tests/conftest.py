"""The MCP adapter's harness for the conformance suite, and shared fixtures: for mcp 2.x
(``MCPServer``, the workspace's release) and for mcp 1.x (``FastMCP``, the release crewai pins,
run from ``integrations/mcp/mcp1/``), chosen by the release installed."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import pytest

from pysandboxes_conformance import Call, Harness, Seen
from pysandboxes_mcp import _sdk


def seen(result: Any) -> Seen:
    """What a client reads from a CallToolResult."""
    text = "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")
    is_error = result.is_error if hasattr(result, "is_error") else result.isError  # mcp 2 / mcp 1
    return Seen(text, bool(is_error))


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
            from mcp import Client

            async with Client(server) as client:
                return [seen(await client.call_tool(name, arguments)) for name, arguments in calls]
        results = []
        for name, arguments in calls:
            try:
                results.append(seen(await server.call_tool(name, arguments)))
            except _sdk.ToolError as exc:  # what the session turns into an isError result
                results.append(Seen(str(exc), True))
        return results

    def schema(self, module: ModuleType, tool: str) -> Any:
        (listed,) = [t for t in asyncio.run(module.server.list_tools()) if t.name == tool]
        return listed.model_dump()


class Mcp1Harness(McpHarness):
    """mcp 1.x: ``FastMCP``; a client session over the SDK's in-memory streams (which runs the
    server's lifespan); the server sends every exception's message to the client."""

    sandboxed_header = McpHarness.sandboxed_header.replace(
        "from mcp.server.mcpserver import Context, MCPServer",
        "from mcp.server.fastmcp import Context, FastMCP",
    ).replace("MCPServer(", "FastMCP(")
    plain_header = McpHarness.plain_header.replace(
        "from mcp.server.mcpserver import Context, MCPServer",
        "from mcp.server.fastmcp import Context, FastMCP",
    ).replace("MCPServer(", "FastMCP(")
    wrong_usages = (
        *McpHarness.wrong_usages[:2],
        (McpHarness.wrong_usages[2][0], "takes the FastMCP the tool belongs to first"),
    )
    sends_exception_messages = True

    async def _call(self, server: Any, calls: Sequence[Call], lifecycle: bool) -> list[Seen]:
        if lifecycle:
            from mcp.shared.memory import create_connected_server_and_client_session

            async with create_connected_server_and_client_session(server) as client:
                return [seen(await client.call_tool(name, arguments)) for name, arguments in calls]
        results = []
        for name, arguments in calls:
            try:
                out = await server.call_tool(name, arguments)
            except _sdk.ToolError as exc:
                results.append(Seen(str(exc), True))
                continue
            blocks = out[0] if isinstance(out, tuple) else out  # (content, structured) with a schema
            results.append(Seen("\n".join(b.text for b in blocks if getattr(b, "type", "") == "text")))
        return results


@pytest.fixture(scope="session")
def harness() -> McpHarness:
    return McpHarness() if _sdk.MAJOR == 2 else Mcp1Harness()
