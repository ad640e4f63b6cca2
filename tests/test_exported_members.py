"""The public API: every name in ``pysandboxes.__all__`` resolves, and the list is pinned, so a
name is never added or dropped by accident."""

from __future__ import annotations

import pysandboxes

PUBLIC = {
    *("ConfigSyntaxError", "EvalInterrupted", "EvalSyntaxRejected", "ProviderError"),
    *("RestrictedUnpicklingError", "RuleApiPermissionError", "RuleFileNotFoundError"),
    *("RuleModuleNotFoundError", "RulePermissionError", "RuleSocketConnectionRefusedError"),
    *("RuleSyntaxError", "SandBoxBaseExceptionError", "SandBoxCPUTimeError", "SandBoxError"),
    *("SandBoxMemoryError", "SandBoxProtocolError", "SandBoxRemoteError", "SandBoxResourceError"),
    *(
        "SandBoxTimeoutError",
        "__version__",
        "denial_text",
        "guarded_eval",
        "is_in_sandbox",
        "load_dotenv",
        "run",
    ),
    *("sandbox", "sandbox_denials", "sandboxes"),
}


def test_all_is_the_pinned_public_api() -> None:
    assert set(pysandboxes.__all__) == PUBLIC


def test_every_public_name_resolves() -> None:
    for name in pysandboxes.__all__:
        assert getattr(pysandboxes, name) is not None, name
