"""The learning scenario: a real MCP client drives the server through its transports.

``make learn`` runs ``python learn.py partial URL`` then ``python learn.py complete URL``, with
a page server on 127.0.0.1 (URL). Each launches the server as a client configuration does, in
learning mode, and makes the same calls over stdio then over streamable HTTP: the three tools
(a sane expression, the allowed page, ``notes.txt``), the resource and the prompt.

- partial: ``python -m mcp_server --learn src/mcp_server/.py-sandboxes.learn`` (the server's
  lifespan opens the sandbox with ``learn=``);
- complete: ``python-sb --pysandboxes-config=src/mcp_server/.py-sandboxes-complete
  --learn=src/mcp_server/.py-sandboxes-complete.learn -m mcp_server`` (what the whole server
  needs, transports included).

The client runs on the host, outside any sandbox: a server of an MCP client is a process of its
own, so this script drives it rather than being it (``is_in_sandbox()`` is never true here).
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from mcp import Client, StdioServerParameters
from mcp_server.server import COMPLETE_PROFILE, PROFILE

BIN = Path(sys.executable).parent


def command(mode: str) -> list[str]:
    if mode == "partial":
        return [sys.executable, "-m", "mcp_server", "--learn", f"{PROFILE}.learn"]
    return [
        str(BIN / "python-sb"),
        f"--pysandboxes-config={COMPLETE_PROFILE}",
        f"--learn={COMPLETE_PROFILE}.learn",
        "-m",
        "mcp_server",
    ]


async def drive(client: Client, url: str) -> None:
    for name, arguments in (
        ("evaluate_expression", {"expression": "2*(3+4)"}),
        ("fetch_webpage", {"url": url}),
        ("read_document", {"name": "notes.txt"}),
    ):
        result = await client.call_tool(name, arguments)
        print(f"{name}: {result.content[0].text.splitlines()[0]}")
    resource = await client.read_resource("document://notes.txt")
    print("document://notes.txt:", resource.contents[0].text.splitlines()[0])
    prompt = await client.get_prompt("summarize_document", {"name": "notes.txt"})
    print("summarize_document:", prompt.messages[0].content.text.splitlines()[0])


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def over_http(argv: list[str], url: str) -> None:
    port = free_port()
    env = {**os.environ, "MCP_PORT": str(port)}
    server = subprocess.Popen([*argv, "-t", "http"], env=env, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the server did not start") from None
                await asyncio.sleep(0.1)
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            await drive(client, url)
    finally:
        server.terminate()
        server.wait(timeout=60)


async def main(mode: str, url: str) -> None:
    argv = command(mode)
    stdio = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    async with Client(stdio) as client:
        await drive(client, url)
    await over_http(argv, url)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
