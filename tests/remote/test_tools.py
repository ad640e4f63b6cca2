"""``pysandboxes.tools``: what an adapter builds on, tested with a framework of the test's own.

``toy.py`` is a minimal agent framework: ``@toy.tool`` registers a function, ``toy.call(name,
**arguments)`` calls it as a framework does (by keyword, injecting a ``toy.Context`` where the
signature asks for one) and returns what the model would read. ``toyadapter.py`` is its adapter,
written as the real ones are: one ``Framework`` description and two decorators.
"""

from __future__ import annotations

import pytest

from .conftest import Project

TOY = """
    import inspect


    class Context:
        '''What the framework gives a tool that asks for it.'''


    class ToolFailed(Exception):
        '''The framework's tool-error path: its message is what the model reads.'''


    TOOLS = {}


    def tool(function):
        TOOLS[function.__name__] = function
        return function


    def call(name, **arguments):
        function = TOOLS[name]
        for parameter in inspect.signature(function).parameters.values():
            if parameter.annotation is Context:
                arguments[parameter.name] = Context()
        try:
            return function(**arguments)
        except ToolFailed as exc:
            return f"tool error: {exc}"
"""

ADAPTER = """
    import toy
    from pysandboxes.tools import Framework, hosted, sandboxed


    def refusal(text, exc):
        raise toy.ToolFailed(text) from exc


    FRAMEWORK = Framework(
        "toy",
        decorator="@sandboxed_tool",
        refusal=refusal,
        is_context=lambda name, annotation: annotation is toy.Context or name == "agent",
        host_decorator="@host_tool",
        lifecycle="toy.run()",
    )


    def sandboxed_tool(function=None, *, on_denial="text"):
        def decorate(function):
            return toy.tool(sandboxed(function, FRAMEWORK, on_denial=on_denial))

        return decorate if function is None else decorate(function)


    def host_tool(function):
        return toy.tool(hosted(function, FRAMEWORK))
"""

TOOLS = """
    from __future__ import annotations

    import os

    import toy
    from pysandboxes import sandbox
    from toyadapter import host_tool, sandboxed_tool


    @sandboxed_tool
    def pid(label: str = "") -> int:
        '''The process the body runs in.'''
        return os.getpid()


    @sandboxed_tool
    async def apid(delay: float = 0.0) -> int:
        '''The process an async body runs in.'''
        return os.getpid()


    @sandboxed_tool
    def read(path: str) -> str:
        '''Read a file.'''
        with open(path) as f:
            return f.read()


    @sandboxed_tool(on_denial="raise")
    def read_or_raise(path: str) -> str:
        '''Read a file; refusals are left to the framework.'''
        with open(path) as f:
            return f.read()


    @sandboxed_tool
    def fail(message: str) -> str:
        '''Raise ValueError.'''
        raise ValueError(message)


    @sandboxed_tool
    def with_context(text: str, ctx: toy.Context = None) -> str:
        '''What the body gets of the context.'''
        return f"{text} ctx={ctx!r} pid={os.getpid()}"


    @sandboxed_tool
    @sandbox
    def boxed_first(label: str = "") -> int:
        '''@sandbox under the adapter: the same body, registered once.'''
        return os.getpid()


    @sandbox
    def _read(path: str) -> str:
        with open(path) as f:
            return f.read()


    @host_tool
    def read_on_host(path: str, ctx: toy.Context) -> str:
        '''Uses the context on the host; the file is read in the sandbox.'''
        return f"{type(ctx).__name__} {os.getpid()} {_read(path)}"
"""


@pytest.fixture
def toy(project: Project) -> Project:
    """The toy framework, its adapter, its tools and a rule file that exposes ``data/``."""
    project.rules("landlock", "expose-ro=./data")
    project.write("toy.py", TOY)
    project.write("toyadapter.py", ADAPTER)
    project.tools(TOOLS)
    project.write("data/allowed.txt", "allowed")
    project.write("secret.txt", "s3cret")
    return project


def test_the_wrapper_has_the_bodys_name_doc_signature_and_resolved_hints(toy: Project) -> None:
    toy.host(
        """
        import inspect, typing
        import toy, tools

        for name in ("pid", "apid", "with_context"):
            wrapper = toy.TOOLS[name]
            print(wrapper.__name__, wrapper.__qualname__, wrapper.__module__, wrapper.__doc__)
            print(" ", inspect.signature(wrapper), typing.get_type_hints(wrapper))
            print(" ", inspect.iscoroutinefunction(wrapper), hasattr(wrapper, "__wrapped__"))
        """
    )
    assert toy.ok() == [
        "pid pid tools The process the body runs in.",
        "  (label: str = '') -> int {'label': <class 'str'>, 'return': <class 'int'>}",
        "  False False",
        "apid apid tools The process an async body runs in.",
        "  (delay: float = 0.0) -> int {'delay': <class 'float'>, 'return': <class 'int'>}",
        "  True False",
        "with_context with_context tools What the body gets of the context.",
        "  (text: str, ctx: toy.Context = None) -> str"
        " {'text': <class 'str'>, 'ctx': <class 'toy.Context'>, 'return': <class 'str'>}",
        "  False False",
    ]


