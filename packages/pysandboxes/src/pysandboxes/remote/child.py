"""The partial-mode child: start under the rules, then serve calls until the host goes away.

Started by the host as ``python -E -s -c <bootstrap>`` with two inherited descriptors: the
channel (a ``SOCK_SEQPACKET`` socket) and a memory file holding what the host knows (rule
file, command-line rules, its environment for ``${VAR}``, working directory, ``sys.path``,
the modules holding ``@sandbox`` functions, the levels of the sandbox's loggers the host
listens to). Start-up: send the sandbox's log records to the host (when it listens), load
the rules, confine (landlock: before the program's code runs), import the program's modules
(as the host did: before the Python layer's rules apply), build the guards, filter the
environment, start the worker threads, arm the guards, run ``init_fn``, say READY.

Calls run in a pool of worker threads that all wait on the same socket (whole frames each,
thanks to SEQPACKET): a slow call never holds up another, and the pool grows when every
worker is busy. Coroutines run on one event loop thread. A call is cancelled by raising
:class:`CallCancelled` in its thread (or cancelling its task); if it does not stop, the host
kills the child and starts a new one.
"""

from __future__ import annotations

import contextlib
import os
import sys

from .._frames import strip_own_frames
from .._log import debug, debug_enabled
from .._state import State as _State
from ..errors import SandBoxError
from . import codec
from .channel import CALL, CANCEL, CLOSE, END, ERROR, ITEM, RESULT, SHUTDOWN, ChannelClosed
from .registry import CO_ASYNC_GENERATOR, CO_COROUTINE, code_flags, lookup

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from .channel import Channel, Frame

HANDOFF_ENV = "PYSANDBOXES_CHILD"
_LOGGER = "pysandboxes.partial"
MAX_WORKERS = 64
#: a call running this long with nobody listening: another worker takes the socket
HAND_OVER = 0.002
#: after answering, a worker polls this long for the next call before sleeping
SPIN = 60e-6 if len(os.sched_getaffinity(0)) > 1 else 0.0  # one CPU: polling starves the peer


class CallCancelled(BaseException):
    """The host cancelled this call (timeout, or a generator closed early)."""


def in_sandbox() -> bool:
    if _State.importing is not None and _State.in_sandbox:
        _refuse_while_importing()
    return _State.in_sandbox


def _refuse_while_importing() -> None:
    """A module's top level entered the sandbox API while the child imported it: the work of
    a script without an ``if __name__ == "__main__":`` guard, about to run a second time."""
    name = _State.importing
    shown = "the main script" if name == "__main__" else f"the module {name}"
    raise SandBoxError(
        f"{shown} used the sandbox (a @sandbox call or sandboxes()) at its top level while the "
        "sandbox imported it to find its @sandbox functions: its top level runs again in the "
        'sandbox, as with multiprocessing. Put the program\'s work under `if __name__ == "__main__":`'
    )


def main() -> None:
    """The child's entry point (see the module docstring)."""
    import json

    from ..providers.unshare_setup import enter_if_asked

    enter_if_asked()  # os-sandbox=unshare: build the sandbox's view before anything else
    from ..providers.namespaces import Inside

    Inside.take()
    _Libc.parent = os.getppid()  # the host, or the init of a namespace provider's PID namespace
    sock_fd, handoff_fd = (int(x) for x in os.environ.pop(HANDOFF_ENV).split(","))
    import socket

    from .channel import FAILED, Channel

    channel = Channel(socket.socket(fileno=sock_fd))
    try:
        with os.fdopen(handoff_fd, "rb") as f:
            handoff = json.loads(f.read())
        server = _boot(channel, handoff)
    except BaseException as exc:
        message = str(exc) if isinstance(exc, SandBoxError) else f"{type(exc).__name__}: {exc}"
        try:
            channel.send(0, FAILED, message.encode("utf-8", "replace"))
        finally:
            os._exit(3)
    server.serve()


