"""crewai: a one-task Crew driven by a scripted BaseLLM (ReAct text) that calls one tool, then answers."""

from pathlib import Path

from crewai import Agent, Crew, Task
from crewai.llms.base_llm import BaseLLM
from crewai.tools import tool

NOTE = Path(__file__).resolve().parent / "data" / "note.txt"


@tool("read_note")
def read_note() -> str:
    """Return the text of the note."""
    return NOTE.read_text(encoding="utf-8").strip()


class ScriptedLLM(BaseLLM):
    """Asks for read_note until an Observation is in the conversation, then answers with it."""

    def call(
        self,
        messages,
        tools=None,
        callbacks=None,
        available_functions=None,
        from_task=None,
        from_agent=None,
        response_model=None,
    ):
        # the system prompt shows the format ("Observation: the result of the action"): look only
        # at what came after the first user message
        turns = [] if isinstance(messages, str) else [str(m.get("content", "")) for m in messages[2:]]
        observed = [t.rsplit("Observation:", 1)[1].strip() for t in turns if "Observation:" in t]
        if observed:
            return f"Thought: I now know the final answer\nFinal Answer: {observed[-1].splitlines()[0]}"
        return "Thought: I should read the note.\nAction: read_note\nAction Input: {}"


llm = ScriptedLLM(model="scripted")
reader = Agent(role="reader", goal="read the note", backstory="reads notes", llm=llm, tools=[read_note])
task = Task(description="What does the note say?", expected_output="the note's text", agent=reader)
print("RESULT:", Crew(agents=[reader], tasks=[task]).kickoff().raw)
