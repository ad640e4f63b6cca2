"""Partial mode end to end: what comes back from the child (the result guard, exceptions,
tracebacks) and what cannot go there (unpicklable or oversized arguments, broken rules)."""

from __future__ import annotations

from .conftest import Project

DATA_ONLY_HINT = (
    "is refused by the sandbox's result guard: the result channel accepts only values "
    "(remote-result-mode=data-only); return plain data, or set remote-result-mode=objects in the rule file"
)

GUARD_TOOLS = """
import dataclasses, os
from pysandboxes import sandbox

@dataclasses.dataclass
class Point:
    x: int
    y: int

class Gadget:
    # what hostile code in the child returns: unpickling it would call os.system in the host
    def __reduce__(self):
        return (os.system, ("echo pwned > pwned.txt",))

@sandbox
def gadget():
    return Gadget()

@sandbox
def point():
    return Point(1, 2)

@sandbox
def ok():
    return "still works"
"""

GUARD_HOST = """
import os
from pysandboxes import sandboxes
from pysandboxes.errors import SandBoxError
import tools

with sandboxes():
    for f in (tools.gadget, tools.point, tools.ok):
        try:
            print(f.__name__, "->", f())
        except SandBoxError as e:
            print(f.__name__, "->", type(e).__name__, e)
print("pwned.txt exists:", os.path.exists("pwned.txt"))
"""


def test_result_guard_data_only(project: Project, provider: str) -> None:
    project.rules(provider)
    project.tools(GUARD_TOOLS)
    project.host(GUARD_HOST)
    assert project.ok() == [
        f"gadget -> RestrictedUnpicklingError posix.system {DATA_ONLY_HINT}",
        f"point -> RestrictedUnpicklingError tools.Point {DATA_ONLY_HINT}",
        "ok -> still works",
        "pwned.txt exists: False",
    ]


def test_result_guard_objects_mode(project: Project, provider: str) -> None:
    project.rules(provider, "remote-result-mode=objects")
    project.tools(GUARD_TOOLS)
    project.host(GUARD_HOST)
    assert project.ok() == [
        "gadget -> RestrictedUnpicklingError posix.system is refused by the sandbox's result guard: "
        "module posix is denied (remote-result-mode=objects)",
        "point -> Point(x=1, y=2)",
        "ok -> still works",
        "pwned.txt exists: False",
    ]


def test_refused_result_is_also_a_pickle_error(project: Project, provider: str) -> None:
    project.rules(provider)
    project.tools(GUARD_TOOLS)
    project.host(
        """
        import pickle
        from pysandboxes import sandboxes
        from pysandboxes.errors import RestrictedUnpicklingError, SandBoxError
        import tools

        with sandboxes():
            try:
                tools.gadget()
            except pickle.UnpicklingError as e:
                print(isinstance(e, RestrictedUnpicklingError), isinstance(e, SandBoxError))
        """
    )
    assert project.ok() == ["True True"]


# -- exceptions ------------------------------------------------------------------------------

EXCEPTION_TOOLS = """
import sys
from pysandboxes import sandbox

class ToolError(Exception):
    pass

@sandbox
def own_class():
    raise ToolError("no such tool", 3)

@sandbox
def failing_generator():
    yield 1
    raise ValueError("stopped after one")

@sandbox
def builtin():
    raise ValueError("bad value", 42)

@sandbox
def refused():
    open("secret.txt")

@sandbox
def unknown():
    class Oops(Exception):
        pass
    try:
        open("secret.txt")
    except OSError as e:
        raise Oops("wrapped the refusal") from e

@sandbox
def exits():
    sys.exit(3)

@sandbox
def keyboard():
    raise KeyboardInterrupt
"""


def test_builtin_exception_keeps_class_and_args(project: Project, provider: str) -> None:
    project.rules(provider)
    project.tools(EXCEPTION_TOOLS)
    project.host(
        """
        from pysandboxes import sandboxes, sandbox_denials
        import tools

        with sandboxes():
            try:
                tools.builtin()
            except ValueError as e:
                print(type(e).__name__, e.args, sandbox_denials(e))
        """
    )
    assert project.ok() == ["ValueError ('bad value', 42) []"]


