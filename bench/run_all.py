"""Run every ``bench/bench_*.py`` and print their tables (``make bench``).

Exits 0 when every benchmark ran, including when the reference (pysandboxes 0.7.0) could not be
installed: its column then says n/a and why. Exits 1 only when one of our benchmarks failed.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # bench scripts run as plain files: _common is found next to them
    BYTECODE_NOTE,
    OUR_PYTHON,
    REFERENCE_LABEL,
    hyperfine,
    process_tool_note,
    reference,
)

BENCH_DIR = Path(__file__).resolve().parent


def main() -> int:
    started = time.perf_counter()
    scripts = sorted(BENCH_DIR.glob("bench_*.py"))
    print(
        f"# PySandboxes benchmarks: {platform.system()} {platform.release()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()} ({OUR_PYTHON})"
    )
    tool = hyperfine()
    if tool is not None:
        version = subprocess.run(
            [tool, "--version"], capture_output=True, text=True, check=False
        ).stdout.strip()
        print(f"- {process_tool_note()} ({version})")
    else:
        print(f"- {process_tool_note()} (install hyperfine for better figures: apt-get install hyperfine)")
    print(f"- {BYTECODE_NOTE}")
    ref = reference()  # created here once, so no benchmark's figures include the installation
    status = ref.reason if ref.available else f"UNAVAILABLE, {ref.reason}; its column says n/a"
    print(f"- reference {REFERENCE_LABEL}: {status}")
    print(flush=True)

    failed = []
    for script in scripts:
        done = subprocess.run([sys.executable, str(script)], check=False)
        if done.returncode != 0:
            failed.append(f"{script.name} (exit {done.returncode})")
        print(flush=True)
    elapsed = time.perf_counter() - started
    print(
        f"{len(scripts)} benchmark(s) in {elapsed:.0f} s"
        + (f"; FAILED: {', '.join(failed)}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
