"""CPython's own regression suite under ``python-sb``, every right granted (``make compat``).

The yardstick of issue 17: with a rule file that grants everything a program can be granted
(``bench/compat/*.py-sandboxes``), each test file of the interpreter's ``test`` package must end
exactly as it does under plain ``python``. For every file of the list this runs, sequentially
(no ``-j``: workers would be fresh interpreters that ``python-sb`` never confined)::

    python                                       -m test --junit-xml=J NAME
    python-sb --pysandboxes-config=D/.py-sandboxes -m test --junit-xml=J NAME

each in a fresh directory ``D`` (working directory and ``TMPDIR``, holding a ``.py-sandboxes``
that includes the provider's rule file, as a project directory does), with the same environment
otherwise. It compares the final ``Result:`` line and the outcome of every test id of the JUnit
file (ok, skipped, failure, error, expected failure, unexpected success), so "more skips" is a
difference. A file that differs is run once more both ways: if the second pair agrees, the first
difference is reported as flaky (and counted as behaving the same); otherwise it stands.

Prints a table (file, python result, python-sb result, differing ids) and the figure
``N of M test files behave as under python`` per provider; progress goes to stderr. Exits 1
when a file differs. ``--json FILE`` writes every run for tools (tests/cli/test_cpython_suite.py).
"""

from __future__ import annotations

import argparse
import functools
import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
RULES_DIR = BENCH_DIR / "compat"
PROVIDERS = ("subprocess", "landlock")
#: Our interpreter and its python-sb (the workspace venv; ``make compat`` runs through it anyway).
PYTHON = Path(sys.executable)
PYTHON_SB = PYTHON.parent / "python-sb"
WORK_DIR = Path(os.environ.get("COMPAT_WORK_DIR") or Path(tempfile.gettempdir()) / "pysandboxes-compat")

#: The files of the list, those issue 17 names first. A file the running Python does not ship
#: (``test_concurrent_futures`` is a package from 3.12 on, absent from some 3.11 builds) is
#: reported as absent and not counted.
FILES = (
    # named by issue 17
    "test_json",
    "test_csv",
    "test_pathlib",
    "test_dataclasses",
    "test_enum",
    "test_typing",
    "test_logging",
    "test_tempfile",
    "test_shutil",
    "test_threading",
    "test_re",
    "test_datetime",
    "test_decimal",
    "test_zipfile",
    "test_tarfile",
    "test_sqlite3",
    "test_email",
    "test_xml_etree",
    "test_inspect",
    "test_traceback",
    "test_pickle",
    "test_importlib",
    "test_unittest",
    "test_asyncio",
    "test_concurrent_futures",
    "test_subprocess",
    "test_os",
    "test_io",
    "test_runpy",
    # the rest of the standard library a program commonly leans on
    "test_argparse",
    "test_collections",
    "test_functools",
    "test_itertools",
    "test_contextlib",
    "test_contextlib_async",
    "test_abc",
    "test_copy",
    "test_string",
    "test_textwrap",
    "test_fnmatch",
    "test_glob",
    "test_base64",
    "test_hashlib",
    "test_hmac",
    "test_struct",
    "test_statistics",
    "test_math",
    "test_random",
    "test_fractions",
    "test_configparser",
    "test_urlparse",
    "test_html",
    "test_gzip",
    "test_zlib",
    "test_bz2",
    "test_lzma",
    "test_uuid",
    "test_difflib",
    "test_heapq",
    "test_bisect",
    "test_operator",
    "test_types",
    "test_weakref",
    "test_warnings",
    "test_zipimport",
    "test_pprint",
    "test_shlex",
    "test_ipaddress",
    "test_codecs",
    "test_posixpath",
    "test_genericpath",
    "test_stat",
    "test_fileinput",
    "test_filecmp",
    "test_sys",
    "test_builtin",
    "test_pkgutil",
    "test_site",
    "test_sysconfig",
    "test_code",
    "test_ast",
    "test_socketserver",
)
#: Left out unless ``--with-slow``: over 15 minutes under plain python on a 2-CPU VM.
SLOW = {"test_socket": "over 15 minutes under plain python on a 2-CPU VM"}

