# The two Quick start commands: `make demo` and `make test`. Each sets up .venv itself.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

.PHONY: setup demo test lint
setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/raps demo

# The whole suite: lint, import contracts, types, then every test. .ci/run calls exactly this.
# Tests run in TEST_WORKERS processes (pytest-xdist): most of the suite's time is spent
# waiting on daemons, browsers and brokers, so one more worker than a 2-core machine has.
TEST_WORKERS ?= 3
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-logo --no-cache
	$(BIN)/mypy
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal --durations=25
