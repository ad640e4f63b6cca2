"""Path resolution for the file guard, sealed: symlinks and ``..`` are resolved before deciding.

Built from C functions only (``posix.lstat``, ``posix.readlink``, ``posix.getcwd``) so that
sandboxed code cannot change how a path resolves by patching ``os.path``.
"""

from __future__ import annotations

import posix

from ._seal import c_cache, seal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_S_IFMT = 0o170000
_S_IFLNK = 0o120000


def _resolve_full(path, _lstat=None, _readlink=None, _getcwd=None, _OSError=None):  # type: ignore[no-untyped-def]
    """Every component resolved, like ``os.path.realpath(path)`` (non-strict)."""
    if not path.startswith("/"):
        path = _getcwd() + "/" + path
    todo = path.split("/")
    todo.reverse()
    done = ""
    hops = 0
    while todo:
        part = todo.pop()
        if part == "" or part == ".":
            continue
        if part == "..":
            done = done.rpartition("/")[0]
            continue
        candidate = done + "/" + part
        try:
            st = _lstat(candidate)
        except _OSError:
            done = candidate
            continue
        if st.st_mode & 0o170000 == 0o120000:
            hops += 1
            if hops > 40:
                raise _OSError(40, "Too many levels of symbolic links", path)
            target = _readlink(candidate)
            if target.startswith("/"):
                done = ""
            more = target.split("/")
            more.reverse()
            todo.extend(more)
            continue
        done = candidate
    return done or "/"


def _resolve(  # type: ignore[no-untyped-def]
    path,
    follow=True,
    _lstat=None,
    _getcwd=None,
    _cached_dir=None,
    _full=None,
    _volatile=None,
    _OSError=None,
):
    """Resolve ``path``; the parent directory comes from a cache unless it is writable.

    ``follow=False`` keeps a final symlink itself (remove, rename, the link to create).
    """
    if not path.startswith("/"):
        path = _getcwd() + "/" + path
    head, _, name = path.rpartition("/")
    if name == "" or name == "." or name == "..":
        return _full(path)
    parent = _cached_dir(head or "/")
    # A directory the sandbox may write can be swapped for a symlink: never trust the cache there.
    for root in _volatile:
        if parent == root or parent.startswith(root + "/"):
            parent = _full(head or "/")
            break
    full = parent + "/" + name if parent != "/" else "/" + name
    if not follow:
        return full
    try:
        st = _lstat(full)
    except _OSError:
        return full
    if st.st_mode & 0o170000 == 0o120000:
        return _full(full)
    return full


def make_resolver(writable_roots: tuple[str, ...]) -> Callable[..., Any]:
    """A sealed ``resolve(path, follow=True) -> str`` for absolute or relative text paths."""
    full = seal(
        _resolve_full, _lstat=posix.lstat, _readlink=posix.readlink, _getcwd=posix.getcwd, _OSError=OSError
    )
    cached = c_cache(full)
    return seal(
        _resolve,
        _lstat=posix.lstat,
        _getcwd=posix.getcwd,
        _cached_dir=cached,
        _full=full,
        _volatile=tuple(writable_roots),
        _OSError=OSError,
    )
