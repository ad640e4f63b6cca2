"""The chat: ``python -m langgraph_demo`` or ``langgraph-demo``; one question a line, an empty
line or end of input ends it. The history is the graph's state (its checkpointer's thread)."""

from __future__ import annotations

from samples_shared.chat import chat_loop, load_env

from pysandboxes import sandboxes

from .graph import ask, build_graph
from .tools import PROFILE, SAMPLE


def main() -> int:
    load_env(SAMPLE)
    graph = build_graph()
    # one sandbox for the whole conversation: the ToolNode's tools run in it
    with sandboxes(sandboxes_config=str(PROFILE)):
        return chat_loop(lambda question: ask(graph, question))
