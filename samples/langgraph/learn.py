"""The learning scenario: the three tools through LangChain's own dispatch, then one graph turn.

``make learn`` runs it twice, with a page server and a scripted chat server on 127.0.0.1:
``python learn.py URL`` (partial mode: it opens the sandbox with ``learn=``, candidates in
.py-sandboxes.learn) and ``python-sb --pysandboxes-config=.py-sandboxes-complete
--learn=.py-sandboxes-complete.learn learn.py URL`` (complete mode: it only drives).
"""

from __future__ import annotations

import contextlib
import sys

from langgraph_demo.graph import ask, build_graph
from langgraph_demo.tools import PROFILE, evaluate_expression, fetch_webpage, read_document

from pysandboxes import is_in_sandbox, sandboxes


def drive(url: str) -> None:
    # StructuredTool.invoke: the dispatch the graph's ToolNode uses
    print("evaluate_expression:", evaluate_expression.invoke({"expression": "2*(3+4)"}))
    print("fetch_webpage:", fetch_webpage.invoke({"url": url}).splitlines()[0])
    print("read_document:", read_document.invoke({"name": "notes.txt"}).splitlines()[0])
    # one turn of the real graph: the model (the scripted server) calls the three tools
    print("graph:", ask(build_graph(), "Run the scenario."))


if __name__ == "__main__":
    learning = (
        contextlib.nullcontext()
        if is_in_sandbox()
        else sandboxes(sandboxes_config=str(PROFILE), learn=f"{PROFILE}.learn")
    )
    with learning:
        drive(sys.argv[1])
