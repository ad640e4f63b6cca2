"""The host side of partial mode: start the child, send calls, take back checked results.

One :class:`Child` per ``sandboxes()`` session. A reader thread receives every frame and hands
it to the waiting call; calls from many threads (and coroutines) are in flight together.
What the function writes on its stdout/stderr arrives through two pipes and is copied to the
caller's ``sys.stdout``/``sys.stderr``; before a call returns, whatever the child wrote before
answering is copied first, so output and results keep their order. A child that dies fails
its calls with the reason; the next call starts a fresh one; repeated deaths stop restarting.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time

from ..errors import SandBoxError, SandBoxProtocolError, SandBoxTimeoutError
from ..providers import LAUNCHED
from . import codec
from .channel import (
    CALL,
    CANCEL,
    CLOSE,
    END,
    ERROR,
    FAILED,
    ITEM,
    LOG,
    READY,
    SHUTDOWN,
    Channel,
    ChannelClosed,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from typing import Any

    from .channel import Frame

#: a reading caller polls this long before sleeping (see Channel.recv)
SPIN = 60e-6 if len(os.sched_getaffinity(0)) > 1 else 0.0  # one CPU: polling starves the peer
#: how long the child may take to start (it imports the program's modules)
START_TIMEOUT = 60.0
#: a virtual machine: its launcher enforces qemu.start_timeout (up to 180 s under TCG) itself
QEMU_START_TIMEOUT = 600.0
#: after a timeout, how long a cancelled call may take to stop before the child is killed
CANCEL_GRACE = 2.0
#: more deaths than this within RESTART_WINDOW seconds: stop restarting (fail closed)
MAX_DEATHS = 5
RESTART_WINDOW = 60.0

_BOOT = "import sys; sys.path.insert(0, {root!r}); from pysandboxes.remote.child import main; main()"


class _Pending:
    """A call in flight: its frames arrive through ``put``; the caller waits on it."""

    __slots__ = ("_lock", "frames", "loop_future", "waiting", "watched")

    def __init__(self) -> None:
        import _thread

        self.frames: list[Frame | BaseException] = []
        self._lock = _thread.allocate_lock()
        self._lock.acquire()
        self.loop_future: Any = None
        #: a timed-out call whose stop is being watched: not forgotten when its caller leaves
        self.watched = False
        #: its caller is in ``wait_frame``, about to read the channel or to wait: a reader that
        #: leaves may hand it the channel (a caller decoding its answer, or between a stream's
        #: items, would never take it)
        self.waiting = False

    def put(self, item: Frame | BaseException) -> None:
        self.frames.append(item)
        self.wake()
        future = self.loop_future
        if future is not None:
            future.get_loop().call_soon_threadsafe(_wake, future)

    def wake(self) -> None:
        """Wake the waiting caller (a frame arrived, or it may now read the channel itself)."""
        if self._lock.locked():
            with contextlib.suppress(RuntimeError):
                self._lock.release()

    def wait(self, timeout: float | None) -> bool:
        return self._lock.acquire(True, -1 if timeout is None else max(timeout, 0))

    def take(self, timeout: float | None) -> Frame | BaseException | None:
        while not self.frames:
            if not self.wait(timeout):
                return None
        return self.frames.pop(0)


def _wake(future: Any) -> None:
    if not future.done():
        future.set_result(None)


#: a line longer than this is relayed in pieces (a shorter one is always written whole)
PIPE_BUF = 4096
#: an unfinished line waits this long for its end before it is relayed as it is
PARTIAL_WAIT = 1.0


class _Output:
    """The pipes carrying one child's stdout and stderr, and their text decoders.

    What comes out is relayed in whole lines, each batch with one ``write`` on the caller's
    stream: the child's ``print`` (run with ``-u``) writes the text and the newline with two
    system calls, and a line relayed in halves would let the host's own output land in its
    middle. An unfinished line stays here until its end arrives, the call that wrote it
    answers, the pipe closes, it outgrows :data:`PIPE_BUF`, or :data:`PARTIAL_WAIT` passes.
    """

    def __init__(self, pipes: list[tuple[int, str]], child: Any = None) -> None:
        import codecs

        self.pipes = pipes
        self.child = child
        budget = child.limits["limit-output"] if child is not None else None
        self.budget: int | None = int(budget) if budget else None
        #: bytes written since the child was last idle (no call in flight): per call
        self.count = 0
        self.ended: set[int] = set()  # end of file seen (closed by the relay thread)
        self.decoders = {fd: codecs.getincrementaldecoder("utf-8")("replace") for fd, _ in pipes}
        self.names = dict(pipes)
        #: the unfinished line of each pipe, and since when it waits
        self.partial: dict[int, bytes] = {}
        self.since: dict[int, float] = {}
        for fd, _name in pipes:
            os.set_blocking(fd, False)

    def copy(self, fd: int, everything: bool = False) -> bool:
        """Copy what is readable now, in whole lines unless ``everything``; False at end of
        file. The caller holds the output lock."""
        if fd in self.ended:
            return False
        chunks: list[bytes] = []
        alive = True
        while True:
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                break
            except OSError:
                alive = False
                break
            if not data:
                alive = False
                break
            chunks.append(data)
        if self.budget is not None and chunks:
            size = sum(len(c) for c in chunks)
            if self.count + size > self.budget:
                chunks = [b"".join(chunks)[: max(0, self.budget - self.count)]]
                everything = True  # the child is killed: nothing more will complete the line
                self.child.over_limit("limit-output", f"more than {self.budget} bytes written")
            self.count += size
        pending = self.partial.pop(fd, b"")
        data = pending + b"".join(chunks) if chunks else pending
        cut = len(data)
        if alive and not everything:
            cut = max(data.rfind(b"\n"), data.rfind(b"\r")) + 1
            if len(data) - cut > PIPE_BUF:
                cut = len(data)
        if cut < len(data):
            self.partial[fd] = data[cut:]
            if not pending or cut:  # a line that starts waiting now
                self.since[fd] = time.monotonic()
        # a character split across reads stays whole
        text = self.decoders[fd].decode(data[:cut], not alive)
        if text:
            stream = sys.stdout if self.names[fd] == "stdout" else sys.stderr
            try:
                stream.write(text)
                stream.flush()
            except Exception:
                pass
        return alive

    def waiting(self) -> float | None:
        """Seconds until the oldest unfinished line is due, or None when none waits."""
        if not self.partial:
            return None
        return max(0.0, min(self.since[fd] for fd in self.partial) + PARTIAL_WAIT - time.monotonic())

    def due(self) -> list[int]:
        """The pipes whose unfinished line has waited :data:`PARTIAL_WAIT`."""
        now = time.monotonic()
        return [fd for fd in self.partial if now - self.since[fd] >= PARTIAL_WAIT]


class Child:
    """A running sandbox child and its channel."""

    def __init__(self, settings: dict[str, Any], policy: Any, provider: str) -> None:
        self.settings = settings
        self.policy = policy
        self.provider = provider
        self.mode = str(policy.remote_result_mode.value)
        self.guard = bool(policy.remote_result_guard.value)
        self.max_size = int(policy.remote_max_payload.value)
        #: learning mode: facts recorded here (the child sends objects-mode results)
        self.learner: Any = None
        from ..limits import from_policy

        self.limits = from_policy(policy, partial=True)
        self.cgroup: Any = None  # the current child's own cgroup, when the host allows one
        self.network: Any = None  # namespace providers: the current child's network broker
        #: a limit the current child broke: (key, what); its calls fail with it
        self.breach: tuple[str, str] | None = None
        self.lock = threading.Lock()
        self.output_lock = threading.Lock()
        #: held by whoever reads the channel: a waiting caller itself (no thread hand-off on
        #: the way back, the largest cost of a call), or the reader thread for coroutines
        self.reader_lock = threading.Lock()
        self.async_waiting = 0
        self.async_wanted = threading.Condition(self.lock)
        self.pending: dict[int, _Pending] = {}
        self.next_id = 1
        self.process: Any = None
        self.channel: Any = None
        self.output: _Output | None = None
        self.start_lock = threading.Lock()
        self.death_reasons: list[str] = []
        self.reader_started = False
        self.stopped = False
        self.deaths: list[float] = []
        self.failed: str | None = None
        self.death: str | None = None

    # -- life cycle -----------------------------------------------------------------------

    def start(self) -> None:
        """Start the child; under firejail, again when firejail stopped before it started
        because an entry it hides vanished (``firejail.SetupWatch``)."""
        if self.provider != "firejail":
            self._start(None)
            return
        from ..providers import firejail

        for attempt in range(firejail.ATTEMPTS):
            watch = firejail.SetupWatch()
            try:
                self._start(watch)
                return
            except SandBoxError:
                if not watch.finish(last=attempt == firejail.ATTEMPTS - 1):
                    raise

    def _start(self, watch: Any) -> None:
        import json
        import socket
        import subprocess

        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        handoff = os.memfd_create("pysandboxes-handoff", 0)
        os.write(handoff, json.dumps(self.settings).encode())
        os.lseek(handoff, 0, os.SEEK_SET)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        env = dict(self.policy.environment)
        if self.learner is not None:  # a library's load_dotenv() in the child would turn the
            env.setdefault("PYTHON_DOTENV_DISABLED", "1")  # host's .env into rules (docs/learning.md)
        env["PYSANDBOXES_CHILD"] = f"{child.fileno()},{handoff}"
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        # -u: what the function prints reaches the pipe at once, in the order written
        argv = [
            sys.executable,
            *("-E", "-s", "-u"),
            *_host_options(),
            *("-c", _BOOT.format(root=root)),
        ]
        fds = [child.fileno(), handoff]
        if self.provider in LAUNCHED:
            # firejail: its own stderr goes to the watch, the shim puts err_w in the child's place
            launcher, extra, more_env = self._launcher(stderr_fd=err_w if watch is not None else None)
            argv = [*launcher, "--", *argv]
            fds += extra
            env.update(more_env)
        self.breach = None
        cgroup = None
        gate: tuple[int, int] | None = None
        if self.limits.kernel() and self.provider != "qemu":  # a VM: its own memory and kernel
            from ..limits import Cgroup

            cgroup = self.cgroup = Cgroup.create(self.limits)
            if cgroup is not None and self.provider in LAUNCHED:
                # the launcher forks at once: it waits at a gate until it is in the cgroup, so
                # that everything it starts is counted
                gate = os.pipe()  # on the launcher's stdin, which then becomes /dev/null again
                argv = ["/bin/sh", "-c", 'read _; exec "$@" </dev/null', "sh", *argv]
        try:
            self.process = _in_spawner_thread(
                subprocess.Popen,
                argv,
                pass_fds=(*fds, *([err_w] if watch is not None else [])),
                stdin=gate[0] if gate is not None else subprocess.DEVNULL,
                stdout=out_w,
                stderr=watch.write_fd if watch is not None else err_w,
                env=env,
                cwd=self.settings["cwd"],
                start_new_session=True,
            )
            if watch is not None:
                watch.launched()
            if cgroup is not None:
                try:
                    cgroup.add(self.process.pid)
                except OSError as exc:
                    self._kill()
                    cgroup.remove()
                    raise SandBoxError(
                        f"the sandbox could not start: its cgroup refused it ({exc})"
                    ) from None
        finally:
            child.close()
            os.close(handoff)
            os.close(out_w)
            os.close(err_w)
            for fd in fds[2:]:
                os.close(fd)
            if gate is not None:
                os.close(gate[0])
                with contextlib.suppress(OSError):  # a launcher killed at the gate reads nothing
                    os.write(gate[1], b"\n")
                os.close(gate[1])
        channel = Channel(parent, self.max_size)
        output = self.output = _Output([(out_r, "stdout"), (err_r, "stderr")], self)
        threading.Thread(target=self._relay, args=(output,), name="pysandboxes-output", daemon=True).start()
        # Published only once READY is read: a caller still reading for the previous child
        # must not take the new child's READY.
        ready = self._wait_ready(channel)
        with self.lock:
            self.channel = channel
            self.death = None
        if not self.reader_started:  # one for the life of this session, across restarts
            self.reader_started = True
            threading.Thread(target=self._read_for_coroutines, name="pysandboxes-reader", daemon=True).start()
        del ready

    def _launcher(self, *, stderr_fd: int | None = None) -> tuple[list[str], list[int], dict[str, str]]:
        """bwrap's or unshare's command line for the child, and the descriptors it reads."""
        from ..providers.namespaces import launcher, sandbox_view

        files = list(self.settings["program_files"])
        self._stop_network()
        policy = self.policy
        if policy.net.hostnames:  # the broker connects to the addresses names had at the start
            from ..complete import _resolve

            policy = policy.pin_hostnames(_resolve)
        view, self.network = sandbox_view(policy, self.provider, files, self.settings["cwd"])
        argv, fds, env, _info = launcher(
            view, self.policy, self.provider, self.network, limits=self.limits, stderr_fd=stderr_fd
        )
        return argv, fds, env

    def _stop_network(self) -> None:
        network, self.network = self.network, None
        if network is not None:
            network.stop()

    def _wait_ready(self, channel: Channel) -> Frame:
        import select

        timeout = QEMU_START_TIMEOUT if self.provider == "qemu" else START_TIMEOUT
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([channel.fileno()], [], [], max(remaining, 0))
            if not ready:
                self._kill()
                raise SandBoxError(f"the sandbox did not start within {timeout:.0f} s")
            try:
                frame = channel.recv()
            except ChannelClosed:
                status = self._reap()
                self.drain_output()
                raise SandBoxError(f"the sandbox could not start: it {status}") from None
            if frame.kind == READY:
                return frame  # type: ignore[no-any-return]
            if frame.kind == LOG:  # what the child logged while it started
                log_from_child(frame.payload, self.process.pid)
                continue
            if frame.kind == FAILED:
                message = bytes(frame.payload).decode("utf-8", "replace")
                self._kill()
                self.drain_output()
                raise SandBoxError(f"the sandbox could not start: {message}")

    def stop(self) -> None:
        """End the child and every process it started."""

        with self.lock:
            self.stopped = True
            self.async_wanted.notify_all()
        process = self.process
        if process is None:
            return
        with contextlib.suppress(ChannelClosed, OSError):
            self.channel.send(0, SHUTDOWN)
        with contextlib.suppress(Exception):
            process.wait(timeout=2)
        self._kill()
        self.drain_output()
        self._release_cgroup()
        self.channel.close()
        self.process = None

    def _kill(self, process: Any = None) -> None:
        import signal

        process = process if process is not None else self.process
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            process.wait(timeout=5)

    def _reap(self, process: Any = None) -> str:
        process = process if process is not None else self.process
        if process is None:
            return "is not running"
        try:
            code = process.wait(timeout=5)
        except Exception:
            self._kill(process)
            code = process.returncode
        return _describe_exit(code)

    # -- reading ----------------------------------------------------------------------------

    def _dispatch(self, frame: Frame) -> None:
        if frame.kind == LOG:
            process = self.process
            log_from_child(frame.payload, process.pid if process is not None else None)
            return
        with self.lock:
            pending = self.pending.get(frame.call_id)
        if pending is not None:
            pending.put(frame)

    def _receive_one(self, timeout: float | None) -> bool:
        """Read one frame (the reader lock is held) and hand it over. False: the child died."""
        channel = self.channel
        if timeout is not None:
            import select

            try:
                ready, _, _ = select.select([channel.fileno()], [], [], max(timeout, 0))
            except (OSError, ValueError):  # closed by a restart meanwhile
                return False
            if not ready:
                return True
        try:
            frame = channel.recv(SPIN if timeout is None or timeout > SPIN else 0.0)
        except (ChannelClosed, OSError):
            self._die(None, channel=channel)
            return False
        except SandBoxError as exc:  # a malformed frame: the child is not trusted
            self._die(f"sent something the host refuses ({exc})", channel=channel)
            return False
        self._dispatch(frame)
        return True

    def _promote(self) -> None:
        """The reader leaves: wake one waiting caller so that it reads next. Only a caller in
        ``wait_frame``: one whose answer was taken (it decodes it) has no frames either, and
        waking it left every other caller waiting with nobody reading."""
        with self.lock:
            waiting = [
                p for p in self.pending.values() if p.waiting and not p.frames and p.loop_future is None
            ]
            if self.async_waiting:
                self.async_wanted.notify()
        if waiting:
            waiting[0].wake()

    def wait_frame(self, pending: _Pending, timeout: float | None) -> Frame | BaseException | None:
        """The next frame of a call, reading the channel ourselves when nobody else does."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if pending.frames:
                return pending.frames.pop(0)
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return None
            # said before trying the reader's role: a reader leaving after our try sees it
            pending.waiting = True
            if self.reader_lock.acquire(False):
                pending.waiting = False
                try:
                    while not pending.frames:
                        remaining = None if deadline is None else deadline - time.monotonic()
                        if remaining is not None and remaining <= 0:
                            break
                        if not self._receive_one(remaining):
                            break
                finally:
                    self.reader_lock.release()
                    self._promote()
            else:
                pending.wait(remaining)
                pending.waiting = False

    def _read_for_coroutines(self) -> None:
        """A thread that reads while coroutines wait (they cannot block their event loop)."""
        while True:
            with self.lock:
                while self.async_waiting == 0 and not self.stopped:
                    self.async_wanted.wait()
                if self.stopped:
                    return
                if self.death is not None:  # the waiting coroutines are being told; a call restarts it
                    self.async_wanted.wait(0.05)
                    continue
            if not self.reader_lock.acquire(True, 0.05):
                continue
            try:
                while True:
                    with self.lock:
                        if self.async_waiting == 0:
                            break
                    if not self._receive_one(0.05):
                        break
            finally:
                self.reader_lock.release()
                self._promote()

    def over_limit(self, key: str, what: str) -> None:
        """A limit the host watches (output) was exceeded: the child goes, its calls fail."""
        if self.breach is None:
            self.breach = (key, what)
        process = self.process
        if process is not None:
            import signal

            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)

    def _breach_of(self, code: int | None, cgroup: Any) -> tuple[str, str] | None:
        """Why the child died, when a limit killed it."""
        import signal

        if self.breach is not None:
            return self.breach
        exact = self.provider == "qemu"  # its launcher dies of its program's signal
        if code is not None and self.provider in LAUNCHED and not exact and 128 < code <= 128 + 64:
            code = 128 - code  # the launcher reports its program's signal as 128 + the signal
        if code == -signal.SIGXCPU and self.limits["limit-cpu"]:
            return ("limit-cpu", "killed by SIGXCPU")
        if code == -signal.SIGKILL and cgroup is not None and cgroup.memory_exceeded():
            return ("limit-memory", "killed by the kernel's out-of-memory killer")
        return None

    def _release_cgroup(self) -> None:
        with self.lock:
            cgroup, self.cgroup = self.cgroup, None
            network, self.network = self.network, None
        _free(cgroup, network)

    def _die(self, reason: str | None, *, count: bool = True, channel: Any = None) -> None:
        """The child is gone (or must go): fail the calls in flight, once per child.

        ``channel``: the channel the caller saw fail; if a restart has replaced it since,
        the news is about a child already buried, and the new one is left alone."""
        with self.lock:
            if channel is not None and channel is not self.channel:
                return
            if self.death is not None:
                return
            self.death = "is stopping"
            # this child's own: a restart may replace them while it is being buried
            process, cgroup, network = self.process, self.cgroup, self.network
            self.cgroup = self.network = None
        if reason is None:
            reason = self._reap(process)
        else:
            self._kill(process)
        self.drain_output()
        breach = self._breach_of(process.returncode if process is not None else None, cgroup)
        _free(cgroup, network)
        with self.lock:
            self.death = reason
            if count:
                self.deaths.append(time.monotonic())
                self.death_reasons.append(reason)
            pending = list(self.pending.values())
            self.pending.clear()
        for call in pending:
            if breach is not None:
                call.put(self._resource_error(*breach))
            else:
                # not a refusal (sandbox_denials() is empty): the machinery failed the call
                call.put(SandBoxProtocolError(f"the sandbox process died during the call: it {reason}"))
        with self.lock:
            self.async_wanted.notify_all()

    # -- output -----------------------------------------------------------------------------

    def _relay(self, output: _Output) -> None:
        """Copy the child's output as it comes. This thread alone closes the pipes (at end of
        file): a descriptor closed under another reader could be reused by the next child's
        socket, and that reader would then block on it."""
        import select

        open_fds = [fd for fd, _name in output.pipes]
        while open_fds:
            try:
                readable, _, _ = select.select(open_fds, [], [], output.waiting())
            except (OSError, ValueError):
                break
            for fd in readable or output.due():
                with self.output_lock:
                    alive = output.copy(fd, everything=not readable)
                if not alive:
                    open_fds.remove(fd)
                    with self.output_lock:
                        output.ended.add(fd)
                        os.close(fd)

    def drain_output(self, everything: bool = True) -> None:
        """Copy what the child wrote so far (before answering a call) to the caller's streams.

        Taking the output lock first waits for a copy the relay thread has under way: what
        the child wrote before it answered is on the caller's stream before the answer.
        ``everything=False`` (a generator's item: it goes on running; another call in
        flight) keeps an unfinished line for later; a call that is over, alone, has its last
        line shown, finished or not.
        """
        import select

        output = self.output
        if output is None:
            return
        with self.output_lock:
            fds = [fd for fd, _ in output.pipes if fd not in output.ended]
            if not fds:
                return
            try:
                readable, _, _ = select.select(fds, [], [], 0)
            except (OSError, ValueError):
                return
            if everything:  # and the unfinished lines of pipes with nothing new
                readable = [*readable, *(fd for fd in output.partial if fd not in readable)]
            for fd in readable:
                output.copy(fd, everything)

    # -- calls ------------------------------------------------------------------------------

    def ensure_running(self) -> None:
        with self.lock:
            alive = self.process is not None and self.death is None
        if alive:
            return
        with self.start_lock:  # callers of many threads meet a dead child: one restarts it
            with self.lock:
                if self.process is not None and self.death is None:
                    return
            if self.failed is not None:
                raise SandBoxProtocolError(self.failed)
            now = time.monotonic()
            recent = [t for t in self.deaths if now - t < RESTART_WINDOW]
            if len(recent) >= MAX_DEATHS:
                self.failed = (
                    f"the sandbox process died {len(recent)} times within {RESTART_WINDOW:.0f} s (last: it "
                    f"{self.death}); it is not restarted: end this sandboxes() block and start a new one"
                )
                raise SandBoxProtocolError(self.failed)
            old = self.channel
            self.start()  # the new channel is in place, then the child counts as alive
            if old is not None:
                old.close()  # a reader still on it learns nothing it could take for the new child

    def _open(self) -> tuple[int, _Pending]:
        pending = _Pending()
        with self.lock:
            output = self.output
            if not self.pending and output is not None:
                output.count = 0  # limit-output counts per call (since the child was idle)
            call_id = self.next_id
            self.next_id += 1
            self.pending[call_id] = pending
        return call_id, pending

    def _close(self, call_id: int) -> None:
        with self.lock:
            pending = self.pending.get(call_id)
            if pending is not None and not pending.watched:
                del self.pending[call_id]

    def send_call(
        self, key: tuple[str, str], args: Sequence[Any], kwargs: dict[str, Any]
    ) -> tuple[int, _Pending]:

        payload, buffers = codec.dumps((key, tuple(args), kwargs), max_size=self.max_size)
        raw = [b.raw() for b in buffers]
        for attempt in (1, 2):
            self.ensure_running()
            call_id, pending = self._open()
            channel = self.channel
            try:
                channel.send(call_id, CALL, payload, raw)
            except ChannelClosed:
                # The child died between calls: the call never started, so it is safe to start
                # a fresh child and send it again (once).
                self._close(call_id)
                self._die(None, channel=channel)
                if attempt == 2:
                    raise SandBoxProtocolError(
                        "the sandbox process is gone and could not be restarted"
                    ) from None
                continue
            except BaseException:
                self._close(call_id)
                raise
            return call_id, pending
        raise AssertionError("unreachable")

    def _resource_error(self, key: str, what: str) -> BaseException:
        from ..errors import resource_error

        return resource_error(key, self.limits.message(key, what, tool="pysandboxes"))

    def cancel(self, call_id: int, kind: int | None = None) -> None:

        with contextlib.suppress(ChannelClosed, OSError):
            self.channel.send(call_id, CANCEL if kind is None else kind)

    def _drain_before(self, kind: int) -> None:
        """The output written before an answer of ``kind``, shown before it. An unfinished
        line is the answering call's own only when the call is over and no other runs."""
        with self.lock:
            alone = len(self.pending) <= 1
        self.drain_output(everything=kind != ITEM and alone)

    def value_of(
        self,
        frame: Frame | BaseException,
        deadline: float | None = None,
        key: tuple[str, str] = ("?", "?"),
        timeout: float | None = None,
    ) -> Any:
        """The result a frame carries, checked by the result guard, or the exception raised.

        Decoding counts in the call's time: past ``deadline`` (the call's ``timeout`` after
        it was sent, or after the previous item) it stops with ``SandBoxTimeoutError``."""
        if isinstance(frame, BaseException):
            raise frame
        self._drain_before(frame.kind)
        try:
            return self._decode(frame, deadline)
        except codec.LateResult:
            raise SandBoxTimeoutError(_late_message(key, timeout)) from None

    def _decode(self, frame: Frame, deadline: float | None) -> Any:
        if frame.kind == ERROR:
            from ..limits import breach_of

            error = codec.decode_exception(bytes(frame.payload), deadline)
            breach = breach_of(error, self.limits)
            if breach is not None:  # the next call gets a fresh child (and the tree is gone)
                self._die(f"exceeded {self.limits.shown(breach[0])}", count=False)
                raise self._resource_error(*breach) from error
            raise error
        mode, guard = self.mode, self.guard
        if self.learner is not None and mode != codec.OBJECTS:
            try:
                return codec.loads_result(
                    frame.payload, frame.buffers, mode=mode, guard=guard, deadline=deadline
                )
            except codec.LateResult:
                raise
            except SandBoxError:
                self.learner.add(("objects",))  # learning: remote-result-mode=objects is needed
                mode = codec.OBJECTS
        return codec.loads_result(frame.payload, frame.buffers, mode=mode, guard=guard, deadline=deadline)

    def call(
        self, key: tuple[str, str], args: Sequence[Any], kwargs: dict[str, Any], timeout: float | None
    ) -> Any:
        call_id, pending = self.send_call(key, args, kwargs)
        deadline = _deadline(timeout)
        try:
            frame = self.wait_frame(pending, timeout)
            if frame is None:
                self._timed_out(call_id, pending, key, timeout)
            return self.value_of(frame, deadline, key, timeout)  # type: ignore[arg-type]
        finally:
            self._close(call_id)

    def _timed_out(
        self, call_id: int, pending: _Pending, key: tuple[str, str], timeout: float | None
    ) -> None:
        self._cancel_and_watch(call_id, pending)
        raise SandBoxTimeoutError(_timeout_message(key, timeout))

    def _cancel_and_watch(self, call_id: int, pending: _Pending) -> None:
        """Cancel in the child; the caller gets its answer now, the call has CANCEL_GRACE
        seconds to stop, else the child is killed (with everything it started) and the next
        call starts a fresh one."""
        self.cancel(call_id)
        pending.watched = True  # kept until the watcher is done with it
        with self.lock:
            process = self.process
        threading.Thread(target=self._watch_cancelled, args=(call_id, pending, process), daemon=True).start()

    def _watch_cancelled(self, call_id: int, pending: _Pending, process: Any) -> None:
        try:
            if self.wait_frame(pending, CANCEL_GRACE) is None and self.process is process:
                self._die("was stopped: a call ignored its cancellation (timeout)", count=False)
        finally:
            with self.lock:
                self.pending.pop(call_id, None)

    def iterate(
        self, key: tuple[str, str], args: Sequence[Any], kwargs: dict[str, Any], timeout: float | None
    ) -> Iterator[Any]:

        call_id, pending = self.send_call(key, args, kwargs)
        finished = False
        try:
            while True:
                deadline = _deadline(timeout)
                frame = self.wait_frame(pending, timeout)
                if frame is None:
                    self._timed_out(call_id, pending, key, timeout)
                finished, value = self._item_of(frame, deadline, key, timeout)  # type: ignore[arg-type]
                if finished:
                    if value is not None:
                        raise value
                    return
                yield value
        finally:
            if not finished:
                self.cancel(call_id, CLOSE)
            self._close(call_id)

    def _item_of(
        self,
        frame: Frame | BaseException,
        deadline: float | None,
        key: tuple[str, str],
        timeout: float | None,
    ) -> tuple[bool, Any]:
        """``(False, item)``, or ``(True, None)`` at the end of a stream, or ``(True, error)``
        when it ended with an error (the child's generator is over either way)."""
        if not isinstance(frame, BaseException) and frame.kind == END:
            self._drain_before(END)
            return True, None
        try:
            return False, self.value_of(frame, deadline, key, timeout)
        except BaseException as exc:
            return True, exc

    async def call_async(
        self, key: tuple[str, str], args: Sequence[Any], kwargs: dict[str, Any], timeout: float | None
    ) -> Any:

        call_id, pending = self.send_call(key, args, kwargs)
        deadline = _deadline(timeout)
        try:
            frame = await self._next(pending, call_id, key, timeout)
            return self.value_of(frame, deadline, key, timeout)
        finally:
            self._close(call_id)

    async def _next(
        self, pending: _Pending, call_id: int, key: tuple[str, str], timeout: float | None
    ) -> Any:
        import asyncio

        while not pending.frames:
            future = asyncio.get_running_loop().create_future()
            pending.loop_future = future
            if pending.frames:
                pending.loop_future = None
                break
            with self.lock:
                self.async_waiting += 1
                self.async_wanted.notify()
            try:
                await asyncio.wait_for(future, timeout)
            except TimeoutError:
                self._cancel_and_watch(call_id, pending)
                raise SandBoxTimeoutError(_timeout_message(key, timeout)) from None
            except asyncio.CancelledError:
                self.cancel(call_id)
                raise
            finally:
                pending.loop_future = None
                with self.lock:
                    self.async_waiting -= 1
        return pending.take(0)

    async def iterate_async(
        self, key: tuple[str, str], args: Sequence[Any], kwargs: dict[str, Any], timeout: float | None
    ) -> Any:

        call_id, pending = self.send_call(key, args, kwargs)
        finished = False
        try:
            while True:
                deadline = _deadline(timeout)
                frame = await self._next(pending, call_id, key, timeout)
                finished, value = self._item_of(frame, deadline, key, timeout)
                if finished:
                    if value is not None:
                        raise value
                    return
                yield value
        finally:
            if not finished:
                self.cancel(call_id, CLOSE)
            self._close(call_id)


