# The two commands of the README: `make run` (set up + the main job) and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test test-fast lint mypy-tree bench eval clean

# Setting up prints one line; pip's own output goes to $(VENV)/install.log (shown in full if it fails).
# The CPU build of torch first, pinned: a looser pin pulls a multi-GB CUDA build.
$(STAMP): pyproject.toml
	@echo "setting up $(VENV) (a few minutes the first time; log in $(VENV)/install.log)"
	@$(PYTHON) -m venv $(VENV)
	@( $(BIN)/pip install --upgrade --quiet pip && \
	   $(BIN)/pip install --quiet torch==2.13.0 && \
	   $(BIN)/pip install --quiet -e '.[dev]' ) > $(VENV)/install.log 2>&1 \
	  || { cat $(VENV)/install.log; exit 1; }
	@touch $(STAMP)

run: $(STAMP)
	@$(BIN)/servetriage run

test: $(STAMP)
	$(BIN)/python -m pytest tests

# The edit loop: everything but the tests that train a model or start server processes.
test-fast: $(STAMP)
	$(BIN)/python -m pytest tests -m "not slow"

# mypy reads the package by its installed names (servetriage.classifier is classifier/, and so on:
# package-dir in pyproject.toml) from links laid out as installed, under build/mypy (its mypy_path).
MYPY_TREE := build/mypy
MYPY_TOP  := $(patsubst servetriage/%.py,-m servetriage.%,$(filter-out servetriage/__init__.py,$(wildcard servetriage/*.py))) -m servetriage
mypy-tree:
	@rm -rf $(MYPY_TREE) && mkdir -p $(MYPY_TREE)/servetriage && ln -s $(CURDIR)/servetriage/* $(MYPY_TREE)/servetriage/
	@for p in classifier corpus eval bot feedback; do ln -s $(CURDIR)/$$p $(MYPY_TREE)/servetriage/$$p; done

lint: $(STAMP) mypy-tree
	$(BIN)/ruff check --quiet classifier corpus bot eval feedback servetriage tests
	$(BIN)/mypy --strict -p servetriage.classifier -p servetriage.storage
	$(BIN)/mypy --strict -p servetriage.bot
	$(BIN)/mypy --strict -p servetriage.feedback
	$(BIN)/mypy --strict -p servetriage.corpus -p servetriage.eval $(MYPY_TOP)
	$(BIN)/hadolint Dockerfile
	$(BIN)/servetriage corpus check

eval: $(STAMP)
	$(BIN)/servetriage eval ../shared/eval/dev

bench: $(STAMP)
	$(BIN)/python eval/bench.py

clean:
	rm -rf $(VENV) build *.egg-info
