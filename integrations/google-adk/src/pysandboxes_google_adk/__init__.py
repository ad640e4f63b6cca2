"""PySandboxes for google-adk: a tool's body runs in the sandbox, in one line.

.. code-block:: python

    from google.adk.agents import LlmAgent
    from google.adk.apps import App
    from pysandboxes_google_adk import SandboxedFunctionTool, SandboxPlugin

    def read_file(path: str) -> str:
        \"\"\"Read a text file.\"\"\"
        with open(path) as f:  # judged by the rule file, in the sandbox
            return f.read()

    agent = LlmAgent(name="reader", model=model, tools=[SandboxedFunctionTool(read_file)])
    app = App(name="reader", root_agent=agent, plugins=[SandboxPlugin()])

See docs/integrations.md.
"""

from __future__ import annotations

from ._adapter import (
    HostFunctionTool,
    SandboxedFunctionTool,
    SandboxPlugin,
    host_function,
    sandboxed_function,
)

__all__ = [
    "HostFunctionTool",
    "SandboxPlugin",
    "SandboxedFunctionTool",
    "host_function",
    "sandboxed_function",
]
