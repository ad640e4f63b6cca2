"""The project every adapter is tested in: a rule file, files, two loopback servers, and the
same tool bodies made tools twice, by the adapter and by the plain framework.

Layout (under a temporary directory)::

    .py-sandboxes                 expose-ro=./data, one loopback port, python-import=colorsys
    data/allowed.txt              readable under the rules
    secret/key.txt                not covered by any rule
    conformance_<name>_tools.py   the bodies, made tools by the adapter
    conformance_<name>_plain.py   the same bodies, made tools by the framework alone
    home/                         HOME of every process the suite starts
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import textwrap
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ._harness import Harness

#: the provider the suite runs under (landlock: the default of the rule-file template); override
#: with PYSANDBOXES_CONFORMANCE_PROVIDER to run the suite under another one
PROVIDER = os.environ.get("PYSANDBOXES_CONFORMANCE_PROVIDER", "landlock")
#: the module the rules allow, and the one they do not (neither is imported by a framework)
ALLOWED_MODULE = "colorsys"
REFUSED_MODULE = "ftplib"
ALLOWED_TEXT = "allowed content\n"
SECRET_TEXT = "secret content\n"

#: the tools every adapter makes, with their bodies below
TOOLS = (
    "add",
    "pid",
    "async_pid",
    "read_text",
    "read_text_or_raise",
    "fetch_port",
    "load_module",
    "fail",
    "context_default",
    "context_host",
)

# Tokens: @SANDBOXED_RAISE, @SANDBOXED, @HOST (the harness's decorator lines), @SANDBOX_BODY
# (@sandbox, or nothing in the plain module), CTX_NAME / CTX_TYPE (the context parameter).
_BODIES = '''
@SANDBOXED
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@SANDBOXED
def pid() -> int:
    """The id of the process the tool's body runs in."""
    return _os.getpid()


@SANDBOXED
async def async_pid(delay: float = 0.0) -> int:
    """The id of the process the async tool's body runs in."""
    await _asyncio.sleep(delay)
    return _os.getpid()


@SANDBOXED
def read_text(path: str) -> str:
    """Read a UTF-8 text file."""
    with open(path, encoding="utf-8") as f:
        return f.read()


@SANDBOXED_RAISE
def read_text_or_raise(path: str) -> str:
    """Read a UTF-8 text file; a refusal is left to the framework."""
    with open(path, encoding="utf-8") as f:
        return f.read()


@SANDBOXED
def fetch_port(port: int) -> str:
    """Connect to 127.0.0.1:port and return what the server sends."""
    with _socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        return connection.recv(200).decode()


@SANDBOXED
def load_module(name: str) -> str:
    """Import a module by name and return its name."""
    return _importlib.import_module(name).__name__


@SANDBOXED
def fail(message: str) -> str:
    """Raise ValueError(message)."""
    raise ValueError(message)


@SANDBOXED
def context_default(CTX_DEFAULT_PARAMETERS) -> str:
    """Echo the text and say whether the framework's context reached the body."""
    seen = "none" if CTX_NAME is None else type(CTX_NAME).__name__
    return f"{text} context={seen} pid={_os.getpid()}"


@SANDBOX_BODY
def _body_pid(text: str) -> str:
    return f"{text} body={_os.getpid()}"


@HOST
def context_host(CTX_HOST_PARAMETERS) -> str:
    """Use the framework's context on the host; pass plain values to the sandboxed body."""
    return f"context={type(CTX_NAME).__name__} host={_os.getpid()} " + _body_pid(text)
