"""PySandboxes for agno: a tool's body runs in the sandbox, in one line.

.. code-block:: python

    from agno.agent import Agent
    from pysandboxes_agno import SandboxToolkit, sandboxed_tool

    @sandboxed_tool
    def read_file(path: str) -> str:
        \"\"\"Read a text file.\"\"\"
        with open(path) as f:  # judged by the rule file, in the sandbox
            return f.read()

    agent = Agent(model=model, tools=[read_file, SandboxToolkit()])

See docs/integrations.md.
"""

from __future__ import annotations

from ._adapter import FRAMEWORK, STOPPED, SandboxRefusal, SandboxToolkit, host_tool, sandboxed_tool

__all__ = ["FRAMEWORK", "STOPPED", "SandboxRefusal", "SandboxToolkit", "host_tool", "sandboxed_tool"]
