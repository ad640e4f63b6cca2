"""The exception family.

Every refusal is a :class:`SandBoxError` *and* the builtin exception the same failure would
raise without a sandbox, so ``except SandBoxError`` catches every refusal while existing
``except ValueError`` / ``except OSError`` code keeps working.
"""

from __future__ import annotations

from ._record import Record

TYPE_CHECKING = False  # importing typing costs milliseconds at start-up
if TYPE_CHECKING:
    from .remote.codec import RestrictedUnpicklingError
    from .rules.origin import Origin


__all__ = [
    "ConfigSyntaxError",
    "ProviderError",
    "RestrictedUnpicklingError",
    "RuleApiPermissionError",
    "RuleFileNotFoundError",
    "RuleModuleNotFoundError",
    "RulePermissionError",
    "RuleProblem",
    "RuleSocketConnectionRefusedError",
    "RuleSyntaxError",
    "SandBoxBaseExceptionError",
    "SandBoxCPUTimeError",
    "SandBoxError",
    "SandBoxMemoryError",
    "SandBoxProtocolError",
    "SandBoxRemoteError",
    "SandBoxResourceError",
    "SandBoxTimeoutError",
    "denial_text",
    "resource_error",
    "sandbox_denials",
]


class SandBoxError(RuntimeError):
    """Root of every error raised by PySandboxes."""


class RuleProblem(Record):
    """One problem found while loading rules: where, and what is wrong."""

    __slots__ = ("message", "origin")
    origin: Origin
    message: str

    def sort_key(self) -> tuple[int, str, int, str]:
        return (*self.origin.sort_key(), self.message)

    def __str__(self) -> str:
        return f"{self.origin}: {self.message}"


class RuleSyntaxError(SandBoxError, ValueError):
    """The rule files (or the rules given on the command line or in code) are invalid.

    All the problems of one load are collected and reported together, one line each,
    sorted by file and line. Nothing runs when this is raised.
    """

    def __init__(self, problems: list[RuleProblem] | tuple[RuleProblem, ...]) -> None:
        ordered = tuple(sorted(problems, key=RuleProblem.sort_key))
        self.problems: tuple[RuleProblem, ...] = ordered
        self.errors: list[str] = [str(p) for p in ordered]
        self.message = "\n".join(self.errors)
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


class ProviderError(SandBoxError):
    """A provider cannot start; the message says why and what to do."""


#: The reference implementation's name for the same error.
ConfigSyntaxError = RuleSyntaxError


# -- partial mode: the channel between the host and the sandboxed child -----------------------
# ``RestrictedUnpicklingError`` (a ``pickle.UnpicklingError``) lives in ``remote/codec.py`` so
# that importing this module never imports ``pickle``; ``__getattr__`` below re-exports it.


class SandBoxProtocolError(SandBoxError):
    """The channel to the sandboxed child broke (the child died: killed, crashed, exited), or
    the child sent something malformed. A failure of the machinery, never a refusal:
    ``sandbox_denials()`` of it is empty."""


class SandBoxResourceError(SandBoxError):
    """A resource limit (``limit-*=``, ``timeout=``) stopped a sandboxed call; ``limit``
    names the key. ``except SandBoxResourceError`` catches every limit stop."""

    def __init__(self, message: str, limit: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.limit = limit

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.message, self.limit))


class SandBoxMemoryError(SandBoxResourceError, MemoryError):
    """``limit-memory`` was exceeded (also a :class:`MemoryError`)."""


class SandBoxCPUTimeError(SandBoxResourceError, TimeoutError):
    """``limit-cpu`` was exceeded (also a :class:`TimeoutError`)."""


class SandBoxTimeoutError(SandBoxResourceError, TimeoutError):
    """A sandboxed call exceeded ``timeout=`` (also a :class:`TimeoutError`); the message
    says which call and the limit. The call is cancelled in the child; a call that ignores
    the cancellation costs the child its life, as any other limit does."""

    def __init__(self, message: str, limit: str = "timeout") -> None:
        super().__init__(message, limit)


