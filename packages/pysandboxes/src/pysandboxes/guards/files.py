"""The file guard: ``expose-ro=``, ``expose-rw=``, ``ignore=`` and the protected rule files.

Every way of opening or changing a path raises an audit event in CPython's C code (``open``
covers ``open``, ``io.open``, ``_io.open``, ``FileIO``, ``os.open`` and ``open_code``), so a
fresh ``_io`` or ``posix`` module changes nothing. Metadata calls (``os.stat``, ``lstat``,
``access``) raise no event: they are wrapped (and so are ``sqlite3.connect``'s connections,
which get an authorizer judging ``ATTACH`` and ``VACUUM INTO``), which stops ordinary code (``os.path.exists``,
``pathlib``) but not code that digs out the original function — Landlock does not restrict
``stat`` either, so a file's existence and size stay visible to hostile code.
"""

from __future__ import annotations

import os
import posix

from .._record import Record
from ..errors import RuleFileNotFoundError, RulePermissionError
from ..rules.policy import Policy
from ._seal import c_cache, frozen_get, seal
from .paths import make_resolver

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

_WRITE_FLAGS = posix.O_WRONLY | posix.O_RDWR | posix.O_CREAT | posix.O_TRUNC | posix.O_APPEND


class FileGuard(Record):
    """The sealed functions of the file guard (built once per run by :func:`build`)."""

    __slots__ = ("check", "handlers", "resolve", "sqlite_authorizer")
    #: check(path, write, follow=True, dir_fd=None, op="open") -> None, raises the refusal
    check: Callable[..., None]
    resolve: Callable[..., tuple[str, bool]]
    #: audit event -> sealed handler(args)
    handlers: dict[str, Callable[[tuple[Any, ...]], None]]
    #: judges the files SQL opens itself (ATTACH, VACUUM INTO): no audit event covers them
    sqlite_authorizer: Callable[..., int]


# -- sealed templates: no globals, state bound as defaults (see _seal.py) ------------------


def _find_exposure(path, _get=None):  # type: ignore[no-untyped-def]
    """The exposure covering ``path``: the longest exposed prefix, or None."""
    probe = path
    while True:
        hit = _get(probe)
        if hit is not None:
            return hit
        if probe == "/":
            return None
        probe = probe.rpartition("/")[0] or "/"


def _decide(  # type: ignore[no-untyped-def]
    path,
    write,
    follow=True,
    metadata=False,
    _resolve=None,
    _metadata_ok=None,
    _find=None,
    _exposure_of=None,
    _ignores=None,
    _protected=None,
    _protected_dirs=None,
    _NotFound=None,
    _Denied=None,
    _len=None,
):
    """``(volatile, refusal class or None, message)`` for an absolute path (see ``paths.py``)."""
    real, volatile = _resolve(path, follow)
    if metadata and real in _metadata_ok:
        return (volatile, None, "")
    exposure = _exposure_of(real)
    if exposure is None:
        exposure = _find(real.rpartition("/")[0] or "/") if real != "/" else None
        if exposure is None:
            where = real.rpartition("/")[0] or "/"
            key = "expose-rw" if write else "expose-ro"
            return (
                volatile,
                _NotFound,
                f"Access to '{real}' must be accepted by a rule.\nAdd `{key}={where}` to the rule file to allow it.",
            )
    root, writable, described = exposure
    if _ignores:
        below = real[_len(root) :].strip("/")
        for absolute, match, rule in _ignores:
            if absolute:
                probe = real
                while True:
                    if match(probe) is not None:
                        return (volatile, _NotFound, f"Access to '{real}' is ignored by rule {rule}")
                    if probe == "/":
                        break
                    probe = probe.rpartition("/")[0] or "/"
            elif below:
                for part in below.split("/"):
                    if match(part) is not None:
                        return (volatile, _NotFound, f"Access to '{real}' is ignored by rule {rule}")
    if write:
        if real in _protected:
            return (
                volatile,
                _Denied,
                f"Cannot write to '{real}': it is part of the active sandbox configuration.",
            )
        for d in _protected_dirs:
            if d.startswith(real + "/"):
                return (
                    volatile,
                    _Denied,
                    f"Cannot change '{real}': it holds '{d}', part of the active sandbox configuration.",
                )
        if not writable:
            return (
                volatile,
                _Denied,
                f"Cannot write to '{real}': rule {described} exposes it read-only.\n"
                "Add `expose-rw=<directory>` for a directory that may be written.",
            )
    return (volatile, None, "")


