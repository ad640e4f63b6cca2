"""The Python layer: one audit hook (PEP 578) that asks the policy, plus a few wrappers.

:func:`arm` installs it before any code of the program runs. A hook cannot be removed from
Python, and every function it runs is sealed (see ``_seal.py``): captured originals, fresh
copies of builtin modules, C base classes and rewritten module globals do not switch it off.
Calls that raise no audit event (``os.stat``, ``os.setuid``, ``Thread.start``,
``pickle.loads``…) and the program's imports of modules already loaded are handled by
wrappers: they stop misused legitimate code, and the OS provider stops hostile code.

Sealing protects the guards' own state; the *values* they judge come from the program and are
never asked what they are (a class answers with its own code): each guard classifies them by
exact type and judges the value C uses, and a wrapper hands C the very value it judged (see
``files.py`` and ``network.py``).
"""

from __future__ import annotations

import builtins
import sys
from types import FunctionType

from .._log import USER_LOGGER, debug
from .._state import State
from ..errors import RuleApiPermissionError, RulePermissionError, SandBoxError
from ..rules.api_registry import CATEGORY_OF
from ..rules.policy import Policy
from . import api as api_guard
from . import files as file_guard
from . import imports as import_guard
from . import network as net_guard
from ._seal import SEALED_GLOBALS, frozen_get, seal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any

    from ..learning.recorder import Recorder

__all__ = ["arm"]


def _hook(event, args, _get=None, _note=None, _Base=None):  # type: ignore[no-untyped-def]
    handler = _get(event)
    if handler is not None:
        try:
            handler(args)
        except _Base as refusal:
            _note(refusal)
            raise


def _note(refusal, _lock=None, _modules_get=None, _name="", _type=None):  # type: ignore[no-untyped-def]
    """Log a refusal on the ``Pysandboxes`` logger (INFO), once: a handler that is itself
    refused (a log file outside the rules) must not log recursively. The lock only mutes
    logging; it decides nothing. Without ``logging`` loaded nobody listens: nothing to do."""
    logging = _modules_get("logging")
    if logging is not None and _lock.acquire(False):
        try:
            logger = logging.getLogger(_name)
            if logger.isEnabledFor(20):
                logger.info("refused: %s: %s", _type(refusal).__name__, refusal)
        finally:
            _lock.release()


def _learning(check: Callable[[Any], None], learner: Recorder) -> Callable[[Any], None]:
    """``check`` whose import and API refusals are recorded instead of raised."""

    def learning(argument: Any) -> None:
        try:
            check(argument)
        except SandBoxError as refusal:
            if not learner.refusal(refusal):
                raise

    return learning


def _on_setattr(args, _type=None, _function=None, _sealed=None, _Refused=None):  # type: ignore[no-untyped-def]
    target = args[0]
    if _type(target) is _function and target.__globals__ is _sealed:
        raise _Refused(f"The sandbox's guard function {target.__qualname__} cannot be changed.")


class _Armed:
    """Remembers, per process, that the guards are armed (arming twice would stack hooks)."""

    policy: Policy | None = None


def arm(
    policy: Policy,
    *,
    program_files: Iterable[str] = (),
    program_dirs: Iterable[str] = (),
    extra_imports: Iterable[str] = (),
    interactive: bool = False,
) -> None:
    """Install the Python layer for ``policy`` in this process. Irreversible.

    ``program_files``: what the program is read from (readable); ``program_dirs``: where it
    lives (``sys.path[0]``: its metadata is readable); ``extra_imports``: top-level names that
    are the program itself (``-m pkg``); ``interactive``: a REPL follows, where typed code is
    compiled by the console (dynamic code is the REPL's job, as with the reference).
    """
    prepare(
        policy,
        program_files=program_files,
        program_dirs=program_dirs,
        extra_imports=extra_imports,
        interactive=interactive,
    )()


