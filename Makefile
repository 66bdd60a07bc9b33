# Quick start:  make up    (creates .venv, installs, starts draemu with the seed preset)
#               make test  (installs the test extras, runs the whole suite)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
UP_ARGS ?=
PYTEST_ARGS ?=

.PHONY: up test install lint bench clean

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

test: $(TEST_STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

lint: $(TEST_STAMP)
	$(PY) -m pip install -q ruff
	$(VENV)/bin/ruff check .

bench: $(STAMP)
	$(PY) -m pip install -q -e '.[bench]'
	$(PY) bench/store.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
