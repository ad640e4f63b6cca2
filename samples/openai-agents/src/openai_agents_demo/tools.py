"""The three tools, each a ``FunctionTool`` made by ``@sandboxed_function_tool``: the body runs in
the sandbox (partial mode: in its child, under ../.py-sandboxes; complete mode: in the program
python-sb confines), and a refusal reaches the model as text naming it, without the hint."""

from __future__ import annotations

from pathlib import Path

from samples_shared import tools as bodies

from pysandboxes_openai_agents import sandboxed_function_tool

SAMPLE = Path(__file__).resolve().parents[2]
#: the documents read_document serves (the rule files expose this directory only)
DATA = SAMPLE / "data"
#: the partial-mode profile: only the tool bodies run under it
PROFILE = SAMPLE / ".py-sandboxes"


@sandboxed_function_tool
def fetch_webpage(url: str) -> str:
    """Fetch a web page (redirects followed) and return its text as markdown, truncated.

    Args:
        url: the address of the page.
    """
    return bodies.fetch_webpage(url)


@sandboxed_function_tool
def evaluate_expression(expression: str) -> str:
    """Compute an arithmetic expression such as 2*(3+4).

    Args:
        expression: the expression.
    """
    return bodies.evaluate_expression(expression)


@sandboxed_function_tool
def read_document(name: str) -> str:
    """Read one of the documents (notes.txt, faq.md).

    Args:
        name: the document's file name.
    """
    return bodies.read_document(DATA, name)


TOOLS = [fetch_webpage, evaluate_expression, read_document]
