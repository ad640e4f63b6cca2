"""The names of the mcp SDK this adapter uses, in one place: mcp 2.x (``MCPServer``).

mcp 1.x (``FastMCP``, the release crewai pins) has the same concepts under other modules
(``mcp.server.fastmcp``: ``FastMCP``, ``Context``, ``exceptions.ToolError``/``ResourceError``;
``mcp.shared.exceptions.McpError``). Supporting it is a second module like this one, chosen in
``__init__`` by mcp's major version; nothing else in the adapter names the SDK's modules.
"""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR

__all__ = ["INTERNAL_ERROR", "Context", "MCPError", "MCPServer", "ResourceError", "ToolError"]
