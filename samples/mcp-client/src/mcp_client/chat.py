"""The chat: ``python -m mcp_client [--config FILE] [--server NAME]`` or ``mcp-client-demo``.

The server is launched as FILE says (Claude Desktop's ``mcpServers`` format; ``${VAR}`` is
replaced from the environment, ``${REPO}`` defaults to this checkout): by default the
mcp-server sample in partial mode, over stdio. Its tools are listed and offered to the model;
each tool call of the model goes to the server, and what the server answers (a refusal of its
sandbox included, as the tool's error text) goes back to the model. One question a line; an
empty line or end of input ends the chat.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import string
import sys
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters
from mcp.client.stdio import get_default_environment
from openai import AsyncOpenAI

REPO = Path(__file__).resolve().parents[4]
DEFAULT_CONFIG = REPO / "samples" / "mcp-server" / "clients" / "stdio-partial.json"
#: the model when CHAT_MODEL is not set; only OpenAI-compatible endpoints (OPENAI_BASE_URL)
DEFAULT_MODEL = "openai:gpt-4o-mini"
#: the variables of this environment the server gets besides the SDK's defaults (HOME, PATH,
#: ...): what the server sample's rules read. The model's key is not among them.
SERVER_VARIABLES = ("LANG", "OS_SANDBOX", "PAGE_HOST", "PAGE_PORT", "MCP_PORT")
#: model calls in one turn, at most
MAX_STEPS = 8
SYSTEM = "You are a helpful assistant. Use the tools; when one answers with an error, say what was refused."


def server_parameters(config: Path, name: str | None = None) -> StdioServerParameters:
    """The stdio server NAME (default: the only one) of a Claude-Desktop-style configuration."""
    values = {"REPO": str(REPO), **os.environ}
    servers = json.loads(string.Template(config.read_text(encoding="utf-8")).safe_substitute(values))[
        "mcpServers"
    ]
    entry = servers[name] if name else next(iter(servers.values()))
    env = get_default_environment()
    env.update({k: os.environ[k] for k in SERVER_VARIABLES if k in os.environ})
    env.update(entry.get("env", {}))
    return StdioServerParameters(command=entry["command"], args=entry.get("args", []), env=env)


def model_name(spec: str) -> str:
    provider, _, model = spec.partition(":")
    if not model:
        return provider
    if provider != "openai":
        raise SystemExit(f"CHAT_MODEL={spec!r}: this client speaks OpenAI-compatible chat completions only")
    return model


def openai_tools(listed: Any) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description or "", "parameters": t.input_schema},
        }
        for t in listed.tools
    ]


def tool_text(result: Any) -> str:
    text = "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")
    return f"Error: {text}" if result.is_error else text


async def chat(parameters: StdioServerParameters, model: str) -> int:
    openai = AsyncOpenAI()  # OPENAI_API_KEY, OPENAI_BASE_URL
    interactive = sys.stdin.isatty()
    async with Client(parameters) as client:
        tools = openai_tools(await client.list_tools())
        messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
        while True:
            if interactive:
                print("you> ", end="", flush=True)
            line = await asyncio.to_thread(sys.stdin.readline)
            if not line.strip():
                return 0
            messages.append({"role": "user", "content": line.strip()})
            for _ in range(MAX_STEPS):
                response = await openai.chat.completions.create(model=model, messages=messages, tools=tools)
                message = response.choices[0].message
                messages.append(message.model_dump(exclude_none=True))
                if not message.tool_calls:
                    break
                for call in message.tool_calls:
                    arguments = json.loads(call.function.arguments or "{}")
                    result = await client.call_tool(call.function.name, arguments)
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": tool_text(result)})
            print(f"assistant> {message.content}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mcp_client", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, default=Path(os.getenv("MCP_CLIENT_CONFIG") or DEFAULT_CONFIG))
    parser.add_argument("--server", help="the server's name in the configuration (default: the only one)")
    args = parser.parse_args(argv)
    from dotenv import load_dotenv

    load_dotenv(Path(__file__).resolve().parents[2] / ".env")  # the keys, once
    model = model_name(os.getenv("CHAT_MODEL") or DEFAULT_MODEL)
    return asyncio.run(chat(server_parameters(args.config, args.server), model))