def _host_options() -> list[str]:
    """The host's own preferences that decide how the program behaves, for the child (started
    with -E, which ignores PYTHONWARNINGS and the like): it writes bytecode where and when the
    host does, and has the host's warning filters (``-W``, ``PYTHONWARNINGS``: a framework
    whose deprecation warnings the host turns into errors, or silences, gets the same in the
    sandbox), its development mode and ``-X importtime`` (where the child's start goes)."""
    options = ["-B"] if sys.dont_write_bytecode else []
    if sys.pycache_prefix:
        options += ["-X", f"pycache_prefix={sys.pycache_prefix}"]
    if sys.flags.dev_mode:
        options += ["-X", "dev"]
    if "importtime" in sys._xoptions:  # python -X importtime: the child's imports are shown too
        options += ["-X", "importtime"]
    options += [f"-W{option}" for option in sys.warnoptions]
    return options


#: the loggers whose records the child sends to the host
CHILD_LOGGERS = ("Pysandboxes", "pysandboxes")
#: the longest message of a child's record the host logs (the child is not trusted)
LOG_MAX = 16384


def log_levels() -> dict[str, int]:
    """The sandbox's loggers the host listens to below WARNING (``PYSANDBOXES_DEBUG=1``,
    ``logging.basicConfig(level=INFO)``...), and their levels: the child sends their records
    to the host. Without ``logging`` loaded, or at WARNING, none (the child's warnings reach
    the host's stderr through its own, as the host's would)."""
    logging = sys.modules.get("logging")
    if logging is None:
        return {}
    levels = {name: logging.getLogger(name).getEffectiveLevel() for name in CHILD_LOGGERS}
    return {name: level for name, level in levels.items() if level < logging.WARNING}


