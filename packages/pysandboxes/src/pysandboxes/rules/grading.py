"""The one risk table of rule changes: how much a right added to (or removed from) a rule file
widens what the program may do, graded ``high``, ``medium`` or ``low``.

Everything that grades rule changes reads this module: ``pysandboxes diff BASE..HEAD`` and the
``pysandboxes-review-rules`` skill script of ``coding-agents/``. The table, in words, is in
docs/rules.md ("Grading rule changes"); ``GRADING_TABLE`` below is the same table as data.

A rule is graded from its text (``key`` and the ``value`` as written, ``${VAR:-default}``
included), not from its expansion: a variable that chooses a path or a provider is itself a
risk, whoever runs the program sets it.

Standard library only (``re``): the skill script imports it under a locked rule file.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

GRADES = ("high", "medium", "low")
RANK = {g: i for i, g in enumerate(GRADES)}

#: change kinds: a right added or removed; a refusal removed or a setting weakened (widened);
#: a refusal added or a setting tightened (narrowed)
CHANGES = ("added", "widened", "removed", "narrowed")
WIDENING = frozenset({"added", "widened"})

#: Modules whose import alone is a way around the Python layer, or a way to run code it does
#: not see: native memory, processes, dynamic imports and code, deserialization, debuggers,
#: frame and object-graph introspection.
DANGEROUS_MODULES = frozenset(
    (
        *("ctypes", "_ctypes", "cffi", "mmap", "posix", "nt", "_posixsubprocess", "subprocess", "pty"),
        *("multiprocessing", "_winapi", "importlib", "pkgutil", "runpy", "zipimport", "code", "codeop"),
        *("pickle", "_pickle", "marshal", "shelve", "dill", "cloudpickle", "copyreg"),
        *("pdb", "bdb", "inspect", "gc", "faulthandler", "trace", "cProfile", "profile", "atexit"),
        *("webbrowser", "sys_monitoring"),
    )
)
#: python-api categories (``pysandboxes explain --api``): what granting each one means
HIGH_API = {
    "*": "allows every sensitive call: the API guard is off",
    "process-exec": "starts other programs, which the Python layer cannot watch",
    "native": "loads native code and touches raw memory",
    "dynamic-code": "lets eval/exec/compile run code unguarded",
    "deserialization": "unpickles data, which can run any code",
    "introspection": "lets tracing and the object graph reach into the guards' own frames",
}
MEDIUM_API = {
    "process-control": "signals and waits on other processes",
    "privileges": "changes user, group or capabilities",
    "threads": "starts threads",
}
#: function prefixes of the high categories, for ``python-api=ALLOW:<function>`` lines
HIGH_FUNCTIONS = (
    *("os.system", "os.popen", "os.exec", "os.spawn", "os.posix_spawn", "os.fork", "subprocess."),
    *("pty.", "ctypes.", "_ctypes.", "builtins.eval", "builtins.exec", "builtins.compile"),
    *("pickle.", "_pickle.", "marshal.", "sys.settrace", "sys.setprofile"),
    *("sys._getframe", "gc.get_referrers", "gc.get_objects"),
)
#: the profiles of the user and of the machine: dropping their include escapes their net=DENY
USER_GLOBAL_INCLUDES = (
    "~/.config/py-sandboxes/user-py-sandboxes.profile",
    "/etc/py-sandboxes/global-py-sandboxes.profile",
)
#: home directories holding keys and tokens: reading them is as bad as reading the home
SECRET_DIRS = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    ".netrc",
    ".config/gh",
    ".git-credentials",
)

_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|KEY|CREDENTIAL|AUTH|COOKIE|SESSION|^AWS_|^GH_|^GITHUB_")
_TMP = re.compile(r"^(\$\{TMPDIR(:-[^}]*)?\}|/tmp|/var/tmp)(/.*)?$")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_ANY_PORT = frozenset(("*", "0-65535", "1-65535", "0-", "1-", "1024-"))
_ANY_HOST = frozenset(("*", "0.0.0.0/0", "::/0", "[::]/0"))
_FALSE = frozenset(("false", "0", "no", "off"))

#: The table in words, riskiest first: (grade, change, rules). docs/rules.md shows it as is (a test
#: keeps the two the same).
GRADING_TABLE: tuple[tuple[str, str, str], ...] = (
    (
        "high",
        "added",
        "`python-import=*`, or a module that is a way around the Python layer or runs unseen code (ctypes, cffi, mmap, posix, subprocess, pty, multiprocessing, importlib, pkgutil, runpy, zipimport, code, pickle, marshal, shelve, dill, cloudpickle, copyreg, pdb, bdb, inspect, gc, faulthandler, trace, cProfile, atexit, webbrowser, ...)",
    ),
    (
        "high",
        "added",
        "`python-api=ALLOW:` `*`, `process-exec`, `native`, `dynamic-code`, `deserialization`, `introspection`, or one of their functions (`os.system`, `subprocess.*`, `builtins.eval`, `pickle.*`, `sys.settrace`, ...)",
    ),
    (
        "high",
        "added",
        "`net=ALLOW` to any host (`*`, `0.0.0.0/0`, `::/0`), on every port, or to a host chosen by a variable",
    ),
    (
        "high",
        "added",
        "`expose-rw` of `/`, the home directory, the whole repository, `.git`, or outside the repository (the temporary directory excepted); `expose-ro` of `/`, the home directory or a key directory (`~/.ssh`, `~/.gnupg`, `~/.aws`, `~/.kube`, `~/.docker`, `~/.config/gh`, ...)",
    ),
    (
        "high",
        "added",
        "an `env=` pattern (`env=*=${*}`, `env=AWS_*=${AWS_*}`)",
    ),
    (
        "high",
        "added",
        "`learn=` other than `false`; `py-sandbox=false`; `os-sandbox=none`, `os-sandbox=subprocess` or a variable in `os-sandbox=`",
    ),
    (
        "high",
        "added",
        "`remote-result-mode=objects`, `remote-result-guard=false`, `eval-namespace=caller`; `bwrap.share-net=true` (or `unshare-net=false`), `firejail.seccomp=false`",
    ),
    (
        "high",
        "added",
        '`include "./..."` or `include "../..."`: rules from the directory the program is started in',
    ),
    (
        "high",
        "widened",
        "`learn=false` removed; the user's or the machine's profile include removed",
    ),
    (
        "medium",
        "added",
        "other `python-api=ALLOW:` lines (`threads`, `process-control`, `privileges`, one function)",
    ),
    (
        "medium",
        "added",
        "`net=ALLOW` to one host and port",
    ),
    (
        "medium",
        "added",
        "`expose-rw` inside the repository or of the temporary directory; `expose-ro` outside the repository or of the whole repository; a path chosen by a variable without default",
    ),
    (
        "medium",
        "added",
        "a secret-looking `env=` name (TOKEN, SECRET, PASSW, KEY, CREDENTIAL, AUTH, COOKIE, SESSION, `AWS_`, `GH_`, `GITHUB_`)",
    ),
    (
        "medium",
        "added/widened",
        "another provider in `os-sandbox=`; another include; an `eval-*` widening; another provider option",
    ),
    (
        "medium",
        "widened",
        "a `net=DENY`, `python-api=DENY:`, `unenv=` or `ignore=` line removed",
    ),
    (
        "low",
        "added",
        "a plain import; `expose-ro` of a directory inside the repository; one ordinary `env=` variable",
    ),
    (
        "low",
        "narrowed",
        "a DENY line, `unenv=`, `ignore=`, a limit, `learn=false`, `py-sandbox=true`, the user's or the machine's profile include added; a setting made stronger",
    ),
    (
        "low",
        "removed / widened",
        "any right removed; a limit removed or raised",
    ),
)


class Graded:
    """The grade of one change, why, and what code would justify it (``look_for``)."""

    __slots__ = ("change", "grade", "look_for", "why")

    def __init__(self, grade: str, change: str, why: str, look_for: str = "") -> None:
        self.grade, self.change, self.why, self.look_for = grade, change, why, look_for

    @property
    def widens(self) -> bool:
        return self.change in WIDENING

    def __repr__(self) -> str:
        return f"Graded({self.grade!r}, {self.change!r}, {self.why!r})"


def is_refusal(key: str, value: str) -> bool:
    """Whether the rule takes rights away (adding it narrows, removing it widens)."""
    v = value.strip()
    low = v.lower()
    if key in ("net", "python-api"):
        return v.split("|" if key == "net" else ":", 1)[0].strip().upper() == "DENY"
    if key in ("unenv", "ignore", "timeout") or key.startswith("limit-"):
        return True  # a limit added bounds a run that had none
    if key == "learn":
        return low in _FALSE
    if key.startswith("include"):
        return v in USER_GLOBAL_INCLUDES  # their net=DENY apply
    if key in ("py-sandbox", "remote-result-guard"):
        return low not in _FALSE
    if key == "remote-result-mode":
        return low != "objects"
    return False


def is_bound(key: str) -> bool:
    """A number that bounds a run (a larger value grants more)."""
    base = key.split(":", 1)[0]
    return (
        key in ("timeout", "remote-max-payload")
        or key.startswith("limit-")
        or base == "eval-timeout"
        or base.startswith("eval-max-")
    )


def default_of(value: str) -> str:
    """``${X:-./out}`` -> ``./out`` for grading a path (the variable is graded on its own)."""
    return _VARIABLE.sub(lambda m: m.group(2) if m.group(2) is not None else "${" + m.group(1) + "}", value)


def _is_home(path: str) -> bool:
    p = path.rstrip("/")
    return p in ("~", "${HOME}", "$HOME") or re.fullmatch(r"/home/[^/]+|/root|/Users/[^/]+", p) is not None


def _in_secret_dir(path: str) -> bool:
    p = path.rstrip("/")
    for home in ("~", "${HOME}", "$HOME"):
        if p.startswith(home + "/"):
            rest = p[len(home) + 1 :]
            return any(rest == d or rest.startswith(d + "/") for d in SECRET_DIRS)
    m = re.match(r"^(/home/[^/]+|/root|/Users/[^/]+)/(.+)$", p)
    return m is not None and any(m.group(2) == d or m.group(2).startswith(d + "/") for d in SECRET_DIRS)


def _depth(path: str, rule_file: str) -> int | None:
    """How deep under the repository root a relative path lands, from the rule file's
    directory (``rule_file`` relative to the root); negative when it climbs out, None for an
    absolute path."""
    if path.startswith(("/", "~", "$")):
        return None
    depth = rule_file.count("/")
    for part in path.split("/"):
        if part == "..":
            depth -= 1
            if depth < 0:
                return -1
        elif part not in ("", "."):
            depth += 1
    return depth


def grade_added(key: str, value: str, rule_file: str = "") -> Graded:
    """The grade of a rule that the change adds. ``rule_file``: the path of the file holding it,
    relative to the repository root (tells whether ``../x`` climbs out of the repository)."""
    value = value.strip()
    change = "narrowed" if is_refusal(key, value) else "added"

    def f(grade: str, why: str, look: str = "") -> Graded:
        return Graded(grade, change, why, look)

    if key == "python-import":
        if value == "*":
            return f("high", "allows every import, so learning and review see none", "every import")
        top = value.split(".", 1)[0]
        if top in DANGEROUS_MODULES:
            return f(
                "high", f"{top} is a way around the Python layer or to run unseen code", f"import {value}"
            )
        return f("low", "an import", f"import {value} / from {value} import ...")
    if key == "python-api":
        action, _, target = value.partition(":")
        target = target.strip()
        if action.strip().upper() != "ALLOW":
            return f("low", "a refusal of sensitive calls")
        if target in HIGH_API:
            return f("high", HIGH_API[target], f"the calls of category {target}")
        if target.startswith(HIGH_FUNCTIONS) or target in ("eval", "exec", "compile"):
            return f("high", "a function of a high-risk category", f"the call {target}(...)")
        if target in MEDIUM_API:
            return f("medium", MEDIUM_API[target], f"the calls of category {target}")
        return f("medium", "a sensitive call", f"the call {target}(...)")
    if key == "net":
        parts = [p.strip() for p in value.split("|")]
        if len(parts) != 5:
            return f("medium", "a network rule this grading cannot read")
        action, _proto, host, ports, direction = parts
        if action.upper() != "ALLOW":
            return f("low", "a network refusal")
        look = f"a connection to {host}:{ports}" if direction.upper() != "IN" else f"a server on {ports}"
        if host in _ANY_HOST or "${" in host:
            return f(
                "high",
                "opens the network to any host" if "${" not in host else "a variable picks the host",
                look,
            )
        if ports in _ANY_PORT or ("${" in ports and ":-" not in ports):
            return f("high", "opens every port of the host", look)
        return f("medium", f"network {direction.upper() or 'OUT'} to one host", look)
    if key in ("expose-rw", "expose-ro"):
        return _grade_exposure(key, value, rule_file, f)
    if key == "env":
        name = value.split("=", 1)[0].strip()
        look = f'os.environ["{name}"] / os.getenv("{name}")'
        if "*" in name or "?" in name:
            return f("high", "forwards every variable matching a pattern (secrets included)", look)
        if _SECRET_NAME.search(name.upper()):
            return f("medium", "forwards a secret-looking variable", look)
        return f("low", "forwards one variable", look)
    if key == "learn":
        if value.lower() in _FALSE:
            return f("low", "locks the rules")
        return f("high", "turns learning on: every access is allowed and recorded")
    if key == "py-sandbox":
        if value.lower() in _FALSE:
            return f("high", "turns the Python layer off")
        return f("low", "the Python layer stays on")
    if key == "os-sandbox":
        if "${" in value:
            return f("high", "a variable chooses (or weakens) the OS provider; name it")
        if value.lower() in ("none", "subprocess"):
            return f("high", f"os-sandbox={value}: no kernel boundary")
        return f("medium", "changes the OS provider")
    if key == "remote-result-mode":
        if value.lower() == "objects":
            return f("high", "@sandbox results may be any object: the host unpickles what the child sends")
        return f("low", "@sandbox results stay plain data")
    if key == "remote-result-guard":
        if value.lower() in _FALSE:
            return f("high", "the host no longer checks @sandbox results")
        return f("low", "the host checks @sandbox results")
    if key.split(":", 1)[0] == "eval-namespace":
        if value.lower() == "caller":
            return f("high", "code given to eval sees the caller's variables")
        return f("low", "code given to eval gets its own namespace")
    if key.startswith("include"):
        if value in USER_GLOBAL_INCLUDES:
            return f("low", "the user's or the machine's profile applies (their net=DENY win)")
        if value.startswith(("./", "../")):
            return f(
                "high",
                "reads rules from the directory the program is started in: whoever runs it adds rights",
            )
        return f("medium", "reads more rules from another file: review that file too", f"the file {value}")
    if is_bound(key):
        return f("low", "a bound (time, memory, size, count)")
    if key in ("unenv", "ignore"):
        return f("low", "hides a variable or a file")
    if key.startswith("eval-"):
        return f("medium", "widens the sub-language of code given to eval", "the eval/exec call")
    if key in ("bwrap.share-net", "unshare.share-net") and value.lower() not in _FALSE:
        return f("high", "native code shares the host's network: no net= rule holds for it")
    if key in ("bwrap.unshare-net", "unshare.unshare-net") and value.lower() in _FALSE:
        return f("high", "native code shares the host's network: no net= rule holds for it")
    if key == "firejail.seccomp" and value.lower() in _FALSE:
        return f("high", "firejail without its seccomp filter")
    if "." in key:
        return f("medium", "an option of an OS provider: it changes how the kernel confines the program")
    return f("low", "a setting")


def _grade_exposure(key: str, value: str, rule_file: str, grade: Callable[[str, str, str], Graded]) -> Graded:
    path = default_of(value)
    writes = key == "expose-rw"
    look = f"the files opened under {value}" + (" for writing" if writes else "")
    if path.rstrip("/") in ("", "/") or _is_home(path):
        where = "home directory" if path.strip("/") else "file system"
        return grade("high", f"{'writes' if writes else 'reads'} the whole {where}", look)
    if _in_secret_dir(path):
        return grade("high", f"{'writes' if writes else 'reads'} a directory of keys or tokens", look)
    if "${" in path:
        return grade("medium", "a variable without a default chooses the path", look)
    if writes and (_TMP.match(value) or _TMP.match(path)):
        return grade("medium", "writes the temporary directory, shared with other programs", look)
    depth = _depth(path, rule_file)
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if writes and ".git" in parts:
        return grade("high", "writes .git: its hooks run outside the sandbox", look)
    outside = depth is None or depth < 0
    if writes and outside:
        return grade("high", "writes outside the repository", look)
    if writes and depth == 0:
        return grade("high", "writes the whole repository, .git and its hooks included", look)
    if writes:
        return grade("medium", "writes inside the repository", look)
    if outside:
        return grade("medium", "reads outside the repository", look)
    if depth == 0:
        return grade("medium", "reads the whole repository, its .env and .git included", look)
    return grade("low", "reads inside the repository", look)


def grade_removed(key: str, value: str) -> Graded:
    """The grade of a rule that the change removes."""
    value = value.strip()
    change = "widened" if is_refusal(key, value) else "removed"

    def f(grade: str, why: str) -> Graded:
        return Graded(grade, change, why)

    if key == "learn" and value.lower() in _FALSE:
        return Graded(
            "high",
            "widened",
            "unlocks the rules: the command line and the code may add rules, --learn works again",
        )
    if key.startswith("include") and value in USER_GLOBAL_INCLUDES:
        return Graded(
            "high", "widened", "drops the user's or the machine's profile: their net=DENY no longer apply"
        )
    if key == "net" and change == "widened":
        return f("medium", "removes a network refusal")
    if key == "python-api" and change == "widened":
        return f("medium", "removes a refusal of sensitive calls")
    if key in ("unenv", "ignore"):
        return f("medium", "removes a refusal")
    if key.startswith("limit-") or key == "timeout":
        return f("low", "removes a resource limit")
    if key == "os-sandbox":
        return f("medium", "the OS provider changes")
    if key in ("py-sandbox", "remote-result-guard", "remote-result-mode"):
        return f("low", "back to the default (the safe one)")
    return f("low", "a right removed")


_OS_STRENGTH = {"none": 0, "subprocess": 1}


def grade_changed(
    key: str, old: str, new: str, rule_file: str = "", number: Callable[[str], float] | None = None
) -> Graded:
    """The grade of a setting (a key set once) whose value changes from ``old`` to ``new``.

    ``number``: a function turning a value into a comparable number, for the limits (bigger is
    wider); without it, or when it fails, the grades of both values decide.
    """
    after = grade_added(key, new, rule_file)
    before = grade_added(key, old, rule_file)
    if is_bound(key) and number is not None:
        try:
            wider = number(new) > number(old)
        except (TypeError, ValueError):
            wider = True
        if wider:
            return Graded("low", "widened", "raises a limit", after.look_for)
        return Graded("low", "narrowed", "lowers a limit", after.look_for)
    if key == "os-sandbox" and "${" not in old + new:
        a, b = _OS_STRENGTH.get(old.strip().lower(), 2), _OS_STRENGTH.get(new.strip().lower(), 2)
        if b < a:
            return Graded(after.grade, "widened", after.why)
        if b > a:
            return Graded("low", "narrowed", f"os-sandbox={new.strip()}: a stronger boundary")
        return Graded("medium", "widened", "another OS provider: check that it holds what the old one held")
    if RANK[after.grade] < RANK[before.grade] or (after.change == "added" and before.change == "narrowed"):
        return Graded(after.grade, "widened", after.why, after.look_for)
    if RANK[after.grade] > RANK[before.grade] or (after.change == "narrowed" and before.change == "added"):
        return Graded("low", "narrowed", after.why, after.look_for)
    # The same grade both ways (a changed default, another file name): a change to review.
    return Graded(after.grade, "widened", after.why, after.look_for)


def table_markdown() -> str:
    """``GRADING_TABLE`` as the Markdown table docs/rules.md shows."""
    rows = [f"| {grade} | {change} | {rules} |" for grade, change, rules in GRADING_TABLE]
    return "\n".join(["| Grade | Change | Rules |", "|---|---|---|", *rows]) + "\n"
