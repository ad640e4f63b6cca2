"""PySandboxes for LangChain: a tool's body runs in the sandbox, in one line.

.. code-block:: python

    from langchain.agents import create_agent
    from pysandboxes_langchain import SandboxMiddleware, sandboxed_tool

    @sandboxed_tool
    def read_file(path: str) -> str:
        \"\"\"Read a text file.\"\"\"
        with open(path) as f:  # judged by the rule file, in the sandbox
            return f.read()

    agent = create_agent(model, tools=[read_file], middleware=[SandboxMiddleware()])

See docs/integrations.md.
"""

from __future__ import annotations

from ._adapter import FRAMEWORK, SandboxMiddleware, SandboxRefusal, host_tool, sandboxed_tool

__all__ = ["FRAMEWORK", "SandboxMiddleware", "SandboxRefusal", "host_tool", "sandboxed_tool"]
