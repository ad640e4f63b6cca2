"""Turn what a learning run recorded into rules, and write them where a human reviews them.

Every recorded value is validated first: a name that is not an environment-variable name, a
module name, a host or a plain path is refused and reported, so a program can never write a
rule through a crafted name. Only lines that are not in the file yet are added, into the
template's ``# <learning_guard_…>`` blocks, under a dated comment; the previous file is kept
as ``FILE.old`` (``.old_1``, ``.old_2``… when it exists), and the new one replaces it
atomically, with the same mode.
"""

from __future__ import annotations

import ipaddress
import os
import sys
import time

from .._record import Record
from ..rules.api_registry import CATEGORY_OF, FUNCTIONS_BY_CATEGORY, RISKY_CATEGORIES, category_help
from .recorder import Recorder

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from ..rules.policy import Policy

#: The order of the families in the summary, with the template block each one fills.
FAMILIES = (
    ("env", "envs"),
    ("files", "files"),
    ("network", "socket"),
    ("imports", "import"),
    ("api", "api"),
    ("eval", "eval"),
    ("result", "remote_result"),
)

#: Modules that run code, load native code or rebuild objects: flagged in learned profiles.
_DANGEROUS = "_ctypes _pickle _posixsubprocess bdb cffi cloudpickle code codeop ctypes dill imp importlib"
DANGEROUS_MODULES = frozenset(
    f"{_DANGEROUS} marshal multiprocessing pdb pickle pty runpy shelve subprocess".split()
)

_SCAN_LIMIT = 30
#: a comment line that stands alone (not above a rule): written once, counted as no rule
NOTE = "# note: "


class Learned(Record):
    """The rules of one learning run, per family, and what could not be written."""

    __slots__ = ("lines", "refused")
    lines: dict[str, list[str]]  # family -> lines (rules and their comments)
    refused: list[str]  # human-readable: what was not written and why


# -- validation ----------------------------------------------------------------------------


def _is_env_name(name: str) -> bool:
    return (
        bool(name)
        and name.isascii()
        and (name[0].isalpha() or name[0] == "_")
        and name.replace("_", "a").isalnum()
    )


def _is_module(name: str) -> bool:
    import keyword

    return name.isidentifier() and not keyword.iskeyword(name)


