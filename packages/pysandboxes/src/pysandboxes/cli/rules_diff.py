"""``pysandboxes diff BASE..HEAD [PATHS]`` and ``pysandboxes diff OLD NEW``: the rights a change
of rule files adds and removes, each graded by :mod:`pysandboxes.rules.grading`.

It compares effective policies, not text. Each rule file of a revision (every
``*.py-sandboxes*`` file of the repository but the ``*.learn`` candidates, or the PATHS given) is
read with the includes it reaches inside the repository; its rights are compared with the same
file's rights in the other revision as a multiset. A rule moved to an included file, re-ordered,
or re-wrapped into another ``python-import=`` line is therefore no change; a ``${VAR:-x}``
default that changes is one (rules are compared as written, never expanded). Includes outside the
repository (``~/.config/...``, ``/etc/...``) are compared as lines, never read.

Each revision's files are also loaded by the real loader (in a temporary directory, with an
empty environment): a malformed file stops the comparison with its errors, exit 2.
"""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from typing import Any, TextIO

from ..errors import RuleSyntaxError
from ..rules.eval_vocab import EVAL_SCALARS
from ..rules.grading import GRADES, RANK, Graded, grade_added, grade_changed, grade_removed
from ..rules.lexer import lex
from ..rules.loader import LIMITS, SINGLETON_KEYS, load_policy
from ..rules.substitution import SubstitutionError, split_outside_references, substitute
from ..rules.values import parse_decimal_size, parse_duration, parse_int, parse_size

PATTERN = "*.py-sandboxes*"


class DiffError(Exception):
    """A usage problem or a broken input: the message says which and what to do (exit 2)."""


def is_candidate(path: str) -> bool:
    """A learned candidate file (``*.learn``) or a backup: never an active profile."""
    name = os.path.basename(path)
    return name.endswith((".learn", ".old")) or ".learn." in name or ".old." in name


def is_rule_file(path: str) -> bool:
    return fnmatch.fnmatchcase(os.path.basename(path), PATTERN) and not is_candidate(path)


# -- where the files come from: a git revision, or the disk ------------------------------------


class _Tree:
    """The files of one side of the comparison, read through ``fetch`` and written under
    ``root`` (a directory the loader can read)."""

    def __init__(
        self,
        label: str,
        root: str,
        files: set[str] | None,
        fetch: Callable[[str], bytes | None],
        shown: Callable[[str], str] = str,
    ) -> None:
        self.label = label
        self.shown = shown  # how a file is named in the output
        self.root = root
        self.files = files  # None: the disk, any path
        self._fetch = fetch
        self._cache: dict[str, str | None] = {}

    def exists(self, rel: str) -> bool:
        if self.files is not None:
            return rel in self.files
        return not rel.startswith("../") and os.path.isfile(os.path.join(self.root, rel))

    def text(self, rel: str) -> str | None:
        if rel not in self._cache:
            data = self._fetch(rel) if self.exists(rel) else None
            if data is not None and self.files is not None:
                target = os.path.join(self.root, rel)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(target, "wb") as f:
                    f.write(data)
            if data is not None and data.startswith(b"\xef\xbb\xbf"):
                data = data[3:]
            self._cache[rel] = None if data is None else data.decode("utf-8", "replace")
        return self._cache[rel]

    def where(self, rel: str) -> str:
        return f"{self.label}:{rel}" if self.files is not None else self.shown(rel)


def _git(repo: str, *args: str) -> bytes:
    try:
        done = subprocess.run(
            ["git", "-C", repo, "-c", "core.quotepath=off", *args],
            capture_output=True,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise DiffError("git is not installed: comparing revisions needs git") from None
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise DiffError(
            f"git {' '.join(args)} failed: {detail[-1] if detail else 'exit ' + str(done.returncode)}"
        )
    return done.stdout


def _commit(repo: str, rev: str) -> str:
    try:
        return (
            _git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}")
            .decode()
            .strip()
        )
    except DiffError:
        raise DiffError(
            f"'{rev}' is not a commit of this repository (give BASE..HEAD, e.g. main..HEAD)"
        ) from None


def parse_range(repo: str, spec: str) -> tuple[str, str, str, str]:
    """``A..B`` or ``A...B`` (from their merge base, as for a pull request) -> labels and commits."""
    three = "..." in spec
    base, _, head = spec.partition("..." if three else "..")
    base, head = base or "HEAD", head or "HEAD"
    base_commit, head_commit = _commit(repo, base), _commit(repo, head)
    if three:
        base_commit = _git(repo, "merge-base", base_commit, head_commit).decode().strip()
    return base, head, base_commit, head_commit


