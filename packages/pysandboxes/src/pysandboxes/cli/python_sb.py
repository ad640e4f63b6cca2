"""``python-sb``: the drop-in for ``python``.

This build finds and loads the rule file exactly as a run would (so a broken profile is
reported with exit code 2), but does not yet run programs: the enforcement layer lands with
the Python-layer issue. It refuses instead of running a program unconfined.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from .. import __version__
from ..errors import RuleSyntaxError
from ..rules import load_policy, locate

_USAGE = """\
usage: python-sb [python options] [--pysandboxes-config=FILE] [--learn[=FILE]] [--KEY=VALUE ...]
                 (script.py | -m module | -c code | -) [args ...]

Runs a Python program under the rules of its .py-sandboxes file (next to the script, in the
module's directory, or in the working directory).
  --pysandboxes-config=FILE  use this rule file
  --learn[=FILE]             learning mode: allow, record, write the rules into FILE
  --KEY=VALUE                add a rule (e.g. --expose-ro=/data); refused under learn=false
  -V, --version              print versions and exit
  -h, --help                 print this help and exit
"""


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help", "-?") for a in args[:1]):
        sys.stdout.write(_USAGE)
        return 0
    if args[:1] in (["-V"], ["--version"]):
        print(f"Python {sys.version.split()[0]} (python-sb {__version__})")
        return 0
    config: str | None = None
    rules: list[tuple[str, str]] = []
    program: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("--pysandboxes-config"):
            if a.startswith("--pysandboxes-config="):
                config = a.split("=", 1)[1]
            elif i + 1 < len(args):
                i += 1
                config = args[i]
            else:
                print("python-sb: --pysandboxes-config needs a file", file=sys.stderr)
                return 2
        elif a.startswith("--") and len(a) > 2:
            key, _, value = a[2:].partition("=")
            rules.append((key, value))
        else:
            program = args[i:]
            break
        i += 1
    cwd = os.getcwd()
    if config is not None:
        path = locate.for_config(config, cwd)
    elif program[:1] == ["-m"] and len(program) > 1:
        path = locate.for_module(program[1], cwd, [cwd, *sys.path[1:]])
    elif program and not program[0].startswith("-"):
        path = locate.for_script(program[0], cwd)
    else:
        path = locate.for_script("", cwd)
    try:
        policy = load_policy(path, extra_rules=rules, missing_file="learn")
    except RuleSyntaxError as exc:
        for line in exc.errors:
            print(line, file=sys.stderr)
        return 2
    source = path if policy.main_file else f"the built-in template ({path} is missing)"
    print(
        f"python-sb: the rules of {source} load ({len(policy.rules)} rules), but this build "
        "cannot run programs under them yet; nothing was run.",
        file=sys.stderr,
    )
    return 2
