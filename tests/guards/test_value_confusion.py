"""Values that lie about themselves: every call is judged on the value C uses (issue 16, item 1).

A class of the program answers any question the guard asks one of its objects: a metaclass
makes ``__mro__`` a property (``LyingStr`` below "is" an ``int``, a descriptor judged when it
was opened), ``__fspath__`` answers one path to the guard and another to C, ``__str__`` and
``encode()`` name another host, comparisons let any port match. Each test makes the call with
the lie and with the plain value: both are refused (or allowed) the same way, and what the
lie aimed at is left untouched.
"""

from __future__ import annotations

import os
import socket
import textwrap
import uuid
from typing import Any

import pytest

# Defined in every program below: a str that claims to be an int (an already-judged descriptor).
LIARS = """
class Liar(type):
    @property
    def __mro__(cls):
        return (cls, int, object)
class LyingStr(str, metaclass=Liar):
    pass
"""

# UNIX sockets: the kernel layer refuses to create one without the key (the Python layer's
# judgement is what these tests are about)
IMPORTS = "python-import=os, io, _io, sqlite3, socket, pathlib\nlandlock.unix-sockets=true"


def program(*parts: str) -> str:
    """The parts of a program, each dedented on its own."""
    return "".join(textwrap.dedent(part).lstrip("\n") for part in parts)


def not_exposed(path: Any) -> str:
    return f"RuleFileNotFoundError: Access to '{path}' must be accepted by a rule."


def refused_net(message: str) -> str:
    return f"RuleSocketConnectionRefusedError: {message}"


# -- a str that claims to be an int ------------------------------------------------------------

#: call -> (the expression run on T, the path T names); every one is refused by the rules below
FILE_CALLS = {
    "open": ("open(T).read()", "@SECRET@/secret.txt"),
    "os.open": ("os.read(os.open(T, os.O_RDONLY), 99)", "@SECRET@/secret.txt"),
    "io.FileIO": ("io.FileIO(T).read()", "@SECRET@/secret.txt"),
    "os.listdir": ("os.listdir(T)", "@SECRET@"),
    "os.scandir": ("[e.name for e in os.scandir(T)]", "@SECRET@"),
    "os.mkdir": ("os.mkdir(T)", "@SECRET@/new"),
    "os.rename": ("os.rename(T, '@DATA@/stolen.txt')", "@SECRET@/secret.txt"),
    "os.remove": ("os.remove(T)", "@SECRET@/secret.txt"),
    "os.chmod": ("os.chmod(T, 0o777)", "@SECRET@/secret.txt"),
    "sqlite3.connect": ("sqlite3.connect(T).execute('create table t(x)')", "@SECRET@/new.db"),
    "os.stat": ("os.stat(T).st_size", "@SECRET@/secret.txt"),
    "AF_UNIX connect": ("socket.socket(socket.AF_UNIX).connect(T)", "@SECRET@/s"),
    "AF_UNIX bind": ("socket.socket(socket.AF_UNIX).bind(T)", "@SECRET@/new.sock"),
    "open ignored": ("open(T).read()", "@DATA@/.env"),
}


@pytest.fixture
def secret_server(project: Any) -> Any:
    """A UNIX socket listening in the secret directory (what a docker.sock would be)."""
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(project.secret / "s"))
    server.listen(4)
    yield server
    server.close()


@pytest.mark.parametrize("call", list(FILE_CALLS))
def test_a_str_claiming_to_be_a_descriptor_is_judged_as_its_path(
    project: Any, provider: str, secret_server: Any, call: str
) -> None:
    expression, target = FILE_CALLS[call]
    code = f"""
    import os, io, sqlite3, socket
    def call(T):
        return {expression}
    attempt("plain", call, "{target}")
    attempt("lying", call, LyingStr("{target}"))
    """
    run = project.run(program(LIARS, code), f"expose-rw=@DATA@\nignore=.env\n{IMPORTS}", provider=provider)
    path = project.fill(target)
    if call == "open ignored":
        expected = f"RuleFileNotFoundError: Access to '{path}' is ignored by rule 'ignore=.env' from .py-sandboxes(2)"
    else:
        expected = not_exposed(path)
    assert run.outcomes() == {"plain": expected, "lying": expected}
    assert sorted(os.listdir(project.secret)) == ["s", "secret.txt"]
    assert (project.secret / "secret.txt").read_text() == "TOPSECRET\n"
    assert (project.secret / "secret.txt").stat().st_mode & 0o777 != 0o777


