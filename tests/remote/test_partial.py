"""Partial mode end to end: every form of the API, and the rights of host and child.

Each test writes a project (rule file, ``tools.py``, ``host.py``) and runs the host as a
real program; see conftest.py.
"""

from __future__ import annotations

import os
import textwrap

import pytest

from .conftest import Project

# -- plain functions ------------------------------------------------------------------------


def test_sync_function_runs_in_the_child(project: Project, provider: str) -> None:
    project.rules(provider)
    project.tools(
        """
        import os
        from pysandboxes import sandbox, is_in_sandbox

        @sandbox
        def where(label):
            return label, os.getpid(), os.getppid(), is_in_sandbox()

        @sandbox
        def nested():
            # inside the child a @sandbox call is direct: same process
            return os.getpid(), where("inner")[1]
        """
    )
    project.host(
        """
        import os
        from pysandboxes import sandboxes, is_in_sandbox
        import tools

        with sandboxes():
            label, pid, ppid, inside = tools.where("outer")
            print(label, inside)
            print("another process:", pid != os.getpid())
            print("started by the host:", ppid == os.getpid())
            outer, inner = tools.nested()
            print("direct inside the child:", outer == inner == pid)
        print("host in sandbox:", is_in_sandbox())
        """
    )
    assert project.ok() == [
        "outer True",
        "another process: True",
        "started by the host: True",
        "direct inside the child: True",
        "host in sandbox: False",
    ]


def test_async_function(project: Project, provider: str) -> None:
    project.rules(provider)
    project.tools(
        """
        import asyncio, os
        from pysandboxes import sandbox, is_in_sandbox

        @sandbox
        async def double(x):
            await asyncio.sleep(0.01)
            return 2 * x, os.getpid(), is_in_sandbox()
        """
    )
    project.host(
        """
        import asyncio, os
        from pysandboxes import sandboxes
        import tools

        async def main():
            async with sandboxes():
                value, pid, inside = await tools.double(21)
                print(value, inside, pid != os.getpid())
                print(sorted(v for v, _, _ in await asyncio.gather(*(tools.double(i) for i in range(5)))))

        asyncio.run(main())
        """
    )
    assert project.ok() == ["42 True True", "[0, 2, 4, 6, 8]"]


def test_a_task_cancelled_while_leaving_still_stops_the_child(project: Project, provider: str) -> None:
    # the cancellation arrives while ``async with sandboxes()`` leaves (a task group's cancel
    # scope, Ctrl-C): the child is stopped before the cancellation goes on, never left running
    project.rules(provider)
    project.tools(
        """
        import os
        from pysandboxes import sandbox

        @sandbox
        async def child_pid():
            return os.getpid()
        """
    )
    project.host(
        """
        import asyncio, os
        from pysandboxes import SandBoxError, sandboxes
        import tools

        async def main():
            async with sandboxes():
                pid = await tools.child_pid()
                asyncio.get_running_loop().call_soon(asyncio.current_task().cancel)
            return pid

        try:
            asyncio.run(main())
        except asyncio.CancelledError:
            print("cancelled")
        try:
            asyncio.run(tools.child_pid())
        except SandBoxError as exc:
            print("closed:", "outside any sandbox" in str(exc))
        """
    )
    assert project.ok() == ["cancelled", "closed: True"]


# -- generators: items stream back as they are produced ---------------------------------------
# The generator yields its first item, then waits for a file the host creates only once it has
# received that item: if items were collected until the generator ends, the second one would
# say so (after 10 s) instead of the normal text.

GENERATORS = """
import asyncio, os, time
from pysandboxes import sandbox, is_in_sandbox

@sandbox
def stream(flag):
    yield f"first (in sandbox: {is_in_sandbox()})"
    deadline = time.monotonic() + 10
    while not os.path.exists(flag):
        if time.monotonic() > deadline:
            yield "the host did not get the first item before the generator went on"
            return
        time.sleep(0.01)
    yield "second, after the host got the first"

@sandbox
async def astream(flag):
    yield f"first (in sandbox: {is_in_sandbox()})"
    deadline = time.monotonic() + 10
    while not os.path.exists(flag):
        if time.monotonic() > deadline:
            yield "the host did not get the first item before the generator went on"
            return
        await asyncio.sleep(0.01)
    yield "second, after the host got the first"
"""

