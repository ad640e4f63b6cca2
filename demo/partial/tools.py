"""Tools an LLM agent may call, confined with @sandbox (partial mode).

Inside `with sandboxes():` each call runs in a child process under the `.py-sandboxes` next
to this file; the agent that calls them keeps its own rights. The tools trust their
arguments no more than an agent's tool should: a misled model can ask for any path.
"""

import os

from pysandboxes import sandbox

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


@sandbox
def summarise(name: str) -> dict[str, object]:
    """The title, size and follow-up of one report of the data directory."""
    with open(os.path.join(DATA, name), encoding="utf-8") as f:
        lines = f.read().splitlines()
    follow_up = [line.split("follow-up:", 1)[1].strip() for line in lines if "follow-up:" in line]
    return {"title": lines[0], "lines": len(lines), "follow_up": follow_up, "pid": os.getpid()}


@sandbox
def read_file(path: str) -> str:
    """Any file the model names: the rules decide."""
    with open(os.path.expanduser(path), encoding="utf-8") as f:
        return f.read()


@sandbox
def search(word: str):
    """Lines holding `word` in every report, streamed to the caller as they are found."""
    for name in sorted(os.listdir(DATA)):
        with open(os.path.join(DATA, name), encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if word in line:
                    yield f"{name}:{number}: {line.strip()}"
