"""Complete mode: run a whole program under the rules, like ``python`` would run it.

One process: read the program, filter the environment, confine (landlock), arm the guards,
run. No launcher waits around. When the interpreter itself must start differently
(``os-sandbox=subprocess``, or options such as ``-O``, ``-X``, ``-I`` that only apply at
start-up) the process replaces itself (``exec``) with a fresh interpreter, which reads the
same command line and the host environment from a sealed memory file and goes on from there.
"""

from __future__ import annotations

import contextlib
import os
import sys
from _collections_abc import Mapping as _MappingABC  # loaded by os (collections.abc costs ~1 ms)

from ._frames import strip_own_frames
from ._log import debug, debug_enabled
from .cli.cpython_args import COMMAND, MODULE, REPL, SCRIPT, STDIN, CommandLine
from .errors import ProviderError, RuleSyntaxError, SandBoxError
from .providers import LAUNCHED
from .rules import load_policy, locate
from .rules.policy import Policy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, ClassVar

_LOGGER = "pysandboxes.complete"
_exec = exec  # the real one: the guards replace builtins.exec when dynamic code is denied

#: options the runner honours itself; any other one needs a fresh interpreter started with it
#: (so that sys.flags, buffering and warnings are exactly python's)
_EMULATED = frozenset({"-i", "-x"})
_HANDOFF_ENV = "PYSANDBOXES_HANDOFF_FD"


