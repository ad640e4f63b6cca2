"""Learning mode in complete mode (``python-sb --learn``), end to end.

Round trips per family (learn, then the same script runs strictly with the same output, and
a variant doing one more thing is refused), idempotence and backups, the triggers, the
``learn=false`` lock, injection attempts through crafted names, Ctrl-C and SIGTERM, the
refusals no rule can lift, and the ``.env`` advice. Known product bugs are strict xfails
whose reason starts with "bug:".
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess

import pytest

from .conftest import BANNER, PYTHON, PYTHON_SB, REVIEW, RULES, TIMEOUT, Learn, Server, free_port

#: the comment above the variables read but unset while learning
ABSENT = "# read by name but not set while learning: uncomment those the program may be given"

# -- round trips ------------------------------------------------------------------------------


def test_env_round_trip(learn: Learn) -> None:
    learn.write(
        "app.py",
        """
        import os, sys
        print(os.getenv("APP_TOKEN"), os.environ["APP_MODE"], "APP_FLAG" in os.environ)
        print(os.environ.get("APP_MISSING"))
        if sys.argv[1:] == ["more"]:
            print(os.getenv("APP_OTHER"))
        """,
    )
    env = {"APP_TOKEN": "t0k", "APP_MODE": "fast", "APP_FLAG": "1", "APP_OTHER": "secret"}
    learned = learn.learn("app.py", env=env)
    assert learned.lines == ["t0k fast True", "None"]
    assert learned.errors[1:] == [
        "python-sb: learned 5 rules into ./.py-sandboxes (env 4, imports 1)",
        REVIEW.format(shown="./.py-sandboxes"),
    ]
    assert learn.block("env") == [
        "env=APP_FLAG=${APP_FLAG}",
        "env=APP_MODE=${APP_MODE}",
        "env=APP_TOKEN=${APP_TOKEN}",
        ABSENT,
        "#env=APP_MISSING=${APP_MISSING}  # absent while learning",
    ]
    assert learn.strict("app.py", env=env).lines == learned.lines
    # one more variable: the strict run does not see it
    assert learn.strict("app.py", "more", env=env).lines == [*learned.lines, "None"]
    assert learn.python("app.py", "more", env=env).lines == [*learned.lines, "secret"]


def test_files_round_trip(learn: Learn) -> None:
    learn.write("data/in.txt", "hello\n")
    learn.write("other/x.txt", "other\n")
    learn.mkdir("out")
    learn.write(
        "app.py",
        """
        import sys
        print(open("data/in.txt").read().strip())
        with open("out/o.txt", "w") as f:
            f.write("written")
        if sys.argv[1:] == ["read-more"]:
            print(open("other/x.txt").read().strip())
        if sys.argv[1:] == ["write-more"]:
            open("data/new.txt", "w").close()
        """,
    )
    learned = learn.learn("app.py")
    assert learned.lines == ["hello"]
    assert learn.block("files") == ["expose-ro=./data", "expose-rw=./out"]
    (learn.root / "out/o.txt").unlink()
    assert learn.strict("app.py").lines == ["hello"]
    assert (learn.root / "out/o.txt").read_text() == "written"

    refused = learn.run("app.py", "read-more")
    assert refused.returncode == 1
    assert refused.errors[-2:] == [
        f"pysandboxes.errors.RuleFileNotFoundError: Access to '{learn.root}/other/x.txt' must be accepted by a rule.",
        f"Add `expose-ro={learn.root}/other` to the rule file to allow it.",
    ]
    refused = learn.run("app.py", "write-more")
    assert refused.returncode == 1
    assert refused.errors[-2].startswith(
        f"pysandboxes.errors.RulePermissionError: Cannot write to '{learn.root}/data/new.txt'"
    ), refused
    assert not (learn.root / "data/new.txt").exists()


NET_APP = """
import socket, sys
port, listen = int(sys.argv[1]), int(sys.argv[2])
with socket.create_connection(("127.0.0.1", port)) as c:
    c.sendall(b"ping")
    print(c.recv(4).decode())
with socket.socket() as s:
    s.bind(("127.0.0.1", listen))
    s.listen()
    print("listening")
