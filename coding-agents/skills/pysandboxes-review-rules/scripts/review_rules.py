#!/usr/bin/env python3
"""Grade by risk every right a change of ``.py-sandboxes`` files adds or removes.

Input, one of:

- a unified diff on standard input, e.g.
  ``git diff origin/main...HEAD -- '*.py-sandboxes*' | python-sb review_rules.py``
  (this is how the skill runs it: standard input needs no file right);
- two rule files, ``review_rules.py OLD NEW`` (each may be ``/dev/null`` for "absent").

It compares rules, not text: the rules removed and added anywhere in the change are matched
as a multiset, so a rule moved from one file to another, or re-ordered, is no change, and a
``python-import=`` list counts each module on its own (adding ``socket`` to a list of five
shows ``socket`` only). A ``${VAR:-x}`` default that changes is a change. Candidate files
(``*.learn``) are never active profiles and are left out.

Each change gets a grade, ``high``, ``medium`` or ``low`` (the core's table: SKILL.md and
docs/rules.md show it), a reason, and what to look for in the code that would justify it (the import line, the
path opened, the URL, the getenv, the call). Output: an aligned table (default),
``--markdown`` or ``--json``; ``--fail-on=high|medium`` exits 1 when an added or widening
change reaches that grade (for CI). Exit 2 on a usage error.

The grades are the core's (``pysandboxes.rules.grading``, the table ``pysandboxes diff`` uses):
this script only reads the diff. Imports: json, re, sys and pysandboxes (PySandboxes' own modules
need no python-import= line); it runs under the skill's own locked rule file, ``scripts/.py-sandboxes``.
"""

from __future__ import annotations

import json
import re
import sys

# The grades come from the core's one risk table, pysandboxes.rules.grading, the table that
# `pysandboxes diff BASE..HEAD` uses too: this script reads a diff, it does not grade on its own.
try:
    from pysandboxes.rules import grading
except ImportError:  # pragma: no cover - run outside python-sb and without pysandboxes
    sys.stderr.write("review_rules.py: needs pysandboxes; run it with python-sb (see SKILL.md)\n")
    sys.exit(2)

GRADES = grading.GRADES
_RANK = grading.RANK
DANGEROUS_MODULES = grading.DANGEROUS_MODULES
HIGH_API = grading.HIGH_API
MEDIUM_API = grading.MEDIUM_API


class Rule:
    """One right as the change shows it: ``key=value`` (one module for python-import)."""

    __slots__ = ("file", "key", "learned_by", "line", "value")

    def __init__(self, key: str, value: str, file: str, line: int, learned_by: str = "") -> None:
        self.key, self.value, self.file, self.line, self.learned_by = key, value, file, line, learned_by

    @property
    def identity(self) -> tuple[str, str]:
        return (self.key, self.value)

    @property
    def text(self) -> str:
        if self.key.startswith("include"):
            return f'{self.key} "{self.value}"'
        return f"{self.key}={self.value}"


# -- reading rule lines ------------------------------------------------------------------------


def strip_comment(line: str) -> str:
    """Remove a ``#`` comment outside balanced quotes (as the rule file lexer does)."""
    i = 0
    while i < len(line):
        c = line[i]
        if c == "#":
            return line[:i]
        if c in "'\"":
            j = i + 1
            while j < len(line):
                if line[j] == "\\" and j + 1 < len(line) and line[j + 1] == c:
                    j += 2
                    continue
                if line[j] == c:
                    break
                j += 1
            if j < len(line):
                i = j + 1
                continue
        i += 1
    return line


_INCLUDE = re.compile(r'^(include-optional|include|include-platform=\S+)\s+"((?:[^"\\]|\\.)*)"$')


def read_line(raw: str, file: str, number: int, learned_by: str = "") -> list[Rule]:
    """The rules of one line of a rule file (none for a comment or a blank line)."""
    line = strip_comment(raw).strip()
    if not line:
        return []
    m = _INCLUDE.match(line)
    if m:
        key = "include" if m.group(1).startswith("include-platform") else m.group(1)
        return [Rule(key, re.sub(r"\\(.)", r"\1", m.group(2)), file, number, learned_by)]
    if "=" not in line:
        return []  # not a rule: `pysandboxes check` reports it, this review does not grade it
    key, value = line.split("=", 1)
    key, value = key.strip(), value.strip()
    if key == "python-import":
        names = [n.strip() for n in value.split(",") if n.strip()]
        return [Rule(key, n, file, number, learned_by) for n in names]
    return [Rule(key, value, file, number, learned_by)]


