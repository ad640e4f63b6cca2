"""What every sample's tests share: two loopback servers and the checks of the eight-point suite.

- :class:`PageServer`: HTML pages on 127.0.0.1 (one port the rules allow, ``other_url`` on a
  second port no rule allows), a redirect, a long page. The tests never reach the internet.
- :class:`ScriptedChatServer`: an OpenAI-compatible ``/v1/chat/completions`` endpoint on
  127.0.0.1 (streaming and not) whose answers each test scripts (:func:`tool_calls`,
  :func:`reply`), recording what the model was sent: the real provider client, its HTTP path
  and the ``net=`` rule of the model endpoint are exercised, with no key.
- :func:`profile_problems`, :func:`plain_python`, :func:`run_python_sb`, :func:`sample_env`.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = [
    "DONE",
    "ESCAPE",
    "ESCAPE_SETUP",
    "HINT",
    "SANE",
    "TELEMETRY_OFF",
    "PageServer",
    "ScriptedChatServer",
    "Step",
    "assert_confined_turn",
    "assert_escape_runs_unsandboxed",
    "confined_turn_script",
    "plain_python",
    "profile_problems",
    "refusal",
    "reply",
    "run_python_sb",
    "sample_env",
    "tool_calls",
]

#: the sane expression of every suite and learn.py
SANE = "2*(3+4)"
#: the classic escape of an ``eval`` with no builtins: walk the class graph to ``Popen``
ESCAPE = (
    "[c for c in ().__class__.__bases__[0].__subclasses__() if c.__name__ == 'Popen'][0]"
    "(['echo', 'escaped'], stdout=-1).communicate()[0]"
)
#: what makes ``Popen`` one of ``object``'s subclasses: any module of the process importing
#: ``subprocess`` (most frameworks do, for their own needs); the negative control imports it
ESCAPE_SETUP = "import subprocess"

#: the developer's hint of a refusal ("Add `...` to the rule file to allow it."): never the model's
HINT = "to the rule file"
#: the scripted model's final answer in the confined turn
DONE = "done"

#: every telemetry switch of the samples' frameworks, off
TELEMETRY_OFF = {
    "OTEL_SDK_DISABLED": "true",
    "ANONYMIZED_TELEMETRY": "false",
    "CREWAI_DISABLE_TELEMETRY": "true",
    "AGNO_TELEMETRY": "false",
    "OPENAI_AGENTS_DISABLE_TRACING": "1",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGSMITH_TRACING": "false",
    "DO_NOT_TRACK": "1",
}


# -- the page server ----------------------------------------------------------------------------

PAGES = {
    "/": "<html><head><title>Sample home</title><style>p {}</style></head><body>"
    "<h1>Sample home</h1><p>Read <a href='/article'>the article</a>.</p></body></html>",
    "/article": "<html><head><title>Sandboxed pages</title></head><body><h1>Sandboxed pages</h1>"
    "<p>The <b>allowed page</b> was fetched through the sandbox.</p><ul><li>one</li><li>two</li></ul>"
    "</body></html>",
    "/long": "<html><body>" + "<p>" + "word " * 4000 + "</p></body></html>",
}


class _PageHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/article")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        page = PAGES.get(self.path)
        body = (page or "<html><body>not found</body></html>").encode()
        self.send_response(200 if page else 404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # a test's server on a fixed loopback address; never another host
    allow_reuse_address = False


@contextlib.contextmanager
def _serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[_Server]:
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="samples-server", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class PageServer:
    """Pages on 127.0.0.1:``port`` (``/``, ``/article``, ``/redirect`` to it, ``/long``) and the
    same pages on ``other_port``, which no rule of the samples allows."""

    host = "127.0.0.1"

    def __init__(self) -> None:
        self._stack = contextlib.ExitStack()
        self.port = 0
        self.other_port = 0

    def __enter__(self) -> PageServer:
        self.port = self._stack.enter_context(_serving(_PageHandler)).server_address[1]
        self.other_port = self._stack.enter_context(_serving(_PageHandler)).server_address[1]
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def url(self, path: str = "/article") -> str:
        return f"http://{self.host}:{self.port}{path}"

    def other_url(self, path: str = "/article") -> str:
        return f"http://{self.host}:{self.other_port}{path}"

    def env(self) -> dict[str, str]:
        """The variables the samples' ``net=`` rule for pages reads."""
        return {"PAGE_HOST": self.host, "PAGE_PORT": str(self.port)}


