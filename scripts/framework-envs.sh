#!/usr/bin/env bash
# One environment per agent framework for the core's round-trip tests (tests/frameworks/):
# .venv-fw/<name>, synced from the workspace lock (crewai conflicts with mcp 2 and openai 3, so
# no two frameworks share an environment). Usage: scripts/framework-envs.sh [name ...]
set -euo pipefail
cd "$(dirname "$0")/.."
UV=${UV:-$(command -v uv || echo "python3 -m uv")}
export UV_PREVIEW_FEATURES=${UV_PREVIEW_FEATURES:-package-conflicts}
names=("$@")
[ ${#names[@]} -eq 0 ] && names=(mcp langchain pydantic-ai smolagents openai-agents crewai)
for name in "${names[@]}"; do
  if [ "$name" = crewai ]; then
    # crewai's environment is its adapter's (crewai, pysandboxes, python-sb through the test
    # group): a fw-crewai group beside the package would double every conflict of the lock
    UV_PROJECT_ENVIRONMENT=".venv-fw/$name" $UV sync --quiet --locked \
      --package pysandboxes-crewai --no-default-groups --group test
  else
    UV_PROJECT_ENVIRONMENT=".venv-fw/$name" $UV sync --quiet --locked \
      --no-default-groups --group "fw-$name"
  fi
done