def prepare(
    policy: Policy,
    *,
    program_files: Iterable[str] = (),
    program_dirs: Iterable[str] = (),
    extra_imports: Iterable[str] = (),
    interactive: bool = False,
    learner: Recorder | None = None,
) -> Callable[[], None]:
    """Build the guards (their messages, decision tables) now; the returned function installs
    them. Complete mode builds them before the environment is filtered (messages show rule
    files as ``~/…`` with the host's HOME) and installs them after the OS confinement.

    ``learner``: learning mode. A refusal a rule can lift is recorded there and the access
    allowed; the others (ignore=, the rule files, net=DENY, raw sockets) still refuse."""
    if _Armed.policy is not None:
        raise SandBoxError("the sandbox's guards are already armed in this process")
    library = import_guard.library_prefixes()
    standard = import_guard.standard_prefixes()
    files = file_guard.build(
        policy,
        program_files=program_files,
        metadata_dirs=program_dirs,
        learn=learner.file if learner is not None else None,
    )
    import_check, import_handlers = import_guard.build(policy, extra_imports)
    denied = api_guard.decisions(policy)
    refuse, api_handlers = api_guard.build(
        policy,
        library,
        denied,
        allow_dynamic=interactive,
        check_file=files.check,
        learning=learner is not None,
    )
    table: dict[str, Callable[[tuple[Any, ...]], None]] = {}
    table.update(files.handlers)
    network = net_guard.build(
        policy,
        files.check,
        learn=learner.connection if learner is not None else None,
        learn_lookup=learner.lookup if learner is not None else None,
    )
    table.update(network.handlers)
    if learner is not None:  # imports and sensitive calls: recorded where they are refused
        import_handlers = {event: _learning(h, learner) for event, h in import_handlers.items()}
        api_handlers = {event: _learning(h, learner) for event, h in api_handlers.items()}
        import_check = _learning(import_check, learner)
        refuse = _learning(refuse, learner)
    table.update(import_handlers)
    table.update(api_handlers)
    protect = seal(
        _on_setattr,
        _type=type,
        _function=FunctionType,
        _sealed=SEALED_GLOBALS,
        _Refused=RuleApiPermissionError,
    )
    table["object.__setattr__"] = protect
    table["object.__delattr__"] = protect
    import _thread

    note = seal(
        _note, _lock=_thread.allocate_lock(), _modules_get=sys.modules.get, _name=USER_LOGGER, _type=type
    )
    hook = seal(_hook, _get=frozen_get(table), _note=note, _Base=BaseException)

    def install() -> None:
        if _Armed.policy is not None:
            raise SandBoxError("the sandbox's guards are already armed in this process")
        _install_wrappers(
            denied,
            files,
            import_check,
            refuse,
            network,
            library,
            standard,
            allow_dynamic=interactive,
            learning=learner is not None,
            eval_profile=policy.eval_profiles.get(""),
            learn_eval=learner.dynamic if learner is not None else None,
            learner=learner,
        )
        sys.addaudithook(hook)
        _Armed.policy = policy
        debug("pysandboxes.guards", "guards armed: %d audit events judged", len(table))

    return install


# -- wrappers --------------------------------------------------------------------------------