def resource_error(limit: str, message: str) -> SandBoxResourceError:
    """The :class:`SandBoxResourceError` for ``limit``, with its builtin twin where one exists."""
    kind = {
        "limit-memory": SandBoxMemoryError,
        "limit-cpu": SandBoxCPUTimeError,
        "timeout": SandBoxTimeoutError,
    }.get(limit, SandBoxResourceError)
    return kind(message, limit)


class SandBoxRemoteError(SandBoxError):
    """An exception raised in the sandboxed child whose class is not rebuilt in the host.

    ``exception_type`` is the child's ``module.QualName``, ``message`` its ``str()``,
    ``denials`` the sandbox refusals the child reported behind it (``sandbox_denials``).
    """

    def __init__(self, exception_type: str, message: str = "", denials: list[str] | None = None) -> None:
        self.exception_type = exception_type
        self.message = message
        self.denials: list[str] = list(denials) if denials else []
        super().__init__(f"{exception_type}: {message}" if message else exception_type)

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.exception_type, self.message, self.denials))


class SandBoxBaseExceptionError(SandBoxError):
    """The sandboxed function raised a ``BaseException`` that is not an ``Exception``.

    ``SystemExit``, ``KeyboardInterrupt``, ``GeneratorExit``... raised by the function end
    neither the child nor the caller: they arrive as this error. ``code`` is the
    ``SystemExit`` code (``None`` for the others).
    """

    def __init__(self, exception_type: str, code: int | str | None = None, message: str = "") -> None:
        self.exception_type = exception_type
        self.code = code
        self.message = message
        text = f"the sandboxed function raised {exception_type}"
        super().__init__(f"{text}: {message}" if message else text)

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.exception_type, self.code, self.message))


# -- refusals -------------------------------------------------------------------------------
# Each refusal is also the builtin error the same failure raises without a sandbox, so code
# written for `python` (``except FileNotFoundError``, ``except ImportError``) keeps working.


class _RuleOSError(OSError):
    """An OSError whose text stays the rule's message even when a caller sets ``filename``."""

    def __init__(self, errno: int, message: str, filename: str | None = None) -> None:
        super().__init__(errno, message)
        self.message = message
        if filename is not None:
            self.filename = filename

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.errno, self.message, self.filename))


class RuleFileNotFoundError(_RuleOSError, FileNotFoundError, SandBoxError):
    """A path no ``expose-ro=``/``expose-rw=`` rule covers, or one an ``ignore=`` rule hides."""

    def __init__(self, message: str, filename: str | None = None) -> None:
        super().__init__(2, message, filename)  # ENOENT

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.message, self.filename))


class RulePermissionError(_RuleOSError, PermissionError, SandBoxError):
    """A write to a read-only exposure or to the active rule files."""

    def __init__(self, message: str, filename: str | None = None) -> None:
        super().__init__(13, message, filename)  # EACCES

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.message, self.filename))


class RuleSocketConnectionRefusedError(_RuleOSError, ConnectionRefusedError, SandBoxError):
    """A connection, listening socket or name lookup no ``net=`` rule allows."""

    def __init__(self, message: str) -> None:
        super().__init__(111, message)  # ECONNREFUSED

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.message,))


class RuleApiPermissionError(_RuleOSError, PermissionError, SandBoxError):
    """A sensitive function (``python-api=`` registry) that no rule allows."""

    def __init__(self, message: str, qualname: str = "", category: str = "") -> None:
        super().__init__(13, message)
        self.qualname = qualname
        self.category = category

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.message, self.qualname, self.category))


class RuleModuleNotFoundError(ModuleNotFoundError, SandBoxError):
    """An import no ``python-import=`` rule allows."""

    def __init__(self, message: str, name: str | None = None) -> None:
        super().__init__(message, name=name)
        self.message = message

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.message, self.name))


# Sandbox errors that report a failure of the machinery, not a refusal by a rule.
_NOT_DENIALS = (
    RuleSyntaxError,
    SandBoxProtocolError,
    SandBoxResourceError,
    SandBoxRemoteError,
    SandBoxBaseExceptionError,
)