def _is_host(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        pass
    if not host or len(host) > 253 or not host.isascii():
        return False
    labels = host.rstrip(".").split(".")
    return all(
        0 < len(label) <= 63 and label[0] != "-" and label[-1] != "-" and label.replace("-", "a").isalnum()
        for label in labels
    )


def _path_problem(path: str) -> str | None:
    if any(ord(c) < 32 or ord(c) == 127 for c in path):
        return "a control character"
    for bad in ("#", "$", '"', "`"):
        if bad in path:
            return f"'{bad}', which the rule language would read"
    if any(part != part.strip() for part in path.split("/")):
        return "a name with leading or trailing spaces"
    return None


def _shown(value: str) -> str:
    return repr(value) if len(value) < 80 else repr(value[:77] + "...")


# -- each family ---------------------------------------------------------------------------


def _env_lines(recorder: Recorder, policy: Policy, refused: list[str]) -> list[str]:
    covered_exact = {r.name for r in policy.env.rules if not r.is_pattern}
    patterns = [r.name for r in policy.env.rules if r.is_pattern] + [name for name, _ in policy.env.unenv]
    from fnmatch import fnmatchcase

    lines: list[str] = []
    absent: list[str] = []
    scanned: list[str] = []
    for name in sorted(recorder.env):
        if not _is_env_name(name):
            refused.append(f"environment variable {_shown(name)}: not a variable name")
            continue
        if name in covered_exact or any(fnmatchcase(name, p) for p in patterns):
            continue
        how = recorder.env[name]
        if how == "scan":
            scanned.append(name)
        elif how == "absent":
            absent.append(name)
        else:
            lines.append(f"env={name}=${{{name}}}")
    if absent:  # the strict run sees them unset too; a grant is for a variable someone sets
        lines.append("# read by name but not set while learning: uncomment those the program may be given")
        lines += [f"#env={name}=${{{name}}}  # absent while learning" for name in absent]
    if scanned:
        if len(scanned) <= _SCAN_LIMIT:
            lines += [f"#env={name}=${{{name}}}  # listed by a scan of os.environ only" for name in scanned]
        else:
            lines.append(
                f"# os.environ was scanned: {len(scanned)} names were listed but not read by name; "
                "none is granted"
            )
    return lines


class _Places:
    """How a directory is written: ``./…`` under the rule file's directory, ``~/…`` under
    the home directory, ``${VIRTUAL_ENV}/…``, ``${TMPDIR:-/tmp}/…``, absolute elsewhere."""

    def __init__(self, base: str, environ: Mapping[str, str]) -> None:
        roots: list[tuple[str, str]] = [(os.path.realpath(base), ".")]
        home = environ.get("HOME")
        if home and os.path.isabs(home):
            roots.append((os.path.realpath(home), "~"))
        venv = environ.get("VIRTUAL_ENV")
        if venv and os.path.isabs(venv):
            roots.append((os.path.realpath(venv), "${VIRTUAL_ENV}"))
        tmp = environ.get("TMPDIR") or "/tmp"
        if os.path.isabs(tmp):
            roots.append((os.path.realpath(tmp), "${TMPDIR:-/tmp}"))
        # the longest root first: a project under the home directory is written ./…
        self.roots = sorted(roots, key=lambda r: len(r[0]), reverse=True)
        self.home = os.path.realpath(home) if home else None

    def spell(self, path: str) -> str:
        for root, word in self.roots:
            if path == root:
                return word
            if path.startswith(root.rstrip("/") + "/"):
                return f"{word}/{path[len(root.rstrip('/')) + 1 :]}"
        return path

    def too_broad(self, path: str) -> bool:
        return path in ("/", self.home, "/home", "/root", "/dev")


def _directory_for(path: str, write: bool) -> str | None:
    """The directory a rule should expose for ``path``: the path if it is a directory, else
    its parent; the nearest existing one when it is gone (temporary files)."""
    real = os.path.realpath(path)
    if os.path.isdir(real):
        directory = real
    else:
        directory = os.path.dirname(real)
    if os.path.basename(directory) == "__pycache__":  # a module's cached bytecode: its directory
        directory = os.path.dirname(directory)
    while not os.path.isdir(directory):
        if directory == "/":
            return None
        directory = os.path.dirname(directory)
    return directory


def _file_lines(recorder: Recorder, places: _Places, refused: list[str]) -> tuple[list[str], list[str]]:
    wanted: dict[str, bool] = {}
    for path, write in recorder.files.items():
        problem = _path_problem(path)
        if problem is not None:
            refused.append(f"path {_shown(path)}: it contains {problem}")
            continue
        directory = _directory_for(path, write)
        if directory is None:
            continue
        problem = _path_problem(directory)
        if problem is not None:
            refused.append(f"path {_shown(directory)}: it contains {problem}")
            continue
        wanted[directory] = wanted.get(directory, False) or write
    kept: dict[str, bool] = {}
    broad: list[str] = []
    for directory in sorted(wanted, key=lambda d: (d.count("/"), d)):
        write = wanted[directory]
        if places.too_broad(directory):
            broad.append(
                f"#expose-{'rw' if write else 'ro'}={places.spell(directory)}  "
                "# ⚠ too broad to learn: expose the narrower directory the program needs"
            )
            continue
        absorbed = False
        probe = directory
        while probe != "/":
            probe = os.path.dirname(probe)
            if probe in kept and (kept[probe] or not write):
                absorbed = True
                break
        if not absorbed:
            kept[directory] = write
    lines = [f"expose-{'rw' if w else 'ro'}={places.spell(d)}" for d, w in sorted(kept.items())]
    return lines, broad


def _dotenv_lines(recorder: Recorder, places: _Places) -> list[str]:
    """A note per ``.env`` file the program read: no rule (it holds secrets; the strict run
    refuses it, and ``load_dotenv()`` then finds no file), how to pass its variables instead."""
    lines = []
    for path in sorted(recorder.dotenv):
        if _path_problem(path) is None:
            lines.append(
                f"{NOTE}the program read {places.spell(path)}: not learned, it holds secrets. Pass the "
                "variables it needs with env=NAME=${NAME} (see docs/learning.md, .env files)"
            )
    return lines


def _port_variables(recorder: Recorder, environ: Mapping[str, str]) -> dict[int, str]:
    """Ports given by a variable the program read (``*PORT*``): written ``${VAR}``, so the
    rule follows the variable as the program does."""
    found: dict[int, str] = {}
    for name, how in sorted(recorder.env.items()):
        value = environ.get(name, "")
        if how == "present" and "PORT" in name.upper() and value.isdigit() and _is_env_name(name):
            found.setdefault(int(value), name)
    return found


def _net_lines(recorder: Recorder, refused: list[str], environ: Mapping[str, str]) -> list[str]:
    by_variable = _port_variables(recorder, environ)
    ports: dict[tuple[str, str, str], set[int]] = {}
    used_names: set[str] = set()
    for protocol, host, port, direction in recorder.net:
        # a listener is written with the address it bound; a connection with the name it used
        name = recorder.addresses.get(host, host) if direction == "out" else host
        if name != host:
            used_names.add(name)
        if not _is_host(name):
            refused.append(f"host {_shown(name)}: not an address or a host name")
            continue
        if protocol not in ("tcp", "udp") or direction not in ("in", "out") or not 0 <= port <= 65535:
            refused.append(f"connection {protocol} {_shown(name)} {port} {direction}: not a rule")
            continue
        ports.setdefault((protocol, name.lower(), direction), set()).add(port)
        if name == host:
            used_names.add(name.lower())
    probes = sorted(
        (protocol, host)
        for protocol, host, _port, _direction in recorder.probes - recorder.net
        if _is_host(host)
    )
    lines = []
    for (protocol, host, direction), numbers in sorted(ports.items()):
        shown = ",".join(f"${{{by_variable[p]}}}" if p in by_variable else str(p) for p in sorted(numbers))
        if 0 in numbers:
            shown = "*"
        lines.append(f"net=ALLOW|{protocol}|{host}|{shown}|{direction.upper()}")
    resolved = set(recorder.addresses.values())
    for name, asked in sorted(recorder.lookups.items()):
        if name in used_names or name.rstrip(".") in used_names:
            continue
        if not _is_host(name):
            refused.append(f"host {_shown(name)}: not an address or a host name")
            continue
        if name not in resolved and name.rstrip(".") not in resolved:
            continue  # the name did not resolve: the program reached nothing through it
        wanted = sorted(p for p in asked if 0 < p <= 65535)
        if wanted:
            lines.append(
                f"net=ALLOW|tcp|{name}|{','.join(map(str, wanted))}|OUT  # resolved, no connection seen"
            )
        else:
            lines.append(f"#net=ALLOW|tcp|{name}|443|OUT  # resolved, no connection seen: check the port")
    for protocol, host in dict.fromkeys(probes):
        lines.append(
            f"#net=ALLOW|{protocol}|{host}|*|IN  # a probe: bound to port 0, then neither listened nor connected"
        )
    return lines


def _wrap(prefix: str, names: list[str], width: int = 70) -> list[str]:
    lines: list[str] = []
    current: list[str] = []
    for name in names:
        if current and len(prefix) + len(", ".join([*current, name])) > width:
            lines.append(prefix + ", ".join(current))
            current = []
        current.append(name)
    if current:
        lines.append(prefix + ", ".join(current))
    return lines


def _installed(name: str) -> bool:
    """Whether the top-level module ``name`` exists here: loaded, or found on ``sys.path``.
    A refused import that then failed (``try: import brotli`` / ``except ImportError``) is no
    right to learn: the strict run fails it the same way."""
    if name in sys.modules:
        return True
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return True  # a finder that cannot tell: keep the rule, for review


def _import_lines(recorder: Recorder, policy: Policy, refused: list[str]) -> list[str]:
    if "*" in policy.imports:
        return []
    groups: dict[str, list[str]] = {"dangerous": [], "standard": [], "third": [], "absent": []}
    for name in sorted(recorder.imports):
        if not _is_module(name):
            refused.append(f"module {_shown(name)}: not a module name")
            continue
        if not _installed(name):
            groups["absent"].append(name)
        elif name in DANGEROUS_MODULES:
            groups["dangerous"].append(name)
        elif name in sys.stdlib_module_names or name.startswith("_"):
            groups["standard"].append(name)
        else:
            groups["third"].append(name)
    lines: list[str] = []
    titles = {
        "dangerous": "# ⚠ Dangerous: they run code, load native code or rebuild objects",
        "standard": "# Standard library",
        "third": "# Third-party: check where each one comes from",
        "absent": "# Tried, absent: not installed while learning (optional imports that failed)",
    }
    for group, names in groups.items():
        if group == "absent":
            wrapped = [f"#python-import={n}" for n in names]
        elif group == "third":
            wrapped = [f"python-import={n}" for n in names]
        else:
            wrapped = _wrap("python-import=", names)
        if wrapped:
            lines += [titles[group], *wrapped]
    return lines


def _api_lines(recorder: Recorder, policy: Policy, refused: list[str]) -> list[str]:
    by_category: dict[str, set[str]] = {}
    for function in recorder.api:
        category = CATEGORY_OF.get(function)
        if category is None:
            refused.append(f"function {_shown(function)}: not a sensitive function this version knows")
            continue
        by_category.setdefault(category, set()).add(function)
    lines: list[str] = []
    for category in sorted(by_category):
        used = by_category[category]
        allowed = {f for f in FUNCTIONS_BY_CATEGORY[category] if policy.decide_api(f).allowed}
        mark = "⚠ " if category in RISKY_CATEGORIES else ""
        lines.append(f"# {mark}{category}: {category_help(category)}")
        if used | allowed >= set(FUNCTIONS_BY_CATEGORY[category]):
            lines.append(f"python-api=ALLOW:{category}")
        else:
            lines += [f"python-api=ALLOW:{f}" for f in sorted(used)]
    return lines


def _eval_lines(recorder: Recorder, policy: Policy, refused: list[str]) -> list[str]:
    """One line per ``eval-*`` key of the default profile, with the names not granted yet."""
    from fnmatch import fnmatchcase

    from ..rules.eval_vocab import CORE_NODES, SYNTAX_GROUPS

    profile = policy.eval_profiles.get("")
    by_key: dict[str, set[str]] = {}
    for fact in sorted(recorder.eval):
        key, _, name = fact.partition("=")
        valid = key in ("eval-syntax", "eval-call", "eval-attribute", "eval-import", "eval-magic")
        if not valid or not name or not name.replace("_", "a").replace(".", "a").replace("-", "a").isalnum():
            refused.append(f"eval rule {_shown(fact)}: not a rule this version writes")
            continue
        if profile is not None:
            grants = {
                "eval-syntax": profile.syntax,
                "eval-call": profile.calls,
                "eval-attribute": profile.attributes,
                "eval-import": profile.imports,
                "eval-magic": profile.magic,
            }[key]
            if key == "eval-syntax":
                nodes = SYNTAX_GROUPS.get(name, frozenset({name}))
                if nodes <= (grants.allow | CORE_NODES):
                    continue
            elif any(fnmatchcase(name, pattern) for pattern in grants.allow):
                continue
        by_key.setdefault(key, set()).add(name)
    order = ("eval-syntax", "eval-import", "eval-call", "eval-attribute", "eval-magic")
    return [f"{key}={', '.join(sorted(by_key[key]))}" for key in order if key in by_key]


def _result_lines(recorder: Recorder, policy: Policy) -> list[str]:
    if not recorder.objects or policy.remote_result_mode.value == "objects":
        return []
    return [
        "# a @sandbox function returned an object, not plain data: the host rebuilds it",
        "remote-result-mode=objects",
    ]


def render(recorder: Recorder, policy: Policy, base: str, environ: Mapping[str, str]) -> Learned:
    """The rules ``recorder`` calls for, per family (without comparing with any file)."""
    refused: list[str] = []
    places = _Places(base, environ)
    files, broad = _file_lines(recorder, places, refused)
    lines = {
        "env": _env_lines(recorder, policy, refused),
        "files": files + broad + _dotenv_lines(recorder, places),
        "network": _net_lines(recorder, refused, environ),
        "imports": _import_lines(recorder, policy, refused),
        "api": _api_lines(recorder, policy, refused),
        "eval": _eval_lines(recorder, policy, refused),
        "result": _result_lines(recorder, policy),
    }
    return Learned(lines=lines, refused=refused)


# -- the file ------------------------------------------------------------------------------


def _is_rule(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and (not stripped.startswith("#") or "=" in stripped.partition(" ")[0])


def _comparable(line: str) -> str:
    """A rule line without its trailing comment and spaces (a rule written by hand with
    another comment is the same rule)."""
    text = line.strip()
    body, sep, _comment = text.partition("  #")
    return body.strip() if sep else text


def merge(text: str, learned: Learned, stamp: str) -> tuple[str, dict[str, int]]:
    """``text`` with the new lines of ``learned`` in its learning blocks, and how many rules
    each family gained. Group comments are kept only above new rules."""
    present = {_comparable(line) for line in text.splitlines() if _is_rule(line)}
    notes = {line.strip() for line in text.splitlines() if line.strip().startswith(NOTE)}
    lines = text.splitlines()
    counts: dict[str, int] = {}
    for family, block in FAMILIES:
        new: list[str] = []
        pending_comments: list[str] = []
        for line in learned.lines.get(family, []):
            if line.startswith(NOTE):  # a note stands alone, written once
                if line not in notes:
                    notes.add(line)
                    new.append(line)
                continue
            if not _is_rule(line):
                pending_comments.append(line)
                continue
            key = _comparable(line)
            if key in present:
                continue
            present.add(key)
            new += pending_comments
            pending_comments = []
            new.append(line)
        rules = sum(
            (len(line.split(",")) if line.startswith("python-import=") else 1)
            for line in new
            if _is_rule(line) and not line.startswith("#")
        )
        candidates = sum(1 for line in new if line.startswith("#") and _is_rule(line))
        if not new:
            continue
        if rules + candidates:
            counts[family] = rules + candidates
        if family == "result":
            lines = [
                f"# {line.strip()}  # superseded by learning on {stamp}"
                if line.strip().startswith("remote-result-mode=")
                else line
                for line in lines
            ]
        insert = [f"# Added by learning on {stamp}", *new]
        marker = f"# </learning_guard_{block}>" if family != "result" else "# </learning_remote_result>"
        position = next((i for i, line in enumerate(lines) if line.strip() == marker), None)
        if position is None:
            opening = marker.replace("</", "<")
            lines += ["", opening, *insert, marker]
        else:
            lines[position:position] = insert
    return "\n".join(lines) + "\n", counts


def _backup_name(path: str) -> str:
    candidate = path + ".old"
    number = 0
    while os.path.lexists(candidate):
        number += 1
        candidate = f"{path}.old_{number}"
    return candidate


def write(
    recorder: Recorder,
    policy: Policy,
    target: str,
    *,
    environ: Mapping[str, str],
    default_provider: str,
) -> tuple[dict[str, int], list[str], str | None, bool]:
    """Write what ``recorder`` learned into ``target``: ``(rules added per family, refused
    values, backup file or None, whether the file was created)``. Nothing new: an existing
    file is left alone; a missing one is still created from the template (a first run that
    needed nothing must not leave every later run learning)."""
    from ..rules.template import render_template

    learned = render(recorder, policy, os.path.dirname(os.path.abspath(target)), environ)
    exists = os.path.exists(target)
    if exists:
        with open(target, encoding="utf-8") as f:
            text = f.read()
    else:
        text = render_template(default_provider)
    stamp = time.strftime("%Y-%m-%d %H:%M")
    merged, counts = merge(text, learned, stamp)
    if not counts and exists:
        return counts, learned.refused, None, False
    backup = None
    mode = 0o644
    if exists:
        import shutil

        backup = _backup_name(target)
        shutil.copy2(target, backup)
        mode = os.stat(target).st_mode & 0o7777
    directory = os.path.dirname(os.path.abspath(target))
    temporary = os.path.join(directory, f".{os.path.basename(target)}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(merged)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        try:  # noqa: SIM105
            os.unlink(temporary)
        except OSError:
            pass
        raise
    return counts, learned.refused, backup, not exists


def summary(
    counts: Mapping[str, int], refused: Iterable[str], target: str, shown_target: str, created: bool = False
) -> list[str]:
    """The lines printed at the end of a learning run."""
    refused = list(refused)
    out: list[str] = []
    if created and not counts:
        out.append(f"learning: wrote {shown_target} from the template; this run needed no other rule")
        out.append(f"review it before use: pysandboxes check {shown_target}")
    elif counts:
        total = sum(counts.values())
        parts = ", ".join(f"{family} {counts[family]}" for family, _ in FAMILIES if family in counts)
        out.append(f"learned {total} rule{'s' if total != 1 else ''} into {shown_target} ({parts})")
        out.append(f"review them before use: git diff {shown_target}  (or pysandboxes check {shown_target})")
    else:
        out.append(f"learning: nothing new for {shown_target}")
    out += [f"not written, invalid value: {r}" for r in refused]
    return out


def candidates(learned_text: str, held: Iterable[str]) -> list[tuple[int, str]]:
    """``(line number, line)`` of the rules in ``learned_text``'s learning blocks (the whole
    file when it has none) that are not among ``held`` (rule lines, compared without their
    trailing comments). Commented candidates (``#env=…``) are listed too."""
    have = {_comparable(line) for line in held}
    imported = {
        name.strip() for line in have if line.startswith("python-import=") for name in line[14:].split(",")
    }
    lines = learned_text.splitlines()
    blocks = any(
        line.strip().startswith(("# <learning_guard_", "# <learning_remote_result")) for line in lines
    )
    inside = not blocks
    found: list[tuple[int, str]] = []
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped.startswith(("# <learning_guard_", "# <learning_remote_result")):
            inside = True
            continue
        if stripped.startswith(("# </learning_guard_", "# </learning_remote_result")):
            inside = not blocks
            continue
        if not inside or not _is_rule(stripped):
            continue
        rule = _comparable(stripped)
        if rule.startswith("python-import="):  # a list: only the names not imported yet
            missing = [n.strip() for n in rule[14:].split(",") if n.strip() not in imported]
            if missing:
                found.append((number, "python-import=" + ", ".join(missing)))
        elif rule.lstrip("#") not in have:
            found.append((number, stripped))
    return found
