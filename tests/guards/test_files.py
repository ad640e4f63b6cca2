"""The file guard under ``python-sb``: ``expose-ro=``, ``expose-rw=``, ``ignore=``, the rule files.

Each test is a pair (the rule grants it / the same operation refused without it) and runs under
both providers: the Python layer decides first, with the same message, whatever the kernel adds.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

# The standard library's own imports are not charged to the program: one name per module used.
PATH_IMPORTS = "python-import=io, _io, os, pathlib"
SQLITE_IMPORTS = "python-import=sqlite3"

# Every way of reading @DIR@/@NAME@ (the `open` audit event covers the first six).
READS = """
import io, _io, os, pathlib
F = "@DIR@/@NAME@"
attempt("open", lambda: open(F).read())
attempt("io.open", lambda: io.open(F).read())
attempt("_io.open", lambda: _io.open(F).read())
attempt("io.FileIO", lambda: io.FileIO(F).read())
attempt("os.open", lambda: os.read(os.open(F, os.O_RDONLY), 100))
attempt("io.open_code", lambda: io.open_code(F).read())
attempt("pathlib.read_text", lambda: pathlib.Path(F).read_text())
attempt("os.listdir", lambda: sorted(os.listdir("@DIR@")))
attempt("os.scandir", lambda: sorted(e.name for e in os.scandir("@DIR@")))
attempt("os.stat", lambda: os.stat(F).st_size)
attempt("os.path.exists", lambda: os.path.exists(F))
"""


def not_exposed(path: Any) -> str:
    return f"RuleFileNotFoundError: Access to '{path}' must be accepted by a rule."


def read_only(path: Any, rule: str, line: int = 1) -> str:
    return (
        f"RulePermissionError: Cannot write to '{path}': rule '{rule}' from .py-sandboxes({line}) "
        "exposes it read-only."
    )


def configuration(path: Any) -> str:
    return f"RulePermissionError: Cannot write to '{path}': it is part of the active sandbox configuration."


# -- reading ---------------------------------------------------------------------------------


def test_every_way_of_reading_works_in_an_exposed_directory(project: Any, provider: str) -> None:
    program = READS.replace("@DIR@", "@DATA@").replace("@NAME@", "data.txt")
    run = project.run(program, f"expose-ro=@DATA@\n{PATH_IMPORTS}", provider=provider)
    assert run.outcomes() == {
        "open": "OK 'DATA\\n'",
        "io.open": "OK 'DATA\\n'",
        "_io.open": "OK 'DATA\\n'",
        "io.FileIO": "OK b'DATA\\n'",
        "os.open": "OK b'DATA\\n'",
        "io.open_code": "OK b'DATA\\n'",
        "pathlib.read_text": "OK 'DATA\\n'",
        "os.listdir": "OK ['.env', 'data.txt']",
        "os.scandir": "OK ['.env', 'data.txt']",
        "os.stat": "OK 5",
        "os.path.exists": "OK True",
    }


def test_every_way_of_reading_is_refused_outside_the_exposures(project: Any, provider: str) -> None:
    program = READS.replace("@DIR@", "@SECRET@").replace("@NAME@", "secret.txt")
    run = project.run(program, f"expose-ro=@DATA@\n{PATH_IMPORTS}", provider=provider)
    secret = project.secret / "secret.txt"
    opened = not_exposed(secret)
    assert run.outcomes() == {
        "open": opened,
        "io.open": opened,
        "_io.open": opened,
        "io.FileIO": opened,
        "os.open": opened,
        "io.open_code": opened,
        "pathlib.read_text": opened,
        "os.listdir": not_exposed(project.secret),
        "os.scandir": not_exposed(project.secret),
        "os.stat": opened,
        "os.path.exists": "OK False",  # the refusal is an OSError: exists() says False
    }


PATHLIB_METADATA = """
import os, pathlib
for name in ("@DATA@/data.txt", "@SECRET@/secret.txt"):
    p = pathlib.Path(name)
    attempt(p.parent.name + " os.stat", lambda: os.stat(p).st_size)
    attempt(p.parent.name + " exists", p.exists)
    attempt(p.parent.name + " is_file", p.is_file)
