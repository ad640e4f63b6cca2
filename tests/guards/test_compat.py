"""Ordinary code runs unchanged with the rights it needs: differences CPython's own test suite
found under ``python-sb`` (``make compat``, bench/compat.py), each pinned by the program that
shows it, run under every provider. Security-relevant ones come in pairs (allowed with the
rule, refused without)."""

from __future__ import annotations

from typing import Any


def test_shutil_keeps_its_symlink_safe_functions(project: Any, provider: str) -> None:
    """``shutil`` picks ``rmtree``'s descriptor-based walk and ``copystat``'s
    ``follow_symlinks=False`` path by asking ``os.supports_*`` about ``os.stat`` & co."""
    run = project.run(
        """
        import os, shutil
        attempt("rmtree avoids symlink attacks", lambda: shutil.rmtree.avoids_symlink_attacks)
        attempt("stat in supports_dir_fd", lambda: os.stat in os.supports_dir_fd)
        attempt("access in supports_effective_ids", lambda: os.access in os.supports_effective_ids)
        os.symlink("data.txt", "@DATA@/one")
        os.symlink("data.txt", "@DATA@/two")
        attempt("copystat of a link", shutil.copystat, "@DATA@/one", "@DATA@/two", follow_symlinks=False)
        """,
        "expose-rw=@DATA@\npython-import=os, shutil",
        provider=provider,
    )
    assert run.outcomes() == {
        "rmtree avoids symlink attacks": "OK True",
        "stat in supports_dir_fd": "OK True",
        "access in supports_effective_ids": "OK True",
        "copystat of a link": "OK",
    }


def test_the_wrapped_os_functions_show_their_own_signature(project: Any, provider: str) -> None:
    run = project.run(
        """
        import inspect, os
        attempt("stat", lambda: str(inspect.signature(os.stat)))
        attempt("access", lambda: str(inspect.signature(os.access)))
        attempt("statvfs", lambda: str(inspect.signature(os.statvfs)))
        attempt("argspec", lambda: inspect.getfullargspec(os.lstat).args)
        """,
        "python-import=os, inspect",
        provider=provider,
    )
    assert run.outcomes() == {
        "stat": "OK '(path, *, dir_fd=None, follow_symlinks=True)'",
        "access": "OK '(path, mode, *, dir_fd=None, effective_ids=False, follow_symlinks=True)'",
        "statvfs": "OK '(path)'",
        "argspec": "OK ['path']",
    }
