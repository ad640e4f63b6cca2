"""Rule language: how long a realistic profile takes to load, in-process and as a whole process.

What is measured, on each side:

- ours: ``pysandboxes.rules.load_policy(path)``: read the file and its includes, lex, substitute
  ``${...}``, compile every family (files, net, env, imports, api, eval, provider keys) into an
  immutable ``Policy``.
- pysandboxes 0.7.0: ``pysandboxes.py_sandbox.load_and_parse_config(Path(path))``, the function its
  ``sandboxes()``/``run()`` and ``python-sb`` call to turn a rule file into ``AllRules``: read the
  file, drop comments, expand includes, ``env=`` rules then ``${...}`` substitution, singleton and
  provider keys (it instantiates the provider class named by ``os-sandbox`` and lets it parse its
  dotted keys), then ``net=``, files, ``python-api=``, ``python-import=``, ``eval-*``. It is given an
  absolute path holding a '/', so it does not search the caller's package for the file, and
  ``envs`` defaults to ``os.environ`` as in ours. Nothing is activated: no guard, no provider start.

Both profiles are each implementation's own template (ours: ``render_template("landlock")``, the
reference: its ``templates/py-sandboxes.template`` with ``@DEFAULT_OS_SANDBOX@`` -> ``landlock``,
the provider its ``default_os_sandbox()`` picks on Linux with Landlock) with the same 44 learned
lines written into the ``<learning_guard_*>`` blocks. The learned lines are identical text on both
sides: the two grammars agree on every line used (top-level names in ``python-import``, absolute
paths, IP addresses only, so that no side resolves a host name at load time). The bench prints
what each side compiled from the profile and warns when the numbers differ. A second file, the
learned lines alone plus ``os-sandbox=landlock``, is loaded by both sides unchanged: it leaves out
the templates, whose comments differ in length (ours 148 lines, the reference's 411).

The reference's *first* load in a process imports the daemon class of the named provider (to let
it parse its dotted keys), which pulls in aiohttp: the "first load" row shows it.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # bench scripts run as plain files: _common is found next to them
    BYTECODE_NOTE,
    OUR_PYTHON,
    REFERENCE_LABEL,
    WORK_DIR,
    CommandFailed,
    Row,
    Table,
    median,
    process_tool_note,
    reference,
    reference_site_packages,
    run_child,
    time_process,
    warm_bytecode,
)

LOADS = 200  # timed loads per child process
LOAD_WARMUP = 30
LOAD_PROCESSES = 5  # child processes for the in-process figures; the loads are pooled

SCRATCH = WORK_DIR / "rules"
OUR_PROFILE = SCRATCH / "ours" / ".py-sandboxes"
REF_PROFILE = SCRATCH / "reference" / ".py-sandboxes"
#: The learned lines alone, no template: one file both grammars read identically.
LEARNED_ONLY = SCRATCH / "learned-only" / ".py-sandboxes"
TEMP_DIRS = [SCRATCH / "tmp" / name for name in (*(f"cache-{i}" for i in range(8)), "out")]


def learned_lines() -> dict[str, list[str]]:
    """What a learning run of a small web client typically adds, by template block."""
    *caches, out = TEMP_DIRS
    return {
        "envs": [
            "env=LANG=${LANG:-C.UTF-8}",
            "env=LC_ALL=${LC_ALL:-C.UTF-8}",
            "env=HOME=${HOME}",
            "env=PATH=${PATH}",
            "env=TMPDIR=${TMPDIR:-/tmp}",
            "env=TZ=UTC",
            "env=PYTHONHASHSEED=0",
            "env=OPENAI_*=${OPENAI_*}",
            "unenv=AWS_*",
        ],
        "files": [
            *(f"expose-ro={d}" for d in caches),
            f"expose-rw={out}",
            "ignore=*.pem",
            "ignore=.env",
        ],
        "socket": [
            "net=ALLOW|tcp|93.184.215.14|443|OUT",
            "net=ALLOW|tcp|140.82.112.0/20|443|OUT",
            "net=ALLOW|tcp|151.101.0.0/16|80,443|OUT",
            "net=ALLOW|udp|1.1.1.1|53|OUT",
            "net=ALLOW|tcp,udp|8.8.8.8|53|OUT",
            "net=ALLOW|tcp|2606:4700::6810:84e5|443|OUT",
            "net=ALLOW|tcp|127.0.0.1|${PORT:-8000}|IN",
            "net=ALLOW|tcp|127.0.0.1|8000-8099|OUT",
            "net=DENY|*|10.0.0.0/8|*|OUT",
            "net=DENY|*|172.16.0.0/12|*|OUT",
            "net=DENY|*|192.168.0.0/16|*|OUT",
            "net=DENY|*|169.254.0.0/16|*|OUT",
        ],
        "import": [
            "python-import=base64, collections, csv, datetime, decimal, functools, hashlib, itertools, json, re",
            "python-import=dataclasses, enum, logging, pathlib, tempfile, typing, uuid",
            "python-import=certifi, charset_normalizer, idna, requests, urllib3",
            "python-import=dateutil, numpy, pandas, pytz, tzdata",
        ],
        "api": [
            "python-api=ALLOW:threads",
            "python-api=ALLOW:subprocess.run",
            "python-api=DENY:os.system",
        ],
        "eval": [
            "eval-namespace=closed",
            "eval-syntax=arith, compare",
            "eval-syntax=subscript",
            "eval-timeout=2s",
            "eval-max-nodes=1000",
        ],
    }


def with_learned_lines(template: str) -> str:
    """Write the learned lines just before each ``# </learning_guard_NAME>`` marker."""
    text = template
    for block, lines in learned_lines().items():
        marker = f"# </learning_guard_{block}>"
        if text.count(marker) != 1:
            raise ValueError(f"the template has {text.count(marker)} '{marker}' markers, expected 1")
        text = text.replace(marker, "\n".join([*lines, marker]))
    return text


