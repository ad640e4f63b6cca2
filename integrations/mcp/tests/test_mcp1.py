"""mcp 1.x (``FastMCP``, the release crewai pins): a real client over stdio and over streamable
HTTP on 127.0.0.1 (the server a subprocess, its lifespan opening the sandbox once), resources,
prompts, and ``on_denial="raise"`` (the 1.x server sends every exception's message: the hint must
stay out). Run in ``integrations/mcp/mcp1/``'s environment; skipped under mcp 2.x."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp.server.fastmcp", reason="mcp 1.x (test_mcp.py is mcp 2.x's)")

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import McpError

from pysandboxes_conformance import Seen

from .conftest import seen

SERVER = '''
    """A file server whose tools, resource and prompt read files in the sandbox."""

    import os
    import sys

    from mcp.server.fastmcp import FastMCP
    from pysandboxes_mcp import sandbox_lifespan, sandboxed_prompt, sandboxed_resource, sandboxed_tool

    port = int(sys.argv[2]) if sys.argv[1:2] == ["http"] else 8000
    server = FastMCP("files", lifespan=sandbox_lifespan(), host="127.0.0.1", port=port)


    @sandboxed_tool(server)
    def read_file(path: str) -> str:
        """Read a text file."""
        with open(path, encoding="utf-8") as f:
            return f.read()


    @sandboxed_tool(server, on_denial="raise")
    def read_or_raise(path: str) -> str:
        """Read a text file; a refusal is left to the server."""
        with open(path, encoding="utf-8") as f:
            return f.read()


    @sandboxed_tool(server)
    def body_pid() -> int:
        """The process the tool's body runs in."""
        return os.getpid()


    @server.tool()
    def server_pid() -> int:
        """The server's own process."""
        return os.getpid()


    @sandboxed_resource(server, "data://{name}")
    def data_file(name: str) -> str:
        """A file of the data directory."""
        with open(os.path.join(os.path.dirname(__file__), "data", name), encoding="utf-8") as f:
            return f.read()


    @sandboxed_prompt(server)
    def review(path: str) -> str:
        """Ask for a review of a file."""
        with open(path, encoding="utf-8") as f:
            return "Review this: " + f.read()


    if __name__ == "__main__":
        server.run("streamable-http" if sys.argv[1:2] == ["http"] else "stdio")
'''

RULES = "os-sandbox=landlock\nexpose-ro=./data\nignore=private.txt\n"
HINT = "Add `"


class Served:
    """A project holding ``server.py``, its rule file, ``data/notes.txt`` and ``secret.txt``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "server.py").write_text(textwrap.dedent(SERVER), encoding="utf-8")
        (root / ".py-sandboxes").write_text(RULES, encoding="utf-8")
        (root / "data").mkdir()
        (root / "data" / "notes.txt").write_text("notes", encoding="utf-8")
        (root / "data" / "private.txt").write_text("private", encoding="utf-8")
        (root / "secret.txt").write_text("s3cret", encoding="utf-8")
        (root / "home").mkdir()
        self.secret = str(root / "secret.txt")

    def refusal(self) -> str:
        return f"RuleFileNotFoundError: Access to '{self.secret}' must be accepted by a rule."

    def environ(self) -> dict[str, str]:
        return {
            "HOME": str(self.root / "home"),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
        }


@pytest.fixture
def served(tmp_path: Path) -> Served:
    return Served(tmp_path)


@asynccontextmanager
async def stdio_session(served: Served) -> AsyncIterator[ClientSession]:
    parameters = StdioServerParameters(
        command=sys.executable, args=["server.py"], cwd=str(served.root), env=served.environ()
    )
    async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def session_calls(session: ClientSession, served: Served) -> dict[str, Any]:
    """The calls every transport test makes, and what the client read."""
    return {
        "server": seen(await session.call_tool("server_pid", {})),
        "bodies": [seen(await session.call_tool("body_pid", {})) for _ in range(2)],
        "allowed": seen(await session.call_tool("read_file", {"path": "data/notes.txt"})),
        "refused": seen(await session.call_tool("read_file", {"path": served.secret})),
        "raised": seen(await session.call_tool("read_or_raise", {"path": served.secret})),
    }


def assert_sandboxed(calls: dict[str, Any], served: Served) -> None:
    server_pid = int(calls["server"].text)
    first, second = calls["bodies"]
    assert first == second and int(first.text) not in (server_pid, os.getpid())
    assert calls["allowed"] == Seen("notes")
    assert calls["refused"] == Seen(f"Error executing tool read_file: {served.refusal()}", True)
    # on_denial="raise": mcp 1.x would send the whole message, hint included; the first line goes
    assert calls["raised"] == Seen(f"Error executing tool read_or_raise: {served.refusal()}", True)
    assert HINT not in calls["raised"].text and "s3cret" not in calls["raised"].text


def test_a_stdio_client_calls_the_sandboxed_tools(served: Served) -> None:
    async def main() -> dict[str, Any]:
        async with stdio_session(served) as session:
            return await session_calls(session, served)

    assert_sandboxed(asyncio.run(main()), served)


def test_a_sandboxed_resource_and_prompt_refusal_is_the_requests_error(served: Served) -> None:
    async def main() -> tuple[str, str, str, str]:
        async with stdio_session(served) as session:
            read = await session.read_resource("data://notes.txt")  # type: ignore[arg-type]
            with pytest.raises(McpError) as resource:
                await session.read_resource("data://private.txt")  # type: ignore[arg-type]
            prompt = await session.get_prompt("review", {"path": "data/notes.txt"})
            with pytest.raises(McpError) as refused:
                await session.get_prompt("review", {"path": served.secret})
            return (
                read.contents[0].text,  # type: ignore[union-attr]
                str(resource.value),
                prompt.messages[0].content.text,  # type: ignore[union-attr]
                str(refused.value),
            )

    notes, resource, prompt, refused = asyncio.run(main())
    private = served.root / "data" / "private.txt"
    assert (notes, prompt) == ("notes", "Review this: notes")
    assert resource.endswith(
        f"RuleFileNotFoundError: Access to '{private}' is ignored by rule 'ignore=private.txt' from .py-sandboxes(3)"
    )
    assert refused.endswith(served.refusal())
    assert HINT not in resource + refused


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def http_server(served: Served) -> Iterator[str]:
    """``server.py`` serving streamable HTTP on 127.0.0.1; its URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "server.py", "http", str(port)],
        cwd=served.root,
        env=served.environ(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"the server did not start: {process.communicate()[1]}")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.communicate(timeout=30)


def test_a_streamable_http_client_on_loopback_calls_the_sandboxed_tools(
    served: Served, http_server: str
) -> None:
    async def main() -> list[dict[str, Any]]:
        results = []
        for _ in range(2):  # two client sessions: mcp 1.x enters the lifespan for each one
            async with (
                streamable_http_client(http_server) as (read, write, _),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                results.append(await session_calls(session, served))
        return results

    first, second = asyncio.run(main())
    assert_sandboxed(first, served)
    assert_sandboxed(second, served)
    # one sandbox child per client session (mcp 2.x: one for the server's whole run)
    assert first["bodies"] != second["bodies"]