STREAMED = ["first (in sandbox: True)", "second, after the host got the first"]


def test_generator_items_stream(project: Project, provider: str) -> None:
    project.rules(provider, "expose-ro=./flags")
    project.write("flags/.keep", "")
    project.tools(GENERATORS)
    project.host(
        """
        from pysandboxes import sandboxes
        import tools

        with sandboxes():
            for item in tools.stream("flags/go"):
                print(item)
                open("flags/go", "w").close()
        """
    )
    assert project.ok() == STREAMED


def test_async_generator_items_stream(project: Project, provider: str) -> None:
    project.rules(provider, "expose-ro=./flags")
    project.write("flags/.keep", "")
    project.tools(GENERATORS)
    project.host(
        """
        import asyncio
        from pysandboxes import sandboxes
        import tools

        async def main():
            async with sandboxes():
                async for item in tools.astream("flags/go"):
                    print(item)
                    open("flags/go", "w").close()

        asyncio.run(main())
        """
    )
    assert project.ok() == STREAMED


def test_generator_closed_early_then_next_call(project: Project, provider: str) -> None:
    project.rules(provider)
    project.tools(
        """
        from pysandboxes import sandbox

        @sandbox
        def naturals():
            n = 0
            while True:
                yield n
                n += 1
        """
    )
    project.host(
        """
        import itertools
        from pysandboxes import sandboxes
        import tools

        with sandboxes():
            print(list(itertools.islice(tools.naturals(), 3)))
            print(list(itertools.islice(tools.naturals(), 5)))
        """
    )
    assert project.ok() == ["[0, 1, 2]", "[0, 1, 2, 3, 4]"]


# -- methods, __main__ functions, stacked decorators ------------------------------------------


def test_method_gets_a_copy_of_its_instance(project: Project, provider: str) -> None:
    project.rules(provider)
    project.tools(
        """
        from pysandboxes import sandbox, is_in_sandbox

        class Greeter:
            def __init__(self, name):
                self.name = name
                self.calls = 0

            @sandbox
            def greet(self, greeting):
                self.calls += 1
                return f"{greeting}, {self.name} (call {self.calls}, in sandbox: {is_in_sandbox()})"
        """
    )
    project.host(
        """
        from pysandboxes import sandboxes
        import tools

        greeter = tools.Greeter("Ada")
        with sandboxes():
            print(greeter.greet("Hello"))
            print(greeter.greet(greeting="Hi"))
        print("calls seen by the host:", greeter.calls)
        """
    )
    assert project.ok() == [
        "Hello, Ada (call 1, in sandbox: True)",
        "Hi, Ada (call 1, in sandbox: True)",
        "calls seen by the host: 0",
    ]


def test_function_of_the_main_script(project: Project, provider: str) -> None:
    # The child imports host.py as __sb_main__ (before the Python layer's rules, as the host
    # did, but inside the OS boundary): its module body runs there too, under the kernel's
    # rules (marks/ is granted), its `if __name__ == "__main__":` block only once, in the host.
    project.rules(provider, "expose-rw=./marks")
    project.write("marks/marks.txt", "")
    project.host(
        """
        import os
        from pysandboxes import sandbox, sandboxes, is_in_sandbox

        with open("marks/marks.txt", "a") as f:
            f.write(f"module body as {__name__}\\n")

        @sandbox
        def where():
            return __name__, is_in_sandbox()

        if __name__ == "__main__":
            with open("marks/marks.txt", "a") as f:
                f.write("main block\\n")
            with sandboxes():
                print(where())
            with open("marks/marks.txt") as f:
                print(f.read(), end="")
        """
    )
    assert project.ok() == [
        "('__sb_main__', True)",
        "module body as __main__",
        "main block",
        "module body as __sb_main__",
    ]


def test_framework_decorator_on_top(project: Project, provider: str) -> None:
    project.rules(provider)
    project.tools(
        """
        import functools
        from pysandboxes import sandbox, is_in_sandbox

        def tool(f):
            @functools.wraps(f)
            def w(*a, **k):
                return f(*a, **k)
            return w

        @tool
        @sandbox
        def add(a, b):
            return a + b, is_in_sandbox()
        """
    )
    project.host(
        """
        from pysandboxes import sandboxes
        import tools

        with sandboxes():
            print(tools.add(2, b=3))
        """
    )
    assert project.ok() == ["(5, True)"]


