#!/usr/bin/env bash
# `make demo`: a program run under its rule file (complete mode), the same program without
# it, C code against the kernel boundary (landlock, then the program's own namespaces); an
# agent whose tools run confined (partial mode); a first rule file learned from a trusted run;
# a rule file written, reviewed and explained, a broken one reported, and a locked one refusing
# a rule added on the command line.
# Everything happens in a temporary directory (removed on exit); the only network used is
# two TCP servers on 127.0.0.1, started and stopped here.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/.venv/bin"
quick="$root/demo/quick"
work="$(mktemp -d "${TMPDIR:-/tmp}/pysandboxes-demo.XXXXXX")"
user_home="$HOME"
server_pid=""
# Importing demo/partial/tools.py caches its bytecode next to it (as python does, unless
# PYTHONDONTWRITEBYTECODE is set): removed at the end unless it was there before.
partial_cache="$root/demo/partial/__pycache__"
[ -e "$partial_cache" ] && keep_partial_cache=1 || keep_partial_cache=""
cleanup() {
    if [ -n "$server_pid" ]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
    [ -n "$keep_partial_cache" ] || rm -rf "$partial_cache"
}
trap cleanup EXIT
cd "$work"
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
show() { printf '\033[2m$ %s\033[0m\n' "$*"; }

# -- the stage: a temporary home with a private key, a secret in the environment, an output
# directory, and two loopback servers: the report service (allowed) and a collector (not).
mkdir -p home/.ssh out
printf -- '-----BEGIN DEMO KEY-----\nnot a real key\n' > home/.ssh/id_demo
chmod 600 home/.ssh/id_demo
cat > servers.py <<'PY'
import os, socket, sys, threading

def serve(listener, name):
    while True:
        conn, _ = listener.accept()
        with conn:
            line = conn.makefile("rb").readline()
            conn.sendall(f"{name} received {len(line.strip())} bytes\n".encode())

ports = []
for name in ("the report service", "the collector"):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    ports.append(str(listener.getsockname()[1]))
    threading.Thread(target=serve, args=(listener, name), daemon=True).start()
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(" ".join(ports) + "\n")
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
threading.Event().wait()
PY
"$bin/python" servers.py ports &
server_pid=$!
for _ in $(seq 100); do [ -f ports ] && break; sleep 0.05; done
read -r service_port collector_port < ports

# the guest kernel and initramfs of os-sandbox=qemu stay in the real cache between demos
export XDG_CACHE_HOME="${XDG_CACHE_HOME:-$user_home/.cache}"
export HOME="$work/home" REPORT_OUT="$work/out" REPORT_SERVICE_PORT="$service_port"
export DEMO_API_KEY="sk-demo-0123456789"
landlock_missing="$("$bin/python" -c 'from pysandboxes.providers.landlock import available; print(available() or "")')"
if [ -n "$landlock_missing" ]; then
    export OS_SANDBOX=subprocess
    echo "(Landlock cannot start here: $landlock_missing. This demo uses os-sandbox=subprocess.)"
fi

step "1. Complete mode: python-sb runs a program under the rule file next to it"
echo "demo/quick/.py-sandboxes, without its comments:"
grep -v '^#' "$quick/.py-sandboxes" | grep . | sed 's/^/    /'
echo "The host has DEMO_API_KEY exported and ~/.ssh/id_demo; the report service listens on"
echo "127.0.0.1:$service_port (allowed), a collector on 127.0.0.1:$collector_port (no rule)."
show "cd $work && python-sb $quick/report.py $collector_port"
"$bin/python-sb" "$quick/report.py" "$collector_port"
echo "(exit code 0, os-sandbox=${OS_SANDBOX:-landlock}; each refusal above is an exception the program caught)"

step "2. The same program under plain python: every attempt succeeds"
show "python $quick/report.py $collector_port"
"$bin/python" -u "$quick/report.py" "$collector_port" | sed -n '/^Beyond the job/,$p'

