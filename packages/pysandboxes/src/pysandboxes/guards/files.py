"""The file guard: ``expose-ro=``, ``expose-rw=``, ``ignore=`` and the protected rule files.

Every way of opening or changing a path raises an audit event in CPython's C code (``open``
covers ``open``, ``io.open``, ``_io.open``, ``FileIO``, ``os.open`` and ``open_code``), so a
fresh ``_io`` or ``posix`` module changes nothing. Metadata calls (``os.stat``, ``lstat``,
``access``) raise no event: they are wrapped (and so are ``sqlite3.connect``'s connections,
which get an authorizer judging ``ATTACH`` and ``VACUUM INTO``), which stops ordinary code (``os.path.exists``,
``pathlib``) but not code that digs out the original function — Landlock does not restrict
``stat`` either, so a file's existence and size stay visible to hostile code.

**Values are judged as C uses them, never by asking them.** A path the program hands over can
be an object of its own class, and every question the guard asks it runs the program's code:
a metaclass makes ``type(x).__mro__`` a property (a ``str`` subclass "is" an ``int``, so an
already-judged descriptor), ``isinstance`` follows ``__class__``, ``str(x)``, ``x.startswith``
and ``"\0" in x`` call overridable methods, and ``__fspath__`` can answer one path to the guard
and another to C (the object is converted twice: by C, then by the guard). So every value is
classified by ``type(x) is str`` (``type()`` cannot be lied to), or converted by the unbound
method of the builtin, which reads the object's own data and refuses any other type
(``str.__str__``, ``bytes.decode``, ``bytes.__bytes__``, ``int.__index__``); the judged value
is an exact builtin, and every later question is asked of it. What C does with the event's
value decides the rest (CPython 3.11, checked with an audit hook):

* ``os.*`` path events (``listdir``, ``mkdir``, ``rename``, ``remove``, ``chmod``…) and ``open``
  from ``open``/``io.open``/``os.open``: C converted the argument first, and the event holds
  its ``str``/``bytes`` (the ``__fspath__`` result), maybe of a subclass, whose characters (not
  its methods) C uses: judged after ``str.__str__``.
* ``open`` from ``io.FileIO`` and ``sqlite3.connect`` hold the program's original object
  (``FileIO`` converted it before the event, sqlite3 converts it after): an ``os.PathLike``
  there can answer differently the next time, so it is refused (``Cannot tell which file a
  'P' object names``); ``open(path)`` and the ``sqlite3.connect`` wrapper convert it once,
  before C, so ``pathlib.Path`` works there.
* the wrappers (``os.stat`` & co., ``os.open`` with ``dir_fd``, ``sqlite3.connect``) convert
  each argument once (``os.fspath`` once, ``dir_fd`` by ``__index__`` once,
  ``follow_symlinks`` by its truth once) and hand C the very values they judged.
* a NUL ends a path where the kernel and SQLite end it (an ``AF_UNIX`` name, ``%00`` in a
  ``file:`` URI): the part before it is judged, never skipped.

``tests/guards/test_value_confusion.py`` tries each lie (a lying ``__mro__``, a stateful
``__fspath__``) on every call, next to the same call with a plain value.

**The rule files are protected by path.** A write to a rule file, an include (present or
absent) or the learning output is refused, and so is any change of a directory on the path to
one (rename, replace, remove, a link or symlink put there, ``shutil.rmtree`` of a tree holding
one, checked before it deletes anything): renaming the directory would move the file and let a
new one take its place. Opening an existing directory for writing is not such a change: the
kernel refuses it (``EISDIR``), or, with ``O_TMPFILE``, creates an anonymous file that has no
name until a ``linkat`` (``os.link``, judged by its destination); so ``tempfile.TemporaryFile
(dir=D)`` works in an ``expose-rw=`` directory holding the rule file.
"""

from __future__ import annotations

import _operator
import os
import posix

from .._record import Record
from ..errors import RuleFileNotFoundError, RulePermissionError
from ..rules.files import HARMLESS_DEVICES
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

    __slots__ = ("check", "exact", "fd", "handlers", "resolve", "sqlite_authorizer")
    #: check(path, write, follow=True, dir_fd=None, metadata=False, op="") -> None, raises the refusal
    check: Callable[..., None]
    resolve: Callable[..., tuple[str, bool]]
    #: audit event -> sealed handler(args)
    handlers: dict[str, Callable[[tuple[Any, ...]], None]]
    #: judges the files SQL opens itself (ATTACH, VACUUM INTO): no audit event covers them
    sqlite_authorizer: Callable[..., int]
    #: exact(path) -> the exact str, bytes or int a wrapper judges and hands C (``_once``)
    exact: Callable[[Any], Any]
    #: fd(dir_fd) -> the exact int (or None) a wrapper judges and hands C
    fd: Callable[[Any], Any]


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


