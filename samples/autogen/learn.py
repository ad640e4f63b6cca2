"""The learning scenario: the three tools through AutoGen's own dispatch (``run_json``, what
the agent calls), then one agent run in which the scripted model calls them.

``make learn`` runs it twice, with a page server and a scripted chat server on 127.0.0.1:
``python learn.py URL`` (partial mode: it opens the sandbox with ``learn=``, candidates in
.py-sandboxes.learn) and ``python-sb --pysandboxes-config=.py-sandboxes-complete
--learn=.py-sandboxes-complete.learn learn.py URL`` (complete mode: it only drives).
"""

from __future__ import annotations

import sys

from autogen_core import CancellationToken
from autogen_demo.agent import build_agent, chat_model
from autogen_demo.chat import ask
from autogen_demo.tools import PROFILE, evaluate_expression, fetch_webpage, read_document

import pysandboxes
from pysandboxes import is_in_sandbox


async def drive(url: str) -> None:
    token = CancellationToken()
    print("evaluate_expression:", await evaluate_expression.run_json({"expression": "2*(3+4)"}, token))
    print("fetch_webpage:", str(await fetch_webpage.run_json({"url": url}, token)).splitlines()[0])
    print("read_document:", str(await read_document.run_json({"name": "notes.txt"}, token)).splitlines()[0])
    # one run of the real loop: the model (the scripted server) calls the three tools
    client = chat_model()
    try:
        print("agent:", await ask(build_agent(client), "Run the scenario."))
    finally:
        await client.close()


if __name__ == "__main__":
    if is_in_sandbox():
        pysandboxes.run(drive(sys.argv[1]))
    else:
        pysandboxes.run(drive(sys.argv[1]), sandboxes_config=str(PROFILE), learn=f"{PROFILE}.learn")
