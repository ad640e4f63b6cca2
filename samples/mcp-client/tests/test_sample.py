"""The mcp-client sample, offline: the chat (its real OpenAI client) against the scripted model
on 127.0.0.1, its tools discovered from the real mcp-server sample, launched over stdio by each
of that sample's client configurations."""

from __future__ import annotations

from pathlib import Path

import pytest
from samples_shared.testing import (
    ESCAPE,
    SANE,
    PageServer,
    ScriptedChatServer,
    plain_python,
    reply,
    sample_env,
    tool_calls,
)

SAMPLE = Path(__file__).resolve().parents[1]
CONFIGS = SAMPLE.parent / "mcp-server" / "clients"
HINT = "to the rule file"


def chat(config: str, home: Path, pages: PageServer, chat_server: ScriptedChatServer) -> str:
    """One turn of the chat with the server of CONFIGS/CONFIG.json; its standard output."""
    chat_server.script = [
        tool_calls(
            ("evaluate_expression", {"expression": SANE}),
            ("fetch_webpage", {"url": pages.url("/redirect")}),
            ("fetch_webpage", {"url": pages.other_url()}),
            ("evaluate_expression", {"expression": ESCAPE}),
            ("read_document", {"name": "notes.txt"}),
        ),
        reply("done"),
    ]
    env = sample_env(home, **pages.env(), **chat_server.env())
    code = f"from mcp_client.chat import main; main(['--config', {str(CONFIGS / (config + '.json'))!r}])"
    result = plain_python(code, env=env, cwd=SAMPLE, input="go\n")
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_tools_are_discovered_from_the_server(
    home: Path, pages: PageServer, chat_server: ScriptedChatServer
) -> None:
    chat("stdio-partial", home, pages, chat_server)
    offered = {tool["function"]["name"] for tool in chat_server.requests[0]["tools"]}
    assert offered == {"fetch_webpage", "evaluate_expression", "read_document"}


def test_negative_control_the_escape_succeeds_with_no_sandbox(
    home: Path, pages: PageServer, chat_server: ScriptedChatServer
) -> None:
    assert "assistant> done" in chat("stdio-no-sandbox", home, pages, chat_server)
    _sane, _page, port, escape, _document = chat_server.tool_messages()
    assert escape == "b'escaped\\n'"
    assert "# Sandboxed pages" in port


@pytest.mark.parametrize("config", ["stdio-partial", "stdio-complete"])
def test_the_model_reads_the_servers_refusals(
    config: str, home: Path, pages: PageServer, chat_server: ScriptedChatServer
) -> None:
    assert "assistant> done" in chat(config, home, pages, chat_server)
    sane, page, port, escape, document = chat_server.tool_messages()
    assert sane == "14"
    assert "# Sandboxed pages" in page
    assert port.startswith("Error: ") and "DENIED" in port
    assert escape.startswith("Error: ") and "EvalSyntaxRejected" in escape
    assert document.startswith("Quarterly notes")
    assert HINT not in port + escape


def test_the_models_key_does_not_reach_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_client.chat import server_parameters

    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-the-server")
    monkeypatch.setenv("PAGE_PORT", "8443")
    parameters = server_parameters(CONFIGS / "stdio-complete.json")
    assert "OPENAI_API_KEY" not in parameters.env
    assert parameters.env["PAGE_PORT"] == "8443"
    assert parameters.command.endswith("/.venv-samples/mcp-server/bin/python-sb")