def test_exception_class_of_a_host_module_is_rebuilt(project: Project, provider: str) -> None:
    project.rules(provider)
    project.tools(EXCEPTION_TOOLS)
    project.host(
        """
        from pysandboxes import sandboxes
        import tools

        with sandboxes():
            try:
                tools.own_class()
            except tools.ToolError as e:
                print(type(e).__qualname__, e.args)
            try:
                for item in tools.failing_generator():
                    print("item", item)
            except ValueError as e:
                print(type(e).__name__, e)
        """
    )
    assert project.ok() == ["ToolError ('no such tool', 3)", "item 1", "ValueError stopped after one"]


def test_refusal_keeps_its_class(project: Project, provider: str) -> None:
    project.rules(provider)
    project.write("secret.txt", "s3cret\n")
    project.tools(EXCEPTION_TOOLS)
    project.host(
        """
        from pysandboxes import sandboxes, sandbox_denials
        from pysandboxes.errors import RuleFileNotFoundError, SandBoxError
        import tools

        with sandboxes():
            try:
                tools.refused()
            except RuleFileNotFoundError as e:
                print(type(e).__name__, isinstance(e, FileNotFoundError), isinstance(e, SandBoxError), e.errno)
                print(sandbox_denials(e))
        """
    )
    message = (
        f"Access to '{project.root}/secret.txt' must be accepted by a rule.\\n"
        f"Add `expose-ro={project.root}` to the rule file to allow it."
    )
    assert project.ok() == ["RuleFileNotFoundError True True 2", f'["RuleFileNotFoundError: {message}"]']


def test_unknown_exception_class_becomes_remote_error(project: Project, provider: str) -> None:
    project.rules(provider)
    project.write("secret.txt", "s3cret\n")
    project.tools(EXCEPTION_TOOLS)
    project.host(
        """
        from pysandboxes import sandboxes, sandbox_denials
        from pysandboxes.errors import SandBoxRemoteError
        import tools

        with sandboxes():
            try:
                tools.unknown()
            except SandBoxRemoteError as e:
                print(e)
                print(e.exception_type, "|", e.message)
                print(e.denials == sandbox_denials(e), len(e.denials))
                print(e.denials[0])
        """
    )
    assert project.ok() == [
        "tools.unknown.<locals>.Oops: wrapped the refusal",
        "tools.unknown.<locals>.Oops | wrapped the refusal",
        "True 1",
        f"RuleFileNotFoundError: Access to '{project.root}/secret.txt' must be accepted by a rule.",
        f"Add `expose-ro={project.root}` to the rule file to allow it.",
    ]


def test_base_exceptions_become_base_exception_error(project: Project, provider: str) -> None:
    project.rules(provider)
    project.tools(EXCEPTION_TOOLS)
    project.host(
        """
        from pysandboxes import sandboxes
        from pysandboxes.errors import SandBoxBaseExceptionError
        import tools

        with sandboxes():
            for f in (tools.exits, tools.keyboard):
                try:
                    f()
                except SandBoxBaseExceptionError as e:
                    print(e, "|", e.exception_type, e.code)
            print("the child survived:", tools.builtin.__name__)
        """
    )
    assert project.ok() == [
        "the sandboxed function raised builtins.SystemExit: 3 | builtins.SystemExit 3",
        "the sandboxed function raised builtins.KeyboardInterrupt | builtins.KeyboardInterrupt None",
        "the child survived: builtin",
    ]


TRACEBACK_TOOLS = """
from pysandboxes import sandbox


def helper(x):
    raise ValueError(f"bad {x}")


@sandbox
def boom(x):
    return helper(x)
"""

TRACEBACK_HOST = """
from pysandboxes import sandboxes
import tools

with sandboxes():
    tools.boom(7)
"""


def test_traceback_shows_the_sandboxed_frames(project: Project, provider: str) -> None:
    # The child's frames and source lines, as the child read them, follow the host's frames.
    project.rules(provider)
    project.tools(TRACEBACK_TOOLS)
    project.host(TRACEBACK_HOST)
    outcome = project.run()
    assert (outcome.returncode, outcome.stdout) == (1, "")
    lines = [line for line in outcome.stderr.splitlines() if line]  # see test_traceback_has_no_blank_line
    assert lines[:3] == [
        "Traceback (most recent call last):",
        f'  File "{project.root}/host.py", line 5, in <module>',
        "    tools.boom(7)",
    ]
    assert lines[-6:] == [
        "ValueError: bad 7",
        "Traceback in the sandbox (most recent call last):",
        f'  File "{project.root}/tools.py", line 10, in boom',
        "    return helper(x)",
        f'  File "{project.root}/tools.py", line 5, in helper',
        '    raise ValueError(f"bad {x}")',
    ]
    assert "pysandboxes/remote/" not in outcome.stderr