class Exit(Exception):
    """Stop with this exit status after printing ``message`` on stderr."""

    def __init__(self, status: int, message: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def limits_of(policy: Policy) -> Any:
    """The resource limits of a complete-mode run (none by default: a program behaves as
    with python)."""
    from .limits import from_policy

    return from_policy(policy)


def needs_fresh_interpreter(command: CommandLine, policy: Policy, provider: str) -> bool:
    """Options that apply only at start-up, ``os-sandbox=subprocess``, or native code allowed
    under landlock: a process that ran with the host's environment keeps copies of it in its
    memory, which code reading raw memory could find; a fresh interpreter never saw it."""
    if provider == "subprocess":
        return True
    if provider == "landlock" and any(
        policy.decide_api(f).allowed
        for f in ("ctypes.CDLL", "_ctypes.dlsym", "ctypes.string_at", "ctypes.cast")
    ):
        return True
    return any(opt.startswith("-") and opt not in _EMULATED for opt in _option_names(command))


def _option_names(command: CommandLine) -> list[str]:
    names: list[str] = []
    skip = False
    for opt in command.interpreter_options:
        if skip:
            skip = False
            continue
        names.append(opt)
        skip = opt in ("-W", "-X", "--check-hash-based-pycs")
    return names


def rule_file_for(command: CommandLine, cwd: str) -> str:
    if command.config is not None:
        return locate.for_config(command.config, cwd)
    if command.mode == MODULE and command.target:
        return locate.for_module(command.target, cwd, [cwd, *sys.path[1:]])
    if command.mode == SCRIPT and command.target:
        return locate.for_script(command.target, cwd)
    return locate.for_script("", cwd)


def load(command: CommandLine, environ: Mapping[str, str], cwd: str) -> Policy:
    from .rules.origin import set_display_home

    reads = _Reads(environ)
    set_display_home(reads.get("HOME"))
    path = rule_file_for(command, cwd)
    rules = list(command.rules)
    if command.learn_requested or command.learn_file:
        rules.append(("learn", command.learn_file or path))
    policy = load_policy(path, extra_rules=rules, environ=reads, cwd=cwd, missing_file="learn")
    _Loaded.environ = reads.needed(policy)
    if policy.net.hostnames:
        policy = policy.pin_hostnames(_resolve)
    return policy


class _Loaded:
    #: the host variables :func:`load` read (the rule files' ``${…}``, HOME): all that a fresh
    #: interpreter needs to load the same rules. The rest of the host's environment never
    #: reaches it, so that no copy of it exists in the program's memory.
    environ: ClassVar[dict[str, str]] = {}


class _Reads(_MappingABC):  # type: ignore[type-arg]
    """The host environment, recording which variables the rule loader reads."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ
        self._read: set[str] = set()

    def __getitem__(self, name: str) -> str:
        self._read.add(name)
        return self._environ[name]

    def get(self, name: str, default: Any = None) -> Any:
        self._read.add(name)
        return self._environ.get(name, default)

    def __contains__(self, name: object) -> bool:
        self._read.add(str(name))
        return name in self._environ

    def __iter__(self) -> Any:  # names only: an env= pattern matches names, then reads values
        return iter(self._environ)

    def __len__(self) -> int:
        return len(self._environ)

    def needed(self, policy: Policy) -> dict[str, str]:
        """What loading again needs: the variables read, and the names an ``env=`` pattern
        gave a value of its own (``env=LC_*=C``: the name must exist, its value is not used)."""
        environ = self._environ
        needed = {name: environ[name] for name in self._read if name in environ}
        for name in policy.environment:
            if name in environ and name not in needed:
                needed[name] = ""
        return needed


def _resolve(name: str) -> list[str]:
    from .providers.namespaces import Inside

    if Inside.pinned is not None:  # in a namespace sandbox: the host resolved them (no DNS here)
        return list(Inside.pinned.get(name, []))
    import _socket

    try:
        answers = _socket.getaddrinfo(name, None, 0, _socket.SOCK_STREAM)
    except OSError:
        return []
    return sorted({str(a[4][0]) for a in answers})


# -- the program ---------------------------------------------------------------------------


class Program:
    """What to run, read and compiled before the guards are armed."""

    def __init__(self, command: CommandLine, cwd: str, *, ipython: bool = False) -> None:
        self.command = command
        self.ipython = ipython
        self.code: Any = None
        self.main_file: str | None = None  # __file__ of __main__, absolute
        self.path0 = ""  # sys.path[0]
        self.argv = list(command.argv)
        self.run_module: str | None = None
        #: what the program is read from: readable whatever the rules say
        self.program_files: list[str] = []
        #: import-path directories the program is found in (their metadata stays readable)
        self.search_dirs: list[str] = []
        mode = command.mode
        if mode == SCRIPT:
            assert command.target is not None
            script = os.path.join(cwd, command.target)
            if os.path.isdir(script) or (os.path.isfile(script) and _is_zip(script)):
                self.path0 = os.path.realpath(script)
                self.run_module = "__main__"
                self.main_file = os.path.realpath(script)
                self.program_files.append(self.main_file)
                return
            try:
                with open(script, "rb") as f:
                    source = f.read()
            except OSError as exc:
                raise Exit(
                    2,
                    f"python-sb: can't open file {os.path.abspath(script)!r}: [Errno {exc.errno}] {exc.strerror}",
                ) from None
            if command.flags.skip_first_line:  # python skips the line, not the line count
                source = b"\n" + source.partition(b"\n")[2]
            self.main_file = os.path.abspath(script)
            self.path0 = os.path.dirname(os.path.realpath(script))
            self.program_files.append(os.path.realpath(script))
            self.code = self._compile(source, self.main_file)
        elif mode == MODULE:
            assert command.target is not None
            self.path0 = cwd
            self.run_module = command.target
            self.program_files += _module_location(command.target.partition(".")[0], cwd)
            self.search_dirs += [os.path.dirname(p) for p in self.program_files]
        elif mode == COMMAND:
            self.path0 = ""
            self.code = self._compile(command.target or "", "<string>")
        elif mode == STDIN or (mode == REPL and not ipython and not command.interactive(sys.stdin.isatty())):
            self.path0 = ""
            self.code = self._compile(sys.stdin.buffer.read(), "<stdin>")
            self.argv[0] = "-" if mode == STDIN else ""
            self.main_file = "<stdin>"
        else:
            self.path0 = ""

    def _compile(self, source: str | bytes, filename: str) -> Any:
        optimize = self.command.flags.optimize
        try:
            return compile(source, filename, "exec", dont_inherit=True, optimize=optimize or -1)
        except (SyntaxError, ValueError) as exc:
            exc.__traceback__ = None  # python shows no frame for a program that does not compile
            sys.excepthook(type(exc), exc, None)
            raise Exit(1) from None


def _module_location(top: str, cwd: str) -> list[str]:
    """Where ``python -m top…`` is read from, found (not imported) before the rules apply.

    Finding it also fills the import system's directory caches, so the program's own
    directory needs no ``expose-ro=`` just to be searched.
    """
    from importlib.machinery import PathFinder

    saved = sys.path[0] if sys.path else None
    if sys.path:
        sys.path[0] = cwd
    try:
        spec = PathFinder.find_spec(top)
    except (ImportError, ValueError, OSError):
        spec = None
    finally:
        if saved is not None:
            sys.path[0] = saved
    if spec is None:
        return []
    if spec.submodule_search_locations:
        return [os.path.realpath(p) for p in spec.submodule_search_locations]
    return [os.path.realpath(spec.origin)] if spec.origin and os.path.exists(spec.origin) else []


def _is_zip(path: str) -> bool:
    """A zip application (``python app.pyz``): its end-of-central-directory record is last.

    Read directly: importing ``zipfile`` costs ten milliseconds on every start-up.
    """
    if path.endswith(".py"):
        return False
    try:
        with open(path, "rb") as f:
            size = f.seek(0, 2)
            f.seek(max(0, size - 65557))
            return b"PK\x05\x06" in f.read()
    except OSError:
        return False


def _fresh_main(program: Program) -> dict[str, Any]:
    import builtins
    import types

    module = types.ModuleType("__main__")
    module.__dict__["__builtins__"] = builtins
    module.__dict__["__annotations__"] = {}  # noqa: RUF063 - the namespace python gives __main__
    if program.main_file == "<stdin>":
        module.__file__ = "<stdin>"
        module.__cached__ = None  # type: ignore[attr-defined]
        module.__loader__ = sys.modules["_frozen_importlib"].BuiltinImporter
    elif program.main_file is not None and program.run_module is None:
        module.__file__ = program.main_file
        module.__cached__ = None  # type: ignore[attr-defined]
        # importlib.machinery's own classes, without importing it (and warnings) at start-up
        machinery = sys.modules["_frozen_importlib_external"]
        module.__loader__ = machinery.SourceFileLoader("__main__", program.main_file)
    elif program.run_module is None:
        module.__loader__ = sys.modules["_frozen_importlib"].BuiltinImporter
    sys.modules["__main__"] = module
    return module.__dict__


def _execute(program: Program, namespace: dict[str, Any]) -> None:
    if program.run_module is not None:
        import runpy

        # A directory or zip app keeps its own path as sys.argv[0], as with python.
        alter_argv = program.command.mode == MODULE
        runpy._run_module_as_main(program.run_module, alter_argv=alter_argv)  # type: ignore[attr-defined]
    elif program.code is not None:
        _exec(program.code, namespace)


def _console(namespace: dict[str, Any]) -> Any:
    """python's REPL: prompts on stderr when stdin is not a terminal, readline when it is."""
    import code

    class Console(code.InteractiveConsole):
        def raw_input(self, prompt: str = "") -> str:
            if sys.stdin.isatty():
                return input(prompt)
            sys.stderr.write(prompt)
            sys.stderr.flush()
            line = sys.stdin.readline()
            if not line:
                raise EOFError
            return line[:-1] if line.endswith("\n") else line

    return Console(namespace)


def _interact(console: Any, quiet: bool, where: str) -> None:
    banner = "" if quiet else f"Python {sys.version} on {sys.platform}\n{where}"
    console.interact(banner=banner, exitmsg="")


def _prepare_ipython(namespace: dict[str, Any], quiet: bool) -> Any:
    """IPython set up before the rules apply (its profile and configuration files are its
    own, in a private directory); the session itself runs under the rules, history off."""
    import tempfile

    try:
        from IPython.terminal.ipapp import TerminalIPythonApp
    except ImportError:
        raise Exit(
            2, "ipython-sb: IPython is not installed in this environment; install it, or use python-sb"
        ) from None
    directory = tempfile.mkdtemp(prefix="pysandboxes-ipython-")
    app = TerminalIPythonApp.instance(user_ns=namespace)
    argv = [f"--ipython-dir={directory}", "--HistoryManager.enabled=False", "--no-confirm-exit"]
    if not sys.stdin.isatty():
        argv.append("--simple-prompt")
    if quiet:
        argv.append("--no-banner")
    app.initialize(argv)  # type: ignore[no-untyped-call]
    return app


def _exit_status(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:  # noqa: SIM105 - contextlib costs a millisecond at start-up
        sys.stderr.write(f"{code}\n")
    except Exception:  # stderr may be gone
        pass
    return 1


#: ``os-sandbox`` of a learning run: the Python layer records, no OS boundary
LEARNING = "learning"


class _Captured:
    raise_signal: Any = None


def run(command: CommandLine, policy: Policy, provider: str, program: Program) -> int:
    """Arm and run. From here on the program's code is under the rules."""
    import _signal  # type: ignore[import-not-found]

    _Captured.raise_signal = _signal.raise_signal  # captured before the API guard wraps it
    flags = command.flags  # -u, -B, -W… were applied by the interpreter itself (see _EMULATED)
    sys.argv[:] = program.argv
    if sys.path and not flags.safe_path:
        sys.path[0] = program.path0
    elif not flags.safe_path:
        sys.path.insert(0, program.path0)
    namespace = _fresh_main(program)
    program_files = list(program.program_files)
    inspect = flags.inspect or (command.mode == REPL and program.code is None)
    # The runner's own modules, loaded before the rules apply (never charged to the program).
    if program.run_module is not None:
        import runpy  # noqa: F401
    shell_app = console = None
    if inspect and program.ipython:
        shell_app = _prepare_ipython(namespace, flags.quiet)
        program_files.append(shell_app.ipython_dir)
    elif inspect:
        console = _console(namespace)

        try:  # noqa: SIM105
            import readline  # noqa: F401 - line editing, as in python's REPL
        except ImportError:
            pass
    debug(
        _LOGGER,
        "running %s under %s (os-sandbox=%s)",
        program.argv[0] or "<stdin>",
        policy.main_file,
        provider,
    )
    install = None
    learning = None
    if provider == LEARNING:
        from .learning import Session, banner

        learning = Session(policy, os.environ)
        sys.stderr.write(banner(policy.learn_target or ""))
    if provider != "none" and policy.py_sandbox.value is not False:
        from ._state import State
        from .guards import prepare
        from .providers import unix_sockets_refused_by

        State.unix_sockets_refused_by = unix_sockets_refused_by(policy, provider)

        install = prepare(
            policy,
            program_files=program_files,
            # sys.path[0] is "" for -c, stdin and the REPL: the working directory, whose
            # metadata the import system (and load_dotenv()'s search) stats
            program_dirs=[program.path0 or os.getcwd(), *program.search_dirs],
            extra_imports=_program_modules(program),
            interactive=inspect,
            learner=learning.recorder if learning is not None else None,
        )
    _apply_environment(policy, keep_host=learning is not None)
    if learning is not None:
        learning.start()
    if provider == "landlock":
        from .limits import open_status
        from .providers.landlock import confine, plan_for

        open_status()  # limit-memory counts from what is mapped later: read it past landlock
        plan = plan_for(policy, program_files=program_files)
        if debug_enabled(_LOGGER):
            for line in plan.describe():
                debug(_LOGGER, "landlock: %s", line)
        confine(plan)
    if provider != "none":
        # The whole program is sandboxed: @sandbox calls are direct, sandboxes() a no-op.
        from ._state import State

        State.in_sandbox = True
    limits = limits_of(policy)
    if limits.kernel():
        from .limits import apply_rlimits

        apply_rlimits(limits)
    if install is not None:
        install()
    try:
        return _run_armed(
            command, policy, provider, program, namespace, inspect, console, shell_app, learning, limits
        )
    finally:
        if learning is not None:
            learning.finish()


def _run_armed(
    command: CommandLine,
    policy: Policy,
    provider: str,
    program: Program,
    namespace: dict[str, Any],
    inspect: bool,
    console: Any,
    shell_app: Any,
    learning: Any,
    limits: Any,
) -> int:
    import _signal  # type: ignore[import-not-found]

    flags = command.flags
    status = 0
    try:
        if program.code is not None or program.run_module is not None:
            _execute(program, namespace)
    except SystemExit as exc:
        status = _exit_status(exc)
        inspect = False
    except KeyboardInterrupt as exc:
        sys.excepthook(type(exc), exc, strip_own_frames(exc))
        if learning is not None:
            learning.finish()  # before the signal ends the process
        _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
        _Captured.raise_signal(_signal.SIGINT)
        return 130
    except BaseException as exc:
        sys.excepthook(type(exc), exc, strip_own_frames(exc))
        status = 1
        from .limits import breach_of

        breach = breach_of(exc, limits)
        if breach is not None:
            from .limits import EXIT_LIMIT, stderr

            stderr(limits.message(*breach))
            return EXIT_LIMIT
    if inspect:
        where = f"python-sb: under the rules of {policy.main_file} (os-sandbox={provider})"
        try:
            if shell_app is not None:
                shell_app.start()
            else:
                _interact(console, flags.quiet or command.mode != REPL, where)
        except SystemExit as exc:
            return _exit_status(exc)
    return status


def _program_modules(program: Program) -> tuple[str, ...]:
    if program.run_module and program.run_module != "__main__":
        return (program.run_module.partition(".")[0],)
    return ()


def _apply_environment(policy: Policy, *, keep_host: bool = False) -> None:
    """The program starts with the ``env=`` result only (and ``TERM``, for terminals).
    Learning mode (``keep_host``): the host's environment, with the ``env=`` result on top."""
    if keep_host:
        for name, value in policy.environment.items():
            os.environ[name] = value
        return
    wanted = dict(policy.environment)
    term = os.environ.get("TERM")
    if term is not None and "TERM" not in wanted:
        wanted["TERM"] = term
    for name in list(os.environ):
        if name not in wanted:
            del os.environ[name]
    for name, value in wanted.items():
        # every value put again: the C environment must not point into the block replaced below
        os.environ[name] = value
    from ._environ_block import replace

    # /proc/self/environ: the variables the process started with (a launcher's, the
    # interpreter's configuration, or the host's whole environment) become these
    replace(os.environ)


# -- a fresh interpreter ---------------------------------------------------------------------


def exec_fresh_interpreter(
    argv: list[str], command: CommandLine, policy: Policy, cwd: str, *, ipython: bool = False
) -> None:
    """Replace this process with ``python [options] -c BOOT``, handing over argv and the host
    variables the rules read."""
    fd = _handoff({"argv": argv, "environ": _handoff_environ(policy), "cwd": cwd, "ipython": ipython})
    # The interpreter starts with what configures it on the host, as python would (PYTHON*,
    # the locale); the program then sees only the env= result (see run()).
    if policy.learning:  # learning: the host's environment (see run())
        environment = {**os.environ, **policy.environment}
    else:
        environment = _interpreter_environment(policy)
    environment[_HANDOFF_ENV] = str(fd)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *_fresh_interpreter_args(command)], environment)


