# What every sample's Makefile shares: `include ../common.mk` after setting NAME.
# Each sample runs in its own environment, .venv-samples/$(NAME) at the repository's root
# (scripts/sample-envs.sh syncs it from the workspace lock): a learned import list belongs to
# the environment it was learned in.
SHELL := /bin/bash
ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))..)
ENV := $(ROOT)/.venv-samples/$(NAME)
PY := $(ENV)/bin/python
PYSB := $(ENV)/bin/python-sb
PYSANDBOXES := $(ENV)/bin/pysandboxes
export UV_PREVIEW_FEATURES ?= package-conflicts
# the frameworks' telemetry, off everywhere
TELEMETRY := OTEL_SDK_DISABLED=true ANONYMIZED_TELEMETRY=false CREWAI_DISABLE_TELEMETRY=true \
	AGNO_TELEMETRY=false OPENAI_AGENTS_DISABLE_TRACING=1 LANGCHAIN_TRACING_V2=false \
	LANGSMITH_TRACING=false DO_NOT_TRACK=1
# .env exported (set -a) for run and learn; PYTHON_DOTENV_DISABLED keeps the libraries that load
# .env themselves inert, so learning charges the program only with the variables it reads
DOTENV := set -a; [ ! -f .env ] || . ./.env; set +a; export PYTHON_DOTENV_DISABLED=1 $(TELEMETRY)
# learning starts from a clean environment (then .env): what it learns does not depend on the
# shell it was started from, so `make learn-check` gives the same answer everywhere
CLEAN := env -i PATH="$$PATH" HOME="$$HOME" LANG=C.UTF-8 $${OS_SANDBOX:+OS_SANDBOX=$$OS_SANDBOX}
# the loopback page server learning fetches its allowed page from ({url} in the command)
WITH_PAGES := $(PY) -m samples_shared.with_pages

.PHONY: env test learn learn-check

env:
	@bash $(ROOT)/scripts/sample-envs.sh $(NAME)

# strict, offline (the tests start their own loopback servers), under the root's pytest settings
test: env
	cd $(ROOT) && $(PY) -m pytest -q -p no:cacheprovider samples/$(NAME)/tests

# what learning proposes beyond the shipped profiles: fails on any active candidate (commented
# ones, "tried, absent" imports and names seen by a scan of os.environ, grant nothing)
learn-check: learn
	@status=0; for learned in $(LEARNED); do \
		found=$$($(PYSANDBOXES) diff $$learned $${learned%.learn} 2>/dev/null | grep -v '): #' || true); \
		if [ -n "$$found" ]; then echo "$(NAME): $${learned%.learn} lacks:"; echo "$$found"; status=1; fi; \
	done; \
	if [ $$status = 0 ]; then echo "$(NAME): learning proposes nothing the shipped profiles lack"; fi; \
	exit $$status

# after learning: each candidate file against the profile it was learned from
define SHOW_DIFF
	@for learned in $(LEARNED); do \
		echo "== pysandboxes diff $$learned $${learned%.learn}"; \
		$(PYSANDBOXES) diff $$learned $${learned%.learn} || true; \
	done
endef