def test_framework_decorator_that_hides_the_function(project: Project, provider: str) -> None:
    # Like @mcp.tool: the module attribute becomes a tool object, not the function; the child
    # must find the function by what @sandbox registered, not by getattr on the module.
    project.rules(provider)
    project.tools(
        """
        from pysandboxes import sandbox, is_in_sandbox

        class Tool:
            def __init__(self, fn):
                self.fn = fn

        def tool(f):
            return Tool(f)

        @tool
        @sandbox
        def mul(a, b):
            return a * b, is_in_sandbox()
        """
    )
    project.host(
        """
        from pysandboxes import sandboxes
        import tools

        with sandboxes():
            print(type(tools.mul).__name__, tools.mul.fn(6, 7))
        """
    )
    assert project.ok() == ["Tool (42, True)"]


# -- sessions ------------------------------------------------------------------------------

PID_TOOLS = """
import os
from pysandboxes import sandbox

@sandbox
def pid():
    return os.getpid()
"""


def test_nested_blocks_share_one_child(project: Project, provider: str) -> None:
    project.rules(provider)
    project.tools(PID_TOOLS)
    project.host(
        """
        import os
        from pysandboxes import sandboxes
        import tools

        with sandboxes():
            outer = tools.pid()
            with sandboxes():
                inner = tools.pid()
            after_inner = tools.pid()
        print("one child:", outer == inner == after_inner != os.getpid())
        try:
            os.kill(outer, 0)
        except ProcessLookupError:
            print("stopped when the last block left")
        """
    )
    assert project.ok() == ["one child: True", "stopped when the last block left"]


def test_concurrent_blocks_in_threads_share_one_child(project: Project, provider: str) -> None:
    project.rules(provider)
    project.tools(PID_TOOLS)
    project.host(
        """
        import threading
        from pysandboxes import sandboxes
        import tools

        pids, barrier, one_call_at_a_time = [], threading.Barrier(4, timeout=20), threading.Lock()

        def worker():
            with sandboxes():
                barrier.wait()  # all four blocks are open at once
                with one_call_at_a_time:  # see test_partial_lifecycle.py::test_many_concurrent_calls
                    pids.append(tools.pid())
                barrier.wait()

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(len(pids), len(set(pids)))
        """
    )
    assert project.ok() == ["4 1"]


def test_nested_block_with_other_settings_is_refused(project: Project, provider: str) -> None:
    project.rules(provider)
    project.tools(PID_TOOLS)
    project.host(
        """
        from pysandboxes import sandboxes
        from pysandboxes.errors import SandBoxError
        import tools

        with sandboxes():
            try:
                with sandboxes(python_import=["json"]):
                    pass
            except SandBoxError as e:
                print(type(e).__name__, e)
            print("still works:", isinstance(tools.pid(), int))
        """
    )
    assert project.ok() == [
        f"SandBoxError a sandboxes() block is already open with other settings ({project.root}/.py-sandboxes); "
        "nested and concurrent blocks share one sandbox: open them with the same rule file, rules and init_fn",
        "still works: True",
    ]


def test_notebook_style_enter_without_exit(project: Project, provider: str) -> None:
    # A notebook enters the block in one cell and never leaves it: the child serves every
    # later cell and is gone once the host exits.
    project.rules(provider)
    project.tools(PID_TOOLS)
    project.host(
        """
        import os
        from pysandboxes import sandboxes
        import tools

        sandboxes().__enter__()  # cell 1
        first = tools.pid()  # cell 2
        print(first)
        print("same child in a later cell:", tools.pid() == first != os.getpid())
        """
    )
    first, same = project.ok()
    assert same == "same child in a later cell: True"
    with pytest.raises(ProcessLookupError):
        os.kill(int(first), 0)


def test_run_main_coroutine(project: Project, provider: str) -> None:
    project.rules(provider)
    project.tools(
        """
        import os
        from pysandboxes import sandbox, is_in_sandbox

        @sandbox
        async def square(x):
            return x * x, is_in_sandbox()

        @sandbox
        async def letters(word):
            for c in word:
                yield c

        @sandbox
        def pid():
            return os.getpid()
        """
    )
    project.host(
        """
        import os
        import pysandboxes
        import tools

        async def main():
            print(await tools.square(7))
            print([c async for c in tools.letters("abc")])
            print("sync call inside run():", tools.pid() != os.getpid())
            return "main's result"

        print(pysandboxes.run(main()))
        """
    )
    assert project.ok() == ["(49, True)", "['a', 'b', 'c']", "sync call inside run(): True", "main's result"]