def _check(  # type: ignore[no-untyped-def]
    path,
    write,
    follow=True,
    dir_fd=None,
    metadata=False,
    _decide=None,
    _remembered=None,
    _getcwd=None,
    _readlink=None,
    _decode=None,
    _str=None,
    _bytes=None,
    _int=None,
    _type=None,
    _NotFound=None,
    _OSError=None,
    _fspath=None,
    _learn=None,
):
    """Allow silently, or raise the refusal that names the rule to add or the rule that refused.
    Learning mode (``_learn``): a refusal a rule can lift is recorded and the access allowed."""
    kind = _type(path)
    if kind is not _str:
        if kind is _bytes or _bytes in kind.__mro__:
            path = _decode(path, "utf-8", "surrogateescape")
        elif kind is _int or _int in kind.__mro__:
            return  # an open descriptor: already judged when it was opened
        elif _str in kind.__mro__:
            path = _str.__str__(path)
        else:
            path = _fspath(path)  # pathlib.Path & co. (the wrappers get them unconverted)
            if _type(path) is _bytes:
                path = _decode(path, "utf-8", "surrogateescape")
            elif _type(path) is not _str:
                path = _str.__str__(path)
    if "\x00" in path:
        return  # the call itself will fail with ValueError
    if not path.startswith("/"):
        if dir_fd is not None and dir_fd != -1:
            try:
                base = _readlink("/proc/self/fd/" + _str(dir_fd))
            except _OSError:
                raise _NotFound(
                    f"Cannot tell which directory descriptor {dir_fd} is, to check '{path}': "
                    "/proc/self/fd is not readable.",
                    path,
                ) from None
        else:
            base = _getcwd()
        path = base + "/" + path
    volatile, refusal, message = _remembered(path, write, follow, metadata)
    if volatile:
        volatile, refusal, message = _decide(path, write, follow, metadata)
    if refusal is not None:
        if _learn is not None and _learn(path, write, message):
            return
        raise refusal(message, path)


def _on_open(args, _check=None, _write_flags=None):  # type: ignore[no-untyped-def]
    path, _mode, flags = args
    _check(path, flags & _write_flags != 0)


def _on_read(args, _check=None):  # type: ignore[no-untyped-def]
    path = args[0]
    if path is None:
        path = "."
    _check(path, False)


def _on_change(args, _check=None, _follow=True, _fd_index=-1):  # type: ignore[no-untyped-def]
    dir_fd = args[_fd_index] if _fd_index >= 0 else None
    _check(args[0], True, _follow, dir_fd)


def _on_two(args, _check=None):  # type: ignore[no-untyped-def]
    """rename / replace / link: (src, dst, src_dir_fd, dst_dir_fd)."""
    _check(args[0], True, False, args[2])
    _check(args[1], True, False, args[3])


def _on_symlink(args, _check=None):  # type: ignore[no-untyped-def]
    """symlink(target, link, dir_fd): only the link is created; the target is judged on use."""
    _check(args[1], True, False, args[2])


def _sqlite_path(database, _str=None, _type=None, _int=None, _chr=None, _ValueError=None):  # type: ignore[no-untyped-def]
    """The file an SQLite database name opens, or None for an in-memory database.

    ``file:`` URIs are decoded as SQLite decodes them (``%2F`` is ``/``), and judged on the
    decoded path: ``file:%2Fetc%2Fpasswd`` is ``/etc/passwd``.
    """
    if _type(database) is not _str:
        return database
    if database == ":memory:" or database == "":
        return None
    if database.startswith("file:"):
        database = database[5:].partition("?")[0].partition("#")[0]
        if database.startswith("//"):
            database = "/" + database[2:].partition("/")[2]
        pieces = database.split("%")
        decoded = pieces[0]
        for piece in pieces[1:]:
            try:
                decoded += _chr(_int(piece[:2], 16)) + piece[2:]
            except _ValueError:
                decoded += "%" + piece
        database = decoded
        if database == ":memory:" or database == "":
            return None
    return database


