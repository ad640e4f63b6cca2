#!/usr/bin/env bash
# One environment per sample (samples/<name>/): .venv-samples/<name>, synced from the workspace
# lock with the sample, its framework, its adapter and its `test` group, bytecode compiled (the
# sandbox's child and python-sb import the framework again at every start). A learned import
# list belongs to the environment it was learned in: the samples' profiles are learned in these.
# Usage: scripts/sample-envs.sh [name ...]
set -euo pipefail
cd "$(dirname "$0")/.."
UV=${UV:-$(command -v uv || echo "python3 -m uv")}
export UV_PREVIEW_FEATURES=${UV_PREVIEW_FEATURES:-package-conflicts}
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for dir in samples/*/; do
    name=$(basename "$dir")
    [ "$name" = _shared ] || names+=("$name")
  done
fi
for name in "${names[@]}"; do
  if [ -f "samples/$name/uv.lock" ]; then  # a lock of its own (crewai: see the root pyproject)
    UV_PROJECT_ENVIRONMENT="$PWD/.venv-samples/$name" $UV sync --quiet --locked --compile-bytecode \
      --project "samples/$name" --no-default-groups --group test
  else
    UV_PROJECT_ENVIRONMENT=".venv-samples/$name" $UV sync --quiet --locked --compile-bytecode \
      --package "pysandboxes-sample-$name" --no-default-groups --group test
  fi
done