def _holder(real, _protected_dirs=None):  # type: ignore[no-untyped-def]
    """The protected path ``real`` is a directory of (a change of ``real`` moves or hides it), or None."""
    prefix = real if real.endswith("/") else real + "/"
    for d in _protected_dirs:
        if d.startswith(prefix):
            return d
    return None


def _is_directory(real, _stat=None, _OSError=None, _S_IFMT=0o170000, _S_IFDIR=0o040000):  # type: ignore[no-untyped-def]
    try:
        return _stat(real).st_mode & _S_IFMT == _S_IFDIR
    except _OSError:
        return False


def _decide(  # type: ignore[no-untyped-def]
    path,
    write,
    follow=True,
    metadata=False,
    op="",
    _resolve=None,
    _metadata_ok=None,
    _find=None,
    _exposure_of=None,
    _ignores=None,
    _protected=None,
    _holder=None,
    _is_directory=None,
    _NotFound=None,
    _Denied=None,
    _len=None,
):
    """``(volatile, refusal class or None, message)`` for an absolute path (see ``paths.py``).

    ``op``: ``"open"``, the ``open`` event, where writing to an existing directory changes
    nothing in it (the kernel refuses it, or ``O_TMPFILE`` makes an anonymous file);
    ``"tree"``, a whole tree about to be removed: only the protected paths are judged (each
    removal is judged again)."""
    real, volatile = _resolve(path, follow)
    if op == "tree":
        held = real if real in _protected else _holder(real)
        if held is None:
            return (volatile, None, "")
        return (
            volatile,
            _Denied,
            f"Cannot remove '{real}': it holds '{held}', part of the active sandbox configuration.",
        )
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
        held = _holder(real)
        if held is not None and not (op == "open" and _is_directory(real)):
            return (
                volatile,
                _Denied,
                f"Cannot change '{real}': it holds '{held}', part of the active sandbox configuration.",
            )
        if not writable:
            return (
                volatile,
                _Denied,
                f"Cannot write to '{real}': rule {described} exposes it read-only.\n"
                "Add `expose-rw=<directory>` for a directory that may be written.",
            )
    return (volatile, None, "")


def _exact(  # type: ignore[no-untyped-def]
    value, _str_of=None, _decode=None, _index=None, _name_of=None, _type=None, _TypeError=None, _Refused=None
):
    """The exact ``str`` (a path) or ``int`` (a descriptor) C used for ``value``, an event's
    argument that is not one already: the data of a real subclass, read by the builtin's own
    method. Any other object (an ``os.PathLike`` C converted before or after the event) is
    refused: converting it again may not give what C got."""
    try:
        return _str_of(value)
    except _TypeError:
        pass
    try:
        return _decode(value, "utf-8", "surrogateescape")
    except _TypeError:
        pass
    try:
        return _index(value)
    except _TypeError:
        pass
    raise _Refused(
        f"Cannot tell which file a '{_name_of(_type(value))}' object names: the sandbox judges the "
        "path C uses, and this object could name another one when asked again.\n"
        "Pass the path as a str or bytes (os.fspath(path)).",
        None,
    )


def _once(  # type: ignore[no-untyped-def]
    value,
    _type=None,
    _str=None,
    _bytes=None,
    _int=None,
    _str_of=None,
    _bytes_of=None,
    _index=None,
    _fspath=None,
    _TypeError=None,
):
    """A wrapper's path argument as the exact ``str``, ``bytes`` or ``int`` it stands for,
    converted once (``__fspath__`` called once): the wrapper judges it and hands C this value."""
    kind = _type(value)
    if kind is _str or kind is _bytes or kind is _int:
        return value
    try:
        return _str_of(value)
    except _TypeError:
        pass
    try:
        return _bytes_of(value)
    except _TypeError:
        pass
    try:
        return _index(value)
    except _TypeError:
        pass
    value = _fspath(value)  # a str or bytes (maybe of a subclass), or TypeError
    if _type(value) is _str or _type(value) is _bytes:
        return value
    try:
        return _str_of(value)
    except _TypeError:
        return _bytes_of(value)


def _fd_once(value, _type=None, _int=None, _operator_index=None, _index=None):  # type: ignore[no-untyped-def]
    """A ``dir_fd`` as the exact ``int`` C will use (``__index__`` called once)."""
    if value is None or _type(value) is _int:
        return value
    return _index(_operator_index(value))


