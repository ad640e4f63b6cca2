"""pydantic-ai: an Agent driven by a scripted FunctionModel that calls one tool, then answers."""

from pathlib import Path

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

NOTE = Path(__file__).resolve().parent / "data" / "note.txt"


def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    returned = [
        part.content
        for message in messages
        for part in message.parts
        if isinstance(part, ToolReturnPart) and part.tool_name == "read_note"
    ]
    if returned:
        return ModelResponse(parts=[TextPart(str(returned[-1]))])
    return ModelResponse(parts=[ToolCallPart("read_note", {})])


agent = Agent(FunctionModel(script))


@agent.tool_plain
def read_note() -> str:
    """Return the text of the note."""
    return NOTE.read_text(encoding="utf-8").strip()


print("RESULT:", agent.run_sync("What does the note say?").output)
