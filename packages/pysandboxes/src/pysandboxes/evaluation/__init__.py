"""The ``eval-*`` layer: code that arrives as a string, checked, rewritten and bounded.

Nothing here is imported at start-up: the guards load it on the first ``eval``/``exec``/
``compile`` of a program whose rules have an ``eval-*`` key, or on ``guarded_eval``.
See ``docs/eval.md``.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["guarded_eval", "needed_rules"]


def guarded_eval(
    source: Any, *, profile: str = "", namespace: dict[str, Any] | None = None, mode: str = "eval"
) -> Any:
    """Evaluate ``source`` under the ``eval-*`` profile ``profile`` of the rules in force
    (``""``: the default profile from ``eval-KEY=`` lines; ``NAME``: from ``eval-KEY:NAME=``).

    ``namespace`` gives the code its variables (copied in; the names it binds are written back
    to it); without it the code sees only the builtins its profile grants. Returns the value
    of the expression in ``mode="eval"``, None in ``"exec"``. An unknown profile raises
    ``ValueError``; a construct the profile does not allow ``EvalSyntaxRejected``; a budget
    or the timeout ``EvalInterrupted``.
    """
    from .engine import guarded_eval as run

    return run(source, profile=profile, namespace=namespace, mode=mode)


def needed_rules(source: str, mode: str = "eval") -> list[str]:
    """The ``eval-*`` lines ``source`` needs beyond an empty profile (for learning mode)."""
    from .check import needed_rules as needed

    return needed(source, mode)
