"""The shared adapter conformance suite, run against pysandboxes-autogen."""

from __future__ import annotations

from pysandboxes_conformance import AdapterConformance


class TestConformance(AdapterConformance):
    pass
