#!/usr/bin/env bash
# One environment per framework adapter (integrations/<name>/): .venv-int/<name>, synced from the
# workspace lock with the adapter, its framework and its `test` group (pytest and the shared
# conformance suite), bytecode compiled (a framework imports in seconds without it, and every
# test starts a sandbox child that imports it again); and .venv-int/mcp1, the mcp adapter with
# mcp 1.x (FastMCP), from integrations/mcp/mcp1/ and its own lock.
# Usage: scripts/integration-envs.sh [name ...]   (a name: an adapter's directory, or mcp1)
set -euo pipefail
cd "$(dirname "$0")/.."
UV=${UV:-$(command -v uv || echo "python3 -m uv")}
export UV_PREVIEW_FEATURES=${UV_PREVIEW_FEATURES:-package-conflicts}
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for dir in integrations/*/; do
    name=$(basename "$dir")
    [ "$name" = conformance ] || names+=("$name")
  done
  names+=(mcp1)
fi
for name in "${names[@]}"; do
  if [ "$name" = mcp1 ]; then
    UV_PROJECT_ENVIRONMENT="$PWD/.venv-int/mcp1" $UV sync --quiet --locked --compile-bytecode \
      --project integrations/mcp/mcp1
  else
    UV_PROJECT_ENVIRONMENT=".venv-int/$name" $UV sync --quiet --locked --compile-bytecode \
      --package "pysandboxes-$name" --no-default-groups --group test
  fi
done
