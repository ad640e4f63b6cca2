"""The three tools, declared with the adapter: each body runs in the sandbox (partial mode: in
its child, under ../.py-sandboxes; complete mode: in the program python-sb confines).

The child imports this module, so crewai, under the rules: crewai writes under HOME when it is
imported and needs a temporary directory. The child gets a directory of its own for both,
``SANDBOX_HOME`` (default ``.sandbox-home`` in the sample, git-ignored), never the user's home.
"""

from __future__ import annotations

import os
from pathlib import Path

from samples_shared import tools as bodies

from pysandboxes import is_in_sandbox
from pysandboxes_crewai import sandboxed_tool

SAMPLE = Path(__file__).resolve().parents[2]
#: the documents read_document serves (the rule files expose this directory only)
DATA = SAMPLE / "data"
#: the partial-mode profile: only the tool bodies run under it
PROFILE = SAMPLE / ".py-sandboxes"

# the child's HOME and TMPDIR (the profile's env= and expose-rw= lines read SANDBOX_HOME); it
# must exist before the sandbox opens. Under python-sb the Makefile or the caller sets it.
os.environ.setdefault("SANDBOX_HOME", str(SAMPLE / ".sandbox-home"))
if not is_in_sandbox():
    Path(os.environ["SANDBOX_HOME"]).mkdir(exist_ok=True)


@sandboxed_tool("fetch_webpage")
def fetch_webpage(url: str) -> str:
    """Fetch a web page (redirects followed) and return its text as markdown, truncated."""
    return bodies.fetch_webpage(url)


@sandboxed_tool("evaluate_expression")
def evaluate_expression(expression: str) -> str:
    """Compute an arithmetic expression such as 2*(3+4)."""
    return bodies.evaluate_expression(expression)


@sandboxed_tool("read_document")
def read_document(name: str) -> str:
    """Read one of the documents (notes.txt, faq.md)."""
    return bodies.read_document(DATA, name)


TOOLS = [fetch_webpage, evaluate_expression, read_document]
