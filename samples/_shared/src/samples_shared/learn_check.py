"""``python -m samples_shared.learn_check LEARNED ACTIVE``: what ``make learn-check`` asks.

Runs ``pysandboxes diff LEARNED ACTIVE`` and fails (exit 1, the candidates printed) when learning
proposes an active rule that ACTIVE lacks. Not counted: commented candidates (imports tried
and absent, names seen by a scan of ``os.environ``: they grant nothing), and the rules ACTIVE
declines after review, each on a comment line of its own::

    # declined: python-api=ALLOW:subprocess.Popen  (why it is not granted)

so that a refusal the program survives (a library probing the platform) stays a reviewed
decision rather than a right, and learning it again does not fail the check.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

_CANDIDATE = re.compile(r"^.*\(\d+\): (?P<rule>.*)$")
_DECLINED = re.compile(r"^#\s*declined:\s*(?P<rule>\S+)")


def declined(active: Path) -> set[str]:
    lines = active.read_text(encoding="utf-8").splitlines()
    return {m["rule"] for line in lines if (m := _DECLINED.match(line.strip()))}


#: a candidate naming the learning process's own /proc entry by its number (a new one each run):
#: compared as /proc/self, so that a profile may decline it once
_OWN_PROC = re.compile(r"^(?P<key>expose-r[ow])=/proc/\d+(?=/|$)")
_EXPOSE = re.compile(r"^(?P<key>expose-r[ow])=(?P<path>[^$~].*)$")


def exposed(rule: str, active: Path) -> bool:
    """An ``expose-ro=``/``expose-rw=`` candidate naming a directory that a literal ``expose-*=``
    line of ACTIVE (relative to ACTIVE's directory) already holds: learning writes a path
    outside the sample's directory absolute, the shipped profile relatively (``../_shared/src``),
    so that it holds on every checkout. An ``expose-rw=`` candidate needs an ``expose-rw=`` line."""
    candidate = _EXPOSE.match(rule)
    if candidate is None:
        return False
    base = active.resolve().parent
    path = (base / candidate["path"]).resolve()
    for line in active.read_text(encoding="utf-8").splitlines():
        held = _EXPOSE.match(line.split("#", 1)[0].strip())
        if held is None or (candidate["key"] == "expose-rw" and held["key"] != "expose-rw"):
            continue
        if path.is_relative_to((base / held["path"]).resolve()):
            return True
    return False


def main(argv: list[str]) -> int:
    learned, active = Path(argv[0]), Path(argv[1])
    if not learned.exists():  # learning wrote nothing: it saw nothing new
        print(f"{active}: learning proposed nothing")
        return 0
    pysandboxes = Path(sys.executable).with_name("pysandboxes")
    diff = subprocess.run(
        [str(pysandboxes), "diff", str(learned), str(active)], capture_output=True, text=True, check=False
    )
    if diff.returncode not in (0, 1):
        print(diff.stderr, file=sys.stderr, end="")
        return 2
    refused = declined(active)
    found = []
    for line in diff.stdout.splitlines():
        match = _CANDIDATE.match(line)
        if match is None or match["rule"].startswith("#"):
            continue
        rule = _OWN_PROC.sub(r"\g<key>=/proc/self", match["rule"])
        if rule not in refused and not exposed(rule, active):
            found.append(line)
    if found:
        print(f"{active} lacks what learning proposes (copy each reviewed rule, or decline it):")
        print("\n".join(found))
        return 1
    print(f"{active}: learning proposes nothing it lacks")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
