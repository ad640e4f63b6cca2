"""``@sandboxed_tool(server)`` and friends: the MCP server's decorators, with the body sandboxed.

Each decorator takes the arguments of the server's own (``server.tool(...)``,
``server.resource(uri, ...)``, ``server.prompt(...)``) plus ``on_denial=`` and ``timeout=``, and
registers the host wrapper that ``pysandboxes.tools.sandboxed`` makes: the schema the client gets
is the plain tool's, a ``Context`` parameter stays on the host, and a refusal reaches the client
as the tool's error text (an ``isError`` result), through the SDK's own ``ToolError``.
"""

from __future__ import annotations

import contextlib
import typing
from typing import TYPE_CHECKING, Any

from pysandboxes.tools import Framework, caller_module, hosted, sandboxed, sandboxes_for

from . import _sdk

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

__all__ = [
    "FRAMEWORK",
    "host_tool",
    "sandbox_lifespan",
    "sandboxed_prompt",
    "sandboxed_resource",
    "sandboxed_tool",
]


def _is_context(name: str, annotation: Any) -> bool:
    """``Context``, ``Context[...]``, ``Context | None``: what the SDK fills in (as its
    ``find_context_parameter`` does)."""
    candidates = (annotation, typing.get_origin(annotation), *typing.get_args(annotation))
    return any(isinstance(c, type) and issubclass(c, _sdk.Context) for c in candidates)


def _tool_error(text: str, exc: BaseException) -> Any:
    raise _sdk.ToolError(text) from exc


def _resource_error(text: str, exc: BaseException) -> Any:
    raise _sdk.ResourceError(text) from exc


def _prompt_error(text: str, exc: BaseException) -> Any:
    # mcp 2 hides any other exception of a prompt behind "Error rendering prompt"
    raise _sdk.request_error(text) from exc


_LIFECYCLE = f"{_sdk.SERVER_CLASS}(..., lifespan=sandbox_lifespan())"


def _on_denial(on_denial: str) -> str:
    """What a refusal does: under mcp 1.x, whose server sends the client every exception's
    message, ``"raise"`` would hand the client the refusal's hint; the first line goes instead
    (the client reads an error either way; an MCP server has no run to stop)."""
    if on_denial == "raise" and not _sdk.HIDES_UNEXPECTED_ERRORS:
        return "text"
    return on_denial


#: how the tools of an MCP server meet the sandbox
FRAMEWORK = Framework(
    "mcp",
    decorator="@sandboxed_tool(server)",
    refusal=_tool_error,
    is_context=_is_context,
    host_decorator="@host_tool(server)",
    lifecycle=_LIFECYCLE,
)
_RESOURCE = Framework(
    "mcp",
    decorator="@sandboxed_resource(server, uri)",
    refusal=_resource_error,
    is_context=_is_context,
    lifecycle=_LIFECYCLE,
)
_PROMPT = Framework(
    "mcp",
    decorator="@sandboxed_prompt(server)",
    refusal=_prompt_error,
    is_context=_is_context,
    lifecycle=_LIFECYCLE,
)