'''


def tools_source(harness: Harness, *, plain: bool) -> str:
    """The tools module's source: the bodies above, made tools by the adapter or the framework."""
    name, annotation = harness.context
    body = _BODIES
    if harness.context_first:  # the context first, always passed: no default
        defaulted = host = "CTX_NAME: CTX_TYPE, text: str"
    else:
        defaulted, host = "text: str, CTX_NAME: CTX_TYPE = None", "text: str, CTX_NAME: CTX_TYPE"
    for token, value in (
        ("CTX_DEFAULT_PARAMETERS", defaulted),
        ("CTX_HOST_PARAMETERS", host),
        ("@SANDBOXED_RAISE", harness.plain if plain else harness.sandboxed_raise),
        ("@SANDBOXED", harness.plain if plain else harness.sandboxed),
        ("@HOST", harness.plain if plain else harness.host),
        ("@SANDBOX_BODY\n", "" if plain else "@sandbox\n"),
        ("CTX_NAME", name),
        ("CTX_TYPE", annotation),
    ):
        body = body.replace(token, value)
    header = textwrap.dedent(harness.plain_header if plain else harness.sandboxed_header).strip()
    kind = "the plain framework" if plain else f"pysandboxes-{harness.name}"
    # imported at the top, as the application's modules are: before the rules apply
    imports = "import asyncio as _asyncio\nimport importlib as _importlib\nimport os as _os\nimport socket as _socket\n"
    imports += "" if plain else "from pysandboxes import sandbox\n"
    return (
        f'"""Generated by pysandboxes_conformance: the conformance tools, made by {kind}."""\n\n'
        f"from __future__ import annotations\n\n{imports}\n{header}\n\n{body}"
    )


def module_name(harness: Harness, kind: str) -> str:
    return f"conformance_{harness.name.replace('-', '_')}_{kind}"


class LoopbackServer:
    """A TCP server on 127.0.0.1 that sends one line to whoever connects, then hangs up."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.socket.getsockname()[1]
        self.greeting = f"hello from {self.port}"
        self._thread = threading.Thread(target=self._serve, name=f"loopback-{self.port}", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:  # closed: the suite is done
                return
            with connection, contextlib.suppress(OSError):
                connection.sendall(self.greeting.encode())

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.socket.shutdown(socket.SHUT_RDWR)
        self.socket.close()
        self._thread.join(timeout=10)


@dataclass
class Project:
    """A written project (see the module docstring) and its two servers."""

    root: Path
    harness: Harness
    allowed: LoopbackServer
    refused: LoopbackServer

    @property
    def rule_file(self) -> Path:
        return self.root / ".py-sandboxes"

    @property
    def allowed_file(self) -> str:
        return str(self.root / "data" / "allowed.txt")

    @property
    def secret_file(self) -> str:
        return str(self.root / "secret" / "key.txt")

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def tools_module(self) -> str:
        return module_name(self.harness, "tools")

    @property
    def plain_module(self) -> str:
        return module_name(self.harness, "plain")

    def environ(self, **extra: str) -> dict[str, str]:
        """The environment of a process the suite starts: HOME in the project, telemetry off."""
        return {
            "HOME": str(self.home),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "PYTHONPATH": str(self.root),
            **self.harness.environment,
            **extra,
        }

    def write(self, name: str, text: str) -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path


@contextlib.contextmanager
def project(root: Path, harness: Harness) -> Iterator[Project]:
    """Write the project under ``root``, start its servers, and put it on ``sys.path`` (for good)."""
    allowed, refused = LoopbackServer(), LoopbackServer()
    made = Project(root, harness, allowed, refused)
    try:
        made.home.mkdir(parents=True, exist_ok=True)
        made.write("data/allowed.txt", ALLOWED_TEXT)
        made.write("secret/key.txt", SECRET_TEXT)
        made.write(
            ".py-sandboxes",
            f"os-sandbox={PROVIDER}\n"
            "expose-ro=./data\n"
            f"net=ALLOW|tcp|127.0.0.1|{allowed.port}|OUT\n"
            f"python-import={ALLOWED_MODULE}\n",
        )
        made.write(f"{made.tools_module}.py", tools_source(harness, plain=False))
        made.write(f"{made.plain_module}.py", tools_source(harness, plain=True))
        # left on sys.path: the sandbox's registry keeps the tools for the process, and every
        # sandbox child started later (by any test) imports their module again
        sys.path.insert(0, str(root))
        yield made
    finally:
        allowed.close()
        refused.close()
