"""The learning scenario: the three tools through crewai's own dispatch, then one crew kickoff.

``make learn`` runs it twice, with a page server and a scripted chat server on 127.0.0.1:
``python learn.py URL`` (partial mode: it opens the sandbox with ``learn=``, candidates in
.py-sandboxes.learn) and ``python-sb --pysandboxes-config=.py-sandboxes-complete
--learn=.py-sandboxes-complete.learn learn.py URL`` (complete mode: it only drives).
"""

from __future__ import annotations

import sys

from crewai_demo import crew
from crewai_demo.tools import PROFILE, evaluate_expression, fetch_webpage, read_document

from pysandboxes import is_in_sandbox, sandboxes


def drive(url: str) -> None:
    # BaseTool.run: the dispatch crewai's tool usage calls
    print("evaluate_expression:", evaluate_expression.run(expression="2*(3+4)"))
    print("fetch_webpage:", str(fetch_webpage.run(url=url)).splitlines()[0])
    print("read_document:", str(read_document.run(name="notes.txt")).splitlines()[0])
    # one kickoff of the real loop: the model (the scripted server) calls the three tools
    print("crew:", crew.build_crew("Run the scenario.").kickoff().raw)


if __name__ == "__main__":
    if is_in_sandbox():
        drive(sys.argv[1])
    else:
        # the kickoff's sandbox_kickoff joins this block: the same settings
        crew.SANDBOX["learn"] = f"{PROFILE}.learn"
        with sandboxes(sandboxes_config=str(PROFILE), **crew.SANDBOX):
            drive(sys.argv[1])