# -- the scripted chat-completions server -----------------------------------------------------


@dataclass
class Step:
    """One answer of the scripted model: tool calls (name, arguments), or a text."""

    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    text: str | None = None


def tool_calls(*calls: tuple[str, Mapping[str, Any]]) -> Step:
    """An answer calling these tools, in one assistant message."""
    return Step(calls=[(name, dict(arguments)) for name, arguments in calls])


def reply(text: str) -> Step:
    """A final text answer."""
    return Step(text=text)


class ScriptedChatServer:
    """``POST /v1/chat/completions`` on 127.0.0.1: each request gets the next :class:`Step` of
    :attr:`script` (``"(end of script)"`` once it is used up); :attr:`requests` holds each
    request's JSON body, in order."""

    host = "127.0.0.1"
    model = "scripted-model"

    def __init__(self, script: Sequence[Step] = ()) -> None:
        self.script: list[Step] = list(script)
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._stack = contextlib.ExitStack()
        self.port = 0

    def __enter__(self) -> ScriptedChatServer:
        owner = self

        class Handler(_ChatHandler):
            server_owner = owner

        self.port = self._stack.enter_context(_serving(Handler)).server_address[1]
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def env(self) -> dict[str, str]:
        """What a sample needs to talk to this server: the OpenAI client's variables and the
        ones its ``net=`` rule for the model endpoint reads."""
        return {
            "CHAT_MODEL": f"openai:{self.model}",
            "OPENAI_API_KEY": "sk-scripted-not-a-key",
            "OPENAI_BASE_URL": self.base_url,
            "MODEL_HOST": self.host,
            "MODEL_PORT": str(self.port),
        }

    def next_step(self, body: dict[str, Any]) -> tuple[Step, int]:
        with self._lock:
            self.requests.append(body)
            step = self.script.pop(0) if self.script else reply("(end of script)")
            return step, next(self._ids)

    def tool_messages(self) -> list[str]:
        """The content of every ``tool`` message the model was sent (the last request holds the
        whole conversation)."""
        with self._lock:
            if not self.requests:
                return []
            messages = self.requests[-1].get("messages", [])
        return [_text(m.get("content")) for m in messages if m.get("role") == "tool"]


def _text(content: Any) -> str:
    if isinstance(content, list):  # content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