def test_the_body_runs_in_the_open_sandboxes_child(toy: Project) -> None:
    toy.host(
        """
        import asyncio, logging, os, sys
        import toy, tools
        from pysandboxes import sandboxes

        logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="LOG %(message)s")
        with sandboxes():
            first, second = toy.call("pid"), toy.call("pid")
            print(first == second != os.getpid())
            print(asyncio.run(toy.TOOLS["apid"]()) == first)
        """
    )
    assert toy.ok() == ["True", "True"]  # no LOG line: the open block is used


def test_a_sandbox_function_made_a_tool_is_the_same_body(toy: Project) -> None:
    toy.host(
        """
        import inspect, os
        import toy, tools
        from pysandboxes import sandboxes

        with sandboxes():
            print(toy.call("boxed_first") == toy.call("pid") != os.getpid())
        print(inspect.signature(toy.TOOLS["boxed_first"]), hasattr(toy.TOOLS["boxed_first"], "__wrapped__"))
        """
    )
    assert toy.ok() == ["True", "(label: str = '') -> int False"]


def test_without_an_open_sandbox_the_first_call_opens_one_and_says_so(toy: Project) -> None:
    toy.host(
        """
        import logging, os, sys
        import toy, tools
        from pysandboxes import is_in_sandbox

        logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="LOG %(name)s %(message)s")
        first, second = toy.call("pid"), toy.call("pid")
        print(first == second != os.getpid(), is_in_sandbox())
        """
    )
    assert toy.ok() == [
        f"LOG Pysandboxes pysandboxes-toy: no sandbox was open for pid(): started one with "
        f"{toy.root}/.py-sandboxes (os-sandbox=landlock); it stays up until Python exits (open it "
        "once for the application with toy.run())",
        "True False",
    ]


def test_the_first_async_call_opens_the_sandbox_too(toy: Project) -> None:
    toy.host(
        """
        import asyncio, os
        import toy, tools

        print(asyncio.run(toy.TOOLS["apid"]()) != os.getpid())
        """
    )
    assert toy.ok() == ["True"]


def test_a_refusal_reaches_the_frameworks_error_path_without_the_hint(toy: Project) -> None:
    toy.host(
        """
        import logging, sys
        import toy, tools

        logging.basicConfig(stream=sys.stdout, format="LOG %(name)s %(message)s")
        print(toy.call("read", path="data/allowed.txt"))
        print(toy.call("read", path="secret.txt"))
        """
    )
    secret = toy.root / "secret.txt"
    assert toy.ok() == [
        "allowed",
        f"LOG Pysandboxes refused: RuleFileNotFoundError: Access to '{secret}' must be accepted by a rule.",
        f"Add `expose-ro={toy.root}` to the rule file to allow it.",
        f"tool error: RuleFileNotFoundError: Access to '{secret}' must be accepted by a rule.",
    ]


def test_an_async_refusal_reaches_the_error_path_too(toy: Project) -> None:
    toy.tools(
        TOOLS
        + """

    @sandboxed_tool
    async def aread(path: str) -> str:
        '''Read a file, async.'''
        with open(path) as f:
            return f.read()
    """
    )
    toy.host(
        """
        import asyncio
        import toy, tools

        try:
            asyncio.run(toy.TOOLS["aread"](path="secret.txt"))
        except toy.ToolFailed as exc:
            print(exc)
        """
    )
    lines = toy.run().lines
    assert lines == [f"RuleFileNotFoundError: Access to '{toy.root}/secret.txt' must be accepted by a rule."]


def test_on_denial_raise_leaves_the_refusal_to_the_framework(toy: Project) -> None:
    toy.host(
        """
        import toy, tools

        try:
            toy.call("read_or_raise", path="secret.txt")
        except FileNotFoundError as exc:
            print(type(exc).__name__, "Add `" in str(exc))
        """
    )
    assert toy.run().lines == ["RuleFileNotFoundError True"]


def test_other_exceptions_are_left_to_the_framework(toy: Project) -> None:
    toy.host(
        """
        import toy, tools

        try:
            toy.call("fail", message="no such page")
        except ValueError as exc:
            print(type(exc).__name__, exc)
        """
    )
    assert toy.ok() == ["ValueError no such page"]


