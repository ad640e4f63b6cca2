"""pytest fixtures of every sample's suite (a pytest plugin of this package)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .testing import PageServer, ScriptedChatServer


@pytest.fixture(scope="session")
def pages() -> Iterator[PageServer]:
    """The loopback page server (an allowed port and ``other_port``)."""
    with PageServer() as server:
        yield server


@pytest.fixture(scope="session")
def page_env(pages: PageServer) -> Iterator[PageServer]:
    """``pages``, with ``PAGE_HOST``/``PAGE_PORT`` set in this process's environment (the
    samples' ``net=`` rule for pages reads them when a test opens the sandbox in-process)."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in pages.env().items():
            patch.setenv(name, value)
        yield pages


@pytest.fixture
def chat_server() -> Iterator[ScriptedChatServer]:
    """A scripted chat-completions server on loopback; set ``chat_server.script`` first."""
    with ScriptedChatServer() as server:
        yield server


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A temporary HOME for the processes a test starts (frameworks write there)."""
    path = tmp_path / "home"
    path.mkdir()
    return path