"""


def test_metadata_of_a_path_object(project: Any, provider: str) -> None:
    run = project.run(PATHLIB_METADATA, f"expose-ro=@DATA@\n{PATH_IMPORTS}", provider=provider)
    assert run.outcomes() == {
        "data os.stat": "OK 5",
        "data exists": "OK True",
        "data is_file": "OK True",
        "secret os.stat": not_exposed(project.secret / "secret.txt"),
        "secret exists": "OK False",
        "secret is_file": "OK False",
    }


def test_an_uncaught_refusal_prints_the_rule_to_add(project: Any, provider: str) -> None:
    run = project.run("open('@SECRET@/secret.txt')\n", "expose-ro=@DATA@", provider=provider)
    assert run.returncode == 1
    assert run.stderr.endswith(
        f"pysandboxes.errors.{not_exposed(project.secret / 'secret.txt')}\n"
        f"Add `expose-ro={project.secret}` to the rule file to allow it.\n"
    )
    assert "TOPSECRET" not in run.stdout + run.stderr


# -- writing ---------------------------------------------------------------------------------

WRITES = """
import os
D = "@DATA@"
attempt("create", lambda: open(D + "/new.txt", "w").write("new"))
attempt("append", lambda: open(D + "/data.txt", "a").write("more"))
attempt("os.mkdir", os.mkdir, D + "/sub")
attempt("os.rmdir", os.rmdir, D + "/sub")
attempt("os.chmod", os.chmod, D + "/data.txt", 0o600)
attempt("os.utime", os.utime, D + "/data.txt")
attempt("os.truncate", os.truncate, D + "/data.txt", 2)
attempt("os.symlink", os.symlink, "data.txt", D + "/link")
attempt("os.rename", os.rename, D + "/new.txt", D + "/renamed.txt")
attempt("os.remove", os.remove, D + "/renamed.txt")
"""
WRITE_LABELS = (
    "create",
    "append",
    "os.mkdir",
    "os.rmdir",
    "os.chmod",
    "os.utime",
    "os.truncate",
    "os.symlink",
    "os.rename",
    "os.remove",
)


def test_writes_are_allowed_in_an_expose_rw_directory(project: Any, provider: str) -> None:
    run = project.run(WRITES, "expose-rw=@DATA@\npython-import=os", provider=provider)
    assert run.outcomes() == {
        "create": "OK 3",
        "append": "OK 4",
        **dict.fromkeys(WRITE_LABELS[2:], "OK"),
    }
    assert sorted(os.listdir(project.data)) == [".env", "data.txt", "link"]
    assert (project.data / "data.txt").read_text() == "DA"
    assert os.readlink(project.data / "link") == "data.txt"


def test_writes_are_refused_in_an_expose_ro_directory_naming_the_rule(project: Any, provider: str) -> None:
    run = project.run(WRITES, "expose-ro=@DATA@\npython-import=os", provider=provider)
    rule = f"expose-ro={project.data}"
    d = project.data
    assert run.outcomes() == {
        "create": read_only(d / "new.txt", rule),
        "append": read_only(d / "data.txt", rule),
        "os.mkdir": read_only(d / "sub", rule),
        "os.rmdir": read_only(d / "sub", rule),
        "os.chmod": read_only(d / "data.txt", rule),
        "os.utime": read_only(d / "data.txt", rule),
        "os.truncate": read_only(d / "data.txt", rule),
        "os.symlink": read_only(d / "link", rule),
        "os.rename": read_only(d / "new.txt", rule),
        "os.remove": read_only(d / "renamed.txt", rule),
    }
    assert sorted(os.listdir(project.data)) == [".env", "data.txt"]
    assert (project.data / "data.txt").read_text() == "DATA\n"


def test_the_hint_of_a_read_only_refusal(project: Any, provider: str) -> None:
    run = project.run("open('@DATA@/data.txt', 'w')\n", "expose-ro=@DATA@", provider=provider)
    assert run.returncode == 1
    assert run.stderr.endswith(
        f"pysandboxes.errors.{read_only(project.data / 'data.txt', f'expose-ro={project.data}')}\n"
        "Add `expose-rw=<directory>` for a directory that may be written.\n"
    )


# -- ignore= ---------------------------------------------------------------------------------

IGNORED = """
attempt("data.txt", lambda: open("@DATA@/data.txt").read())
attempt(".env", lambda: open("@DATA@/.env").read())
"""


def test_without_ignore_a_dotenv_in_an_exposed_directory_is_readable(project: Any, provider: str) -> None:
    run = project.run(IGNORED, "expose-ro=@DATA@", provider=provider)
    assert run.outcomes() == {"data.txt": "OK 'DATA\\n'", ".env": "OK 'TOKEN=1\\n'"}


def test_ignore_hides_a_file_inside_an_exposed_directory(project: Any, provider: str) -> None:
    run = project.run(IGNORED, "expose-ro=@DATA@\nignore=.env", provider=provider)
    assert run.outcomes() == {
        "data.txt": "OK 'DATA\\n'",
        ".env": f"RuleFileNotFoundError: Access to '{project.data / '.env'}' is ignored by rule "
        "'ignore=.env' from .py-sandboxes(2)",
    }


# -- resolution: symlinks, `..`, /proc ---------------------------------------------------------------


def test_a_symlink_inside_an_exposed_directory_is_judged_by_its_target(project: Any, provider: str) -> None:
    (project.data / "inside").symlink_to(project.data / "data.txt")
    (project.data / "outside").symlink_to(project.secret / "secret.txt")
    (project.data / "relative").symlink_to("../secret/secret.txt")
    (project.data / "dir").symlink_to(project.secret)
    program = """
    for name in ("inside", "outside", "relative", "dir/secret.txt"):
        attempt(name, lambda: open("@DATA@/" + name).read())
    """
    run = project.run(program, "expose-ro=@DATA@", provider=provider)
    secret = not_exposed(project.secret / "secret.txt")
    assert run.outcomes() == {
        "inside": "OK 'DATA\\n'",
        "outside": secret,
        "relative": secret,
        "dir/secret.txt": secret,
    }


def test_dot_dot_cannot_leave_an_exposed_directory(project: Any, provider: str) -> None:
    program = """
    attempt("stays", lambda: open("@DATA@/../data/data.txt").read())
    attempt("escapes", lambda: open("@DATA@/../secret/secret.txt").read())
    attempt("relative", lambda: open("../secret/secret.txt").read())
    """
    run = project.run(program, "expose-ro=@DATA@", provider=provider)
    secret = not_exposed(project.secret / "secret.txt")
    assert run.outcomes() == {"stays": "OK 'DATA\\n'", "escapes": secret, "relative": secret}


def test_proc_self_root_and_fd_cannot_escape(project: Any) -> None:
    # Python layer only: under landlock /proc/self is not granted at all (see test_landlock.py).
    # dir_fd= is in test_holes.py.
    program = """
    import os
    attempt("root secret", lambda: open("/proc/self/root@SECRET@/secret.txt").read())
    fd = os.open("@DATA@", os.O_RDONLY)
    attempt("fd data", lambda: open("/proc/self/fd/%d/data.txt" % fd).read())
    attempt("fd secret", lambda: open("/proc/self/fd/%d/../secret/secret.txt" % fd).read())
    """
    run = project.run(program, "expose-ro=@DATA@\npython-import=os")
    secret = not_exposed(project.secret / "secret.txt")
    assert run.outcomes() == {
        "root secret": secret,
        "fd data": "OK 'DATA\\n'",
        "fd secret": secret,
    }


# -- the active configuration ------------------------------------------------------------------

CONFIGURATION = """
import os
P = "@PROJECT@"
attempt("read rules", lambda: open(P + "/.py-sandboxes").readline())
attempt("write other", lambda: open(P + "/other.txt", "w").write("x"))
attempt("append rules", lambda: open(P + "/.py-sandboxes", "a").write("expose-rw=/\\n"))
attempt("truncate rules", lambda: open(P + "/.py-sandboxes", "w"))
attempt("remove rules", os.remove, P + "/.py-sandboxes")
attempt("rename rules", os.rename, P + "/.py-sandboxes", P + "/old")
attempt("replace rules", os.replace, P + "/other.txt", P + "/.py-sandboxes")
attempt("chmod rules", os.chmod, P + "/.py-sandboxes", 0o666)
attempt("create include", lambda: open(P + "/local.py-sandboxes", "w"))
attempt("symlink to rules", os.symlink, P + "/.py-sandboxes", P + "/alias")
attempt("write through symlink", lambda: open(P + "/alias", "a"))
attempt("rename project", os.rename, P, P + "-moved")
"""


def test_the_rule_files_cannot_be_written_even_under_expose_rw(project: Any, provider: str) -> None:
    rules = 'include-optional "local.py-sandboxes"\nexpose-rw=@PROJECT@\npython-import=os'
    run = project.run(CONFIGURATION, rules, provider=provider)
    rule_file = project.root / ".py-sandboxes"
    assert run.outcomes() == {
        "read rules": "OK 'include-optional \"local.py-sandboxes\"\\n'",
        "write other": "OK 1",
        "append rules": configuration(rule_file),
        "truncate rules": configuration(rule_file),
        "remove rules": configuration(rule_file),
        "rename rules": configuration(rule_file),
        "replace rules": configuration(rule_file),
        "chmod rules": configuration(rule_file),
        "create include": configuration(project.root / "local.py-sandboxes"),
        "symlink to rules": "OK",  # the link itself is a new file; writing through it is judged
        "write through symlink": configuration(rule_file),
        "rename project": f"RulePermissionError: Cannot change '{project.root}': it holds "
        f"'{rule_file}', part of the active sandbox configuration.",
    }
    assert rule_file.read_text().startswith('include-optional "local.py-sandboxes"\nexpose-rw=')
    assert not (project.root / "local.py-sandboxes").exists()


# -- sqlite3 ---------------------------------------------------------------------------------

SQLITE = """
import sqlite3
def create(database, **kw):
    c = sqlite3.connect(database, **kw)
    c.execute("create table t(x)")
    c.commit()
    c.close()
