# The two commands of the README: `make run` (set up + the main job) and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint bench eval clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade --quiet pip
	# The CPU build of torch first, pinned: a looser pin pulls a multi-GB CUDA build.
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/servetriage run

test: $(STAMP)
	$(BIN)/python -m pytest tests

lint: $(STAMP)
	$(BIN)/hadolint Dockerfile
	$(BIN)/servetriage corpus check

eval: $(STAMP)
	$(BIN)/servetriage eval ../shared/eval/dev

bench: $(STAMP)
	$(BIN)/python eval/bench.py

clean:
	rm -rf $(VENV) build *.egg-info
