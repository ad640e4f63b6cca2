"""``pysandboxes.load_dotenv()``: the application's ``.env`` is read once, in the host, before
the sandbox starts; the sandbox sees only what its ``env=`` rules give it, and never reads the
file itself. Each test runs a real host program (see conftest.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .conftest import RUN_TIMEOUT, Project

PYTHON_SB = str(Path(sys.executable).parent / "python-sb")

TOOLS = """
import os
from pysandboxes import sandbox, load_dotenv

@sandbox
def token():
    return os.environ.get("API_TOKEN")

@sandbox
def load_inside():
    return load_dotenv(), os.environ.get("API_TOKEN")
"""


def _dotenv(project: Project) -> None:
    project.write(".env", "API_TOKEN=from-dotenv\nOTHER=x\n")
    project.tools(TOOLS)


def test_the_host_loads_the_file_next_to_its_code_once(project: Project) -> None:
    _dotenv(project)
    project.host(
        """
        import os
        from pysandboxes import load_dotenv
        print(load_dotenv(), os.environ.get("API_TOKEN"), os.environ.get("OTHER"))
        print(load_dotenv())  # once
        """
    )
    assert project.ok() == ["True from-dotenv x", "False"]
    # the pair: python-dotenv's own switch turns it off
    assert project.ok(env={"PYTHON_DOTENV_DISABLED": "1"}) == ["False None None", "False"]


def test_the_child_sees_a_loaded_variable_only_through_an_env_rule(project: Project) -> None:
    _dotenv(project)
    project.host(
        """
        from pysandboxes import load_dotenv, sandboxes
        load_dotenv()
        import tools
        with sandboxes():
            print(tools.token())
        """
    )
    project.rules("subprocess", "env=API_TOKEN=${API_TOKEN}")
    assert project.ok() == ["from-dotenv"]
    project.rules("subprocess")
    assert project.ok() == ["None"]


def test_the_child_never_reads_the_file_itself(project: Project) -> None:
    _dotenv(project)
    project.host(
        """
        from pysandboxes import sandboxes
        import tools
        with sandboxes():
            print(tools.load_inside())
        """
    )
    # even with the project (and its .env) readable, the child's load_dotenv() reads nothing
    project.rules("subprocess", "expose-ro=.", "python-import=dotenv")
    assert project.ok() == ["(False, None)"]


def test_under_python_sb_nothing_is_read(project: Project) -> None:
    _dotenv(project)
    project.host(
        """
        import os
        from pysandboxes import load_dotenv
        print(load_dotenv(), os.environ.get("API_TOKEN"))
        """,
        "app.py",
    )
    project.rules("subprocess", "expose-ro=.", "python-import=os")
    done = subprocess.run(
        [PYTHON_SB, "app.py"],
        cwd=project.root,
        env=project.environ(),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "False None\n", ""), done
    # the pair: the same program without the sandbox loads it
    assert project.ok("app.py") == ["True from-dotenv"]


def test_loading_after_the_sandbox_started_warns(project: Project) -> None:
    _dotenv(project)
    project.host(
        """
        import warnings
        from pysandboxes import load_dotenv, sandboxes
        import tools
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with sandboxes():
                tools.token()
                load_dotenv()
                print(tools.token())
        print([str(w.message).split(":")[0] for w in caught])
        """
    )
    project.rules("subprocess", "env=API_TOKEN=${API_TOKEN}")
    assert project.ok() == [
        "None",
        f"[\"load_dotenv('{project.root / '.env'}') after the sandbox started\"]",
    ]


def test_without_python_dotenv_the_error_names_the_extra(project: Project) -> None:
    _dotenv(project)
    project.host(
        """
        import sys
        sys.modules["dotenv"] = None  # not installed
        from pysandboxes import load_dotenv
        try:
            load_dotenv()
        except ModuleNotFoundError as exc:
            print(exc)
        """
    )
    assert project.ok() == [
        "pysandboxes.load_dotenv() reads .env files with python-dotenv, which is not installed: "
        "pip install 'pysandboxes[dotenv]'"
    ]


def test_while_learning_a_library_in_the_child_loads_no_dotenv(project: Project) -> None:
    project.write(".env", "API_TOKEN=from-dotenv\n")
    project.tools(
        """
        import os
        import dotenv
        from pysandboxes import sandbox

        @sandbox
        def library_call():
            # what crewai, smolagents and litellm do at import: load the nearest .env
            return dotenv.load_dotenv(), os.environ.get("API_TOKEN")
        """
    )
    project.host(
        """
        from pysandboxes import sandboxes
        import tools
        with sandboxes(learn="learned.py-sandboxes"):
            print(tools.library_call())
        """
    )
    outcome = project.run()
    assert outcome.returncode == 0, outcome
    assert outcome.lines == ["(False, None)"]
    learned = (project.root / "learned.py-sandboxes").read_text()
    # no right to the .env's directory, no active env= line for its names (the tool's own read
    # of API_TOKEN is noted as absent), nothing of the switch itself
    lines = learned.splitlines()
    assert not [line for line in lines if line.startswith(("env=API_TOKEN", "expose-ro=."))], learned
    assert "PYTHON_DOTENV_DISABLED" not in learned, learned
    # the pair: in the host, the same library call loads the file
    project.host(
        """
        import os
        import dotenv
        print((dotenv.load_dotenv(), os.environ.get("API_TOKEN")))
        """
    )
    assert project.ok() == ["(True, 'from-dotenv')"]