def test_init_fn_runs_once_in_the_child(project: Project, provider: str) -> None:
    project.rules(provider)
    project.tools(
        """
        import os
        from pysandboxes import sandbox, is_in_sandbox

        STATE = []

        def setup():
            STATE.append((os.getpid(), is_in_sandbox()))

        @sandbox
        def state():
            return STATE, os.getpid()
        """
    )
    project.host(
        """
        from pysandboxes import sandboxes
        import tools

        with sandboxes(init_fn=tools.setup):
            tools.state()
            [(init_pid, inside)], pid = tools.state()
            print("once, in the child:", init_pid == pid, inside)
        print("host state:", tools.STATE)
        """
    )
    assert project.ok() == ["once, in the child: True True", "host state: []"]


def test_init_fn_runs_under_the_rules(project: Project, provider: str) -> None:
    project.rules(provider)
    project.write("secret.txt", "s3cret\n")
    project.tools(
        """
        from pysandboxes import sandbox

        def setup():
            open("secret.txt").read()

        @sandbox
        def f():
            return 1
        """
    )
    project.host(
        """
        from pysandboxes import sandboxes
        from pysandboxes.errors import SandBoxError
        import tools

        try:
            with sandboxes(init_fn=tools.setup):
                tools.f()
        except SandBoxError as e:
            print(type(e).__name__, e)
        """
    )
    assert project.ok() == [
        f"SandBoxError the sandbox could not start: Access to '{project.root}/secret.txt' must be accepted by a rule.",
        f"Add `expose-ro={project.root}` to the rule file to allow it.",
    ]


def test_call_outside_any_block(project: Project, provider: str) -> None:
    project.rules(provider)
    project.tools(PID_TOOLS)
    project.host(
        """
        from pysandboxes.errors import SandBoxError
        import tools

        try:
            tools.pid()
        except SandBoxError as e:
            print(type(e).__name__, e)
        """
    )
    assert project.ok() == [
        "SandBoxError tools.pid() is a @sandbox function called outside any sandbox: call it inside "
        "`with pysandboxes.sandboxes():` (or `async with`), or run the program with `pysandboxes.run(main())`"
    ]


def test_os_sandbox_none_calls_directly(project: Project) -> None:
    # Observed: with os-sandbox=none there is no child; the function runs in the host's own
    # process, is_in_sandbox() is False there, and nothing confines it (it reads a file no rule
    # exposes).
    project.rules("none")
    project.write("secret.txt", "s3cret\n")
    project.tools(
        """
        import os
        from pysandboxes import sandbox, is_in_sandbox

        @sandbox
        def probe():
            with open("secret.txt") as f:
                return os.getpid(), is_in_sandbox(), f.read().strip()
        """
    )
    project.host(
        """
        import os
        from pysandboxes import sandboxes
        import tools

        with sandboxes():
            pid, inside, text = tools.probe()
            print("same process:", pid == os.getpid(), "in sandbox:", inside, "read:", text)
        """
    )
    assert project.ok() == ["same process: True in sandbox: False read: s3cret"]


# -- rights stay separate ------------------------------------------------------------------


def test_the_host_keeps_its_rights_the_child_has_the_rules(project: Project, provider: str) -> None:
    project.rules(provider, "expose-ro=./data", "env=GREETING=hello")
    project.write("data/public.txt", "public\n")
    project.write("secret.txt", "s3cret\n")
    project.tools(
        """
        import os
        from pysandboxes import sandbox

        @sandbox
        def read(path):
            with open(path) as f:
                return f.read().strip()

        @sandbox
        def env(name):
            return os.environ.get(name)
        """
    )
    project.host(
        """
        import os
        from pysandboxes import sandboxes, sandbox_denials
        import tools

        with sandboxes():
            print("child reads data:", tools.read("data/public.txt"))
            try:
                tools.read("secret.txt")
            except FileNotFoundError as e:
                print("child refused:", type(e).__name__, sandbox_denials(e) == [f"{type(e).__name__}: {e}"])
                print(e)
            with open("secret.txt") as f:
                print("host reads:", f.read().strip())
            print("child env SECRET:", tools.env("SECRET"), "GREETING:", tools.env("GREETING"))
            print("host env SECRET:", os.environ["SECRET"])
        """
    )
    assert project.ok(env={"SECRET": "hunter2"}) == [
        "child reads data: public",
        "child refused: RuleFileNotFoundError True",
        f"Access to '{project.root}/secret.txt' must be accepted by a rule.",
        f"Add `expose-ro={project.root}` to the rule file to allow it.",
        "host reads: s3cret",
        "child env SECRET: None GREETING: hello",
        "host env SECRET: hunter2",
    ]


