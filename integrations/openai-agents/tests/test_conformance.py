"""The shared adapter conformance suite, run against pysandboxes-openai-agents."""

from __future__ import annotations

from pysandboxes_conformance import AdapterConformance


class TestConformance(AdapterConformance):
    pass