def _own_denials(e: BaseException) -> list[str]:
    """The refusals ``e`` itself stands for (not its causes).

    An exception rebuilt from the sandboxed child carries the child's list in
    ``__sandbox_denials__``; otherwise a refusal stands for itself.
    """
    attrs = getattr(e, "__dict__", None)
    attached = attrs.get("__sandbox_denials__") if isinstance(attrs, dict) else None
    if isinstance(attached, list):
        return [entry for entry in attached if isinstance(entry, str)]
    if isinstance(e, SandBoxRemoteError):
        return list(e.denials)
    if isinstance(e, SandBoxError) and not isinstance(e, _NOT_DENIALS):
        return [f"{type(e).__name__}: {e}"]
    return []


def sandbox_denials(exc: BaseException | None) -> list[str]:
    """The sandbox refusals behind ``exc``: ``"ExcName: message"``, innermost first.

    Follows ``__cause__`` and ``__context__`` and the members of exception groups, and the
    refusals reported by the sandboxed child for exceptions rebuilt from partial mode (their
    ``__sandbox_denials__``). An empty list means the failure was not a sandbox refusal.
    """
    found: list[str] = []
    seen: set[int] = set()

    def visit(e: BaseException | None) -> None:
        if e is None or id(e) in seen:
            return
        seen.add(id(e))
        visit(e.__cause__)
        visit(e.__context__)
        if isinstance(e, BaseExceptionGroup):
            for member in e.exceptions:
                visit(member)
        found.extend(_own_denials(e))

    visit(exc)
    return found


def denial_text(exc: BaseException, *, log: bool = True) -> str:
    """What a model may be told about ``exc``: the first line of each refusal behind it.

    A refusal's message ends with a hint for the developer (``Add `expose-ro=~/.ssh` to the
    rule file``); an agent misled by a prompt injection that reads it learns how to widen its
    own box. Only the first line of each denial is kept (``RuleFileNotFoundError: Access to
    '/root/.ssh/id_rsa' must be accepted by a rule.``), one per line, innermost first. An
    exception that is no refusal gives its type and the first line of its message. With
    ``log`` (the default) the full messages, hints included, go to the ``Pysandboxes`` logger
    as a WARNING, for the developer.
    """
    denials = sandbox_denials(exc)
    if not denials:
        text = str(exc)
        denials = [f"{type(exc).__name__}: {text}" if text else type(exc).__name__]
    if log:
        import logging

        logging.getLogger("Pysandboxes").warning("refused: %s", "\n".join(denials))
    return "\n".join(d.partition("\n")[0].rstrip() for d in denials)


def __getattr__(name: str) -> object:
    # PEP 562: ``RestrictedUnpicklingError`` subclasses ``pickle.UnpicklingError``; importing
    # it only when asked keeps ``pickle`` out of every program that never uses partial mode.
    if name == "RestrictedUnpicklingError":
        from .remote.codec import RestrictedUnpicklingError

        globals()[name] = RestrictedUnpicklingError
        return RestrictedUnpicklingError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- the eval-* layer: code given to eval/exec/compile as a string ---------------------------


class EvalSyntaxRejected(SandBoxError, SyntaxError):
    """Evaluated source uses a construct, name or attribute no ``eval-*`` rule allows."""

    def __init__(
        self,
        message: str,
        details: tuple[str, int | None, int | None, str | None] | None = None,
        rules: tuple[str, ...] = (),
        profile: str = "",
    ) -> None:
        if details is None:
            SyntaxError.__init__(self, message)
        else:
            SyntaxError.__init__(self, message, details)
        self.message = message
        self.rules = rules
        self.profile = profile

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[object, ...]:
        details = (self.filename, self.lineno, self.offset, self.text) if self.filename else None
        return (type(self), (self.message, details, self.rules, self.profile))


class EvalInterrupted(BaseException):
    """An ``eval-*`` budget or the timeout stopped evaluated code; ``budget`` says which."""

    def __init__(self, message: str, budget: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.budget = budget

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.message, self.budget))