def test_the_context_parameter_stays_on_the_host(toy: Project) -> None:
    toy.host(
        """
        import os
        import toy, tools

        for result in (toy.call("with_context", text="kw"), toy.TOOLS["with_context"]("pos", toy.Context())):
            text, _, pid = result.rpartition(" pid=")
            print(text, int(pid) != os.getpid())
        """
    )
    assert toy.ok() == ["kw ctx=None True", "pos ctx=None True"]


def test_arguments_after_a_context_passed_by_position_keep_their_places(toy: Project) -> None:
    # A regression test: a context passed by position moved every argument to its name, and
    # the values of *args (which have none) were dropped.
    toy.write(
        "more.py",
        """
        from toyadapter import sandboxed_tool
        import toy


        @sandboxed_tool
        def joined(ctx: toy.Context = None, /, sep: str = "+", *parts: str) -> str:
            '''Join the parts.'''
            return f"{sep.join(parts)} ctx={ctx!r}"


        @sandboxed_tool
        def tail(first: str, ctx: toy.Context = None) -> str:
            '''A trailing context.'''
            return f"{first} ctx={ctx!r}"
        """,
    )
    toy.host(
        """
        import toy, more

        print(toy.TOOLS["joined"](toy.Context(), "-", "a", "b", "c"))
        print(toy.TOOLS["joined"](toy.Context()))
        print(toy.TOOLS["tail"]("x", toy.Context()))
        """
    )
    assert toy.ok() == ["a-b-c ctx=None", " ctx=None", "x ctx=None"]


def test_a_host_tool_keeps_the_context_and_its_sandbox_calls_refusals_are_text(toy: Project) -> None:
    toy.host(
        """
        import os
        import toy, tools

        print(toy.call("read_on_host", path="data/allowed.txt") == f"Context {os.getpid()} allowed")
        print(toy.call("read_on_host", path="secret.txt"))
        """
    )
    assert toy.run().lines == [
        "True",
        f"tool error: RuleFileNotFoundError: Access to '{toy.root}/secret.txt' must be accepted by a rule.",
    ]


