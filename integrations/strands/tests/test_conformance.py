"""The shared adapter conformance suite, run against pysandboxes-strands."""

from __future__ import annotations

from pathlib import Path

from pysandboxes_conformance import AdapterConformance, Harness, Project, run_driver
from pysandboxes_conformance._project import PROVIDER
from pysandboxes_conformance._suite import _calls, _harness_file, _package_dirs


class TestConformance(AdapterConformance):
    def test_under_python_sb_the_body_runs_directly(self, harness: Harness, project: Project) -> None:
        """The suite's test, with the one right strands needs under python-sb: importing it
        imports watchdog, whose inotify observer looks its libc functions up with ctypes
        (``python-api=ALLOW:_ctypes.dlsym``, docs/integrations.md)."""
        exposed = [project.root, Path(_harness_file(harness)).parent, *_package_dirs(harness)]
        complete = project.write(
            ".py-sandboxes-complete",
            f"os-sandbox={PROVIDER}\n"
            + "".join(f"expose-ro={directory}\n" for directory in exposed)
            + "python-import=*\npython-api=ALLOW:threads\npython-api=ALLOW:_ctypes.dlsym\n",
        )
        report = run_driver(project, _calls(project, lifecycle=True), complete=complete)
        assert report["seen"] == [[str(report["pid"]), False], [str(report["pid"]), False]]
        assert report["after"] == f"after body={report['pid']}"
