"""`pysandboxes init | check | explain`, run as a user runs them: in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def run_tool(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "HOME": str(cwd / "home"), **(env or {})}
    environ.pop("OS_SANDBOX", None)
    return subprocess.run(
        [sys.executable, "-m", "pysandboxes", *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path


def test_init_writes_a_template_that_check_accepts(project: Path) -> None:
    made = run_tool("init", cwd=project)
    assert made.returncode == 0, made.stderr
    text = (project / ".py-sandboxes").read_text()
    assert "# <learning_guard_import>" in text
    checked = run_tool("check", cwd=project)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.strip().endswith("(3 rules from 1 file)")
    assert checked.stdout.startswith(".py-sandboxes: OK")


def test_init_names_landlock_when_the_kernel_has_it_else_subprocess(project: Path) -> None:
    from pysandboxes.providers.landlock_abi import landlock_abi

    run_tool("init", cwd=project)
    expected = "landlock" if landlock_abi() >= 4 else "subprocess"
    assert f"os-sandbox=${{OS_SANDBOX:-{expected}}}" in (project / ".py-sandboxes").read_text()


def test_init_refuses_to_overwrite_without_force(project: Path) -> None:
    (project / ".py-sandboxes").write_text("python-import=json\n")
    refused = run_tool("init", cwd=project)
    assert refused.returncode == 1
    assert "already exists; use --force" in refused.stderr
    assert (project / ".py-sandboxes").read_text() == "python-import=json\n"
    forced = run_tool("init", "--force", "--os-sandbox", "bwrap", cwd=project)
    assert forced.returncode == 0
    assert "os-sandbox=${OS_SANDBOX:-bwrap}" in (project / ".py-sandboxes").read_text()


def test_check_reports_every_error_with_file_and_line_and_exits_1(project: Path) -> None:
    (project / "bad.py-sandboxes").write_text(
        "python-import=json\nnet=ALLOW|tcp|example.org|443\nexpose-ro=./nowhere\nfrobnicate=1\n"
    )
    result = run_tool("check", "bad.py-sandboxes", cwd=project)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0].startswith("bad.py-sandboxes(2): 'net=ALLOW|tcp|example.org|443' has 4 field(s)")
    assert lines[1].startswith("bad.py-sandboxes(3): 'expose-ro=./nowhere'")
    assert lines[2].startswith("bad.py-sandboxes(4): unknown key 'frobnicate'")
    assert lines[3] == "bad.py-sandboxes: 3 errors; nothing was loaded"
    assert "Traceback" not in result.stderr


def test_check_of_a_missing_file_is_a_clean_error(project: Path) -> None:
    result = run_tool("check", "nope.py-sandboxes", cwd=project)
    assert result.returncode == 1
    assert "rule file" in result.stderr and "does not exist" in result.stderr
    assert "Traceback" not in result.stderr


def test_check_warns_about_risky_rules_and_strict_fails_on_them(project: Path) -> None:
    (project / ".py-sandboxes").write_text(
        "python-import=*\npython-api=ALLOW:process-exec\nnet=ALLOW|*|*|*|*\nexpose-ro=/\nenv=*=${*}\n"
    )
    result = run_tool("check", cwd=project)
    assert result.returncode == 0
    out = result.stdout
    assert "(1): warning: 'python-import=*' allows every import" in out
    assert "(2): warning: 'python-api=ALLOW:process-exec' lets the program start other programs" in out
    assert "(3): warning: 'net=ALLOW|*|*|*|*' allows every address on every port" in out
    assert "(4): warning: 'expose-ro=/' exposes the whole file system" in out
    assert "(5): warning: 'env=*=${*}' forwards the whole environment" in out
    assert run_tool("check", "--strict", cwd=project).returncode == 1


def test_check_without_risky_rules_is_clean_and_strict_passes(project: Path) -> None:
    (project / "data").mkdir()
    (project / ".py-sandboxes").write_text("python-import=json\nexpose-ro=./data\n")
    result = run_tool("check", "--strict", cwd=project)
    assert result.returncode == 0
    assert result.stdout.strip() == ".py-sandboxes: OK (2 rules from 1 file)"


def test_check_of_a_shipped_file_wants_the_lock_and_a_fixed_provider(project: Path) -> None:
    package = project / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / ".py-sandboxes").write_text("python-import=json\nos-sandbox=${OS_SANDBOX:-landlock}\n")
    result = run_tool("check", "mypkg/.py-sandboxes", cwd=project)
    assert "ships without 'learn=false'" in result.stdout
    assert "lets an environment variable choose (or weaken) the OS provider" in result.stdout
    (package / ".py-sandboxes").write_text("python-import=json\nos-sandbox=landlock\nlearn=false\n")
    clean = run_tool("check", "--strict", "mypkg/.py-sandboxes", cwd=project)
    assert clean.returncode == 0, clean.stdout


def test_explain_shows_each_rule_with_its_origin_and_hides_copied_secrets(project: Path) -> None:
    (project / "data").mkdir()
    (project / ".py-sandboxes").write_text(
        "expose-ro=./data\n"
        "env=API_TOKEN=${API_TOKEN}\n"
        "env=MODE=fast\n"
        "net=DENY|*|10.0.0.0/8|*|OUT\n"
        "net=ALLOW|tcp|127.0.0.1|8080|OUT\n"
        "python-import=json, csv\n"
        "python-api=ALLOW:threads\n"
    )
    result = run_tool("explain", cwd=project, env={"API_TOKEN": "s3cret-value"})
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "s3cret-value" not in out
    assert "  API_TOKEN from ${API_TOKEN}  (.py-sandboxes(2))" in out
    assert "  MODE = 'fast'  (.py-sandboxes(3))" in out
    assert f"read-only  {project / 'data'}  expose-ro=./data  (.py-sandboxes(1))" in out
    deny = out.index("  DENY  tcp/udp 10.0.0.0/8 any port OUT  (.py-sandboxes(4))")
    allow = out.index("  ALLOW tcp 127.0.0.1 8080 OUT  (.py-sandboxes(5))")
    assert deny < allow
    assert "  csv, json  (.py-sandboxes(6))" in out
    assert "  ALLOW threads  (.py-sandboxes(7))" in out
    assert "no eval-* rule: eval(), exec() and compile() are refused" in out


def test_explain_api_lists_every_category_and_function(project: Path) -> None:
    from pysandboxes.rules.api_registry import CATEGORY_OF

    result = run_tool("explain", "--api", cwd=project)
    assert result.returncode == 0
    listed = {line.strip() for line in result.stdout.splitlines() if line.startswith("    ")}
    assert listed == set(CATEGORY_OF)


def test_explain_of_a_broken_file_prints_errors_not_a_traceback(project: Path) -> None:
    (project / ".py-sandboxes").write_bytes(b"python-import=json\n\xff\xfe\n")
    result = run_tool("explain", cwd=project)
    assert result.returncode == 1
    assert ".py-sandboxes(2): not UTF-8 text (byte 0xff)" in result.stderr
    assert "Traceback" not in result.stderr


def test_tool_without_command_prints_help_and_exits_2(project: Path) -> None:
    result = run_tool(cwd=project)
    assert result.returncode == 2
    assert "init" in result.stdout and "explain" in result.stdout


def test_doctor_lists_every_provider_and_why_one_cannot_start(project: Path) -> None:
    here = run_tool("doctor", cwd=project)
    assert here.returncode == 0
    lines = here.stdout.splitlines()
    assert [line.split()[0] for line in lines] == [
        "none",
        "subprocess",
        "landlock",
        "bwrap",
        "unshare",
        "firejail",
        "qemu",
    ]
    assert lines[3] == "bwrap      available"  # CI installs bubblewrap
    # without bubblewrap on the PATH: the reason and what to install
    empty = project / "empty-bin"
    empty.mkdir()
    missing = run_tool("doctor", cwd=project, env={**os.environ, "PATH": str(empty)})
    assert (
        "bwrap      unavailable: bubblewrap is not installed: install it (Debian: apt-get install bubblewrap)"
        in missing.stdout.splitlines()
    )
    assert (
        "qemu       unavailable: it needs a kernel with the 9p and virtio modules, a static busybox and QEMU; "
        "install them with `apt-get install qemu-system-x86`" in missing.stdout.splitlines()
    )
    assert lines[6].startswith("qemu       available (")  # CI installs QEMU, the kernel and busybox
    assert (
        "firejail   unavailable: firejail is not installed: install it (Debian: apt-get install firejail)"
        in missing.stdout.splitlines()
    )


def test_version_lists_the_providers_this_host_can_run(project: Path) -> None:
    here = run_tool("--version", cwd=project)
    assert here.returncode == 0
    first, second = here.stdout.splitlines()
    assert first.startswith("pysandboxes ")
    # CI installs bubblewrap, firejail and what qemu needs
    assert second == "providers available here: none, subprocess, landlock, bwrap, unshare, firejail, qemu"
    empty = project / "empty-bin"
    empty.mkdir()
    missing = run_tool("--version", cwd=project, env={**os.environ, "PATH": str(empty)})
    assert missing.stdout.splitlines()[1] == "providers available here: none, subprocess, landlock"


def test_check_flags_an_exposure_holding_secret_files_and_names_the_ignore_rules(project: Path) -> None:
    (project / "data" / "keys").mkdir(parents=True)
    (project / "data" / "keys" / "server.pem").write_text("-----BEGIN PRIVATE KEY-----\n")
    (project / "data" / "keys" / "id_ed25519.pub").write_text("ssh-ed25519 AAAA\n")
    (project / "data" / ".env").write_text("TOKEN=secret\n")
    (project / "data" / ".env.example").write_text("TOKEN=\n")
    (project / ".py-sandboxes").write_text("expose-ro=./data\n")
    result = run_tool("check", cwd=project)
    assert result.returncode == 0, result.stderr
    assert (
        "(1): warning: 'expose-ro=./data' exposes secret-looking files (.env, keys/server.pem): "
        "hide them with\n    ignore=.env\n    ignore=server.pem\n" in result.stdout
    )
    assert "id_ed25519.pub" not in result.stdout and ".env.example" not in result.stdout
    assert run_tool("check", "--strict", cwd=project).returncode == 1


def test_check_is_quiet_about_secret_files_an_ignore_rule_hides(project: Path) -> None:
    (project / "data").mkdir()
    (project / "data" / ".env").write_text("TOKEN=secret\n")
    (project / "data" / "server.pem").write_text("key\n")
    (project / ".py-sandboxes").write_text("expose-ro=./data\nignore=.env\nignore=*.pem\n")
    result = run_tool("check", "--strict", cwd=project)
    assert result.returncode == 0, result.stdout
    assert "secret" not in result.stdout


def test_check_flags_an_exposure_of_the_whole_project_and_names_its_subdirectories(project: Path) -> None:
    for name in ("data", "src", ".git"):
        (project / name).mkdir()
    (project / ".py-sandboxes").write_text("expose-ro=.\n")
    result = run_tool("check", cwd=project)
    assert "(1): warning: 'expose-ro=.' exposes the whole project directory" in result.stdout
    assert "e.g.\n    expose-ro=./data\n    expose-ro=./home\n    expose-ro=./src\n" in result.stdout
    assert "./.git" not in result.stdout
    (project / ".py-sandboxes").write_text("expose-ro=./data\n")
    assert run_tool("check", "--strict", cwd=project).returncode == 0
