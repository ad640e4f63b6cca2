"""``python-sb``: the console script lives in the core package; this distribution only names it."""

from __future__ import annotations


def main() -> int:
    import sys

    from pysandboxes.cli.python_sb import main as core_main

    code = core_main()
    supervisor = sys.modules.get("pysandboxes.supervise")
    if supervisor is not None:  # a supervisor whose program has ended exits at once
        supervisor.exit_now(code)
    return code


def ipython_main() -> int:
    """``ipython-sb``: like ``python-sb``, with IPython as the interactive shell."""
    from pysandboxes.cli.python_sb import main as core_main

    return core_main(ipython=True)
