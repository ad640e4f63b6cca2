"""smolagents: a ToolCallingAgent driven by a scripted Model that calls one tool, then final_answer."""

from pathlib import Path

from smolagents import ToolCallingAgent, tool
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
    Model,
)

NOTE = Path(__file__).resolve().parent / "data" / "note.txt"


@tool
def read_note() -> str:
    """Return the text of the note."""
    return NOTE.read_text(encoding="utf-8").strip()


class ScriptedModel(Model):
    """First asks for read_note, then gives the tool's observation as the final answer."""

    def __init__(self) -> None:
        super().__init__(model_id="scripted")
        self.calls = 0

    def generate(
        self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kwargs
    ):
        self.calls += 1
        if self.calls == 1:
            name, arguments = "read_note", {}
        else:
            observation = messages[-1].content[0]["text"]  # "Observation:\n<what read_note returned>"
            name, arguments = "final_answer", {"answer": observation.removeprefix("Observation:").strip()}
        call = ChatMessageToolCall(
            id=f"call-{self.calls}",
            type="function",
            function=ChatMessageToolCallFunction(name=name, arguments=arguments),
        )
        return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[call])


agent = ToolCallingAgent(tools=[read_note], model=ScriptedModel(), max_steps=3, verbosity_level=0)
print("RESULT:", agent.run("What does the note say?"))