def _revision_tree(repo: str, label: str, commit: str, root: str) -> _Tree:
    listing = _git(repo, "ls-tree", "-r", "-z", "--name-only", commit).decode("utf-8", "replace")
    files = {p for p in listing.split("\0") if p}

    def fetch(rel: str) -> bytes | None:
        return _git(repo, "cat-file", "blob", f"{commit}:{rel}")

    return _Tree(label, root, files, fetch)


# -- reading one policy: a rule file and the includes it reaches ---------------------------------


class Right:
    """One right as written: ``key=value`` (one module for python-import), where it is."""

    __slots__ = ("file", "ident", "key", "learned_by", "line", "rel", "side", "value")

    def __init__(
        self, key: str, value: str, file: str, line: int, ident: str, learned_by: str = "", rel: str = ""
    ) -> None:
        self.key, self.value, self.file, self.line, self.ident = key, value, file, line, ident
        self.learned_by = learned_by
        self.rel = rel or file  # the path relative to the repository root, for grading
        self.side = "new"  # "old": the line is in the base revision (or the OLD file)

    @property
    def text(self) -> str:
        if self.key.startswith("include"):
            return f'{self.key} "{self.value}"'
        return f"{self.key}={self.value}"


def is_setting(key: str) -> bool:
    """A key set once per policy: its value changes rather than being added."""
    return key in SINGLETON_KEYS or key.split(":", 1)[0] in EVAL_SCALARS or "." in key


def _normalise(key: str, value: str, file: str) -> str:
    """The comparable form of a value: spacing and case where the loader ignores them, and a
    relative exposure made relative to the repository root (a move between directories counts)."""
    if key == "net":
        parts = [p.strip() for p in value.split("|")]
        if len(parts) == 5:
            parts[0], parts[1], parts[4] = parts[0].upper(), parts[1].lower(), parts[4].upper()
        return "|".join(parts)
    if key == "python-api":
        action, sep, target = value.partition(":")
        return f"{action.strip().upper()}{sep}{target.strip()}"
    if key in ("expose-ro", "expose-rw") and not value.startswith(("/", "~", "$")):
        return "./" + os.path.normpath(os.path.join(os.path.dirname(file), value)).lstrip("./")
    if key in ("learn", "py-sandbox", "os-sandbox", "remote-result-mode", "remote-result-guard"):
        return value.strip().lower()
    return value.strip()


def _learned_by(lines: list[str], number: int) -> str:
    """The ``# Learned by <test>`` comment of the block a rule is in (up to a blank line)."""
    i = number - 2
    while 0 <= i < len(lines) and lines[i].strip():
        stripped = lines[i].strip()
        if stripped.startswith("#") and stripped.lstrip("# ").startswith("Learned by "):
            return stripped.lstrip("# ")[len("Learned by ") :].strip()
        i -= 1
    return ""


def read_policy(tree: _Tree, main: str) -> tuple[list[Right], list[str]]:
    """The rights of the rule file ``main`` (a path relative to ``tree.root``) and of the
    includes it reaches inside the tree, and the files read."""
    rights: list[Right] = []
    read: list[str] = []
    cwd = os.path.dirname(main)  # a "./x" include: from where the program is started, here

    def visit(rel: str) -> None:
        if rel in read:
            return
        text = tree.text(rel)
        if text is None:
            return
        read.append(rel)
        shown = tree.shown(rel)
        lines = text.splitlines()
        statements, _problems = lex(text)  # problems: reported by the loader's check
        for st in statements:
            by = _learned_by(lines, st.line)
            if st.kind == "rule":
                if st.key == "python-import":
                    for name in split_outside_references(st.value, ","):
                        if name.strip():
                            rights.append(Right(st.key, name.strip(), shown, st.line, name.strip(), by, rel))
                else:
                    ident = _normalise(st.key, st.value, rel)
                    rights.append(Right(st.key, st.value.strip(), shown, st.line, ident, by, rel))
                continue
            key = st.key if st.key != "include-platform" else f"include-platform={st.platform}"
            rights.append(Right(key, st.value, shown, st.line, st.value, by, rel))
            target = _include_target(st.value, rel, cwd)
            if target is not None and tree.exists(target):
                visit(target)

    visit(main)
    return rights, read