# A file of the host the child cannot read (outside every rule), and hostile code in the child
# whose traceback names it: the host must show the child's text, never the file's lines.
SECRET_SETTINGS = 'DEBUG = False\n\nPASSWORD = "hunter2"\n'

FORGING_TOOLS = """
import os, stat
from pysandboxes import sandbox
from pysandboxes.remote import channel, codec

SECRET = os.path.join(os.path.dirname(os.path.abspath(__file__)), "host-only", "settings.py")


@sandbox
def read_secret():
    try:
        open(SECRET).read()
    except OSError:
        return "refused"
    return "read"


@sandbox
def raise_from_the_host_file():
    # code compiled under the host file's name: its traceback entry is that file, line 3
    exec(compile("\\n\\nraise ValueError('forged')", SECRET, "exec"))


@sandbox
def forge_an_error_frame():
    # no grant needed: the channel is a descriptor of this process, any code can write to it
    try:
        raise ValueError("forged")
    except ValueError as e:
        magic, version, entries = codec.loads_trusted(codec.encode_exception(e))
    entry = list(entries[0])
    entry[9] = [(SECRET, 3, "<module>", *frame[3:]) for frame in entry[9]]
    blob = codec._dumps((magic, version, [tuple(entry)]))
    sock = next(fd for fd in range(3, 64) if _is_socket(fd))
    os.write(sock, channel._HEADER.pack(1, channel.ERROR, 0, 0, len(blob)) + blob)  # call 1's answer
    return "the real answer comes too late"


def _is_socket(fd):
    try:
        return stat.S_ISSOCK(os.fstat(fd).st_mode)
    except OSError:
        return False
"""


def _forging_project(project: Project, provider: str) -> str:
    project.rules(provider, "python-api=ALLOW:dynamic-code")
    project.tools(FORGING_TOOLS)
    return str(project.write("host-only/settings.py", SECRET_SETTINGS))


def test_a_traceback_naming_a_host_file_never_shows_its_lines(project: Project, provider: str) -> None:
    secret = _forging_project(project, provider)
    project.host(
        """
        import linecache, traceback
        from pysandboxes import sandboxes
        import tools

        with sandboxes():
            print("the child reads the file:", tools.read_secret())
            try:
                tools.raise_from_the_host_file()
            except ValueError:
                traceback.print_exc()
            print("the host read the file:", tools.SECRET in linecache.cache)
        """
    )
    outcome = project.run()
    assert outcome.returncode == 0, outcome
    assert outcome.lines == ["the child reads the file: refused", "the host read the file: False"]
    assert f'  File "{secret}", line 3, in <module>\n' in outcome.stderr
    assert outcome.stderr.rstrip().endswith("<module>") and "hunter2" not in outcome.stderr


def test_a_forged_error_frame_never_makes_the_host_read_a_file(project: Project, provider: str) -> None:
    # Uncaught: the interpreter's own printer, which opens the file of each frame it shows.
    secret = _forging_project(project, provider)
    project.host(
        """
        from pysandboxes import sandboxes
        import tools

        with sandboxes():
            tools.forge_an_error_frame()
        """
    )
    outcome = project.run()
    assert (outcome.returncode, outcome.stdout) == (1, "")
    assert "ValueError: forged\nTraceback in the sandbox (most recent call last):\n" in outcome.stderr
    assert f'  File "{secret}", line 3, in <module>\n    raise ValueError("forged")\n' in outcome.stderr
    assert "hunter2" not in outcome.stderr


def test_traceback_shows_only_the_decorator_frame_of_the_sandbox(project: Project) -> None:
    # Like any decorator, @sandbox's wrapper appears once; the channel's frames do not.
    project.rules("landlock")
    project.tools(TRACEBACK_TOOLS)
    project.host(TRACEBACK_HOST)
    own = [line for line in project.run().stderr.splitlines() if "/pysandboxes/" in line]
    assert (len(own) == 1 and own[0].endswith('/pysandboxes/api.py", line 317, in sync_wrapper')) or (
        len(own) == 1 and "/pysandboxes/api.py" in own[0] and own[0].endswith("in sync_wrapper")
    )