def write_profiles(ref_python: Path | None) -> None:
    for d in TEMP_DIRS:
        d.mkdir(parents=True, exist_ok=True)
    OUR_PROFILE.parent.mkdir(parents=True, exist_ok=True)
    LEARNED_ONLY.parent.mkdir(parents=True, exist_ok=True)
    bare = [line for lines in learned_lines().values() for line in lines]
    LEARNED_ONLY.write_text("\n".join([*bare, "os-sandbox=landlock", ""]), encoding="utf-8")
    ours = run_child([str(OUR_PYTHON), "-c", OUR_TEMPLATE_CODE])
    OUR_PROFILE.write_text(with_learned_lines(ours), encoding="utf-8")
    if ref_python is not None:
        REF_PROFILE.parent.mkdir(parents=True, exist_ok=True)
        source = reference_site_packages(ref_python) / "templates" / "py-sandboxes.template"
        template = source.read_text(encoding="utf-8").replace("@DEFAULT_OS_SANDBOX@", "landlock")
        REF_PROFILE.write_text(with_learned_lines(template), encoding="utf-8")


OUR_TEMPLATE_CODE = (
    "import sys; from pysandboxes.rules import render_template; sys.stdout.write(render_template('landlock'))"
)

# One side: how to import the loader, how to call it on a path, how to count what it compiled.
OUR_IMPORT = "from pysandboxes.rules import load_policy"
OUR_LOADER = "load_policy"
OUR_PATH = "{}"  # load_policy takes a str
OUR_COUNTS = (
    "{'os-sandbox': r.os_sandbox.value, 'net': len(r.net.rules),"
    " 'expose': sum(1 for x in r.rules if x.key.startswith('expose-')), 'import': len(r.imports),"
    " 'api': len(r.api.rules), 'env+unenv': len(r.env.rules) + len(r.env.unenv),"
    " 'eval profiles': len(r.eval_profiles)}"
)
REF_IMPORT = "from pathlib import Path; from pysandboxes.py_sandbox import load_and_parse_config"
REF_LOADER = "load_and_parse_config"
REF_PATH = "Path({})"  # it needs a Path (it calls .is_relative_to); built before the timed call
REF_COUNTS = (
    "{'os-sandbox': r.os_sandbox, 'net': len(r.socket_rules),"
    " 'expose': sum(1 for x in r.config if x.rule.startswith('expose-')), 'import': len(r.import_rules),"
    " 'api': len(r.api_rules), 'env+unenv': len(r.envs_rules), 'eval profiles': len(r.eval_rules)}"
)