def _install_wrappers(
    denied: Mapping[str, str],
    files: file_guard.FileGuard,
    check_import: Callable[[tuple[Any, ...]], None],
    refuse: Callable[[str], None],
    network: net_guard.NetworkGuard,
    library: tuple[str, ...],
    standard: tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]],
    *,
    allow_dynamic: bool = False,
    learning: bool = False,
    eval_profile: Any = None,
    learn_eval: Callable[[str, Any, str, Any], None] | None = None,
    learner: Recorder | None = None,
) -> None:
    import os
    import posix

    for name, wrapper in file_guard.metadata_wrappers(files).items():
        original = getattr(posix, name)
        for module in (os, posix):
            if hasattr(module, name):
                setattr(module, name, wrapper)
        # Code asks these sets what a function accepts (``shutil`` picks its symlink-safe
        # ``rmtree`` and ``copystat(follow_symlinks=False)`` by them): the wrapper accepts what
        # the original does.
        for capabilities in (
            os.supports_dir_fd,
            os.supports_fd,
            os.supports_follow_symlinks,
            os.supports_effective_ids,
        ):
            if original in capabilities:
                capabilities.add(wrapper)
    builtins.__import__ = import_guard.import_wrapper(check_import, *standard)
    import importlib._bootstrap

    importlib._bootstrap._find_and_load = import_guard.find_and_load_wrapper(check_import)  # type: ignore[attr-defined]
    import_guard.keep_import_system_exec()

    patches: list[tuple[str, Callable[[Any], None]]] = []
    for module_name, attribute, function in api_guard.WRAPPED:
        if function in denied:
            patches.append((module_name, _refusing_patch(attribute, function, refuse, learning)))
    patches.append(("socket", _socket_patch(network, learner)))
    patches.append(("sqlite3", _sqlite_patch(files)))
    pending: dict[str, list[Callable[[Any], None]]] = {}
    for module_name, patch in patches:
        loaded = sys.modules.get(module_name)
        if loaded is None:
            pending.setdefault(module_name, []).append(patch)
        else:
            patch(loaded)
    if pending:
        sys.meta_path.insert(0, _PatchOnLoad(pending))
    dynamic = [n for n in ("eval", "exec", "compile") if f"builtins.{n}" in denied and not allow_dynamic]
    for name in dynamic:
        setattr(
            builtins,
            name,
            _dynamic_code_wrapper(name, getattr(builtins, name), refuse, library, eval_profile, learn_eval),
        )


def _set(module: Any, attribute: str, value: Any) -> None:
    owner: Any = module
    *path, last = attribute.split(".")
    for part in path:
        owner = getattr(owner, part, None)
        if owner is None:
            return
    if getattr(owner, last, None) is None:
        return
    try:
        setattr(owner, last, value)
    except (AttributeError, TypeError):  # a C type: its own audit event (if any) decides
        debug("pysandboxes.guards", "cannot wrap %s.%s", module.__name__, attribute)


def _refusing_patch(
    attribute: str, function: str, refuse: Callable[[str], None], learning: bool = False
) -> Callable[[Any], None]:
    category = CATEGORY_OF.get(function, "")

    def patch(module: Any) -> None:
        original = _get(module, attribute) if learning else None

        def refused(*args: Any, **kwargs: Any) -> Any:
            refuse(function)  # raises: only denied functions are replaced
            if original is not None:  # learning mode: recorded, and the call goes on
                return original(*args, **kwargs)
            raise RuleApiPermissionError(api_guard.refusal_message(function, category), function, category)

        refused.__name__ = attribute.rpartition(".")[2]
        refused.__qualname__ = attribute
        _set(module, attribute, refused)

    return patch


def _get(module: Any, attribute: str) -> Any:
    owner: Any = module
    for part in attribute.split("."):
        owner = getattr(owner, part, None)
        if owner is None:
            return None
    return owner