class _ChatHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_owner: ScriptedChatServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        owner = self.server_owner
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": owner.model, "object": "model"}]})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._json(404, {"error": {"message": f"no route {self.path}"}})
            return
        step, number = self.server_owner.next_step(body)
        model = body.get("model", self.server_owner.model)
        calls = [
            {
                "id": f"call_{number}_{index}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            for index, (name, arguments) in enumerate(step.calls)
        ]
        finish = "tool_calls" if calls else "stop"
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        base = {"id": f"chatcmpl-{number}", "created": 1_700_000_000, "model": model}
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": step.text}
            if calls:
                message["tool_calls"] = calls
            self._json(
                200,
                {
                    **base,
                    "object": "chat.completion",
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": usage,
                },
            )
            return
        chunk = {**base, "object": "chat.completion.chunk"}
        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": "" if calls else step.text}]
        deltas += [{"tool_calls": [{"index": index, **call}]} for index, call in enumerate(calls)]
        events = [{**chunk, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
        events.append({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append({**chunk, "choices": [], "usage": usage})
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for event in events:
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


# -- the chat's confined turn (the chat entry point, partial and complete mode) ----------------


def confined_turn_script(pages: PageServer) -> list[Step]:
    """One turn in which the model calls the three tools: the sane expression, the allowed page
    (through the redirect), another loopback port, the eval escape and a document, in one answer;
    then :data:`DONE`."""
    return [
        tool_calls(
            ("evaluate_expression", {"expression": SANE}),
            ("fetch_webpage", {"url": pages.url("/redirect")}),
            ("fetch_webpage", {"url": pages.other_url()}),
            ("evaluate_expression", {"expression": ESCAPE}),
            ("read_document", {"name": "notes.txt"}),
        ),
        reply(DONE),
    ]


def assert_confined_turn(stdout: str, chat: ScriptedChatServer, *, prompt: str = "assistant> ") -> None:
    """The turn of :func:`confined_turn_script` ran (the chat printed :data:`DONE`), and the model
    read 14, the page, the two refusals as text (each naming its rule, none with the hint) and
    the document, in the order it called them."""
    assert f"{prompt}{DONE}" in stdout, stdout
    told = chat.tool_messages()
    assert len(told) == 5, told
    sane, page, port, escape, document = told
    assert "14" in sane
    assert "# Sandboxed pages" in page
    assert "DENIED" in port
    assert "EvalSyntaxRejected" in escape
    assert "Quarterly notes" in document
    assert HINT not in port + escape


# -- checks -----------------------------------------------------------------------------------


def refusal(call: Any, /, *args: Any, **kwargs: Any) -> str:
    """``call(*args, **kwargs)`` must raise a refusal of the sandbox: its denials, as
    ``sandbox_denials`` gives them, one a line."""
    from pysandboxes import sandbox_denials

    try:
        call(*args, **kwargs)
    except Exception as exc:
        denials = sandbox_denials(exc)
        assert denials, f"not a sandbox refusal: {exc!r}"
        return "\n".join(denials)
    raise AssertionError(f"{call!r} was not refused")


def assert_escape_runs_unsandboxed(home: Path) -> None:
    """The negative control: the eval escape of the shared calculator succeeds under plain
    python, in a process of its own."""
    code = (
        f"{ESCAPE_SETUP}\nfrom samples_shared.tools import evaluate_expression\n"
        f"print(evaluate_expression({ESCAPE!r}))"
    )
    result = plain_python(code, env=sample_env(home))
    assert result.returncode == 0, result.stderr
    assert "b'escaped\\n'" in result.stdout


def profile_problems(path: Path) -> list[str]:
    """The active lines of a shipped profile that would make it broad: ``python-import=*``,
    ``learn=``, ``python-api=ALLOW:process-exec`` or ``ALLOW:*``, ``expose-*=/dev`` or ``/``,
    ``expose-*=.`` (the sample's directory, which holds ``.env``)."""
    problems = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split("#", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if not line or "=" not in line:
            continue
        key, value = (part.strip() for part in line.split("=", 1))
        values = [v.strip() for v in value.split(",")]
        bad = (
            (key == "python-import" and "*" in values)
            or key == "learn"
            or (key == "python-api" and any(v in ("ALLOW:process-exec", "ALLOW:*") for v in values))
            or (key.startswith("expose-") and value.rstrip("/") in ("", ".", "./", "/dev", "~", "${HOME}"))
        )
        if bad:
            problems.append(f"{path.name}:{number}: {raw.strip()}")
    return problems


def sample_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a sample run by a test: PATH and LANG of the host, HOME a temporary
    directory, telemetry off, no provider key or base URL of the host, then ``extra``."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "HOME": str(home),
        "PYTHON_DOTENV_DISABLED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        **TELEMETRY_OFF,
    }
    for name in ("OS_SANDBOX", "TMPDIR"):
        if name in os.environ:
            env[name] = os.environ[name]
    env.update(extra)
    return env


def plain_python(
    code: str, *, env: Mapping[str, str], cwd: Path | None = None, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``code`` run by this environment's plain ``python`` (no ``python-sb``), in a fresh
    process (an armed sandbox of the test process would decide otherwise)."""
    return subprocess.run(
        [sys.executable, "-c", code],
        env=dict(env),
        cwd=cwd,
        input=input,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def run_python_sb(
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | None = None,
    input: str | None = None,
    timeout: float = 180,
) -> subprocess.CompletedProcess[str]:
    """``python-sb ARGS`` of this environment (complete mode), standard input ``input``."""
    python_sb = Path(sys.executable).with_name("python-sb")
    return subprocess.run(
        [str(python_sb), *args],
        env=dict(env),
        cwd=cwd,
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