def test_traceback_has_no_blank_line(project: Project) -> None:
    project.rules("landlock")
    project.tools(TRACEBACK_TOOLS)
    project.host(TRACEBACK_HOST)
    assert "\n\n" not in project.run().stderr


# -- what decoding a result costs the host -------------------------------------------------

COSTLY_TOOLS = """
import collections
from pysandboxes import sandbox

P = (1 << 61) - 1  # hash(n) == n % P for ints


class CollidingKeys:
    # what hostile code returns: an OrderedDict whose 60 000 keys all hash alike, built only
    # by the host (600 KB that took the host minutes to decode)
    def __reduce__(self):
        return (collections.OrderedDict, (), None, None, ((1 + i * P, None) for i in range(1, 60_001)))


@sandbox(timeout=2)
def colliding():
    return CollidingKeys()


@sandbox(timeout=2)
def ordinary():
    return collections.OrderedDict((1 + i * P + i, None) for i in range(1, 60_001))


BIG = {}


def prepare():
    # sized so that both margins are wide whatever the machine's speed: on an idle 2-CPU VM
    # sending takes ~0.2 s (5x inside the 1 s timeout) and decoding ~3.5 s (3.5x beyond it);
    # with 400 000 entries a fast idle run decoded within the second and the test failed
    BIG.update((i, (i,)) for i in range(1_200_000))


@sandbox(timeout=1)
def big():
    return BIG


@sandbox
def big_without_timeout():
    return BIG
"""


def test_keys_that_all_hash_alike_are_refused(project: Project, provider: str) -> None:
    project.rules(provider)
    project.tools(COSTLY_TOOLS)
    project.host(
        """
        from pysandboxes import sandboxes
        from pysandboxes.errors import SandBoxError
        import tools

        with sandboxes():
            try:
                tools.colliding()
            except SandBoxError as e:
                print(type(e).__name__, e)
            print("the same size, ordinary keys:", len(tools.ordinary()))
        """
    )
    assert project.ok() == [
        "RestrictedUnpicklingError the result is refused by the sandbox's result guard: more than 32 keys "
        "of one collections.OrderedDict share a hash with another key (a hash-collision attack on the host)",
        "the same size, ordinary keys: 60000",
    ]


def test_decoding_a_result_counts_in_the_timeout(project: Project, provider: str) -> None:
    project.rules(provider)
    project.tools(COSTLY_TOOLS)
    project.host(
        """
        from pysandboxes import sandboxes
        from pysandboxes.errors import SandBoxResourceError
        import tools

        with sandboxes(init_fn=tools.prepare):
            try:
                tools.big()
            except SandBoxResourceError as e:
                print(type(e).__name__, e)
            print("without a timeout:", len(tools.big_without_timeout()))
        """
    )
    assert project.ok() == [
        "SandBoxTimeoutError tools.big() did not finish within 1 s: its result was still being decoded "
        "(timeout= in the rule file, or @sandbox(timeout=...))",
        "without a timeout: 1200000",
    ]


# -- what cannot be sent -------------------------------------------------------------------

ECHO_TOOLS = """
import hashlib
from pysandboxes import sandbox

@sandbox
def echo(value):
    return value

@sandbox
def digest(data):
    return hashlib.sha256(data).hexdigest(), data

@sandbox
def big(n):
    return b"x" * n
"""


def test_50_mb_round_trip(project: Project, provider: str) -> None:
    project.rules(provider)
    project.tools(ECHO_TOOLS)
    project.host(
        """
        import hashlib
        from pysandboxes import sandboxes
        import tools

        data = bytes(range(256)) * (50 * 1024 * 1024 // 256)
        with sandboxes():
            digest, back = tools.digest(data)
        print(len(back), back == data, digest == hashlib.sha256(data).hexdigest())
        """
    )
    assert project.ok() == ["52428800 True True"]


