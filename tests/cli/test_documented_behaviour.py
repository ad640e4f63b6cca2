"""What the user documentation says ``python-sb`` does, run end to end.

The demo program of ``make demo`` (``demo/quick/``) is run the way the demo and README run it,
and the claims of docs/complete-mode.md, docs/providers.md and docs/security-model.md that no
other test pins are checked here, as pairs: the operation works with the rule (or without the
sandbox) and is refused without it.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

BIN = Path(sys.executable).parent
PYTHON_SB = str(BIN / "python-sb")
PYTHON = sys.executable
REPO = Path(__file__).resolve().parents[2]
QUICK = REPO / "demo" / "quick"
PROVIDERS = ("subprocess", "landlock")
TIMEOUT = 30


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def run(
    command: list[str], *, cwd: Path, env: dict[str, str], input: str = ""
) -> subprocess.CompletedProcess[str]:
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    return subprocess.run(
        command, cwd=cwd, env={**base, **env}, input=input, capture_output=True, text=True, timeout=TIMEOUT
    )


# ============================================================================================
# The demo program: demo/quick/report.py and its rule file
# ============================================================================================


class Servers:
    """Two TCP servers on 127.0.0.1 that answer one line per connection, like `make demo`'s."""

    def __init__(self) -> None:
        self.listeners: list[socket.socket] = []
        self.ports: list[int] = []
        for name in ("the report service", "the collector"):
            listener = socket.socket()
            listener.bind(("127.0.0.1", 0))
            listener.listen(8)
            self.listeners.append(listener)
            self.ports.append(listener.getsockname()[1])
            threading.Thread(target=self._serve, args=(listener, name), daemon=True).start()

    @staticmethod
    def _serve(listener: socket.socket, name: str) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                line = conn.makefile("rb").readline()
                conn.sendall(f"{name} received {len(line.strip())} bytes\n".encode())

    def close(self) -> None:
        for listener in self.listeners:
            listener.close()


@pytest.fixture
def servers() -> Iterator[Servers]:
    running = Servers()
    yield running
    running.close()


