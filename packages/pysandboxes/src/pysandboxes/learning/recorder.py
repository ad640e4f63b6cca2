"""What a learning run needed: every guard asks the recorder before it refuses.

Learning mode is permissive and has no OS boundary: a refusal that a rule could lift is
recorded here and the access goes on. Refusals no rule can lift (an ``ignore=`` line, the rule
files themselves, an explicit ``net=DENY`` or ``python-api=DENY:``, raw sockets) still happen,
as in a strict run.

The recorder keeps raw facts (paths as the program gave them, addresses, names); the writer
(``writer.py``) validates and generalises them into rules at the end. A journal callback, when
given, receives each new fact as it is recorded: partial mode's child streams them to the host,
so a child that dies loses nothing.
"""

from __future__ import annotations

import _thread
import os
import posix
import sys
import threading
import types
import weakref

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    from ..rules.policy import Policy

#: Variables that steer learning itself: never turned into rules.
CONTROL_VARIABLES = frozenset({"PYTHON_DOTENV_DISABLED", "SANDBOX_LEARN"})
_CONTROL_PREFIXES = ("PYSANDBOXES_",)

_OURS = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + "/"
#: taken before the guards wrap it: the recorder runs inside the guards
_lstat = posix.lstat


def _exists(path: str) -> bool:
    try:
        _lstat(path)
    except (OSError, ValueError):
        return False
    return True


