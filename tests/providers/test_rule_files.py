"""What lies inside ``expose-rw=`` directories and must not be written there, against native code:
rule files, across two runs, and the exposures nested in a writable one.

Run 1 (the Python layer off, native calls) tries to change what run 2 will load: write an
absent ``include-optional`` file, or move the rule file's directory away and plant a new rule
file where it was. Run 2 then probes a file outside every exposure: it must still be refused.
Under ``bwrap``, ``unshare`` and ``firejail`` the view pins the path: an absent include gets an
empty placeholder bound read-only, every directory on the way is a mount point (EBUSY). The
pair of each attack is the same operation on a file or directory that is no rule file.
(``landlock`` cannot take rights away inside an ``expose-rw=`` directory: docs/providers.md;
``qemu`` shares the same view: test_qemu.py.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .test_namespaces import Sandboxed

PROVIDERS = ("bwrap", "unshare", "firejail")
#: what run 1 would like run 2 to load
PLANTED = "expose-ro=/\n"
REFUSED = ("EROFS", "EBUSY", "EACCES", "EPERM")

TRY = """
call("write", native_write, {path!r}, {text!r})
call("remove", os.remove, {path!r})
call("other", native_write, {other!r}, "other")
"""

#: run 2: is the file outside every exposure still out of reach?
SECOND = """
call("outside", native_open, {outside!r})
"""


@pytest.fixture(params=PROVIDERS)
def box(request: pytest.FixtureRequest, tmp_path: Path) -> Sandboxed:
    return Sandboxed(tmp_path, str(request.param))


def second_run(box: Sandboxed, cwd: Path | None = None) -> dict[str, Any]:
    box.program(SECOND.format(outside=str(box.outside / "secret.txt")))
    done = box.sb("prog.py", cwd=cwd)
    assert (done.returncode, done.stderr) == (0, ""), done
    return _results(done.stdout)


def _results(stdout: str) -> dict[str, Any]:
    import json

    results: dict[str, Any] = json.loads(stdout.splitlines()[-1][len("RESULTS=") :])
    return results


def test_an_absent_include_optional_cannot_be_created(box: Sandboxed) -> None:
    results = box.probe(
        'include-optional "local.rules"',
        "expose-rw=.",
        body=TRY.format(path="local.rules", text=PLANTED, other="other.rules"),
    )
    assert results["write"] in REFUSED and results["remove"] in REFUSED, results
    assert results["other"] == "ok"  # the pair: a file no rule names is created
    # the placeholder: an empty include adds no rule
    assert (box.root / "local.rules").read_text() == ""
    assert (box.root / "other.rules").read_text() == "other"
    assert second_run(box) == {"outside": "ENOENT"}


def test_an_absent_include_in_an_absent_directory_cannot_be_created(box: Sandboxed) -> None:
    results = box.probe(
        'include-optional "conf.d/local.rules"',
        "expose-rw=.",
        body="""
        call("mkdir", os.mkdir, "conf.d")
        call("write", native_write, "conf.d/local.rules", "expose-ro=/")
        call("rmdir", os.rmdir, "conf.d")
        call("other", os.mkdir, "other.d")
        """,
    )
    assert results["mkdir"] == "EEXIST"
    assert results["write"] in REFUSED and results["rmdir"] in REFUSED, results
    assert results["other"] == "ok"
    assert sorted(p.name for p in (box.root / "conf.d").iterdir()) == []
    assert (box.root / "other.d").is_dir()


def nested_run(box: Sandboxed, where: str, body: str) -> dict[str, Any]:
    """Run ``body`` (native probes) from ``project/<where>``, which holds the rule file; the
    program may write all of ``project``."""
    here = box.root / where
    here.mkdir(parents=True, exist_ok=True)
    box.write(
        f"{where}/.py-sandboxes", f"os-sandbox={box.provider}\npy-sandbox=false\nexpose-rw={box.root}\n"
    )
    box.write(f"{where}/prog.py", _program(body))
    done = box.sb("prog.py", cwd=here)
    assert (done.returncode, done.stderr) == (0, ""), done
    return _results(done.stdout)


def test_the_rule_file_directory_cannot_be_moved_away(box: Sandboxed) -> None:
    (box.root / "sibling").mkdir()
    results = nested_run(
        box,
        "app",
        """
        call("move", os.rename, "../app", "../app-old")
        call("other", os.rename, "../sibling", "../sibling-old")
        """,
    )
    assert results["move"] in REFUSED, results
    assert results["other"] == "ok"  # the pair: a directory that leads to no rule file moves
    assert (box.root / "sibling-old").is_dir() and not (box.root / "app-old").exists()
    # had it moved, the program would have planted app/.py-sandboxes with its own rules
    assert (box.root / "app" / ".py-sandboxes").read_text().startswith(f"os-sandbox={box.provider}\n")


def test_a_directory_deeper_on_the_way_cannot_be_replaced(box: Sandboxed) -> None:
    # project/a/b/.py-sandboxes: a/ and a/b/ are both pinned
    results = nested_run(
        box,
        "a/b",
        """
        call("move_a", os.rename, "../../a", "../../a-old")
        call("move_b", os.rename, "../b", "../b-old")
        call("rmdir_b", os.rmdir, "../b")
        call("write_next_to_it", native_write, "notes.txt", "kept")
        """,
    )
    assert results["move_a"] in REFUSED and results["move_b"] in REFUSED, results
    assert results["rmdir_b"] in (*REFUSED, "ENOTEMPTY"), results
    assert results["write_next_to_it"] == "ok"  # the directory stays writable: writes reach the host
    assert (box.root / "a" / "b" / "notes.txt").read_text() == "kept"


def _program(body: str) -> str:
    import textwrap

    from .test_namespaces import EPILOGUE, PRELUDE

    return PRELUDE + textwrap.dedent(body) + EPILOGUE


def test_an_expose_ro_inside_expose_rw_is_read_only_natively(box: Sandboxed) -> None:
    # the Python layer lets the longest exposure decide; so does the view: data/ read-only
    # again, data/out/ writable again in it
    box.write("data/a.txt", "data-a")
    (box.root / "data" / "out").mkdir()
    results = box.probe(
        "expose-rw=.",
        "expose-ro=data",
        "expose-rw=data/out",
        body="""
        call("ro", native_write, "data/a.txt", "overwritten")
        call("ro_new", native_write, "data/new.txt")
        call("rw_again", native_write, "data/out/new.txt")
        call("rw", native_write, "top.txt")
        """,
    )
    assert results["ro"] in REFUSED and results["ro_new"] in REFUSED, results
    assert (box.root / "data" / "a.txt").read_text() == "data-a"
    assert not (box.root / "data" / "new.txt").exists()
    # the pair: the writable exposures around and inside it are written on the host
    assert (results["rw_again"], results["rw"]) == ("ok", "ok")
    assert (box.root / "data" / "out" / "new.txt").read_text() == "written"
