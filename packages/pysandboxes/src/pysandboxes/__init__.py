"""PySandboxes: run Python under a reviewable, deny-by-default policy (``.py-sandboxes``)."""

from __future__ import annotations

from .errors import ConfigSyntaxError, RuleSyntaxError, SandBoxError

__version__ = "0.1.0"

__all__ = ["ConfigSyntaxError", "RuleSyntaxError", "SandBoxError", "__version__"]
