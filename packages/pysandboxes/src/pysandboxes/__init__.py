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
    denial_text,
    sandbox_denials,
)

__version__ = "0.1.0"

_LAZY = {
    "sandbox": "api",
    "sandboxes": "api",
    "run": "api",
    "is_in_sandbox": "api",
    "SandBoxProtocolError": "errors",
    "SandBoxRemoteError": "errors",
    "SandBoxBaseExceptionError": "errors",
    "SandBoxTimeoutError": "errors",
    "SandBoxResourceError": "errors",
    "SandBoxMemoryError": "errors",
    "SandBoxCPUTimeError": "errors",
    "RestrictedUnpicklingError": "errors",
    "EvalSyntaxRejected": "errors",
    "EvalInterrupted": "errors",
    "guarded_eval": "evaluation",
    "load_dotenv": "_dotenv",
}


def __getattr__(name: str) -> object:
    """Partial mode's names load on first use: ``python-sb`` never pays for them."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pysandboxes' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{module}", __name__), name)


__all__ = [
    "ConfigSyntaxError",
    "EvalInterrupted",
    "EvalSyntaxRejected",
    "ProviderError",
    "RestrictedUnpicklingError",
    "RuleApiPermissionError",
    "RuleFileNotFoundError",
    "RuleModuleNotFoundError",
    "RulePermissionError",
    "RuleSocketConnectionRefusedError",
    "RuleSyntaxError",
    "SandBoxBaseExceptionError",
    "SandBoxCPUTimeError",
    "SandBoxError",
    "SandBoxMemoryError",
    "SandBoxProtocolError",
    "SandBoxRemoteError",
    "SandBoxResourceError",
    "SandBoxTimeoutError",
    "__version__",
    "denial_text",
    "guarded_eval",
    "is_in_sandbox",
    "load_dotenv",
    "run",
    "sandbox",
    "sandbox_denials",
    "sandboxes",
]
