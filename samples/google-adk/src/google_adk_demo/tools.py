"""The three tools, declared with the adapter: each body runs in the sandbox (partial mode: in
its child, under ../.py-sandboxes; complete mode: in the program python-sb confines)."""

from __future__ import annotations

from pathlib import Path

from samples_shared import tools as bodies

from pysandboxes_google_adk import SandboxedFunctionTool

SAMPLE = Path(__file__).resolve().parents[2]
#: the documents read_document serves (the rule files expose this directory only)
DATA = SAMPLE / "data"
#: the partial-mode profile: only the tool bodies run under it
PROFILE = SAMPLE / ".py-sandboxes"


@SandboxedFunctionTool
def fetch_webpage(url: str) -> str:
    """Fetch a web page (redirects followed) and return its text as markdown, truncated."""
    return bodies.fetch_webpage(url)


@SandboxedFunctionTool
def evaluate_expression(expression: str) -> str:
    """Compute an arithmetic expression such as 2*(3+4)."""
    return bodies.evaluate_expression(expression)


@SandboxedFunctionTool
def read_document(name: str) -> str:
    """Read one of the documents (notes.txt, faq.md)."""
    return bodies.read_document(DATA, name)


TOOLS = [fetch_webpage, evaluate_expression, read_document]
