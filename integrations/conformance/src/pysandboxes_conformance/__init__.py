"""The conformance suite every PySandboxes framework adapter passes (test-only).

An adapter plugs in with two files in ``integrations/<name>/tests/``:

``conftest.py`` — the harness: what the suite needs to know about the framework::

    import pytest
    from pysandboxes_conformance import Harness, Seen

    class MyHarness(Harness):
        name = "myframework"
        sandboxed_header = "from pysandboxes_myframework import sandboxed_tool, host_tool\\n..."
        plain_header = "from myframework import tool\\n..."
        sandboxed = "@sandboxed_tool"
        sandboxed_raise = '@sandboxed_tool(on_denial="raise")'
        host = "@host_tool"
        plain = "@tool"
        context = ("ctx", "MyContext")
        wrong_usages = [("@sandbox\\n@tool\\ndef f() -> int:\\n    ...", "@sandbox decorates a function")]

        def call_tools(self, module, calls, *, lifecycle=True):
            ...  # the framework's agent loop, its offline model calling each (tool, args)
            return [Seen(text, error) for ...]

        def schema(self, module, tool):
            ...  # what the model is given for module.<tool>

    @pytest.fixture(scope="session")
    def harness():
        return MyHarness()

``test_conformance.py`` — the suite itself::

    from pysandboxes_conformance import AdapterConformance

    class TestConformance(AdapterConformance):
        pass

The suite writes a project (rule file, files, two loopback servers, the same tool bodies made
tools by the adapter and by the framework alone), then checks through the framework's own loop:
the body runs in the sandbox's child (one child per run, async too); refused files, ports and
imports reach the model as text naming the refusal, without the hint; the plain tool does what
the sandboxed one is refused (the control); ``on_denial="raise"`` and other exceptions keep the
framework's handling; the schema is the plain tool's; the context parameter stays on the host;
wrong usages fail at decoration; the first call opens a sandbox when none is, the lifecycle hook
opens and closes it for a run, and under ``python-sb`` the body runs directly.
"""

from __future__ import annotations

from ._harness import Call, Harness, Seen
from ._project import Project
from ._suite import AdapterConformance, Outcome, run_driver

__all__ = [
    "AdapterConformance",
    "Call",
    "Harness",
    "Outcome",
    "Project",
    "Seen",
    "run_driver",
]
