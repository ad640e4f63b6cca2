"""The graph: a ``StateGraph`` of two nodes, the model (a chat model bound to the tools) and a
``ToolNode`` of the sandboxed tools, looping until the model answers without a tool call. The
graph's state is the conversation: a checkpointer keeps it per thread, so each turn adds to it.
"""

from __future__ import annotations

import os
from typing import Annotated, Any, TypedDict

from langchain.chat_models import init_chat_model
from langchain_core.messages import AnyMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

from .tools import TOOLS

#: the model when CHAT_MODEL is not set (provider:model, as init_chat_model reads it)
DEFAULT_MODEL = "openai:gpt-4o-mini"
SYSTEM = (
    "You are a helpful assistant with three tools: fetch_webpage, evaluate_expression and "
    "read_document. When a tool answers with an error, say what was refused."
)
#: steps of one turn (model and tool nodes), at most
RECURSION_LIMIT = 12


class State(TypedDict):
    """The conversation: every message, added to by each node."""

    messages: Annotated[list[AnyMessage], add_messages]


def chat_model(spec: str | None = None) -> Any:
    """The model of ``spec`` (default ``CHAT_MODEL``); an OpenAI-compatible endpoint is
    ``OPENAI_BASE_URL``, read by the OpenAI client."""
    return init_chat_model(spec or os.getenv("CHAT_MODEL") or DEFAULT_MODEL)


def build_graph(model: Any = None) -> Any:
    """The compiled graph, its state kept per ``thread_id`` in memory. The tools' sandbox is the
    caller's: the chat and learn.py open it around the conversation (under python-sb there is
    nothing to open)."""
    bound = (model if model is not None else chat_model()).bind_tools(TOOLS)

    def call_model(state: State) -> dict[str, list[AnyMessage]]:
        return {"messages": [bound.invoke([SystemMessage(SYSTEM), *state["messages"]])]}

    graph = StateGraph(State)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode(TOOLS))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)  # tool calls → tools, else the end
    graph.add_edge("tools", "model")
    return graph.compile(checkpointer=InMemorySaver())


def ask(graph: Any, question: str, thread: str = "chat") -> str:
    """One turn of the conversation ``thread``: the question added to its state, the graph run
    until the model answers; the answer."""
    config = {"configurable": {"thread_id": thread}, "recursion_limit": RECURSION_LIMIT}
    state = graph.invoke({"messages": [{"role": "user", "content": question}]}, config)
    return str(state["messages"][-1].content)