def test_a_str_claiming_to_be_a_descriptor_still_opens_an_allowed_path(project: Any, provider: str) -> None:
    code = """
    import os
    F = LyingStr("@DATA@/data.txt")
    attempt("open", lambda: open(F).read())
    attempt("os.stat", lambda: os.stat(F).st_size)
    attempt("os.listdir", lambda: sorted(os.listdir(LyingStr("@DATA@"))))
    """
    run = project.run(program(LIARS, code), f"expose-ro=@DATA@\n{IMPORTS}", provider=provider)
    assert run.outcomes() == {
        "open": "OK 'DATA\\n'",
        "os.stat": "OK 5",
        "os.listdir": "OK ['.env', 'data.txt']",
    }


# -- an os.PathLike that answers differently each time -------------------------------------------

FLIPPING = """
import io, os, pathlib, sqlite3
class Flipping:
    \"\"\"Answers `first`, then `second`, then `first`...: the guard and C must not ask twice.\"\"\"
    def __init__(self, first, second):
        self.answers, self.calls = (first, second), 0
    def __fspath__(self):
        self.calls += 1
        return self.answers[(self.calls - 1) % 2]
def both(first, second, call):
    path = Flipping(first, second)
    return (call(path), path.calls)
D, S = "@DATA@", "@SECRET@"
"""


def test_a_path_object_is_converted_once_and_judged_as_converted(project: Any, provider: str) -> None:
    code = """
    for order, first, second in (("data first", D, S), ("secret first", S, D)):
        attempt(order + ": open", both, first + "/data.txt", second + "/secret.txt", lambda p: open(p).read())
        attempt(order + ": os.stat", both, first + "/data.txt", second + "/secret.txt", lambda p: os.stat(p).st_size)
        attempt(order + ": os.listdir", both, first, second, os.listdir)
        attempt(order + ": sqlite3", both, first + "/a.db", second + "/a.db", lambda p: sqlite3.connect(p).execute("create table t(x)") and None)
        attempt(order + ": io.FileIO", both, first + "/data.txt", second + "/secret.txt", lambda p: io.FileIO(p).read())
    """
    run = project.run(program(FLIPPING, code), f"expose-rw=@DATA@\n{IMPORTS}", provider=provider)
    cannot_tell = (
        "RulePermissionError: Cannot tell which file a 'Flipping' object names: the sandbox judges the "
        "path C uses, and this object could name another one when asked again."
    )
    secret = project.secret
    assert run.outcomes() == {
        "data first: open": "OK ('DATA\\n', 1)",
        "data first: os.stat": "OK (5, 1)",
        "data first: os.listdir": "OK (['.env', 'data.txt'], 1)",
        "data first: sqlite3": "OK (None, 1)",
        "data first: io.FileIO": cannot_tell,  # FileIO converted it before the event: unknown
        "secret first: open": not_exposed(secret / "data.txt"),
        "secret first: os.stat": not_exposed(secret / "data.txt"),
        "secret first: os.listdir": not_exposed(secret),
        "secret first: sqlite3": not_exposed(secret / "a.db"),
        "secret first: io.FileIO": cannot_tell,
    }
    assert sorted(os.listdir(secret)) == ["secret.txt"]
    assert (project.data / "a.db").exists()


PATHLIB = """
import io, os, pathlib, shutil, sqlite3
for where in ("@DATA@", "@SECRET@"):
    d = pathlib.Path(where)
    attempt(d.name + " open", lambda: open(d / "data.txt").read())
    attempt(d.name + " read_text", lambda: (d / "data.txt").read_text())
    attempt(d.name + " os.stat", lambda: os.stat(d / "data.txt").st_size)
    attempt(d.name + " os.listdir", lambda: sorted(os.listdir(d)))
    attempt(d.name + " sqlite3", lambda: sqlite3.connect(d / "b.db").execute("create table t(x)") and None)
    attempt(d.name + " shutil.copy", lambda: shutil.copy(d / "data.txt", d / "copy.txt") and None)
attempt("io.FileIO", lambda: io.FileIO(pathlib.Path("@DATA@/data.txt")).read())
"""