def log_from_child(payload: bytes | memoryview, pid: int | None) -> None:
    """Log a record the child sent on the host's logger of that name, marked as the
    sandbox's. What the child sends is checked: one of the sandbox's loggers, a level, a
    bounded text (hostile code in the child can send records too; it cannot pose as another
    logger, nor pass a format string)."""
    import json

    logging = sys.modules.get("logging")
    if logging is None:
        return
    try:
        name, level, text = json.loads(bytes(payload))
    except (ValueError, TypeError):
        return
    if type(name) is not str or type(level) is not int or type(text) is not str:
        return
    if name not in CHILD_LOGGERS and not name.startswith("pysandboxes."):
        return
    level = min(max(level, logging.DEBUG), logging.CRITICAL)
    if len(text) > LOG_MAX:
        text = text[:LOG_MAX] + " [...]"
    logging.getLogger(name).log(level, "in the sandbox (pid %s): %s", pid, text)


def _deadline(timeout: float | None) -> float | None:
    return None if timeout is None else time.monotonic() + timeout


def _late_message(key: tuple[str, str], timeout: float | None) -> str:
    return (
        f"{key[0]}.{key[1]}() did not finish within {timeout:g} s: its result was still being "
        "decoded (timeout= in the rule file, or @sandbox(timeout=...))"
    )