def _include_target(written: str, including: str, cwd: str) -> str | None:
    """Where an include points inside the tree (as the loader resolves it), None outside."""
    try:
        value = substitute(written, {})  # a default names the file read when the variable is unset
    except SubstitutionError:
        return None
    if value.startswith(("~", "/")):
        return None
    base = os.path.dirname(including) if "/" not in value else cwd
    target = os.path.normpath(os.path.join(base, value))
    if target.startswith("../") or target == "..":
        return None
    return target


#: loader problems that come from the machine, not from the text (the diff reads no environment)
_NOT_THE_TEXT = ("is not set and has no default", "; create it first", "does not exist; create it")


def check_policy(tree: _Tree, main: str, home: str) -> list[str]:
    """The errors the loader finds in ``main`` and its includes inside the tree."""
    path = os.path.join(tree.root, main)
    try:
        load_policy(path, environ={"HOME": home}, cwd=os.path.dirname(path))
    except RuleSyntaxError as exc:
        errors = []
        root = tree.root.rstrip("/") + "/"
        for problem in exc.problems:
            origin_path = problem.origin.path or ""
            if not origin_path.startswith(root):
                continue  # a file outside the repository
            message = problem.message
            if any(m in message for m in _NOT_THE_TEXT):
                continue
            if "does not exist" in message and message.startswith("include '") and root not in message:
                continue  # an include outside the repository: compared as a line only
            rel = origin_path[len(root) :]
            where = f"{tree.where(rel)}({problem.origin.line})" if problem.origin.line else tree.where(rel)
            errors.append(f"{where}: {message.replace(root, '')}")
        return errors
    return []


# -- comparing two policies ---------------------------------------------------------------------


class Finding:
    __slots__ = ("graded", "old", "policies", "right")

    def __init__(self, right: Right, graded: Graded, old: Right | None = None) -> None:
        self.right, self.graded, self.old = right, graded, old
        self.policies: list[str] = []

    @property
    def key(self) -> tuple[str, str, str, str, int]:
        old = self.old.text if self.old else ""
        return (self.graded.change, self.right.text, old, self.right.file, self.right.line)

    def sort_key(self) -> tuple[int, bool, str, int, str]:
        return (
            RANK[self.graded.grade],
            not self.graded.widens,
            self.right.file,
            self.right.line,
            self.right.text,
        )

    def as_dict(self) -> dict[str, object]:
        return {
            "grade": self.graded.grade,
            "change": self.graded.change,
            "widens": self.graded.widens,
            "rule": self.right.text,
            "old": self.old.text if self.old else None,
            "key": self.right.key,
            "file": self.right.file,
            "line": self.right.line,
            "side": self.right.side,
            "policies": self.policies,
            "why": self.graded.why,
            "look_for": self.graded.look_for,
            "learned_by": self.right.learned_by,
        }


def _number(key: str) -> Callable[[str], float]:
    kind = LIMITS[key][0] if key in LIMITS else ""
    base = key.split(":", 1)[0]
    if kind == "duration" or key == "timeout" or base == "eval-timeout":
        return lambda v: parse_duration(v, key)
    if kind == "size":
        return lambda v: parse_size(v, key)
    if key == "remote-max-payload":
        return lambda v: parse_decimal_size(v, key)
    return lambda v: parse_int(v, key)


def compare(old: list[Right], new: list[Right]) -> list[Finding]:
    """The changes from the rights ``old`` to the rights ``new`` of one policy."""
    findings: list[Finding] = []
    old_settings = {r.key: r for r in old if is_setting(r.key)}
    new_settings = {r.key: r for r in new if is_setting(r.key)}
    for key, r in new_settings.items():
        before = old_settings.get(key)
        if before is None:
            findings.append(Finding(r, grade_added(r.key, r.value, r.rel)))
        elif before.ident != r.ident:
            findings.append(
                Finding(r, grade_changed(key, before.value, r.value, r.rel, _number(key)), before)
            )
    for key, r in old_settings.items():
        if key not in new_settings:
            findings.append(Finding(r, grade_removed(r.key, r.value)))

    count: dict[tuple[str, str], int] = {}
    for r in old:
        if not is_setting(r.key):
            count[(r.key, r.ident)] = count.get((r.key, r.ident), 0) + 1
    added: list[Right] = []
    for r in new:
        if is_setting(r.key):
            continue
        if count.get((r.key, r.ident), 0) > 0:
            count[(r.key, r.ident)] -= 1
        else:
            added.append(r)
    removed: list[Right] = []
    for r in old:
        if not is_setting(r.key) and count.get((r.key, r.ident), 0) > 0:
            count[(r.key, r.ident)] -= 1
            removed.append(r)

    # The same path exposed read-only on one side and read-write on the other: one change.
    for r in list(added):
        other = "expose-ro" if r.key == "expose-rw" else "expose-rw" if r.key == "expose-ro" else None
        twin = next((x for x in removed if x.key == other and x.ident == r.ident), None) if other else None
        if twin is None:
            continue
        added.remove(r)
        removed.remove(twin)
        if r.key == "expose-rw":
            g = grade_added(r.key, r.value, r.rel)
            findings.append(
                Finding(r, Graded(g.grade, "widened", f"now writable: {g.why}", g.look_for), twin)
            )
        else:
            findings.append(Finding(r, Graded("low", "narrowed", "read-only now"), twin))
    findings += [Finding(r, grade_added(r.key, r.value, r.rel)) for r in added]
    findings += [Finding(r, grade_removed(r.key, r.value)) for r in removed]
    return findings


