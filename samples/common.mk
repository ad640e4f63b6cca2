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
# the loopback page and scripted chat servers of learning ({url} in the command: the allowed page)
WITH_SERVERS := $(PY) -m samples_shared.with_servers

.PHONY: env test learn learn-check

# the environments this sample needs (another sample's too, for a client launching a server)
ENVS ?= $(NAME)
env:
	@bash $(ROOT)/scripts/sample-envs.sh $(ENVS)

# strict, offline (the tests start their own loopback servers), under the root's pytest settings
test: env
	cd $(ROOT) && $(PY) -m pytest -q -p no:cacheprovider samples/$(NAME)/tests

# what learning proposes beyond the shipped profiles: fails on any active candidate that the
# profile neither holds nor declines (samples_shared/learn_check.py)
learn-check: learn
	@status=0; for learned in $(LEARNED); do \
		$(PY) -m samples_shared.learn_check $$learned $${learned%.learn} || status=1; \
	done; exit $$status

# after learning: each candidate file against the profile it was learned from
define SHOW_DIFF
	@for learned in $(LEARNED); do \
		echo "== pysandboxes diff $$learned $${learned%.learn}"; \
		$(PYSANDBOXES) diff $$learned $${learned%.learn} || true; \
	done
endef
