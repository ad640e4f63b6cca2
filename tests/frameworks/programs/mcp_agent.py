"""mcp 2.x: an MCPServer with one tool, called through the in-process Client (no transport)."""

import asyncio
from pathlib import Path

from mcp import Client
from mcp.server.mcpserver import MCPServer

NOTE = Path(__file__).resolve().parent / "data" / "note.txt"

server = MCPServer("notes")


@server.tool()
def read_note() -> str:
    """Return the text of the note."""
    return NOTE.read_text(encoding="utf-8").strip()


async def main() -> None:
    async with Client(server) as client:
        result = await client.call_tool("read_note", {})
    print("RESULT:", result.content[0].text)


asyncio.run(main())