def test_pathlib_paths_keep_working_where_c_converts_them(project: Any, provider: str) -> None:
    (project.secret / "data.txt").write_text("SECRET\n")
    run = project.run(PATHLIB, f"expose-rw=@DATA@\n{IMPORTS}\npython-import=shutil", provider=provider)
    secret = project.secret
    assert run.outcomes() == {
        "data open": "OK 'DATA\\n'",
        "data read_text": "OK 'DATA\\n'",
        "data os.stat": "OK 5",
        "data os.listdir": "OK ['.env', 'data.txt']",
        "data sqlite3": "OK",
        "data shutil.copy": "OK",
        "secret open": not_exposed(secret / "data.txt"),
        "secret read_text": not_exposed(secret / "data.txt"),
        "secret os.stat": not_exposed(secret / "data.txt"),
        "secret os.listdir": not_exposed(secret),
        "secret sqlite3": not_exposed(secret / "b.db"),
        "secret shutil.copy": not_exposed(secret / "data.txt"),
        # io.FileIO gets the object itself, converted by C before the event: refused (docs)
        "io.FileIO": "RulePermissionError: Cannot tell which file a 'PosixPath' object names: the "
        "sandbox judges the path C uses, and this object could name another one when asked again.",
    }
    assert (project.data / "copy.txt").read_text() == "DATA\n"


# -- the other arguments of the wrappers ----------------------------------------------------------

WRAPPER_ARGUMENTS = """
import os
class LyingFd(int):
    \"\"\"A descriptor whose text names another one.\"\"\"
    def __str__(self):
        return str(int(RW))
    __repr__ = __str__
class Flip:
    \"\"\"False, then True, then False...\"\"\"
    calls = 0
    def __bool__(self):
        Flip.calls += 1
        return Flip.calls % 2 == 0
class Absolute(str):
    def startswith(self, prefix, *args):
        return True
RW = os.open("@DATA@", os.O_RDONLY)
RO = os.open("@PROJECT@", os.O_RDONLY)
os.chdir("@DATA@")  # where a relative path is judged when dir_fd is lost
attempt("mkfifo plain dir_fd", os.mkfifo, "fifo", dir_fd=RO)
attempt("mkfifo lying dir_fd", os.mkfifo, "fifo", dir_fd=LyingFd(RO))
attempt("os.open plain", os.open, "new.txt", os.O_CREAT | os.O_WRONLY, dir_fd=RO)
attempt("os.open claiming absolute", os.open, Absolute("new.txt"), os.O_CREAT | os.O_WRONLY, dir_fd=RO)
attempt("stat following", lambda: os.stat("@DATA@/link", follow_symlinks=True).st_size)
attempt("stat flipping", lambda: os.stat("@DATA@/link", follow_symlinks=Flip()).st_size)
"""


def test_a_wrapper_hands_c_the_arguments_it_judged(project: Any, provider: str) -> None:
    target = project.secret / "secret.txt"
    (project.data / "link").symlink_to(target)
    run = project.run(
        WRAPPER_ARGUMENTS, f"expose-rw=@DATA@\nexpose-ro=@PROJECT@\n{IMPORTS}", provider=provider
    )
    read_only = (
        f"RulePermissionError: Cannot write to '{project.root}/@NAME@': rule 'expose-ro={project.root}' "
        "from .py-sandboxes(2) exposes it read-only."
    )
    assert run.outcomes() == {
        "mkfifo plain dir_fd": read_only.replace("@NAME@", "fifo"),
        "mkfifo lying dir_fd": read_only.replace("@NAME@", "fifo"),
        "os.open plain": read_only.replace("@NAME@", "new.txt"),
        "os.open claiming absolute": read_only.replace("@NAME@", "new.txt"),
        "stat following": not_exposed(target),
        # asked once (False): the link itself is judged and stat()ed, not its target
        "stat flipping": f"OK {len(str(target))}",
    }
    assert sorted(os.listdir(project.root)) == [".py-sandboxes", "prog.py"]


# -- hosts and ports ---------------------------------------------------------------------------

NET = """
import socket
def tcp(host, port, c_method=False):
    s = socket.socket()
    try:
        if c_method:  # the C base class: no Python wrapper in between, only the audit event
            return socket.socket.__mro__[1].connect_ex(s, (host, port))
        return s.connect_ex((host, port))
    finally:
        s.close()
"""


@pytest.fixture
def listening_on_127_0_0_2() -> Any:
    server = socket.socket()
    server.bind(("127.0.0.2", 0))
    server.listen(4)
    yield server.getsockname()[1]
    server.close()


