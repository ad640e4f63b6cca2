"""``pysandboxes``: tooling around rule files (``init``, ``check``, ``explain``, ``diff``), and
``doctor`` (which providers this host can run)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from ..errors import RuleSyntaxError
from ..rules import RULE_FILE_NAME, load_policy, render_template
from ..rules.api_registry import CATEGORIES, FUNCTIONS_BY_CATEGORY
from ..rules.review import is_shipped, review
from .explain import explain


def default_os_sandbox() -> str:
    """``landlock`` where the kernel offers Landlock ABI 4 or later, ``subprocess`` otherwise."""
    from ..providers.landlock_abi import landlock_abi

    return "landlock" if landlock_abi() >= 4 else "subprocess"


class _Version(argparse.Action):
    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: object,
        values: object,
        option_string: str | None = None,
    ) -> None:
        from .. import __version__
        from ..providers import unavailable_reason
        from ..rules.provider_keys import PROVIDERS

        usable = [name for name in PROVIDERS if unavailable_reason(name) is None]
        print(f"pysandboxes {__version__}\nproviders available here: {', '.join(usable)}")
        parser.exit(0)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pysandboxes",
        description="Write, check and explain .py-sandboxes rule files.",
    )
    parser.add_argument(
        "--version", action=_Version, nargs=0, help="the version and the providers this host can run"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p_init = sub.add_parser("init", help="write the commented template into a new rule file")
    p_init.add_argument(
        "path", nargs="?", default=RULE_FILE_NAME, help="file to write (default: %(default)s)"
    )
    p_init.add_argument("--force", action="store_true", help="overwrite an existing file")
    p_init.add_argument(
        "--os-sandbox",
        choices=("landlock", "bwrap", "unshare", "firejail", "qemu", "subprocess", "none"),
        help="default provider written in the file (default: landlock where available, else subprocess)",
    )
    p_check = sub.add_parser("check", help="load a rule file, report errors and risky rules")
    p_check.add_argument("path", nargs="?", default=RULE_FILE_NAME, help="rule file (default: %(default)s)")
    p_check.add_argument(
        "--shipped",
        action="store_true",
        help="review it as a file that ships with code (also automatic inside a package or a skill)",
    )
    p_check.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    p_explain = sub.add_parser("explain", help="print the effective policy, each rule with its origin")
    p_explain.add_argument("path", nargs="?", default=RULE_FILE_NAME, help="rule file (default: %(default)s)")
    p_explain.add_argument("--api", action="store_true", help="list the sensitive functions of each category")
    sub.add_parser("doctor", help="which OS providers this host can run, and why not")
    p_diff = sub.add_parser(
        "diff",
        help="grade the rights a change of rule files adds and removes (BASE..HEAD, or OLD NEW); "
        "or list the learned candidates the active profile lacks (CANDIDATES.learn [ACTIVE])",
        description="pysandboxes diff BASE..HEAD [PATHS] | OLD NEW | CANDIDATES.learn [ACTIVE]",
    )
    p_diff.add_argument(
        "targets",
        nargs="+",
        metavar="ARG",
        help="BASE..HEAD (or BASE...HEAD, from the merge base) and optional paths; two rule files "
        "OLD NEW; or a *.learn candidate file and the active profile (default: .py-sandboxes)",
    )
    shape = p_diff.add_mutually_exclusive_group()
    shape.add_argument("--markdown", action="store_true", help="a Markdown table, for a pull request comment")
    shape.add_argument("--json", action="store_true", help="one JSON object")
    p_diff.add_argument(
        "--fail-on",
        choices=("high", "medium", "low"),
        help="exit 1 when a widening change reaches this grade (for CI)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        if args.command == "init":
            return _init(args.path, force=args.force, provider=args.os_sandbox)
        if args.command == "check":
            return _check(args.path, shipped=args.shipped, strict=args.strict)
        if args.command == "diff":
            return _diff_command(args)
        if args.command == "doctor":
            return _doctor()
        return _explain(args.path, api=args.api)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. `pysandboxes explain | head`): not an error of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _init(path: str, *, force: bool, provider: str | None) -> int:
    if os.path.isdir(path):
        path = os.path.join(path, RULE_FILE_NAME)
    if os.path.lexists(path) and not force:
        print(f"pysandboxes init: {path} already exists; use --force to overwrite it", file=sys.stderr)
        return 1
    text = render_template(provider or default_os_sandbox())
    tmp = f"{path}.tmp.{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        print(f"pysandboxes init: cannot write {path}: {exc.strerror or exc}", file=sys.stderr)
        if os.path.lexists(tmp):
            os.unlink(tmp)
        return 1
    print(f"Wrote {path}. Review it, then `pysandboxes check {path}`.")
    return 0


def _load(path: str) -> object:
    try:
        return load_policy(path)
    except RuleSyntaxError as exc:
        for line in exc.errors:
            print(line, file=sys.stderr)
        count = len(exc.errors)
        print(f"{path}: {count} error{'s' if count > 1 else ''}; nothing was loaded", file=sys.stderr)
        return None


def _check(path: str, *, shipped: bool, strict: bool) -> int:
    policy = _load(path)
    if policy is None:
        return 1
    from ..rules.policy import Policy

    assert isinstance(policy, Policy)
    shipped = shipped or (policy.main_file is not None and is_shipped(policy.main_file))
    remarks = [*policy.notes, *review(policy, shipped=shipped)]
    for remark in sorted(remarks, key=lambda r: r.sort_key()):
        print(remark)
    count = sum(1 for r in policy.rules if r.origin.is_file)
    files = len(policy.files)
    status = "OK" if not remarks else f"OK with {len(remarks)} remark{'s' if len(remarks) > 1 else ''}"
    print(f"{path}: {status} ({count} rules from {files} file{'s' if files > 1 else ''})")
    return 1 if strict and remarks else 0


def _explain(path: str, *, api: bool) -> int:
    if api:
        for category, (help_text, _names) in CATEGORIES.items():
            print(f"{category}: {help_text}")
            for name in FUNCTIONS_BY_CATEGORY[category]:
                print(f"    {name}")
        return 0
    policy = _load(path)
    if policy is None:
        return 1
    sys.stdout.write(explain(policy))  # type: ignore[arg-type]
    return 0


def _diff_command(args: argparse.Namespace) -> int:
    """Three forms: revisions, two rule files (graded, rules_diff), or a learned candidate file."""
    from . import rules_diff

    targets: list[str] = args.targets
    first = targets[0]
    revisions = ".." in first and not os.path.exists(first)
    if not revisions and (len(targets) == 1 or (len(targets) == 2 and _is_candidate_file(first))):
        if args.markdown or args.json or args.fail_on:
            print(
                "pysandboxes diff: --markdown, --json and --fail-on grade a change of rule files "
                "(BASE..HEAD or OLD NEW), not a candidate file",
                file=sys.stderr,
            )
            return 2
        return _diff(first, targets[1] if len(targets) > 1 else RULE_FILE_NAME)
    fmt = "markdown" if args.markdown else "json" if args.json else "table"
    try:
        return rules_diff.run(targets, fmt=fmt, fail_on=args.fail_on)
    except rules_diff.RuleErrors as exc:
        for line in exc.errors:
            print(line, file=sys.stderr)
        count = len(exc.errors)
        print(
            f"pysandboxes diff: {count} error{'s' if count > 1 else ''} in the rule files; nothing was compared",
            file=sys.stderr,
        )
        return 2
    except rules_diff.DiffError as exc:
        print(f"pysandboxes diff: {exc}", file=sys.stderr)
        return 2


def _is_candidate_file(path: str) -> bool:
    """A file learning wrote (``*.learn``, or one holding learning blocks), or a single file
    (``pysandboxes diff FILE`` has always meant candidates against .py-sandboxes)."""
    from .rules_diff import is_candidate

    if is_candidate(path):
        return True
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "# <learning_guard_" in f.read(1 << 20)
    except OSError:
        return False


def _diff(learned: str, active: str) -> int:
    """Print each rule of ``learned`` (inside its learning blocks) that ``active`` and its
    includes do not hold, as ``FILE(LINE): rule``; exit 1 when there is one, like diff."""
    from ..learning.writer import candidates

    try:
        with open(learned, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        print(f"pysandboxes diff: cannot read {learned}: {exc.strerror}", file=sys.stderr)
        return 2
    policy = _load(active)
    if policy is None:
        return 2
    from ..rules.policy import Policy

    assert isinstance(policy, Policy)
    held = [f"{r.key}={r.value}" for r in policy.rules if r.origin.is_file]
    found = candidates(text, held)
    for number, line in found:
        print(f"{learned}({number}): {line}")
    if not found:
        print(f"{learned}: nothing that {active} does not already hold", file=sys.stderr)
        return 0
    print(
        f"{len(found)} candidate rule{'s' if len(found) > 1 else ''} not in {active}: review each "
        "one (why does the application need it?) before copying it there",
        file=sys.stderr,
    )
    return 1


def _doctor() -> int:
    """One line per provider: whether it can start on this host, else why and what to do."""
    from ..providers import default_provider, unavailable_reason
    from ..rules.provider_keys import PROVIDERS

    default = default_provider()
    for name in PROVIDERS:
        reason = unavailable_reason(name)
        mark = " (the default here)" if name == default else ""
        if reason is None:
            if name == "qemu":  # which acceleration a guest gets here
                from ..providers.qemu import accelerator

                accel, why = accelerator()
                mark += f" ({'KVM' if accel == 'kvm' else 'TCG, software emulation'}: {why})"
            print(f"{name:<10} available{mark}")
        else:
            print(f"{name:<10} unavailable: {reason}")
    return 0
