"""The learning scenario: the three tools called as the Agents SDK calls them, then one agent run.

``make learn`` runs it twice, with a page server and a scripted chat server on 127.0.0.1:
``python learn.py URL`` (partial mode: it opens the sandbox with ``learn=``, candidates in
.py-sandboxes.learn) and ``python-sb --pysandboxes-config=.py-sandboxes-complete
--learn=.py-sandboxes-complete.learn learn.py URL`` (complete mode: it only drives).
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from agents import FunctionTool, Runner
from agents.tool_context import ToolContext
from openai_agents_demo.agent import MAX_TURNS, build_agent, chat_model, client, hooks
from openai_agents_demo.tools import PROFILE, evaluate_expression, fetch_webpage, read_document

from pysandboxes import is_in_sandbox, sandboxes


async def invoke(tool: FunctionTool, **arguments: Any) -> Any:
    """One call through the SDK's own dispatch: ``on_invoke_tool`` with the JSON arguments."""
    text = json.dumps(arguments)
    context = ToolContext(context=None, tool_name=tool.name, tool_call_id="learn", tool_arguments=text)
    return await tool.on_invoke_tool(context, text)


async def drive(url: str, **sandbox: object) -> None:
    print("evaluate_expression:", await invoke(evaluate_expression, expression="2*(3+4)"))
    print("fetch_webpage:", str(await invoke(fetch_webpage, url=url)).splitlines()[0])
    print("read_document:", str(await invoke(read_document, name="notes.txt")).splitlines()[0])
    # one run of the real loop: the model (the scripted server) calls the three tools through
    # the Runner, the hooks joining the open sandbox
    async with client() as openai_client:
        agent = build_agent(chat_model(openai_client))
        result = await Runner.run(agent, "Run the scenario.", hooks=hooks(**sandbox), max_turns=MAX_TURNS)
    print("agent:", result.final_output)


if __name__ == "__main__":
    if is_in_sandbox():
        asyncio.run(drive(sys.argv[1]))
    else:
        learning = {"learn": f"{PROFILE}.learn"}
        with sandboxes(sandboxes_config=str(PROFILE), **learning):
            asyncio.run(drive(sys.argv[1], **learning))