def test_a_host_is_judged_as_the_host_c_connects_to(
    project: Any, provider: str, listening_on_127_0_0_2: int
) -> None:
    port = listening_on_127_0_0_2
    code = f"""
    class HidesStr(type):
        @property
        def __mro__(cls):
            return (cls, object)
    class Host(str, metaclass=HidesStr):
        def __str__(self):
            return "127.0.0.1"
    attempt("allowed", tcp, "127.0.0.1", {port})
    attempt("plain", tcp, "127.0.0.2", {port})
    attempt("lying", tcp, Host("127.0.0.2"), {port})
    attempt("lying, C method", tcp, Host("127.0.0.2"), {port}, True)
    """
    run = project.run(program(NET, code), f"net=ALLOW|tcp|127.0.0.1|{port}|OUT\n{IMPORTS}", provider=provider)
    denied = refused_net(f"Connection to [127.0.0.2]:{port} DENIED by implicit default policy")
    assert run.outcomes() == {
        "allowed": "OK 111",  # nothing listens on 127.0.0.1: the kernel's answer
        "plain": denied,
        "lying": denied,  # the wrapper hands C the characters, which are judged
        "lying, C method": refused_net(
            "Connection to a host given as a 'Host' object DENIED: C resolves what its encode() "
            "answers, not what it shows."
        ),
    }


def test_a_port_is_compared_as_the_number_c_uses(project: Any, provider: str, listening: Any) -> None:
    port = listening()
    code = f"""
    class Port(int):
        def __le__(self, other): return True
        def __ge__(self, other): return True
        def __lt__(self, other): return False
        def __gt__(self, other): return False
    attempt("allowed", tcp, "127.0.0.1", 1)
    attempt("plain", tcp, "127.0.0.1", {port})
    attempt("lying", tcp, "127.0.0.1", Port({port}))
    attempt("lying, C method", tcp, "127.0.0.1", Port({port}), True)
    """
    run = project.run(program(NET, code), f"net=ALLOW|tcp|127.0.0.1|1|OUT\n{IMPORTS}", provider=provider)
    denied = refused_net(f"Connection to [127.0.0.1]:{port} DENIED by implicit default policy")
    assert run.outcomes() == {
        "allowed": "OK 111",
        "plain": denied,
        "lying": denied,
        "lying, C method": denied,
    }


@pytest.fixture
def abstract_server() -> Any:
    name = f"\0pysandboxes-{uuid.uuid4().hex}"
    server = socket.socket(socket.AF_UNIX)
    server.bind(name)
    server.listen(4)
    yield name
    server.close()


def test_an_abstract_socket_name_is_read_as_c_reads_it(
    project: Any, provider: str, abstract_server: str
) -> None:
    code = f"""
    import socket
    class Slash(str):
        def __getitem__(self, index):
            return "/"
    def connect(name):
        socket.socket(socket.AF_UNIX).connect(name)
    attempt("plain", connect, {abstract_server!r})
    attempt("lying", connect, Slash({abstract_server!r}))
    attempt("bytes", connect, {abstract_server.encode()!r})
    """
    run = project.run(code, IMPORTS, provider=provider)
    denied = refused_net(
        "Connection to an abstract AF_UNIX socket DENIED: abstract sockets have no path a file rule can cover."
    )
    assert run.outcomes() == {"plain": denied, "lying": denied, "bytes": denied}


def test_an_af_unix_path_is_judged_up_to_its_nul(project: Any, provider: str, secret_server: Any) -> None:
    code = """
    import socket
    def connect(name):
        socket.socket(socket.AF_UNIX).connect(name)
    attempt("plain", connect, "@SECRET@/s")
    attempt("nul", connect, "@SECRET@/s\\0junk")
    attempt("bytearray", connect, bytearray(b"@DATA@/s"))
    """
    run = project.run(code, f"expose-rw=@DATA@\n{IMPORTS}", provider=provider)
    assert run.outcomes() == {
        "plain": not_exposed(project.secret / "s"),
        "nul": not_exposed(project.secret / "s"),
        "bytearray": refused_net(
            "Socket operation on an AF_UNIX address given as a 'bytearray' object DENIED: it can change after C read it."
        ),
    }


def test_an_sqlite_uri_is_judged_up_to_its_nul(project: Any, provider: str) -> None:
    code = """
    import sqlite3
    def create(name):
        sqlite3.connect(name, uri=True).execute("create table t(x)")
    attempt("plain", create, "file:@SECRET@/a.db?mode=rwc")
    attempt("%00", create, "file:@SECRET@/a.db%00.ignored?mode=rwc")
    attempt("bytes", create, b"file:@SECRET@/b.db?mode=rwc")
    """
    run = project.run(code, f"expose-rw=@PROJECT@\n{IMPORTS}", provider=provider)
    assert run.outcomes() == {
        "plain": not_exposed(project.secret / "a.db"),
        "%00": not_exposed(project.secret / "a.db"),
        "bytes": not_exposed(project.secret / "b.db"),
    }
    assert sorted(os.listdir(project.secret)) == ["secret.txt"]


