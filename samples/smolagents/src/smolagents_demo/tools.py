"""The three tools, declared with the adapter: each body runs in the sandbox (partial mode: in
its child, under ../.py-sandboxes; complete mode: in the program python-sb confines)."""

from __future__ import annotations

from pathlib import Path

from samples_shared import tools as bodies

from pysandboxes_smolagents import sandboxed_tool

SAMPLE = Path(__file__).resolve().parents[2]
#: the documents read_document serves (the rule files expose this directory only)
DATA = SAMPLE / "data"
#: the partial-mode profile: only the tool bodies and the CodeAgent's code run under it
PROFILE = SAMPLE / ".py-sandboxes"


@sandboxed_tool
def fetch_webpage(url: str) -> str:
    """Fetch a web page (redirects followed) and return its text as markdown, truncated.

    Args:
        url: The address of the page.
    """
    return bodies.fetch_webpage(url)


@sandboxed_tool
def evaluate_expression(expression: str) -> str:
    """Compute an arithmetic expression such as 2*(3+4).

    Args:
        expression: The expression to compute.
    """
    return bodies.evaluate_expression(expression)


@sandboxed_tool
def read_document(name: str) -> str:
    """Read one of the documents (notes.txt, faq.md).

    Args:
        name: The document's file name.
    """
    return bodies.read_document(DATA, name)


TOOLS = [fetch_webpage, evaluate_expression, read_document]