# -- what the program's modules do at import, in the child ----------------------------------


def test_a_module_that_starts_a_thread_at_import_runs(project: Project, provider: str) -> None:
    # OpenBLAS (numpy) and telemetry exporters start threads at import. Landlock confines only
    # the calling thread: the child confines itself before importing the program's modules, so
    # such a thread is confined too (it cannot read outside.txt), and the child starts.
    project.write("../outside.txt", "secret")
    project.rules(provider)
    project.tools(
        """
        import threading
        from pysandboxes import sandbox

        seen = []

        def peek():
            try:
                with open("../outside.txt") as f:
                    seen.append(f.read())
            except OSError as exc:
                seen.append(type(exc).__name__)

        worker = threading.Thread(target=peek)
        worker.start()
        worker.join()
        idle = threading.Event()
        threading.Thread(target=idle.wait, daemon=True).start()  # still running at confinement

        @sandbox
        def what_the_thread_saw():
            return seen[0]
        """
    )
    project.host(
        """
        from pysandboxes import sandboxes
        import tools

        with sandboxes():
            print(tools.what_the_thread_saw())
        """
    )
    # the host imported tools unconfined (the thread read the file there); in the child, the
    # thread ran at import: confined by the kernel under landlock, by nothing under subprocess
    # (the Python layer applies once the program's modules are imported, docs/partial-mode.md)
    assert project.ok() == ["PermissionError" if provider == "landlock" else "secret"]


def test_a_numpy_tool_module_starts_under_landlock_with_no_rule_of_its_own(
    project: Project, provider: str
) -> None:
    # numpy starts OpenBLAS threads at import: the child confines itself first, so the module
    # imports and its tools run with nothing but the provider line; the pair: a numpy tool
    # reading a file outside the rules is refused (the threads change nothing to that)
    pytest.importorskip("numpy")
    project.write("../outside.txt", "1 2 3")
    project.rules(provider)
    project.tools(
        """
        import numpy
        from pysandboxes import sandbox

        @sandbox
        def mean(values):
            return float(numpy.mean(numpy.array(values)))

        @sandbox
        def mean_of_file(path):
            with open(path) as f:
                return float(numpy.array(f.read().split(), dtype=float).mean())
        """
    )
    project.host(
        """
        from pysandboxes import sandboxes
        import tools

        with sandboxes():
            print(tools.mean([1, 2, 3, 4]))
            try:
                tools.mean_of_file("../outside.txt")
            except OSError as exc:
                print(type(exc).__name__)
        """
    )
    assert project.ok() == ["2.5", "RuleFileNotFoundError"]


def test_what_a_module_reads_at_import_needs_its_rule_under_landlock(project: Project) -> None:
    project.write("data/table.txt", "1 2 3")
    project.tools(
        """
        from pysandboxes import sandbox

        with open("data/table.txt") as f:
            TABLE = f.read()

        @sandbox
        def table():
            return TABLE
        """
    )
    project.host(
        """
        from pysandboxes import sandboxes
        import tools

        with sandboxes():
            print(tools.table())
        """
    )
    project.rules("landlock", "expose-ro=./data")
    assert project.ok() == ["1 2 3"]
    project.rules("landlock")
    outcome = project.run()
    assert outcome.returncode == 1
    assert "the sandbox could not start: PermissionError" in outcome.stderr
    assert "data/table.txt" in outcome.stderr


