"""What is particular to MCP: a real client over stdio and over streamable HTTP on 127.0.0.1
(the server a subprocess, its lifespan opening the sandbox once), resources and prompts, the
``Context | None`` form, and ``python-sb -m server``."""

from __future__ import annotations

import asyncio
import importlib
import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp.server.mcpserver", reason="mcp 2.x (test_mcp1.py is mcp 1.x's)")

from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

import pysandboxes_mcp
from pysandboxes_conformance import Seen

from .conftest import seen

SERVER = '''
    """A file server whose tools, resource and prompt read files in the sandbox."""

    import os
    import sys

    from mcp.server.mcpserver import Context, MCPServer
    from pysandboxes_mcp import sandbox_lifespan, sandboxed_prompt, sandboxed_resource, sandboxed_tool

    server = MCPServer("files", lifespan=sandbox_lifespan())


    @sandboxed_tool(server)
    def read_file(path: str) -> str:
        """Read a text file."""
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


    @sandboxed_tool(server)
    async def log_and_read(path: str, ctx: Context | None = None) -> str:
        """Read a file; the context stays on the host."""
        return f"ctx={ctx!r} " + open(path, encoding="utf-8").read()


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
        if sys.argv[1:2] == ["http"]:
            server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
        else:
            server.run()
'''

RULES = "os-sandbox=landlock\nexpose-ro=./data\nignore=private.txt\n"


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

    @property
    def notes(self) -> Path:
        return self.root / "data" / "notes.txt"

    @property
    def secret(self) -> str:
        return str(self.root / "secret.txt")

    def refusal(self) -> str:
        return f"RuleFileNotFoundError: Access to '{self.secret}' must be accepted by a rule."

    def environ(self) -> dict[str, str]:
        return {
            "HOME": str(self.root / "home"),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
        }

    def stdio(self, *argv: str) -> StdioServerParameters:
        return StdioServerParameters(
            command=argv[0], args=list(argv[1:]), cwd=str(self.root), env=self.environ()
        )


@pytest.fixture
def served(tmp_path: Path) -> Served:
    return Served(tmp_path)


async def session_calls(client: Client, served: Served) -> dict[str, Any]:
    """The calls every transport test makes, and what the client read."""
    return {
        "server": seen(await client.call_tool("server_pid", {})),
        "bodies": [seen(await client.call_tool("body_pid", {})) for _ in range(2)],
        "allowed": seen(await client.call_tool("read_file", {"path": "data/notes.txt"})),
        "refused": seen(await client.call_tool("read_file", {"path": served.secret})),
    }


def assert_sandboxed(calls: dict[str, Any], served: Served) -> None:
    server_pid = int(calls["server"].text)
    first, second = calls["bodies"]
    assert first == second and int(first.text) not in (server_pid, os.getpid())
    assert calls["allowed"] == Seen("notes")
    assert calls["refused"] == Seen(f"Error executing tool read_file: {served.refusal()}", True)


def test_a_stdio_client_calls_the_sandboxed_tools(served: Served) -> None:
    async def main() -> dict[str, Any]:
        async with Client(served.stdio(sys.executable, "server.py")) as client:
            return await session_calls(client, served)

    assert_sandboxed(asyncio.run(main()), served)


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
        for _ in range(2):  # two client sessions: the lifespan, and its sandbox, are the server's
            async with Client(http_server) as client:
                results.append(await session_calls(client, served))
        return results

    first, second = asyncio.run(main())
    assert_sandboxed(first, served)
    assert_sandboxed(second, served)
    assert first["bodies"] == second["bodies"]  # one sandbox child for the server's whole run


@pytest.fixture(scope="module")
def in_process(tmp_path_factory: pytest.TempPathFactory) -> tuple[Served, Any]:
    """The project, and its server imported in this process as ``mcp_files_server`` (its
    sandbox child imports it again; left on ``sys.path``: the sandbox's registry keeps it)."""
    served = Served(tmp_path_factory.mktemp("files"))
    (served.root / "server.py").rename(served.root / "mcp_files_server.py")
    sys.path.insert(0, str(served.root))
    return served, importlib.import_module("mcp_files_server").server


def test_a_context_that_may_be_none_stays_on_the_host(in_process: tuple[Served, Any]) -> None:
    served, server = in_process

    async def main() -> Seen:
        async with Client(server) as client:
            return seen(await client.call_tool("log_and_read", {"path": str(served.notes)}))

    assert asyncio.run(main()) == Seen("ctx=None notes")


def test_a_sandboxed_resource_is_read_and_a_refusal_is_its_error_message(
    in_process: tuple[Served, Any],
) -> None:
    served, server = in_process

    async def main() -> tuple[str, str]:
        async with Client(server) as client:
            read = await client.read_resource("data://notes.txt")
            with pytest.raises(MCPError) as refused:
                await client.read_resource("data://private.txt")
            return read.contents[0].text, str(refused.value)  # type: ignore[union-attr]

    private, rules = served.root / "data" / "private.txt", served.root / ".py-sandboxes"
    assert asyncio.run(main()) == (
        "notes",
        f"RuleFileNotFoundError: Access to '{private}' is ignored by rule 'ignore=private.txt' from {rules}(3)",
    )


def test_a_sandboxed_prompt_refusal_is_the_requests_error_message(in_process: tuple[Served, Any]) -> None:
    served, server = in_process

    async def main() -> tuple[str, str]:
        async with Client(server) as client:
            prompt = await client.get_prompt("review", {"path": str(served.notes)})
            with pytest.raises(MCPError) as refused:
                await client.get_prompt("review", {"path": served.secret})
            return prompt.messages[0].content.text, str(refused.value)  # type: ignore[union-attr]

    assert asyncio.run(main()) == ("Review this: notes", served.refusal())


def test_python_sb_m_server_runs_the_tools_directly_under_its_rules(served: Served) -> None:
    adapter = Path(pysandboxes_mcp.__file__).parent.parent  # outside the environment when editable
    (served.root / ".py-sandboxes").write_text(
        f"os-sandbox=landlock\nexpose-ro=.\nexpose-ro={adapter}\nignore=secret.txt\npython-import=*\n"
        "python-api=ALLOW:threads\n",
        encoding="utf-8",
    )
    python_sb = str(Path(sys.executable).with_name("python-sb"))

    async def main() -> dict[str, Any]:
        async with Client(served.stdio(python_sb, "-m", "server")) as client:
            return await session_calls(client, served)

    calls = asyncio.run(main())
    server_pid = int(calls["server"].text)
    assert [int(s.text) for s in calls["bodies"]] == [server_pid, server_pid]  # no child: direct
    assert calls["allowed"] == Seen("notes")
    ignored = f"Access to '{served.secret}' is ignored by rule 'ignore=secret.txt' from .py-sandboxes(4)"
    assert calls["refused"] == Seen(f"Error executing tool read_file: RuleFileNotFoundError: {ignored}", True)