def _check(  # type: ignore[no-untyped-def]
    path,
    write,
    follow=True,
    dir_fd=None,
    metadata=False,
    op="",
    _decide=None,
    _remembered=None,
    _getcwd=None,
    _readlink=None,
    _decode=None,
    _exact=None,
    _str=None,
    _bytes=None,
    _int=None,
    _type=None,
    _index=None,
    _NotFound=None,
    _OSError=None,
    _learn=None,
):
    """Allow silently, or raise the refusal that names the rule to add or the rule that refused.
    Learning mode (``_learn``): a refusal a rule can lift is recorded and the access allowed.

    ``path``: an event's argument or a wrapper's converted one; classified by its exact type
    (see the module docstring), the rest by what it holds."""
    kind = _type(path)
    if kind is not _str:
        if kind is _bytes:
            path = _decode(path, "utf-8", "surrogateescape")
        elif kind is _int:
            return  # an open descriptor: already judged when it was opened
        else:
            path = _exact(path)  # the data of a real str/bytes/int subclass, or the refusal
            if _type(path) is _int:
                return
    if "\x00" in path:
        path = path.partition("\x00")[0]  # where the kernel (AF_UNIX) and SQLite (%00) end it
    if not path.startswith("/"):
        if dir_fd is not None and dir_fd != -1:
            if _type(dir_fd) is not _int:
                dir_fd = _index(dir_fd)
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
    volatile, refusal, message = _remembered(path, write, follow, metadata, op)
    if volatile:
        volatile, refusal, message = _decide(path, write, follow, metadata, op)
    if refusal is not None:
        if _learn is not None and _learn(path, write, message):
            return
        raise refusal(message, path)


def _on_open(args, _check=None, _write_flags=None):  # type: ignore[no-untyped-def]
    path, _mode, flags = args
    _check(path, flags & _write_flags != 0, True, None, False, "open")


def _on_read(args, _check=None):  # type: ignore[no-untyped-def]
    path = args[0]
    if path is None:
        path = "."
    _check(path, False)


def _on_walk(args, _check=None, _once=None):  # type: ignore[no-untyped-def]
    """os.walk / os.fwalk: the top is judged early (``os.walk`` hides the errors of the listings
    it makes). Its value is the program's object, converted here; each listing is judged again."""
    path = args[0]
    _check("." if path is None else _once(path), False)


def _on_tree(args, _check=None, _once=None, _fd_once=None):  # type: ignore[no-untyped-def]
    """shutil.rmtree(path, dir_fd): a tree holding a protected path is refused before anything
    in it is deleted; every removal is judged again."""
    _check(_once(args[0]), True, False, _fd_once(args[1]), False, "tree")


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