def _handoff_environ(policy: Policy) -> dict[str, str]:
    """The host variables a fresh interpreter is handed to load the rules again: those the
    rules read (see :class:`_Loaded`); under learning, all of them (the program sees them)."""
    return dict(os.environ) if policy.learning else dict(_Loaded.environ)


def _handoff(payload: dict[str, Any]) -> int:
    """An inheritable anonymous memory file holding ``payload`` (JSON), read by :func:`resume`."""
    import json

    fd = os.memfd_create("pysandboxes-handoff", 0)
    os.write(fd, json.dumps(payload).encode())
    os.lseek(fd, 0, os.SEEK_SET)
    os.set_inheritable(fd, True)
    return fd


def _fresh_interpreter_args(command: CommandLine) -> list[str]:
    """``[options] -c BOOT``: the interpreter options of the command line (the REPL's ``-i``
    is emulated), then the bootstrap that calls :func:`resume`."""
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    # PID 1 (bwrap --as-pid-1) becomes the namespace's init before importing the runner: it
    # stays small (see unshare_setup.become_init)
    boot = (
        f"import sys; sys.path.insert(0, {package_root!r}); "
        "from pysandboxes.providers.unshare_setup import init_if_first; init_if_first(); "
        "from pysandboxes.complete import resume; sys.exit(resume())"
    )
    return [*(o for o in command.interpreter_options if o != "-i"), "-c", boot]