# The in-process driver, run by each side's interpreter: import, one first load, warm-up, timed loads.
DRIVER = """\
import json, time
{import_}
path = {path}
t0 = time.perf_counter(); r = {loader}(path); first = time.perf_counter() - t0
counts = {counts}
for _ in range({warmup}):
    {loader}(path)
times = []
for _ in range({loads}):
    t0 = time.perf_counter(); {loader}(path); times.append(time.perf_counter() - t0)
print(json.dumps({{"first": first, "times": times, "counts": counts}}))
"""


class InProcess(NamedTuple):
    load: float  # median of every timed load of every process
    first: float  # median over the processes of their first load
    counts: dict[str, object]


class Side:
    """The commands that measure one implementation."""

    def __init__(self, python: Path, import_: str, loader: str, path_form: str, counts: str, profile: Path):
        self.python = str(python)
        self.import_ = import_
        self.loader = loader
        self.path_form = path_form
        self.counts = counts
        self.cmd_pass = [self.python, "-c", "pass"]
        self.cmd_import = [self.python, "-c", import_]
        self.cmd_load = [self.python, "-c", f"{import_}; {loader}({self._path(profile)})"]

    def _path(self, profile: Path) -> str:
        return self.path_form.format(repr(str(profile)))

    def in_process(self, profile: Path) -> InProcess:
        code = DRIVER.format(
            import_=self.import_,
            loader=self.loader,
            path=self._path(profile),
            counts=self.counts,
            warmup=LOAD_WARMUP,
            loads=LOADS,
        )
        firsts: list[float] = []
        times: list[float] = []
        counts: dict[str, object] = {}
        for _ in range(LOAD_PROCESSES):
            result = json.loads(run_child([self.python, "-c", code], cwd=SCRATCH))
            firsts.append(result["first"])
            times += result["times"]
            counts = result["counts"]
        return InProcess(median(times), median(firsts), counts)

    def processes(self) -> list[float]:
        """Medians of: python -c pass, import the loader, import + load the profile."""
        commands = (self.cmd_pass, self.cmd_import, self.cmd_load)
        for cmd in commands:
            warm_bytecode(cmd, cwd=SCRATCH)
        return [time_process(cmd, cwd=SCRATCH).median for cmd in commands]


def show(cmd: list[str], python_name: str) -> str:
    """``$PY -c "..."`` with the long paths replaced by the names the notes define."""
    args = cmd[1:]
    text = " ".join(f'"{a}"' if " " in a and '"' not in a else shlex.quote(a) for a in args)
    for path, name in ((str(REF_PROFILE), "$REF_PROFILE"), (str(OUR_PROFILE), "$OUR_PROFILE")):
        text = text.replace(path, name)
    return f"{python_name} {text}"