class Recorder:
    """Facts seen during one learning run. Thread-safe; cheap enough for a trusted run."""

    def __init__(
        self, journal: Callable[[tuple[Any, ...]], None] | None = None, policy: Policy | None = None
    ) -> None:
        self._lock = _thread.allocate_lock()
        self._busy = threading.local()  # a thread inside file(): its own lookups pass
        self.journal = journal
        files = policy.files_policy if policy is not None else None
        #: the rule files and the learn output: never writable, learning or not
        self.protected = tuple(sorted(files.protected)) if files is not None else ()
        #: ignore= rules apply while learning too: (absolute, match)
        #: the rules grant eval/exec/compile unguarded: learning records grants of the same kind
        self.raw_dynamic = policy is not None and any(
            policy.decide_api(f"builtins.{n}").allowed for n in ("eval", "exec", "compile")
        )
        self.compiled: weakref.WeakSet[types.CodeType] = weakref.WeakSet()
        #: the rules' python-api= lines: a function an explicit DENY names stays refused
        self.api_policy = policy.api if policy is not None else None
        self.ignores = (
            tuple((i.absolute, i.regex.match, i.rule.describe()) for i in files.ignores)
            if files is not None
            else ()
        )
        #: while True (the writer is at work) every access is allowed and nothing recorded
        self.suspended = False
        self.files: dict[str, bool] = {}  # absolute path -> written
        self.net: set[tuple[str, str, int, str]] = set()  # (protocol, host, port, direction)
        #: TCP binds to port 0 of sockets that neither listened nor connected (yet): a probe
        #: (urllib3 binds ::1 to learn whether IPv6 works, then closes) is no listening right
        self.probes: set[tuple[str, str, int, str]] = set()
        self._binding = threading.local()  # the socket whose bind() runs in this thread
        self._probing: weakref.WeakKeyDictionary[Any, tuple[str, str, int, str]] = weakref.WeakKeyDictionary()
        self.lookups: dict[str, set[int]] = {}  # name -> ports asked with it (0: none)
        self.addresses: dict[str, str] = {}  # address -> the name it was found for
        self.imports: set[str] = set()
        self.api: set[str] = set()
        self.env: dict[str, str] = {}  # name -> "present" | "absent" | "scan"
        self.eval: set[str] = set()  # eval-* rule lines
        self.objects = False  # a @sandbox call returned an object (not plain data)
        self.dotenv: set[str] = set()  # .env files read: no rule, a note (they hold secrets)

    # -- facts -----------------------------------------------------------------------------

    def add(self, fact: tuple[Any, ...]) -> None:
        """Record one fact: ``("file", path, write)``, ``("net", proto, host, port, dir)``,
        ``("lookup", name, port)``, ``("address", address, name)``, ``("import", name)``,
        ``("api", function)``, ``("env", name, how)``, ``("eval", line)``, ``("objects",)``,
        ``("dotenv", path)``."""
        with self._lock:
            new = self._add(fact)
        if new and self.journal is not None:
            self.journal(fact)

    def _add(self, fact: tuple[Any, ...]) -> bool:
        kind = fact[0]
        if kind == "file":
            path, write = str(fact[1]), bool(fact[2])
            before = self.files.get(path)
            if before is None or (write and not before):
                self.files[path] = write
                return True
            return False
        if kind == "net":
            item = (str(fact[1]), str(fact[2]), int(fact[3]), str(fact[4]))
            if item in self.net:
                return False
            self.net.add(item)
            return True
        if kind == "probe":
            item = (str(fact[1]), str(fact[2]), int(fact[3]), str(fact[4]))
            if item in self.probes:
                return False
            self.probes.add(item)
            return True
        if kind == "lookup":
            ports = self.lookups.setdefault(str(fact[1]), set())
            if int(fact[2]) in ports:
                return False
            ports.add(int(fact[2]))
            return True
        if kind == "address":
            if fact[1] in self.addresses:
                return False
            self.addresses[str(fact[1])] = str(fact[2])
            return True
        if kind == "import":
            if fact[1] in self.imports:
                return False
            self.imports.add(str(fact[1]))
            return True
        if kind == "api":
            if fact[1] in self.api:
                return False
            self.api.add(str(fact[1]))
            return True
        if kind == "env":
            name, how = str(fact[1]), str(fact[2])
            previous = self.env.get(name)
            # a direct read beats a scan; a present value beats an absent one
            rank = {"scan": 0, "absent": 1, "present": 2}
            if previous is not None and rank.get(previous, 0) >= rank.get(how, 0):
                return False
            self.env[name] = how
            return True
        if kind == "eval":
            if fact[1] in self.eval:
                return False
            self.eval.add(str(fact[1]))
            return True
        if kind == "dotenv":
            if fact[1] in self.dotenv:
                return False
            self.dotenv.add(str(fact[1]))
            return True
        if kind == "objects":
            if self.objects:
                return False
            self.objects = True
            return True
        return False

    def facts(self) -> Iterator[tuple[Any, ...]]:
        with self._lock:
            yield from (("file", p, w) for p, w in self.files.items())
            yield from (("net", *n) for n in self.net)
            yield from (("probe", *n) for n in self.probes)
            yield from (("lookup", n, p) for n, ports in self.lookups.items() for p in ports)
            yield from (("address", a, n) for a, n in self.addresses.items())
            yield from (("import", n) for n in self.imports)
            yield from (("api", f) for f in self.api)
            yield from (("env", n, h) for n, h in self.env.items())
            yield from (("eval", line) for line in self.eval)
            yield from (("dotenv", p) for p in self.dotenv)
            if self.objects:
                yield ("objects",)

    def empty(self) -> bool:
        return not any(
            (
                self.files,
                self.net,
                self.lookups,
                self.imports,
                self.api,
                self.env,
                self.eval,
                self.objects,
                self.dotenv,
            )
        )

    # -- the guards' callbacks (True: allow) ------------------------------------------------

    def file(self, path: str, write: bool, message: str) -> bool:
        if self.suspended or getattr(self._busy, "on", False):
            return True
        self._busy.on = True
        try:
            return self._file(path, write, message)
        finally:
            self._busy.on = False

    def _refuse_untouchable(self, path: str, write: bool) -> None:
        """Raise the refusal of a path no rule can open: ignored, or (to write) a rule file or
        a directory holding one. Learning does not lift these."""
        from ..errors import RuleFileNotFoundError, RulePermissionError

        real = os.path.realpath(path)
        for candidate in {path, real}:
            for absolute, match, rule in self.ignores:
                if absolute:
                    probe = candidate
                    while True:
                        if match(probe) is not None:
                            raise RuleFileNotFoundError(f"Access to '{real}' is ignored by rule {rule}", real)
                        if probe == "/":
                            break
                        probe = os.path.dirname(probe)
                elif any(match(part) is not None for part in candidate.split("/") if part):
                    raise RuleFileNotFoundError(f"Access to '{real}' is ignored by rule {rule}", real)
            if write and any(
                p == candidate or p.startswith(candidate.rstrip("/") + "/") for p in self.protected
            ):
                raise RulePermissionError(
                    f"Cannot write to '{real}': it is part of the active sandbox configuration.", real
                )

    def _file(self, path: str, write: bool, message: str) -> bool:
        if message.startswith("Access to '") and "must be accepted by a rule" in message:
            pass
        elif message.startswith("Cannot write to '") and "exposes it read-only" in message:
            write = True
        else:
            return False  # ignore=, the rule files: no rule lifts these
        self._refuse_untouchable(path, write)
        if not write and not _exists(path):
            return True  # a probe for a missing file: refused or not, it is not there
        if _tolerated():
            return True
        if not write and _is_dotenv(path):
            self.add(("dotenv", os.path.abspath(path)))  # a note, never a right: it holds secrets
            return True
        self.add(("file", path, write))
        return True

    def connection(self, host: str, port: int, protocol: str, direction: str) -> bool:
        if self.suspended:
            return True
        item = (protocol, str(host), int(port or 0), direction)
        sock = getattr(self._binding, "sock", None)
        if sock is not None and item[2] == 0 and protocol == "tcp" and direction == "in":
            with self._lock:
                self._probing[sock] = item
            self.add(("probe", *item))  # a right once the socket listens or connects
            return True
        self.add(("net", *item))
        return True

    def binding(self, sock: Any) -> None:
        """``sock.bind()`` starts in this thread (None: it ended)."""
        self._binding.sock = sock

    def used(self, sock: Any) -> None:
        """``sock`` listens or connects: its ephemeral bind was a right after all."""
        with self._lock:
            item = self._probing.pop(sock, None)
        if item is not None:
            self.add(("net", *item))

    def lookup(self, name: str, port: Any) -> bool:
        if self.suspended:
            return True
        try:
            number = int(port) if port is not None else 0
        except (TypeError, ValueError):
            number = 0  # a service name: the connection that follows tells the port
        self.add(("lookup", name, number))
        return True

    def dynamic(self, function: str, source: Any, mode: str, result: Any = None) -> None:
        """eval/exec/compile of the program: the ``eval-*`` lines its source needs (the source
        then runs as it is). ``python-api=ALLOW:builtins.X`` instead when the rules already
        grant raw dynamic code (the two cannot be combined), or for a code object that the
        program's own ``compile()`` did not make."""
        if self.suspended:
            return
        if self.raw_dynamic:
            self.add(("api", f"builtins.{function}"))
            return
        if isinstance(source, types.CodeType):
            if source not in self.compiled:
                self.add(("api", f"builtins.{function}"))
            return
        if isinstance(source, (bytes, bytearray)):
            source = bytes(source).decode("utf-8", "replace")
        lines: list[str] | None = None
        if isinstance(source, str) and mode in ("eval", "exec", "single"):
            try:
                from ..evaluation import needed_rules

                lines = needed_rules(source, mode)
            except Exception:  # not Python, or beyond what a profile can express
                lines = None
        if lines is None:
            self.add(("api", f"builtins.{function}"))
            return
        if isinstance(result, types.CodeType):
            self.compiled.add(result)  # exec() of it needs no grant of its own
        for line in lines:
            key, _, names = line.partition("=")
            for name in names.split(","):
                if name.strip():
                    self.add(("eval", f"{key}={name.strip()}"))

    def refusal(self, refusal: BaseException) -> bool:
        """An import or API refusal (raised by a guard): record it, True to allow."""
        from ..errors import RuleApiPermissionError, RuleModuleNotFoundError

        if self.suspended:
            return True
        if isinstance(refusal, RuleModuleNotFoundError) and refusal.name:
            self.add(("import", refusal.name))
            return True
        if isinstance(refusal, RuleApiPermissionError) and refusal.qualname:
            if self.api_policy is not None:
                decision = self.api_policy.decide(refusal.qualname)
                if decision.rule is not None and not decision.allowed:
                    return False  # an explicit python-api=DENY: the author said no
            self.add(("api", refusal.qualname))
            return True
        return False