attempt("memory", create, ":memory:")
attempt("memory uri", create, "file::memory:", uri=True)
attempt("data", create, "@DATA@/a.db")
attempt("data uri", create, "file:@DATA@/b.db?mode=rwc", uri=True)
attempt("secret", create, "@SECRET@/a.db")
attempt("secret uri", create, "file://@SECRET@/b.db?mode=rwc", uri=True)
"""


@pytest.mark.parametrize("exposure", ["expose-rw", "expose-ro"])
def test_sqlite3_connect_is_judged_by_the_file_rules(project: Any, provider: str, exposure: str) -> None:
    run = project.run(SQLITE, f"{exposure}=@DATA@\n{SQLITE_IMPORTS}", provider=provider)
    rule = f"{exposure}={project.data}"
    expected_data = (
        {"data": "OK", "data uri": "OK"}
        if exposure == "expose-rw"
        else {
            "data": read_only(project.data / "a.db", rule),
            "data uri": read_only(project.data / "b.db", rule),
        }
    )
    assert run.outcomes() == {
        "memory": "OK",
        "memory uri": "OK",
        **expected_data,
        "secret": not_exposed(project.secret / "a.db"),
        "secret uri": not_exposed(project.secret / "b.db"),
    }
    assert sorted(os.listdir(project.secret)) == ["secret.txt"]