"""


def test_network_round_trip(learn: Learn, server: Server, other_server: Server) -> None:
    learn.write("app.py", NET_APP)
    listen = free_port()
    learned = learn.learn("app.py", str(server.port), str(listen))
    assert learned.lines == ["pong", "listening"]
    assert learn.block("network") == [
        f"net=ALLOW|tcp|127.0.0.1|{listen}|IN",
        f"net=ALLOW|tcp|127.0.0.1|{server.port}|OUT",
    ]
    assert learn.strict("app.py", str(server.port), str(listen)).lines == ["pong", "listening"]

    # another server: refused
    refused = learn.run("app.py", str(other_server.port), str(listen))
    assert refused.returncode == 1
    assert refused.errors[-2] == (
        "pysandboxes.errors.RuleSocketConnectionRefusedError: "
        f"Connection to [127.0.0.1]:{other_server.port} DENIED by implicit default policy"
    ), refused
    # another listening port: refused
    refused = learn.run("app.py", str(server.port), str(free_port()))
    assert refused.returncode == 1
    assert refused.lines == ["pong"]
    assert "DENIED by implicit default policy" in refused.errors[-2], refused


def test_a_port_read_from_a_variable_is_learned_as_the_variable(learn: Learn, server: Server) -> None:
    learn.write(
        "app.py",
        """
        import os, socket
        with socket.create_connection(("127.0.0.1", int(os.environ["APP_PORT"]))) as c:
            c.sendall(b"ping")
            print(c.recv(4).decode())
        """,
    )
    env = {"APP_PORT": str(server.port)}
    learn.learn("app.py", env=env)
    assert learn.block("env") == ["env=APP_PORT=${APP_PORT}"]
    assert learn.block("network") == ["net=ALLOW|tcp|127.0.0.1|${APP_PORT}|OUT"]
    assert learn.strict("app.py", env=env).lines == ["pong"]


def test_network_host_name_is_learned_as_the_name(learn: Learn, server: Server) -> None:
    learn.write(
        "app.py",
        """
        import socket, sys
        with socket.create_connection(("localhost", int(sys.argv[1]))) as c:
            c.sendall(b"ping")
            print(c.recv(4).decode())
        """,
    )
    learn.learn("app.py", str(server.port))
    assert learn.block("network") == [f"net=ALLOW|tcp|localhost|{server.port}|OUT"]
    assert learn.strict("app.py", str(server.port)).lines == ["pong"]


def test_imports_round_trip_with_groups(learn: Learn) -> None:
    learn.write(
        "app.py",
        """
        import sys
        import csv, json, pickle
        import iniconfig
        print("imported")
        if sys.argv[1:] == ["more"]:
            import sqlite3
        """,
    )
    learned = learn.learn("app.py")
    assert learned.lines == ["imported"]
    lines = learn.block("imports")
    assert lines[:2] == [
        "# ⚠ Dangerous: they run code, load native code or rebuild objects",
        "python-import=pickle",
    ]
    assert lines[2] == "# Standard library"
    standard = {n.strip() for line in lines[3:-2] for n in line.removeprefix("python-import=").split(",")}
    assert {"csv", "json"} <= standard
    assert not standard & {"pickle", "iniconfig", "sqlite3"}
    assert lines[-2:] == ["# Third-party: check where each one comes from", "python-import=iniconfig"]
    assert learn.strict("app.py").lines == ["imported"]

    refused = learn.run("app.py", "more")
    assert refused.returncode == 1
    assert refused.errors[-2:] == [
        "pysandboxes.errors.RuleModuleNotFoundError: Module named 'sqlite3' is not allowed by a rule",
        "Add `python-import=sqlite3` to the rule file to allow it.",
    ]


def test_api_function_round_trip(learn: Learn) -> None:
    learn.write(
        "app.py",
        """
        import os, sys
        print(os.nice(0) >= 0)
        if sys.argv[1:] == ["more"]:
            os.setpgrp()
        """,
    )
    learn.learn("app.py")
    assert learn.block("api") == [
        "# process-control: signal, renice or limit processes",
        "python-api=ALLOW:os.nice",
    ]
    assert learn.strict("app.py").lines == ["True"]
    refused = learn.run("app.py", "more")
    assert refused.returncode == 1
    assert refused.lines == ["True"]
    assert refused.errors[-2] == (
        "pysandboxes.errors.RuleApiPermissionError: os.setpgrp() is denied by the API guard "
        "(category: process-control)."
    ), refused


def test_eval_round_trip_learns_the_sub_language(learn: Learn) -> None:
    learn.write(
        "app.py",
        """
        import sys
        namespace = {}
        exec(compile("x = 6 * 7", "<s>", "exec"), namespace)
        print(eval("x", namespace), eval("[n * 2 for n in range(3)]"))
        if sys.argv[1:] == ["more"]:
            print(eval("1 < 2"))
        """,
    )
    learned = learn.learn("app.py")
    assert learned.lines == ["42 [0, 2, 4]"]
    assert learn.block("eval") == ["eval-syntax=arith, assign, comprehension", "eval-call=range"]
    assert learn.block("api") == []  # exec() of the program's own compile() needs no grant
    assert learn.strict("app.py").lines == learned.lines
    refused = learn.run("app.py", "more")
    assert refused.returncode == 1
    assert refused.errors[-2].startswith("pysandboxes.errors.EvalSyntaxRejected: "), refused
    assert "eval-syntax=compare" in "\n".join(refused.errors), refused


def test_eval_learning_never_combines_with_raw_dynamic_code(learn: Learn) -> None:
    learn.rules("python-api=ALLOW:builtins.exec", "python-api=ALLOW:builtins.compile")
    learn.write("app.py", 'print(eval("6 * 7"))\n')
    learn.learn("app.py")
    # eval-* lines next to python-api=ALLOW:builtins.* would not load
    assert not [line for line in learn.text().splitlines() if line.startswith("eval-")]
    assert learn.block("api") == [
        "# ⚠ dynamic-code: run code given as a string or built as a code object (see the eval-* rules "
        "for a guarded alternative)",
        "python-api=ALLOW:builtins.eval",  # the category holds types.CodeType too, not used here
    ]
    assert learn.strict("app.py").lines == ["42"]


def test_a_foreign_code_object_needs_the_api_grant(learn: Learn) -> None:
    learn.write("app.py", "code = (lambda: 42).__code__\nprint(eval(code))\n")
    learn.learn("app.py")
    assert learn.block("api") == [
        "# ⚠ dynamic-code: run code given as a string or built as a code object (see the eval-* rules "
        "for a guarded alternative)",
        "python-api=ALLOW:builtins.eval",
    ]
    assert learn.strict("app.py").lines == ["42"]


def test_a_module_with_bytecode_round_trips(learn: Learn) -> None:
    learn.write("lib/helper.py", "X = 1\n")
    learn.write("app.py", 'import sys\nsys.path.insert(0, "lib")\nimport helper\nprint(helper.X)\n')
    assert learn.python("app.py").lines == ["1"]  # writes lib/__pycache__, as any earlier run would
    learn.learn("app.py")
    assert learn.block("files") == ["expose-ro=./lib"]
    assert learn.strict("app.py").lines == ["1"]


def test_a_module_without_bytecode_round_trips(learn: Learn) -> None:
    learn.write("lib/helper.py", "X = 1\n")
    learn.write("app.py", 'import sys\nsys.path.insert(0, "lib")\nimport helper\nprint(helper.X)\n')
    learn.learn("app.py", env={"PYTHONDONTWRITEBYTECODE": "1"})
    assert learn.block("files") == ["expose-ro=./lib"]
    assert learn.block("imports") == [
        "# Third-party: check where each one comes from",
        "python-import=helper",
    ]
    assert learn.strict("app.py", env={"PYTHONDONTWRITEBYTECODE": "1"}).lines == ["1"]


def test_an_asyncio_program_learns_no_dynamic_code(learn: Learn) -> None:
    # types.coroutine (asyncio) rebuilds code objects: the standard library's, not a grant to learn
    learn.write("app.py", "import asyncio\nasync def main():\n    return 42\nprint(asyncio.run(main()))\n")
    outcome = learn.run("--learn=learned.rules", "app.py")
    assert (outcome.returncode, outcome.lines) == (0, ["42"]), outcome
    assert learn.block("api", "learned.rules") == []
    assert learn.block("imports", "learned.rules") == ["# Standard library", "python-import=asyncio"]
    assert learn.strict("--pysandboxes-config=learned.rules", "app.py").lines == ["42"]


def test_a_code_object_built_by_the_program_learns_only_that(learn: Learn) -> None:
    learn.write(
        "app.py",
        """
        import types
        renamed = (lambda: 42).__code__.replace(co_name="answer")
        print(types.FunctionType(renamed, {})())
        """,
    )
    learn.learn("app.py")
    assert learn.block("api") == [
        "# ⚠ dynamic-code: run code given as a string or built as a code object (see the eval-* rules "
        "for a guarded alternative)",
        "python-api=ALLOW:types.CodeType",
    ]
    assert learn.strict("app.py").lines == ["42"]


def test_a_started_program_learns_its_directory(learn: Learn) -> None:
    learn.rules()
    learn.write(
        "app.py",
        """
        import subprocess
        print(subprocess.run(["echo", "hi"], capture_output=True, text=True).stdout.strip())
        """,
    )
    echo = shutil.which("echo", path=learn.environ["PATH"])
    assert echo is not None
    learn.learn("app.py")
    assert learn.block("files") == [f"expose-ro={os.path.dirname(os.path.realpath(echo))}"]
    assert learn.strict("app.py").lines == ["hi"]


# -- idempotence and backups -----------------------------------------------------------------


def test_a_second_identical_run_adds_nothing(learn: Learn) -> None:
    learn.write("data/in.txt", "x\n")
    learn.write("app.py", 'import os\nos.getenv("APP_V")\nprint(open("data/in.txt").read().strip())\n')
    learn.learn("app.py")
    first = (learn.root / RULES).read_bytes()
    assert learn.files() == [RULES, "app.py", "data"]

    again = learn.run("--learn", "app.py")
    assert again.returncode == 0
    assert again.errors == [
        BANNER.format(target=learn.root / RULES),
        "python-sb: learning: nothing new for ./.py-sandboxes",
    ]
    assert (learn.root / RULES).read_bytes() == first
    assert learn.files() == [RULES, "app.py", "data"]


def test_a_run_that_adds_keeps_the_previous_file_as_backup(learn: Learn) -> None:
    learn.write("app.py", "import os, sys\nfor name in sys.argv[1:]:\n    os.getenv(name)\n")
    learn.learn("app.py", "V1")
    first = (learn.root / RULES).read_bytes()
    second = learn.learn("app.py", "V1", "V2")
    assert second.errors[1] == "python-sb: learned 1 rule into ./.py-sandboxes (env 1)"
    assert (learn.root / ".py-sandboxes.old").read_bytes() == first
    assert learn.block("env") == [
        ABSENT,
        "#env=V1=${V1}  # absent while learning",
        ABSENT,
        "#env=V2=${V2}  # absent while learning",
    ]
    previous = (learn.root / RULES).read_bytes()
    learn.learn("app.py", "V3")
    assert (learn.root / ".py-sandboxes.old").read_bytes() == first
    assert (learn.root / ".py-sandboxes.old_1").read_bytes() == previous


def test_a_rule_written_by_hand_is_not_learned_again(learn: Learn) -> None:
    learn.rules("env=APP_V=${APP_V}  # mine", "python-import=os")
    learn.write("app.py", 'import os\nprint(os.getenv("APP_V"))\n')
    before = (learn.root / RULES).read_bytes()
    outcome = learn.run("--learn", "app.py", env={"APP_V": "1"})
    assert outcome.errors[-1] == "python-sb: learning: nothing new for ./.py-sandboxes"
    assert (learn.root / RULES).read_bytes() == before


# -- triggers ------------------------------------------------------------------------------------


def test_learn_into_the_rule_file_in_use(learn: Learn) -> None:
    learn.rules("python-import=os")
    learn.write("app.py", 'import os\nprint(os.getenv("APP_V"))\n')
    before = learn.text()
    learn.learn("app.py", env={"APP_V": "1"})
    text = learn.text()
    assert text.startswith(before)
    assert text.splitlines()[2:] == [
        "",
        "# <learning_guard_envs>",
        text.splitlines()[4],
        "env=APP_V=${APP_V}",
        "# </learning_guard_envs>",
    ]
    assert text.splitlines()[4].startswith("# Added by learning on ")
    assert learn.strict("app.py", env={"APP_V": "1"}).lines == ["1"]


def test_learn_into_another_file_leaves_the_active_one_alone(learn: Learn) -> None:
    active = learn.rules("python-import=os")
    before = active.read_bytes()
    learn.write("app.py", 'import os, json\nprint(os.getenv("APP_V"))\n')
    outcome = learn.run("--learn=other.learn", "app.py", env={"APP_V": "1"})
    assert outcome.returncode == 0
    assert outcome.errors == [
        BANNER.format(target=learn.root / "other.learn"),
        "python-sb: learned 2 rules into ./other.learn (env 1, imports 1)",
        REVIEW.format(shown="./other.learn"),
    ]
    assert active.read_bytes() == before
    assert learn.files() == [RULES, "app.py", "other.learn"]
    text = learn.text("other.learn")
    assert text.startswith("# .py-sandboxes: what this program may touch.\n")  # the template
    assert learn.block("env", "other.learn") == ["env=APP_V=${APP_V}"]
    assert learn.block("imports", "other.learn") == ["# Standard library", "python-import=json"]


def test_learn_line_in_the_profile(learn: Learn) -> None:
    learn.rules("learn=out.learn", "python-import=os")
    learn.write("app.py", 'import os\nprint(os.getenv("APP_V"))\n')
    before = learn.text()
    outcome = learn.run("app.py")
    assert outcome.returncode == 0
    assert outcome.lines == ["None"]
    assert outcome.errors[0] == BANNER.format(target=learn.root / "out.learn")
    assert learn.text() == before
    assert learn.block("env", "out.learn") == [ABSENT, "#env=APP_V=${APP_V}  # absent while learning"]


def test_learn_file_as_a_command_line_rule_and_cli_spelling(learn: Learn) -> None:
    learn.rules("python-import=os")
    learn.write("app.py", 'import os\nprint(os.getenv("APP_V"))\n')
    outcome = learn.run("--learn=sub.learn", "app.py")
    assert outcome.returncode == 0
    assert learn.block("env", "sub.learn") == [ABSENT, "#env=APP_V=${APP_V}  # absent while learning"]


def test_a_missing_rule_file_learns_and_creates_it(learn: Learn) -> None:
    learn.write("app.py", 'import os\nprint(os.getenv("APP_V"))\n')
    outcome = learn.run("app.py", env={"APP_V": "1"})
    assert outcome.returncode == 0
    assert outcome.lines == ["1"]
    assert outcome.errors == [
        BANNER.format(target=learn.root / RULES),
        "python-sb: learned 2 rules into ./.py-sandboxes (env 1, imports 1)",
        REVIEW.format(shown="./.py-sandboxes"),
    ]
    assert learn.block("env") == ["env=APP_V=${APP_V}"]
    assert learn.check().returncode == 0
    # the second run is strict
    assert learn.strict("app.py", env={"APP_V": "1"}).lines == ["1"]


def test_a_missing_rule_file_is_created_even_when_nothing_is_learned(learn: Learn) -> None:
    learn.write("app.py", 'print("hi")\n')
    outcome = learn.run("app.py")
    assert outcome.returncode == 0
    assert (learn.root / RULES).exists()
    assert learn.strict("app.py").lines == ["hi"]


# -- the learn=false lock ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "requested"),
    [("--learn", "--learn={root}/.py-sandboxes"), ("--learn=x.learn", "--learn=x.learn")],
)
def test_lock_refuses_learning_from_the_command_line(learn: Learn, option: str, requested: str) -> None:
    learn.rules("learn=false", "python-import=os")
    learn.write("app.py", 'print("ran")\n')
    before = learn.text()
    outcome = learn.run(option, "app.py")
    assert (outcome.returncode, outcome.stdout) == (2, "")
    shown = requested.format(root=learn.root)
    assert outcome.errors == [
        f".py-sandboxes(2): learning mode is forbidden by 'learn=false', but requested by {shown}"
    ]
    assert learn.text() == before
    assert learn.files() == [RULES, "app.py"]


def test_lock_in_the_user_profile_refuses_a_missing_rule_file(learn: Learn) -> None:
    profile = learn.home / ".config/py-sandboxes/user-py-sandboxes.profile"
    profile.parent.mkdir(parents=True)
    profile.write_text("learn=false\n")
    learn.write("app.py", 'print("ran")\n')
    outcome = learn.run("app.py")
    assert (outcome.returncode, outcome.stdout) == (2, "")
    assert outcome.errors == [
        "~/.config/py-sandboxes/user-py-sandboxes.profile(1): learning mode is forbidden by "
        f"'learn=false', but requested by the missing rule file '{learn.root / RULES}'; "
        "create it, or point to it"
    ]
    assert learn.files() == ["app.py"]


def test_lock_wins_over_a_learn_line_in_another_profile(learn: Learn) -> None:
    learn.rules("learn=false", 'include "more.rules"')
    learn.write("more.rules", "learn=x.learn\n")
    learn.write("app.py", 'print("ran")\n')
    outcome = learn.run("app.py")
    assert (outcome.returncode, outcome.stdout) == (2, "")
    assert learn.files() == [RULES, "app.py", "more.rules"]


# -- injection attempts ------------------------------------------------------------------------


def test_crafted_env_and_module_names_never_become_rules(learn: Learn) -> None:
    learn.write(
        "app.py",
        """
        import importlib, os
        os.getenv("BAD\\nexpose-rw=/")
        os.environ.get("A=B")
        os.getenv("WITH SPACE")
        "X\\nY" in os.environ
        for name in ["a\\nb", "os\\npython-import=*", "x y", "1abc"]:
            try:
                importlib.import_module(name)
            except ImportError:
                pass
        for name in ["a\\nexpose-rw=/", "q|r"]:
            try:
                __import__(name)
            except ImportError:
                pass
        print("done")
        """,
    )
    outcome = learn.learn("app.py")
    assert outcome.lines == ["done"]
    assert outcome.errors[3:] == [
        "python-sb: not written, invalid value: environment variable 'A=B': not a variable name",
        "python-sb: not written, invalid value: environment variable 'BAD\\nexpose-rw=/': not a variable name",
        "python-sb: not written, invalid value: environment variable 'WITH SPACE': not a variable name",
        "python-sb: not written, invalid value: environment variable 'X\\nY': not a variable name",
        "python-sb: not written, invalid value: module '1abc': not a module name",
        "python-sb: not written, invalid value: module 'a\\nb': not a module name",
        "python-sb: not written, invalid value: module 'a\\nexpose-rw=/': not a module name",
        "python-sb: not written, invalid value: module 'os\\npython-import=*': not a module name",
        "python-sb: not written, invalid value: module 'q|r': not a module name",
        "python-sb: not written, invalid value: module 'x y': not a module name",
    ]
    assert learn.block("env") == []
    assert learn.block("imports") == [
        "# ⚠ Dangerous: they run code, load native code or rebuild objects",
        "python-import=importlib",
        "# Standard library",
        "python-import=os",
    ]
    text = learn.text()
    assert "expose-rw=/\n" not in text and "python-import=*\n" not in text
    assert learn.check().returncode == 0


def test_crafted_paths_never_become_rules(learn: Learn) -> None:
    for name in ("we#ird", "dol${HOME}", "nl\nx"):
        learn.write(f"{name}/f", "a\n")
    learn.write("fine/f", "a\n")
    learn.write(
        "app.py",
        """
        for p in ["we#ird/f", "dol${HOME}/f", "nl\\nx/f", "fine/f"]:
            print(open(p).read().strip())
        """,
    )
    outcome = learn.learn("app.py")
    assert outcome.lines == ["a"] * 4
    assert outcome.errors[1:3] == [
        "python-sb: learned 1 rule into ./.py-sandboxes (files 1)",
        REVIEW.format(shown="./.py-sandboxes"),
    ]
    # long paths are shortened in the summary: compare the start and the reason
    refused = outcome.errors[3:]
    assert [line.partition("': it contains ")[2] for line in refused] == [
        "'#', which the rule language would read",
        "'$', which the rule language would read",
        "a control character",
    ]
    assert all(
        line.startswith(f"python-sb: not written, invalid value: path '{learn.root}"[:60]) for line in refused
    )
    assert learn.block("files") == ["expose-ro=./fine"]
    check = learn.check()
    assert check.returncode == 0, check


def test_odd_but_harmless_paths_round_trip(learn: Learn) -> None:
    names = ["it's", "back\\sl", "sp ace", "pi|pe", "eq=ual", "end\\"]
    for name in names:
        learn.write(f"{name}/f", "a\n")
    learn.write("app.py", f"for p in {names!r}:\n    print(open(p + '/f').read().strip())\n")
    learn.learn("app.py")
    assert learn.block("files") == sorted(f"expose-ro=./{n}" for n in names)
    assert learn.strict("app.py").lines == ["a"] * len(names)


HOSTS_APP = """
import socket
for host in ["bad\\nnet=ALLOW|tcp|*|*|OUT.invalid", "x|tcp|*.invalid"]:
    try:
        socket.create_connection((host, 80), timeout=2)
    except OSError as exc:
        print(type(exc).__name__)