# -- names: judged before any query leaves (a network namespace: no route out) ----------------------

LOOKUPS = """
import socket
class Name(str):
    \"\"\"Shows 'localhost'; C resolves what encode() answers (the idna codec calls it).\"\"\"
    def encode(self, *args, **kwargs):
        return b"leak.example.invalid"
def tcp(host, port, c_method=False):
    s = socket.socket()
    try:
        if c_method:
            return socket.socket.__mro__[1].connect(s, (host, port))
        return s.connect((host, port))
    finally:
        s.close()
attempt("getaddrinfo localhost", lambda: socket.getaddrinfo("localhost", 80)[0][4])
attempt("getaddrinfo plain", socket.getaddrinfo, "leak.example.invalid", 80)
attempt("getaddrinfo lying", socket.getaddrinfo, Name("localhost"), 80)
attempt("gethostbyname lying", socket.gethostbyname, Name("localhost"))
attempt("connect plain", tcp, "leak.example.invalid", 443)
attempt("connect lying", tcp, Name("localhost"), 443)
attempt("getaddrinfo granted", socket.getaddrinfo, "granted.example.invalid", 443)
attempt("connect granted", tcp, "granted.example.invalid", 443)
"""


def test_a_name_is_judged_as_c_resolves_it_before_any_query(project: Any, provider: str) -> None:
    rules = f"{IMPORTS}\nnet=ALLOW|tcp|granted.example.invalid|443|OUT\nnet=ALLOW|tcp|127.0.0.1|80|OUT"
    run = project.run(LOOKUPS, rules, provider=provider, netns=True)
    outcomes = run.outcomes()
    never = refused_net(
        "Resolution of 'leak.example.invalid' DENIED: no net= rule names it, so it is never looked up."
    )
    lying = refused_net(
        "Resolution of a host given as a 'Name' object DENIED: C resolves what its encode() "
        "answers, not what it shows."
    )
    # a query could only fail in the namespace (gaierror): a refusal means none was sent
    attempted = {label: outcomes.pop(label) for label in ("getaddrinfo granted", "connect granted")}
    assert outcomes == {
        "getaddrinfo localhost": "OK ('127.0.0.1', 80)",
        "getaddrinfo plain": never,
        "getaddrinfo lying": lying,
        "gethostbyname lying": lying,
        "connect plain": never,  # judged by socket.socket.connect before C resolves the name
        # the wrapper hands C the characters, 'localhost' (not what encode() answers)
        "connect lying": refused_net(
            "Connection to 'localhost' (127.0.0.1:443) DENIED by implicit default policy"
        ),
    }
    assert all(outcome.startswith("gaierror: ") for outcome in attempted.values()), attempted


@pytest.mark.xfail(
    strict=True,
    reason="Python-layer limit (docs/security-model.md §5): the C method _socket.socket.connect "
    "resolves a host name before it raises the socket.connect event, so the name's DNS query "
    "leaves before the refusal; only a network namespace (bwrap, unshare) holds",
)
def test_a_name_given_to_the_c_connect_is_refused_before_a_query(project: Any) -> None:
    code = LOOKUPS.partition("attempt(")[0] + 'attempt("c connect", tcp, "leak.example.invalid", 443, True)\n'
    run = project.run(code, IMPORTS, provider="subprocess", netns=True)
    assert run.outcome("c connect").startswith("RuleSocketConnectionRefusedError: ")


# -- code objects: the file name a code object was compiled under ------------------------------------

LYING_FILENAME = """
import types
class Library(str):
    \"\"\"A file name that claims to start with the standard library's directory.\"\"\"
    def startswith(self, *args):
        return True
code = compile("result = eval('6 * 7')", Library("/nowhere/x.py"), "exec")
attempt("plain", eval, "6 * 7")
attempt("from a lying file name", types.FunctionType(code, {}))
"""


def test_code_compiled_under_a_lying_file_name_is_not_library_code(project: Any, provider: str) -> None:
    rules = "python-api=ALLOW:builtins.compile\npython-import=types"
    run = project.run(LYING_FILENAME, rules, provider=provider)
    denied = "RuleApiPermissionError: builtins.eval() is denied by the API guard (category: dynamic-code)."
    assert run.outcomes() == {"plain": denied, "from a lying file name": denied}