def main() -> int:
    ref = reference()
    write_profiles(ref.python)
    ours = Side(OUR_PYTHON, OUR_IMPORT, OUR_LOADER, OUR_PATH, OUR_COUNTS, OUR_PROFILE)
    theirs = None
    if ref.python is not None:
        theirs = Side(ref.python, REF_IMPORT, REF_LOADER, REF_PATH, REF_COUNTS, REF_PROFILE)
    missing = None if ref.available else ref.reason

    our_full = ours.in_process(OUR_PROFILE)
    our_bare = ours.in_process(LEARNED_ONLY)
    our_proc = ours.processes()
    ref_full = ref_bare = None
    ref_proc: list[float | None] = [None, None, None]
    if theirs is not None:
        try:
            ref_full = theirs.in_process(REF_PROFILE)
            ref_bare = theirs.in_process(LEARNED_ONLY)
            ref_proc = list(theirs.processes())
        except CommandFailed as exc:
            missing = f"its loader failed: {exc}"
            ref_full = ref_bare = None
            ref_proc = [None, None, None]

    def diff(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None else a - b

    def cmd(attr: str) -> str:
        text = show(getattr(ours, attr), "$PY")
        if theirs is not None:
            text += " ; " + show(getattr(theirs, attr), "$REF_PY")
        return text

    n_lines = sum(len(v) for v in learned_lines().values())
    per_run = f"median of {LOAD_PROCESSES} processes × {LOADS} loads, after {LOAD_WARMUP} warm-up loads each"
    driver_cmd = f"ours: {OUR_LOADER}(path); ref: {REF_LOADER}(path) — DRIVER in bench/bench_rules.py"
    rows = [
        Row(
            f"load the profile, in-process ({per_run})",
            our_full.load,
            ref_full.load if ref_full else None,
            driver_cmd,
        ),
        Row(
            f"load only the {n_lines} learned lines + os-sandbox=landlock, the same file on both sides, in-process",
            our_bare.load,
            ref_bare.load if ref_bare else None,
            "same driver on $LEARNED_ONLY",
        ),
        Row(
            f"first load of the profile in a fresh process, after the import (median of {LOAD_PROCESSES})",
            our_full.first,
            ref_full.first if ref_full else None,
            "same driver, its first call",
        ),
        Row("process: python -c pass", our_proc[0], ref_proc[0], cmd("cmd_pass")),
        Row("process: import the loader", our_proc[1], ref_proc[1], cmd("cmd_import")),
        Row("process: import the loader + load the profile", our_proc[2], ref_proc[2], cmd("cmd_load")),
        Row(
            "process: import + load, minus python -c pass",
            diff(our_proc[2], our_proc[0]),
            diff(ref_proc[2], ref_proc[0]),
            "difference of the rows above",
        ),
    ]
    counts_ok = ref_full is None or (
        ref_full.counts == our_full.counts and ref_bare.counts == our_bare.counts
    )
    notes = [
        f"profile = each side's own template (`init` output, os-sandbox default landlock) + the same {n_lines} "
        "learned lines (env, expose-ro of temp dirs, net with IPs, python-import, python-api, eval-*): "
        f"$OUR_PROFILE={OUR_PROFILE} ({_lines(OUR_PROFILE)} lines), "
        f"$REF_PROFILE={REF_PROFILE} ({_lines(REF_PROFILE) if theirs else 'n/a'} lines); "
        f"$LEARNED_ONLY={LEARNED_ONLY}",
        f"$PY={OUR_PYTHON}, $REF_PY={ref.python or 'n/a'} (venvs of the same CPython {sys.version.split()[0]})",
        f"compiled from the profile by ours: {_counts(our_full.counts)}; by {REFERENCE_LABEL}: "
        f"{_counts(ref_full.counts) if ref_full else 'n/a'}",
        "measured: ours pysandboxes.rules.load_policy(path) -> Policy; reference "
        "pysandboxes.py_sandbox.load_and_parse_config(Path(path)) -> AllRules (read, includes, env, "
        "substitution, every rule family; nothing activated; see the module docstring). The reference's "
        "first load also imports the daemon class of the os-sandbox provider to parse its dotted keys "
        "(landlock: remote.landlock_daemon -> remote.client_subprocess_sse_daemon -> aiohttp, ~0.1 s)",
        process_tool_note(),
        BYTECODE_NOTE,
        f"reference venv: {ref.reason}",
    ]
    if not counts_ok:
        notes.append(
            "WARNING: the two sides compiled different numbers of rules: not a like-for-like comparison"
        )
    print(Table("Rule language: load a realistic profile", rows, notes, missing).render())
    return 0


def _lines(path: Path) -> str:
    return str(len(path.read_text(encoding="utf-8").splitlines())) if path.exists() else "n/a"


def _counts(counts: dict[str, object]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items())


if __name__ == "__main__":
    sys.exit(main())