@pytest.fixture
def stage(tmp_path: Path, servers: Servers) -> dict[str, Any]:
    """A temporary home holding ~/.ssh/id_demo, an output directory, the host's secret."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_demo").write_text("-----BEGIN DEMO KEY-----\nnot a real key\n")
    out = tmp_path / "out"
    out.mkdir()
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    service, collector = servers.ports
    env = {
        "HOME": str(home),
        "REPORT_OUT": str(out),
        "REPORT_SERVICE_PORT": str(service),
        "DEMO_API_KEY": "sk-demo-0123456789",
    }
    return {"home": home, "out": out, "cwd": cwd, "env": env, "service": service, "collector": collector}


def refusal_lines(stdout: str) -> dict[str, str]:
    """``{"- what was attempted": "what happened, lines joined"}`` for the part beyond the job."""
    outcomes: dict[str, str] = {}
    current = ""
    for line in stdout.partition("Beyond the job:\n")[2].splitlines():
        if line.startswith("- "):
            current = line
            outcomes[current] = ""
        elif current and line.strip():
            outcomes[current] = (outcomes[current] + "\n" + line.strip()).strip()
    return outcomes


def test_demo_report_does_its_job_and_each_step_beyond_it_is_refused(
    stage: dict[str, Any], provider: str
) -> None:
    collector = stage["collector"]
    result = run(
        [PYTHON_SB, str(QUICK / "report.py"), str(collector)],
        cwd=stage["cwd"],
        env={**stage["env"], "OS_SANDBOX": provider},
    )
    assert result.returncode == 0, result.stderr
    report = json.loads((stage["out"] / "report.json").read_text())
    assert report == {
        "units": 1192,
        "revenue": 1723.8,
        "by_region": {"north": 572.0, "south": 306.3, "east": 478.0, "west": 367.5},
    }
    assert f"report service on port {stage['service']} answered: the report service received 111 bytes\n" in (
        result.stdout
    )
    ssh = stage["home"] / ".ssh"
    assert refusal_lines(result.stdout) == {
        "- read a private key: ~/.ssh/id_demo": (
            f"RuleFileNotFoundError: Access to '{ssh / 'id_demo'}' must be accepted by a rule.\n"
            f"Add `expose-ro={ssh}` to the rule file to allow it."
        ),
        "- run a shell command: os.system('id')": (
            "RuleApiPermissionError: os.system() is denied by the API guard (category: process-exec).\n"
            "Add `python-api=ALLOW:os.system` for this function only, or "
            "`python-api=ALLOW:process-exec` for the whole category."
        ),
        "- start a process: import subprocess": (
            "RuleModuleNotFoundError: Module named 'subprocess' is not allowed by a rule\n"
            "Add `python-import=subprocess` to the rule file to allow it."
        ),
        f"- send the data elsewhere: 127.0.0.1:{collector}": (
            f"RuleSocketConnectionRefusedError: Connection to [127.0.0.1]:{collector} DENIED by implicit "
            f"default policy\nAdd `net=ALLOW|tcp|127.0.0.1|{collector}|OUT` to allow it."
        ),
        "- read a secret of the environment: os.environ.get('DEMO_API_KEY')": "-> None",
    }


def test_demo_report_under_plain_python_does_every_step_beyond_its_job(stage: dict[str, Any]) -> None:
    collector = stage["collector"]
    result = run([PYTHON, "-u", str(QUICK / "report.py"), str(collector)], cwd=stage["cwd"], env=stage["env"])
    assert result.returncode == 0, result.stderr
    outcomes = refusal_lines(result.stdout)
    assert outcomes["- read a private key: ~/.ssh/id_demo"] == (
        "it worked: '-----BEGIN DEMO KEY-----\\nnot a real key\\n'"
    )
    assert outcomes["- run a shell command: os.system('id')"].endswith("it worked: 0")
    assert outcomes["- start a process: import subprocess"].startswith("it worked: <module 'subprocess'")
    assert outcomes[f"- send the data elsewhere: 127.0.0.1:{collector}"] == (
        "it worked: 'the collector received 11 bytes'"
    )
    assert outcomes["- read a secret of the environment: os.environ.get('DEMO_API_KEY')"] == (
        "-> 'sk-demo-0123456789'"
    )


@pytest.mark.parametrize(
    ("chosen", "expected"),
    [
        ("subprocess", "C code read {key}: -----BEGIN DEMO KEY-----\n"),
        ("landlock", "C code could not open {key}: Permission denied\n"),
    ],
)
def test_demo_peek_c_code_is_held_by_landlock_only(stage: dict[str, Any], chosen: str, expected: str) -> None:
    grant = ["--python-import=ctypes", "--python-api=ALLOW:native", f"--os-sandbox={chosen}"]
    result = run([PYTHON_SB, *grant, str(QUICK / "peek.py")], cwd=stage["cwd"], env=stage["env"])
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == expected.format(key=stage["home"] / ".ssh" / "id_demo")


def test_demo_peek_needs_the_native_grant(stage: dict[str, Any], provider: str) -> None:
    result = run(
        [PYTHON_SB, f"--os-sandbox={provider}", str(QUICK / "peek.py")], cwd=stage["cwd"], env=stage["env"]
    )
    assert result.returncode == 1
    assert result.stderr.endswith(
        "RuleModuleNotFoundError: Module named 'ctypes' is not allowed by a rule\n"
        "Add `python-import=ctypes` to the rule file to allow it.\n"
    )


# ============================================================================================
# Claims of the docs, and the bugs found while checking them
# ============================================================================================


def project_with(tmp_path: Path, rules: str, program: str) -> Path:
    root = tmp_path / "project"
    root.mkdir(exist_ok=True)
    (root / ".py-sandboxes").write_text(textwrap.dedent(rules))
    (root / "prog.py").write_text(textwrap.dedent(program))
    return root


LISTEN = """\
import socket
s = socket.socket()
try:
    s.listen()
except OSError as e:
    print(type(e).__name__)
else:
    print("listening")
"""


def test_listen_without_bind_works_with_a_rule_for_any_address_and_port_0(
    tmp_path: Path, provider: str
) -> None:
    root = project_with(tmp_path, "python-import=socket\nnet=ALLOW|tcp|0.0.0.0|0|IN\n", LISTEN)
    result = run([PYTHON_SB, f"--os-sandbox={provider}", "prog.py"], cwd=root, env={"HOME": str(tmp_path)})
    assert (result.returncode, result.stdout) == (0, "listening\n")


def test_listen_without_bind_is_refused_without_a_rule(tmp_path: Path, provider: str) -> None:
    root = project_with(tmp_path, "python-import=socket\n", LISTEN)
    result = run([PYTHON_SB, f"--os-sandbox={provider}", "prog.py"], cwd=root, env={"HOME": str(tmp_path)})
    assert (result.returncode, result.stdout) == (0, "RuleSocketConnectionRefusedError\n")


PY_SANDBOX = """\
try:
    import json
