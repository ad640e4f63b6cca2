"""Path resolution for the file guard, sealed: symlinks and ``..`` are resolved before deciding.

Built from C functions only (``posix.lstat``, ``posix.readlink``, ``posix.getcwd``) so that
sandboxed code cannot change how a path resolves by patching ``os.path``.
"""

from __future__ import annotations

import posix

from ._seal import seal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_S_IFMT = 0o170000
_S_IFLNK = 0o120000


def _resolve_full(path, _lstat=None, _readlink=None, _getcwd=None, _volatile=None, _OSError=None):  # type: ignore[no-untyped-def]
    """``(real, volatile)``: every component resolved, like ``os.path.realpath(path)``
    (non-strict); ``volatile`` tells whether the walk met a directory the sandbox may write,
    where a component can be swapped for a symlink: such an answer must not be cached."""
    if not path.startswith("/"):
        path = _getcwd() + "/" + path
    todo = path.split("/")
    todo.reverse()
    done = ""
    hops = 0
    volatile = False
    while todo:
        part = todo.pop()
        if part == "" or part == ".":
            continue
        if part == "..":
            done = done.rpartition("/")[0]
            continue
        candidate = done + "/" + part
        if not volatile:
            for root in _volatile:
                if candidate == root or candidate.startswith(root + "/"):
                    volatile = True
                    break
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
    return (done or "/", volatile)


def _resolve(path, follow=True, _full=None):  # type: ignore[no-untyped-def]
    """``(real, volatile)`` for an absolute ``path``; ``follow=False`` keeps a final symlink
    itself (remove, rename, the link to create)."""
    head, _, name = path.rpartition("/")
    if follow or name == "" or name == "." or name == "..":
        return _full(path)
    parent, volatile = _full(head or "/")
    return (parent + "/" + name if parent != "/" else "/" + name, volatile)


def make_resolver(writable_roots: tuple[str, ...]) -> Callable[..., Any]:
    """A sealed ``resolve(path, follow=True) -> (real, volatile)`` for absolute text paths.

    ``volatile``: the walk met a directory the sandbox may write (a component there can be
    swapped for a symlink), so the answer must not be remembered.
    """
    full = seal(
        _resolve_full,
        _lstat=posix.lstat,
        _readlink=posix.readlink,
        _getcwd=posix.getcwd,
        _volatile=tuple(writable_roots),
        _OSError=OSError,
    )
    return seal(_resolve, _full=full)
