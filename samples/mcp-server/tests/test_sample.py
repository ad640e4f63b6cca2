"""The mcp-server sample, strict and offline: a real MCP client over stdio and over streamable
HTTP on 127.0.0.1, for each mode (partial: the server's lifespan opens the sandbox; complete:
the whole server under python-sb), launched as the client configurations of clients/ say."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp_server import server as app
from samples_shared.testing import ESCAPE, SANE, PageServer, profile_problems, sample_env

from pysandboxes import sandbox_denials, sandboxes

SAMPLE = Path(__file__).resolve().parents[1]
REPO = SAMPLE.parents[1]
HINT = "to the rule file"  # the developer's hint ("Add `...` to the rule file to allow it.")
#: a file beside the package, outside data/ (a stand-in for the sample's .env)
OUTSIDE = "../../../env.example"


def configuration(name: str, env: dict[str, str]) -> StdioServerParameters:
    """The server of clients/NAME.json, ${REPO} filled in, with ``env`` (and its own env)."""
    text = (SAMPLE / "clients" / f"{name}.json").read_text(encoding="utf-8").replace("${REPO}", str(REPO))
    (entry,) = json.loads(text)["mcpServers"].values()
    return StdioServerParameters(
        command=entry["command"], args=entry["args"], env={**env, **entry.get("env", {})}, cwd=str(SAMPLE)
    )


def text_of(result: Any) -> tuple[str, bool]:
    """What a client reads from a CallToolResult: its text, and whether it is an error."""
    text = "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")
    return text, bool(result.is_error)


async def scenario(client: Client, pages: PageServer) -> dict[str, Any]:
    async def call(tool: str, **arguments: Any) -> tuple[str, bool]:
        return text_of(await client.call_tool(tool, arguments))

    return {
        "sane": await call("evaluate_expression", expression=SANE),
        "page": await call("fetch_webpage", url=pages.url("/redirect")),
        "port": await call("fetch_webpage", url=pages.other_url()),
        "escape": await call("evaluate_expression", expression=ESCAPE),
        "document": await call("read_document", name="notes.txt"),
        "outside": await call("read_document", name=OUTSIDE),
        "resource": (await client.read_resource("document://notes.txt")).contents[0].text,
        "prompt": (await client.get_prompt("summarize_document", {"name": "notes.txt"}))
        .messages[0]
        .content.text,
    }


def run(server: Any, pages: PageServer) -> tuple[dict[str, Any], list[str]]:
    """The scenario through a client of ``server`` (a configuration or a URL); the log
    messages the client received."""
    logs: list[str] = []

    async def on_log(params: Any) -> None:
        logs.append(str(params.data))

    async def main() -> dict[str, Any]:
        async with Client(server, logging_callback=on_log, log_level="info") as client:
            return await scenario(client, pages)

    return asyncio.run(main()), logs


def assert_confined(calls: dict[str, Any], logs: list[str]) -> None:
    assert calls["sane"] == ("14", False)
    page, failed = calls["page"]
    assert not failed and "# Sandboxed pages" in page
    for name, refusal in (
        ("port", "DENIED"),
        ("escape", "EvalSyntaxRejected"),
        ("outside", "RuleFileNotFoundError"),
    ):
        text, failed = calls[name]
        assert failed and refusal in text, (name, text)
        assert HINT not in text
    assert calls["document"] == ("Quarterly notes\n\nRevenue grew in the north; the south is flat.\n", False)
    assert calls["resource"].startswith("Quarterly notes")
    assert "Quarterly notes" in calls["prompt"]
    assert any(line.startswith("fetching http://127.0.0.1:") for line in logs), logs


@pytest.fixture
def env(home: Path, pages: PageServer) -> dict[str, str]:
    return sample_env(home, **pages.env())


MODES = {
    "partial": lambda: [str(REPO / ".venv-samples/mcp-server/bin/python"), "-m", "mcp_server"],
    "complete": lambda: [
        str(REPO / ".venv-samples/mcp-server/bin/python-sb"),
        f"--pysandboxes-config={app.COMPLETE_PROFILE}",
        "-m",
        "mcp_server",
    ],
}


# (1) negative control: the same server with no sandbox (OS_SANDBOX=none) lets every escape through
def test_negative_control_the_escapes_succeed_without_the_sandbox(
    env: dict[str, str], pages: PageServer
) -> None:
    calls, _ = run(configuration("stdio-no-sandbox", env), pages)
    assert calls["escape"] == ("b'escaped\\n'", False)
    assert calls["outside"][1] is False and "DEMO" not in calls["outside"][0]
    assert calls["port"][1] is False and "# Sandboxed pages" in calls["port"][0]


# (2)-(6) over stdio, each mode launched by its client configuration: the allowed page, the
# calculator, the documents work; another port, the eval escape and a file beside data/ are
# refused, and the client reads each refusal as the tool's error text, without the hint
@pytest.mark.parametrize("mode", ["partial", "complete"])
def test_a_stdio_client_is_served_and_refused(mode: str, env: dict[str, str], pages: PageServer) -> None:
    calls, logs = run(configuration(f"stdio-{mode}", env), pages)
    assert_confined(calls, logs)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(params=["partial", "complete"])
def http_server(request: pytest.FixtureRequest, env: dict[str, str]) -> Iterator[str]:
    """The server in ``mode`` on streamable HTTP, 127.0.0.1:MCP_PORT; its URL."""
    port = free_port()
    process = subprocess.Popen(
        [*MODES[request.param](), "-t", "http"],
        cwd=SAMPLE,
        env={**env, "MCP_PORT": str(port)},
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
        _, stderr = process.communicate(timeout=60)
    assert process.returncode in (0, -15), stderr  # a clean shutdown on SIGTERM


# (2)-(6) and (8) over streamable HTTP, for each mode
def test_an_http_client_is_served_and_refused(http_server: str, pages: PageServer) -> None:
    calls, logs = run(http_server, pages)
    assert_confined(calls, logs)


@pytest.fixture(scope="module")
def sandbox(page_env: PageServer) -> Iterator[PageServer]:
    """Partial mode in this process, strict, under the shipped profile."""
    with sandboxes(sandboxes_config=str(app.PROFILE)):
        yield page_env


def denials(call: Any) -> str:
    with pytest.raises(Exception) as caught:
        call()
    found = sandbox_denials(caught.value)
    assert found, f"not a sandbox refusal: {caught.value!r}"
    return "\n".join(found)


# (3) another loopback port, (5) the eval escape: refusals of the sandbox (sandbox_denials)
def test_the_refusals_are_the_sandboxs(sandbox: PageServer) -> None:
    assert asyncio.run(app._fetch(sandbox.url("/article"))).startswith("Sandboxed pages")
    assert "DENIED" in denials(lambda: asyncio.run(app._fetch(sandbox.other_url())))
    assert app.evaluate_expression(SANE) == "14"
    assert "EvalSyntaxRejected" in denials(lambda: app.evaluate_expression(ESCAPE))


# (7) the shipped profiles hold no broad rule
@pytest.mark.parametrize("profile", [".py-sandboxes", ".py-sandboxes-complete"])
def test_the_shipped_profiles_hold_no_broad_rule(profile: str) -> None:
    assert profile_problems(app.PROFILE.with_name(profile)) == []


def test_the_profiles_print_where_they_are() -> None:
    from mcp_server.__main__ import main

    assert main(["--profile", "complete"]) == 0
