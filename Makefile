# costmodel: every target creates/refreshes the local virtual environment itself.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PORT ?= 8501
# pytest-xdist workers for `make test`/`test-fast` (2 = the CI machine's cores; WORKERS=auto for more;
# the file-by-file scheduling is tests/conftest.py's)
WORKERS ?= 2
PYTEST_PARALLEL := -n $(WORKERS) --dist loadfile
# The test runs keep Python's bytecode caches (__pycache__/, git-ignored) even where the machine
# sets PYTHONDONTWRITEBYTECODE=1 (ours does): without them every pytest worker compiled and
# assertion-rewrote the 330-odd test files again (collection 41 s cold, 15 s cached, measured
# back to back on the 2-core box, 2026-12-05) and every CLI, Streamlit and torchrun subprocess
# compiled costmodel again (0.2-0.35 s each; the suite starts several hundred).
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest

.PHONY: run test test-fast bench bench-estimators lint format clean venv chromium

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,validate,distributed]'
	touch $(STAMP)

venv: $(STAMP)

## make run: serve the Streamlit app on http://localhost:$(PORT)
run: $(STAMP)
	$(BIN)/python -m costmodel.web --port $(PORT)

# The real-browser tests drive Debian's chromium; install it when missing (needs root, as in CI).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium is missing: run 'sudo apt-get install -y chromium' (the browser tests need it)"; exit 1; fi; }

## make test: the whole suite (unit, property, doctest, notebook, CLI, AppTest, gloo, browser)
# (the `alone` pass collects only the files that mark a test alone: collecting all of tests/
# again to run one test took about 20 s)
test: $(STAMP) chromium
	$(BIN)/python -m ruff check .
	$(BIN)/python -m ruff format --check .
	$(BIN)/python -m mypy
	$(PYTEST) -q $(PYTEST_PARALLEL) -m "not alone" --durations=25 --nbmake examples/ tests/ costmodel/
	$(PYTEST) -q -m alone $$(grep -l 'mark\.alone' tests/test_*.py)

## make test-fast: everything but the real-browser and torch/gloo runs
test-fast: $(STAMP)
	$(PYTEST) -q $(PYTEST_PARALLEL) -m "not browser and not torch" tests/ costmodel/

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_formulas.py
	$(BIN)/python benchmarks/bench_sweep.py
	$(BIN)/python benchmarks/bench_parse.py
	$(BIN)/python benchmarks/bench_import.py
	$(BIN)/python benchmarks/bench_app.py
	$(BIN)/python benchmarks/bench_strategy.py
	$(BIN)/python benchmarks/bench_load.py
	$(BIN)/python benchmarks/bench_distributed.py --rows 2e7

## make bench-estimators: costmodel's memory vs DeepSpeed's and llm-analysis' (the bench extra)
bench-estimators: $(STAMP)
	DS_BUILD_OPS=0 $(BIN)/python -m pip install -q -e '.[bench]'
	$(BIN)/python benchmarks/bench_memory_estimators.py

lint: $(STAMP)
	$(BIN)/python -m ruff check .
	$(BIN)/python -m ruff format --check .
	$(BIN)/python -m mypy

format: $(STAMP)
	$(BIN)/python -m ruff format .
	$(BIN)/python -m ruff check --fix .

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