def _timeout_message(key: tuple[str, str], timeout: float | None) -> str:
    return (
        f"{key[0]}.{key[1]}() did not finish within {timeout:g} s and was cancelled "
        "(timeout= in the rule file, or @sandbox(timeout=...))"
    )


class _Spawner:
    """One long-lived thread starts every child: the child asks the kernel to kill it when the
    thread that started it ends (``PR_SET_PDEATHSIG`` follows the thread, not the process), so
    that thread must live as long as the host."""

    lock = threading.Lock()
    jobs: Any = None


def _in_spawner_thread(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    import queue

    with _Spawner.lock:
        if _Spawner.jobs is None:
            _Spawner.jobs = queue.SimpleQueue()
            threading.Thread(
                target=_spawn_loop, args=(_Spawner.jobs,), name="pysandboxes-spawner", daemon=True
            ).start()
    answer: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()
    _Spawner.jobs.put((function, args, kwargs, answer))
    ok, value = answer.get()
    if not ok:
        raise value
    return value


def _spawn_loop(jobs: Any) -> None:
    while True:
        function, args, kwargs, answer = jobs.get()
        try:
            answer.put((True, function(*args, **kwargs)))
        except BaseException as exc:
            answer.put((False, exc))


def _free(cgroup: Any, network: Any) -> None:
    """Release what one child had: its network broker, and its cgroup (emptied, removed)."""
    if network is not None:
        network.stop()
    if cgroup is not None:
        cgroup.kill()
        cgroup.remove()


def _describe_exit(code: int | None) -> str:
    import signal

    if code is None:
        return "did not exit"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = " (out of memory?)" if -code == signal.SIGKILL else ""
        return f"was killed by {name}{hint}"
    return f"exited with status {code}"


def host_settings(
    *,
    rule_file: str,
    rules: Sequence[tuple[str, str]],
    environ: dict[str, str],
    cwd: str,
    provider: str,
    modules: Sequence[str],
    main_file: str | None,
    init_fn: tuple[str, str] | None,
    want_asyncio: bool,
    learn_journal: str | None = None,
) -> dict[str, Any]:
    return {
        "learn_journal": learn_journal,
        "rule_file": rule_file,
        "rules": [list(r) for r in rules],
        "environ": environ,
        "cwd": cwd,
        "sys_path": [os.path.abspath(p) if p else cwd for p in sys.path],
        "provider": provider,
        "modules": list(modules),
        "main_file": main_file,
        "program_files": program_sources(modules, main_file),
        "init_fn": list(init_fn) if init_fn else None,
        "asyncio": want_asyncio,
        "log_levels": log_levels(),
    }


def program_sources(modules: Sequence[str], main_file: str | None) -> list[str]:
    """The files the child reads to import the program's modules, as the host has them: each
    module's file (a package: its whole directory, whose submodules the child imports too), and
    the modules the host loaded from the same directories (siblings such as a ``helpers.py`` the
    tools import). Read-only in the child's view (namespace providers) or by the kernel
    (landlock), which confines the child before it imports them; nothing else of the project."""

    def entry(path: str) -> tuple[str, str]:
        """What to expose for a module's file, and the directory it was found in."""
        if os.path.basename(path) == "__init__.py":
            path = os.path.dirname(path)
        return path, os.path.dirname(path)

    files: dict[str, None] = {}
    folders: set[str] = set()
    sources: list[Any] = [main_file] if main_file else []
    sources += [getattr(sys.modules.get(name), "__file__", None) for name in modules]
    for path in sources:
        if isinstance(path, str) and os.path.exists(path):
            real, holder = entry(os.path.realpath(path))
            files[real] = None
            folders.add(holder)
    installed = tuple({p.rstrip("/") + "/" for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)})

    def is_installed(folder: str) -> bool:
        return (
            (folder + "/").startswith(installed) or "/site-packages" in folder or "/dist-packages" in folder
        )

    folders = {f for f in folders if not is_installed(f)}
    # siblings: compared by the directory as imported first, each directory resolved once, and
    # never one of the installed packages' (they are no program's: a framework loads
    # thousands of modules from a hundred directories, each resolution a few system calls)
    near = folders | {os.path.dirname(f) for f in folders}
    resolved: dict[str, str | None] = {}
    for module in list(sys.modules.values()):
        loaded = getattr(module, "__file__", None)
        if not isinstance(loaded, str) or not loaded.endswith(".py"):
            continue
        folder = os.path.dirname(loaded)
        if folder not in near:
            if folder not in resolved:
                resolved[folder] = None if is_installed(folder) else os.path.realpath(folder)
            if resolved[folder] not in near:
                continue
        real, holder = entry(os.path.realpath(loaded))
        if holder in folders and os.path.exists(real):
            files[real] = None
    return [f for f in files if not any(f != d and f.startswith(d + "/") for d in files)]
