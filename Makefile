# PySandboxes: every target bootstraps what it needs on a fresh Debian machine.
SHELL := /bin/bash
.DEFAULT_GOAL := help

export UV_PYTHON_DOWNLOADS := never
export UV_PYTHON ?= $(shell python3 -c 'import sys; print(sys.executable)')
# the mcp adapter (mcp 2) and crewai (mcp<2) conflict: declared per package, a uv preview feature
export UV_PREVIEW_FEATURES ?= package-conflicts
UV ?= $(shell command -v uv 2>/dev/null || echo python3 -m uv)
VENV := .venv
STAMP := $(VENV)/.synced

.PHONY: help demo test test-fast test-integrations samples-test learn learn-check lint bench compat bootstrap clean

# the samples (samples/<name>/, docs/samples.md); _shared is their common helper, not a sample
SAMPLES := $(filter-out _shared,$(notdir $(patsubst %/,%,$(wildcard samples/*/))))

help:
	@echo "make demo   - a program under its rules, an agent's tools confined, then init, check, explain a rule file"
	@echo "make test   - run the whole test suite (the core's, then every adapter's)"
	@echo "make test-fast - the core's tests without the virtual-machine ones (-m 'not vm'), for a quick local run"
	@echo "make test-integrations - each adapter's tests, in its own environment (.venv-int/<name>)"
	@echo "make samples-test - each sample's tests, in its own environment (.venv-samples/<name>)"
	@echo "make learn  - every sample's learning run; make learn-check fails when one proposes a new right"
	@echo "make lint   - ruff and mypy"
	@echo "make bench  - benchmarks, side by side with pysandboxes 0.7.0"
	@echo "make compat - CPython's own test suite under python-sb, every right granted, vs python (subprocess and landlock)"

bootstrap: $(STAMP)

$(STAMP): pyproject.toml uv.lock packages/*/pyproject.toml integrations/*/pyproject.toml samples/*/pyproject.toml
	@$(UV) --version >/dev/null 2>&1 || python3 -m pip install --quiet uv \
		|| python3 -m pip install --quiet --break-system-packages uv
	$(UV) sync --locked --group dev
	@touch $(STAMP)

demo: $(STAMP)
	@bash demo/demo.sh

test: $(STAMP)
	@bash scripts/system-packages.sh
	UV="$(UV)" bash scripts/framework-envs.sh
	$(UV) run --locked --no-sync pytest -q
	@$(MAKE) --no-print-directory test-integrations
	@$(MAKE) --no-print-directory samples-test
	@$(MAKE) --no-print-directory learn-check

# the core's suite without the qemu guests (the "vm" marker): a quick local run; CI runs `make test`
test-fast: $(STAMP)
	$(UV) run --locked --no-sync pytest -q -m "not vm"

# Each adapter's tests run in an environment synced for it alone (frameworks conflict), under the
# root pytest configuration (filterwarnings=error, xfail_strict).
test-integrations: $(STAMP)
	UV="$(UV)" bash scripts/integration-envs.sh
	@status=0; for tests in integrations/*/tests; do \
		name=$$(basename $$(dirname $$tests)); \
		echo "== pysandboxes-$$name"; \
		.venv-int/$$name/bin/pytest -q $$tests || status=1; \
	done; \
	echo "== pysandboxes-mcp on mcp 1.x"; \
	.venv-int/mcp1/bin/pytest -q integrations/mcp/tests || status=1; \
	exit $$status

# Each sample in its own environment, strict and offline (loopback servers the tests start).
samples-test: $(STAMP)
	UV="$(UV)" bash scripts/sample-envs.sh
	@status=0; for name in $(SAMPLES); do \
		echo "== sample $$name"; \
		$(MAKE) --no-print-directory -C samples/$$name test || status=1; \
	done; exit $$status

# learning for every sample (candidates next to the profiles, *.learn), then the diff
learn: $(STAMP)
	UV="$(UV)" bash scripts/sample-envs.sh
	@for name in $(SAMPLES); do $(MAKE) --no-print-directory -C samples/$$name learn; done

learn-check: $(STAMP)
	UV="$(UV)" bash scripts/sample-envs.sh
	@status=0; for name in $(SAMPLES); do \
		$(MAKE) --no-print-directory -C samples/$$name learn-check || status=1; \
	done; exit $$status

lint: $(STAMP)
	$(UV) lock --check
	$(UV) lock --check --project samples/crewai
	$(UV) lock --check --project integrations/mcp/mcp1
	$(UV) run --no-sync ruff check .
	$(UV) run --no-sync ruff format --check .
	$(UV) run --no-sync mypy

bench: $(STAMP)
	$(UV) run --no-sync python bench/run_all.py

compat: $(STAMP)
	$(UV) run --no-sync python bench/compat.py $(COMPAT_ARGS)

clean:
	rm -rf $(VENV) .venv-int .venv-samples .pytest_cache .ruff_cache .mypy_cache .hypothesis
