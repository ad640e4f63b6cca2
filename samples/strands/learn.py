"""The learning scenario: the three tools through strands' own dispatch (``agent.tool.NAME``,
a direct tool call the agent records), then one invocation in which the scripted model calls
them.

``make learn`` runs it twice, with a page server and a scripted chat server on 127.0.0.1:
``python learn.py URL`` (partial mode: it opens the sandbox with ``learn=``, candidates in
.py-sandboxes.learn) and ``python-sb --pysandboxes-config=.py-sandboxes-complete
--learn=.py-sandboxes-complete.learn learn.py URL`` (complete mode: it only drives).
"""

from __future__ import annotations

import sys
from typing import Any

from strands_demo.agent import build_agent
from strands_demo.tools import PROFILE

from pysandboxes import is_in_sandbox, sandboxes


def text(result: Any) -> str:
    return result["content"][0]["text"]


def drive(url: str, **sandbox: Any) -> None:
    agent = build_agent(**sandbox)
    print("evaluate_expression:", text(agent.tool.evaluate_expression(expression="2*(3+4)")))
    print("fetch_webpage:", text(agent.tool.fetch_webpage(url=url)).splitlines()[0])
    print("read_document:", text(agent.tool.read_document(name="notes.txt")).splitlines()[0])
    # one invocation of the real loop: the model (the scripted server) calls the three tools
    print("agent:", str(build_agent(**sandbox)("Run the scenario.")).strip())


if __name__ == "__main__":
    if is_in_sandbox():
        drive(sys.argv[1])
    else:
        learning = {"learn": f"{PROFILE}.learn"}
        with sandboxes(sandboxes_config=str(PROFILE), **learning):
            drive(sys.argv[1], **learning)