_LEARNED = re.compile(r"^#\s*Learned by\s+(.+?)\s*$")


def read_text(text: str, file: str) -> list[Rule]:
    rules: list[Rule] = []
    learned_by = ""
    for number, raw in enumerate(text.splitlines(), start=1):
        m = _LEARNED.match(raw.strip())
        if m:
            learned_by = m.group(1)
            continue
        if not raw.strip():
            learned_by = ""  # an attribution covers the block under it, up to a blank line
        rules.extend(read_line(raw, file, number, learned_by))
    return rules


def read_diff(text: str) -> tuple[list[Rule], list[Rule]]:
    """The rules on the removed and on the added lines of a unified diff."""
    removed: list[Rule] = []
    added: list[Rule] = []
    old_file = new_file = ""
    old_line = new_line = 0
    learned_by = ""
    for raw in text.splitlines():
        if raw.startswith("--- "):
            old_file = _diff_path(raw[4:])
            continue
        if raw.startswith("+++ "):
            new_file = _diff_path(raw[4:])
            learned_by = ""
            continue
        m = re.match(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@", raw)
        if m:
            old_line, new_line = int(m.group(1)), int(m.group(2))
            continue
        if raw.startswith("-"):
            if not _is_candidate(old_file):
                removed.extend(read_line(raw[1:], old_file, old_line))
            old_line += 1
        elif raw.startswith("+"):
            learned = _LEARNED.match(raw[1:].strip())
            if learned:
                learned_by = learned.group(1)
            elif not raw[1:].strip():
                learned_by = ""
            elif not _is_candidate(new_file):
                added.extend(read_line(raw[1:], new_file, new_line, learned_by))
            new_line += 1
        elif raw.startswith(" ") or raw == "":
            learned = _LEARNED.match(raw[1:].strip())
            learned_by = learned.group(1) if learned else ("" if not raw[1:].strip() else learned_by)
            old_line += 1
            new_line += 1
    return removed, added


def _diff_path(header: str) -> str:
    path = header.split("\t", 1)[0].strip()
    if path.startswith('"') and path.endswith('"'):
        path = path[1:-1]
    if path == "/dev/null":
        return ""
    return path[2:] if path[:2] in ("a/", "b/") else path


def _is_candidate(path: str) -> bool:
    return path.endswith(".learn") or ".learn." in path.rsplit("/", 1)[-1]


def net_change(removed: list[Rule], added: list[Rule]) -> tuple[list[Rule], list[Rule]]:
    """The rules really removed and really added: a rule on both sides (moved, re-ordered,
    re-wrapped into another python-import line) cancels out."""
    count: dict[tuple[str, str], int] = {}
    for r in removed:
        count[r.identity] = count.get(r.identity, 0) + 1
    for r in added:
        count[r.identity] = count.get(r.identity, 0) - 1
    really_added: list[Rule] = []
    for r in added:
        if count.get(r.identity, 0) < 0:
            really_added.append(r)
            count[r.identity] += 1
    really_removed: list[Rule] = []
    for r in removed:
        if count.get(r.identity, 0) > 0:
            really_removed.append(r)
            count[r.identity] -= 1
    return really_removed, really_added


# -- grading -----------------------------------------------------------------------------------


class Finding:
    __slots__ = ("change", "grade", "look_for", "rule", "why")

    def __init__(self, rule: Rule, change: str, grade: str, why: str, look_for: str = "") -> None:
        self.rule, self.change, self.grade, self.why, self.look_for = rule, change, grade, why, look_for

    @property
    def widens(self) -> bool:
        return self.change == "added" or self.grade != "low"

    def as_dict(self) -> dict[str, object]:
        return {
            "grade": self.grade,
            "change": self.change,
            "rule": self.rule.text,
            "key": self.rule.key,
            "file": self.rule.file,
            "line": self.rule.line,
            "why": self.why,
            "look_for": self.look_for,
            "learned_by": self.rule.learned_by,
        }


def grade_added(rule: Rule) -> Finding:
    """The core's grade of a rule on an added line (``rule.file``: relative to the repository)."""
    graded = grading.grade_added(rule.key, rule.value, rule.file)
    return Finding(rule, "added", graded.grade, graded.why, graded.look_for)


def grade_removed(rule: Rule) -> Finding:
    """The core's grade of a rule on a removed line."""
    graded = grading.grade_removed(rule.key, rule.value)
    return Finding(rule, "removed", graded.grade, graded.why, graded.look_for)


def review(removed: list[Rule], added: list[Rule]) -> list[Finding]:
    gone, new = net_change(removed, added)
    findings = [grade_added(r) for r in new] + [grade_removed(r) for r in gone]
    findings.sort(key=lambda x: (_RANK[x.grade], x.change != "added", x.rule.file, x.rule.line))
    return findings


# -- output ------------------------------------------------------------------------------------

_COLUMNS = ("grade", "change", "rule", "where", "why", "look for")


def _row(x: Finding) -> list[str]:
    where = f"{x.rule.file}:{x.rule.line}" if x.rule.file else f"line {x.rule.line}"
    look = x.look_for + (f" (learned by {x.rule.learned_by})" if x.rule.learned_by else "")
    return [x.grade, x.change, x.rule.text, where, x.why, look]


def summary(findings: list[Finding]) -> str:
    counts = {g: sum(1 for x in findings if x.grade == g) for g in GRADES}
    added = sum(1 for x in findings if x.change == "added")
    return (
        f"{len(findings)} change{'s' if len(findings) != 1 else ''} ({added} added, "
        f"{len(findings) - added} removed): {counts['high']} high, {counts['medium']} medium, {counts['low']} low"
    )


def as_table(findings: list[Finding]) -> str:
    if not findings:
        return "No rule added or removed.\n"
    rows = [list(_COLUMNS)] + [_row(x) for x in findings]
    widths = [min(max(len(r[i]) for r in rows), 60) for i in range(len(_COLUMNS))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(r)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n\n" + summary(findings) + "\n"


def as_markdown(findings: list[Finding]) -> str:
    if not findings:
        return "**Sandbox rules:** no rule added or removed.\n"
    esc = lambda s: s.replace("|", "\\|")  # noqa: E731
    out = ["## Sandbox rule changes", "", summary(findings), ""]
    out.append("| " + " | ".join(c.capitalize() for c in _COLUMNS) + " |")
    out.append("|" + "---|" * len(_COLUMNS))
    for x in findings:
        cells = _row(x)
        cells[2] = f"`{cells[2]}`"
        out.append("| " + " | ".join(esc(c) for c in cells) + " |")
    highs = [x for x in findings if x.grade == "high"]
    if highs:
        out += ["", "High-risk changes, each to be justified by the code that needs it:", ""]
        out += [f"- `{x.rule.text}` ({x.change}): {x.why}." for x in highs]
    return "\n".join(out) + "\n"


USAGE = """usage: review_rules.py [--markdown | --json] [--fail-on=high|medium] [OLD NEW]
  Without OLD NEW, reads a unified diff of rule files on standard input:
    git diff origin/main...HEAD -- '*.py-sandboxes*' | python-sb review_rules.py --markdown
"""


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    fmt, fail_on, files = "table", None, []
    for arg in args:
        if arg in ("-h", "--help"):
            sys.stdout.write(USAGE)
            return 0
        if arg == "--markdown":
            fmt = "markdown"
        elif arg == "--json":
            fmt = "json"
        elif arg.startswith("--fail-on="):
            fail_on = arg.partition("=")[2]
            if fail_on not in ("high", "medium"):
                sys.stderr.write("review_rules.py: --fail-on takes high or medium\n" + USAGE)
                return 2
        elif arg.startswith("-") and arg != "-":
            sys.stderr.write(f"review_rules.py: unknown option {arg}\n" + USAGE)
            return 2
        else:
            files.append(arg)
    if files and len(files) != 2:
        sys.stderr.write(
            "review_rules.py: give two rule files (OLD NEW), or a diff on standard input\n" + USAGE
        )
        return 2
    if files:
        texts = []
        for path in files:
            try:
                with open(path, encoding="utf-8") as handle:
                    texts.append(handle.read())
            except OSError as exc:
                sys.stderr.write(f"review_rules.py: cannot read {path}: {exc.strerror or exc}\n")
                return 2
        removed, added = read_text(texts[0], files[0]), read_text(texts[1], files[1])
    else:
        removed, added = read_diff(sys.stdin.read())
    findings = review(removed, added)
    if fmt == "json":
        sys.stdout.write(json.dumps([x.as_dict() for x in findings], indent=2) + "\n")
    elif fmt == "markdown":
        sys.stdout.write(as_markdown(findings))
    else:
        sys.stdout.write(as_table(findings))
    if fail_on is not None:
        limit = _RANK[fail_on]
        if any(x.widens and _RANK[x.grade] <= limit for x in findings):
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
