"""The names of the mcp SDK this adapter uses, in one place, for both releases it supports.

- mcp 2.x: ``mcp.server.mcpserver`` (``MCPServer``, ``Context``, ``exceptions.ToolError`` /
  ``ResourceError``), ``mcp.shared.exceptions.MCPError(code, message)``.
- mcp 1.x (the release crewai pins): ``mcp.server.fastmcp`` (``FastMCP``, ``Context``,
  ``exceptions.ToolError`` / ``ResourceError``), ``mcp.shared.exceptions.McpError(ErrorData)``.
  Its server sends the client the message of *any* exception a tool, resource or prompt raises
  (``Error executing tool NAME: ...``), so a refusal left to it would reach the client with its
  hint: under 1.x, :data:`HIDES_UNEXPECTED_ERRORS` is false and the adapter always sends the
  refusal's first line.

Nothing else in the adapter names the SDK's modules.
"""

from __future__ import annotations

from typing import Any

try:
    from mcp.server.mcpserver import Context, MCPServer
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context
    from mcp.server.fastmcp import FastMCP as MCPServer
    from mcp.server.fastmcp.exceptions import ResourceError, ToolError
    from mcp.shared.exceptions import McpError
    from mcp.types import INTERNAL_ERROR, ErrorData

    MAJOR = 1
    SERVER_CLASS = "FastMCP"
    #: does the SDK tell the client only "Error executing tool NAME" for an unexpected exception?
    HIDES_UNEXPECTED_ERRORS = False

    def request_error(text: str) -> Exception:
        """The error a prompt request fails with, ``text`` its message."""
        return McpError(ErrorData(code=INTERNAL_ERROR, message=text))

else:
    from mcp.server.mcpserver.exceptions import ResourceError, ToolError
    from mcp.shared.exceptions import MCPError
    from mcp_types import INTERNAL_ERROR

    MAJOR = 2
    SERVER_CLASS = "MCPServer"
    HIDES_UNEXPECTED_ERRORS = True

    def request_error(text: str) -> Exception:
        """The error a prompt request fails with, ``text`` its message."""
        return MCPError(INTERNAL_ERROR, text)


def tool_manager(server: Any) -> Any:
    """The server's tool registry (both releases keep it as ``_tool_manager``), or ``None``."""
    return getattr(server, "_tool_manager", None)


__all__ = [
    "HIDES_UNEXPECTED_ERRORS",
    "MAJOR",
    "SERVER_CLASS",
    "Context",
    "MCPServer",
    "ResourceError",
    "ToolError",
    "request_error",
    "tool_manager",
]
