"""The program the suite runs in a fresh process (``python`` or ``python-sb``), for what an
in-process test cannot show: the first call opening the sandbox, a lifecycle hook closing it,
complete mode, and decoration errors (a failed import must not leave tools registered in the
test process). ``python -m pysandboxes_conformance._driver SPEC.json``; the last line of its
standard output is a JSON report."""

from __future__ import annotations

import importlib
import importlib.util
import json
import logging
import os
import sys
from typing import Any


def _harness(spec: dict[str, Any]) -> Any:
    loader = importlib.util.spec_from_file_location("_conformance_harness", spec["harness_file"])
    assert loader is not None and loader.loader is not None
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    return getattr(module, spec["harness_class"])()


def _calls(spec: dict[str, Any]) -> dict[str, Any]:
    harness = _harness(spec)
    module = importlib.import_module(spec["module"])
    seen = harness.call_tools(module, [tuple(c) for c in spec["calls"]], lifecycle=spec["lifecycle"])
    report: dict[str, Any] = {"pid": os.getpid(), "seen": [[s.text, s.error] for s in seen]}
    try:  # a @sandbox function called after the run: is a sandbox still open?
        report["after"] = module._body_pid("after")
    except Exception as exc:
        report["after"] = f"{type(exc).__name__}: {exc}"
    return report


def _imports(spec: dict[str, Any]) -> dict[str, Any]:
    outcomes = {}
    for name in spec["modules"]:
        try:
            importlib.import_module(name)
        except Exception as exc:
            outcomes[name] = f"{type(exc).__name__}: {exc}"
        else:
            outcomes[name] = "imported"
    return {"outcomes": outcomes}


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("Pysandboxes").setLevel(logging.INFO)
    report = _calls(spec) if spec["mode"] == "calls" else _imports(spec)
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
