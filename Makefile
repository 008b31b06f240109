# batchlane: `make demo` runs the main job offline, `make test` runs the tests.
# Both bootstrap .venv (pinned by requirements.lock) and the CDK CLI (package-lock.json) themselves.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: console help demo test test-fast mutate bench synth deploy lint typecheck local-up local-down clean

help:            ## list the targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*##/\t/'

$(VENV)/.stamp: requirements.lock pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q pip==25.3 setuptools==80.9.0 wheel==0.45.1
	$(PY) -m pip install -q -r requirements.lock
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	touch $@

# checkov (tests/infra/test_infra_checkov.py) in a venv of its own: it pins boto3 1.35, the runtime 1.44 (requirements-checkov.lock).
CHECKOV_VENV := .venv-checkov
$(CHECKOV_VENV)/.stamp: requirements-checkov.lock
	test -x $(CHECKOV_VENV)/bin/python || $(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install -q -r requirements-checkov.lock
	touch $@

node_modules/.stamp: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

venv: $(VENV)/.stamp

# The web console (docs/console.md): npm packages from console/package-lock.json, then vite build → console/dist.
CONSOLE_SRC := $(wildcard console/src/*) console/index.html console/vite.config.js
console/node_modules/.stamp: console/package.json console/package-lock.json
	cd console && npm ci --no-audit --no-fund --loglevel=error
	touch $@

console/dist/index.html: console/node_modules/.stamp $(CONSOLE_SRC)
	cd console && node_modules/.bin/vite build --logLevel warn

console: console/dist/index.html   ## build the web console (served by `batchlane local up`)

# The browser tests drive Debian's Chromium (Playwright's own download is not reachable): install it once (root, as CI).
.batchlane/chromium.stamp:
	test -x /usr/bin/chromium || (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium)
	mkdir -p .batchlane && touch $@

# The scanned-page tests build their PDFs with Debian's ImageMagick and img2pdf (tests/scans.py): install them once (root, as CI).
.batchlane/scan-tools.stamp: | .batchlane/chromium.stamp   # after it: two apt-get at once (make -j) would fight for dpkg's lock
	(test -x /usr/bin/convert && test -x /usr/bin/img2pdf) || (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q imagemagick img2pdf)
	mkdir -p .batchlane && touch $@

demo: $(VENV)/.stamp console   ## the main job: a 1,200-page PDF through the offline stack
	$(VENV)/bin/batchlane demo $(DEMO_ARGS)
	@echo "batchlane is $(VENV)/bin/batchlane: '. $(VENV)/bin/activate' puts it on your PATH for the README's commands"

# The suites run on both cores (pytest-xdist); a file's tests stay on one worker, so a module's
# offline stack starts once. Files go out longest first (tests/conftest.py; xdist's own reorder, by test
# count, would send the long end-to-end files last). The slowest 15 tests are listed at the end (docs/testing.md).
TEST_WORKERS ?= 2

test: $(VENV)/.stamp $(CHECKOV_VENV)/.stamp node_modules/.stamp console .batchlane/chromium.stamp .batchlane/scan-tools.stamp   ## every test (unit, integration, infra, e2e)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=15 $(PYTEST_ARGS)

test-fast: $(VENV)/.stamp   ## unit tests only: no server, use cases on fakes (~25 s on 2 cores)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist worksteal tests/unit $(PYTEST_ARGS)

MUTATE_DIR := .batchlane/mutate
# MUTATE_PATHS="batchlane/api/*" mutates only those globs (replacing setup.cfg.in's only_mutate); MUTATE_CHILDREN=1 on a shared machine.
MUTATE_PATHS :=
MUTATE_CHILDREN := 2

mutate: $(VENV)/.stamp   ## mutation testing of domain/, batch/, the money use cases and the newest packages on the fast tests; docs/testing.md
	rm -rf $(MUTATE_DIR) && mkdir -p $(MUTATE_DIR)
	ln -s ../../layers/batchlane/batchlane $(MUTATE_DIR)/batchlane
	for top in tests layers devtools docs functions statemachines infra deployment .ci Makefile README.md cdk.json package.json requirements.lock; do ln -s $(CURDIR)/$$top $(MUTATE_DIR)/$$top; done
	$(PY) devtools/mutate/config.py $(CURDIR) $(foreach p,$(MUTATE_PATHS),'$(p)') > $(MUTATE_DIR)/setup.cfg
	cd $(MUTATE_DIR) && PYTHONPATH=$(CURDIR)/devtools $(CURDIR)/$(VENV)/bin/mutmut run --max-children $(MUTATE_CHILDREN)
	cd $(MUTATE_DIR) && $(CURDIR)/$(VENV)/bin/mutmut export-cicd-stats && cat mutants/mutmut-cicd-stats.json && echo
	$(VENV)/bin/python devtools/mutate/table.py $(MUTATE_DIR)/mutants
	cd $(MUTATE_DIR) && $(CURDIR)/$(VENV)/bin/mutmut results

# The bench-only peer of the one_document figures (requirements-bench.lock: AGPL, never shipped; docs/decisions/0034).
$(VENV)/.bench-stamp: $(VENV)/.stamp requirements-bench.lock
	$(PY) -m pip install -q -r requirements-bench.lock
	touch $@

bench: $(VENV)/.bench-stamp   ## one JSON object per figure, each against a baseline measured in the same run
	$(PY) -m batchlane_dev.bench $(BENCH_ARGS)

synth: $(VENV)/.stamp node_modules/.stamp   ## cdk synth, offline
	node_modules/.bin/cdk synth -q

deploy: $(VENV)/.stamp node_modules/.stamp console   ## cdk deploy (needs AWS credentials), then the console's files; see docs/deploy.md
	node_modules/.bin/cdk deploy --require-approval broadening
	PYTHONPATH=devtools $(PY) -m batchlane_dev.console_deploy

lint: $(VENV)/.stamp   ## ruff + mypy
	$(VENV)/bin/ruff check layers devtools deployment functions infra tests
	$(VENV)/bin/mypy

local-up: $(VENV)/.stamp console   ## start the offline stack in the background
	$(VENV)/bin/batchlane local up

local-down: $(VENV)/.stamp
	$(VENV)/bin/batchlane local down

clean:
	rm -rf cdk.out build .pytest_cache .mypy_cache .ruff_cache .batchlane