_TEST_PACKAGE = Path(__import__("test").__file__).parent


@dataclass
class Run:
    """One ``-m test NAME`` run: the final result, every test id's outcome, and where its log is."""

    result: str  # SUCCESS, FAILURE, ENV CHANGED, NO TESTS RAN, ..., TIMEOUT, "exit N (no result)"
    outcomes: dict[str, str] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)  # id -> skip reason / error type
    seconds: float = 0.0
    log: str = ""


@dataclass
class Comparison:
    name: str
    python: Run
    sandboxed: Run
    differing: list[str]  # "id: python outcome -> python-sb outcome"
    flaky: list[str] = field(default_factory=list)  # the first run's differences, gone on rerun

    @property
    def same(self) -> bool:
        return not self.differing


def shipped(name: str) -> bool:
    return (_TEST_PACKAGE / f"{name}.py").exists() or (_TEST_PACKAGE / name / "__init__.py").exists()


def _outcome(case: ET.Element) -> tuple[str, str]:
    for tag, outcome in (
        ("skipped", "skipped"),
        ("failure", "failure"),
        ("error", "error"),
        ("output", "expected failure"),
    ):
        child = case.find(tag)
        if child is not None:
            if tag == "skipped":
                return outcome, (child.text or "").strip()
            # failure/error: the line of the message that names the exception (the last one:
            # a chained exception shows its context first)
            kind = child.get("type", "")
            lines = (child.get("message") or "").strip().splitlines()
            named = [line for line in lines if line.startswith((kind, kind.rpartition(".")[2]))]
            return outcome, (named or lines or [kind])[-1]
    if case.find("outcome") is not None:
        return "unexpected success", ""
    return "ok", ""