NAMESPACE_PROVIDERS = LAUNCHED


def _program_files(command: CommandLine, cwd: str) -> list[str]:
    """What the program is read from, for the sandbox's view, without reading it here (the
    interpreter in the sandbox reads it: standard input must reach it untouched)."""
    if command.mode == SCRIPT and command.target:
        script = os.path.realpath(os.path.join(cwd, command.target))
        return [script] if os.path.exists(script) else []
    if command.mode == MODULE and command.target:
        return _module_location(command.target.partition(".")[0], cwd)
    return []


def run_unshare_in_process(
    argv: list[str], command: CommandLine, policy: Policy, cwd: str, *, ipython: bool = False
) -> int:
    """``os-sandbox=unshare`` without util-linux ``unshare``: a supervising parent stays outside
    (signals, limits, the network broker); the child makes the namespaces and builds the view
    itself (see ``providers/unshare_setup.py``); the namespace's PID 1, a fork of this process,
    is made non-dumpable (nothing inside can read its memory, which held the host's whole
    environment); PID 2 replaces itself with the program's fresh interpreter, started with the
    interpreter's configuration and the ``env=`` result only."""
    from .providers.namespaces import STATUS_ENV, sandbox_view, seccomp_fd, unix_sockets
    from .providers.unshare_setup import enter_in_process
    from .supervise import status_pipe, supervise

    view, network = sandbox_view(policy, "unshare", _program_files(command, cwd), cwd, start_broker=False)
    filter_fd = seccomp_fd(unix_sockets=unix_sockets(policy, "unshare"))
    sys.stdout.flush()
    sys.stderr.flush()
    status_r, status_w = status_pipe()
    try:
        status = supervise(limits_of(policy), on_parent=network.start, relays_exit=True, status_fd=status_r)
    except BaseException:
        network.stop()
        raise
    if status is not None:  # the supervisor: the program ran (and ended) below
        network.stop()
        os.close(filter_fd)
        os.close(status_w)
        return status
    network.give_up_host_end()
    handoff = _handoff(
        {
            "argv": argv,
            "environ": _handoff_environ(policy),
            "cwd": cwd,
            "ipython": ipython,
            "inside": "unshare",
        }
    )
    environment = _interpreter_environment(policy)
    environment.update(network.env)
    environment[STATUS_ENV] = str(status_w)
    environment[_HANDOFF_ENV] = str(handoff)
    enter_in_process(view, filter_fd)  # returns in PID 2, inside
    os.execve(sys.executable, [sys.executable, *_fresh_interpreter_args(command)], environment)
    raise AssertionError("unreachable")  # execve returns only by raising