def test_payload_limit(project: Project, provider: str) -> None:
    project.rules(provider, "remote-max-payload=1MB")
    project.tools(ECHO_TOOLS)
    project.host(
        """
        import re
        from pysandboxes import sandboxes
        from pysandboxes.errors import SandBoxProtocolError
        import tools

        with sandboxes():
            try:
                tools.echo(b"x" * 2_000_000)
            except SandBoxProtocolError as e:
                print(type(e).__name__, re.sub(r"\\d{7} bytes", "2 MB", str(e)))
            try:
                tools.big(2_000_000)
            except SandBoxProtocolError as e:
                print(type(e).__name__, "remote-max-payload=1000000" in str(e))
            print(len(tools.echo(b"x" * 500_000)))
        """
    )
    assert project.ok() == [
        "SandBoxProtocolError cannot send a tuple object to the sandbox: 2 MB exceeds "
        "remote-max-payload=1000000",
        "SandBoxProtocolError True",
        "500000",
    ]


def test_payload_limit_on_a_result_names_the_direction(project: Project) -> None:
    project.rules("landlock", "remote-max-payload=1MB")
    project.tools(ECHO_TOOLS)
    project.host(
        """
        from pysandboxes import sandboxes
        from pysandboxes.errors import SandBoxProtocolError
        import tools

        with sandboxes():
            try:
                tools.big(2_000_000)
            except SandBoxProtocolError as e:
                print(e)
        """
    )
    (message,) = project.ok()
    assert "remote-max-payload=1000000" in message
    assert "to the sandbox" not in message, message


def test_unpicklable_argument(project: Project, provider: str) -> None:
    project.rules(provider)
    project.tools(ECHO_TOOLS)
    project.host(
        """
        from pysandboxes import sandboxes
        from pysandboxes.errors import SandBoxProtocolError
        import tools

        with sandboxes():
            try:
                tools.echo({"callback": lambda: 1})
            except SandBoxProtocolError as e:
                print(type(e).__name__, e)
            print(tools.echo("still works"))
        """
    )
    assert project.ok() == [
        "SandBoxProtocolError cannot send <lambda> to the sandbox: functions and classes defined inside "
        "functions (and lambdas) cannot be pickled; define them at module level, or send data instead",
        "still works",
    ]


# -- rule files ------------------------------------------------------------------------------


def test_broken_rule_file(project: Project, provider: str) -> None:
    project.rules(provider, "expose-ro=./nowhere")
    project.tools(ECHO_TOOLS)
    project.host(
        """
        from pysandboxes import sandboxes
        from pysandboxes.errors import RuleSyntaxError
        import tools

        try:
            with sandboxes():
                tools.echo(1)
        except RuleSyntaxError as e:
            print(type(e).__name__, e)
        """
    )
    assert project.ok() == [
        f"RuleSyntaxError .py-sandboxes(2): 'expose-ro=./nowhere': '{project.root}/nowhere' does not exist; "
        "create it, or remove the rule"
    ]


UNIX_TOOLS = """
import os, socket
from pysandboxes import sandbox

@sandbox
def serve_and_connect(path):
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen()
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(path)
    client.close()
    server.close()
    os.unlink(path)
    return "connected"
"""

UNIX_HOST = """
import os
from pysandboxes import SandBoxError, sandbox_denials, sandboxes
import tools

with sandboxes():
    try:
        print(tools.serve_and_connect(os.path.abspath("run/s.sock")))
    except PermissionError as e:
        print(type(e).__name__, isinstance(e, SandBoxError))
        print(*sandbox_denials(e), sep="\\n")
"""


def test_a_unix_socket_works_with_its_rule_under_landlock(project: Project) -> None:
    (project.root / "run").mkdir()
    project.rules("landlock", "python-import=socket", "expose-rw=./run", "landlock.unix-sockets=true")
    project.tools(UNIX_TOOLS)
    project.host(UNIX_HOST)
    assert project.ok() == ["connected"]


def test_a_unix_socket_the_kernel_refuses_is_a_refusal_naming_the_rule(project: Project) -> None:
    # A regression test: the seccomp filter's EACCES came back as a bare PermissionError.
    (project.root / "run").mkdir()
    project.rules("landlock", "python-import=socket", "expose-rw=./run")
    project.tools(UNIX_TOOLS)
    project.host(UNIX_HOST)
    assert project.ok() == [
        "RulePermissionError True",
        "RulePermissionError: Creating an AF_UNIX socket DENIED: os-sandbox=landlock refuses UNIX "
        "sockets (the kernel layer cannot tell which named socket one reaches).",
        "Add `landlock.unix-sockets=true` to the rule file, and `expose-rw=` for the socket's path.",
    ]