def sandboxed_tool(
    server: _sdk.MCPServer[Any], *, on_denial: str = "text", timeout: float | None = None, **tool_kwargs: Any
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``@server.tool(**tool_kwargs)`` whose body runs in the sandbox.

    ``on_denial="text"``: a refusal is the tool's error text (``RuleFileNotFoundError: Access to
    '/etc/shadow' must be accepted by a rule.``, without the hint); ``"raise"``: the SDK's handling
    of an unexpected exception (mcp 2: the client reads only ``Error executing tool NAME``; mcp 1
    sends every exception's message, so there the first line goes, as with ``"text"``).
    ``timeout``: seconds a call may take (as ``@sandbox(timeout=)``).
    """
    _check_server(server, "sandboxed_tool")

    def decorator(function: Callable[..., Any]) -> Callable[..., Any]:
        wrapper = sandboxed(function, FRAMEWORK, on_denial=_on_denial(on_denial), timeout=timeout)
        _add_tool(server, wrapper, tool_kwargs, "@sandboxed_tool(server)")
        return wrapper

    return decorator


def host_tool(
    server: _sdk.MCPServer[Any], *, on_denial: str = "text", **tool_kwargs: Any
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``@server.tool(**tool_kwargs)`` for a tool that runs **on the host** (it may use its
    ``ctx: Context``: logging, progress, sampling) and calls ``@sandbox`` functions with plain
    values: the sandbox is open for them, and their refusals reach the client as text."""
    _check_server(server, "host_tool")

    def decorator(function: Callable[..., Any]) -> Callable[..., Any]:
        wrapper = hosted(function, FRAMEWORK, on_denial=_on_denial(on_denial))
        _add_tool(server, wrapper, tool_kwargs, "@host_tool(server)")
        return wrapper

    return decorator


def sandboxed_resource(
    server: _sdk.MCPServer[Any],
    uri: str,
    *,
    on_denial: str = "text",
    timeout: float | None = None,
    **resource_kwargs: Any,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``@server.resource(uri, **resource_kwargs)`` whose body runs in the sandbox; a refusal is
    the read's error message (a ``ResourceError``)."""
    _check_server(server, "sandboxed_resource")

    def decorator(function: Callable[..., Any]) -> Callable[..., Any]:
        wrapper = sandboxed(function, _RESOURCE, on_denial=_on_denial(on_denial), timeout=timeout)
        server.resource(uri, **resource_kwargs)(wrapper)
        return wrapper

    return decorator


def sandboxed_prompt(
    server: _sdk.MCPServer[Any],
    *,
    on_denial: str = "text",
    timeout: float | None = None,
    **prompt_kwargs: Any,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``@server.prompt(**prompt_kwargs)`` whose body runs in the sandbox; a refusal is the
    request's error message."""
    _check_server(server, "sandboxed_prompt")

    def decorator(function: Callable[..., Any]) -> Callable[..., Any]:
        wrapper = sandboxed(function, _PROMPT, on_denial=_on_denial(on_denial), timeout=timeout)
        server.prompt(**prompt_kwargs)(wrapper)
        return wrapper

    return decorator


def sandbox_lifespan(
    lifespan: Callable[[Any], contextlib.AbstractAsyncContextManager[Any]] | None = None,
    *,
    init_fn: Callable[[], Any] | None = None,
    sandboxes_config: str | None = None,
    **settings: Any,
) -> Callable[[Any], contextlib.AbstractAsyncContextManager[Any]]:
    """A server lifespan that opens the sandbox once, for as long as the server runs:
    ``MCPServer(name, lifespan=sandbox_lifespan())`` (mcp 1.x: ``FastMCP(name, ...)``).

    ``lifespan``: the application's own lifespan, entered inside the sandbox's (its value is
    the server's lifespan state). ``init_fn``, ``sandboxes_config`` and ``**settings``
    (``learn=``, ``envs=``, rules such as ``expose_ro="./data"``) are ``sandboxes()``'s; the
    default rule file is the one next to the module that calls ``sandbox_lifespan()``. The
    environment the sandbox sees is read when the server starts, so a ``load_dotenv()`` in the
    entry point, before ``server.run()``, is taken into account.
    """
    module = caller_module()

    @contextlib.asynccontextmanager
    async def sandboxed_lifespan(server: Any) -> AsyncIterator[Any]:
        async with sandboxes_for(module, init_fn, sandboxes_config, **settings):
            if lifespan is None:
                yield {}
            else:
                async with lifespan(server) as state:
                    yield state

    return sandboxed_lifespan


def _check_server(server: object, decorator: str) -> None:
    if not isinstance(server, _sdk.MCPServer):
        raise TypeError(
            f"@{decorator}(server, ...) takes the {_sdk.SERVER_CLASS} the tool belongs to first, "
            f"not {type(server).__name__}: write @{decorator}(server)"
        )


def _add_tool(server: _sdk.MCPServer[Any], wrapper: Any, tool_kwargs: dict[str, Any], decorator: str) -> None:
    name = tool_kwargs.get("name") or wrapper.__name__
    manager = _sdk.tool_manager(server)
    if manager is not None and manager.get_tool(name) is not None:
        # the SDK would keep the first one (an unsandboxed @server.tool() under ours) and warn
        raise TypeError(
            f"{decorator}: the server already has a tool named {name!r} (is @server.tool() under "
            f"{decorator}? it registers the function unsandboxed): use {decorator} alone"
        )
    server.tool(**tool_kwargs)(wrapper)
