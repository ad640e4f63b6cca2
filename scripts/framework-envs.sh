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
  UV_PROJECT_ENVIRONMENT=".venv-fw/$name" $UV sync --quiet --locked \
    --no-default-groups --group "fw-$name"
done
