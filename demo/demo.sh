#!/usr/bin/env bash
# `make demo`: a rule file written, reviewed, explained; a broken one reported; a locked one
# refusing a rule added on the command line. (Running programs under the rules arrives with
# the Python layer; this demo grows with it.)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/.venv/bin"
work="$(mktemp -d "${TMPDIR:-/tmp}/pysandboxes-demo.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$work"
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "1. pysandboxes init: the commented, deny-by-default template"
"$bin/pysandboxes" init
mkdir data output
cat >> .py-sandboxes <<'RULES'

# What this demo program needs:
expose-ro=./data
expose-rw=./output
ignore=*.key
env=LANG=${LANG:-C.UTF-8}
env=DEMO_TOKEN=${DEMO_TOKEN}
net=ALLOW|tcp|127.0.0.1|8080|OUT
net=DENY|*|127.0.0.0/8|9000-9999|*
python-import=json, csv
python-api=ALLOW:threads
eval-syntax=arith, compare
eval-namespace=closed
RULES
echo "(appended 12 rules for the demo program)"

step "2. pysandboxes check: loads it, reviews risky rules"
"$bin/pysandboxes" check

step "3. pysandboxes explain: the effective policy, every rule with its file and line"
DEMO_TOKEN=s3cret "$bin/pysandboxes" explain

step "4. A broken rule file: every problem at once, with file and line, nothing loaded"
cat > broken.py-sandboxes <<'RULES'
expose-ro=./missing-dir
net=ALLOW|tcp|example.org|443
python-import=numpy.linalg
python-api=ALLOW:proces-exec
os-sandbox=${SANDBOX_KIND}
bwrap.shared-net=true
RULES
"$bin/pysandboxes" check broken.py-sandboxes || echo "(exit code $?)"

step "5. The lock: learn=false refuses rules added on the command line"
echo "learn=false" >> .py-sandboxes
"$bin/python-sb" --expose-ro=/etc app.py || echo "(exit code $?)"

step "Done"
echo "Next: docs/rules.md for every key; \`make test\` runs the suite."
