"""The import guard under ``python-sb``: ``python-import=`` by top-level name.

Observed behaviour documented here: an import is charged to the code that asks for it. The
standard library's own imports are free (``python-import=csv`` is enough for ``csv``, which
imports ``_csv``), a module of the program or a third-party library pays for its imports, and
an already-loaded module (``os``) still needs a rule when the program imports it.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest


def refused(name: str) -> str:
    return f"RuleModuleNotFoundError: Module named '{name}' is not allowed by a rule"


@pytest.mark.parametrize("allowed", [True, False], ids=["with-rule", "without-rule"])
def test_an_import_needs_a_rule(project: Any, provider: str, allowed: bool) -> None:
    program = """
    def load():
        import csv
        return next(csv.reader(["a,b"]))
    attempt("csv", load)
    """
    run = project.run(program, "python-import=csv" if allowed else "", provider=provider)
    assert run.outcome("csv") == ("OK ['a', 'b']" if allowed else refused("csv"))


def test_an_uncaught_import_refusal_prints_the_rule_to_add(project: Any, provider: str) -> None:
    run = project.run("import csv\n", "python-import=json", provider=provider)
    assert run.returncode == 1
    assert run.stderr.endswith(
        f"pysandboxes.errors.{refused('csv')}\nAdd `python-import=csv` to the rule file to allow it.\n"
    )


def test_star_allows_every_module(project: Any, provider: str) -> None:
    program = """
    import csv, xml.dom.minidom
    attempt("modules", lambda: (csv.__name__, xml.dom.minidom.parseString("<a/>").documentElement.tagName))
    """
    run = project.run(program, "python-import=*", provider=provider)
    assert run.outcomes() == {"modules": "OK ('csv', 'a')"}


@pytest.mark.parametrize("allowed", [True, False], ids=["with-rule", "without-rule"])
def test_a_submodule_is_covered_by_its_top_level_name(project: Any, provider: str, allowed: bool) -> None:
    program = """
    def load():
        import xml.etree.ElementTree as ET
        return ET.fromstring("<a><b/></a>")[0].tag
    attempt("xml.etree", load)
    """
    run = project.run(program, "python-import=xml" if allowed else "python-import=json", provider=provider)
    assert run.outcome("xml.etree") == ("OK 'b'" if allowed else refused("xml"))


@pytest.mark.parametrize("allowed", [True, False], ids=["with-rule", "without-rule"])
def test_an_already_loaded_module_is_judged_for_the_program(
    project: Any, provider: str, allowed: bool
) -> None:
    program = """
    import sys
    attempt("loaded before", lambda: "os" in sys.modules)
    def statement():
        import os
        return os.sep
    def from_import():
        from os import sep
        return sep
    import importlib
    attempt("import os", statement)
    attempt("from os import", from_import)
    attempt("import_module", lambda: importlib.import_module("os").sep)
    """
    rules = "python-import=importlib" + (", os" if allowed else "")
    run = project.run(program, rules, provider=provider)
    outcome = "OK '/'" if allowed else refused("os")
    assert run.outcomes() == {
        "loaded before": "OK True",
        "import os": outcome,
        "from os import": outcome,
        "import_module": outcome,
    }


def test_the_standard_library_imports_what_it_needs_but_the_programs_modules_pay(
    project: Any, provider: str
) -> None:
    # csv imports _csv, json imports json.decoder and _json: free. helper.py (the program's own
    # module) importing csv is charged to the program.
    (project.root / "helper.py").write_text("import csv\n")
    program = """
    import sys
    attempt("_csv before", lambda: "_csv" in sys.modules)
    def load(name):
        return __import__(name, globals()).__name__
    attempt("csv", load, "csv")
    attempt("_csv after", lambda: "_csv" in sys.modules)
    attempt("helper", load, "helper")
    """
    rules = "expose-ro=@PROJECT@\npython-import=helper, json"
    run = project.run(program, rules, provider=provider)
    assert run.outcomes() == {
        "_csv before": "OK False",
        "csv": refused("csv"),
        "_csv after": "OK False",
        "helper": refused("csv"),
    }
    run = project.run(program, "expose-ro=@PROJECT@\npython-import=helper, csv", provider=provider)
    assert run.outcomes() == {
        "_csv before": "OK False",
        "csv": "OK 'csv'",
        "_csv after": "OK True",
        "helper": "OK 'helper'",
    }


def test_pysandboxes_needs_no_rule(project: Any, provider: str) -> None:
    program = """
    from pysandboxes.errors import SandBoxError, sandbox_denials
    try:
        import csv
    except SandBoxError as e:
        print("caught", sandbox_denials(e))
    """
    run = project.run(program, "", provider=provider)
    assert (run.returncode, run.stderr) == (0, "")
    assert run.stdout == (
        "caught [\"RuleModuleNotFoundError: Module named 'csv' is not allowed by a rule\\n"
        'Add `python-import=csv` to the rule file to allow it."]\n'
    )


# -- bugs --------------------------------------------------------------------------------------


def test_a_bare_dunder_import_of_a_loaded_module_is_judged(project: Any, provider: str) -> None:
    run = project.run('attempt("__import__", lambda: __import__("os").sep)\n', "", provider=provider)
    assert run.outcome("__import__") == refused("os")


@pytest.mark.xfail(
    strict=True,
    reason="Python-layer limit (docs/security-model.md §5): an import done by stdlib code on the program's behalf is free: "
    "warnings._setoption('ignore::csv.Error') imports csv without a rule",
)
def test_stdlib_code_importing_by_name_for_the_program_is_charged(project: Any, provider: str) -> None:
    program = """
    import sys
    attempt("setoption", sys.modules["warnings"]._setoption, "ignore::csv.Error")
    attempt("csv loaded", lambda: "csv" in sys.modules)
    """
    run = project.run(program, "", provider=provider)
    assert run.outcomes() == {"setoption": refused("csv"), "csv loaded": "OK False"}


def test_a_module_using_named_unicode_escapes_imports(project: Any, provider: str) -> None:
    (project.root / "helper.py").write_text('BOM = "\\N{BYTE ORDER MARK}"\n')
    program = 'attempt("helper", lambda: __import__("helper", globals()).BOM)\n'
    run = project.run(program, "expose-ro=@PROJECT@\npython-import=helper", provider=provider)
    assert run.outcome("helper") == "OK '\\ufeff'"


@pytest.mark.xfail(
    strict=True,
    reason="Python-layer limit (docs/security-model.md §5): a module's code runs without a rule when the program calls a finder and a loader "
    "itself (sys.meta_path's PathFinder.find_spec + loader.exec_module raise no 'import' event)",
)
def test_a_module_cannot_be_loaded_around_the_import_system(project: Any, provider: str) -> None:
    program = """
    import sys
    def load(name):
        finder = [f for f in sys.meta_path if getattr(f, "__name__", "") == "PathFinder"][0]
        spec = finder.find_spec(name)
        module = type(sys)(name)
        module.__spec__ = spec
        spec.loader.exec_module(module)
        return next(module.reader(["a,b"]))
    attempt("csv", load, "csv")
    """
    run = project.run(program, "", provider=provider)
    assert run.outcome("csv") == refused("csv")


@pytest.mark.parametrize(
    "statement", ["import oldmod", "importlib.import_module('oldmod')", "__import__('oldmod')"]
)
def test_an_import_time_warning_names_the_importer_as_under_python(
    project: Any, provider: str, statement: str
) -> None:
    # warnings skips importlib's frames for stacklevel; the guards' wrappers must be skipped too
    (project.root / "oldmod.py").write_text(
        'import warnings\nwarnings.warn("oldmod is old", DeprecationWarning, stacklevel=2)\n'
    )
    program = f"""
    import importlib, warnings
    def load():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            {statement}
        return [(w.filename, w.lineno, str(w.message)) for w in caught]
    attempt("warnings", load)
    """
    rules = "expose-ro=@PROJECT@\npython-import=importlib, warnings, oldmod"
    run = project.run(program, rules, provider=provider)
    python = subprocess.run(
        [sys.executable, project.program.name], cwd=project.root, capture_output=True, text=True, timeout=30
    )
    assert (python.returncode, python.stderr) == (0, ""), python
    assert run.outcome("warnings") == python.stdout.partition(" -> ")[2].rstrip("\n")
    if not statement.startswith("importlib."):  # import_module's own line is named, as under python
        assert str(project.program) in run.outcome("warnings")
