"""A chat client (OpenAI-compatible chat completions) whose tools are an MCP server's."""
