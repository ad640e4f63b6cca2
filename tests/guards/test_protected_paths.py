"""The rule files are protected by path (issue 16, item 3; issue 17, item 5).

A sandboxed run must not change what the next run reads: not the rule file, not an include
(present or absent), and not a directory on the path to one, which would move the file and let
a planted one take its place. Each test tries the change with a plain value and with a str that
lies about its type, then checks the files the next run reads are as they were. The same
operations on a directory that holds no rule file work.
"""

from __future__ import annotations

import os
import textwrap
from typing import Any

LIARS = """
import os, pathlib, shutil
class Liar(type):
    @property
    def __mro__(cls):
        return (cls, int, object)
class LyingStr(str, metaclass=Liar):
    pass
def both(label, call, *paths):
    attempt(label, call, *paths)
    attempt(label + " (lying)", call, *(LyingStr(p) for p in paths))
"""

IMPORTS = "python-import=os, pathlib, shutil, tempfile"
INCLUDE = "sub/site.py-sandboxes"  # absent, and so is its directory: from the working directory


def refused(message: str) -> str:
    return f"RulePermissionError: {message}"


def configuration(path: Any) -> str:
    return refused(f"Cannot write to '{path}': it is part of the active sandbox configuration.")


def holds(directory: Any, protected: Any, verb: str = "change") -> str:
    return refused(
        f"Cannot {verb} '{directory}': it holds '{protected}', part of the active sandbox configuration."
    )


def run_project(project: Any, code: str, rules: str, provider: str) -> Any:
    return project.run(LIARS + textwrap.dedent(code), rules, provider=provider)


def test_an_absent_include_cannot_be_created(project: Any, provider: str) -> None:
    code = """
    P = "@PROJECT@"
    both("write", lambda p: open(p, "w").write("os-sandbox=none\\n"), P + "/local.py-sandboxes")
    both("os.open", lambda p: os.open(p, os.O_CREAT | os.O_WRONLY), P + "/local.py-sandboxes")
    both("mkdir its directory", os.mkdir, P + "/sub")
    both("symlink its directory", os.symlink, "@DATA@", P + "/sub")
    both("rename onto its directory", os.rename, "@DATA@", P + "/sub")
    """
    rules = f'include-optional "local.py-sandboxes"\ninclude-optional "{INCLUDE}"\nexpose-rw=@TMP@\n{IMPORTS}'
    run = run_project(project, code, rules, provider)
    local = project.root / "local.py-sandboxes"
    sub = project.root / "sub"
    assert run.outcomes() == {
        "write": configuration(local),
        "write (lying)": configuration(local),
        "os.open": configuration(local),
        "os.open (lying)": configuration(local),
        "mkdir its directory": holds(sub, sub / "site.py-sandboxes"),
        "mkdir its directory (lying)": holds(sub, sub / "site.py-sandboxes"),
        "symlink its directory": holds(sub, sub / "site.py-sandboxes"),
        "symlink its directory (lying)": holds(sub, sub / "site.py-sandboxes"),
        "rename onto its directory": holds(sub, sub / "site.py-sandboxes"),
        "rename onto its directory (lying)": holds(sub, sub / "site.py-sandboxes"),
    }
    assert sorted(os.listdir(project.root)) == [".py-sandboxes", "prog.py"]
    assert sorted(os.listdir(project.data)) == [".env", "data.txt"]