def report_status(status: int, inside: Any) -> int:
    """In the sandbox: tell the supervisor that the program exits with ``status`` (behind a
    launcher, 128 + N is also how a death by signal N looks), then return it. ``inside``: the
    ``namespaces.Inside`` class, imported before the program ran (nothing is imported after it:
    the program may have broken the import system)."""
    fd, inside.status_fd = inside.status_fd, None
    if fd is not None:
        with contextlib.suppress(OSError):
            os.write(fd, f"{status}\n".encode())
            os.close(fd)
    return status


def _interpreter_environment(policy: Policy) -> dict[str, str]:
    """What a fresh interpreter starts with: what configures it on the host, as python would
    (PYTHON*, the locale), then the ``env=`` result; the program sees only the latter."""
    environment = {
        k: v for k, v in os.environ.items() if k.startswith(("PYTHON", "LC_")) or k in ("LANG", "LANGUAGE")
    }
    environment.pop("PYTHONINSPECT", None)
    environment.update(policy.environment)
    if "TERM" in os.environ and "TERM" not in environment:
        environment["TERM"] = os.environ["TERM"]
    return environment


def run_in_namespaces(
    argv: list[str], command: CommandLine, policy: Policy, provider: str, cwd: str, *, ipython: bool = False
) -> int:
    """``os-sandbox=bwrap|unshare|firejail|qemu``: start a fresh interpreter inside new
    namespaces (see ``providers/namespaces.py``) and supervise it from outside: signals, limits,
    exit status."""
    if provider == "unshare":
        return run_unshare_in_process(argv, command, policy, cwd, ipython=ipython)
    if provider != "firejail":
        return _launch(argv, command, policy, provider, cwd, ipython=ipython)
    from .providers import firejail

    for attempt in range(firejail.ATTEMPTS):
        watch = firejail.SetupWatch()
        try:
            status = _launch(argv, command, policy, provider, cwd, ipython=ipython, watch=watch)
        finally:
            again = watch.finish(last=attempt == firejail.ATTEMPTS - 1)
        if not again:
            return status
        debug(_LOGGER, "firejail stopped before the start (an entry it hides vanished): starting it again")
    raise AssertionError("unreachable: the last attempt returns")


