"""``python-sb``: the console script lives in the core package; this distribution only names it."""

from __future__ import annotations


def main() -> int:
    from pysandboxes.cli.python_sb import main as core_main

    return core_main()


def ipython_main() -> int:
    """``ipython-sb``: like ``python-sb``, with IPython as the interactive shell."""
    from pysandboxes.cli.python_sb import main as core_main

    return core_main(ipython=True)