def _on_sqlite(args, _check=None, _path=None):  # type: ignore[no-untyped-def]
    database = _path(args[0])
    if database is not None:
        _check(database, True)


def _sqlite_authorize(  # type: ignore[no-untyped-def]
    action,
    first,
    second,
    database,
    source,
    _check=None,
    _path=None,
    _Base=None,
    _type=None,
    _str=None,
    _ATTACH=24,
    _OK=0,
    _DENY=1,
):
    """``ATTACH`` and ``VACUUM INTO`` open files from SQL, with no audit event: judged here."""
    if action != _ATTACH:
        return _OK
    if _type(first) is not _str:
        return _DENY  # the file name is computed (a bound parameter, an expression): unknown
    target = _path(first)
    if target is None:
        return _OK
    try:
        _check(target, True)
    except _Base:  # any refusal (or error) denies the statement
        return _DENY
    return _OK


# -- building ------------------------------------------------------------------------------


def build(
    policy: Policy,
    *,
    program_files: Iterable[str] = (),
    metadata_dirs: Iterable[str] = (),
    learn: Callable[[str, bool, str], bool] | None = None,
) -> FileGuard:
    """``metadata_dirs``: directories whose own metadata (``stat``) is readable without a rule
    (the program's directory: the import system stats it to keep its directory cache).
    ``learn(path, write, message) -> bool``: learning mode's recorder (True: allow)."""
    fp = policy.files_policy
    exposures: dict[str, tuple[str, bool, str]] = {}
    for e in fp.exposures:
        exposures[e.path] = (e.path, e.writable, e.describe())
    for f in program_files:
        real = os.path.realpath(f)
        # Readable, and no less than the rules already make it: an exposure of its own would
        # win over a covering expose-rw= (the longest prefix decides) and make it read-only.
        if _find_exposure(real, exposures.get) is None:  # type: ignore[no-untyped-call]
            exposures[real] = (real, False, f"'{real}' (the program being run)")
    table = frozen_get(exposures)
    writable_roots = tuple(sorted(p for p, (_r, w, _d) in exposures.items() if w))
    resolve = make_resolver(writable_roots)
    find = c_cache(seal(_find_exposure, _get=table))
    ignores = tuple((i.absolute, i.regex.match, i.rule.describe()) for i in fp.ignores)
    protected = frozenset(fp.protected)
    decide = seal(
        _decide,
        _resolve=resolve,
        _metadata_ok=frozenset(os.path.realpath(d) for d in metadata_dirs),
        _find=find,
        _exposure_of=table,
        _ignores=ignores,
        _protected=protected,
        _protected_dirs=tuple(sorted(protected)),
        _NotFound=RuleFileNotFoundError,
        _Denied=RulePermissionError,
        _len=len,
    )
    check = seal(
        _check,
        _decide=decide,
        _remembered=c_cache(decide, 8192),
        _getcwd=posix.getcwd,
        _readlink=posix.readlink,
        _decode=bytes.decode,
        _str=str,
        _bytes=bytes,
        _int=int,
        _type=type,
        _NotFound=RuleFileNotFoundError,
        _OSError=OSError,
        _fspath=posix.fspath,
        _learn=learn,
    )
    on_read = seal(_on_read, _check=check)
    sqlite_path = seal(_sqlite_path, _str=str, _type=type, _int=int, _chr=chr, _ValueError=ValueError)
    handlers: dict[str, Callable[[tuple[Any, ...]], None]] = {
        "open": seal(_on_open, _check=check, _write_flags=_WRITE_FLAGS),
        "os.listdir": on_read,
        "os.scandir": on_read,
        "os.chdir": on_read,
        "os.walk": on_read,
        "os.fwalk": on_read,
        "os.getxattr": on_read,
        "os.listxattr": on_read,
        "os.mkdir": seal(_on_change, _check=check, _follow=False, _fd_index=2),
        "os.rmdir": seal(_on_change, _check=check, _follow=False, _fd_index=1),
        "os.remove": seal(_on_change, _check=check, _follow=False, _fd_index=1),
        "os.chmod": seal(_on_change, _check=check, _follow=True, _fd_index=2),
        "os.chown": seal(_on_change, _check=check, _follow=True, _fd_index=3),
        "os.utime": seal(_on_change, _check=check, _follow=True, _fd_index=3),
        "os.truncate": seal(_on_change, _check=check, _follow=True, _fd_index=-1),
        "os.setxattr": seal(_on_change, _check=check, _follow=True, _fd_index=-1),
        "os.removexattr": seal(_on_change, _check=check, _follow=True, _fd_index=-1),
        "os.rename": seal(_on_two, _check=check),
        "os.link": seal(_on_two, _check=check),
        "os.symlink": seal(_on_symlink, _check=check),
        "sqlite3.connect": seal(_on_sqlite, _check=check, _path=sqlite_path),
    }
    authorizer = seal(
        _sqlite_authorize,
        _check=check,
        _path=sqlite_path,
        _Base=BaseException,
        _type=type,
        _str=str,
        _ATTACH=24,  # SQLITE_ATTACH, also reported for VACUUM INTO
        _OK=0,
        _DENY=1,
    )
    return FileGuard(check, resolve, handlers, authorizer)