def _sqlite_path(  # type: ignore[no-untyped-def]
    database,
    _str=None,
    _bytes=None,
    _type=None,
    _int=None,
    _chr=None,
    _decode=None,
    _exact=None,
    _ValueError=None,
):
    """The file an SQLite database name opens, or None for an in-memory database.

    ``file:`` URIs are decoded as SQLite decodes them (``%2F`` is ``/``), and judged on the
    decoded path: ``file:%2Fetc%2Fpasswd`` is ``/etc/passwd``. The name is the program's own
    object (the event comes before sqlite3 converts it): bytes are decoded first, a subclass
    is read by the builtin's method, anything else refused (see ``_exact``).
    """
    kind = _type(database)
    if kind is _bytes:
        database = _decode(database, "utf-8", "surrogateescape")
    elif kind is not _str:
        database = _exact(database)
        if _type(database) is not _str:
            return database  # a number: sqlite3 refuses it
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
    for device, writable in HARMLESS_DEVICES.items():  # exact files: nothing beside them
        exposures.setdefault(device, (device, writable, f"'{device}' (a device that holds no data)"))
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
        _holder=seal(_holder, _protected_dirs=tuple(sorted(protected))),
        _is_directory=seal(
            _is_directory, _stat=posix.stat, _OSError=OSError, _S_IFMT=0o170000, _S_IFDIR=0o040000
        ),
        _NotFound=RuleFileNotFoundError,
        _Denied=RulePermissionError,
        _len=len,
    )
    exact = seal(
        _exact,
        _str_of=str.__str__,
        _decode=bytes.decode,
        _index=int.__index__,
        _name_of=type.__dict__["__name__"].__get__,
        _type=type,
        _TypeError=TypeError,
        _Refused=RulePermissionError,
    )
    check = seal(
        _check,
        _decide=decide,
        _remembered=c_cache(decide, 8192),
        _getcwd=posix.getcwd,
        _readlink=posix.readlink,
        _decode=bytes.decode,
        _exact=exact,
        _str=str,
        _bytes=bytes,
        _int=int,
        _type=type,
        _index=int.__index__,
        _NotFound=RuleFileNotFoundError,
        _OSError=OSError,
        _learn=learn,
    )
    once = seal(
        _once,
        _type=type,
        _str=str,
        _bytes=bytes,
        _int=int,
        _str_of=str.__str__,
        _bytes_of=bytes.__bytes__,
        _index=int.__index__,
        _fspath=posix.fspath,
        _TypeError=TypeError,
    )
    fd_once = seal(_fd_once, _type=type, _int=int, _operator_index=_operator.index, _index=int.__index__)
    on_read = seal(_on_read, _check=check)
    on_walk = seal(_on_walk, _check=check, _once=once)
    sqlite_path = seal(
        _sqlite_path,
        _str=str,
        _bytes=bytes,
        _type=type,
        _int=int,
        _chr=chr,
        _decode=bytes.decode,
        _exact=exact,
        _ValueError=ValueError,
    )
    handlers: dict[str, Callable[[tuple[Any, ...]], None]] = {
        "open": seal(_on_open, _check=check, _write_flags=_WRITE_FLAGS),
        "os.listdir": on_read,
        "os.scandir": on_read,
        "os.chdir": on_read,
        "os.walk": on_walk,
        "os.fwalk": on_walk,
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
        "shutil.rmtree": seal(_on_tree, _check=check, _once=once, _fd_once=fd_once),
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
    return FileGuard(check, resolve, handlers, authorizer, once, fd_once)


# -- wrappers for the calls that raise no audit event ----------------------------------------


def metadata_wrappers(guard: FileGuard) -> dict[str, Callable[..., Any]]:
    """Replacements for ``os.stat`` & co.: ``name -> wrapper`` (applied to ``os`` and ``posix``).

    Each converts its path, ``dir_fd`` and ``follow_symlinks`` once, judges these values and
    hands them to C: a value that answers differently when asked again is asked only once."""
    check, exact, fd, truth = guard.check, guard.exact, guard.fd, bool
    made: dict[str, Callable[..., Any]] = {}
    from _warnings import warn

    deprecated = "path should be string, bytes, os.PathLike or integer"

    def wrap(name: str, write: bool = False, *, follow_kw: bool = True) -> None:
        """``follow_kw=False``: a call without ``follow_symlinks``, which acts on a final
        symlink itself (``readlink``, ``lchown``, ``mkfifo``, ``mknod``): the link is judged,
        not where it points (a loop is then the caller's to find, as ``realpath`` does)."""
        original = getattr(posix, name, None)
        if original is None:
            return

        def wrapper(path: Any, *args: Any, **kwargs: Any) -> Any:
            if type(path) is not str:
                if type(path) is bytearray or type(path) is memoryview:
                    # accepted by C with this warning; copied once, and the copy is what C gets
                    warn(f"{name}: {deprecated}, not {type(path).__name__}", DeprecationWarning, 2)
                    path = bytes(path)
                path = exact(path)
            follow = follow_kw  # without the keyword, a final symlink is acted on itself
            if kwargs:
                if "dir_fd" in kwargs:
                    kwargs["dir_fd"] = fd(kwargs["dir_fd"])
                if follow_kw and "follow_symlinks" in kwargs:
                    follow = kwargs["follow_symlinks"] = truth(kwargs["follow_symlinks"])  # asked once
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
    decode = bytes.decode

    def open(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        # The 'open' audit event does not carry dir_fd: a relative path would be judged
        # against the working directory. Open the absolute path instead.
        if dir_fd is not None:
            path, dir_fd = exact(path), fd(dir_fd)
            text = decode(path, "utf-8", "surrogateescape") if type(path) is bytes else path
            if type(text) is str and not text.startswith("/"):
                path = readlink(f"/proc/self/fd/{dir_fd}") + "/" + text
                dir_fd = None
        if dir_fd is None:
            return open_original(path, flags, mode)
        return open_original(path, flags, mode, dir_fd=dir_fd)

    _like(open, open_original)
    made["open"] = open

    lstat_original = posix.lstat

    def lstat(path: Any, *args: Any, **kwargs: Any) -> Any:
        if type(path) is not str:
            path = exact(path)
        if "dir_fd" in kwargs:
            kwargs["dir_fd"] = fd(kwargs["dir_fd"])
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
