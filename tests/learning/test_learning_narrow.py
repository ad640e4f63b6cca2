"""Issue 18 §1-§2: a learned profile passes its first strict run, and holds only narrow rules.

Each test learns (``python-sb --learn``), asserts the learned lines, then runs the same program
strictly under the learned file and asserts it prints what the learning run printed.
"""

from __future__ import annotations

from .conftest import Learn


def _round_trip(learn: Learn, *args: str, env: dict[str, str] | None = None) -> list[str]:
    """Learn, then run strictly: both print the same; the learning run's output."""
    learned = learn.learn(*args, env=env)
    assert learn.strict(*args, env=env).lines == learned.lines
    return learned.lines


def test_a_library_importing_a_module_the_runtime_holds_learns_it(learn: Learn) -> None:
    # the learning runtime holds threading already; a strict run does not
    learn.write("vendor/site-packages/usesthreads.py", "import threading\nNAME = threading.__name__\n")
    learn.write("app.py", "import usesthreads\nprint(usesthreads.NAME)\n")
    env = {"PYTHONPATH": str(learn.root / "vendor/site-packages")}
    assert _round_trip(learn, "app.py", env=env) == ["threading"]
    assert "python-import=threading" in learn.block("imports")


def test_a_file_opened_by_module_code_at_import_is_learned(learn: Learn) -> None:
    learn.write("data/x.txt", "hi\n")
    learn.write(
        "lib/reader.py",
        'import os\nHERE = os.path.dirname(os.path.abspath(__file__))\nTEXT = open(HERE + "/../data/x.txt").read()\n',
    )
    learn.write(
        "app.py", 'import sys\nsys.path.insert(0, "lib")\nimport reader\nprint(reader.TEXT.strip())\n'
    )
    assert _round_trip(learn, "app.py") == ["hi"]
    assert learn.block("files") == ["expose-ro=./data", "expose-ro=./lib"]


def test_resolving_the_program_path_exposes_no_parent(learn: Learn) -> None:
    learn.write("data/n.txt", "hi\n")
    learn.write(
        "app.py",
        'from pathlib import Path\nprint((Path(__file__).resolve().parent / "data/n.txt").read_text().strip())\n',
    )
    assert _round_trip(learn, "app.py") == ["hi"]
    assert learn.block("files") == ["expose-ro=./data"]


def test_a_variable_read_by_name_after_a_scan_is_granted(learn: Learn) -> None:
    learn.write("app.py", 'import os\nsnapshot = dict(os.environ)\nprint(os.getenv("APP_MODE"))\n')
    env = {"APP_MODE": "fast", "OTHER_SECRET": "s"}
    assert _round_trip(learn, "app.py", env=env) == ["fast"]
    lines = learn.block("env")
    assert "env=APP_MODE=${APP_MODE}" in lines
    assert "#env=OTHER_SECRET=${OTHER_SECRET}  # listed by a scan of os.environ only" in lines


def test_an_unset_variable_is_learned_commented_out(learn: Learn) -> None:
    learn.write("app.py", 'import os\nprint(os.getenv("APP_MODE"), os.getenv("APP_UNSET"))\n')
    assert _round_trip(learn, "app.py", env={"APP_MODE": "fast"}) == ["fast None"]
    assert learn.block("env") == [
        "env=APP_MODE=${APP_MODE}",
        "# read by name but not set while learning: uncomment those the program may be given",
        "#env=APP_UNSET=${APP_UNSET}  # absent while learning",
    ]


def test_a_failed_optional_import_is_learned_commented_out(learn: Learn) -> None:
    learn.write(
        "app.py",
        "try:\n    import not_installed_here\nexcept ImportError:\n    print('absent')\nimport json\n",
    )
    assert _round_trip(learn, "app.py") == ["absent"]
    assert learn.block("imports") == [
        "# Standard library",
        "python-import=json",
        "# Tried, absent: not installed while learning (optional imports that failed)",
        "#python-import=not_installed_here",
    ]


PROBE = """
import socket
probe = socket.socket(socket.AF_INET6)
try:
    probe.bind(("::1", 0))
    print("ipv6")
except OSError:
    print("ipv6")  # urllib3 falls back quietly: the output does not depend on it
probe.close()
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen(1)
server.close()
print("done")
"""


def test_an_ephemeral_bind_probe_is_no_listening_right(learn: Learn) -> None:
    learn.write("app.py", PROBE)
    assert _round_trip(learn, "app.py") == ["ipv6", "done"]
    assert [line for line in learn.block("network") if "net=" in line] == [
        "net=ALLOW|tcp|127.0.0.1|*|IN",  # bound, then listened: a right
        "#net=ALLOW|tcp|::1|*|IN  # a probe: bound to port 0, then neither listened nor connected",
    ]


def test_harmless_devices_need_no_rule(learn: Learn) -> None:
    learn.write(
        "app.py",
        'open("/dev/null", "w").write("x")\nprint(len(open("/dev/urandom", "rb").read(4)), open("/dev/zero", "rb").read(1))\n',
    )
    outcome = learn.run("--learn", "app.py")
    assert (outcome.returncode, outcome.lines) == (0, ["4 b'\\x00'"]), outcome
    assert learn.block("files") == []
    assert learn.strict("app.py").lines == ["4 b'\\x00'"]


def test_other_devices_stay_refused(learn: Learn) -> None:
    learn.rules("python-import=os")
    learn.write(
        "app.py",
        """
        import os
        for device in ("/dev/null", "/dev/kmsg"):
            try:
                os.stat(device)
                print("seen")
            except OSError as exc:
                print(type(exc).__name__)
        """,
    )
    assert learn.run("app.py").lines == ["seen", "RuleFileNotFoundError"]
    assert learn.python("app.py").lines == ["seen", "seen"]


def test_a_dotenv_read_is_a_note_not_a_rule(learn: Learn) -> None:
    learn.write(".env", "OTHER_SECRET=y\n")
    learn.write("data/x.txt", "hi\n")
    learn.write(
        "app.py",
        """
        try:
            open(".env").read()
        except FileNotFoundError:
            pass
        print(open("data/x.txt").read().strip())
        """,
    )
    assert _round_trip(learn, "app.py") == ["hi"]
    assert learn.block("files") == [
        "expose-ro=./data",
        "# note: the program read ./.env: not learned, it holds secrets. Pass the variables it needs with "
        "env=NAME=${NAME} (see docs/learning.md, .env files)",
    ]


def test_searching_distributions_exposes_no_sys_path_directory(learn: Learn) -> None:
    # for -c, sys.path[0] is the working directory: importlib.metadata lists it too
    learn.write(".env", "OTHER_SECRET=y\n")
    program = "import importlib.metadata as m; print(m.version('pysandboxes') != '')"
    assert _round_trip(learn, "-c", program) == ["True"]
    assert learn.block("files") == []


def test_a_command_stats_its_working_directory_with_no_rule(learn: Learn) -> None:
    # load_dotenv() checks that the directory it searches from exists: for -c, the working one
    program = "import os; print(os.path.isdir(os.getcwd()), os.path.isfile('.env'))"
    learn.write(".env", "OTHER_SECRET=y\n")
    outcome = learn.run("--learn", "-c", program)
    assert (outcome.returncode, outcome.lines) == (0, ["True True"]), outcome
    assert [line for line in learn.block("files") if not line.startswith("# note: ")] == []
    assert learn.strict("-c", program).lines == ["True False"]  # the directory, not the .env