step "3. C code, which the Python layer cannot see: only the kernel holds"
echo "peek.py reads ~/.ssh/id_demo through libc; ctypes is granted on the command line."
grant=(--python-import=ctypes --python-api=ALLOW:native)
show "python-sb ${grant[*]} --os-sandbox=subprocess $quick/peek.py"
"$bin/python-sb" "${grant[@]}" --os-sandbox=subprocess "$quick/peek.py"
# peek.py under a provider, or why this host cannot run it
peek_under() {
    local provider="$1" comment="$2" missing
    missing="$("$bin/python" -c "from pysandboxes.providers import unavailable_reason; print(unavailable_reason('$provider') or '')")"
    show "python-sb ${grant[*]} --os-sandbox=$provider $quick/peek.py${comment:+   # $comment}"
    if [ -z "$missing" ]; then
        "$bin/python-sb" "${grant[@]}" --os-sandbox="$provider" "$quick/peek.py"
    else
        echo "(skipped: $missing)"
    fi
}
peek_under landlock ""
peek_under unshare "own namespaces: the file is not even there"
peek_under qemu "a virtual machine with its own kernel (seconds to start)"

step "4. Partial mode: the agent keeps its rights, the tools it calls are confined"
echo "demo/partial/agent.py runs under plain python; only the @sandbox functions of tools.py run,"
echo "in a child process, under demo/partial/.py-sandboxes, without its comments:"
grep -v '^#' "$root/demo/partial/.py-sandboxes" | grep . | sed 's/^/    /'
show "python $root/demo/partial/agent.py"
"$bin/python" "$root/demo/partial/agent.py"

step "5. Learning mode: a trusted run writes a first rule file, for review"
mkdir -p learn/data learn/output
echo '{"items": 3}' > learn/data/input.json
cat > learn/job.py <<'PY'
import json, os, socket
with open("data/input.json") as f:
    items = json.load(f)["items"]
key = os.getenv("DEMO_API_KEY", "")
with socket.create_connection(("127.0.0.1", int(os.environ["REPORT_SERVICE_PORT"]))) as s:
    s.sendall(b"%d items\n" % items)
    answer = s.makefile().readline().strip()
with open("output/report.txt", "w") as f:
    f.write(answer + "\n")
print("job done:", answer, "| key present:", bool(key))
PY
cd learn
show "cd learn && python-sb --learn job.py        # no .py-sandboxes yet"
"$bin/python-sb" --learn job.py
echo "The learned rules (values are never copied: env= names a variable, it does not hold it):"
grep -v '^#' .py-sandboxes | grep -v '^include\|^remote-result-guard\|^py-sandbox\|^os-sandbox' | grep . | sed 's/^/    /'
show "python-sb job.py                            # strict: the learned file is in force"
"$bin/python-sb" job.py
echo "print(open('$HOME/.ssh/id_demo').read())" >> job.py
show "echo '...read ~/.ssh/id_demo...' >> job.py && python-sb job.py   # nothing more"
"$bin/python-sb" job.py 2>&1 | tail -2 || true
cd "$work"

# The rule-language tour runs with the user's own home again.
unset REPORT_OUT REPORT_SERVICE_PORT DEMO_API_KEY
export HOME="$user_home"

step "6. pysandboxes init: the commented, deny-by-default template"
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

step "7. pysandboxes check: loads it, reviews risky rules"
"$bin/pysandboxes" check

step "8. pysandboxes explain: the effective policy, every rule with its file and line"
DEMO_TOKEN=s3cret "$bin/pysandboxes" explain

step "9. A broken rule file: every problem at once, with file and line, nothing loaded"
cat > broken.py-sandboxes <<'RULES'
expose-ro=./missing-dir
net=ALLOW|tcp|example.org|443
python-import=numpy.linalg
python-api=ALLOW:proces-exec
os-sandbox=${SANDBOX_KIND}
bwrap.shared-net=true
RULES
"$bin/pysandboxes" check broken.py-sandboxes || echo "(exit code $?)"

step "10. The lock: learn=false refuses rules added on the command line"
echo "learn=false" >> .py-sandboxes
"$bin/python-sb" --expose-ro=/etc app.py || echo "(exit code $?)"

step "Done"
echo "Next: docs/complete-mode.md, docs/partial-mode.md, docs/learning.md, docs/providers.md, docs/limits.md, docs/eval.md, docs/security-model.md, docs/rules.md; \`make test\` runs the suite."
