"""The chat: ``python -m crewai_demo`` or ``crewai-demo``; one question a line, an empty line or
end of input ends it. Each question is one crew kickoff."""

from __future__ import annotations

from samples_shared.chat import chat_loop, load_env

from pysandboxes import sandboxes

from .crew import build_crew, chat_model
from .tools import PROFILE, SAMPLE


def main() -> int:
    load_env(SAMPLE)
    llm = chat_model()
    history: list[str] = []

    def turn(question: str) -> str:
        answer = str(build_crew(question, llm=llm, history="\n".join(history)).kickoff().raw)
        history.extend((f"user: {question}", f"assistant: {answer}"))
        return answer

    # one sandbox for the whole conversation (each kickoff's sandbox_kickoff joins it)
    with sandboxes(sandboxes_config=str(PROFILE)):
        return chat_loop(turn)
