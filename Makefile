# tirlab's entry points. Everything runs from the project virtualenv, which is created and kept in
# step with requirements*.txt here; PostgreSQL and Redis are embedded (under var/) unless
# DATABASE_URL / REDIS_URL are set. The supervision itself lives in webapp/devstack.py.

SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
VERL_VENV ?= .venv-verl
VERL_PY := $(VERL_VENV)/bin/python
DEVSTACK := $(PY) -m webapp.devstack
PYTEST_ARGS ?=
VAR_DIR := $(or $(TIRLAB_VAR_DIR),$(CURDIR)/var)
# Tests and benchmarks get their own var dirs: their databases, uploads and servers never touch yours.
TEST_VAR_DIR ?= $(VAR_DIR)/test
BENCH_VAR_DIR ?= $(VAR_DIR)/bench
BENCH ?= $(filter-out bench/_%,$(wildcard bench/*.py))
BENCH_ARGS ?=
# The suite runs on every core: xdist workers take whole test files (module fixtures are set up once),
# in the order tests/tiers.py gives (the longest first, so that no long learning run starts last). One
# worker more than the cores: end-to-end tests spend part of their time waiting on the processes they
# start, and the extra worker keeps those seconds busy (docs/measured.md#the-test-suite).
# TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
PYTEST_XDIST := -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder
# The unit tiers: every test not marked e2e, browser or slow (tests/tiers.py says which are).
FAST := -m "not e2e and not browser and not slow"

.PHONY: help run test test-fast deps dev-deps verl-deps browser-deps migrate lint bench screenshot clean-venv clean-var

help:
	@echo "make run          start tirlab (web + worker; embedded PostgreSQL/Redis unless DATABASE_URL/REDIS_URL)"
	@echo "make test         run the whole test suite, what CI runs (PYTEST_ARGS=... is passed to pytest)"
	@echo "make test-fast    the unit tests only: no e2e stacks, browsers, Ray or learning runs (a minute or two)"
	@echo "make verl-deps    build $(VERL_VENV), verl 0.9.1's environment (engine 'verl' runs and the suite's verl tests)"
	@echo "make migrate      apply database migrations"
	@echo "make lint         ruff check"
	@echo "make bench        run the benchmarks in bench/ (BENCH=bench/x.py for one, BENCH_ARGS=... to each)"
	@echo "make screenshot   redo the page screenshots in docs/ with the browser tests (and a launched run)"
	@echo "make clean-venv   delete $(VENV); the next command rebuilds it"
	@echo "make clean-var    delete $(VAR_DIR): embedded database, uploads, secret key (asks first)"

$(PY):
	@$(PYTHON) -m venv $(VENV) || { echo "Could not create $(VENV) with $(PYTHON) -m venv (on Debian/Ubuntu: apt-get install python3-venv)." >&2; exit 1; }

# The stamps are copies of what was installed, so a touched but unchanged file does not reinstall.
# requirements-nodeps.txt is installed with --no-deps (its packages' own dependencies are not ours).
deps: $(PY)
	@cat requirements.txt requirements-nodeps.txt | cmp -s - $(VENV)/.installed-requirements.txt || { \
		$(PY) -m pip install -r requirements.txt \
		&& $(PY) -m pip install --no-deps -r requirements-nodeps.txt \
		&& cat requirements.txt requirements-nodeps.txt > $(VENV)/.installed-requirements.txt; }

dev-deps: $(PY)
	@cat requirements-dev.txt requirements.txt requirements-nodeps.txt requirements-dev-nodeps.txt | cmp -s - $(VENV)/.installed-requirements-dev.txt || { \
		$(PY) -m pip install -r requirements-dev.txt \
		&& $(PY) -m pip install --no-deps -r requirements-nodeps.txt -r requirements-dev-nodeps.txt \
		&& cat requirements-dev.txt requirements.txt requirements-nodeps.txt requirements-dev-nodeps.txt > $(VENV)/.installed-requirements-dev.txt \
		&& cat requirements.txt requirements-nodeps.txt > $(VENV)/.installed-requirements.txt; }

# verl 0.9.1's own virtualenv (its pins clash with requirements.txt): engine 'verl' runs as a Ray job in it,
# and the suite runs verl's code in a subprocess of its python (tests/verl_env.py). Stamped as `deps` is.
$(VERL_PY):
	@$(PYTHON) -m venv $(VERL_VENV) || { echo "Could not create $(VERL_VENV) with $(PYTHON) -m venv (on Debian/Ubuntu: apt-get install python3-venv)." >&2; exit 1; }

verl-deps: $(VERL_PY)
	@cat requirements-verl.txt requirements-nodeps.txt | cmp -s - $(VERL_VENV)/.installed-requirements.txt || { \
		$(VERL_PY) -m pip install -r requirements-verl.txt \
		&& $(VERL_PY) -m pip install --no-deps -r requirements-nodeps.txt \
		&& cat requirements-verl.txt requirements-nodeps.txt > $(VERL_VENV)/.installed-requirements.txt; }

# Chromium for the browser tests: installed when missing and apt-get can (as root); otherwise say so.
browser-deps:
	@if command -v chromium >/dev/null 2>&1; then exit 0; \
	elif [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then \
		echo "browser-deps: chromium is not installed and cannot be installed here (needs root and apt-get);" \
			"install it (e.g. sudo apt-get install chromium) or the browser tests will not run." >&2; \
	else \
		{ apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium; } \
		|| echo "browser-deps: installing chromium failed; the browser tests will not run." >&2; \
	fi

run: deps
	$(DEVSTACK)

# The two virtualenvs install side by side (each waits mostly on unpacking wheels), each one's output kept whole.
test:
	@$(MAKE) --no-print-directory -j3 --output-sync=target dev-deps browser-deps verl-deps
	TIRLAB_VAR_DIR=$(TEST_VAR_DIR) $(DEVSTACK) services -- $(PY) -m pytest $(PYTEST_XDIST) $(PYTEST_ARGS)

test-fast: dev-deps
	TIRLAB_VAR_DIR=$(TEST_VAR_DIR) $(DEVSTACK) services -- $(PY) -m pytest $(PYTEST_XDIST) $(FAST) $(PYTEST_ARGS)

migrate: deps
	$(DEVSTACK) services -- $(PY) manage.py migrate

lint: dev-deps
	$(VENV)/bin/ruff check .

bench: dev-deps
	@if [ -z "$(strip $(BENCH))" ]; then echo "bench: no bench/*.py to run" >&2; exit 1; fi
	TIRLAB_VAR_DIR=$(BENCH_VAR_DIR) $(DEVSTACK) services -- bash -c \
		'set -e; for f in $(BENCH); do echo "== $$f"; $(PY) "$$f" $(BENCH_ARGS); done'

# Every browser test saves its page into TIRLAB_SCREENSHOT_DIR; the run page of a really launched
# quickstart run (Ray job, websocket) comes from the lifecycle test that launches one from the form, and the
# results page from the one that evaluates the first run's base model and checkpoints.
screenshot: dev-deps browser-deps
	TIRLAB_VAR_DIR=$(TEST_VAR_DIR) TIRLAB_SCREENSHOT_DIR=$(CURDIR)/docs $(DEVSTACK) services -- \
		$(PY) -m pytest tests/browser tests/e2e/test_run_lifecycle.py -k "not lifecycle or launch_from_the_form or goes_from_queued or evaluated_make_three" -q

clean-venv:
	rm -rf $(VENV)

# var/ holds your data; refuse while a devstack uses it, and ask (or take CONFIRM=yes) first.
clean-var:
	@for lock in $(VAR_DIR)/devstack.lock $(VAR_DIR)/*/devstack.lock; do \
		if [ -e "$$lock" ] && command -v flock >/dev/null && ! flock -n "$$lock" true; then \
			echo "clean-var: a devstack is running on $$(dirname "$$lock"); stop it first." >&2; exit 1; fi; \
	done
	@echo "WARNING: this deletes $(VAR_DIR): the embedded PostgreSQL database, Redis data, uploads and the secret key."
	@if [ "$(CONFIRM)" != yes ]; then \
		if [ -t 0 ]; then read -r -p "Type 'yes' to delete it: " answer; else answer=; fi; \
		if [ "$$answer" != yes ]; then echo "Not deleted (run 'make clean-var CONFIRM=yes' to skip the question)."; exit 1; fi; \
	fi
	rm -rf $(VAR_DIR)

# The GPU extra (vLLM) on top of the runtime requirements; only for machines with a CUDA GPU.
.PHONY: gpu-deps
gpu-deps: $(PY)
	$(PY) -m pip install -r requirements.txt -r requirements-gpu.txt
	$(PY) -m pip install --no-deps -r requirements-nodeps.txt
