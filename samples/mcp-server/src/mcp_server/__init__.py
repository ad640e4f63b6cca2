"""An MCP server (mcp 2.x ``MCPServer``) whose tools, resource and prompt run in the sandbox."""