def diff_trees(
    old: _Tree, new: _Tree, roots: Iterable[tuple[str | None, str | None]], home: str
) -> list[Finding]:
    """Compare each (old root, new root) pair; a side None is an absent file."""
    errors: list[str] = []
    merged: dict[tuple[str, str, str, str, int], Finding] = {}
    for old_main, new_main in roots:
        sides: list[list[Any]] = []
        for tree, main in ((old, old_main), (new, new_main)):
            if main is None or not tree.exists(main):
                sides.append([])
                continue
            rights, _read = read_policy(tree, main)
            if tree is old:
                for r in rights:
                    r.side = "old"
            errors += check_policy(tree, main, home)
            sides.append(rights)
        shown = new_main if new_main is not None and new.exists(new_main) else old_main or ""
        for finding in compare(sides[0], sides[1]):
            kept = merged.setdefault(finding.key, finding)
            if shown not in kept.policies:
                kept.policies.append(shown)
    if errors:
        raise RuleErrors(list(dict.fromkeys(errors)))  # each once, in the loader's order
    return sorted(merged.values(), key=Finding.sort_key)


class RuleErrors(DiffError):
    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        super().__init__("\n".join(errors))


def _roots(tree: _Tree, candidates: list[str]) -> list[str]:
    """The rule files that are not only included by another one (each is its own policy)."""
    reached: set[str] = set()
    for main in candidates:
        _rights, read = read_policy(tree, main)
        reached.update(read[1:])
    roots = [m for m in candidates if m not in reached]
    return roots or candidates


def revision_roots(old: _Tree, new: _Tree, paths: list[str]) -> list[tuple[str | None, str | None]]:
    names: set[str] = set()
    for tree in (old, new):
        assert tree.files is not None
        chosen = []
        for f in sorted(tree.files):
            if paths:
                if any(f == p for p in paths):
                    chosen.append(f)
                    continue
                if not any(f.startswith(p.rstrip("/") + "/") or p in ("", ".") for p in paths):
                    continue
            if is_rule_file(f):
                chosen.append(f)
        names.update(_roots(tree, chosen))
    return [(n, n) for n in sorted(names)]


# -- the command ----------------------------------------------------------------------------------


def _summary(findings: list[Finding]) -> str:
    counts = {g: sum(1 for x in findings if x.graded.grade == g) for g in GRADES}
    wider = sum(1 for x in findings if x.graded.widens)
    n = len(findings)
    return (
        f"{n} change{'s' if n != 1 else ''} ({wider} widening, {n - wider} narrowing): "
        f"{counts['high']} high, {counts['medium']} medium, {counts['low']} low"
    )


_COLUMNS = ("grade", "change", "rule", "where", "why")


def _row(x: Finding) -> list[str]:
    rule = f"{x.old.text} -> {x.right.text}" if x.old is not None else x.right.text
    why = x.graded.why
    if x.graded.look_for and x.graded.widens:
        why += f"; look for {x.graded.look_for}"
    if x.right.learned_by:
        why += f" (learned by {x.right.learned_by})"
    where = f"{x.right.file}:{x.right.line}" + (" (before)" if x.right.side == "old" else "")
    return [x.graded.grade, x.graded.change, rule, where, why]


def as_table(findings: list[Finding], title: str) -> str:
    if not findings:
        return f"{title}: no right added or removed\n"
    rows = [list(_COLUMNS)] + [_row(x) for x in findings]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_COLUMNS) - 1)]
    lines = [
        "  ".join([*(c.ljust(w) for c, w in zip(r, widths, strict=False)), r[-1]]).rstrip() for r in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in [*widths, 3]))
    return f"{title}\n" + "\n".join(lines) + "\n\n" + _summary(findings) + "\n"


