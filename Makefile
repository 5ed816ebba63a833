# liveguard: the README's commands. Everything runs inside .venv.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: install test lint typecheck run bench datasets clean

install: $(BIN)/liveguard

$(BIN)/liveguard: pyproject.toml setup.py
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,ray]'
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
	$(BIN)/python benchmarks/scale.py

datasets: install
	$(BIN)/python scripts/make_datasets.py
	$(BIN)/python scripts/record_graphs.py

clean:
	rm -rf $(VENV) build *.egg-info backend/*.egg-info .pytest_cache .mypy_cache .ruff_cache
