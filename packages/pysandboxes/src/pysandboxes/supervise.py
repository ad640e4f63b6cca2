"""python-sb's supervisor: used only when the rules set a resource limit or ``timeout=``.

python-sb is normally one process (the program runs in it, same pid). With limits, it forks
before the program is read: the child goes on as usual (and applies the rlimits just before the
program's first line), the parent stays outside the sandbox and

* puts the child in a cgroup created for it (when the host allows), before the child goes on;
* relays stdout and stderr through pipes when ``limit-output=`` is set, counting the bytes;
* stops the child at ``timeout=`` (SIGTERM, then SIGKILL two seconds later);
* reports a breach on stderr — ``python-sb: stopped: limit-cpu=2s exceeded (killed by
  SIGXCPU); raise it in .py-sandboxes line 12`` — and exits with 125 (124 for ``timeout=``);
* otherwise exits as the child did (same status, or the same signal).

SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 sent to python-sb are passed to the child; SIGINT and
SIGQUIT come from the terminal to both processes, so the parent ignores them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time

from .limits import EXIT_LIMIT, EXIT_TIMEOUT, Cgroup, Limits, stderr

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

_FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)
#: the exit status, once a supervisor saw its program end and has nothing left to clean up:
#: the python-sb console script then exits at once (see :func:`exit_now`)
FINISHED: list[int] = []


def exit_now(code: int) -> None:
    """In a supervisor whose program has ended: exit with ``code`` without the interpreter's
    finalisation (module teardown costs milliseconds the user waits for; the supervisor holds
    nothing it must release). Returns when this process is not such a supervisor."""
    if FINISHED and FINISHED[-1] == code:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def supervise(
    limits: Limits,
    *,
    argv: list[str] | None = None,
    env: dict[str, str] | None = None,
    info_fd: int | None = None,
    on_parent: Callable[[], None] | None = None,
    relays_exit: bool = False,
    cgroup: bool = True,
    exact: bool = False,
    status_fd: int | None = None,
    stderr_swap: tuple[int, int] | None = None,
) -> int | None:
    """Fork. In the child: return None (go on and run the program), or, with ``argv``, exec it
    (a namespace provider's launcher: bwrap, unshare) with SIGINT, SIGQUIT and SIGHUP blocked,
    which the sandboxed interpreter unblocks (the launcher must not die of the terminal's
    Ctrl-C before the program has handled it). In the parent: wait for the child and return
    the exit status python-sb must give. ``info_fd``: the read end of bwrap's ``--info-fd``,
    whose ``child-pid`` receives the forwarded signals. ``on_parent``: run in the parent right
    after the fork (threads that must not exist in the child). ``relays_exit``: the child
    reports its program's death by a signal as status 128 + the signal (a launcher, or the
    namespace processes of os-sandbox=unshare). ``cgroup=False``: no cgroup (a virtual machine's
    launcher: the guest's kernel bounds the program). ``exact``: the launcher ends as its program
    did, dying of the same signal (qemu's): an exit status above 128 is then a status.
    ``status_fd``: the read end of :func:`status_pipe` (closed here). ``stderr_swap``: ``(keep,
    launcher)``: in the child, descriptor ``keep`` becomes the standard error the program must
    have, and ``launcher`` the launcher's own (firejail's: ``firejail.SetupWatch``)."""
    group = Cgroup.create(limits) if cgroup else None
    relay = limits["limit-output"] is not None
    _become_subreaper()
    pipes = [os.pipe() for _ in range(2)] if relay else []
    ready_r, ready_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(ready_w)
        os.read(ready_r, 1)  # wait until the parent has put us in the cgroup
        os.close(ready_r)
        if status_fd is not None:
            os.close(status_fd)
        for fd, (r, w) in zip((1, 2), pipes, strict=False):
            os.dup2(w, fd)
            os.close(r)
            os.close(w)
        if stderr_swap is not None:
            os.dup2(2, stderr_swap[0])
            os.dup2(stderr_swap[1], 2)
            os.close(stderr_swap[1])
        if argv is None:
            return None
        if info_fd is not None:
            os.close(info_fd)
        signal.pthread_sigmask(signal.SIG_BLOCK, _LAUNCHER_BLOCKED)
        try:
            os.execve(argv[0], argv, env if env is not None else os.environ)
        except OSError as exc:
            stderr(f"python-sb: cannot start {argv[0]}: {exc}")
        os._exit(2)
    os.close(ready_r)
    for _r, w in pipes:
        os.close(w)
    if on_parent is not None:
        on_parent()
    if group is not None:
        try:
            group.add(pid)
        except OSError as exc:
            stderr(f"python-sb: cannot put the program in its cgroup ({exc}); nothing was run")
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            group.remove()
            return 2
    target = [pid]  # the sandboxed program once bwrap says which pid it is
    if info_fd is not None:
        import threading

        threading.Thread(target=_read_child_pid, args=(info_fd, target), daemon=True).start()
    for number in _FORWARDED:
        signal.signal(number, lambda signum, frame: _forward(target[-1], signum))
    for number in (signal.SIGINT, signal.SIGQUIT):
        signal.signal(number, signal.SIG_IGN)
    os.write(ready_w, b"x")
    os.close(ready_w)
    try:
        launcher = (argv is not None or relays_exit) and not exact
        status = _wait(pid, limits, group, [r for r, _ in pipes], launcher=launcher, status_fd=status_fd)
    finally:
        if group is not None:
            group.kill()
            group.remove()
    if group is None:  # nothing left to clean up at exit (a cgroup may still be on its way out)
        FINISHED.append(status)
    return status


def _become_subreaper() -> None:
    """The program's orphans are re-parented to this process, so a breach can stop them too."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


_LAUNCHER_BLOCKED = (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP)


def _read_child_pid(fd: int, target: list[int]) -> None:
    import json

    chunks = []
    try:
        while True:
            data = os.read(fd, 4096)
            if not data:
                break
            chunks.append(data)
    except OSError:
        pass
    finally:
        os.close(fd)
    try:
        pid = json.loads(b"".join(chunks) or b"{}").get("child-pid")
    except ValueError:
        return
    if isinstance(pid, int) and pid > 0:
        target.append(pid)


def _stop_tree(pid: int, cgroup: Cgroup | None) -> None:
    """SIGKILL the program and everything it started (its cgroup, else our descendants)."""
    _forward(pid, signal.SIGKILL)
    if cgroup is not None:
        cgroup.kill()
    _kill_descendants(wait=False)


def _kill_descendants(*, wait: bool = True) -> None:
    """SIGKILL every process whose parent is this supervisor (a subreaper: the program's
    orphans come back to it), until none is left."""
    me = os.getpid()
    for _ in range(50):
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == me:
                found.append(int(entry))
        if not found:
            return
        for child in found:
            _forward(child, signal.SIGKILL)
        if not wait:
            return
        for child in found:
            with contextlib.suppress(OSError):
                os.waitpid(child, 0)


def _forward(pid: int, signum: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, signum)


def _signal_of(status: int, launcher: bool, reported: int | None = None) -> int | None:
    """The signal that ended the program: its own, or, behind a launcher (bwrap exits with
    128 + the signal of its child), the one the launcher reports, unless the program's
    interpreter ``reported`` that very status as its exit status (``sys.exit(143)``)."""
    if os.WIFSIGNALED(status):
        return os.WTERMSIG(status)
    if launcher and os.WIFEXITED(status) and 129 <= os.WEXITSTATUS(status) <= 128 + 64:
        if reported == os.WEXITSTATUS(status):
            return None
        return os.WEXITSTATUS(status) - 128
    return None


def status_pipe() -> tuple[int, int]:
    """``(read end, write end)``: the sandboxed interpreter writes its exit status on the write
    end (inherited; see :func:`pysandboxes.complete.report_status`) just before it exits, so that
    behind a launcher an exit status above 128 is not taken for a signal."""
    r, w = os.pipe()
    os.set_inheritable(w, True)
    return r, w


def _reported(fd: int | None) -> int | None:
    """The exit status written on the status pipe, if any (all writers are gone by now)."""
    if fd is None:
        return None
    try:
        os.set_blocking(fd, False)
        data = os.read(fd, 64)
    except OSError:
        return None
    finally:
        os.close(fd)
    text = data.decode("ascii", "replace").strip()
    return int(text) if text.isdigit() else None


def _wait(
    pid: int,
    limits: Limits,
    cgroup: Cgroup | None,
    pipes: list[int],
    *,
    launcher: bool = False,
    status_fd: int | None = None,
) -> int:
    import select

    timeout = limits["timeout"]
    deadline = time.monotonic() + timeout if timeout else None
    budget = limits["limit-output"]
    written = 0
    breach: tuple[str, str] | None = None
    killed_at: float | None = None
    open_pipes = {r: fd for r, fd in zip(pipes, (1, 2), strict=False)}
    last_byte = {1: b"\n", 2: b"\n"}  # the report starts a line of its own
    status = None
    usage = None
    while status is None:
        now = time.monotonic()
        if deadline is not None and now >= deadline and breach is None:
            breach = ("timeout", f"still running after {timeout:g}s")
            _forward(pid, signal.SIGTERM)
            killed_at = now
        if killed_at is not None and now >= killed_at + 2.0:
            _stop_tree(pid, cgroup)
            killed_at = float("inf")
        wait = 0.05 if open_pipes or deadline is not None or killed_at is not None else None
        if open_pipes:
            try:
                ready, _, _ = select.select(list(open_pipes), [], [], wait)
            except InterruptedError:
                ready = []
            for r in ready:
                try:
                    data = os.read(r, 65536)
                except OSError:
                    data = b""
                if not data:
                    del open_pipes[r]
                    os.close(r)
                    continue
                if budget is not None and written + len(data) > budget:
                    data = data[: max(0, int(budget) - written)]  # nothing more once it is spent
                    if breach is None:
                        breach = ("limit-output", f"more than {int(budget)} bytes written")
                        _stop_tree(pid, cgroup)
                        killed_at = float("inf")
                written += len(data)
                if data:
                    last_byte[open_pipes.get(r, 1)] = data[-1:]
                    _write_all(open_pipes.get(r, 1), data)
        try:
            flags = os.WNOHANG if (open_pipes or deadline is not None or killed_at is not None) else 0
            waited, raw, usage = os.wait4(pid, flags)
        except ChildProcessError:
            return 2
        except InterruptedError:
            continue
        if waited == pid:
            status = raw
        elif not open_pipes:
            time.sleep(0.02)
    for r in open_pipes:  # what the child wrote just before it ended
        while True:
            try:
                data = os.read(r, 65536)
            except OSError:
                break
            if not data or (budget is not None and written >= budget):
                break
            if budget is not None:
                data = data[: max(0, int(budget) - written)]
            written += len(data)
            if data:
                last_byte[open_pipes[r]] = data[-1:]
                _write_all(open_pipes[r], data)
        os.close(r)
    assert usage is not None
    number = _signal_of(status, launcher, _reported(status_fd))
    if breach is None:
        breach = _breach(number, usage, limits, cgroup)
    if breach is not None:
        _kill_descendants()  # a breach stops the whole tree, orphans included
        key, what = breach
        if last_byte.get(2, b"\n") != b"\n":
            _write_all(2, b"\n")
        if key == "limit-cpu" and number is not None:
            what = f"{what}, killed by {signal.Signals(number).name}"
        stderr(limits.message(key, what))
        return EXIT_TIMEOUT if key == "timeout" else EXIT_LIMIT
    if number is not None:
        if number not in (signal.SIGKILL, signal.SIGSTOP):  # those two have no handler to reset
            signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
        return 128 + number
    return os.waitstatus_to_exitcode(status)


def _breach(
    number: int | None, usage: object, limits: Limits, cgroup: Cgroup | None
) -> tuple[str, str] | None:
    cpu = limits["limit-cpu"]
    if number is not None:
        used = usage.ru_utime + usage.ru_stime  # type: ignore[attr-defined]
        if cpu and (number == signal.SIGXCPU or (number == signal.SIGKILL and used >= int(cpu))):
            return ("limit-cpu", f"{used:.1f}s of CPU")
        if number == signal.SIGKILL and cgroup is not None and cgroup.memory_exceeded():
            return ("limit-memory", "killed by the kernel's out-of-memory killer")
    return None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except InterruptedError:
            continue
        except OSError:
            return  # our own stdout is gone: the child's output has nowhere to go
        view = view[n:]
