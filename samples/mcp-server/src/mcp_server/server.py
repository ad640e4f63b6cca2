"""The server: three tools, a resource, a prompt, declared with pysandboxes-mcp.

Partial mode (``python -m mcp_server``): the server runs on the host and each body runs in the
sandbox's child, under ``.py-sandboxes`` next to this file, opened once by the server's
lifespan. Complete mode (``python-sb --pysandboxes-config=.../.py-sandboxes-complete -m
mcp_server``): the whole server runs under the complete profile and the bodies run directly.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPDeprecationWarning
from samples_shared import tools as bodies

from pysandboxes import sandbox
from pysandboxes_mcp import host_tool, sandbox_lifespan, sandboxed_prompt, sandboxed_resource, sandboxed_tool

HERE = Path(__file__).resolve().parent
#: the documents (inside the package, so an installed wheel has them)
DATA = HERE / "data"
#: the partial-mode profile (the tool bodies) and the complete-mode one (the whole server)
PROFILE = HERE / ".py-sandboxes"
COMPLETE_PROFILE = HERE / ".py-sandboxes-complete"

#: sandboxes() settings of this run, set by the command line before the server starts
#: (--learn FILE); read when the lifespan starts
SANDBOX_SETTINGS: dict[str, Any] = {}


def lifespan(server: MCPServer[Any]) -> Any:
    """The sandbox, opened once for the server's whole run (no-op under python-sb)."""
    return sandbox_lifespan(sandboxes_config=str(PROFILE), **SANDBOX_SETTINGS)(server)


server = MCPServer(
    "pysandboxes-sample",
    instructions="Three tools (fetch_webpage, evaluate_expression, read_document), the resource "
    "document://{name} and the prompt summarize_document. Their bodies run in a sandbox.",
    lifespan=lifespan,
)


async def log(ctx: Context, message: str) -> None:
    """A log message to the client (for a client that opts in with a log level). mcp 2.3 warns
    that the logging capability is deprecated (SEP-2577); it still works, and is what a tool's
    Context is for here: a host-side object that never crosses into the sandbox."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await ctx.info(message)


@sandbox
async def _fetch(url: str) -> str:
    return bodies.fetch_webpage(url)


@host_tool(server)
async def fetch_webpage(url: str, ctx: Context) -> str:
    """Fetch a web page (redirects followed) and return its text as markdown, truncated."""
    # a host tool: it keeps its Context (the client gets these log messages) and hands only
    # the URL to the sandboxed body; a refusal reaches the client as the tool's error text
    await log(ctx, f"fetching {url}")
    text = await _fetch(url)
    await log(ctx, f"fetched {len(text)} characters")
    return text


@sandboxed_tool(server)
def evaluate_expression(expression: str) -> str:
    """Compute an arithmetic expression such as 2*(3+4)."""
    return bodies.evaluate_expression(expression)


@sandboxed_tool(server)
def read_document(name: str) -> str:
    """Read one of the documents (notes.txt, faq.md)."""
    return bodies.read_document(DATA, name)


@sandboxed_resource(server, "document://{name}", mime_type="text/plain")
def document(name: str) -> str:
    """A document, as a resource."""
    return bodies.read_document(DATA, name)


@sandboxed_prompt(server)
def summarize_document(name: str) -> str:
    """Ask for a summary of one document (read in the sandbox)."""
    return f"Summarize this document in three sentences:\n\n{bodies.read_document(DATA, name)}"