def parse_junit(path: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Every test id of regrtest's JUnit file with its outcome (and a reason where there is one)."""
    outcomes: dict[str, str] = {}
    reasons: dict[str, str] = {}
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return outcomes, reasons
    for case in root.iter("testcase"):
        # A test whose subtests failed has no result of its own (regrtest leaves the element
        # unnamed); the failure still shows in the file's result.
        name = case.get("name")
        if name is None:
            continue
        key, n = name, 2
        while key in outcomes:  # the same id twice (a class-level error and a test, say)
            key, n = f"{name} #{n}", n + 1
        outcomes[key], reason = _outcome(case)
        if reason:
            reasons[key] = reason
    return outcomes, reasons


def final_result(log: str) -> str | None:
    for line in reversed(log.splitlines()):
        if line.startswith("Result: "):
            return line.removeprefix("Result: ").strip()
    return None


@functools.cache
def machine_rules() -> str:
    """The rights of ``bench/compat/*.py-sandboxes`` that name this machine's paths and name."""
    return "".join(f"{line}\n" for line in (*builtin_directories_writable(), *hostname_rule()))


def builtin_directories_writable() -> list[str]:
    """``expose-rw=`` for each directory every sandbox gets read-only (the interpreter's
    prefixes and standard library, PySandboxes' own package, the CA stores, the bytecode
    prefix): ``expose-rw=/`` does not make them writable, only a line naming each one does
    (docs/complete-mode.md §9). The suite writes there (``zipfile``'s ``writepy`` compiles
    into the standard library; ``import_helper.forget`` unlinks along ``sys.path``)."""
    from pysandboxes.rules.files import builtin_exposures

    return [f"expose-rw={exposure.path}" for exposure in builtin_exposures()]


def hostname_rule() -> list[str]:
    """A ``net=`` line for this machine's own name when it resolves to loopback only.

    ``smtplib``, ``logging.handlers.SMTPHandler`` and a few tests look up
    ``socket.gethostname()``; a name is only resolved when a rule names it, and which name a
    machine has is not known when the rule file is written. Not granted when the name leads
    off the machine: the suite then shows the difference.
    """
    name = socket.gethostname()
    try:
        found = {info[4][0] for info in socket.getaddrinfo(name, None)}
    except OSError:
        return []
    if not found or not all(ipaddress.ip_address(a.partition("%")[0]).is_loopback for a in found):
        return []
    return [f"net=ALLOW|*|{name}|*|IN,OUT"]


def rule_file(provider: str) -> Path:
    return RULES_DIR / f"{provider}.py-sandboxes"


@dataclass(frozen=True)
class Settings:
    timeout: float = 1800  # seconds per run
    rerun: bool = True  # run a differing file once more both ways
    keep: bool = False  # keep each run's directory
    tmpdir_apart: bool = False  # TMPDIR in a subdirectory, not the one holding the rule file


def run_file(name: str, provider: str | None, settings: Settings) -> Run:
    """Run test file ``name`` under plain python (``provider=None``) or python-sb."""
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    directory = Path(tempfile.mkdtemp(prefix=f"{name}-{provider or 'python'}-", dir=WORK_DIR))
    # Both runs see the same layout: a project directory holding its rule file, used as the
    # working directory and (unless tmpdir_apart) as TMPDIR (regrtest works in
    # $TMPDIR/test_python_<pid>; tempfile.TemporaryFile() opens $TMPDIR itself).
    config = directory / ".py-sandboxes"
    tmpdir = directory / "tmp" if settings.tmpdir_apart else directory
    tmpdir.mkdir(exist_ok=True)
    config.write_text(f'include "{rule_file(provider or PROVIDERS[0])}"\n{machine_rules()}', encoding="utf-8")
    junit = directory / "junit.xml"
    args = ["-m", "test", f"--junit-xml={junit}", name]
    if provider is None:
        cmd = [str(PYTHON), *args]
    else:
        cmd = [str(PYTHON_SB), f"--pysandboxes-config={config}", *args]
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    env.pop("OS_SANDBOX", None)
    log_path = directory / "output.log"
    started = time.perf_counter()
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            cmd,
            cwd=directory,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a timeout ends the whole group, the test's children too
        )
        try:
            code = proc.wait(timeout=settings.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            code = None
        except BaseException:  # interrupted: leave no test running behind us
            os.killpg(proc.pid, signal.SIGKILL)
            raise
    seconds = time.perf_counter() - started
    text = log_path.read_text(encoding="utf-8", errors="replace")
    outcomes, reasons = parse_junit(junit)
    if code is None:
        result = f"TIMEOUT ({settings.timeout:.0f} s)"
    else:
        result = final_result(text) or f"exit {code} (no result line)"
    run = Run(result, outcomes, reasons, seconds, str(log_path))
    if settings.keep:
        return run
    kept = WORK_DIR / "logs" / f"{name}-{provider or 'python'}.log"
    kept.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(log_path, kept)
    run.log = str(kept)
    shutil.rmtree(directory, ignore_errors=True)
    return run


def differences(python: Run, sandboxed: Run) -> list[str]:
    found = []
    if python.result != sandboxed.result:
        found.append(f"Result: {python.result} -> {sandboxed.result}")
    for test_id in sorted(python.outcomes.keys() | sandboxed.outcomes.keys()):
        # absent: not run, or a subtest failed (regrtest's JUnit file then leaves it unnamed)
        before = python.outcomes.get(test_id, "absent")
        after = sandboxed.outcomes.get(test_id, "absent")
        if before != after:
            reason = sandboxed.reasons.get(test_id) or python.reasons.get(test_id, "")
            why = f" ({reason[:160]})" if reason else ""
            found.append(f"{test_id}: {before} -> {after}{why}")
    return found


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def compare(
    names: Sequence[str], providers: Sequence[str], settings: Settings
) -> dict[str, list[Comparison]]:
    results: dict[str, list[Comparison]] = {p: [] for p in providers}
    for index, name in enumerate(names, 1):
        python = run_file(name, None, settings)
        progress(f"[{index}/{len(names)}] {name}: python {python.result} ({python.seconds:.0f} s)")
        for provider in providers:
            sandboxed = run_file(name, provider, settings)
            found = differences(python, sandboxed)
            flaky: list[str] = []
            if found and settings.rerun:
                progress(
                    f"    {provider}: {sandboxed.result}, {len(found)} difference(s); running both again"
                )
                again_python = run_file(name, None, settings)
                again = run_file(name, provider, settings)
                if not differences(again_python, again):
                    flaky, found = found, []
                    python, sandboxed = again_python, again
            verdict = "same" if not found else f"DIFFERS ({len(found)})"
            progress(f"    {provider}: {sandboxed.result} ({sandboxed.seconds:.0f} s) {verdict}")
            results[provider].append(Comparison(name, python, sandboxed, found, flaky))
    return results


def report(results: dict[str, list[Comparison]], walls: dict[str, float], absent: list[str]) -> str:
    lines = []
    for provider, comparisons in results.items():
        same = sum(c.same for c in comparisons)
        lines.append(f"## python-sb, os-sandbox={provider} ({rule_file(provider).relative_to(REPO)})")
        lines.append("")
        listed = [c for c in comparisons if c.differing or c.flaky]
        if listed:
            lines.append("| file | python | python-sb | differing test ids |")
            lines.append("|---|---|---|---|")
        for c in listed:
            shown = c.differing or [f"flaky, same on rerun: {d}" for d in c.flaky]
            cell = "<br>".join(shown[:8]) + (f"<br>... {len(shown) - 8} more" if len(shown) > 8 else "")
            lines.append(f"| {c.name} | {c.python.result} | {c.sandboxed.result} | {cell} |")
        if listed:
            lines.append("")
        python_s = sum(c.python.seconds for c in comparisons)
        sandboxed_s = sum(c.sandboxed.seconds for c in comparisons)
        lines.append(
            f"{same} of {len(comparisons)} test files behave as under python (os-sandbox={provider})"
        )
        lines.append(
            f"time: python {python_s:.0f} s, python-sb {sandboxed_s:.0f} s over the list "
            f"(the last run of each file; wall time of the provider's runs {walls[provider]:.0f} s)"
        )
        lines.append("")
    if absent:
        lines.append(f"not shipped by this Python, not counted: {', '.join(absent)}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--provider",
        action="append",
        choices=PROVIDERS,
        help="os-sandbox of the python-sb runs (repeat for both; default: both)",
    )
    parser.add_argument("--files", help="comma-separated test files instead of the list (test_re,test_csv)")
    parser.add_argument(
        "--with-slow", action="store_true", help=f"add {', '.join(SLOW)} ({'; '.join(SLOW.values())})"
    )
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per run (default 1800)")
    parser.add_argument("--no-rerun", action="store_true", help="do not run a differing file a second time")
    parser.add_argument("--keep", action="store_true", help=f"keep every run's directory under {WORK_DIR}")
    parser.add_argument(
        "--tmpdir-apart",
        action="store_true",
        help="TMPDIR in a subdirectory of the run's directory (default: the directory holding the rule file)",
    )
    parser.add_argument("--json", type=Path, help="also write every run to this file")
    options = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # through run_file's clean-up

    providers = options.provider or list(PROVIDERS)
    names = options.files.split(",") if options.files else [*FILES, *(SLOW if options.with_slow else ())]
    absent = [n for n in names if not shipped(n)]
    names = [n for n in names if shipped(n)]
    progress(f"{len(names)} test files, python-sb under {', '.join(providers)}; logs in {WORK_DIR}/logs")
    started = time.perf_counter()
    settings = Settings(options.timeout, not options.no_rerun, options.keep, options.tmpdir_apart)
    results = compare(names, providers, settings)
    total = time.perf_counter() - started
    # The python run of each file is shared by the providers: its time is split evenly.
    walls = {
        p: sum(c.sandboxed.seconds + c.python.seconds / len(providers) for c in cs)
        for p, cs in results.items()
    }
    print(report(results, walls, absent))
    print(f"whole run: {total:.0f} s ({total / 60:.1f} min) for {len(names)} files")
    if options.json:
        options.json.write_text(
            json.dumps({p: [asdict(c) | {"same": c.same} for c in cs] for p, cs in results.items()}, indent=1)
        )
    return 0 if all(c.same for cs in results.values() for c in cs) else 1


if __name__ == "__main__":
    sys.exit(main())
