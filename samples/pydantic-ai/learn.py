"""The learning scenario: the three tools called as the toolset calls them, then one agent run.

``make learn`` runs it twice, with a page server and a scripted chat server on 127.0.0.1:
``python learn.py URL`` (partial mode: it opens the sandbox with ``learn=``, candidates in
.py-sandboxes.learn) and ``python-sb --pysandboxes-config=.py-sandboxes-complete
--learn=.py-sandboxes-complete.learn learn.py URL`` (complete mode: it only drives).
"""

from __future__ import annotations

import sys

from pydantic_ai_demo.agent import LIMITS, build_agent
from pydantic_ai_demo.tools import PROFILE, evaluate_expression, fetch_webpage, read_document

from pysandboxes import is_in_sandbox, sandboxes


def drive(url: str, **sandbox: object) -> None:
    # the @sandbox functions the toolset wraps, called directly
    print("evaluate_expression:", evaluate_expression("2*(3+4)"))
    print("fetch_webpage:", fetch_webpage(url).splitlines()[0])
    print("read_document:", read_document("notes.txt").splitlines()[0])
    # one run of the real loop: the model (the scripted server) calls the three tools through
    # pydantic-ai's dispatch (the SandboxedToolset)
    result = build_agent(**sandbox).run_sync("Run the scenario.", usage_limits=LIMITS)
    print("agent:", result.output)


if __name__ == "__main__":
    if is_in_sandbox():
        drive(sys.argv[1])
    else:
        learning = {"learn": f"{PROFILE}.learn"}
        with sandboxes(sandboxes_config=str(PROFILE), **learning):
            drive(sys.argv[1], **learning)
