"""The bodies of the three tools every sample gives its model.

Each sample declares the tools with its framework's adapter (``@sandboxed_tool``...) and calls
these functions from the tool's body, so the body runs under the sample's rule file: in the
sandbox's child (partial mode) or in the program ``python-sb`` confines (complete mode).

There is no filter here on purpose: the URL, the expression and the document name are the
model's, and what refuses is the sandbox (``net=``, ``eval-*``, ``expose-ro=``), so a refusal
always names the rule that decided.
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx
from markdownify import markdownify

#: seconds a page may take (connect and read)
FETCH_TIMEOUT = 15.0
#: characters of a page handed back to the model
MAX_CHARS = 8000

__all__ = ["FETCH_TIMEOUT", "MAX_CHARS", "evaluate_expression", "fetch_webpage", "read_document"]


def fetch_webpage(url: str) -> str:
    """The page at ``url`` as markdown text (redirects followed), at most :data:`MAX_CHARS`."""
    response = httpx.get(url, follow_redirects=True, timeout=FETCH_TIMEOUT)
    response.raise_for_status()
    if "html" in response.headers.get("content-type", ""):
        text = markdownify(response.text, heading_style="ATX", strip=["script", "style"])
    else:
        text = response.text
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    if len(text) > MAX_CHARS:
        text = text[:MAX_CHARS] + f"\n[truncated at {MAX_CHARS} characters]"
    return text


def evaluate_expression(expression: str) -> str:
    """The value of a Python expression, as text.

    A plain ``eval``, unsafe by itself: under the sample's rules the ``eval-*`` layer checks the
    source first (``eval-syntax=arith, compare``: ``2*(3+4)`` runs, a call or an attribute walk
    such as ``().__class__.__bases__[0].__subclasses__()`` is refused before anything runs).
    """
    return str(eval(expression))


def read_document(data: Path, name: str) -> str:
    """The text of the document ``name`` of the directory ``data``. ``name`` is not checked:
    ``../.env`` or ``/etc/passwd`` reach the file system, whose rules expose ``data`` only."""
    return (data / name).read_text(encoding="utf-8")