def test_under_python_sb_the_body_runs_directly_with_its_context(toy: Project) -> None:
    toy.write(
        ".py-sandboxes-complete", "os-sandbox=landlock\nexpose-ro=.\nignore=secret.txt\npython-import=*\n"
    )
    toy.host(
        """
        import os
        import toy, tools

        print(toy.call("pid") == os.getpid())
        print(toy.call("with_context", text="t").startswith("t ctx=<toy.Context object"))
        print(toy.call("read", path="secret.txt").startswith("tool error: RuleFileNotFoundError:"))
        """
    )
    import subprocess
    import sys
    from pathlib import Path

    python_sb = Path(sys.executable).with_name("python-sb")
    done = subprocess.run(
        [str(python_sb), "--pysandboxes-config=.py-sandboxes-complete", "host.py"],
        cwd=toy.root,
        env=toy.environ(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout.splitlines()) == (0, ["True", "True", "True"]), done.stderr


# -- refused at decoration ---------------------------------------------------------------------

WRONG = {
    "a tool object": (
        "class ToolObject:\n    name = 'x'\n\nsandboxed_tool(ToolObject())",
        "TypeError: @sandboxed_tool makes a tool of a function, not of a tools_wrong.ToolObject: put "
        "@sandboxed_tool alone on the function (it applies the framework's decorator itself)",
    ),
    "a bound method": (
        "class Holder:\n    def method(self) -> int:\n        return 1\n\nsandboxed_tool(Holder().method)",
        "TypeError: @sandboxed_tool makes a tool of a function; Holder.method is a method bound to an "
        "instance, which the sandbox's child cannot find: use a module-level function",
    ),
    "a lambda": (
        "sandboxed_tool(lambda: 1)",
        "TypeError: @sandboxed_tool: <lambda> is defined inside a function; the sandbox's child finds a "
        "tool by module and name: define it at module level",
    ),
    "a local function": (
        "def outer():\n    @sandboxed_tool\n    def inner() -> int:\n        return 1\n\nouter()",
        "TypeError: @sandboxed_tool: outer.<locals>.inner is defined inside a function; the sandbox's "
        "child finds a tool by module and name: define it at module level",
    ),
    "a generator": (
        "@sandboxed_tool\ndef pages():\n    yield 1",
        "TypeError: @sandboxed_tool: pages() is a generator; a tool returns its result: return a list (or "
        "call a @sandbox generator from the tool)",
    ),
    "a tool twice": (
        "@sandboxed_tool\n@sandboxed_tool\ndef twice() -> int:\n    return 2",
        "TypeError: @sandboxed_tool: 'twice' is already a tool made by pysandboxes-toy: use one decorator",
    ),
    "@sandbox on a tool": (
        "@sandbox\n@sandboxed_tool\ndef boxed() -> int:\n    return 2",
        "TypeError: @sandbox: boxed is already a tool made by pysandboxes-toy, whose decorator runs its "
        "body in the sandbox: remove @sandbox",
    ),
    "@sandbox on a tool object": (
        "class ToolObject:\n    pass\n\nsandbox(ToolObject())",
        "TypeError: @sandbox decorates a function, not a tools_wrong.ToolObject (a framework's tool "
        "object?): put @sandbox under the framework's decorator, or use the framework's adapter "
        "(docs/integrations.md)",
    ),
    "@sandbox on a callable tool object that looks like its function": (
        "import functools\n\nclass FunctionTool:\n    def __init__(self, f):\n"
        "        functools.update_wrapper(self, f)\n    def __call__(self, *a):\n"
        "        return self.__wrapped__(*a)\n\n@sandbox\n@FunctionTool\ndef looks() -> int:\n    return 1",
        "TypeError: @sandbox decorates a function, not a tools_wrong.FunctionTool (a framework's tool "
        "object?): put @sandbox under the framework's decorator, or use the framework's adapter "
        "(docs/integrations.md)",
    ),
    "a tool made after its module was imported": (
        "import tools\n\nsandboxed_tool(tools._read.__wrapped__)",
        "TypeError: @sandboxed_tool: _read() belongs to module 'tools', which was already imported: the "
        "sandbox's child imports that module to find the tool, and would not see it made. Apply the "
        "decorator in that module, at its top level",
    ),
}


@pytest.mark.parametrize("usage", sorted(WRONG))
def test_a_wrong_usage_is_refused_at_decoration(toy: Project, usage: str) -> None:
    source, message = WRONG[usage]
    toy.write(
        "tools_wrong.py",
        "import toy\nfrom pysandboxes import sandbox\nfrom toyadapter import sandboxed_tool\n\n"
        + source
        + "\n",
    )
    toy.host(
        """
        try:
            import tools_wrong
        except TypeError as exc:
            print(f"TypeError: {exc}")
        """
    )
    assert toy.ok() == [message]


def test_a_context_parameter_without_default_is_refused_at_decoration_naming_the_pattern(
    toy: Project,
) -> None:
    toy.write(
        "tools_wrong.py",
        """
        import toy
        from toyadapter import sandboxed_tool

        @sandboxed_tool
        def needs(text: str, ctx: toy.Context) -> str:
            return text
        """,
    )
    toy.host(
        """
        try:
            import tools_wrong
        except TypeError as exc:
            print(exc)
        """
    )
    assert toy.ok() == [
        "@sandboxed_tool runs needs() in the sandbox, where its `ctx: Context` (the framework's context "
        "object) cannot go: it stays on the host.",
        "Do the context work on the host and pass plain values to the sandboxed body:",
        "",
        "    @sandbox",
        "    def _needs(...): ...          # the body, in the sandbox",
        "",
        "    @host_tool",
        "    def needs(..., ctx: Context):  # on the host, with the context",
        "        ...use ctx...",
        "        return _needs(...)",
        "",
        "or give the parameter a default (`ctx: Context = None`): the sandboxed body then receives the "
        "default (see docs/integrations.md).",
    ]


def test_a_context_parameter_injected_by_name_is_shown_without_an_annotation(toy: Project) -> None:
    toy.write(
        "tools_by_name.py",
        """
        from toyadapter import sandboxed_tool

        @sandboxed_tool
        def needs_agent(text: str, agent) -> str:
            return text
        """,
    )
    toy.host(
        """
        try:
            import tools_by_name
        except TypeError as exc:
            print(exc)
        """
    )
    lines = toy.ok()
    assert lines[0] == (
        "@sandboxed_tool runs needs_agent() in the sandbox, where its `agent` (the framework's context "
        "object) cannot go: it stays on the host."
    )
    assert "    def needs_agent(..., agent):  # on the host, with the context" in lines
    assert lines[-1].startswith("or give the parameter a default (`agent = None`)")


def test_on_denial_must_be_text_or_raise(toy: Project) -> None:
    toy.host(
        """
        from toyadapter import FRAMEWORK
        from pysandboxes.tools import sandboxed

        def f() -> int:
            return 1

        try:
            sandboxed(f, FRAMEWORK, on_denial="ignore")
        except ValueError as exc:
            print(exc)
        """
    )
    assert toy.ok() == ["on_denial='ignore': expected one of 'text', 'raise'"]


def test_the_public_names() -> None:
    import pysandboxes.tools

    assert pysandboxes.tools.__all__ == [
        "ON_DENIAL",
        "Framework",
        "caller_module",
        "ensure_sandbox",
        "hosted",
        "is_sandboxed_tool",
        "sandboxed",
        "sandboxes_for",
    ]