def _is_dotenv(path: str) -> bool:
    """``.env`` or ``.env.<something>`` (``.env.local``): a file of secrets by convention."""
    name = os.path.basename(path)
    return name == ".env" or name.startswith(".env.")


_IMPORT_MACHINERY = ("<frozen importlib._bootstrap_external>", "/importlib/_bootstrap_external.py")
#: ``os.path.realpath`` (``Path.resolve()``) lstat()s every component of a path to find the
#: symbolic links; a strict run refuses the lstat of a directory no rule exposes, and realpath
#: takes it for a plain directory. Resolving a path is not reading its directories.
_PATH_RESOLUTION = ("<frozen posixpath>", "/posixpath.py")
#: ``importlib.metadata`` looking for distributions in every ``sys.path`` directory (``''``, the
#: working directory, for ``-c``): a strict run's refusal is an empty directory to it (``FastPath``
#: suppresses the errors of its ``stat`` and ``listdir``), as for the import system's own scan
_METADATA_SEARCH = ("/importlib/metadata/__init__.py", "/importlib_metadata/__init__.py")


def _tolerated() -> bool:
    """Accesses a strict run refuses without harm, so learning them would only widen the
    rules: the import system itself scanning a directory of ``sys.path`` or caching bytecode
    (it reads a module's file through ``get_data``, which is learned), and ``linecache``
    reading source lines for a traceback, ``importlib.metadata`` searching the ``sys.path``
    directories for distributions, and ``os.path.realpath`` looking at each parent of a path
    for symbolic links. Only the import system's *own* accesses: the first
    frame outside the sandbox must be the import machinery's. A module's top-level code runs
    under the import machinery's frames too, and what it opens is the program's access."""
    frame: Any = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_OURS):
        frame = frame.f_back
    if frame is not None:
        filename = frame.f_code.co_filename
        if filename.endswith(_IMPORT_MACHINERY):
            return bool(frame.f_code.co_name != "get_data")
        if filename.endswith(_PATH_RESOLUTION) and frame.f_code.co_name in ("_joinrealpath", "realpath"):
            return True
        if filename.endswith(_METADATA_SEARCH) and frame.f_code.co_name in ("mtime", "children"):
            return True
    while frame is not None:
        if frame.f_code.co_filename.endswith("/linecache.py"):
            return True
        frame = frame.f_back
    return False