def _boot(channel: Channel, handoff: dict[str, Any]) -> _Server:
    import time

    started = time.perf_counter()
    if handoff.get("log_levels"):
        _forward_logs(channel, handoff["log_levels"])
    from .. import complete
    from ..rules import load_policy

    sys.path[:] = handoff["sys_path"]
    environ: dict[str, str] = handoff.pop("environ")
    from ..rules.origin import CODE, set_display_home

    set_display_home(environ.get("HOME"))
    policy = load_policy(
        handoff["rule_file"],
        extra_rules=[tuple(r) for r in handoff["rules"]],
        environ=environ,
        cwd=handoff["cwd"],
        missing_file="learn",
        extra_source=CODE,
    )
    debug(_LOGGER, "rules loaded at %.1f ms", (time.perf_counter() - started) * 1e3)
    learner = None
    if policy.learning:  # no OS boundary, the host's environment, facts streamed to the host
        learner = _learner(handoff, policy)
        os.environ.update(environ)
    environ.clear()
    if policy.net.hostnames:
        policy = policy.pin_hostnames(complete._resolve)
    provider = handoff["provider"]
    from ..providers import LAUNCHED, unix_sockets_refused_by

    _State.unix_sockets_refused_by = (
        None if learner is not None else unix_sockets_refused_by(policy, provider)
    )

    if provider in LAUNCHED:
        from ..providers.namespaces import start_forwarder

        policy = start_forwarder(policy, provider)
    _State.in_sandbox = True
    from ..limits import open_status

    open_status()  # limit-memory counts from what is mapped later: read it past landlock
    if provider == "landlock" and learner is None:
        # Confined before the program's modules run: what they do at import (start threads,
        # as OpenBLAS does; write a cache under HOME) is under the kernel's rules, as it is
        # under a namespace provider, whose child starts inside its view. Landlock confines
        # only the calling thread: now there is one. Their files are readable (the host
        # listed them); the finders list sys.path's directories now, so that finding a module
        # in the project's directory does not need the right to list it.
        from importlib.machinery import PathFinder

        from ..providers.landlock import confine, plan_for

        PathFinder.find_spec("pysandboxes-finders")
        plan = plan_for(policy, program_files=handoff.get("program_files", ()))
        if debug_enabled(_LOGGER):
            for line in plan.describe():
                debug(_LOGGER, "%s", line)
        confine(plan)
        debug(_LOGGER, "confined at %.1f ms", (time.perf_counter() - started) * 1e3)

    # The program's own modules, loaded as the host loaded them: before the Python layer's
    # rules apply (the OS boundary is up already, except while learning).
    program_files: list[str] = []
    loaded_before = set(sys.modules)
    if learner is not None:
        _learn_what_imports_read(policy, handoff.get("program_files", ()), learner)
    for name in handoff["modules"]:
        if name == "__main__" and not handoff.get("main_file"):
            continue  # a notebook or REPL: its functions cannot be imported (said at call time)
        _State.importing = name
        since = time.perf_counter()
        try:
            module = _import_program_module(name, handoff.get("main_file"))
        finally:
            _State.importing = None
        debug(_LOGGER, "imported %s in %.1f ms", name, (time.perf_counter() - since) * 1e3)
        path = getattr(module, "__file__", None)
        if isinstance(path, str):
            program_files.append(os.path.realpath(path))
    install = None
    if policy.py_sandbox.value is not False:
        from ..guards import prepare

        install = prepare(
            policy,
            program_files=program_files,
            extra_imports=_top_levels(handoff["modules"]) + _third_party(set(sys.modules) - loaded_before),
            learner=learner,
        )
    debug(_LOGGER, "guards built at %.1f ms", (time.perf_counter() - started) * 1e3)
    complete._apply_environment(policy, keep_host=learner is not None)
    if learner is not None:
        from ..learning.recorder import record_environment, record_resolutions

        record_environment(learner)
        record_resolutions(learner)
    server = _Server(channel, policy)
    server.main_file = handoff.get("main_file")
    # What the child itself needs later, loaded now (the import rules are the program's).
    import select  # noqa: F401

    from . import codec  # noqa: F401

    if handoff.get("asyncio"):
        import asyncio  # noqa: F401
    server.start_threads()
    from ..limits import apply_rlimits, from_policy

    apply_rlimits(from_policy(policy, partial=True))
    if install is not None:
        install()
    init = handoff.get("init_fn")
    if init is not None:
        function = _find((init[0], init[1]), handoff.get("main_file"))
        result = function()
        if hasattr(result, "__await__"):
            server.run_coroutine(result)
    from .channel import READY

    debug(_LOGGER, "ready %.1f ms after the interpreter started", (time.perf_counter() - started) * 1e3)
    channel.send(0, READY, str(os.getpid()).encode())
    return server