def _socket_patch(network: net_guard.NetworkGuard, learner: Recorder | None = None) -> Callable[[Any], None]:
    """``socket.socket``'s methods that take an address, in front of the C ones.

    ``listen()`` on a socket never bound raises no audit event (and Landlock has no listen
    right): the kernel binds it to a random port of every interface; it is judged as that
    bind. ``connect``, ``connect_ex``, ``bind``, ``sendto`` and ``sendmsg`` resolve a host name
    in C *before* the event: the address is judged first (a name no rule pins never reaches
    the resolver) and C gets the exact values judged (``network.before_resolution``).

    Learning mode (``learner``): a TCP bind to port 0 is a probe until the socket listens or
    connects (``Recorder.binding``, ``Recorder.used``)."""
    judge_listen, before = network.judge_listen, network.before_resolution

    def patch(module: Any) -> None:
        cls = module.socket
        init_original = cls.__init__
        listen_original = cls.listen
        connect_original, connect_ex_original = cls.connect, cls.connect_ex
        bind_original, sendto_original, sendmsg_original = cls.bind, cls.sendto, cls.sendmsg

        def listen(self: Any, *args: Any) -> Any:
            judge_listen(self)
            return listen_original(self, *args)

        def connect(self: Any, address: Any) -> Any:
            return connect_original(self, before(self, address))

        def connect_ex(self: Any, address: Any) -> Any:
            return connect_ex_original(self, before(self, address))

        def bind(self: Any, address: Any) -> Any:
            return bind_original(self, before(self, address))

        def sendto(self: Any, data: Any, *args: Any) -> Any:
            if args:  # sendto(data, address) or sendto(data, flags, address)
                args = (*args[:-1], before(self, args[-1]))
            return sendto_original(self, data, *args)

        def sendmsg(self: Any, buffers: Any, *args: Any) -> Any:
            if len(args) >= 3:  # sendmsg(buffers, ancdata, flags, address)
                args = (*args[:2], before(self, args[2]), *args[3:])
            return sendmsg_original(self, buffers, *args)

        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            try:
                init_original(self, *args, **kwargs)
            except PermissionError as exc:
                raise _unix_socket_refusal(exc, module, args, kwargs) from None

        __init__.__doc__ = init_original.__doc__
        __init__.__qualname__ = "socket.__init__"
        cls.__init__ = __init__
        if learner is not None:
            listen, connect, connect_ex, bind = _learning_socket(learner, listen, connect, connect_ex, bind)
        for name, wrapper, original in (
            ("listen", listen, listen_original),
            ("connect", connect, connect_original),
            ("connect_ex", connect_ex, connect_ex_original),
            ("bind", bind, bind_original),
            ("sendto", sendto, sendto_original),
            ("sendmsg", sendmsg, sendmsg_original),
        ):
            wrapper.__doc__ = original.__doc__
            wrapper.__qualname__ = f"socket.{name}"
            setattr(cls, name, wrapper)

    return patch


