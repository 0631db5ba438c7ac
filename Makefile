# Two commands: `make run` (the main job on the embedded default) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUN_STAMP := $(VENV)/.run-installed
DEV_STAMP := $(VENV)/.dev-installed

.PHONY: run test lint typecheck pytest bench docs perf-docs clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(RUN_STAMP)

run: $(RUN_STAMP)
	$(BIN)/python -m kvctl.demo

test: $(DEV_STAMP) lint typecheck pytest

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(DEV_STAMP)
	$(BIN)/mypy

# Two pytest workers (pytest-xdist), a test file's tests in one worker (module fixtures
# such as the Spark cluster start once): most tests wait on processes and servers, so
# two workers on two cores take about 60% of one worker's time. PYTEST_WORKERS=0: one process.
PYTEST_WORKERS ?= 2

pytest: $(DEV_STAMP)
	bash scripts/ensure-postgres.sh
	bash scripts/ensure-etcd.sh
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

bench: $(DEV_STAMP)
	$(BIN)/python bench/memory.py

docs: $(RUN_STAMP)
	$(BIN)/python scripts/gen-cli-docs.py

perf-docs: $(DEV_STAMP)
	$(BIN)/python scripts/gen-performance.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
