"""The built-in template: what ``pysandboxes init`` writes and what a missing file means."""

from __future__ import annotations

import os

from .provider_keys import PROVIDERS

LEARNING_BLOCKS = ("envs", "files", "socket", "import", "api", "eval")
_PLACEHOLDER = "@DEFAULT_OS_SANDBOX@"


_TEXT: list[str] = []


def _raw_template() -> str:
    if not _TEXT:
        path = os.path.join(os.path.dirname(__file__), "py-sandboxes.template")
        with open(path, encoding="utf-8") as f:
            _TEXT.append(f.read())
    return _TEXT[0]


def render_template(default_os_sandbox: str) -> str:
    """The template text with ``os-sandbox=${OS_SANDBOX:-<default_os_sandbox>}``."""
    if default_os_sandbox not in PROVIDERS:
        raise ValueError(f"unknown provider {default_os_sandbox!r}")
    return _raw_template().replace(_PLACEHOLDER, default_os_sandbox)
