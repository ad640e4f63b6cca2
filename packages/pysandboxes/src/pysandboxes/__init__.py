"""PySandboxes: run Python under a reviewable, deny-by-default policy (``.py-sandboxes``)."""

from __future__ import annotations

from .errors import (
    ConfigSyntaxError,
    ProviderError,
    RuleApiPermissionError,
    RuleFileNotFoundError,
    RuleModuleNotFoundError,
    RulePermissionError,
    RuleSocketConnectionRefusedError,
    RuleSyntaxError,
    SandBoxError,
    sandbox_denials,
)

__version__ = "0.1.0"

__all__ = [
    "ConfigSyntaxError",
    "ProviderError",
    "RuleApiPermissionError",
    "RuleFileNotFoundError",
    "RuleModuleNotFoundError",
    "RulePermissionError",
    "RuleSocketConnectionRefusedError",
    "RuleSyntaxError",
    "SandBoxError",
    "__version__",
    "sandbox_denials",
]
