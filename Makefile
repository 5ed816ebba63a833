# liveguard: the README's commands. Everything runs inside .venv.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: install postgres-server test lint typecheck run bench datasets clean

install: $(BIN)/liveguard postgres-server

# The PostgreSQL tests start a throwaway server with initdb/pg_ctl: install Debian's
# postgresql when they are missing (as root; otherwise print the command).
postgres-server:
	@if command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql; \
	else echo "PostgreSQL server binaries (initdb, pg_ctl) are missing; run: sudo apt-get install postgresql"; fi

$(BIN)/liveguard: pyproject.toml setup.py
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $@

test: install
	$(BIN)/ruff check backend tests graphs benchmarks scripts
	$(BIN)/mypy
	$(BIN)/python -m pytest -q

run: install
	$(BIN)/liveguard score golden_datasets/ --paths expected_paths/
	@# The gate's own exit status (PROMOTE 0, HOLD 3, ROLLBACK 4) is the answer, not a failure.
	@$(BIN)/liveguard gate golden_datasets/ --paths expected_paths/ --min-runs 1; \
	  status=$$?; if [ $$status -eq 2 ]; then exit 2; fi

bench: install
	$(BIN)/python benchmarks/run.py

datasets: install
	$(BIN)/python scripts/make_datasets.py
	$(BIN)/python scripts/record_graphs.py

clean:
	rm -rf $(VENV) build *.egg-info backend/*.egg-info .pytest_cache .mypy_cache .ruff_cache