# -- wrappers for the calls that raise no audit event ----------------------------------------


def metadata_wrappers(check: Callable[..., None]) -> dict[str, Callable[..., Any]]:
    """Replacements for ``os.stat`` & co.: ``name -> wrapper`` (applied to ``os`` and ``posix``)."""
    made: dict[str, Callable[..., Any]] = {}

    def wrap(name: str, write: bool = False, *, follow_kw: bool = True) -> None:
        """``follow_kw=False``: a call without ``follow_symlinks``, which acts on a final
        symlink itself (``readlink``, ``lchown``, ``mkfifo``, ``mknod``): the link is judged,
        not where it points (a loop is then the caller's to find, as ``realpath`` does)."""
        original = getattr(posix, name, None)
        if original is None:
            return

        def wrapper(path: Any, *args: Any, **kwargs: Any) -> Any:
            follow = kwargs.get("follow_symlinks", True) if follow_kw else False
            check(path, write, follow, kwargs.get("dir_fd"), True)
            return original(path, *args, **kwargs)

        _like(wrapper, original)
        made[name] = wrapper

    wrap("stat")
    wrap("access")
    wrap("statvfs")
    wrap("pathconf")
    wrap("readlink", follow_kw=False)
    wrap("mkfifo", True, follow_kw=False)
    wrap("mknod", True, follow_kw=False)
    wrap("chflags", True)
    wrap("lchown", True, follow_kw=False)

    open_original = posix.open
    readlink = posix.readlink

    def open(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        # The 'open' audit event does not carry dir_fd: a relative path would be judged
        # against the working directory. Open the absolute path instead.
        if dir_fd is not None:
            text = os.fsdecode(path) if isinstance(path, bytes) else path
            if isinstance(text, str) and not text.startswith("/"):
                path = readlink(f"/proc/self/fd/{int(dir_fd)}") + "/" + text
                dir_fd = None
        if dir_fd is None:
            return open_original(path, flags, mode)
        return open_original(path, flags, mode, dir_fd=dir_fd)

    _like(open, open_original)
    made["open"] = open

    lstat_original = posix.lstat

    def lstat(path: Any, *args: Any, **kwargs: Any) -> Any:
        check(path, False, False, kwargs.get("dir_fd"), True)
        return lstat_original(path, *args, **kwargs)

    _like(lstat, lstat_original)
    made["lstat"] = lstat
    return made


def _like(wrapper: Callable[..., Any], original: Callable[..., Any]) -> None:
    """Name and document the wrapper as the original (no ``__wrapped__``: not a way back)."""
    wrapper.__name__ = original.__name__
    wrapper.__qualname__ = original.__qualname__
    wrapper.__doc__ = original.__doc__
    wrapper.__module__ = original.__module__
    # inspect.signature() reads a function's __text_signature__ first: the wrapper shows the
    # original's parameters, not (path, *args, **kwargs). Without the module's "$module, ".
    text = getattr(original, "__text_signature__", None)
    if text:
        text = text.replace("$module, ", "", 1).replace("(/, ", "(", 1).replace("(/)", "()", 1)
        wrapper.__text_signature__ = text  # type: ignore[attr-defined]