def test_a_sibling_module_needs_no_rule(project: Project, provider: str) -> None:
    # tools imports helpers (next to it): importing is not reading a file of the project
    project.write("helpers.py", "def double(x):\n    return 2 * x\n")
    project.write(".env", "TOKEN=secret\n")
    project.rules(provider)
    project.tools(
        """
        import helpers
        from pysandboxes import sandbox

        @sandbox
        def quadruple(x):
            return helpers.double(helpers.double(x))

        @sandbox
        def dotenv():
            with open(".env") as f:
                return f.read()
        """
    )
    project.host(
        """
        from pysandboxes import sandboxes
        import tools

        with sandboxes():
            print(tools.quadruple(3))
            try:
                tools.dotenv()
            except OSError as exc:
                print(type(exc).__name__)
        """
    )
    assert project.ok() == ["12", "RuleFileNotFoundError"]


def test_a_main_script_without_its_guard_is_refused(project: Project, provider: str) -> None:
    # Its top level would run a second time in the child, where a sandboxed call made while
    # the child imports it would be direct: refused, as multiprocessing does, naming the fix.
    head = "from pysandboxes import sandbox, sandboxes\n\n@sandbox\ndef where():\n    return 'here'\n\n"
    entry = "with sandboxes():\n    print(where())\n"
    project.rules(provider)
    project.host(head + entry)
    outcome = project.run()
    assert outcome.returncode == 1, outcome
    assert "the sandbox could not start: the main script used the sandbox" in outcome.stderr
    assert 'if __name__ == "__main__":' in outcome.stderr
    project.host(head + 'if __name__ == "__main__":\n' + textwrap.indent(entry, "    "))
    assert project.ok() == ["here"]


REGISTERING_FRAMEWORK = """
    from pysandboxes import sandbox, is_in_sandbox

    class Server:  # a framework whose decorator registers the function and returns it as is
        def __init__(self):
            self.tools = {}

        def tool(self):
            def register(function):
                self.tools[function.__name__] = function
                return function
            return register

        def call(self, name, *args):
            return self.tools[name](*args)

    server = Server()
"""


def test_sandbox_on_top_of_a_registering_decorator_is_refused(project: Project, provider: str) -> None:
    # @server.tool() registered the function itself: the server would call it unconfined
    project.rules(provider)
    project.tools(
        REGISTERING_FRAMEWORK
        + """
    @sandbox
    @server.tool()
    def where():
        return is_in_sandbox()
    """
    )
    project.host(
        """
        from pysandboxes import sandboxes
        import tools

        with sandboxes():
            print(tools.server.call("where"))
        """
    )
    outcome = project.run()
    assert outcome.returncode == 1, outcome
    assert "SandBoxError: @sandbox: tools.where is also held, unsandboxed, by a dict of a " in outcome.stderr
    assert "tools.Server object (key 'where')" in outcome.stderr


def test_a_registering_decorator_on_top_of_sandbox_is_sandboxed(project: Project, provider: str) -> None:
    project.rules(provider)
    project.tools(
        REGISTERING_FRAMEWORK
        + """
    @server.tool()
    @sandbox
    def where():
        return is_in_sandbox()
    """
    )
    project.host(
        """
        from pysandboxes import sandboxes
        import tools

        with sandboxes():
            print(tools.server.call("where"))
        """
    )
    assert project.ok() == ["True"]


def test_a_module_whose_import_failed_is_not_imported_by_the_sandbox(project: Project, provider: str) -> None:
    # A regression test: its @sandbox registrations stayed behind, the child imported it again
    # (running its top level) and could not start. A wrapper still held refuses, naming why.
    project.rules(provider)
    project.tools(
        """
        from pysandboxes import sandbox

        @sandbox
        def ok():
            return "ok"
        """
    )
    project.write("holder.py", "saved = []\n")
    project.write(
        "optional.py",
        """
        import holder
        from pysandboxes import sandbox

        print("optional's top level runs")

        @sandbox
        def extra():
            return "extra"

        holder.saved.append(extra)
        raise ImportError("an optional dependency is missing")
        """,
    )
    project.host(
        """
        import holder, tools
        from pysandboxes import SandBoxError, sandboxes

        try:
            import optional
        except ImportError as e:
            print("host:", e)
        with sandboxes():
            print(tools.ok())
            try:
                holder.saved[0]()
            except SandBoxError as e:
                print(e)
        """
    )
    assert project.ok() == [
        "optional's top level runs",
        "host: an optional dependency is missing",
        "ok",
        "optional.extra() cannot run in the sandbox: the import of its module optional failed after "
        "@sandbox decorated it, so the sandbox does not import that module. Fix the import error "
        "(or import the module before sandboxes())",
    ]
