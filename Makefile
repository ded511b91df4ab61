# The two commands of the README: `make run` (set up + the main job) and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint bench eval clean

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

lint: $(STAMP)
	$(BIN)/ruff check --quiet classifier corpus bot eval feedback servetriage tests
	$(BIN)/hadolint Dockerfile
	$(BIN)/servetriage corpus check

eval: $(STAMP)
	$(BIN)/servetriage eval ../shared/eval/dev

bench: $(STAMP)
	$(BIN)/python eval/bench.py

clean:
	rm -rf $(VENV) build *.egg-info