# -- the environment -----------------------------------------------------------------------

_SCANNERS = ("/_collections_abc.py", "/os.py", "<frozen _collections_abc>", "<frozen os>")


def _reader(depth: int = 2) -> str | None:
    """How the variable is read: None (our own code: not charged), "scan" (through a view or
    copy of the whole mapping), or "" (a direct read by the program or a library)."""
    frame: Any = sys._getframe(depth)
    scan = False
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.startswith(_OURS):
            return None
        if filename.endswith(_SCANNERS):
            if frame.f_code.co_name in ("__iter__", "copy", "__repr__", "items", "values", "__eq__"):
                scan = True
            frame = frame.f_back
            continue
        return "scan" if scan else ""
    return None


def record_environment(recorder: Recorder) -> None:
    """Replace ``os.environ`` with a mapping that tells the recorder what the program reads."""
    original = os.environ
    base: Any = type(original)
    set_here: set[str] = set()
    #: names the program obtained by listing the environment and has not read back yet:
    #: reading one back is part of that scan (``dict(os.environ)`` lists, then reads each);
    #: once read back, a later read of the name is a read by name, learned as such
    listed: set[str] = set()

    def note(key: Any, present: bool) -> None:
        if recorder.suspended or not isinstance(key, str):
            return
        if key in set_here or key in CONTROL_VARIABLES or key.startswith(_CONTROL_PREFIXES):
            return
        how = _reader(3)
        if how is None:
            return
        if how == "scan" or key in listed:
            listed.discard(key)
            recorder.add(("env", key, "scan"))
        else:
            recorder.add(("env", key, "present" if present else "absent"))

    class LearningEnviron(base):  # type: ignore[misc, valid-type]
        def __getitem__(self, key: Any) -> str:
            try:
                value = super().__getitem__(key)
            except KeyError:
                note(key, False)
                raise
            note(key, True)
            return value  # type: ignore[no-any-return]

        def get(self, key: Any, default: Any = None) -> Any:
            try:
                value = super().__getitem__(key)
            except KeyError:
                note(key, False)
                return default
            note(key, True)
            return value

        def __contains__(self, key: Any) -> bool:
            try:
                super().__getitem__(key)
            except KeyError:
                note(key, False)
                return False
            note(key, True)
            return True

        def __iter__(self) -> Any:
            for key in super().__iter__():
                if isinstance(key, str):
                    listed.add(key)
                yield key

        def __setitem__(self, key: Any, value: Any) -> None:
            if isinstance(key, str):
                set_here.add(key)
            super().__setitem__(key, value)

        def __delitem__(self, key: Any) -> None:
            if isinstance(key, str):
                set_here.add(key)
            super().__delitem__(key)

    learning = LearningEnviron(
        original._data,  # type: ignore[attr-defined]
        original.encodekey,  # type: ignore[attr-defined]
        original.decodekey,  # type: ignore[attr-defined]
        original.encodevalue,  # type: ignore[attr-defined]
        original.decodevalue,  # type: ignore[attr-defined]
    )
    os.environ = learning  # noqa: B003 - the same variables, read through a recording view


def record_resolutions(recorder: Recorder) -> None:
    """Remember which name each address came from, so the rules name hosts, not addresses."""
    import socket

    original = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        answers = original(host, *args, **kwargs)
        if isinstance(host, (str, bytes)) and not recorder.suspended:
            name = host.decode("ascii", "replace") if isinstance(host, bytes) else host
            for answer in answers:
                address = str(answer[4][0])
                if address != name:
                    recorder.add(("address", address, name.lower().rstrip(".")))
        return answers

    getaddrinfo.__doc__ = original.__doc__
    socket.getaddrinfo = getaddrinfo