def as_markdown(findings: list[Finding], title: str) -> str:
    if not findings:
        return f"**Sandbox rules** ({title}): no right added or removed.\n"

    def cell(s: str) -> str:
        return s.replace("|", "\\|").replace("\n", " ")

    out = ["## Sandbox rule changes", "", f"{title}: {_summary(findings)}", ""]
    out.append("| Grade | Change | Rule | Where | Why |")
    out.append("|---|---|---|---|---|")
    for x in findings:
        grade, change, rule, where, why = _row(x)
        out.append(f"| {grade} | {change} | `{cell(rule)}` | `{cell(where)}` | {cell(why)} |")
    highs = [x for x in findings if x.graded.grade == "high" and x.graded.widens]
    if highs:
        out += ["", "High-risk changes, each to be justified by the code that needs it:", ""]
        out += [f"- `{x.right.text}` ({x.graded.change}, {_row(x)[3]}): {x.graded.why}." for x in highs]
    return "\n".join(out) + "\n"


def run(
    targets: list[str], *, fmt: str, fail_on: str | None, cwd: str | None = None, out: TextIO | None = None
) -> int:
    """``targets``: ``[BASE..HEAD, *PATHS]`` or ``[OLD, NEW]``. Returns the exit status."""
    stdout = out or sys.stdout
    cwd = os.path.abspath(cwd or os.getcwd())
    with tempfile.TemporaryDirectory(prefix="pysandboxes-diff-") as tmp:
        home = os.path.join(tmp, "home")  # an empty home: the user's profile is never read
        os.mkdir(home)
        spec = targets[0]
        if ".." in spec and not os.path.exists(os.path.join(cwd, spec)):
            try:
                repo = _git(cwd, "rev-parse", "--show-toplevel").decode().strip()
            except DiffError as exc:
                raise DiffError(
                    f"{spec} names git revisions, and {cwd} is not in a git repository ({exc})"
                ) from None
            base, head, base_commit, head_commit = parse_range(repo, spec)
            old = _revision_tree(repo, base, base_commit, os.path.join(tmp, "base"))
            new = _revision_tree(repo, head, head_commit, os.path.join(tmp, "head"))
            paths = []
            for p in targets[1:]:
                rel = os.path.relpath(os.path.realpath(os.path.join(cwd, p)), os.path.realpath(repo))
                if rel.startswith(".."):
                    raise DiffError(f"{p} is outside the repository {repo}")
                paths.append("" if rel == "." else rel)
            roots = revision_roots(old, new, paths)
            if paths and not roots:
                raise DiffError(f"no rule file under {', '.join(targets[1:])} in {base} or in {head}")
            title = f"{spec} ({base_commit[:12]}..{head_commit[:12]})"
        else:
            if len(targets) != 2:
                raise DiffError("give BASE..HEAD [PATHS], or two rule files OLD NEW")
            sides = []
            for t in targets:
                path = os.path.abspath(os.path.join(cwd, t))
                if not os.path.isfile(path):
                    raise DiffError(f"cannot read {t}: no such rule file")
                directory = os.path.dirname(path)
                shown = _shown_from(directory, cwd)
                sides.append(_Tree(directory, directory, None, _read_disk(path), shown))
            old, new = sides
            roots = [(os.path.basename(targets[0]), os.path.basename(targets[1]))]
            title = f"{targets[0]} -> {targets[1]}"
        findings = diff_trees(old, new, roots, home)
    if fmt == "json":
        body = {"range": title, "summary": _summary(findings), "changes": [x.as_dict() for x in findings]}
        stdout.write(json.dumps(body, indent=2) + "\n")
    elif fmt == "markdown":
        stdout.write(as_markdown(findings, title))
    else:
        stdout.write(as_table(findings, title))
    if fail_on is not None:
        limit = RANK[fail_on]
        if any(x.graded.widens and RANK[x.graded.grade] <= limit for x in findings):
            return 1
    return 0


def _shown_from(directory: str, cwd: str) -> Callable[[str], str]:
    return lambda rel: os.path.relpath(os.path.join(directory, rel), cwd)


def _read_disk(main: str) -> Callable[[str], bytes | None]:
    directory = os.path.dirname(main)

    def fetch(rel: str) -> bytes | None:
        try:
            with open(os.path.join(directory, rel), "rb") as f:
                return f.read()
        except OSError:
            return None

    return fetch