except ImportError as e:
    print(type(e).__name__)
else:
    print("imported json")
"""


def test_py_sandbox_true_keeps_the_python_layer(tmp_path: Path) -> None:
    root = project_with(tmp_path, "py-sandbox=true\nos-sandbox=landlock\n", PY_SANDBOX)
    result = run([PYTHON_SB, "prog.py"], cwd=root, env={"HOME": str(tmp_path)})
    assert (result.returncode, result.stdout) == (0, "RuleModuleNotFoundError\n")


def test_py_sandbox_false_leaves_only_the_os_provider(tmp_path: Path) -> None:
    root = project_with(tmp_path, "py-sandbox=false\nos-sandbox=landlock\n", PY_SANDBOX)
    result = run([PYTHON_SB, "prog.py"], cwd=root, env={"HOME": str(tmp_path)})
    assert (result.returncode, result.stdout) == (0, "imported json\n")


def module_on_another_path(tmp_path: Path) -> tuple[Path, Path]:
    lib = tmp_path / "lib"
    (lib / "tool").mkdir(parents=True)
    (lib / "tool" / "__init__.py").write_text("")
    (lib / "tool" / "__main__.py").write_text("import sys\nprint('tool', sys.argv[1:])\n")
    (lib / "tool" / ".py-sandboxes").write_text("python-import=sys\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    return lib, elsewhere


def test_m_module_of_the_working_directory_runs_like_python(tmp_path: Path, provider: str) -> None:
    lib, _ = module_on_another_path(tmp_path)
    env = {"HOME": str(tmp_path)}
    result = run([PYTHON_SB, f"--os-sandbox={provider}", "-m", "tool", "a"], cwd=lib, env=env)
    assert (result.returncode, result.stdout, result.stderr) == (0, "tool ['a']\n", "")


def test_m_module_found_through_pythonpath_runs_like_python(tmp_path: Path, provider: str) -> None:
    lib, elsewhere = module_on_another_path(tmp_path)
    env = {"HOME": str(tmp_path), "PYTHONPATH": str(lib)}
    expected = run([PYTHON, "-m", "tool", "a"], cwd=elsewhere, env=env)
    assert (expected.returncode, expected.stdout) == (0, "tool ['a']\n")
    result = run([PYTHON_SB, f"--os-sandbox={provider}", "-m", "tool", "a"], cwd=elsewhere, env=env)
    assert (result.returncode, result.stdout, result.stderr) == (0, "tool ['a']\n", "")


# Native code looks for a host variable in the process's own memory: the initial block of
# argument and environment strings at the top of the stack (where /proc/self/environ points).
ENV_IN_MEMORY = """\
import ctypes, os
libc = ctypes.CDLL(None)
print("os.environ:", "DEMO_API_KEY" in os.environ)
start = ctypes.cast(ctypes.c_char_p.in_dll(libc, "program_invocation_name"), ctypes.c_void_p).value
end = start & ~0xFFF
vector = ctypes.create_string_buffer(1)
while libc.mincore(ctypes.c_void_p(end), 4096, vector) == 0:
    end += 4096
block = ctypes.string_at(start, end - start)
print("memory:", b"DEMO_API_KEY=sk-demo" in block)
"""


@pytest.mark.parametrize(
    "chosen",
    [
        "subprocess",
        "landlock",
    ],
)
def test_host_variables_not_forwarded_are_not_in_the_process_memory(tmp_path: Path, chosen: str) -> None:
    rules = f"python-import=ctypes, os\npython-api=ALLOW:native\nos-sandbox={chosen}\n"
    root = project_with(tmp_path, rules, ENV_IN_MEMORY)
    result = run([PYTHON_SB, "prog.py"], cwd=root, env={"HOME": str(tmp_path), "DEMO_API_KEY": "sk-demo-42"})
    assert (result.returncode, result.stdout) == (0, "os.environ: False\nmemory: False\n")


def test_help_env_shows_pythons_text(tmp_path: Path) -> None:
    expected = run([PYTHON, "--help-env"], cwd=tmp_path, env={})
    assert "PYTHONSTARTUP" in expected.stdout
    result = run([PYTHON_SB, "--help-env"], cwd=tmp_path, env={})
    assert result.returncode == 0
    assert "PYTHONSTARTUP" in result.stdout