def _forward_logs(channel: Channel, levels: dict[str, int]) -> None:
    """The host listens to the sandbox's loggers (``PYSANDBOXES_DEBUG=1``, or a level below
    WARNING): here they get the host's levels and send each record to the host (a ``LOG``
    frame), which logs it on its logger of the same name, refusals and debug lines alike."""
    import json
    import logging

    from .channel import LOG

    dumps = json.dumps

    class ToHost(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            try:
                text = record.getMessage()
                if record.exc_info:
                    text += "\n" + logging.Formatter().formatException(record.exc_info)
                payload = dumps([record.name, record.levelno, text[:16384]]).encode()
                channel.send(0, LOG, payload)
            except Exception:  # the host is gone, or a record that cannot be shown
                pass

    handler = ToHost()
    for name, level in levels.items():
        if type(name) is str and type(level) is int:
            logger = logging.getLogger(name)
            logger.setLevel(level)
            logger.addHandler(handler)
            logger.propagate = False  # not also on the child's stderr


def _learn_what_imports_read(policy: Any, program_files: Any, learner: Any) -> None:
    """Learning: the files the program's modules open at import, recorded as the file guard
    would judge them. A strict child imports them under the OS boundary (the landlock child
    confines itself first; a namespace provider's starts inside its view), so what they read
    then needs its rule, while the Python layer, armed after them, never sees it. The hook
    judges only while the child imports a program module; a refusal learning cannot lift
    (``ignore=``) is left to the strict run."""
    from ..guards import files as file_guard

    handlers = file_guard.build(policy, program_files=program_files, learn=learner.file).handlers
    # What the strict child is granted without a rule of the program's (the OS plan: the
    # interpreter and the import path's directories, a program module's file or package, the
    # system files every child reads) is no right to learn; neither is the bytecode cache or the
    # listing of a directory the import system searches beside them.
    from ..providers.landlock import plan_for

    try:
        plan = plan_for(policy, program_files=program_files)
        dirs = (*plan.read_dirs, *plan.write_dirs)
        files = {*plan.read_files, *plan.write_files}
    except Exception:  # a program file gone since the host listed it: judge every access
        dirs, files = (), set()
    writable = tuple(d.rstrip("/") + "/" for d in plan.write_dirs) if dirs else ()
    holders = {os.path.dirname(p) for p in (*dirs, *files)}
    beneath = tuple(d.rstrip("/") + "/" for d in (*dirs, *(h + "/__pycache__" for h in holders)))

    def granted(event: str, args: tuple[Any, ...]) -> bool:
        path = args[0] if args else None
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str):
            return False
        real = os.path.realpath(path)
        if event == "open":  # ("open", path, mode, flags): os.open gives flags, open() a mode
            mode = args[1] if len(args) > 1 else None
            flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
            writes = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
            if (isinstance(mode, str) and any(c in mode for c in "wax+")) or flags & writes:
                return (real + "/").startswith(writable)
        return real in files or real in holders or (real + "/").startswith(beneath)

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if _State.importing is None:
            return
        handler = handlers.get(event)
        if handler is not None and not granted(event, args):
            with contextlib.suppress(Exception):
                handler(args)

    sys.addaudithook(hook)


def _learner(handoff: dict[str, Any], policy: Any) -> Any:
    """Learning mode's recorder: each new fact is appended at once to the host's journal (one
    JSON line), so a child that dies mid-call loses nothing."""
    import json

    from ..learning.recorder import Recorder

    journal = handoff.get("learn_journal")
    if not journal:
        raise SandBoxError("learning mode needs the host's journal; nothing was started")
    fd = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
    dumps = json.dumps
    write = os.write

    def append(fact: tuple[Any, ...]) -> None:
        write(fd, (dumps(fact) + "\n").encode())

    return Recorder(journal=append, policy=policy)


