"""openai-agents: an Agent driven by a scripted Model that calls one function tool, then answers."""

from pathlib import Path

from agents import Agent, Runner, function_tool
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

NOTE = Path(__file__).resolve().parent / "data" / "note.txt"


@function_tool
def read_note() -> str:
    """Return the text of the note."""
    return NOTE.read_text(encoding="utf-8").strip()


class ScriptedModel(Model):
    """Asks for read_note until its output is in the input, then answers with that output."""

    async def get_response(self, system_instructions, input, *args, **kwargs):
        items = [] if isinstance(input, str) else input
        outputs = [item["output"] for item in items if item.get("type") == "function_call_output"]
        if outputs:
            text = ResponseOutputText(type="output_text", text=str(outputs[-1]), annotations=[])
            reply = ResponseOutputMessage(
                id="msg-1", type="message", role="assistant", status="completed", content=[text]
            )
            return ModelResponse(output=[reply], usage=Usage(), response_id=None)
        call = ResponseFunctionToolCall(
            id="fc-1", call_id="call-1", type="function_call", name="read_note", arguments="{}"
        )
        return ModelResponse(output=[call], usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError("the script does not stream")


agent = Agent(name="notes", instructions="Read the note.", model=ScriptedModel(), tools=[read_note])
print("RESULT:", Runner.run_sync(agent, "What does the note say?").final_output)