print("done")
"""


def test_crafted_host_names_never_become_rules(learn: Learn) -> None:
    learn.write("app.py", HOSTS_APP)
    # in a network namespace of its own: no lookup can leave the machine
    outcome = learn.run("--learn", "app.py", prefix=["unshare", "--user", "--map-root-user", "--net"])
    assert outcome.returncode == 0, outcome
    assert outcome.lines == ["gaierror", "gaierror", "done"]
    assert outcome.errors[3:] == [
        "python-sb: not written, invalid value: host 'bad\\nnet=allow|tcp|*|*|out.invalid': not an address or a host name",
        "python-sb: not written, invalid value: host 'x|tcp|*.invalid': not an address or a host name",
    ]
    assert learn.block("network") == []
    assert learn.check().returncode == 0


def test_a_name_that_did_not_resolve_is_not_granted(learn: Learn) -> None:
    learn.write(
        "app.py",
        """
        import socket
        try:
            socket.getaddrinfo("nothing-here.invalid", 80)
        except OSError as exc:
            print(type(exc).__name__)
        """,
    )
    outcome = learn.run("--learn", "app.py", prefix=["unshare", "--user", "--map-root-user", "--net"])
    assert outcome.lines == ["gaierror"]
    assert not [line for line in learn.block("network") if line.startswith("net=")]


@pytest.mark.parametrize("call", ["getaddrinfo(NAME, 80)", "gethostbyname(NAME)"])
def test_a_lookup_is_learned_whichever_function_makes_it(learn: Learn, call: str) -> None:
    # gethostbyname's audit event carries the name only (getaddrinfo's: the name and the port)
    learn.write(
        "app.py",
        f"import socket\nNAME = 'nothing-here.invalid'\ntry:\n    socket.{call}\nexcept OSError as exc:\n    print(type(exc).__name__)\n",
    )
    outcome = learn.run("--learn", "app.py", prefix=["unshare", "--user", "--map-root-user", "--net"])
    assert outcome.lines == ["gaierror"]


@pytest.mark.parametrize("scan", ["os.environ.copy()", "list(os.environ.items())", "dict(os.environ)"])
def test_a_scan_of_the_environment_grants_nothing(learn: Learn, scan: str) -> None:
    learn.write("app.py", f"import os\nprint(len({scan}) > 0)\n")
    learn.run("--learn", "app.py", env={"MY_SECRET": "s"})
    env = learn.block("env")
    assert not [line for line in env if line.startswith("env=")], env
    assert "#env=MY_SECRET=${MY_SECRET}  # listed by a scan of os.environ only" in env


# -- Ctrl-C and SIGTERM --------------------------------------------------------------------------

SLEEPER = """
import os, time
open("data/in.txt").read()
os.getenv("APP_V")
print("ready", flush=True)
time.sleep(60)
"""


def _interrupted(learn: Learn, command: list[str], signum: int) -> tuple[int, str]:
    process = subprocess.Popen(
        command,
        cwd=learn.root,
        env=learn.env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == "ready\n"
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return process.returncode, stderr


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_still_writes_what_was_learned(learn: Learn, signum: int) -> None:
    learn.write("data/in.txt", "x\n")
    learn.write("app.py", SLEEPER)
    expected, _ = _interrupted(learn, [PYTHON, "app.py"], signum)
    status, stderr = _interrupted(learn, [PYTHON_SB, "--learn", "app.py"], signum)
    assert status == expected == -signum
    lines = stderr.splitlines()
    assert lines[0] == BANNER.format(target=learn.root / RULES)
    assert lines[-2:] == [
        "python-sb: learned 4 rules into ./.py-sandboxes (env 1, files 1, imports 2)",
        REVIEW.format(shown="./.py-sandboxes"),
    ]
    if signum == signal.SIGINT:
        assert "KeyboardInterrupt" in lines[-3]
    assert learn.block("env") == [ABSENT, "#env=APP_V=${APP_V}  # absent while learning"]
    assert learn.block("files") == ["expose-ro=./data"]
    assert learn.block("imports") == ["# Standard library", "python-import=os, time"]


def test_an_exception_and_sys_exit_still_write(learn: Learn) -> None:
    learn.write(
        "app.py",
        'import os, sys\nos.getenv("APP_V")\nif sys.argv[1:]:\n    sys.exit(3)\nraise ValueError("boom")\n',
    )
    raised = learn.run("--learn", "app.py")
    assert raised.returncode == 1
    assert raised.errors[-3:] == [
        "ValueError: boom",
        "python-sb: learned 2 rules into ./.py-sandboxes (env 1, imports 1)",
        REVIEW.format(shown="./.py-sandboxes"),
    ]
    (learn.root / RULES).unlink()
    exited = learn.run("--learn", "app.py", "x")
    assert exited.returncode == 3
    assert exited.errors[-2] == "python-sb: learned 2 rules into ./.py-sandboxes (env 1, imports 1)"


# -- refusals no rule can lift ---------------------------------------------------------------------


def test_explicit_deny_still_refuses_while_learning(learn: Learn) -> None:
    learn.rules("net=DENY|*|127.0.0.2|*|OUT", "python-import=socket")
    learn.write(
        "app.py",
        'import socket\nsocket.create_connection(("127.0.0.2", 9), timeout=2)\n',
    )
    before = learn.text()
    outcome = learn.run("--learn", "app.py")
    assert outcome.returncode == 1
    assert outcome.errors[-2:] == [
        "pysandboxes.errors.RuleSocketConnectionRefusedError: Connection to [127.0.0.2]:9 DENIED by "
        "explicit rule 'net=DENY|*|127.0.0.2|*|OUT' from .py-sandboxes(2)",
        "python-sb: learning: nothing new for ./.py-sandboxes",
    ]
    assert learn.text() == before


def test_ignored_path_in_an_exposed_directory_still_refused(learn: Learn) -> None:
    learn.rules("ignore=*.pem", "expose-ro=./data")
    learn.write("data/key.pem", "secret\n")
    learn.write("app.py", 'print(open("data/key.pem").read())\n')
    outcome = learn.run("--learn", "app.py")
    assert (outcome.returncode, outcome.stdout) == (1, "")
    assert outcome.errors[-2:] == [
        f"pysandboxes.errors.RuleFileNotFoundError: Access to '{learn.root}/data/key.pem' is ignored "
        "by rule 'ignore=*.pem' from .py-sandboxes(2)",
        "python-sb: learning: nothing new for ./.py-sandboxes",
    ]


def test_ignored_path_outside_exposed_directories_still_refused(learn: Learn) -> None:
    learn.rules("ignore=*.pem")
    learn.write("data/key.pem", "secret\n")
    learn.write("app.py", 'print(open("data/key.pem").read())\n')
    outcome = learn.run("--learn", "app.py")
    assert (outcome.returncode, outcome.stdout) == (1, "")
    assert "is ignored by rule 'ignore=*.pem'" in outcome.stderr


WRITE_RULES_APP = """
with open(".py-sandboxes", "a") as f:
    f.write("python-import=*\\n")