def _top_levels(modules: list[str]) -> list[str]:
    return sorted({m.partition(".")[0] for m in modules if m != "__main__"})


def _third_party(names: set[str]) -> list[str]:
    """The installed packages the program's modules imported, before the rules: importing
    them again (numpy's functions import numpy's own modules when called) runs nothing new.
    The standard library's modules still need their rules (``ctypes`` is loaded by many)."""
    stdlib = sys.stdlib_module_names
    return sorted({n.partition(".")[0] for n in names} - stdlib - {"__main__", "pysandboxes"})


def _import_program_module(name: str, main_file: str | None) -> Any:
    import importlib

    if name == "__main__":
        from .registry import MAIN_ALIAS

        existing = sys.modules.get(MAIN_ALIAS)
        if existing is not None:
            return existing
        if main_file is None:
            raise SandBoxError(
                "a @sandbox function is defined in the host's __main__, which is not a .py file the "
                "sandbox can import; move the function into a module"
            )
        import importlib.util

        spec = importlib.util.spec_from_file_location(MAIN_ALIAS, main_file)
        if spec is None or spec.loader is None:
            raise SandBoxError(f"cannot import the host's main script {main_file}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[MAIN_ALIAS] = module
        spec.loader.exec_module(module)
        return module
    return importlib.import_module(name)


def _find(key: tuple[str, str], main_file: str | None) -> Callable[..., Any]:
    function = lookup(key)
    if function is None:
        module = _import_program_module(key[0], main_file)
        function = lookup(key)
        if function is None:  # not decorated with @sandbox here (an init_fn): by name
            target: Any = module
            for part in key[1].split("."):
                target = getattr(target, part, None)
            function = target
    if function is None or not callable(function):
        raise SandBoxError(f"{key[0]}.{key[1]} is not a function the sandbox can find")
    return function  # type: ignore[no-any-return]


class _Server:
    """The worker pool and the event loop thread."""

    def __init__(self, channel: Channel, policy: Any) -> None:
        import _thread

        self.channel = channel
        self.policy = policy
        self.mode = str(policy.remote_result_mode.value)
        self.max_size = int(policy.remote_max_payload.value)
        import threading

        self.lock = _thread.allocate_lock()
        self.cond = threading.Condition(self.lock)
        self.idle = 0  # workers waiting to listen
        self.workers = 0
        self.busy = 0  # calls running in worker threads
        self.listening = False  # a worker waits on the socket
        self.started = 0.0  # when the last call started
        # Captured before the guards replace them: the sandbox's own threads are not the
        # program's (the API guard refuses threads to the program by default).
        self.start_new_thread = _thread.start_new_thread
        self.get_ident = _thread.get_ident
        self.running: dict[int, int] = {}  # call id -> worker thread id
        self.cancelled: set[int] = set()
        self.tasks: dict[int, Any] = {}  # call id -> asyncio task
        self.loop: Any = None
        self._set_async_exc = _async_exc_setter()
        self.main_file: str | None = None
        # The arguments come from the host (trusted); pickle.loads itself is the program's to
        # ask for (deserialization), so the child keeps the original, taken before arming.
        import _pickle

        self.loads = _pickle.loads

    # -- threads ------------------------------------------------------------------------

    def start_threads(self) -> None:
        _prepare_end_group()
        for _ in range(2):
            self._spawn()
        self.start_new_thread(self._watch_host, ())

    def _spawn(self) -> None:
        with self.lock:
            self.workers += 1
        try:
            self.start_new_thread(self._work, ())
        except (RuntimeError, MemoryError):  # no memory left for a stack (limit-memory): the
            with self.lock:  # pool stays as it is; the busy worker listens again when it is done
                self.workers -= 1

    def _watch_host(self) -> None:
        """The host is gone (even killed with SIGKILL): end, and every process we started."""
        import select

        poller = select.poll()
        poller.register(self.channel.fileno(), select.POLLRDHUP | select.POLLHUP)
        while True:
            for _fd, events in poller.poll():
                if events & (select.POLLRDHUP | select.POLLHUP | select.POLLERR):
                    _end_group()

    def serve(self) -> None:
        """The main thread supervises the pool (signals are delivered to it).

        One worker at a time waits on the socket, and it keeps that role across quick calls:
        handing it to another thread at every call costs more than the call. When a call has
        run for :data:`HAND_OVER` seconds with nobody listening, another worker takes over, so
        a slow call, a stream or a cancellation never waits behind it.
        """
        import time

        monotonic = time.monotonic
        while True:
            time.sleep(HAND_OVER if self.busy else 0.05)
            with self.cond:
                if self.listening or not self.busy or monotonic() - self.started < HAND_OVER:
                    continue
                if self.idle:
                    self.cond.notify()
                    continue
                spawn = self.workers < MAX_WORKERS
            if spawn:
                self._spawn()

    def _work(self) -> None:
        try:
            self._work_loop()
        except ChannelClosed:  # the host is gone (an answer could not be sent)
            _end_group()

    def _work_loop(self) -> None:
        import time

        monotonic = time.monotonic
        spin = False
        while True:
            with self.cond:
                self.idle += 1
                while self.listening:
                    self.cond.wait()
                self.idle -= 1
                self.listening = True
            frame = None
            try:
                # Back-to-back calls: poll a moment before sleeping in the kernel.
                frame = self.channel.recv(SPIN if spin else 0.0)
            except ChannelClosed:
                _end_group()
            except CallCancelled:  # a cancellation that arrived after its call ended
                pass
            finally:
                with self.cond:
                    self.listening = False
                    if frame is not None and frame.kind == CALL:
                        self.busy += 1
                        self.started = monotonic()
            spin = False
            if frame is None:
                continue
            if frame.kind == CALL:
                try:
                    self._call(frame)
                except CallCancelled:  # stopped as asked: say so, the host stops waiting
                    with contextlib.suppress(ChannelClosed, OSError):
                        self.channel.send(frame.call_id, END)
                finally:
                    with self.cond:
                        self.busy -= 1  # this worker listens again next (no thread switch)
                spin = True
                continue
            elif frame.kind in (CANCEL, CLOSE):
                self._cancel(frame.call_id)
            elif frame.kind == SHUTDOWN:
                _flush()
                _end_group()

    def _cancel(self, call_id: int) -> None:
        with self.lock:
            self.cancelled.add(call_id)
            thread = self.running.get(call_id)
            task = self.tasks.get(call_id)
        if task is not None and self.loop is not None:
            self.loop.call_soon_threadsafe(task.cancel)
        elif thread is not None and self._set_async_exc is not None:
            self._set_async_exc(thread, CallCancelled)

    # -- one call -------------------------------------------------------------------------

    def _call(self, frame: Frame) -> None:
        call_id = frame.call_id
        try:
            key, args, kwargs = self.loads(frame.payload, buffers=frame.buffers)
            function = _find(tuple(key), self.main_file)  # type: ignore[arg-type]
        except BaseException as exc:
            self._send_error(call_id, exc)
            return
        if code_flags(function) & (CO_COROUTINE | CO_ASYNC_GENERATOR):
            self._start_async(call_id, function, args, kwargs)
            return
        with self.lock:
            if call_id in self.cancelled:
                self.cancelled.discard(call_id)
                return
            self.running[call_id] = self.get_ident()
        try:
            try:
                result = function(*args, **kwargs)
                if type(result) is _GeneratorType:
                    self._stream(call_id, result)
                    return
            finally:
                with self.lock:
                    self.running.pop(call_id, None)
                    self.cancelled.discard(call_id)
                _flush()
            self._send_value(call_id, RESULT, result)
        except CallCancelled:
            raise
        except BaseException as exc:
            self._send_error(call_id, exc)

    def _stream(self, call_id: int, generator: Any) -> None:
        for item in generator:
            with self.lock:
                stop = call_id in self.cancelled
            if stop:
                generator.close()
                return
            _flush()
            self._send_value(call_id, ITEM, item)
        _flush()
        self.channel.send(call_id, END)

    def _send_value(self, call_id: int, kind: int, value: Any) -> None:
        try:
            payload, buffers = codec.dumps(value, max_size=self.max_size, direction="back from the sandbox")
        except BaseException as exc:
            self._send_error(call_id, exc)
            return
        self.channel.send(call_id, kind, payload, [b.raw() for b in buffers])

    def _send_error(self, call_id: int, exc: BaseException) -> None:
        _flush()
        try:
            strip_own_frames(exc)  # the program's frames only, as if the call had run locally
            blob = codec.encode_exception(exc)
        except BaseException as failure:
            blob = codec.encode_exception(SandBoxError(f"{type(exc).__name__}: {exc} ({failure})"))
        self.channel.send(call_id, ERROR, blob)

    # -- coroutines -----------------------------------------------------------------------

    def _ensure_loop(self) -> Any:
        with self.lock:
            if self.loop is not None:
                return self.loop
            import asyncio

            self.loop = asyncio.new_event_loop()
        ready = self.loop
        self.start_new_thread(ready.run_forever, ())
        return ready

    def run_coroutine(self, coroutine: Any) -> Any:
        import asyncio

        return asyncio.run_coroutine_threadsafe(coroutine, self._ensure_loop()).result()

    def _start_async(self, call_id: int, function: Any, args: Any, kwargs: Any) -> None:
        import asyncio

        loop = self._ensure_loop()
        server = self

        async def run() -> None:
            try:
                if code_flags(function) & CO_ASYNC_GENERATOR:
                    agen = function(*args, **kwargs)
                    try:
                        async for item in agen:
                            _flush()
                            server._send_value(call_id, ITEM, item)
                    finally:
                        await agen.aclose()
                    _flush()
                    server.channel.send(call_id, END)
                else:
                    result = await function(*args, **kwargs)
                    _flush()
                    server._send_value(call_id, RESULT, result)
            except asyncio.CancelledError:
                pass
            except BaseException as exc:
                server._send_error(call_id, exc)
            finally:
                with server.lock:
                    server.tasks.pop(call_id, None)
                    server.cancelled.discard(call_id)

        def start() -> None:
            with server.lock:
                if call_id in server.cancelled:
                    server.cancelled.discard(call_id)
                    return
                server.tasks[call_id] = loop.create_task(run())

        loop.call_soon_threadsafe(start)


_GeneratorType = type(x for x in ())  # type: ignore[var-annotated]


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


class _Libc:
    """``killpg`` from libc, resolved before the guards (``os.killpg`` is the program's to ask)."""

    killpg: Any = None
    parent = 0  # the parent this child started with


def _prepare_end_group() -> None:
    """Resolve ``killpg``, and ask the kernel to kill this child when its host dies (a
    backstop for the watchdog thread, which needs the GIL a runaway C call may hold)."""
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        _Libc.killpg = libc.killpg
        # SIGTERM, not SIGKILL: its handler ends the processes this child started too.
        signal.signal(signal.SIGTERM, lambda *_: _end_group())
        libc.prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != _Libc.parent:  # the host died before the line above (we were reparented)
            _end_group()
    except (ImportError, AttributeError, OSError):
        _Libc.killpg = None


def _end_group() -> None:
    """Stop this child and every process it started (its process group), now."""
    _flush()
    try:
        if _Libc.killpg is not None:
            _Libc.killpg(os.getpgrp(), 9)
    finally:
        os._exit(0)


def _async_exc_setter() -> Callable[[int, type[BaseException]], None] | None:
    """``PyThreadState_SetAsyncExc``, resolved before the guards refuse native lookups."""
    try:
        import ctypes

        function = ctypes.pythonapi.PyThreadState_SetAsyncExc
        function.argtypes = (ctypes.c_ulong, ctypes.py_object)
    except (ImportError, AttributeError, OSError):
        return None

    def set_async_exc(thread: int, exc_type: type[BaseException]) -> None:
        function(thread, exc_type)

    return set_async_exc