def _unix_socket_refusal(
    exc: PermissionError, socket: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> OSError:
    """The kernel's ``EACCES`` for a new ``AF_UNIX`` socket, when the provider's seccomp filter
    refuses them (see providers/seccomp.py), as the refusal it is, naming the rule; any other
    ``PermissionError`` unchanged. It decides nothing: the kernel has refused already."""
    provider = State.unix_sockets_refused_by
    family = args[0] if args else kwargs.get("family", -1)
    fileno = args[3] if len(args) > 3 else kwargs.get("fileno")
    if provider is None or fileno is not None or type(family) not in (int, socket.AddressFamily):
        return exc
    if int(family) != socket.AF_UNIX:
        return exc
    return RulePermissionError(
        f"Creating an AF_UNIX socket DENIED: os-sandbox={provider} refuses UNIX sockets (the kernel "
        "layer cannot tell which named socket one reaches).\n"
        f"Add `{provider}.unix-sockets=true` to the rule file, and `expose-rw=` for the socket's path."
    )


def _learning_socket(learner: Recorder, *methods: Callable[..., Any]) -> tuple[Callable[..., Any], ...]:
    """``listen``, ``connect``, ``connect_ex``, ``bind`` that tell the recorder which socket
    binds, and which one is then used."""
    listen_judged, connect_judged, connect_ex_judged, bind_judged = methods

    def listen(self: Any, *args: Any) -> Any:
        learner.used(self)
        return listen_judged(self, *args)

    def connect(self: Any, address: Any) -> Any:
        learner.used(self)
        return connect_judged(self, address)

    def connect_ex(self: Any, address: Any) -> Any:
        learner.used(self)
        return connect_ex_judged(self, address)

    def bind(self: Any, address: Any) -> Any:
        learner.binding(self)
        try:
            return bind_judged(self, address)
        finally:
            learner.binding(None)

    return listen, connect, connect_ex, bind


def _sqlite_patch(files: file_guard.FileGuard) -> Callable[[Any], None]:
    """SQL opens files itself (``ATTACH``, ``VACUUM INTO``) without an audit event: every
    connection made through ``sqlite3.connect`` gets an authorizer that judges them. The
    database name is converted once here (``pathlib.Path`` included): the event, raised before
    sqlite3 converts it, then holds the exact value C opens."""
    authorizer, exact = files.sqlite_authorizer, files.exact

    def patch(module: Any) -> None:
        original = module.connect

        def connect(*args: Any, **kwargs: Any) -> Any:
            factory = kwargs.get("factory", args[5] if len(args) > 5 else None)
            if factory is None or factory is module.Connection:
                if args:
                    args = (exact(args[0]), *args[1:])
                elif "database" in kwargs:
                    kwargs["database"] = exact(kwargs["database"])
            # else a factory of the program's gets the database as given (as under python);
            # what it opens raises the event, which refuses a value that is not exact
            connection = original(*args, **kwargs)
            try:
                connection.set_authorizer(authorizer)
            except module.ProgrammingError:
                # A factory whose __init__ skipped Connection.__init__: no database is open
                # and the object refuses every use; connect() returns it as it would.
                return connection
            return connection

        connect.__doc__ = original.__doc__
        module.connect = connect
        if hasattr(module, "dbapi2"):
            module.dbapi2.connect = connect

    return patch


class _PatchOnLoad:
    """A meta-path finder that applies the wrappers of modules loaded after arming."""

    def __init__(self, pending: dict[str, list[Callable[[Any], None]]]) -> None:
        self._pending = pending

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        todo = self._pending.get(name)
        if todo is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader: Any = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        patches = todo

        class _Loader:
            def create_module(self, spec: Any) -> Any:
                return loader.create_module(spec)

            def exec_module(self, module: Any) -> None:
                loader.exec_module(module)
                for patch in patches:
                    patch(module)

        spec.loader = _Loader()  # type: ignore[assignment]
        return spec


def _dynamic_code_wrapper(
    name: str,
    original: Callable[..., Any],
    refuse: Callable[[str], None],
    library: tuple[str, ...],
    profile: Any = None,
    learn: Callable[[str, Any, str, Any], None] | None = None,
) -> Callable[..., Any]:
    """``eval``/``exec``/``compile`` that name themselves when refused; library code passes.

    With a default ``eval-*`` profile (``eval-KEY=`` lines) the program's calls run through the
    eval guard (``pysandboxes.evaluation``, imported on the first such call) instead. Learning
    mode (``learn``): the ``eval-*`` lines the source needs are recorded, and it runs raw."""
    getframe = sys._getframe
    function = f"builtins.{name}"
    guard: list[Any] = []  # (engine module, default profile), once a program's call needs them

    def from_library(frame: Any) -> bool:
        filename = frame.f_code.co_filename
        # exact type: a str subclass (compile() keeps one as co_filename) answers startswith itself
        return type(filename) is str and (filename.startswith(library) or filename.startswith("<frozen "))

    def eval_guard() -> tuple[Any, Any] | None:
        """The engine and the default profile; None: no profile, and ``refuse`` let the call
        through (learning mode records it): the original runs."""
        if not guard:
            if profile is None:
                refuse(function)  # raises, unless learning mode records the call
                return None
            from ..evaluation import engine

            guard.append((engine, profile))
        return guard[0]  # type: ignore[no-any-return]

    if name == "compile":

        def compile(*args: Any, **kwargs: Any) -> Any:
            if learn is not None and not from_library(getframe(1)):
                source = args[0] if args else kwargs.get("source")
                mode = args[2] if len(args) > 2 else kwargs.get("mode", "exec")
                result = original(*args, **kwargs)
                learn(name, source, mode if isinstance(mode, str) else "exec", result)
                return result
            if not from_library(getframe(1)):
                found = eval_guard()
                if found is not None:
                    return found[0].guarded_compile(found[1], *args, **kwargs)
            return original(*args, **kwargs)

        wrapper = compile
    else:

        def run(source: Any, globals: Any = None, locals: Any = None, /, **kwargs: Any) -> Any:
            caller = getframe(1)
            if learn is not None and not from_library(caller):
                learn(name, source, "eval" if name == "eval" else "exec", None)
            elif not from_library(caller):
                found = eval_guard()
                if found is not None:
                    return found[0].guarded_run(name, found[1], source, globals, locals, caller, **kwargs)
            if globals is None:
                globals = caller.f_globals
                if locals is None:
                    locals = caller.f_locals
            return original(source, globals, locals, **kwargs)

        wrapper = run
    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__doc__ = original.__doc__
    return wrapper