MOVES = """
P, T = "@PROJECT@", "@TMP@"
for label, call, paths in (
    ("os.rename", os.rename, (P, T + "/moved")),
    ("os.replace", os.replace, (P, T + "/moved")),
    ("os.replace onto", os.replace, ("@DATA@", P)),
    ("os.rmdir", os.rmdir, (P,)),
    ("os.removedirs", os.removedirs, (P,)),
    ("os.link the rule file", os.link, (P + "/.py-sandboxes", T + "/alias")),
    ("pathlib rename", lambda a, b: pathlib.Path(a).rename(b), (P, T + "/moved")),
    ("pathlib rmdir", lambda a: pathlib.Path(a).rmdir(), (P,)),
    ("shutil.move", shutil.move, (P, T + "/moved")),
    ("shutil.rmtree", shutil.rmtree, (P,)),
    ("shutil.rmtree ignoring errors", lambda a: shutil.rmtree(a, ignore_errors=True), (P,)),
):
    both(label, call, *paths)
os.mkdir("@DATA@/d1")
attempt("rename a directory without rule files", os.rename, "@DATA@/d1", "@DATA@/d2")
attempt("shutil.rmtree a directory without rule files", shutil.rmtree, "@DATA@/d2")
"""


def test_the_directory_of_the_rule_file_cannot_be_moved_removed_or_replaced(
    project: Any, provider: str
) -> None:
    run = run_project(project, MOVES, f"expose-rw=@TMP@\n{IMPORTS}", provider)
    root, rule_file = project.root, project.root / ".py-sandboxes"
    changed = holds(root, rule_file)
    expected = {
        "os.rename": changed,
        "os.replace": changed,
        "os.replace onto": changed,
        "os.rmdir": changed,
        "os.removedirs": changed,
        "os.link the rule file": configuration(rule_file),
        "pathlib rename": changed,
        "pathlib rmdir": changed,
        # its rename refused, shutil.move copies the tree, then removes it: refused before a removal
        "shutil.move": holds(root, rule_file, "remove"),
        "shutil.rmtree": holds(root, rule_file, "remove"),
        "shutil.rmtree ignoring errors": holds(root, rule_file, "remove"),
    }
    expected.update({f"{label} (lying)": outcome for label, outcome in expected.items()})
    expected["rename a directory without rule files"] = "OK"
    expected["shutil.rmtree a directory without rule files"] = "OK"
    assert run.outcomes() == expected
    assert sorted(os.listdir(root)) == [".py-sandboxes", "prog.py"]
    assert rule_file.read_text().startswith("expose-rw=")
    assert not (project.tmp / "alias").exists()


TEMPORARY = """
import tempfile
P, RO = "@PROJECT@", "@DATA@"
def anonymous(d):
    with tempfile.TemporaryFile(dir=d) as f:
        f.write(b"scratch")
        f.seek(0)
        return f.read()
def named(d):
    with tempfile.NamedTemporaryFile(dir=d) as f:
        return os.path.dirname(f.name) == d
attempt("TemporaryFile", anonymous, P)
attempt("NamedTemporaryFile", named, P)
attempt("O_TMPFILE", lambda: os.close(os.open(P, os.O_TMPFILE | os.O_RDWR)))
attempt("write-open of the directory", os.open, P, os.O_WRONLY)
attempt("O_TMPFILE in a read-only directory", os.open, RO, os.O_TMPFILE | os.O_RDWR)
attempt("TemporaryFile in a read-only directory", anonymous, RO)
attempt("write the rule file", lambda: open(P + "/.py-sandboxes", "w"))
"""


def test_a_temporary_file_can_be_made_next_to_the_rule_file(project: Any, provider: str) -> None:
    run = run_project(project, TEMPORARY, f"expose-rw=@PROJECT@\nexpose-ro=@DATA@\n{IMPORTS}", provider)
    read_only = refused(
        f"Cannot write to '{project.data}': rule 'expose-ro={project.data}' from .py-sandboxes(2) exposes it read-only."
    )
    assert run.outcomes() == {
        "TemporaryFile": "OK b'scratch'",
        "NamedTemporaryFile": "OK True",
        "O_TMPFILE": "OK",
        "write-open of the directory": f"IsADirectoryError: [Errno 21] Is a directory: '{project.root}'",
        "O_TMPFILE in a read-only directory": read_only,
        "TemporaryFile in a read-only directory": read_only,
        "write the rule file": configuration(project.rule_file),
    }
    assert sorted(os.listdir(project.root)) == [".py-sandboxes", "prog.py"]