def _launch(
    argv: list[str],
    command: CommandLine,
    policy: Policy,
    provider: str,
    cwd: str,
    *,
    ipython: bool,
    watch: Any = None,
) -> int:
    """One start of :func:`run_in_namespaces` (``watch``: a ``firejail.SetupWatch``)."""
    from .providers.namespaces import launcher, sandbox_view
    from .supervise import supervise

    # the broker: before the fork, its threads stay here
    view, network = sandbox_view(policy, provider, _program_files(command, cwd), cwd)
    handoff = _handoff(
        {
            "argv": argv,
            "environ": _handoff_environ(policy),
            "cwd": cwd,
            "ipython": ipython,
            "inside": provider,
        }
    )
    info_r, info_w = os.pipe()
    os.set_inheritable(info_w, True)
    environment = _interpreter_environment(policy)
    # own_init: bwrap makes the interpreter PID 1 (--as-pid-1), which forks the program off and
    # stays a non-dumpable init (resume()): bwrap's own PID 1 would show its environment inside
    # firejail's own standard error goes to the watch; the program's is this descriptor
    real_stderr = os.dup(2) if watch is not None else None
    start, fds, extra, informs = launcher(
        view,
        policy,
        provider,
        network,
        info_fd=info_w,
        limits=limits_of(policy),
        own_init=True,
        stderr_fd=real_stderr,
    )
    environment.update(extra)
    if not informs:  # nobody writes it: the supervisor signals the launcher, which passes them on
        os.close(info_w)
        info_r = -1
    environment[_HANDOFF_ENV] = str(handoff)
    from .providers.namespaces import STATUS_ENV
    from .supervise import status_pipe

    # a virtual machine's launcher dies of its program's signal: no ambiguity to lift there
    status_r, status_w = status_pipe() if provider != "qemu" else (None, None)
    if status_w is not None:
        environment[STATUS_ENV] = str(status_w)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        status = supervise(
            limits_of(policy),
            argv=[*start, "--", sys.executable, *_fresh_interpreter_args(command)],
            env=environment,
            info_fd=info_r if info_r >= 0 else None,
            cgroup=provider != "qemu",  # the virtual machine is the bound (its memory, its own kernel)
            exact=provider == "qemu",
            status_fd=status_r,
            stderr_swap=(real_stderr, watch.write_fd) if real_stderr is not None else None,
            on_parent=watch.launched if watch is not None else None,
        )
    finally:
        network.stop()
        if real_stderr is not None:
            os.close(real_stderr)
        if status_w is not None:
            os.close(status_w)
        for fd in fds:
            os.close(fd)
    assert status is not None  # only the child returns None, and it execs the launcher
    return status


def resume() -> int:
    """The fresh interpreter's side of :func:`exec_fresh_interpreter`."""
    import json

    from .providers.namespaces import Inside

    Inside.take()
    from . import guards  # noqa: F401 - everything this process needs, imported before the path goes
    from .cli import python_sb  # noqa: F401
    from .providers import landlock  # noqa: F401

    sys.path.pop(0)
    fd = int(os.environ.pop(_HANDOFF_ENV))
    with os.fdopen(fd, "rb") as f:
        data = json.loads(f.read())
    from .cli.python_sb import main

    inside = data.get("inside")
    if inside:  # in a namespace provider's sandbox: the launcher blocked these for us
        import signal

        signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP))
    return report_status(
        main(
            data["argv"],
            environ=data["environ"],
            cwd=data["cwd"],
            fresh=True,
            ipython=data["ipython"],
            inside=inside,
        ),
        Inside,
    )


__all__ = [
    "Exit",
    "Program",
    "ProviderError",
    "RuleSyntaxError",
    "SandBoxError",
    "exec_fresh_interpreter",
    "run",
]
