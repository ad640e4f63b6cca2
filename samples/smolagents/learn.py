"""The learning scenario: the three tools through smolagents' own dispatch, one run of the
tool-calling agent, then one step of the CodeAgent's model-written code in the executor.

``make learn`` runs it twice, with a page server and a scripted chat server on 127.0.0.1:
``python learn.py URL`` (partial mode: it opens the sandbox with ``learn=``, candidates in
.py-sandboxes.learn) and ``python-sb --pysandboxes-config=.py-sandboxes-complete
--learn=.py-sandboxes-complete.learn learn.py URL`` (complete mode: it only drives).

The scripted model of ``samples_shared.with_servers`` calls the three tools, then answers in
text: the tool-calling agent needs a ``final_answer`` call, so its run ends at its step limit;
the executor is driven directly, with the code a model would write.
"""

from __future__ import annotations

import sys

from smolagents_demo.agent import MAX_STEPS, build_agent, build_code_agent
from smolagents_demo.tools import PROFILE, evaluate_expression, fetch_webpage, read_document

from pysandboxes import is_in_sandbox, sandboxes

CODE = "import pathlib\nprint(evaluate_expression(expression='2*(3+4)'))\nprint(len(read_document(name='notes.txt')))"


def drive(url: str, **sandbox: object) -> None:
    # Tool.__call__: the dispatch the agents use
    print("evaluate_expression:", evaluate_expression(expression="2*(3+4)"))
    print("fetch_webpage:", fetch_webpage(url=url).splitlines()[0])
    print("read_document:", read_document(name="notes.txt").splitlines()[0])
    # one run of the real loop: the model (the scripted server) calls the three tools
    agent = build_agent(**sandbox)
    agent.max_steps = min(MAX_STEPS, 2)
    print("agent:", agent.run("Run the scenario."))
    # the CodeAgent's executor: smolagents' interpreter in the sandbox's child
    with build_code_agent(**sandbox) as code_agent:
        code_agent.python_executor.send_tools({**code_agent.tools})
        print("code:", code_agent.python_executor(CODE).logs.strip())


if __name__ == "__main__":
    if is_in_sandbox():
        drive(sys.argv[1])
    else:
        learning = {"learn": f"{PROFILE}.learn"}
        with sandboxes(sandboxes_config=str(PROFILE), **learning):
            drive(sys.argv[1], **learning)
