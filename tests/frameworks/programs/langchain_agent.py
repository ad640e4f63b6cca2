"""langchain 1.x: create_agent with a scripted fake chat model that calls one tool, then answers."""

from pathlib import Path

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

NOTE = Path(__file__).resolve().parent / "data" / "note.txt"


@tool
def read_note() -> str:
    """Return the text of the note."""
    return NOTE.read_text(encoding="utf-8").strip()


class ScriptedChatModel(GenericFakeChatModel):
    """The stock fake model cannot bind tools; the script already names the tool to call."""

    def bind_tools(self, tools, **kwargs):
        return self


model = ScriptedChatModel(
    messages=iter(
        [
            AIMessage(content="", tool_calls=[{"name": "read_note", "args": {}, "id": "call-1"}]),
            AIMessage(content="done"),
        ]
    )
)
agent = create_agent(model, tools=[read_note])
state = agent.invoke({"messages": [{"role": "user", "content": "What does the note say?"}]})
tool_results = [m.content for m in state["messages"] if m.type == "tool"]
print("RESULT:", tool_results[0])
