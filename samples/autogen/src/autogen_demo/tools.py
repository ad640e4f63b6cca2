"""The three tools, declared with the adapter: each body runs in the sandbox (partial mode: in
its child, under ../.py-sandboxes; complete mode: in the program python-sb confines)."""

from __future__ import annotations

from pathlib import Path

from samples_shared import tools as bodies

from pysandboxes_autogen import SandboxedFunctionTool

SAMPLE = Path(__file__).resolve().parents[2]
#: the documents read_document serves (the rule files expose this directory only)
DATA = SAMPLE / "data"
#: the partial-mode profile: only the tool bodies run under it
PROFILE = SAMPLE / ".py-sandboxes"


def _fetch_webpage(url: str) -> str:
    return bodies.fetch_webpage(url)


def _evaluate_expression(expression: str) -> str:
    return bodies.evaluate_expression(expression)


def _read_document(name: str) -> str:
    return bodies.read_document(DATA, name)


fetch_webpage = SandboxedFunctionTool(
    _fetch_webpage,
    "Fetch a web page (redirects followed) and return its text as markdown, truncated.",
    name="fetch_webpage",
)
evaluate_expression = SandboxedFunctionTool(
    _evaluate_expression, "Compute an arithmetic expression such as 2*(3+4).", name="evaluate_expression"
)
read_document = SandboxedFunctionTool(
    _read_document, "Read one of the documents (notes.txt, faq.md).", name="read_document"
)

TOOLS = [fetch_webpage, evaluate_expression, read_document]