"""


def test_the_rule_file_is_not_writable_while_learning_in_an_exposed_directory(learn: Learn) -> None:
    learn.rules("expose-rw=.")
    learn.write("app.py", WRITE_RULES_APP)
    before = learn.text()
    outcome = learn.run("--learn", "app.py")
    assert outcome.returncode == 1
    assert outcome.errors[-2:] == [
        f"pysandboxes.errors.RulePermissionError: Cannot write to '{learn.root}/.py-sandboxes': "
        "it is part of the active sandbox configuration.",
        "python-sb: learning: nothing new for ./.py-sandboxes",
    ]
    assert learn.text() == before


def test_the_rule_file_is_not_writable_while_learning(learn: Learn) -> None:
    learn.rules()
    learn.write("app.py", WRITE_RULES_APP)
    outcome = learn.run("--learn", "app.py")
    assert outcome.returncode == 1
    assert "python-import=*" not in learn.text()
    assert "it is part of the active sandbox configuration." in outcome.stderr


def test_the_learn_target_is_not_writable_while_learning(learn: Learn) -> None:
    learn.rules()
    learn.write("app.py", 'open("x.learn", "w").write("python-import=*\\n")\n')
    outcome = learn.run("--learn=x.learn", "app.py")
    assert outcome.returncode == 1
    assert "it is part of the active sandbox configuration." in outcome.stderr


# -- .env (issue 4, point 4) -------------------------------------------------------------------------


def test_dotenv_disabled_while_learning_grants_only_the_variable(learn: Learn) -> None:
    importable = subprocess.run(
        [PYTHON, "-c", "import dotenv"], capture_output=True, text=True, timeout=TIMEOUT
    )
    assert importable.returncode == 0, (
        "python-dotenv >= 1.2 must be installed in the test environment (test group): " + importable.stderr
    )
    learn.write(".env", "APP_TOKEN=x\nOTHER_SECRET=y\n")
    learn.write(
        "app.py",
        """
        import os
        from dotenv import load_dotenv
        load_dotenv()
        print(os.getenv("APP_TOKEN"))
        """,
    )
    env = {"APP_TOKEN": "x", "PYTHON_DOTENV_DISABLED": "1"}
    outcome = learn.learn("app.py", env=env)
    assert outcome.lines == ["x"]
    assert learn.block("env") == ["env=APP_TOKEN=${APP_TOKEN}"]
    assert learn.block("files") == []
    assert "PYTHON_DOTENV_DISABLED" not in learn.text()
    assert "OTHER_SECRET" not in learn.text()
    assert learn.strict("app.py", env=env).lines == ["x"]


def test_explicit_api_deny_still_refuses_while_learning(learn: Learn) -> None:
    learn.rules("python-api=DENY:process-exec", "python-import=subprocess")
    learn.write("app.py", 'import subprocess\nsubprocess.run(["true"])\n')
    before = learn.text()
    outcome = learn.run("--learn", "app.py")
    assert outcome.returncode == 1
    assert outcome.errors[-3:] == [
        "pysandboxes.errors.RuleApiPermissionError: subprocess.Popen() (category: process-exec) DENIED by "
        "explicit rule 'python-api=DENY:process-exec' from .py-sandboxes(2)",
        "python-sb: learned 1 rule into ./.py-sandboxes (files 1)",
        "python-sb: review them before use: git diff ./.py-sandboxes  (or pysandboxes check ./.py-sandboxes)",
    ]
    # the read of /usr/bin (the program's PATH lookup) is learned; the refused call is not
    assert "python-api=ALLOW" not in learn.text().replace(before, "")


def test_without_the_explicit_api_deny_learning_grants_the_call(learn: Learn) -> None:
    learn.rules("python-import=subprocess")
    learn.write("app.py", 'import subprocess\nsubprocess.run(["true"])\n')
    outcome = learn.run("--learn", "app.py")
    assert outcome.returncode == 0, outcome.stderr
    assert "python-api=ALLOW:subprocess.Popen" in learn.text()
